// A fake nvidia-cuda-mps-control for tests: the two ways NVIDIA's control binary is used, with no
// GPU and no CUDA.
//
//   nvidia-cuda-mps-control -d   daemon mode: forks a daemon (stdio on /dev/null, own session)
//                                that listens on $CUDA_MPS_PIPE_DIRECTORY/control, writes its PID
//                                to $CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid and a
//                                start line to $CUDA_MPS_LOG_DIRECTORY/control.log; returns 0 once
//                                the daemon listens (1 when one already answers there).
//   nvidia-cuda-mps-control      client mode: reads one command from stdin, hands it to the
//                                daemon of $CUDA_MPS_PIPE_DIRECTORY, prints the answer, exits 0;
//                                exits 1 when no daemon answers or the daemon refuses.
//
// Commands the daemon knows (NVIDIA's spelling): quit, set_default_active_thread_percentage P,
// get_default_active_thread_percentage, set_default_device_pinned_mem_limit DEV LIMIT,
// get_default_device_pinned_mem_limit DEV; plus the fake's own `fake_die`: exit at once with
// status 1, leaving the PID file behind, as a crash would. Every `-d` start ("-d") and every
// command the daemon receives is appended as one line to $CUDA_MPS_LOG_DIRECTORY/fake-commands.log.
//
// Knobs (environment of the command that starts the daemon, or of a client):
//   FAKE_MPS_FAIL_START=1         `-d` prints an error and exits 1 without starting a daemon.
//   FAKE_MPS_FAIL_COMMAND=PREFIX  the daemon refuses commands that start with PREFIX.
//   FAKE_MPS_EXIT_AFTER_START=1   the daemon exits right after it started (leaves no PID file).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string PipeDir() { return Env("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"); }
std::string LogDir() { return Env("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"); }
std::string SocketPath() { return PipeDir() + "/control"; }
std::string PidPath() { return PipeDir() + "/nvidia-cuda-mps-control.pid"; }

void Append(const std::string& file, const std::string& line) {
  std::ofstream(LogDir() + "/" + file, std::ios::app) << line << "\n";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t start = s.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? "" : s.substr(start);
}

sockaddr_un Address() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", SocketPath().c_str());
  return addr;
}

// A connected socket to the daemon, or -1.
int Connect() {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = Address();
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

// The daemon's answer: "0" + text when done, "1" + text when refused.
std::string Answer(const std::string& command, std::string* percentage,
                   std::map<std::string, std::string>* limits, bool* quit) {
  std::string fail = Env("FAKE_MPS_FAIL_COMMAND", "");
  if (!fail.empty() && command.rfind(fail, 0) == 0) return "1refused by FAKE_MPS_FAIL_COMMAND";
  std::istringstream in(command);
  std::string verb, a, b;
  in >> verb >> a >> b;
  if (verb == "quit") {
    *quit = true;
    return "0";
  }
  if (verb == "fake_die") _exit(1);
  if (verb == "set_default_active_thread_percentage" && !a.empty()) {
    *percentage = a;
    return "0";
  }
  if (verb == "get_default_active_thread_percentage") return "0" + *percentage;
  if (verb == "set_default_device_pinned_mem_limit" && !b.empty()) {
    (*limits)[a] = b;
    return "0";
  }
  if (verb == "get_default_device_pinned_mem_limit" && !a.empty()) {
    auto it = limits->find(a);
    return "0" + (it == limits->end() ? std::string() : it->second);
  }
  return "1Unrecognized command: " + command;
}

[[noreturn]] void Serve(int listener, int ready) {
  std::string percentage = "100.0";
  std::map<std::string, std::string> limits;
  {
    std::ofstream(PidPath()) << getpid() << "\n";
  }
  Append("control.log", "[fake] Control " + std::to_string(getpid()) + "] Starting control daemon");
  if (Env("FAKE_MPS_EXIT_AFTER_START", "") == "1") {
    std::filesystem::remove(PidPath());
    (void)!write(ready, "1", 1);
    _exit(0);
  }
  (void)!write(ready, "1", 1);
  close(ready);
  while (true) {
    int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      _exit(2);
    }
    std::string command = Trim(ReadAll(client));
    if (command.empty()) {  // a probe (another `-d` looking for a running daemon)
      close(client);
      continue;
    }
    Append("fake-commands.log", command);
    bool quit = false;
    std::string answer = Answer(command, &percentage, &limits, &quit);
    (void)!write(client, answer.data(), answer.size());
    close(client);
    if (quit) {
      std::filesystem::remove(PidPath());
      unlink(SocketPath().c_str());
      Append("control.log", "[fake] Control " + std::to_string(getpid()) + "] Exit");
      _exit(0);
    }
  }
}

int StartDaemon() {
  std::error_code ignored;
  std::filesystem::create_directories(PipeDir(), ignored);
  std::filesystem::create_directories(LogDir(), ignored);
  Append("fake-commands.log", "-d");
  if (Env("FAKE_MPS_FAIL_START", "") == "1") {
    std::cerr << "fake: FAKE_MPS_FAIL_START is set; not starting\n";
    return 1;
  }
  if (int fd = Connect(); fd >= 0) {
    close(fd);
    std::cerr << "An instance of this daemon is already running\n";
    return 1;
  }
  unlink(SocketPath().c_str());  // a stale socket of a daemon that crashed
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = Address();
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 16) != 0) {
    std::cerr << "fake: cannot listen on " << SocketPath() << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  int ready[2];
  if (pipe(ready) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    setsid();
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(ready[0]);
    Serve(listener, ready[1]);
  }
  close(ready[1]);
  char byte;
  return read(ready[0], &byte, 1) == 1 ? 0 : 1;
}

int Client() {
  std::string command = Trim(ReadAll(STDIN_FILENO));
  int fd = Connect();
  if (fd < 0) {
    std::cerr << "Cannot find MPS control daemon process\n";
    return 1;
  }
  (void)!write(fd, command.data(), command.size());
  shutdown(fd, SHUT_WR);
  std::string answer = ReadAll(fd);
  close(fd);
  if (answer.empty()) {
    std::cerr << "the control daemon closed the connection\n";
    return 1;
  }
  std::string text = answer.substr(1);
  (answer[0] == '0' ? std::cout : std::cerr) << text << (text.empty() ? "" : "\n");
  return answer[0] == '0' ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "-d") return StartDaemon();
  if (argc == 1) return Client();
  std::cerr << "usage: nvidia-cuda-mps-control [-d]\n";
  return 2;
}
