#include "topology/isolated.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "topology/host_json.h"

namespace accel::topology {

namespace {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The child's whole life: parse, answer "J<json>" or "E<message>", leave without running the
// parent's atexit handlers or flushing its stdio buffers.
[[noreturn]] void Child(int fd, const std::function<HostTopology()>& parse) {
  std::string answer;
  try {
    answer = "J" + ToJson(parse());
  } catch (const InputError& e) {
    const char sep = '\x1f';
    answer = "E" + e.where() + sep + e.field() + sep + e.problem() + sep + e.hint();
  } catch (const std::exception& e) {
    answer = "X" + std::string(e.what());
  }
  WriteAll(fd, answer);
  _exit(0);
}

}  // namespace

HostTopology RunIsolated(const std::function<HostTopology()>& parse, const std::string& where) {
  int fds[2];
  if (pipe(fds) != 0) throw SystemError::FromErrno("cannot create a pipe to parse", where, errno);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw SystemError::FromErrno("cannot fork to parse", where, errno);
  }
  if (pid == 0) {
    close(fds[0]);
    Child(fds[1], parse);
  }
  close(fds[1]);
  const std::string answer = ReadAll(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !answer.empty()) {
    if (answer[0] == 'J') return HostFromJson(answer.substr(1), where);
    if (answer[0] == 'E') {
      std::vector<std::string> parts(1);
      for (char c : answer.substr(1)) {
        if (c == '\x1f') parts.emplace_back();
        else parts.back().push_back(c);
      }
      parts.resize(4);
      throw InputError(parts[0], parts[1], parts[2], parts[3]);
    }
  }
  std::string how = WIFSIGNALED(status) ? std::string("crashed with signal ") + strsignal(WTERMSIG(status))
                                        : "failed: " + (answer.size() > 1 ? answer.substr(1) : "no answer");
  throw InputError(where, "", "is malformed: hwloc's XML importer " + how,
                   "give an unmodified export of `lstopo --of xml`");
}

}  // namespace accel::topology
