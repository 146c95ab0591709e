// MpsControl: the control binary as a child process (posix_spawn). The child gets a socket as
// stdin (a write to a child that exited early must not raise SIGPIPE in the agent: send with
// MSG_NOSIGNAL) and an anonymous memory file as stdout and stderr, read after it exits. The agent waits for the
// child's exit, never for end-of-file: `-d` leaves a daemon behind that may keep inherited
// descriptors open.
#include "kube/mps_control.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/quantity.h"
#include "common/small_file.h"
#include "common/strings.h"

extern char** environ;

namespace accel::kube {

namespace {

/// What a control answer may hold; the daemon's answers are a line or a short table.
constexpr size_t kMaxOutput = 64 * 1024;

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// The process is a zombie (exited, not yet reaped): /proc/<pid>/stat's state is 'Z'.
bool IsZombie(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

bool ProcessExists(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// The environment of the child: the agent's, with the daemon's two directories set.
std::vector<std::string> ChildEnvironment(const MpsPaths& paths) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("CUDA_MPS_PIPE_DIRECTORY=", 0) == 0) continue;
    if (entry.rfind("CUDA_MPS_LOG_DIRECTORY=", 0) == 0) continue;
    env.push_back(std::move(entry));
  }
  env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + paths.pipe_dir);
  env.push_back("CUDA_MPS_LOG_DIRECTORY=" + paths.log_dir);
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Fd {
  int fd = -1;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

}  // namespace

std::vector<std::string> MpsLimitCommands(const PluginResource& resource,
                                          const std::vector<NodeDevice>& devices) {
  std::vector<std::string> out;
  if (resource.devices.empty() || resource.replicas < 1) return out;
  std::set<size_t> seen;
  for (const AdvertisedDevice& a : resource.devices) {
    if (a.device >= devices.size() || !seen.insert(a.device).second) continue;
    const NodeDevice& d = devices[a.device];
    if (d.memory_bytes == 0) continue;  // NVIDIA skips a GPU whose memory is unknown too
    uint64_t mib = d.memory_bytes / static_cast<uint64_t>(resource.replicas) / kMiB;
    out.push_back("set_default_device_pinned_mem_limit " + d.id + " " + std::to_string(mib) + "M");
  }
  out.push_back("set_default_active_thread_percentage " + std::to_string(100 / resource.replicas));
  return out;
}

std::string FindMpsControl(const MpsSettings& settings, const std::string& driver_root,
                           const std::string& path_env) {
  if (!settings.control_path.empty()) {
    return IsExecutableFile(settings.control_path) ? settings.control_path : "";
  }
  for (const std::string& dir : SplitList(path_env, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + kMpsControlBinary;
    if (IsExecutableFile(candidate)) return candidate;
  }
  // An operator-managed driver (GPU Operator's driver container) lives under its root.
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    std::string candidate = PathUnderRoot(driver_root, dir + std::string(kMpsControlBinary));
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

MpsControl::MpsControl(std::string binary, MpsPaths paths, std::chrono::milliseconds timeout)
    : binary_(std::move(binary)), paths_(std::move(paths)), timeout_(timeout) {}

MpsControl::Result MpsControl::Run(const std::vector<std::string>& args,
                                   const std::string& input) const {
  std::vector<std::string> argv_strings = {binary_};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = ChildEnvironment(paths_);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw SystemError::FromErrno("cannot run", binary_, errno);
  }
  Fd ours{pair[0]}, theirs{pair[1]};
  Fd output{static_cast<int>(syscall(SYS_memfd_create, "accel-mps-control", MFD_CLOEXEC))};
  if (output.fd < 0) throw SystemError::FromErrno("cannot run", binary_, errno);

  // posix_spawn, not fork: no atfork handlers (gRPC's) run, and nothing of the agent's address
  // space is copied. The child gets the socket as stdin, the memory file as stdout and stderr,
  // and no other descriptor of the agent (a listening socket held by the daemon would outlive
  // the agent).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.fd, STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw SystemError::FromErrno("cannot run", binary_, spawned);
  theirs.Close();
  if (!input.empty()) {
    // Small (one command): fits the socket buffer, so this cannot block on a child that does
    // not read. A child that already exited only makes it fail.
    (void)send(ours.fd, input.data(), input.size(), MSG_NOSIGNAL);
  }
  shutdown(ours.fd, SHUT_WR);

  Result result;
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto pause = std::chrono::milliseconds(1);
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (done < 0 && errno != EINTR) break;  // not our child any more: nothing to wait for
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.status = -1;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }

  char buffer[4096];
  lseek(output.fd, 0, SEEK_SET);
  ssize_t n;
  while (result.output.size() < kMaxOutput && (n = read(output.fd, buffer, sizeof buffer)) > 0) {
    result.output.append(buffer, static_cast<size_t>(n));
  }
  return result;
}

void MpsControl::StartDaemon() const {
  for (const std::string& dir : {paths_.pipe_dir, paths_.log_dir}) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) throw SystemError("cannot create", dir, error.message());
    chmod(dir.c_str(), 0755);
  }
  Result r = Run({"-d"}, "");
  if (r.status == 0) return;
  std::string output(Trim(r.output));
  std::string what = r.status < 0 ? "did not return within " +
                                        std::to_string(timeout_.count()) + " ms"
                     : r.status == 127 ? "could not be executed"
                                       : "exited with status " + std::to_string(r.status);
  throw SystemError("cannot start the MPS control daemon", binary_ + " -d",
                    what + (output.empty() ? "" : ": " + output),
                    "see " + paths_.log_dir + "/control.log");
}

std::string MpsControl::Send(const std::string& command) const {
  Result r = Run({}, command + "\n");
  if (r.status == 0) return r.output;
  std::string output(Trim(r.output));
  std::string what = r.status < 0 ? "no answer within " + std::to_string(timeout_.count()) + " ms"
                                  : "exited with status " + std::to_string(r.status);
  throw SystemError("MPS control command '" + command + "' failed", paths_.pipe_dir,
                    what + (output.empty() ? "" : ": " + output));
}

pid_t MpsControl::RunningPid() const {
  std::ifstream in(paths_.pipe_dir + "/" + kMpsPidFile);
  long long value = 0;
  if (!(in >> value) || value <= 0 || value > 0x7fffffff) return 0;
  pid_t pid = static_cast<pid_t>(value);
  // The daemon may be our child (we are PID 1 of a container, or its reaper): reap it once it
  // has exited, so that it does not linger as a zombie that looks alive.
  int status;
  if (waitpid(pid, &status, WNOHANG) == pid) return 0;
  if (!ProcessExists(pid) || IsZombie(pid)) return 0;
  std::error_code error;
  std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
  if (!error) {
    // "(deleted)" after a driver upgrade replaced the file: still the daemon.
    const std::string deleted = " (deleted)";
    if (exe.size() > deleted.size() &&
        exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0) {
      exe.resize(exe.size() - deleted.size());
    }
    std::error_code ignored;
    std::string ours = std::filesystem::canonical(binary_, ignored).string();
    if (exe != ours && Basename(exe) != Basename(binary_)) return 0;  // a reused PID
  }
  return pid;
}

std::string MpsControl::Quit() const {
  pid_t pid = RunningPid();
  std::string said;
  try {
    Send("quit");
    said = "quit";
  } catch (const std::exception& e) {
    said = std::string("quit failed: ") + e.what();
  }
  if (pid == 0) return said;
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (RunningPid() == pid) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      int status;
      waitpid(pid, &status, WNOHANG);
      return said + "; still running after " + std::to_string(timeout_.count()) +
             " ms: killed PID " + std::to_string(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return said;
}

std::string MpsControl::LastLogLine() const {
  std::ifstream in(paths_.log_dir + "/control.log");
  std::string line, last;
  while (std::getline(in, line)) {
    if (!Trim(line).empty()) last = line;
  }
  return std::string(Trim(last));
}

}  // namespace accel::kube
