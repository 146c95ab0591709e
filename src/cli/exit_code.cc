#include "cli/exit_code.h"

#include "common/error.h"
#include "devices/backend.h"

namespace accel::cli {

int ExitCodeFor(const std::exception& e) {
  if (dynamic_cast<const InputError*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const devices::BackendError*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const SystemError*>(&e) != nullptr) return kExitSystem;
  return kExitInternal;
}

}  // namespace accel::cli
