// BuildRequest against Nova's numa_get_constraints: the flavor-only rows of
// NUMATopologyTest.test_topology_constraints (nova/tests/unit/virt/test_hardware.py), plus rows
// for the mixed policy, realtime, page sizes, PCI aliases, guest CPU topology and key checks.
#include "placement/flavor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "placement/flavor_cpu_topology.h"
#include "placement/flavor_page_size.h"
#include "placement/pci_alias.h"

namespace accel::placement {
namespace flavor_test {

using Specs = std::vector<std::pair<std::string, std::string>>;

Flavor MakeFlavor(int vcpus, uint64_t ram_mib, Specs specs) {
  return Flavor{"test", vcpus, ram_mib, std::move(specs)};
}

PciAliasTable Aliases() {
  return ParsePciAliasText(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI",
     "numa_policy": "required"},
    {"name": "nic", "vendor_id": "15b3", "product_id": "101e", "device_type": "type-VF"},
    {"name": "nic", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-VF"}
  ])",
                           "aliases.json");
}

PlacementRequest Build(int vcpus, uint64_t ram_mib, Specs specs) {
  return BuildRequest(MakeFlavor(vcpus, ram_mib, std::move(specs)), Aliases(), "flavor.yaml");
}

// ---- valid rows: expected cells ----

struct CellWant {
  const char* dedicated;  // CpuSet text
  const char* shared;
  uint64_t memory_mib;
};

struct ValidRow {
  const char* name;
  int vcpus;
  uint64_t ram_mib;
  Specs specs;
  std::vector<CellWant> cells;  // empty: no NUMA topology
  CpuPolicy cpu_policy = CpuPolicy::kShared;
  ThreadPolicy thread_policy = ThreadPolicy::kPrefer;
  EmulatorPolicy emulator = EmulatorPolicy::kShare;
  PageSizeRequest::Kind page_kind = PageSizeRequest::kNone;
  uint64_t page_kib = 0;
};

std::string RowName(const ::testing::TestParamInfo<ValidRow>& info) { return info.param.name; }

class ValidFlavorTest : public ::testing::TestWithParam<ValidRow> {};

TEST_P(ValidFlavorTest, BuildsNovaCells) {
  const ValidRow& row = GetParam();
  PlacementRequest req = Build(row.vcpus, row.ram_mib, row.specs);
  EXPECT_EQ(req.vcpus, row.vcpus);
  EXPECT_EQ(req.memory_mib, row.ram_mib);
  EXPECT_EQ(req.cpu_policy, row.cpu_policy);
  EXPECT_EQ(req.thread_policy, row.thread_policy);
  EXPECT_EQ(req.emulator_policy, row.emulator);
  EXPECT_EQ(req.page_size.kind, row.page_kind);
  EXPECT_EQ(req.page_size.size_kib, row.page_kib);
  ASSERT_EQ(req.cells.size(), row.cells.size());
  for (size_t i = 0; i < row.cells.size(); ++i) {
    SCOPED_TRACE("cell " + std::to_string(i));
    EXPECT_EQ(req.cells[i].dedicated_vcpus.ToString(), row.cells[i].dedicated);
    EXPECT_EQ(req.cells[i].shared_vcpus.ToString(), row.cells[i].shared);
    EXPECT_EQ(req.cells[i].memory_mib, row.cells[i].memory_mib);
  }
  EXPECT_EQ(req.extra_specs, row.specs);
}

const CpuPolicy kDed = CpuPolicy::kDedicated;
const CpuPolicy kMix = CpuPolicy::kMixed;
const CpuPolicy kSh = CpuPolicy::kShared;

INSTANTIATE_TEST_SUITE_P(
    NovaTopologyConstraints, ValidFlavorTest,
    ::testing::Values(
        // Rows of Nova's test_topology_constraints (flavor-only).
        ValidRow{"NoSpecsNoTopology", 8, 2048, {}, {}},
        ValidRow{
            "TwoNodesAutoSplit", 8, 2048, {{"hw:numa_nodes", "2"}}, {{"", "0-3", 1024}, {"", "4-7", 1024}}},
        ValidRow{"PageSizeMakesOneCell",
                 8,
                 2048,
                 {{"hw:mem_page_size", "2048"}},
                 {{"", "0-7", 2048}},
                 kSh,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kShare,
                 PageSizeRequest::kExplicit,
                 2048},
        ValidRow{"ManualThreeNodes",
                 8,
                 2048,
                 {{"hw:numa_cpus.0", "0-3"},
                  {"hw:numa_cpus.1", "4,6"},
                  {"hw:numa_cpus.2", "5,7"},
                  {"hw:numa_mem.0", "1024"},
                  {"hw:numa_mem.1", "512"},
                  {"hw:numa_mem.2", "512"},
                  {"hw:numa_nodes", "3"}},
                 {{"", "0-3", 1024}, {"", "4,6", 512}, {"", "5,7", 512}}},
        ValidRow{"NumaAndPinning",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:numa_nodes", "2"}},
                 {{"0-1", "", 1024}, {"2-3", "", 1024}},
                 kDed},
        ValidRow{"PinningWithoutNuma", 4, 2048, {{"hw:cpu_policy", "dedicated"}}, {{"0-3", "", 2048}}, kDed},
        ValidRow{"ThreadPolicyPreferExplicit",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_thread_policy", "prefer"}, {"hw:numa_nodes", "1"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kPrefer},
        ValidRow{"EmulatorIsolate",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:emulator_threads_policy", "isolate"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kIsolate},
        ValidRow{"ExplicitPcpuResources", 4, 2048, {{"resources:PCPU", "4"}}, {{"0-3", "", 2048}}, kDed},
        ValidRow{"HyperthreadingTraitForbidden",
                 4,
                 2048,
                 {{"resources:PCPU", "4"}, {"trait:HW_CPU_HYPERTHREADING", "forbidden"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kIsolate},
        // Rows for paths the Nova code has and the table above does not exercise.
        ValidRow{"PcpuPlusOneForIsolatedEmulator",
                 4,
                 2048,
                 {{"hw:emulator_threads_policy", "isolate"}, {"resources:PCPU", "5"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kIsolate},
        ValidRow{"GroupedPcpuResources",
                 4,
                 2048,
                 {{"resources1:PCPU", "2"}, {"resources2:PCPU", "2"}},
                 {{"0-3", "", 2048}},
                 kDed},
        ValidRow{"ExplicitVcpuResourcesIsShared", 4, 2048, {{"resources:VCPU", "4"}}, {}},
        ValidRow{"HyperthreadingTraitRequired",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"trait:HW_CPU_HYPERTHREADING", "required"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kRequire},
        ValidRow{"ThreadIsolate",
                 8,
                 4096,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_thread_policy", "isolate"}},
                 {{"0-7", "", 4096}},
                 kDed,
                 ThreadPolicy::kIsolate},
        ValidRow{"MixedCaretMask",
                 4,
                 2048,
                 {{"hw:cpu_dedicated_mask", "^0-1"}, {"hw:cpu_policy", "mixed"}},
                 {{"2-3", "0-1", 2048}},
                 kMix},
        ValidRow{"MixedPlainMask",
                 4,
                 2048,
                 {{"hw:cpu_dedicated_mask", "3"}, {"hw:cpu_policy", "mixed"}},
                 {{"3", "0-2", 2048}},
                 kMix},
        ValidRow{"MixedTwoNodes",
                 8,
                 4096,
                 {{"hw:cpu_dedicated_mask", "^0,^4"}, {"hw:cpu_policy", "mixed"}, {"hw:numa_nodes", "2"}},
                 {{"1-3", "0", 2048}, {"5-7", "4", 2048}},
                 kMix},
        ValidRow{"MixedCellWithoutPinnedVcpus",
                 8,
                 4096,
                 {{"hw:cpu_dedicated_mask", "6-7"}, {"hw:cpu_policy", "mixed"}, {"hw:numa_nodes", "2"}},
                 {{"", "0-3", 2048}, {"6-7", "4-5", 2048}},
                 kMix},
        ValidRow{"MixedByRealtimeMask",
                 4,
                 2048,
                 {{"hw:cpu_policy", "mixed"}, {"hw:cpu_realtime", "yes"}, {"hw:cpu_realtime_mask", "^0-1"}},
                 {{"2-3", "0-1", 2048}},
                 kMix},
        ValidRow{"MixedWithThreadPolicy",
                 4,
                 2048,
                 {{"hw:cpu_dedicated_mask", "^0"},
                  {"hw:cpu_policy", "mixed"},
                  {"hw:cpu_thread_policy", "require"}},
                 {{"1-3", "0", 2048}},
                 kMix,
                 ThreadPolicy::kRequire},
        ValidRow{
            "RealtimeWithMask",
            4,
            2048,
            {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "true"}, {"hw:cpu_realtime_mask", "^0"}},
            {{"0-3", "", 2048}},
            kDed},
        ValidRow{"RealtimeAllVcpusWithEmulatorPolicy",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"},
                  {"hw:cpu_realtime", "yes"},
                  {"hw:emulator_threads_policy", "isolate"}},
                 {{"0-3", "", 2048}},
                 kDed,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kIsolate},
        ValidRow{"RealtimeOffIgnoresMask",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "no"}, {"hw:cpu_realtime_mask", "^0"}},
                 {{"0-3", "", 2048}},
                 kDed},
        ValidRow{"ManualLayoutWithoutNumaNodes",
                 4,
                 2048,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:numa_cpus.0", "0-3"}, {"hw:numa_mem.0", "2048"}},
                 {{"0-3", "", 2048}},
                 kDed},
        ValidRow{"ManualDedicatedTwoNodes",
                 6,
                 3072,
                 {{"hw:cpu_policy", "dedicated"},
                  {"hw:numa_cpus.0", "0,2,4"},
                  {"hw:numa_cpus.1", "1,3,5"},
                  {"hw:numa_mem.0", "1024"},
                  {"hw:numa_mem.1", "2048"},
                  {"hw:numa_nodes", "2"}},
                 {{"0,2,4", "", 1024}, {"1,3,5", "", 2048}},
                 kDed},
        ValidRow{"SharedPolicyWithNodes",
                 4,
                 2048,
                 {{"hw:cpu_policy", "shared"}, {"hw:numa_nodes", "2"}},
                 {{"", "0-1", 1024}, {"", "2-3", 1024}}},
        ValidRow{"SharedPolicyAloneNoTopology", 4, 2048, {{"hw:cpu_policy", "shared"}}, {}},
        ValidRow{"SmallPagesMakeTopology",
                 2,
                 1024,
                 {{"hw:mem_page_size", "small"}},
                 {{"", "0-1", 1024}},
                 kSh,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kShare,
                 PageSizeRequest::kSmall},
        ValidRow{"LargePages",
                 2,
                 1024,
                 {{"hw:mem_page_size", "large"}},
                 {{"", "0-1", 1024}},
                 kSh,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kShare,
                 PageSizeRequest::kLarge},
        ValidRow{"AnyPages",
                 2,
                 1024,
                 {{"hw:mem_page_size", "any"}},
                 {{"", "0-1", 1024}},
                 kSh,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kShare,
                 PageSizeRequest::kAny},
        ValidRow{"OneGigPages",
                 16,
                 131072,
                 {{"hw:cpu_policy", "dedicated"}, {"hw:mem_page_size", "1GB"}},
                 {{"0-15", "", 131072}},
                 kDed,
                 ThreadPolicy::kPrefer,
                 EmulatorPolicy::kShare,
                 PageSizeRequest::kExplicit,
                 1048576},
        ValidRow{"OtherNamespacesIgnored",
                 2,
                 1024,
                 {{"aggregate_instance_extra_specs:gpu", "h100"},
                  {"hw:watchdog_action", "reset"},
                  {"hw_rng:allowed", "true"},
                  {"os:secure_boot", "required"},
                  {"quota:cpu_shares", "1024"},
                  {"trait:CUSTOM_GPU", "required"}},
                 {}}),
    RowName);

// ---- invalid rows: the refused key and Nova's exception ----

struct InvalidRow {
  const char* name;
  int vcpus;
  uint64_t ram_mib;
  Specs specs;
  const char* key;   // field is "extra_specs.<key>"
  const char* nova;  // text expected in the message (Nova exception or wording)
};

std::string InvalidRowName(const ::testing::TestParamInfo<InvalidRow>& info) { return info.param.name; }

class InvalidFlavorTest : public ::testing::TestWithParam<InvalidRow> {};

TEST_P(InvalidFlavorTest, RefusesLikeNova) {
  const InvalidRow& row = GetParam();
  try {
    Build(row.vcpus, row.ram_mib, row.specs);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "flavor.yaml");
    EXPECT_EQ(e.field(), std::string("extra_specs.") + row.key) << e.what();
    EXPECT_NE(std::string(e.what()).find(row.nova), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    NovaTopologyConstraints, InvalidFlavorTest,
    ::testing::Values(
        // Rows of Nova's test_topology_constraints (flavor-only).
        InvalidRow{"ZeroNodes", 8, 2048, {{"hw:numa_nodes", "0"}}, "hw:numa_nodes", "InvalidNUMANodesNumber"},
        InvalidRow{
            "NegativeNodes", 8, 2048, {{"hw:numa_nodes", "-1"}}, "hw:numa_nodes", "InvalidNUMANodesNumber"},
        InvalidRow{
            "NonNumericNodes", 8, 2048, {{"hw:numa_nodes", "x"}}, "hw:numa_nodes", "InvalidNUMANodesNumber"},
        InvalidRow{"AsymmetricVcpus",
                   8,
                   2048,
                   {{"hw:numa_nodes", "3"}},
                   "hw:numa_nodes",
                   "ImageNUMATopologyAsymmetric"},
        InvalidRow{"CpuOutOfRange",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-16"}, {"hw:numa_mem.0", "2048"}, {"hw:numa_nodes", "1"}},
                   "hw:numa_cpus.0",
                   "ImageNUMATopologyCPUOutOfRange"},
        InvalidRow{"CpuInTwoNodes",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-7"},
                    {"hw:numa_cpus.1", "0-7"},
                    {"hw:numa_mem.0", "1024"},
                    {"hw:numa_mem.1", "1024"},
                    {"hw:numa_nodes", "2"}},
                   "hw:numa_cpus.1",
                   "ImageNUMATopologyCPUDuplicates"},
        InvalidRow{"CpusUnassigned",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-2"},
                    {"hw:numa_cpus.1", "3-4"},
                    {"hw:numa_mem.0", "1024"},
                    {"hw:numa_mem.1", "1024"},
                    {"hw:numa_nodes", "2"}},
                   "hw:numa_cpus.0",
                   "ImageNUMATopologyCPUsUnassigned"},
        InvalidRow{"TooLittleMemory",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-3"},
                    {"hw:numa_cpus.1", "4-7"},
                    {"hw:numa_mem.0", "512"},
                    {"hw:numa_mem.1", "512"},
                    {"hw:numa_nodes", "2"}},
                   "hw:numa_mem.0",
                   "ImageNUMATopologyMemoryOutOfRange"},
        InvalidRow{"TooMuchMemory",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-3"},
                    {"hw:numa_cpus.1", "4-7"},
                    {"hw:numa_mem.0", "1576"},
                    {"hw:numa_mem.1", "1576"},
                    {"hw:numa_nodes", "2"}},
                   "hw:numa_mem.0",
                   "ImageNUMATopologyMemoryOutOfRange"},
        InvalidRow{"MissingMem0",
                   8,
                   2048,
                   {{"hw:numa_cpus.0", "0-3"}, {"hw:numa_mem.1", "1576"}, {"hw:numa_nodes", "2"}},
                   "hw:numa_mem.0",
                   "ImageNUMATopologyIncomplete"},
        InvalidRow{"MissingCpu0",
                   8,
                   2048,
                   {{"hw:numa_cpus.1", "4-7"}, {"hw:numa_mem.0", "1576"}, {"hw:numa_nodes", "2"}},
                   "hw:numa_cpus.0",
                   "ImageNUMATopologyIncomplete"},
        InvalidRow{"RealtimeWithSharedPolicy",
                   4,
                   2048,
                   {{"hw:cpu_policy", "shared"}, {"hw:cpu_realtime", "yes"}, {"hw:cpu_realtime_mask", "^0"}},
                   "hw:cpu_realtime",
                   "RealtimeConfigurationInvalid"},
        InvalidRow{"ThreadPolicyWithSharedPolicy",
                   4,
                   2048,
                   {{"hw:cpu_policy", "shared"}, {"hw:cpu_thread_policy", "isolate"}},
                   "hw:cpu_thread_policy",
                   "CPUThreadPolicyConfigurationInvalid"},
        InvalidRow{"RealtimeWithoutMask",
                   4,
                   2048,
                   {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "yes"}},
                   "hw:cpu_realtime",
                   "RealtimeMaskNotFoundOrInvalid"},
        InvalidRow{"InvalidEmulatorPolicy",
                   16,
                   2048,
                   {{"hw:emulator_threads_policy", "foo"}},
                   "hw:emulator_threads_policy",
                   "InvalidEmulatorThreadsPolicy"},
        InvalidRow{"EmulatorIsolateWithoutPinning",
                   16,
                   2048,
                   {{"hw:emulator_threads_policy", "isolate"}},
                   "hw:emulator_threads_policy",
                   "BadRequirementEmulatorThreadsPolicy"},
        InvalidRow{"InvalidCpuPolicy",
                   4,
                   2048,
                   {{"hw:cpu_policy", "foo"}},
                   "hw:cpu_policy",
                   "InvalidCPUAllocationPolicy"},
        InvalidRow{"InvalidThreadPolicy",
                   4,
                   2048,
                   {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_thread_policy", "foo"}},
                   "hw:cpu_thread_policy",
                   "InvalidCPUThreadAllocationPolicy"},
        InvalidRow{"PolicyAndPcpuResources",
                   4,
                   2048,
                   {{"hw:cpu_policy", "dedicated"}, {"resources:PCPU", "4"}},
                   "resources:PCPU",
                   "InvalidRequest"},
        InvalidRow{"PcpuAndVcpuResources",
                   4,
                   2048,
                   {{"resources:PCPU", "2"}, {"resources:VCPU", "2"}},
                   "resources:PCPU",
                   "InvalidRequest"},
        InvalidRow{
            "PcpuCountMismatch", 4, 2048, {{"resources:PCPU", "5"}}, "resources:PCPU", "InvalidRequest"},
        InvalidRow{"PcpuMissingEmulatorCpu",
                   4,
                   2048,
                   {{"hw:emulator_threads_policy", "isolate"}, {"resources:PCPU", "4"}},
                   "resources:PCPU",
                   "InvalidRequest"},
        InvalidRow{"ThreadPolicyAndTrait",
                   4,
                   2048,
                   {{"hw:cpu_thread_policy", "isolate"}, {"trait:HW_CPU_HYPERTHREADING", "required"}},
                   "trait:HW_CPU_HYPERTHREADING",
                   "InvalidRequest"},
        // Mixed policy and realtime (Nova's get_dedicated_cpu_constraint and friends).
        InvalidRow{"MixedWithoutMask",
                   4,
                   2048,
                   {{"hw:cpu_policy", "mixed"}},
                   "hw:cpu_policy",
                   "RequiredMixedOrRealtimeCPUMask"},
        InvalidRow{"MixedWithBothMasks",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "^0"},
                    {"hw:cpu_policy", "mixed"},
                    {"hw:cpu_realtime", "yes"},
                    {"hw:cpu_realtime_mask", "^0"}},
                   "hw:cpu_dedicated_mask",
                   "RequiredMixedOrRealtimeCPUMask"},
        InvalidRow{"DedicatedMaskWithDedicated",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "^0"}, {"hw:cpu_policy", "dedicated"}},
                   "hw:cpu_dedicated_mask",
                   "RequiredMixedInstancePolicy"},
        InvalidRow{"DedicatedMaskWithoutPolicy",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "^0"}},
                   "hw:cpu_dedicated_mask",
                   "RequiredMixedInstancePolicy"},
        InvalidRow{"MaskPinsEveryVcpu",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "0-3"}, {"hw:cpu_policy", "mixed"}},
                   "hw:cpu_dedicated_mask",
                   "InvalidMixedInstanceDedicatedMask"},
        InvalidRow{"MaskPinsNothing",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "^0-3"}, {"hw:cpu_policy", "mixed"}},
                   "hw:cpu_dedicated_mask",
                   "InvalidMixedInstanceDedicatedMask"},
        InvalidRow{"MaskOutOfRange",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "^0,4"}, {"hw:cpu_policy", "mixed"}},
                   "hw:cpu_dedicated_mask",
                   "not vCPUs of the flavor"},
        InvalidRow{"MaskSyntax",
                   4,
                   2048,
                   {{"hw:cpu_dedicated_mask", "1-x"}, {"hw:cpu_policy", "mixed"}},
                   "hw:cpu_dedicated_mask",
                   "InvalidMixedInstanceDedicatedMask"},
        InvalidRow{
            "RealtimeMaskOutOfRange",
            4,
            2048,
            {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "yes"}, {"hw:cpu_realtime_mask", "2-5"}},
            "hw:cpu_realtime_mask",
            "RealtimeMaskNotFoundOrInvalid"},
        InvalidRow{
            "RealtimeMaskEmpty",
            4,
            2048,
            {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "yes"}, {"hw:cpu_realtime_mask", "^0-3"}},
            "hw:cpu_realtime_mask",
            "RealtimeMaskNotFoundOrInvalid"},
        InvalidRow{"RealtimeNotBoolean",
                   4,
                   2048,
                   {{"hw:cpu_policy", "dedicated"}, {"hw:cpu_realtime", "maybe"}},
                   "hw:cpu_realtime",
                   "not a boolean"},
        InvalidRow{
            "MixedRealtimeEveryVcpu",
            4,
            2048,
            {{"hw:cpu_policy", "mixed"}, {"hw:cpu_realtime", "yes"}, {"hw:emulator_threads_policy", "share"}},
            "hw:cpu_realtime",
            "InvalidMixedInstanceDedicatedMask"},
        InvalidRow{"TraitWithoutPinning",
                   4,
                   2048,
                   {{"trait:HW_CPU_HYPERTHREADING", "forbidden"}},
                   "trait:HW_CPU_HYPERTHREADING",
                   "CPUThreadPolicyConfigurationInvalid"},
        InvalidRow{"TraitBadValue",
                   4,
                   2048,
                   {{"hw:cpu_policy", "dedicated"}, {"trait:HW_CPU_HYPERTHREADING", "yes"}},
                   "trait:HW_CPU_HYPERTHREADING",
                   "required or forbidden"},
        // Page sizes, PCI, guest topology.
        InvalidRow{"PageSizeWithoutB",
                   4,
                   2048,
                   {{"hw:mem_page_size", "2M"}},
                   "hw:mem_page_size",
                   "MemoryPageSizeInvalid"},
        InvalidRow{"PageSizeWord",
                   4,
                   2048,
                   {{"hw:mem_page_size", "huge"}},
                   "hw:mem_page_size",
                   "MemoryPageSizeInvalid"},
        InvalidRow{"PageSizeZero",
                   4,
                   2048,
                   {{"hw:mem_page_size", "0"}},
                   "hw:mem_page_size",
                   "MemoryPageSizeInvalid"},
        InvalidRow{"PciPolicyInvalid",
                   4,
                   2048,
                   {{"hw:pci_numa_affinity_policy", "strict"}},
                   "hw:pci_numa_affinity_policy",
                   "InvalidPCINUMAAffinity"},
        InvalidRow{"UnknownAlias",
                   4,
                   2048,
                   {{"pci_passthrough:alias", "a100:1"}},
                   "pci_passthrough:alias",
                   "alias 'a100' matches no entry in aliases aliases.json"},
        InvalidRow{"AliasZeroCount",
                   4,
                   2048,
                   {{"pci_passthrough:alias", "h100:0"}},
                   "pci_passthrough:alias",
                   "not a whole number >= 1"},
        InvalidRow{"AliasWithoutCount",
                   4,
                   2048,
                   {{"pci_passthrough:alias", "h100"}},
                   "pci_passthrough:alias",
                   "is not name:count"},
        InvalidRow{"AliasTrailingComma",
                   4,
                   2048,
                   {{"pci_passthrough:alias", "h100:1,"}},
                   "pci_passthrough:alias",
                   "is not name:count"},
        InvalidRow{"ImpossibleCpuLimits",
                   4,
                   2048,
                   {{"hw:cpu_max_cores", "1"}, {"hw:cpu_max_sockets", "1"}, {"hw:cpu_max_threads", "1"}},
                   "hw:cpu_max_sockets",
                   "ImageVCPULimitsRangeImpossible"},
        InvalidRow{
            "CpuSocketsNotNumber", 4, 2048, {{"hw:cpu_sockets", "two"}}, "hw:cpu_sockets", "whole number"},
        // Keys a typo or a misunderstanding would otherwise make silently ineffective.
        InvalidRow{"MisspeltHwKey",
                   4,
                   2048,
                   {{"hw:cpu_polcy", "dedicated"}},
                   "hw:cpu_polcy",
                   "did you mean hw:cpu_policy?"},
        InvalidRow{"UnknownHwKey", 4, 2048, {{"hw:gpu_count", "2"}}, "hw:gpu_count", "hw:numa_nodes"},
        InvalidRow{
            "UpperCaseHw", 4, 2048, {{"HW:cpu_policy", "dedicated"}}, "HW:cpu_policy", "case-sensitive"},
        InvalidRow{
            "ImagePropertyName", 4, 2048, {{"hw_cpu_policy", "dedicated"}}, "hw_cpu_policy", "hw:cpu_policy"},
        InvalidRow{"Vpmem", 4, 2048, {{"hw:pmem", "GB100"}}, "hw:pmem", "not supported"},
        InvalidRow{"PciPassthroughTypo",
                   4,
                   2048,
                   {{"pci_passthrough:aliases", "h100:1"}},
                   "pci_passthrough:aliases",
                   "pci_passthrough:alias"},
        InvalidRow{"EmptyHwValue", 4, 2048, {{"hw:cpu_policy", " "}}, "hw:cpu_policy", "empty value"},
        InvalidRow{"NumaCpusWithoutTopology",
                   4,
                   2048,
                   {{"hw:numa_cpus.0", "0-3"}, {"hw:numa_mem.0", "2048"}},
                   "hw:numa_cpus.0",
                   "no NUMA topology"},
        InvalidRow{"NumaCpusBeyondNodes",
                   4,
                   2048,
                   {{"hw:numa_cpus.0", "0-1"},
                    {"hw:numa_cpus.1", "2-3"},
                    {"hw:numa_cpus.2", "3"},
                    {"hw:numa_mem.0", "1024"},
                    {"hw:numa_mem.1", "1024"},
                    {"hw:numa_nodes", "2"}},
                   "hw:numa_cpus.2",
                   "ImageNUMATopologyIncomplete"},
        InvalidRow{
            "NumaCellLeadingZero", 4, 2048, {{"hw:numa_cpus.01", "0-3"}}, "hw:numa_cpus.01", "leading zeros"},
        InvalidRow{"TooManyGuestNodes",
                   256,
                   2048,
                   {{"hw:numa_nodes", "256"}},
                   "hw:numa_nodes",
                   "InvalidNUMANodesNumber"},
        InvalidRow{"DuplicateKey",
                   4,
                   2048,
                   {{"hw:numa_nodes", "1"}, {"hw:numa_nodes", "2"}},
                   "hw:numa_nodes",
                   "given twice"}),
    InvalidRowName);

TEST(BuildRequestTest, ErrorNamesNovaExceptionInHint) {
  try {
    Build(8, 2048, {{"hw:numa_nodes", "3"}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.hint().find("Nova: ImageNUMATopologyAsymmetric"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("evenly"), std::string::npos) << e.what();
  }
}

TEST(BuildRequestTest, UnknownHwKeyListsSupportedKeys) {
  try {
    Build(4, 2048, {{"hw:gpu_count", "2"}});
    FAIL();
  } catch (const InputError& e) {
    for (const char* key : {"hw:cpu_policy", "hw:mem_page_size", "hw:numa_cpus.N", "hw:cpu_max_threads"})
      EXPECT_NE(e.hint().find(key), std::string::npos) << key << " missing from " << e.hint();
  }
}

TEST(BuildRequestTest, PciRequestsFollowAliasOrderAndPolicy) {
  PlacementRequest req = Build(4, 2048, {{"pci_passthrough:alias", "nic:2, h100:1"}});
  ASSERT_EQ(req.pci.size(), 2u);
  EXPECT_EQ(req.pci[0].alias, "nic");
  EXPECT_EQ(req.pci[0].count, 2);
  EXPECT_EQ(req.pci[0].numa_policy, PciNumaPolicy::kLegacy);
  ASSERT_EQ(req.pci[0].specs.size(), 2u);  // two alternatives share the name
  EXPECT_EQ(req.pci[0].specs[1].product_id, 0x1021);
  EXPECT_EQ(req.pci[0].specs[1].device_type, "type-VF");
  EXPECT_EQ(req.pci[1].alias, "h100");
  EXPECT_EQ(req.pci[1].count, 1);
  EXPECT_EQ(req.pci[1].numa_policy, PciNumaPolicy::kRequired);
  EXPECT_EQ(req.pci[1].specs[0].vendor_id, 0x10de);
  EXPECT_TRUE(req.cells.empty());  // PCI devices alone make no NUMA topology
}

TEST(BuildRequestTest, FlavorPolicyOverridesAliasPolicy) {
  PlacementRequest req = Build(
      4, 2048, {{"hw:pci_numa_affinity_policy", "preferred"}, {"pci_passthrough:alias", "h100:1,nic:1"}});
  ASSERT_EQ(req.pci.size(), 2u);
  EXPECT_EQ(req.pci[0].numa_policy, PciNumaPolicy::kPreferred);
  EXPECT_EQ(req.pci[1].numa_policy, PciNumaPolicy::kPreferred);
}

TEST(BuildRequestTest, AliasWithoutAliasFile) {
  try {
    BuildRequest(MakeFlavor(4, 2048, {{"pci_passthrough:alias", "h100:1"}}), PciAliasTable(), "f.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no aliases file was given"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PciRequestAliasNotDefined"), std::string::npos) << e.what();
  }
}

TEST(BuildRequestTest, GuestCpuTopologyIsNovasBest) {
  EXPECT_EQ(Build(8, 1024, {}).guest_topology.sockets, 0);  // nothing asked: left to the default
  GuestCpuTopology t = Build(8, 1024, {{"hw:cpu_sockets", "2"}}).guest_topology;
  EXPECT_EQ(t.sockets, 2);
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.threads, 1);
  t = Build(8, 1024, {{"hw:cpu_threads", "2"}}).guest_topology;
  EXPECT_EQ(t.sockets, 4);
  EXPECT_EQ(t.cores, 1);
  EXPECT_EQ(t.threads, 2);
  t = Build(16, 1024, {{"hw:cpu_max_sockets", "1"}, {"hw:cpu_threads", "2"}}).guest_topology;
  EXPECT_EQ(t.sockets, 1);
  EXPECT_EQ(t.cores, 8);
  EXPECT_EQ(t.threads, 2);
  // A preferred value above its maximum drops all preferences, as Nova does.
  t = Build(8, 1024, {{"hw:cpu_max_sockets", "2"}, {"hw:cpu_sockets", "4"}}).guest_topology;
  EXPECT_EQ(t.sockets, 2);
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.threads, 1);
}

TEST(BestGuestCpuTopologyTest, PrefersMatchesThenSocketsTimesCores) {
  auto t = BestGuestCpuTopology(12, {0, 0, 0}, {0, 0, 0});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sockets, 12);
  t = BestGuestCpuTopology(12, {0, 3, 2}, {0, 0, 0});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sockets, 2);
  EXPECT_EQ(t->cores, 3);
  EXPECT_EQ(t->threads, 2);
  // A preference no candidate can meet exactly (3*3*3 != 12) falls back to the best partial match.
  // (4,3,1) comes before (3,4,1) in Nova's order, and both match one preferred value.
  t = BestGuestCpuTopology(12, {3, 3, 3}, {0, 0, 0});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sockets, 4);
  EXPECT_EQ(t->cores, 3);
  EXPECT_EQ(t->threads, 1);
  EXPECT_FALSE(BestGuestCpuTopology(7, {0, 0, 0}, {2, 2, 2}));
  EXPECT_TRUE(BestGuestCpuTopology(65536, {0, 0, 0}, {0, 0, 0}));
}

TEST(BuildRequestTest, FlavorBasicsChecked) {
  EXPECT_THROW(BuildRequest(MakeFlavor(0, 2048, {}), Aliases(), "f"), InputError);
  EXPECT_THROW(BuildRequest(MakeFlavor(2, 0, {}), Aliases(), "f"), InputError);
  EXPECT_THROW(BuildRequest(Flavor{"", 2, 2048, {}}, Aliases(), "f"), InputError);
}

TEST(BuildRequestTest, LargeFlavorsStayFast) {
  PlacementRequest req = Build(4096, 1 << 20, {{"hw:cpu_policy", "dedicated"}, {"hw:numa_nodes", "128"}});
  ASSERT_EQ(req.cells.size(), 128u);
  EXPECT_EQ(req.cells[127].dedicated_vcpus.ToString(), "4064-4095");
  EXPECT_EQ(req.cells[127].memory_mib, 8192u);
}

// ---- hw:mem_page_size parsing (Nova's VirtMemoryPagesTestCase + strutils IEC sizes) ----

struct PageRow {
  const char* text;
  PageSizeRequest::Kind kind;
  uint64_t kib;
};

class PageSizeTest : public ::testing::TestWithParam<PageRow> {};

TEST_P(PageSizeTest, Parses) {
  PageSizeRequest r = ParsePageSize(GetParam().text, "f", "extra_specs.hw:mem_page_size");
  EXPECT_EQ(r.kind, GetParam().kind);
  EXPECT_EQ(r.size_kib, GetParam().kib);
}

INSTANTIATE_TEST_SUITE_P(Forms, PageSizeTest,
                         ::testing::Values(PageRow{"small", PageSizeRequest::kSmall, 0},
                                           PageRow{"large", PageSizeRequest::kLarge, 0},
                                           PageRow{"any", PageSizeRequest::kAny, 0},
                                           PageRow{"2048", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"4", PageSizeRequest::kExplicit, 4},
                                           PageRow{"2MB", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"1GB", PageSizeRequest::kExplicit, 1048576},
                                           PageRow{"2048KB", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"2MiB", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"1GiB", PageSizeRequest::kExplicit, 1048576},
                                           PageRow{"4KiB", PageSizeRequest::kExplicit, 4},
                                           PageRow{"0.5GB", PageSizeRequest::kExplicit, 524288},
                                           PageRow{"+2MB", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"16Mbit", PageSizeRequest::kExplicit, 2048},
                                           PageRow{"1TB", PageSizeRequest::kExplicit, 1073741824}));

TEST(PageSizeTest, RefusesWhatNovaRefuses) {
  for (const char* bad : {"2M", "1G", "2048K", "2Mi", "kb", "2kB", "2 MB", "-2MB", "0", "0KB", "1B", "1.5KB",
                          "LARGE", "", "2MBB", "1e3KB", "99999999999999999999"}) {
    try {
      ParsePageSize(bad, "f.yaml", "extra_specs.hw:mem_page_size");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "extra_specs.hw:mem_page_size");
      EXPECT_NE(std::string(e.what()).find("MemoryPageSizeInvalid"), std::string::npos) << e.what();
    }
  }
}

TEST(PageSizeTest, MissingUnitSuffixGetsAHint) {
  try {
    ParsePageSize("1G", "f.yaml", "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("needs a B after the unit"), std::string::npos) << e.what();
  }
}

TEST(PageSizeTest, Text) {
  EXPECT_EQ(PageSizeRequestText({PageSizeRequest::kExplicit, 2048}), "2 MiB");
  EXPECT_EQ(PageSizeRequestText({PageSizeRequest::kExplicit, 1048576}), "1 GiB");
  EXPECT_EQ(PageSizeRequestText({PageSizeRequest::kExplicit, 4}), "4 KiB");
  EXPECT_EQ(PageSizeRequestText({PageSizeRequest::kLarge, 0}), "large");
  EXPECT_EQ(PageSizeRequestText({}), "");
}

TEST(RequestNamesTest, Names) {
  EXPECT_STREQ(CpuPolicyName(CpuPolicy::kMixed), "mixed");
  EXPECT_STREQ(ThreadPolicyName(ThreadPolicy::kIsolate), "isolate");
  EXPECT_STREQ(EmulatorPolicyName(EmulatorPolicy::kShare), "share");
  EXPECT_STREQ(PciNumaPolicyName(PciNumaPolicy::kSocket), "socket");
}

}  // namespace
}  // namespace accel::placement
