#include "topology/isolated.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "common/error.h"
#include "support/hwloc_importers.h"
#include "support/scoped_env.h"
#include "topology/sources.h"

namespace accel::topology {
namespace isolated_test {

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
// without complete_cpuset) with its libxml2 importer, while its minimal importer refuses it
// cleanly. Whichever importer a machine has, the user gets the same answer: an InputError that
// names the file, never a crash. Run under each importer (tests/support/hwloc_importers.h).
class ImporterCrash : public ::testing::TestWithParam<test_support::HwlocImporter> {};

TEST_P(ImporterCrash, IsAnInputErrorNamingTheFile) {
  const std::string path = std::string(ACCEL_SOURCE_DIR) + "/tests/topology/data/hwloc-importer-crash.xml";
  // The parse runs in a forked child (RunIsolated), which reads the variable on its first import.
  test_support::ScopedEnv importer("HWLOC_LIBXML", GetParam().hwloc_libxml);
  try {
    LoadTopology(path);
    ADD_FAILURE() << "loaded a topology hwloc cannot import";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_THAT(e.what(), HasSubstr(path + ": "));
    EXPECT_THAT(e.problem(), ::testing::AnyOf(HasSubstr("hwloc's XML importer crashed"),
                                               HasSubstr("not an hwloc XML topology")));
    EXPECT_THAT(e.hint(), HasSubstr("lstopo"));
  }
}

INSTANTIATE_TEST_SUITE_P(Isolated, ImporterCrash, ::testing::ValuesIn(test_support::kHwlocImporters),
                         [](const auto& info) { return info.param.name; });

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
