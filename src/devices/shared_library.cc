#include "devices/shared_library.h"

#include <dlfcn.h>
#include <link.h>

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

}  // namespace accel::devices
