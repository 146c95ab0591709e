// End-to-end: runs the accel binary's `topo` subcommand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/hwloc_importers.h"
#include "support/shared_fixture.h"
#include "topology/host_json.h"

namespace accel::topology {
namespace topo_cli_test {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout, then stderr after a "--stderr--" marker
};

/// Runs `env accel args` (env: "NAME=value ..." for accel alone, or empty).
Result RunAccel(const std::string& args, const std::string& env = "") {
  std::string err_file = std::filesystem::temp_directory_path() /
                         ("accel-topo-cli-" + std::to_string(::getpid()) + ".err");
  std::string cmd = env + " " + std::string(ACCEL_BINARY) + " " + args + " 2>" + err_file;
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  r.out += "--stderr--" +
           std::string((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_file);
  return r;
}

std::string Stdout(const Result& r) { return r.out.substr(0, r.out.find("--stderr--")); }

std::string Fixture(const std::string& name) { return test_support::SharedPath("fixtures/hwloc/" + name); }

TEST(TopoCli, XmlToJsonAndBackThroughTheCli) {
  std::string xml = Fixture("nvidiaDGX2.xml");
  ACCEL_REQUIRE_SHARED(xml);
  Result json = RunAccel("topo --topology " + xml + " -o json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  EXPECT_EQ(json.out.substr(json.out.find("--stderr--")), "--stderr--");  // clean stderr
  std::string text = Stdout(json);
  HostTopology host = HostFromJson(text, "stdout");
  EXPECT_EQ(host.pci.size() > 16, true);

  std::string saved = std::filesystem::temp_directory_path() /
                      ("accel-topo-cli-" + std::to_string(::getpid()) + ".json");
  std::ofstream(saved) << text;
  Result again = RunAccel("topo -t " + saved + " -o json");
  std::filesystem::remove(saved);
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(Stdout(again), text);
}

TEST(TopoCli, TextIsTheDefault) {
  std::string xml = Fixture("24em64t-2n6c2t-pci.xml");
  ACCEL_REQUIRE_SHARED(xml);
  Result r = RunAccel("topo --topology " + xml);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Host mirage004"));
  EXPECT_THAT(r.out, HasSubstr("rdma mlx4_0"));
}

TEST(TopoCli, LiveHostByDefault) {
  Result r = RunAccel("topo -o json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(HostFromJson(Stdout(r), "live").source, "live");
}

TEST(TopoCli, BadInputExitsTwoWithOneLine) {
  Result missing = RunAccel("topo --topology /nonexistent/host.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.out,
              HasSubstr("--stderr--accel topo: /nonexistent/host.json: cannot be opened: "));

  std::string bad = std::filesystem::temp_directory_path() /
                    ("accel-topo-cli-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << "{\"schema\": \"accel.host/v1\", ";
  Result malformed = RunAccel("topo --topology " + bad);
  std::filesystem::remove(bad);
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_THAT(malformed.out, HasSubstr("is not valid JSON"));
  EXPECT_EQ(Stdout(malformed), "");

  EXPECT_EQ(RunAccel("topo -o yaml").exit_code, 2);
}

// The XML that crashes libhwloc 2.9's libxml2 importer (tests/topology/isolated_test.cc) as a
// user meets it: exit 2 and one line naming the file, under either importer.
class TopoCliImporter : public ::testing::TestWithParam<test_support::HwlocImporter> {};

TEST_P(TopoCliImporter, ImporterCrashExitsTwoNamingTheFile) {
  const std::string xml = std::string(ACCEL_SOURCE_DIR) + "/tests/topology/data/hwloc-importer-crash.xml";
  Result r = RunAccel("topo --topology " + xml, "HWLOC_LIBXML=" + GetParam().hwloc_libxml);
  EXPECT_EQ(r.exit_code, 2) << r.out;  // -1 would be a signal: accel itself crashed
  EXPECT_EQ(Stdout(r), "");
  EXPECT_THAT(r.out, HasSubstr("--stderr--accel topo: " + xml + ": "));
}

INSTANTIATE_TEST_SUITE_P(BothImporters, TopoCliImporter,
                         ::testing::ValuesIn(test_support::kHwlocImporters),
                         [](const auto& info) { return info.param.name; });

TEST(TopoCli, HelpHasExamples) {
  Result r = RunAccel("topo --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("--topology"));
}

}  // namespace
}  // namespace accel::topology
