#include "devices/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include "devices/backend.h"

namespace accel::devices {

SharedLibrary::SharedLibrary(const std::vector<std::string>& candidates) {
  for (const std::string& name : candidates) {
    dlerror();
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      // Report the file the loader actually chose, not the soname we asked for.
      struct link_map* map = nullptr;
      path_ = (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
                  ? map->l_name
                  : name;
      error_.clear();
      return;
    }
    const char* why = dlerror();
    if (!error_.empty()) error_ += "; ";
    error_ += name + ": " + (why ? why : "not found");
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

void* SharedLibrary::Symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

namespace {

// True when every candidate failed only because its file does not exist, as opposed to a
// library that exists but is broken.
bool NothingInstalled(const std::string& dlopen_errors, size_t candidates) {
  size_t missing = 0;
  const std::string needle = "No such file or directory";
  for (size_t at = dlopen_errors.find(needle); at != std::string::npos;
       at = dlopen_errors.find(needle, at + needle.size())) {
    ++missing;
  }
  return missing >= candidates;
}

}  // namespace

std::unique_ptr<SharedLibrary> LoadVendorLibrary(const std::string& library,
                                                 const std::vector<std::string>& defaults,
                                                 const std::string& what, const std::string& fix) {
  const std::vector<std::string> candidates =
      library.empty() ? defaults : std::vector<std::string>{library};
  auto loaded = std::make_unique<SharedLibrary>(candidates);
  if (loaded->ok()) return loaded;
  if (library.empty() && NothingInstalled(loaded->error(), candidates.size())) return nullptr;
  throw BackendError(what + ": cannot load " + (library.empty() ? candidates.front() : library) +
                     ": " + loaded->error() + " (" + fix + ")");
}

}  // namespace accel::devices
