// The DeviceClasses and ResourceClaimTemplates in deploy/kubernetes/dra/: they validate against
// the resource.k8s.io/v1 OpenAPI, and every attribute (and value) their CEL selectors and
// constraints name is one the inventory publishes — a misspelt attribute would make CEL fail
// at allocation time, not at apply time.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "dra/inventory.h"
#include "dra/inventory_fixtures.h"
#include "support/crd_validate.h"

namespace accel::dra {
namespace deploy_objects_test {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(ACCEL_SOURCE_DIR) / "deploy/kubernetes/dra";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> DeployFiles() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kDir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<YAML::Node> Objects() {
  std::vector<YAML::Node> out;
  for (const fs::path& p : DeployFiles()) {
    for (const YAML::Node& doc : YAML::LoadAll(ReadFile(p))) {
      if (doc.IsMap()) out.push_back(doc);
    }
  }
  return out;
}

// Fully qualified attribute name → every value published under it (as text), over the fake
// nodes: HGX H100 with MIG, MI300X, Gaudi 2, and the HGX with SR-IOV VFs.
std::map<std::string, std::set<std::string>> Published() {
  std::map<std::string, std::set<std::string>> out;
  for (const Inventory& inv : {testing::Hgx(), testing::Amd(), testing::Gaudi(), testing::BigHgx(1)}) {
    for (const DraDevice& d : inv.devices) {
      for (const auto& [name, v] : d.attributes) {
        const std::string full = name.find('/') == std::string::npos ? inv.driver + "/" + name : name;
        std::string text = v.string_value;
        if (v.type == AttributeValue::Type::kInt) text = std::to_string(v.int_value);
        if (v.type == AttributeValue::Type::kBool) text = v.bool_value ? "true" : "false";
        out[full].insert(text);
      }
    }
  }
  return out;
}

TEST(DeployObjects, ValidateAgainstTheV1OpenApi) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const std::vector<fs::path> files = DeployFiles();
  ASSERT_GE(files.size(), 2u);
  for (const fs::path& p : files) {
    const test_support::CrdResult r = test_support::ValidateObjects(ReadFile(p), "dra-" + p.stem().string());
    EXPECT_EQ(r.exit_code, 0) << p << ": " << r.output;
  }
}

TEST(DeployObjects, TheExpectedClassesAndTemplatesExist) {
  std::set<std::string> classes, templates;
  for (const YAML::Node& o : Objects()) {
    EXPECT_EQ(o["apiVersion"].as<std::string>(), "resource.k8s.io/v1");
    const std::string kind = o["kind"].as<std::string>();
    const std::string name = o["metadata"]["name"].as<std::string>();
    if (kind == "DeviceClass") classes.insert(name);
    if (kind == "ResourceClaimTemplate") templates.insert(name);
  }
  EXPECT_EQ(classes, (std::set<std::string>{"gpu.accel.io", "nvidia-gpu.accel.io", "amd-gpu.accel.io",
                                            "gaudi.accel.io", "mig.accel.io", "mig-1g.accel.io",
                                            "rdma-nic.accel.io"}));
  EXPECT_EQ(templates, (std::set<std::string>{"gpu-with-nic", "8-gpus-with-nics", "one-mig-1g"}));
}

TEST(DeployObjects, SelectorsNameOnlyPublishedAttributesAndValues) {
  const std::map<std::string, std::set<std::string>> published = Published();
  // device.attributes["DOMAIN"].NAME, or ["DOMAIN"]["NAME"]
  const std::regex attr(R"re(device\.attributes\["([^"]+)"\](?:\.([A-Za-z_][A-Za-z0-9_]*)|\["([^"]+)"\]))re");
  // ... .NAME == "VALUE"  and  .NAME.startsWith("PREFIX")
  const std::regex equals(R"re(\["accel\.io"\]\.([A-Za-z_]+)\s*==\s*"([^"]*)")re");
  const std::regex prefix(R"re(\["accel\.io"\]\.([A-Za-z_]+)\.startsWith\("([^"]*)"\))re");
  int expressions = 0;
  for (const YAML::Node& o : Objects()) {
    if (o["kind"].as<std::string>() != "DeviceClass") continue;
    const std::string cls = o["metadata"]["name"].as<std::string>();
    for (const YAML::Node& sel : o["spec"]["selectors"]) {
      const std::string expr = sel["cel"]["expression"].as<std::string>();
      ++expressions;
      EXPECT_EQ(expr.rfind("device.driver == \"accel.io\" &&", 0), 0u)
          << cls << ": test the driver first: " << expr;
      int attrs = 0;
      for (std::sregex_iterator it(expr.begin(), expr.end(), attr), end; it != end; ++it) {
        const std::string name = (*it)[1].str() + "/" + ((*it)[2].matched ? (*it)[2].str() : (*it)[3].str());
        EXPECT_TRUE(published.count(name)) << cls << " names " << name << ", which no device publishes";
        ++attrs;
      }
      EXPECT_GT(attrs, 0) << cls;
      for (std::sregex_iterator it(expr.begin(), expr.end(), equals), end; it != end; ++it) {
        const std::string name = "accel.io/" + (*it)[1].str();
        ASSERT_TRUE(published.count(name)) << name;
        EXPECT_TRUE(published.at(name).count((*it)[2].str()))
            << cls << ": no device has " << name << " == " << (*it)[2].str();
      }
      for (std::sregex_iterator it(expr.begin(), expr.end(), prefix), end; it != end; ++it) {
        const std::string name = "accel.io/" + (*it)[1].str();
        ASSERT_TRUE(published.count(name)) << name;
        bool any = false;
        for (const std::string& v : published.at(name)) any = any || v.rfind((*it)[2].str(), 0) == 0;
        EXPECT_TRUE(any) << cls << ": no device's " << name << " starts with " << (*it)[2].str();
      }
    }
  }
  EXPECT_GE(expressions, 7);
}

TEST(DeployObjects, TemplatesUseExistingClassesAndPublishedConstraintAttributes) {
  const std::map<std::string, std::set<std::string>> published = Published();
  std::set<std::string> classes;
  for (const YAML::Node& o : Objects()) {
    if (o["kind"].as<std::string>() == "DeviceClass") classes.insert(o["metadata"]["name"].as<std::string>());
  }
  for (const YAML::Node& o : Objects()) {
    if (o["kind"].as<std::string>() != "ResourceClaimTemplate") continue;
    const std::string name = o["metadata"]["name"].as<std::string>();
    const YAML::Node devices = o["spec"]["spec"]["devices"];
    std::set<std::string> requests;
    for (const YAML::Node& r : devices["requests"]) {
      requests.insert(r["name"].as<std::string>());
      EXPECT_TRUE(classes.count(r["exactly"]["deviceClassName"].as<std::string>())) << name;
    }
    EXPECT_LE(requests.size(), 32u);
    if (!devices["constraints"]) continue;
    EXPECT_LE(devices["constraints"].size(), 32u);
    for (const YAML::Node& c : devices["constraints"]) {
      for (const char* key : {"matchAttribute", "distinctAttribute"}) {
        if (c[key]) {
          EXPECT_TRUE(published.count(c[key].as<std::string>())) << name << " " << c[key];
        }
      }
      for (const YAML::Node& r : c["requests"]) {
        EXPECT_TRUE(requests.count(r.as<std::string>())) << name << ": unknown request " << r;
      }
    }
  }
}

// The 8-GPU template on the HGX: its eight gpu-i/nic-i pairs can all be met, because the eight
// GPUs sit on eight different rails and each rail has its NIC.
TEST(DeployObjects, EightGpusWithNicsFitsTheHgx) {
  const Inventory inv = testing::Hgx("nvml/examples/h100x8-mig.json", /*whole_only=*/true);
  std::map<int, int> gpus_per_rail, nics_per_rail;
  for (const DraDevice& d : inv.devices) {
    if (d.rail < 0) continue;
    ++(d.kind == DeviceKind::kNic ? nics_per_rail : gpus_per_rail)[d.rail];
  }
  EXPECT_EQ(gpus_per_rail.size(), 8u);
  for (const auto& [rail, n] : gpus_per_rail) {
    EXPECT_EQ(n, 1);
    EXPECT_GE(nics_per_rail[rail], n) << "rail " << rail;
  }
}

}  // namespace
}  // namespace accel::dra
