// Reading flavors: YAML and JSON, accel's form and `openstack flavor show -f json` output (both
// properties forms), lists, the example flavors, and errors that name the file and field. Also the
// YAML/JSON reader they share (common/structured_file.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "common/error.h"
#include "common/structured_file.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace accel::placement {
namespace flavor_file_test {

using nlohmann::json;
using Specs = std::vector<std::pair<std::string, std::string>>;

const std::string kExamples = std::string(ACCEL_SOURCE_DIR) + "/examples/flavors/";

InputError ErrorOf(const std::string& text, const std::string& where = "flavor.yaml") {
  try {
    ParseFlavorText(text, where);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text;
  return InputError("", "", "");
}

// ---- structured_file ----

TEST(StructuredFileTest, YamlScalarsResolveLikeYaml12Core) {
  json j = ParseStructuredText(
      "int: 16\nneg: -3\nbig: 131072\nfloat: 2.0\nt: true\nf: False\nnull1: ~\nnull2:\n"
      "mb: 2MB\ngb: 1GB\nrange: 0-3\nmask: ^0-1\nalias: h100:1\nhex: 10de\nzero_lead: \"0100\"\n"
      "zero_lead_plain: 0100\nyes: yes\nquoted: \"16\"\nsingle: '2'\ntagged: !!str 5\n"
      "octal: 0o17\nhexnum: 0x1F\nexp: 1e3\nhuge: 123456789012345678901234567890\n",
      "t.yaml");
  EXPECT_EQ(j["int"], 16);
  EXPECT_EQ(j["neg"], -3);
  EXPECT_EQ(j["big"], 131072);
  EXPECT_TRUE(j["float"].is_number_float());
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["f"], false);
  EXPECT_TRUE(j["null1"].is_null());
  EXPECT_TRUE(j["null2"].is_null());
  for (const char* key : {"mb", "gb", "range", "mask", "alias", "hex", "zero_lead", "zero_lead_plain", "yes",
                          "quoted", "single", "tagged", "octal", "hexnum", "exp", "huge"}) {
    EXPECT_TRUE(j[key].is_string()) << key << " = " << j[key].dump();
  }
  EXPECT_EQ(j["mb"], "2MB");
  EXPECT_EQ(j["zero_lead_plain"], "0100");
  EXPECT_EQ(j["quoted"], "16");
  EXPECT_EQ(j["yes"], "yes");
}

TEST(StructuredFileTest, JsonIsDetectedByFirstCharacter) {
  EXPECT_EQ(ParseStructuredText("  \n {\"a\": [1, \"2MB\"]}", "x")["a"][1], "2MB");
  EXPECT_EQ(ParseStructuredText("\xEF\xBB\xBF[1]", "x")[0], 1);
  EXPECT_EQ(ParseStructuredText("a: [1, 2]", "x")["a"][1], 2);  // YAML flow list after a key
  EXPECT_TRUE(ParseStructuredText("", "x").is_null());
  EXPECT_TRUE(ParseStructuredText("# only a comment\n", "x").is_null());
}

TEST(StructuredFileTest, SyntaxErrorsNameFileLineAndColumn) {
  try {
    ParseStructuredText("{\n  \"a\": 1,\n  \"b\" 2\n}", "f.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "f.json:3:7") << e.what();
    EXPECT_NE(e.problem().find("is not valid JSON: syntax error"), std::string::npos) << e.what();
    EXPECT_EQ(e.problem().find("json.exception"), std::string::npos) << e.what();
  }
  try {
    ParseStructuredText("name: a\nextra_specs:\n  hw:cpu_policy: [dedicated\n", "f.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind("f.yaml:", 0), 0u) << e.what();
    EXPECT_NE(e.problem().find("is not valid YAML"), std::string::npos) << e.what();
  }
}

TEST(StructuredFileTest, DuplicateKeysAreRefused) {
  try {
    ParseStructuredText("{\"flavors\": [{\"name\": \"a\", \"extra_specs\": {\"x\": 1, \"x\": 2}}]}",
                        "f.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "flavors[0].extra_specs.x") << e.what();
    EXPECT_EQ(e.where(), "f.json:1:52") << e.what();
    EXPECT_EQ(e.problem(), "key given twice (both on line 1, columns 44 and 52)") << e.what();
  }
  try {
    ParseStructuredText("name: a\nextra_specs:\n  hw:numa_nodes: 1\n  hw:numa_nodes: 2\n", "f.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "f.yaml:4:3") << e.what();
    EXPECT_EQ(e.field(), "extra_specs.hw:numa_nodes") << e.what();
    EXPECT_EQ(e.problem(), "key given twice (lines 3 and 4)") << e.what();
  }
}

TEST(StructuredFileTest, RefusesAbuse) {
  std::string deep_json(200, '[');
  EXPECT_THROW(ParseStructuredText(deep_json, "x"), InputError);
  std::string deep_yaml;
  for (int i = 0; i < 100; ++i) deep_yaml += std::string(i * 2, ' ') + "k:\n";
  EXPECT_THROW(ParseStructuredText(deep_yaml, "x"), InputError);
  // Nine levels of ten aliases each would expand to 10^9 nodes.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    laughs += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
              ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  EXPECT_THROW(ParseStructuredText(laughs, "x"), InputError);
  EXPECT_THROW(ParseStructuredText("a: 1\n---\nb: 2\n", "x"), InputError);
  EXPECT_THROW(ParseStructuredText("? [a, b]\n: c\n", "x"), InputError);
}

TEST(StructuredFileTest, YamlAnchorsAndStrayText) {
  json j =
      ParseStructuredText("base: &b {hw:cpu_policy: dedicated, n: 2}\ncopy: *b\n&k key: v\nother: *k\n", "x");
  EXPECT_EQ(j["copy"]["hw:cpu_policy"], "dedicated");
  EXPECT_EQ(j["copy"]["n"], 2);
  EXPECT_EQ(j["other"], "key");
  // yaml-cpp's own LoadAll loops forever on this; the reader must refuse it promptly.
  EXPECT_THROW(ParseStructuredText("\"\",", "x"), InputError);
  EXPECT_THROW(ParseStructuredText("a: *nowhere\n", "x"), InputError);
  EXPECT_THROW(ParseStructuredText("name: \xff\xfe\n", "x"), InputError);          // not UTF-8
  EXPECT_THROW(ParseStructuredText("{\"name\": \"\xc0\xaf\"}", "x"), InputError);  // overlong
  EXPECT_EQ(ParseStructuredText("name: gr\xc3\xbc\xc3\x9f"
                                "e\n",
                                "x")["name"],
            "gr\u00fc\u00dfe");
  try {
    ParseStructuredText("a: 1\n---\nb: 2\n", "f.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "f.yaml:3:1") << e.what();
    EXPECT_NE(e.problem().find("more than one YAML document"), std::string::npos) << e.what();
  }
}

TEST(StructuredFileTest, UnreadableFiles) {
  EXPECT_THROW(ReadStructuredFile("/nonexistent/x.yaml"), InputError);
  EXPECT_THROW(ReadStructuredFile(ACCEL_SOURCE_DIR), InputError);
}

// ---- flavors ----

TEST(FlavorFileTest, ReadsAccelYaml) {
  std::vector<Flavor> f = ParseFlavorText(
      "name: gpu\nvcpus: 16\nram: 131072\nextra_specs:\n"
      "  hw:cpu_policy: dedicated\n  hw:numa_nodes: 2\n  hw:mem_page_size: 1GB\n"
      "  pci_passthrough:alias: h100:1\n  hw:cpu_realtime: true\n",
      "gpu.yaml");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, "gpu");
  EXPECT_EQ(f[0].vcpus, 16);
  EXPECT_EQ(f[0].ram_mib, 131072u);
  Specs want = {{"hw:cpu_policy", "dedicated"},
                {"hw:cpu_realtime", "true"},
                {"hw:mem_page_size", "1GB"},
                {"hw:numa_nodes", "2"},
                {"pci_passthrough:alias", "h100:1"}};
  EXPECT_EQ(f[0].extra_specs, want);
}

TEST(FlavorFileTest, ReadsAccelJsonAndList) {
  std::vector<Flavor> f = ParseFlavorText(
      R"([{"name": "a", "vcpus": 2, "ram": 1024},
          {"name": "b", "vcpus": 4, "ram": 2048, "extra_specs": {"hw:numa_nodes": 2, "hw:cpu_policy": "dedicated"}}])",
      "list.json");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "a");
  EXPECT_TRUE(f[0].extra_specs.empty());
  EXPECT_EQ(f[1].extra_specs, (Specs{{"hw:cpu_policy", "dedicated"}, {"hw:numa_nodes", "2"}}));
  f = ParseFlavorText("- {name: a, vcpus: 1, ram: 512}\n- {name: b, vcpus: 1, ram: 512}\n", "list.yaml");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].name, "b");
}

TEST(FlavorFileTest, ReadsComputeApiBodies) {
  std::vector<Flavor> f = ParseFlavorText(
      R"({"flavors": [{"id": "1", "name": "m1.tiny", "vcpus": 1, "ram": 512, "disk": 1, "swap": "",
          "OS-FLV-EXT-DATA:ephemeral": 0, "links": [], "extra_specs": {"hw:mem_page_size": "small"}}]})",
      "api.json");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].extra_specs, (Specs{{"hw:mem_page_size", "small"}}));
  f = ParseFlavorText(R"({"flavor": {"name": "x", "vcpus": 2, "ram": 64}})", "api.json");
  EXPECT_EQ(f[0].name, "x");
}

TEST(FlavorFileTest, ReadsOpenStackShowWithPropertiesObject) {
  std::vector<Flavor> f = ParseFlavorText(R"({
    "OS-FLV-DISABLED:disabled": false, "OS-FLV-EXT-DATA:ephemeral": 0, "access_project_ids": null,
    "description": null, "disk": 40, "id": "0b1c", "name": "gpu.large",
    "os-flavor-access:is_public": true,
    "properties": {"hw:cpu_policy": "dedicated", "pci_passthrough:alias": "h100:2"},
    "ram": 65536, "rxtx_factor": 1.0, "swap": 0, "vcpus": 8})",
                                          "show.json");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, "gpu.large");
  EXPECT_EQ(f[0].vcpus, 8);
  EXPECT_EQ(f[0].ram_mib, 65536u);
  EXPECT_EQ(f[0].extra_specs, (Specs{{"hw:cpu_policy", "dedicated"}, {"pci_passthrough:alias", "h100:2"}}));
}

TEST(FlavorFileTest, ReadsOpenStackShowWithPropertiesString) {
  std::vector<Flavor> f = ParseFlavorText(R"({
    "OS-FLV-EXT-DATA:ephemeral": 0, "disk": 40, "id": "7", "name": "old.client",
    "os-flavor-access:is_public": true,
    "properties": "hw:cpu_policy='dedicated', hw:mem_page_size='1GB', hw:numa_cpus.0='0-1,3', hw:numa_cpus.1='2', hw:numa_mem.0='1024', hw:numa_mem.1='1024', hw:numa_nodes='2'",
    "ram": 2048, "rxtx_factor": 1.0, "swap": "", "vcpus": 4})",
                                          "old.json");
  ASSERT_EQ(f.size(), 1u);
  Specs want = {{"hw:cpu_policy", "dedicated"}, {"hw:mem_page_size", "1GB"}, {"hw:numa_cpus.0", "0-1,3"},
                {"hw:numa_cpus.1", "2"},        {"hw:numa_mem.0", "1024"},   {"hw:numa_mem.1", "1024"},
                {"hw:numa_nodes", "2"}};
  EXPECT_EQ(f[0].extra_specs, want);
  PlacementRequest req = BuildRequest(f[0], PciAliasTable(), "old.json");
  ASSERT_EQ(req.cells.size(), 2u);
  EXPECT_EQ(req.cells[0].dedicated_vcpus.ToString(), "0-1,3");
  EXPECT_EQ(req.cells[1].dedicated_vcpus.ToString(), "2");
  EXPECT_EQ(ParseFlavorText(R"({"name": "n", "vcpus": 1, "ram": 1, "properties": ""})", "x")[0].extra_specs,
            Specs{});
}

TEST(FlavorFileTest, PropertiesStringEdgeCases) {
  EXPECT_EQ(ParseOpenStackProperties("a:b='x,y', c='it''s', d=''", "w", "properties"),
            (Specs{{"a:b", "x,y"}, {"c", "it''s"}, {"d", ""}}));
  EXPECT_THROW(ParseOpenStackProperties("hw:cpu_policy=dedicated", "w", "properties"), InputError);
  EXPECT_THROW(ParseOpenStackProperties("hw:cpu_policy='dedicated", "w", "properties"), InputError);
  EXPECT_THROW(ParseOpenStackProperties("='x'", "w", "properties"), InputError);
}

TEST(FlavorFileTest, ReadsFlavorListLongOutput) {
  std::vector<Flavor> f = ParseFlavorText(R"([{"ID": "1", "Name": "m1.pinned", "RAM": 4096, "Disk": 10,
      "Ephemeral": 0, "VCPUs": 4, "Is Public": true, "Swap": 0, "RXTX Factor": 1.0,
      "Properties": {"hw:cpu_policy": "dedicated"}}])",
                                          "list.json");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].vcpus, 4);
  EXPECT_EQ(f[0].extra_specs, (Specs{{"hw:cpu_policy", "dedicated"}}));
}

TEST(FlavorFileTest, ErrorsNameFileAndField) {
  struct Case {
    const char* text;
    const char* field;
    const char* says;
  };
  const Case cases[] = {
      {"vcpus: 2\nram: 1024\n", "name", "is missing"},
      {"name: a\nram: 1024\n", "vcpus", "is missing"},
      {"name: a\nvcpus: 2\n", "ram", "is missing"},
      {"name: a\nvcpus: 0\nram: 1024\n", "vcpus", "at least 1"},
      {"name: a\nvcpus: -2\nram: 1024\n", "vcpus", "at least 1"},
      {"name: a\nvcpus: 2.5\nram: 1024\n", "vcpus", "whole number"},
      {"name: a\nvcpus: two\nram: 1024\n", "vcpus", "whole number"},
      {"name: a\nvcpus: 100000\nram: 1024\n", "vcpus", "more than accel handles"},
      {"name: a\nvcpus: 2\nram: 128GB\n", "ram", "whole number"},
      {"name: \"\"\nvcpus: 2\nram: 1024\n", "name", "is empty"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_spec:\n  hw:cpu_policy: dedicated\n", "extra_spec",
       "not a flavor field"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_specs: [a, b]\n", "extra_specs", "mapping"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_specs:\n  hw:numa_nodes:\n", "extra_specs.hw:numa_nodes",
       "no value"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_specs:\n  hw:numa_cpus.0: [0, 1]\n", "extra_specs.hw:numa_cpus.0",
       "single value"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_specs:\n  \"hw:cpu_policy=\": dedicated\n",
       "extra_specs.hw:cpu_policy=", "letters, digits"},
      {"name: a\nvcpus: 2\nram: 1024\nextra_specs: {}\nproperties: {}\n", "properties", "together"},
      {"[]", "", "no flavors"},
      {"- {name: a, vcpus: 1, ram: 1}\n- {name: a, vcpus: 2, ram: 2}\n", "[1].name", "appears twice"},
      {"- {name: a, vcpus: 1, ram: 1}\n- {name: b, vcpus: 0, ram: 2}\n", "[1].vcpus", "at least 1"},
      {"- 7\n", "[0]", "flavor object"},
      {"", "", "is empty"},
      {"just text", "(top level)", "flavor object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    InputError e = ErrorOf(c.text);
    EXPECT_EQ(e.where(), "flavor.yaml") << e.what();
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
}

TEST(FlavorFileTest, LoadFlavorWantsExactlyOne) {
  std::string path = ::testing::TempDir() + "/accel_flavor_two.yaml";
  {
    std::ofstream out(path);
    out << "- {name: a, vcpus: 1, ram: 512}\n- {name: b, vcpus: 1, ram: 512}\n";
  }
  EXPECT_EQ(LoadFlavors(path).size(), 2u);
  try {
    LoadFlavor(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(e.problem().find("holds 2 flavors"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(LoadFlavor("/nonexistent/flavor.yaml"), InputError);
}

// ---- the examples (valid for the 2-socket HGX H100 fixture host) ----

class ExampleTest : public ::testing::Test {
 protected:
  PlacementRequest Load(const std::string& file) {
    Flavor f = LoadFlavor(kExamples + file);
    return BuildRequest(f, LoadPciAliases(kExamples + "aliases.json"), kExamples + file);
  }
};

TEST_F(ExampleTest, Gpu1g) {
  PlacementRequest r = Load("gpu-1g.yaml");
  EXPECT_EQ(r.flavor, "gpu-1g");
  EXPECT_EQ(r.vcpus, 16);
  EXPECT_EQ(r.memory_mib, 131072u);
  EXPECT_EQ(r.cpu_policy, CpuPolicy::kDedicated);
  EXPECT_EQ(r.emulator_policy, EmulatorPolicy::kIsolate);
  EXPECT_EQ(r.page_size.kind, PageSizeRequest::kExplicit);
  EXPECT_EQ(r.page_size.size_kib, 1048576u);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].dedicated_vcpus.ToString(), "0-15");
  ASSERT_EQ(r.pci.size(), 1u);
  EXPECT_EQ(r.pci[0].alias, "h100");
  EXPECT_EQ(r.pci[0].count, 1);
  EXPECT_EQ(r.pci[0].numa_policy, PciNumaPolicy::kRequired);
}

TEST_F(ExampleTest, Numa2) {
  PlacementRequest r = Load("numa2.yaml");
  ASSERT_EQ(r.cells.size(), 2u);
  EXPECT_EQ(r.cells[0].dedicated_vcpus.ToString(), "0-15");
  EXPECT_EQ(r.cells[1].dedicated_vcpus.ToString(), "16-31");
  // 2 MiB pages: each cell must fit the host node's 16384 x 2M pool (32 GiB).
  for (const GuestCell& c : r.cells) EXPECT_LE(c.memory_mib * 1024 / 2048, 16384u);
  EXPECT_EQ(r.page_size.size_kib, 2048u);
  ASSERT_EQ(r.pci.size(), 1u);
  EXPECT_EQ(r.pci[0].count, 2);
}

TEST_F(ExampleTest, Isolate) {
  PlacementRequest r = Load("isolate.yaml");
  EXPECT_EQ(r.thread_policy, ThreadPolicy::kIsolate);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].dedicated_vcpus.Count(), 8);
  EXPECT_EQ(r.cells[0].memory_mib, 32768u);
}

TEST_F(ExampleTest, Mixed) {
  PlacementRequest r = Load("mixed.yaml");
  EXPECT_EQ(r.cpu_policy, CpuPolicy::kMixed);
  EXPECT_EQ(r.page_size.kind, PageSizeRequest::kLarge);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].dedicated_vcpus.ToString(), "2-11");
  EXPECT_EQ(r.cells[0].shared_vcpus.ToString(), "0-1");
  EXPECT_EQ(r.cells[0].memory_mib, 49152u);
}

TEST_F(ExampleTest, Shared) {
  PlacementRequest r = Load("shared.yaml");
  EXPECT_EQ(r.cpu_policy, CpuPolicy::kShared);
  EXPECT_TRUE(r.cells.empty());
  EXPECT_TRUE(r.pci.empty());
  EXPECT_EQ(r.extra_specs.size(), 3u);
}

TEST_F(ExampleTest, OpenStackShow) {
  PlacementRequest r = Load("openstack-show.json");
  EXPECT_EQ(r.flavor, "gpu.h100.2x");
  EXPECT_EQ(r.vcpus, 32);
  EXPECT_EQ(r.memory_mib, 262144u);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].dedicated_vcpus.ToString(), "0-31");
  ASSERT_EQ(r.pci.size(), 1u);
  EXPECT_EQ(r.pci[0].count, 2);
  EXPECT_EQ(r.pci[0].numa_policy, PciNumaPolicy::kRequired);
}

TEST_F(ExampleTest, EveryExampleFitsTheHgxHost) {
  // 56 cores x 2 threads, 768 x 1G and 16384 x 2M pages per node, 4 H100 per node.
  for (const char* file :
       {"gpu-1g.yaml", "numa2.yaml", "isolate.yaml", "mixed.yaml", "shared.yaml", "openstack-show.json"}) {
    SCOPED_TRACE(file);
    PlacementRequest r = Load(file);
    for (const GuestCell& c : r.cells) {
      int pinned = c.dedicated_vcpus.Count() * (r.thread_policy == ThreadPolicy::kIsolate ? 2 : 1);
      EXPECT_LE(pinned + 1, 112);
      if (r.page_size.kind == PageSizeRequest::kExplicit && r.page_size.size_kib == 2048) {
        EXPECT_LE(c.memory_mib / 2, 16384u);
      } else if (r.page_size.kind != PageSizeRequest::kNone) {
        EXPECT_LE(c.memory_mib / 1024, 768u);
      }
    }
    for (const PciRequest& p : r.pci) EXPECT_LE(p.count, 4);
  }
}

}  // namespace
}  // namespace accel::placement
