// Running the accel binary from tests, as a user would: argv in, exit code and output back.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace accel::cli::testing {

struct RunResult {
  int exit_code = -1;   ///< the process's exit status; -1 when it did not exit normally
  std::string output;   ///< stdout (and stderr when merged)
};

/// Runs a shell command line; returns its exit status and stdout (with stderr when the command
/// redirects it there).
inline RunResult RunShellCapture(const std::string& cmd) {
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

/// Runs `accel <args>` through the shell; stderr is merged into output when merge_stderr.
inline RunResult RunAccel(const std::string& args, bool merge_stderr = true) {
  return RunShellCapture(std::string(ACCEL_BINARY) + " " + args +
                         (merge_stderr ? " 2>&1" : " 2>/dev/null"));
}

/// Runs a shell command line; returns its exit status (-1 when it did not exit normally).
inline int Shell(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The start of a shell command running Debian's headless Chromium in `dir` with a private
/// profile (root in CI: no sandbox); the caller appends what to do (--dump-dom URL,
/// --screenshot=...) and redirections. A generous limit: a cold Chromium on a loaded CI machine
/// takes seconds, and nothing is timed.
inline std::string HeadlessChromium(const std::filesystem::path& dir) {
  return "cd '" + dir.string() + "' && HOME='" + dir.string() +
         "' timeout 300 /usr/bin/chromium --headless=new --no-sandbox --disable-gpu --no-first-run "
         "--user-data-dir='" + (dir / "profile").string() + "' ";
}

/// A fresh directory under the test temp dir, removed by the caller's fixture if wanted.
inline std::filesystem::path FreshDir(const std::string& name) {
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("accel-cli-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

inline std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

}  // namespace accel::cli::testing
