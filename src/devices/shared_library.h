// SharedLibrary: a vendor library opened with dlopen(RTLD_NOW | RTLD_LOCAL), closed on destruction.
//
// Not thread-safe to construct or destroy; Symbol() is safe from any thread once opened.
#pragma once

#include <memory>
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

/// The library for a backend's Open*(): `library` when the user named one, else the first of
/// `defaults` that loads. Returns nullptr when `library` is empty and no default exists on this
/// node (every candidate failed with "No such file or directory": the vendor is simply absent).
/// Throws BackendError("<what>: cannot load <path>: <dlerror> (<fix>)") when a named library does
/// not load, or a default exists but is broken (a missing dependency, a wrong architecture).
std::unique_ptr<SharedLibrary> LoadVendorLibrary(const std::string& library,
                                                 const std::vector<std::string>& defaults,
                                                 const std::string& what, const std::string& fix);

}  // namespace accel::devices
