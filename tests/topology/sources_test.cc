#include "topology/sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "support/hwloc_importers.h"
#include "support/scoped_env.h"
#include "support/shared_fixture.h"
#include "topology/host_json.h"
#include "topology/sample_host.h"

namespace accel::topology {
namespace sources_test {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel-sources-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::string ErrorOf(const std::string& spec) {
    try {
      LoadTopology(spec);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(TempFiles, SniffsJsonByContentNotExtension) {
  std::string json = ToJson(testing::SampleHost());
  std::string path = Write("host.xml", "\n  " + json);  // misleading extension, leading blanks
  HostTopology host = LoadTopology(path);
  EXPECT_EQ(host.hostname, "sample-1");
  EXPECT_EQ(ToJson(host), json);
}

// Under each of hwloc's XML importers (tests/support/hwloc_importers.h): libxml2 skips a byte
// order mark itself, hwloc's minimal parser refuses it, so accel must hand hwloc the document
// from its first '<'.
class SniffsHwlocXml : public TempFiles,
                       public ::testing::WithParamInterface<test_support::HwlocImporter> {};

TEST_P(SniffsHwlocXml, ByContentAfterAByteOrderMark) {
  std::string fixture = test_support::SharedPath("fixtures/hwloc/24em64t-2n6c2t-pci.xml");
  ACCEL_REQUIRE_SHARED(fixture);
  std::ifstream in(fixture);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = Write("export.json", "\xef\xbb\xbf" + text);  // BOM, wrong extension
  test_support::ScopedEnv importer("HWLOC_LIBXML", GetParam().hwloc_libxml);
  HostTopology host = LoadTopology(path);
  EXPECT_EQ(host.hostname, "mirage004");
  EXPECT_EQ(host.source, "hwloc-xml:" + path);
}

INSTANTIATE_TEST_SUITE_P(BothImporters, SniffsHwlocXml,
                         ::testing::ValuesIn(test_support::kHwlocImporters),
                         [](const auto& info) { return info.param.name; });

TEST_F(TempFiles, ErrorsNameTheFile) {
  std::string missing = (dir_ / "missing.json").string();
  EXPECT_THAT(ErrorOf(missing), HasSubstr(missing + ": cannot be opened: No such file"));
  EXPECT_THAT(ErrorOf(dir_.string()), HasSubstr(dir_.string() + ": is a directory"));
  std::string empty = Write("empty.json", "  \n");
  EXPECT_THAT(ErrorOf(empty), HasSubstr(empty + ": is empty"));
  std::string yaml = Write("host.yaml", "hostname: x\n");
  EXPECT_THAT(ErrorOf(yaml), HasSubstr(yaml + ": is neither JSON nor hwloc XML"));
  std::string bad_json = Write("bad.json", "{\"schema\": ");
  EXPECT_THAT(ErrorOf(bad_json), HasSubstr(bad_json + ":1:12: is not valid JSON"));
  std::string bad_xml = Write("bad.xml", "<topology version=\"2.0\"><object");
  EXPECT_THAT(ErrorOf(bad_xml), HasSubstr(bad_xml + ": is not an hwloc XML topology"));
}

TEST(LoadTopology, LiveIsThisMachine) {
  HostTopology host = LoadTopology("live");
  EXPECT_EQ(host.source, "live");
  EXPECT_EQ(CheckInvariants(host), "");
}

}  // namespace
}  // namespace accel::topology
