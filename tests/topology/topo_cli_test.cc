// End-to-end: runs the accel binary's `topo` subcommand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "topology/host_json.h"

namespace accel::topology {
namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout, then stderr after a "--stderr--" marker
};

Result RunAccel(const std::string& args) {
  std::string err_file = std::filesystem::temp_directory_path() /
                         ("accel-topo-cli-" + std::to_string(::getpid()) + ".err");
  std::string cmd = std::string(ACCEL_BINARY) + " " + args + " 2>" + err_file;
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

std::string Fixture(const std::string& name) {
  return std::string(ACCEL_SHARED_DIR) + "/fixtures/hwloc/" + name;
}

TEST(TopoCli, XmlToJsonAndBackThroughTheCli) {
  std::string xml = Fixture("nvidiaDGX2.xml");
  if (!std::filesystem::exists(xml)) GTEST_SKIP() << "no " << xml;
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
  if (!std::filesystem::exists(xml)) GTEST_SKIP() << "no " << xml;
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

TEST(TopoCli, HelpHasExamples) {
  Result r = RunAccel("topo --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("--topology"));
}

}  // namespace
}  // namespace accel::topology
