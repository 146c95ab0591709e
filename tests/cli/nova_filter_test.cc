// The Nova scheduler filter (deploy/openstack/accel_nova_filter.py) under ctest: runs its Python
// tests (tests/openstack/test_accel_nova_filter.py) with Debian's /usr/bin/python3 and
// python3-nova, against real `accel fleet serve` processes started from this build's accel.
// The Python side starts and stops the services and makes its fleet with the accel CLI in a
// temporary SQLite store; this wrapper only asserts that every Python test passed and shows
// the Python output when one did not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_test_util.h"
#include "support/shared_fixture.h"

namespace accel::cli {
namespace nova_filter_test {

using testing::RunShellCapture;
using testing::Src;

TEST(NovaFilter, PythonTestsPassWithDebianNovaAgainstARunningService) {
  ACCEL_REQUIRE_TOOL("/usr/bin/python3", "python3");
  // A directory: the executable check of ACCEL_REQUIRE_TOOL holds for it.
  ACCEL_REQUIRE_TOOL("/usr/lib/python3/dist-packages/nova", "python3-nova");
  ACCEL_REQUIRE_TOOL("/usr/bin/openssl", "openssl");
  const std::string cmd = "cd '" + Src("") + "' && ACCEL_BINARY='" + std::string(ACCEL_BINARY) +
                          "' /usr/bin/python3 -m unittest -v tests/openstack/test_accel_nova_filter.py 2>&1";
  const testing::RunResult r = RunShellCapture(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Every test ran: none skipped (a skip here means a missing tool, which CI treats as failure).
  EXPECT_THAT(r.output, ::testing::HasSubstr("\nOK")) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("skipped"))) << r.output;
}

}  // namespace
}  // namespace accel::cli
