// ScopedEnv: sets an environment variable for one scope and restores what was there before.
//
// Not thread-safe (setenv is not): use it on the test's main thread, before starting threads or
// child processes that should see the value. Header only.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace accel::test_support {

class ScopedEnv {
 public:
  /// Sets `name` to `value` until destruction; then restores the old value, or unsets it when it
  /// was unset.
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* old = ::getenv(name_.c_str())) old_ = old;
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace accel::test_support
