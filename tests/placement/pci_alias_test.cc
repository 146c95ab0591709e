// PciAliasTable: Nova [pci]alias definitions from JSON, YAML and nova.conf lines.
#include "placement/pci_alias.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace accel::placement {
namespace pci_alias_test {

PciAliasTable Parse(const std::string& text) { return ParsePciAliasText(text, "aliases.json"); }

// Runs `text` and returns the error, failing the test when there is none.
InputError ErrorOf(const std::string& text) {
  try {
    Parse(text);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text;
  return InputError("", "", "");
}

TEST(PciAliasTest, ReadsJsonList) {
  PciAliasTable t = Parse(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI",
     "numa_policy": "required"},
    {"name": "vf", "vendor_id": "15B3", "product_id": "101e", "device_type": "type-VF"}
  ])");
  EXPECT_EQ(t.source(), "aliases.json");
  ASSERT_EQ(t.aliases().size(), 2u);
  const PciAlias* h100 = t.Find("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->numa_policy, PciNumaPolicy::kRequired);
  ASSERT_EQ(h100->specs.size(), 1u);
  EXPECT_EQ(h100->specs[0].alias, "h100");
  EXPECT_EQ(h100->specs[0].vendor_id, 0x10de);
  EXPECT_EQ(h100->specs[0].product_id, 0x2330);
  EXPECT_EQ(h100->specs[0].device_type, "type-PCI");
  const PciAlias* vf = t.Find("vf");
  ASSERT_NE(vf, nullptr);
  EXPECT_EQ(vf->numa_policy, PciNumaPolicy::kLegacy);  // Nova's default
  EXPECT_EQ(vf->specs[0].vendor_id, 0x15b3);           // hex is case-insensitive
  EXPECT_EQ(t.Find("H100"), nullptr);                  // names are exact
  EXPECT_EQ(t.Find("missing"), nullptr);
}

TEST(PciAliasTest, ReadsSingleObjectAndOptionalFields) {
  PciAliasTable t = Parse(R"({"name": " gpu ", "vendor_id": "1002", "capability_type": "pci"})");
  ASSERT_EQ(t.aliases().size(), 1u);
  const PciAlias* a = t.Find("gpu");  // Nova strips the name
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->specs[0].product_id.has_value());
  EXPECT_EQ(a->specs[0].device_type, "");
}

TEST(PciAliasTest, SameNameEntriesAreAlternatives) {
  PciAliasTable t = Parse(R"([
    {"name": "gpu", "vendor_id": "10de", "product_id": "2330", "numa_policy": "socket"},
    {"name": "other", "vendor_id": "1002"},
    {"name": "gpu", "vendor_id": "10de", "product_id": "2335", "numa_policy": "socket"}
  ])");
  ASSERT_EQ(t.aliases().size(), 2u);
  EXPECT_EQ(t.aliases()[0].name, "gpu");  // order of first appearance
  ASSERT_EQ(t.Find("gpu")->specs.size(), 2u);
  EXPECT_EQ(t.Find("gpu")->specs[1].product_id, 0x2335);
  EXPECT_EQ(t.Find("gpu")->numa_policy, PciNumaPolicy::kSocket);
}

TEST(PciAliasTest, SameNameEntriesMustAgreeOnPolicy) {
  InputError e = ErrorOf(R"([
    {"name": "gpu", "vendor_id": "10de", "numa_policy": "required"},
    {"name": "gpu", "vendor_id": "10de", "product_id": "2335"}
  ])");
  EXPECT_EQ(e.field(), "[1].numa_policy");
  EXPECT_NE(std::string(e.what()).find("legacy"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("PciInvalidAlias"), std::string::npos) << e.what();
}

TEST(PciAliasTest, ReadsYamlWithUnquotedNumericIds) {
  PciAliasTable t = ParsePciAliasText(
      "# AMD and Gaudi\n"
      "- name: mi300x\n"
      "  vendor_id: 1002\n"  // YAML reads this as the number 1002
      "  product_id: 74a1\n"
      "  numa_policy: preferred\n"
      "- {name: gaudi2, vendor_id: 1da3, product_id: \"1020\"}\n",
      "aliases.yaml");
  ASSERT_EQ(t.aliases().size(), 2u);
  EXPECT_EQ(t.Find("mi300x")->specs[0].vendor_id, 0x1002);
  EXPECT_EQ(t.Find("mi300x")->specs[0].product_id, 0x74a1);
  EXPECT_EQ(t.Find("mi300x")->numa_policy, PciNumaPolicy::kPreferred);
  EXPECT_EQ(t.Find("gaudi2")->specs[0].product_id, 0x1020);
}

TEST(PciAliasTest, ReadsNovaConfLines) {
  PciAliasTable t = ParsePciAliasText(
      "[DEFAULT]\n"
      "debug = true\n"
      "alias = {\"name\": \"ignored\", \"vendor_id\": \"ffff\"}\n"
      "[pci]\n"
      "# two specs under one name\n"
      "alias = {\"name\": \"gpu\", \"vendor_id\": \"10de\", \"product_id\": \"2330\"}\n"
      "device_spec = {\"vendor_id\": \"10de\"}\n"
      "alias = '{\"name\": \"gpu\", \"vendor_id\": \"10de\",\n"
      "    \"product_id\": \"2335\"}'\n",
      "nova.conf");
  ASSERT_EQ(t.aliases().size(), 1u);
  ASSERT_EQ(t.Find("gpu")->specs.size(), 2u);
  EXPECT_EQ(t.Find("gpu")->specs[1].product_id, 0x2335);
  EXPECT_EQ(t.Find("ignored"), nullptr);
}

TEST(PciAliasTest, NovaConfErrorsNameTheLine) {
  try {
    ParsePciAliasText(
        "[pci]\nalias = {\"name\": \"a\", \"vendor_id\": \"10de\"}\nalias = {\"name\": \"b\"}\n",
        "nova.conf");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "nova.conf:3");
    EXPECT_EQ(e.field(), "[1].vendor_id");
  }
  try {
    ParsePciAliasText("[pci]\nalias = {name: a}\n", "nova.conf");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "nova.conf:2");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(PciAliasTest, ErrorsNameEntryAndField) {
  struct Case {
    const char* text;
    const char* field;
    const char* says;
  };
  const Case cases[] = {
      {R"([{"name": "a", "vendor_id": "10de"}, {"name": "b", "vendor_id": "10de"},
           {"name": "c", "vendor_id": "0x10de"}])",
       "[2].vendor_id", "not 4 hex digits"},
      {R"([{"name": "a", "vendor_id": "10de", "product_id": "23300"}])", "[0].product_id",
       "not 4 hex digits"},
      {R"([{"name": "a", "vendor_id": "g0de"}])", "[0].vendor_id", "not 4 hex digits"},
      {R"([{"name": "a", "vendor_id": 10}])", "[0].vendor_id", "not 4 hex digits"},
      {R"([{"name": "a", "vendor_id": true}])", "[0].vendor_id", "4 hex digits"},
      {R"([{"name": "a"}])", "[0].vendor_id", "every PCI device"},
      {R"([{"vendor_id": "10de"}])", "[0].name", "is missing"},
      {R"([{"name": "  ", "vendor_id": "10de"}])", "[0].name", "is empty"},
      {R"([{"name": "a:b", "vendor_id": "10de"}])", "[0].name", "contains ':'"},
      {R"([{"name": "a,b", "vendor_id": "10de"}])", "[0].name", "contains ','"},
      {R"([{"name": 7, "vendor_id": "10de"}])", "[0].name", "must be a string"},
      {R"([{"name": "a", "vendor_id": "10de", "device_type": "PCI"}])", "[0].device_type", "type-PCI"},
      {R"([{"name": "a", "vendor_id": "10de", "device_type": "vdpa"}])", "[0].device_type", "not supported"},
      {R"([{"name": "a", "vendor_id": "10de", "numa_policy": "strict"}])", "[0].numa_policy",
       "required, legacy, preferred or socket"},
      {R"([{"name": "a", "vendor_id": "10de", "vendorid": "10de"}])", "[0].vendorid", "known fields"},
      {R"([{"name": "a", "vendor_id": "10de", "resource_class": "CUSTOM_A"}])", "[0].resource_class",
       "not supported"},
      {R"([{"name": "a", "vendor_id": "10de", "capability_type": "usb"}])", "[0].capability_type", "pci"},
      {R"([{"name": "a", "vendor_id": "10de"}, "b"])", "[1]", "must be an object"},
      {R"("h100")", "", "list of alias objects"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    InputError e = ErrorOf(c.text);
    EXPECT_EQ(e.where(), "aliases.json");
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
}

TEST(PciAliasTest, ErrorMessageReadsWell) {
  InputError e = ErrorOf(R"([{"name": "a", "vendor_id": "10de"}, {"name": "b", "vendor_id": "10de"},
                             {"name": "c", "vendor_id": "0x10de"}])");
  EXPECT_EQ(std::string(e.what()).rfind("aliases.json: [2].vendor_id: '0x10de' is not 4 hex digits", 0), 0u)
      << e.what();
}

TEST(PciAliasTest, SyntaxErrorsNameLine) {
  try {
    Parse("[\n  {\"name\": \"a\",\n   \"vendor_id\" \"10de\"}\n]");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind("aliases.json:3:", 0), 0u) << e.what();
  }
}

TEST(PciAliasTest, EmptyInputs) {
  EXPECT_TRUE(Parse("[]").empty());
  InputError e = ErrorOf("");
  EXPECT_NE(std::string(e.what()).find("is empty"), std::string::npos) << e.what();
  PciAliasTable none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.source(), "");
  EXPECT_EQ(none.Find("x"), nullptr);
}

TEST(PciAliasTest, LoadsExampleFile) {
  PciAliasTable t = LoadPciAliases(std::string(ACCEL_SOURCE_DIR) + "/examples/flavors/aliases.json");
  ASSERT_EQ(t.aliases().size(), 7u);
  const PciAlias* cx7 = t.Find("cx7");  // the ConnectX-7 PFs of examples/cluster/flavors/h100-4-rdma.yaml
  ASSERT_NE(cx7, nullptr);
  EXPECT_EQ(cx7->specs[0].product_id, 0x1021);
  const PciAlias* h100 = t.Find("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->specs[0].vendor_id, 0x10de);
  EXPECT_EQ(h100->specs[0].product_id, 0x2330);
  EXPECT_EQ(h100->specs[0].device_type, "type-PCI");
  EXPECT_EQ(h100->numa_policy, PciNumaPolicy::kRequired);
  EXPECT_EQ(t.Find("h200")->specs[0].product_id, 0x2335);
  EXPECT_EQ(t.Find("mi300x")->specs[0].vendor_id, 0x1002);
  EXPECT_EQ(t.Find("mi300x")->specs[0].product_id, 0x74a1);
  EXPECT_EQ(t.Find("gaudi2")->specs[0].vendor_id, 0x1da3);
  EXPECT_EQ(t.Find("gaudi2")->specs[0].product_id, 0x1020);
  EXPECT_EQ(t.Find("cx7-vf")->specs[0].device_type, "type-VF");
  EXPECT_EQ(t.Find("cx7-vf")->specs[0].product_id, 0x101e);
  EXPECT_EQ(t.Find("rtx4090")->specs[0].product_id, 0x2684);
}

TEST(PciAliasTest, MissingFile) {
  try {
    LoadPciAliases("/nonexistent/aliases.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "/nonexistent/aliases.json");
    EXPECT_NE(std::string(e.what()).find("cannot be opened"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace accel::placement
