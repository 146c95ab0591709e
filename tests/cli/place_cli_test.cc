// accel place end to end: the binary, the example flavors, the HGX fixture, libvirt's validator.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <thread>
#include <vector>

#include "cli/cli_test_util.h"
#include "support/shared_fixture.h"

namespace accel::cli {
namespace place_cli_test {

using testing::FreshDir;
using testing::RunAccel;
using testing::Shell;
using testing::Src;
using testing::WriteFile;

const std::string kHgx = Src("fixtures/hosts/hgx-h100.json");
const std::string kAliases = Src("examples/flavors/aliases.json");
const std::vector<std::string> kExamples = {"gpu-1g.yaml", "numa2.yaml", "isolate.yaml",
                                            "mixed.yaml", "shared.yaml", "openstack-show.json"};

std::string Place(const std::string& flavor, const std::string& extra = "") {
  return "place --topology " + kHgx + " --flavor " + flavor + " --aliases " + kAliases + " " + extra;
}

TEST(PlaceCli, EveryExampleFlavorPlacesOnTheHgxFixture) {
  auto dir = FreshDir("examples");
  for (const std::string& f : kExamples) {
    auto r = RunAccel(Place(Src("examples/flavors/" + f), "--state " + (dir / "s.db").string() + " -o json"), false);
    ASSERT_EQ(r.exit_code, 0) << f << "\n" << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_TRUE(j["fits"].get<bool>()) << f;
    EXPECT_EQ(j["placement"]["schema"], "accel.placement/v1");
  }
}

// Every generated domain passes libvirt's own schema validator and defines on its test driver.
TEST(PlaceCli, EveryExampleDomainValidatesWithLibvirt) {
  ACCEL_REQUIRE_TOOL("/usr/bin/virt-xml-validate", "libvirt-clients");
  ACCEL_REQUIRE_TOOL("/usr/bin/virsh", "libvirt-clients");
  auto dir = FreshDir("libvirt");
  for (const std::string& f : kExamples) {
    auto r = RunAccel(Place(Src("examples/flavors/" + f), "--state " + (dir / "s.db").string() + " -o libvirt"), false);
    ASSERT_EQ(r.exit_code, 0) << f;
    auto xml = dir / (f + ".xml");
    WriteFile(xml, r.output);
    EXPECT_EQ(Shell("virt-xml-validate " + xml.string() + " domain >/dev/null 2>&1"), 0) << f << "\n" << r.output;
    // The test driver only runs domains of type 'test'; the rest of the document is the same.
    auto test_xml = dir / (f + ".test.xml");
    EXPECT_EQ(Shell("sed \"s/<domain type='kvm'/<domain type='test'/\" " + xml.string() + " > " + test_xml.string()), 0);
    EXPECT_EQ(Shell("virsh -q -c test:///default define " + test_xml.string() + " >/dev/null 2>&1"), 0) << f;
  }
}

TEST(PlaceCli, ExitCodesSayPlacedNoFitOrBadInput) {
  auto dir = FreshDir("exit");
  std::string state = "--state " + (dir / "s.db").string();
  EXPECT_EQ(RunAccel(Place(Src("examples/flavors/gpu-1g.yaml"), state)).exit_code, 0);

  WriteFile(dir / "huge.yaml", "name: huge\nvcpus: 200\nram: 1024\nextra_specs:\n  hw:cpu_policy: dedicated\n");
  auto nofit = RunAccel(Place((dir / "huge.yaml").string(), state));
  EXPECT_EQ(nofit.exit_code, 1) << nofit.output;
  EXPECT_NE(nofit.output.find("NO FIT"), std::string::npos);
  EXPECT_NE(nofit.output.find("node 0: 112 free dedicated CPUs, needs 200"), std::string::npos) << nofit.output;

  struct Bad {
    std::string name, text, expect;
  };
  std::vector<Bad> bad = {
      {"malformed.json", "{\"name\": \"x\", \"vcpus\": ", "malformed.json"},
      {"malformed.yaml", "name: [x\nvcpus: 2\n", "malformed.yaml"},
      {"pagesize.yaml", "name: p\nvcpus: 2\nram: 1024\nextra_specs:\n  hw:mem_page_size: jumbo\n", "hw:mem_page_size"},
      {"alias.yaml", "name: a\nvcpus: 2\nram: 1024\nextra_specs:\n  pci_passthrough:alias: nosuch:1\n", "nosuch"},
  };
  for (const Bad& b : bad) {
    WriteFile(dir / b.name, b.text);
    auto r = RunAccel(Place((dir / b.name).string(), state));
    EXPECT_EQ(r.exit_code, 2) << b.name << "\n" << r.output;
    EXPECT_NE(r.output.find(b.expect), std::string::npos) << b.name << "\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
  // A topology with a CPU in two NUMA nodes, and a malformed hwloc XML.
  WriteFile(dir / "twice.json", R"({"schema": "accel.host/v1", "hostname": "h", "source": "",
    "packages": [{"id": 0, "cpus": "0-1"}],
    "numa_nodes": [{"id": 0, "package": 0, "cpus": "0-1", "cores": ["0", "1"], "memory_kib": 1048576,
                    "hugepages": [{"size_kib": 4, "total": 262144, "free": 262144}], "distances": [10, 20]},
                   {"id": 1, "package": 0, "cpus": "1", "cores": ["1"], "memory_kib": 1048576,
                    "hugepages": [{"size_kib": 4, "total": 262144, "free": 262144}], "distances": [20, 10]}],
    "pci": []})");
  auto twice = RunAccel("place --topology " + (dir / "twice.json").string() + " --flavor " +
                        Src("examples/flavors/shared.yaml") + " " + state);
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("twice.json"), std::string::npos) << twice.output;
  WriteFile(dir / "bad.xml", "<topology version=\"2.0\"><object type=\"Machine\"");
  auto xml = RunAccel("topo --topology " + (dir / "bad.xml").string());
  EXPECT_EQ(xml.exit_code, 2) << xml.output;
  EXPECT_NE(xml.output.find("bad.xml"), std::string::npos) << xml.output;
}

TEST(PlaceCli, ClaimsPersistAcrossInvocationsAndRelease) {
  auto dir = FreshDir("claims");
  std::string state = "--state " + (dir / "s.db").string();
  std::set<int> cpus;
  std::vector<std::string> ids;
  // Eight GPU guests take the eight H100s; the ninth has none left.
  for (int i = 0; i < 9; ++i) {
    auto r = RunAccel(Place(Src("examples/flavors/gpu-1g.yaml"), state + " --claim -o json"), false);
    if (i == 8) {
      EXPECT_EQ(r.exit_code, 1) << r.output;
      break;
    }
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    ids.push_back(j["claim"]);
    for (auto& [v, c] : j["placement"]["cells"][0]["pinning"].items()) EXPECT_TRUE(cpus.insert(c.get<int>()).second);
  }
  auto list = RunAccel("claims " + state);
  EXPECT_EQ(list.exit_code, 0);
  for (const auto& id : ids) EXPECT_NE(list.output.find(id), std::string::npos) << list.output;
  EXPECT_EQ(RunAccel("release " + ids[3] + " " + state).exit_code, 0);
  EXPECT_EQ(RunAccel("release " + ids[3] + " " + state).exit_code, 1);
  EXPECT_EQ(RunAccel(Place(Src("examples/flavors/gpu-1g.yaml"), state + " --claim")).exit_code, 0);
}

// Concurrent `accel place --claim` processes never share a CPU or device.
TEST(PlaceCli, ConcurrentClaimsNeverShareACpuOrDevice) {
  auto dir = FreshDir("concurrent");
  std::string state = "--state " + (dir / "s.db").string();
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(12);
  for (int i = 0; i < 12; ++i)
    threads.emplace_back([&, i] {
      outputs[i] = RunAccel(Place(Src("examples/flavors/gpu-1g.yaml"), state + " --claim -o json"), false).output;
    });
  for (auto& t : threads) t.join();
  std::set<int> cpus;
  std::set<std::string> devices;
  int placed = 0;
  for (const std::string& out : outputs) {
    auto j = nlohmann::json::parse(out);
    if (!j["fits"].get<bool>()) continue;
    ++placed;
    for (auto& [v, c] : j["placement"]["cells"][0]["pinning"].items()) EXPECT_TRUE(cpus.insert(c.get<int>()).second);
    for (auto& d : j["placement"]["devices"]) EXPECT_TRUE(devices.insert(d["address"].get<std::string>()).second);
  }
  EXPECT_EQ(placed, 8);  // one per H100
}

}  // namespace
}  // namespace accel::cli
