// ExitCodeFor: the one mapping from an error to accel's exit code (the rule of common/error.h),
// used by main() for errors a command lets through and by RunDaemon for start-up errors.
#pragma once

#include <exception>

namespace accel::cli {

/// kExitBadInput for InputError and devices::BackendError (a vendor library that cannot be
/// used), kExitSystem for SystemError, kExitInternal for anything else (a bug).
int ExitCodeFor(const std::exception& e);

}  // namespace accel::cli
