#include "topology/isolated.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "common/error.h"
#include "topology/sources.h"

namespace accel::topology {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::function<HostTopology()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Found by hwloc_xml_fuzz: Debian's libhwloc 2.9 segfaults importing this XML (a Machine object
// without complete_cpuset). accel reports it as bad input instead of crashing.
TEST(Isolated, LibhwlocCrashBecomesAnInputError) {
  const std::string path = std::string(ACCEL_SOURCE_DIR) + "/tests/topology/data/hwloc-importer-crash.xml";
  EXPECT_THAT(ErrorOf([&] { return LoadTopology(path); }), HasSubstr("hwloc's XML importer crashed"));
}

TEST(Isolated, ChildInputErrorKeepsItsParts) {
  std::string msg = ErrorOf([] {
    return RunIsolated([]() -> HostTopology { throw InputError("f.xml", "numa_nodes[0]", "is wrong", "fix it"); },
                       "f.xml");
  });
  EXPECT_EQ(msg, "f.xml: numa_nodes[0]: is wrong (fix it)");
}

TEST(Isolated, ResultComesBackWhole) {
  HostTopology h;
  h.hostname = "child";
  h.source = "test";
  HostTopology back = RunIsolated([&] { return h; }, "x");
  EXPECT_EQ(back.hostname, "child");
}

TEST(Isolated, AnyCrashIsReported) {
  std::string msg = ErrorOf([] {
    return RunIsolated([]() -> HostTopology {
      std::raise(SIGABRT);
      return {};
    }, "x.xml");
  });
  EXPECT_THAT(msg, HasSubstr("x.xml: is malformed"));
}

}  // namespace
}  // namespace accel::topology
