// The accel version, from project(... VERSION ...) in CMakeLists.txt: one source for
// `accel --version` and accel_exporter_build_info.
#pragma once

namespace accel {

#ifndef ACCEL_VERSION
#error "ACCEL_VERSION comes from CMakeLists.txt (accel_common's compile definitions)"
#endif
inline constexpr const char* kVersion = ACCEL_VERSION;

}  // namespace accel
