#include "placement/placement_json.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel::placement {
namespace placement_json_test {

using nlohmann::ordered_json;

Placement Sample() {
  Placement p;
  p.host = "hgx-h100";
  p.flavor = "gpu-2c";
  CellPlacement c0;
  c0.guest_cell = 0;
  c0.host_node = 1;
  c0.pinning = {{0, 56}, {1, 57}, {10, 168}};
  c0.shared_vcpus = {2, 3};
  c0.shared_cpus = {60, 61, 62, 63};
  c0.consumed_cpus = {56, 57, 168, 169};
  c0.memory_mib = 16384;
  c0.page_size_kib = 1048576;
  c0.pages = 16;
  CellPlacement c1;
  c1.guest_cell = 1;
  c1.host_node = 0;
  c1.memory_mib = 512;
  c1.page_size_kib = 4;
  c1.pages = 131072;
  p.cells = {c0, c1};
  p.emulator_cpus = {58};
  p.emulator_consumed_cpus = {58, 170};
  p.devices = {{"h100", "0000:9a:00.0", 0x10de, 0x2330, 1, 0},
               {"cx7", "0000:19:00.1", 0x15b3, 0x101e, -1, -1}};
  p.floating_vcpus = 0;
  p.notes = {"GPU 0000:41:00.0 is remote to guest cell 0 (policy preferred)", "ünïcode ok"};
  return p;
}

TEST(PlacementJson, WriteReadWriteIsByteExact) {
  std::string text = WritePlacementJson(Sample());
  Placement back = ReadPlacementJson(text, "test");
  EXPECT_EQ(WritePlacementJson(back), text);
  ASSERT_EQ(back.cells.size(), 2u);
  EXPECT_EQ(back.cells[0].pinning, (std::map<int, int>{{0, 56}, {1, 57}, {10, 168}}));
  EXPECT_EQ(back.cells[0].shared_vcpus, CpuSet({2, 3}));
  EXPECT_EQ(back.cells[1].pages, 131072u);
  EXPECT_EQ(back.devices[1].vendor_id, 0x15b3);
  EXPECT_EQ(back.devices[1].numa_node, -1);
  EXPECT_EQ(back.emulator_consumed_cpus.ToString(), "58,170");
  EXPECT_EQ(back.notes, Sample().notes);
}

TEST(PlacementJson, KeysComeInDocumentedOrderAndPinningNumerically) {
  ordered_json j = PlacementToJson(Sample());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "host", "flavor", "cells", "emulator_cpus",
                                            "emulator_consumed_cpus", "devices", "floating_vcpus",
                                            "floating_memory_mib", "notes"}));
  EXPECT_EQ(j["schema"], "accel.placement/v1");
  // "10" after "1": numeric, not lexical, order.
  EXPECT_EQ(j["cells"][0]["pinning"].dump(), R"({"0":56,"1":57,"10":168})");
  EXPECT_EQ(j["devices"][0]["vendor_id"], "10de");
  EXPECT_EQ(j["cells"][0]["consumed_cpus"], "56-57,168-169");
}

TEST(PlacementJson, FloatingAndEmptyPlacementRoundTrips) {
  Placement p;
  p.host = "h";
  p.flavor = "small";
  p.floating_vcpus = 2;
  p.floating_memory_mib = 2048;
  std::string text = WritePlacementJson(p);
  EXPECT_EQ(WritePlacementJson(ReadPlacementJson(text, "t")), text);
}

TEST(PlacementJson, OptionalFieldsDefaultWhenAbsent) {
  Placement p = PlacementFromJson(ordered_json::parse(R"({
    "schema": "accel.placement/v1", "host": "h", "flavor": "f",
    "cells": [{"guest_cell": 0, "host_node": 0, "memory_mib": 1024, "page_size_kib": 4,
               "pages": 262144}],
    "devices": [{"address": "0000:01:00.0"}]})"),
                                  "t");
  EXPECT_TRUE(p.cells[0].pinning.empty());
  EXPECT_TRUE(p.emulator_cpus.Empty());
  EXPECT_EQ(p.devices[0].numa_node, -1);
  EXPECT_EQ(p.devices[0].guest_cell, -1);
  EXPECT_EQ(p.floating_vcpus, 0);
}

// Returns the InputError's field for `mutate` applied to the sample's JSON; "" if none thrown.
// Checks that reading the same document as text (ReadPlacementJson, which parses into
// nlohmann::json rather than ordered_json) refuses it with the same field and message.
template <typename F>
std::string ErrorField(F mutate) {
  ordered_json j = PlacementToJson(Sample());
  mutate(j);
  std::string field, message;
  try {
    PlacementFromJson(j, "claims.db");
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "claims.db");
    field = e.field();
    message = e.what();
  }
  try {
    ReadPlacementJson(j.dump(), "claims.db");
    EXPECT_EQ(message, "") << "the text of the same document was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(), message) << j.dump();
  }
  return field;
}

TEST(PlacementJson, ErrorsNameTheFieldPath) {
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["schema"] = "accel.placement/v2"; }), "schema");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j.erase("schema"); }), "schema");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j.erase("host"); }), "host");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["hots"] = "x"; }), "hots");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"] = "0"; }), "cells");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][1]["host_node"] = -1; }),
            "cells[1].host_node");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][1]["pages"] = -5; }), "cells[1].pages");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][1]["pages"] = 1.5; }), "cells[1].pages");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][0].erase("memory_mib"); }),
            "cells[0].memory_mib");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][0]["consumed_cpus"] = "3-1"; }),
            "cells[0].consumed_cpus");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][0]["pinning"]["x"] = 1; }),
            "cells[0].pinning.x");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][0]["pinning"]["0"] = 70000; }),
            "cells[0].pinning.0");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["cells"][0]["pinning"] = ordered_json::array(); }),
            "cells[0].pinning");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["devices"][1]["vendor_id"] = "15b"; }),
            "devices[1].vendor_id");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["devices"][1]["vendor_id"] = "zzzz"; }),
            "devices[1].vendor_id");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["devices"][0]["address"] = ""; }),
            "devices[0].address");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["devices"][0]["numa_node"] = -2; }),
            "devices[0].numa_node");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["floating_vcpus"] = 3000000000LL; }),
            "floating_vcpus");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j["notes"][1] = 7; }), "notes[1]");
  EXPECT_EQ(ErrorField([](ordered_json& j) { j = ordered_json::array(); }), "");
}

TEST(PlacementJson, MalformedTextIsAnInputError) {
  try {
    ReadPlacementJson("{\"schema\": ", "placement.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "placement.json:1:12");
    EXPECT_NE(e.problem().find("not valid JSON"), std::string::npos);
  }
  try {
    ReadPlacementJson("{\"schema\": \"accel.placement/v1\",\n \"schema\": \"x\"}", "placement.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "placement.json:2:2: schema: key given twice (lines 1 and 2) (keep one: JSON keeps only the last, so "
              "the first would be ignored)");
  }
}

TEST(PlacementJson, NoFitListsReasons) {
  NoFit nf{{"node 0: 6 free whole cores, thread policy isolate needs 8", "node 1: no GPU"}};
  EXPECT_EQ(NoFitToJson(nf).dump(),
            R"({"fits":false,"reasons":["node 0: 6 free whole cores, thread policy isolate needs 8","node 1: no GPU"]})");
}

TEST(PlacementJson, RequestSummaryNamesPoliciesAndCells) {
  PlacementRequest r;
  r.flavor = "gpu-1g";
  r.vcpus = 4;
  r.memory_mib = 8192;
  r.cpu_policy = CpuPolicy::kDedicated;
  r.thread_policy = ThreadPolicy::kIsolate;
  r.page_size = {PageSizeRequest::kExplicit, 1048576};
  r.cells = {{CpuSet{0, 1, 2, 3}, CpuSet{}, 8192}};
  r.pci = {{"h100", 1, {}, PciNumaPolicy::kRequired}};
  r.extra_specs = {{"hw:cpu_policy", "dedicated"}, {"pci_passthrough:alias", "h100:1"}};
  ordered_json j = RequestSummaryToJson(r);
  EXPECT_EQ(j["cpu_policy"], "dedicated");
  EXPECT_EQ(j["thread_policy"], "isolate");
  EXPECT_EQ(j["emulator_policy"], "share");
  EXPECT_EQ(j["page_size"], "1048576");
  EXPECT_EQ(j["cells"][0]["dedicated_vcpus"], "0-3");
  EXPECT_EQ(j["pci"][0]["numa_policy"], "required");
  EXPECT_FALSE(j.contains("guest_topology"));
  EXPECT_EQ(j["extra_specs"]["pci_passthrough:alias"], "h100:1");
}

}  // namespace
}  // namespace accel::placement
