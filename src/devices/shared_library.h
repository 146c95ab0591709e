// SharedLibrary: a vendor library opened with dlopen(RTLD_NOW | RTLD_LOCAL), closed on destruction.
//
// Not thread-safe to construct or destroy; Symbol() is safe from any thread once opened.
#pragma once

#include <string>
#include <vector>

namespace accel::devices {

class SharedLibrary {
 public:
  /// Tries each candidate in order (a bare soname goes through the loader's search path, a path
  /// with '/' is opened as is). On success path() is what was opened; on failure ok() is false
  /// and error() lists every candidate with dlerror()'s reason.
  explicit SharedLibrary(const std::vector<std::string>& candidates);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

  /// The symbol's address, or nullptr when the library does not export it (an optional feature).
  void* Symbol(const char* name) const;

  /// Typed lookup: `auto* f = lib.Function<nvmlReturn_t(unsigned*)>("nvmlDeviceGetCount_v2");`
  template <typename Signature>
  Signature* Function(const char* name) const {
    return reinterpret_cast<Signature*>(Symbol(name));
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string error_;
};

}  // namespace accel::devices
