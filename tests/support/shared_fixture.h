// Tests that read ../shared (researched reference notes, real peer configs, public hwloc XMLs)
// and tools the suite runs (promtool, prometheus, virt-xml-validate, virsh, xmllint).
//
// The one skip CI accepts: ../shared is not part of a clone, so a test that reads it skips when
// it is absent, with a message that starts with kSharedFixtureAbsent. scripts/check-skips.sh
// (run by scripts/test.sh after ctest) fails the run on any skip whose message does not start
// with that marker. A missing tool is such a failure: scripts/setup.sh installs every tool a
// test runs, so ACCEL_REQUIRE_TOOL's skip is a safety net that names the package, not a pass.
//
//   TEST(Mig, NvidiaDefaultConfig) {
//     const std::string path = test_support::SharedPath("peers/mig/config-default.yaml");
//     ACCEL_REQUIRE_SHARED(path);
//     ...
//   }
//
// Header only; needs ACCEL_SHARED_DIR (tests/CMakeLists.txt defines it for every test binary).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace accel::test_support {

/// The first words of every skip for an absent ../shared file; scripts/check-skips.sh matches it.
inline constexpr const char* kSharedFixtureAbsent = "shared fixture absent: ";

/// The first words of a skip for a tool scripts/setup.sh should have installed (CI fails on it).
inline constexpr const char* kToolMissing = "tool missing: ";

/// ACCEL_SHARED_DIR + "/" + `relative` (the directory may not exist; see ACCEL_REQUIRE_SHARED).
inline std::string SharedPath(const std::string& relative) {
  return std::string(ACCEL_SHARED_DIR) + "/" + relative;
}

/// True when `path` is an executable file.
inline bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace accel::test_support

/// Skips the current test (returns from the test body or SetUp) when `path`, a file or directory
/// under ../shared, does not exist. A macro because GTEST_SKIP returns from the calling function.
#define ACCEL_REQUIRE_SHARED(path)                                                      \
  do {                                                                                  \
    const std::string accel_shared_path_ = (path);                                      \
    if (!std::filesystem::exists(accel_shared_path_))                                   \
      GTEST_SKIP() << ::accel::test_support::kSharedFixtureAbsent << accel_shared_path_; \
  } while (0)

/// Skips the current test when the executable `tool` (an absolute path) is missing, naming the
/// Debian `package` scripts/setup.sh installs it from. CI treats this skip as a failure.
#define ACCEL_REQUIRE_TOOL(tool, package)                                                     \
  do {                                                                                        \
    const std::string accel_tool_path_ = (tool);                                              \
    if (!::accel::test_support::IsExecutable(accel_tool_path_))                               \
      GTEST_SKIP() << ::accel::test_support::kToolMissing << accel_tool_path_ << " (Debian package " \
                   << (package) << "; scripts/setup.sh installs it)";                        \
  } while (0)
