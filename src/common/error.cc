#include "common/error.h"

#include <cstring>

namespace accel {

SystemError SystemError::FromErrno(const std::string& operation, const std::string& object,
                                   int err, std::string hint) {
  return SystemError(operation, object, std::strerror(err), std::move(hint));
}

}  // namespace accel
