// The network stack of `accel cluster plan` (cluster/network_stack.h): NVIDIA Network Operator
// objects per RDMA node group (valid against the real CRDs, one NicNodePolicy per group and no two
// selecting one node, no section in both kinds, guest-view device plugin configs), and the guest
// NCCL topology: GuestPciView gives exactly the guest addresses fabric's domain reader reads from
// the libvirt XML accel writes for the same placement (300 random flavors), and nccl-topo.xml is
// byte for byte what `accel place -o libvirt | accel fabric topo-xml` writes for a whole-board VM.
#include "cluster/network_stack.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster/plan.h"
#include "common/error.h"
#include "common/structured_file.h"
#include "fabric/guest_topology.h"
#include "fabric/pairing.h"
#include "placement/engine.h"
#include "placement/libvirt_domain.h"
#include "placement/pci_alias.h"
#include "support/crd_validate.h"
#include "topology/sources.h"

namespace accel::cluster {
namespace network_stack_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A template directory of its own: flavors with RDMA NICs beside their GPUs on three hosts.
fs::path TemplateDir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("accel-network-stack-" + std::to_string(::getpid()));
    Write(d / "aliases.json", R"([
  {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "cx7", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF", "numa_policy": "required"},
  {"name": "mi300x", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "thor2", "vendor_id": "14e4", "product_id": "1760", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "gaudi2", "vendor_id": "1da3", "product_id": "1020", "device_type": "type-PCI", "numa_policy": "required"}
])");
    const std::string specs = "extra_specs:\n  hw:cpu_policy: dedicated\n  hw:mem_page_size: 1GB\n";
    Write(d / "flavors/h100-4-rdma.yaml", "name: h100-4-rdma\nvcpus: 32\nram: 262144\n" + specs +
                                              "  hw:numa_nodes: 2\n  pci_passthrough:alias: h100:4,cx7:4\n");
    Write(d / "flavors/h100-8-rdma.yaml", "name: h100-8-rdma\nvcpus: 64\nram: 262144\n" + specs +
                                              "  hw:numa_nodes: 2\n  pci_passthrough:alias: h100:8,cx7:8\n");
    Write(d / "flavors/h100-2.yaml", "name: h100-2\nvcpus: 16\nram: 131072\n" + specs +
                                         "  hw:numa_nodes: 1\n  pci_passthrough:alias: h100:2\n");
    Write(d / "flavors/mi300x-2-rdma.yaml", "name: mi300x-2-rdma\nvcpus: 48\nram: 262144\n" + specs +
                                                "  hw:numa_nodes: 2\n  pci_passthrough:alias: mi300x:2,thor2:2\n");
    Write(d / "flavors/gaudi2-4.yaml", "name: gaudi2-4\nvcpus: 32\nram: 196608\n" + specs +
                                           "  hw:numa_nodes: 1\n  pci_passthrough:alias: gaudi2:4\n");
    Write(d / "flavors/cpu.yaml", "name: cpu\nvcpus: 4\nram: 8192\n");
    return d;
  }();
  return dir;
}

// The groups of the test template; `operators` is spliced under spec.
std::string TemplateText(const std::string& operators = "") {
  const std::string hosts = Src("fixtures/hosts/");
  return "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: rdma}\nspec:\n"
         "  kubernetesVersion: v1.33.2\n  flavors: [flavors/]\n  aliases: aliases.json\n"
         "  hypervisor: " + hosts + "hgx-h100.json\n" + operators +
         "  nodeGroups:\n"
         "  - name: h100-train\n    flavor: h100-4-rdma\n    count: 4\n    vendor: nvidia\n    stack: operator\n"
         "    network: {rdma: sriov}\n    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
         "  - name: h100-board\n    flavor: h100-8-rdma\n    count: 2\n    vendor: nvidia\n    stack: accel\n"
         "    network: {rdma: shared}\n"
         "  - name: mi300x-train\n    flavor: mi300x-2-rdma\n    count: 2\n    vendor: amd\n"
         "    network: {rdma: shared}\n    hypervisor: " + hosts + "epyc-nps4-mi300x.json\n"
         "    taints: [{key: amd.com/gpu, value: present, effect: NoSchedule}]\n"
         "  - name: gaudi-train\n    flavor: gaudi2-4\n    count: 2\n    vendor: habana\n    stack: operator\n"
         "    network: {rdma: shared}\n    hypervisor: " + hosts + "gaudi2-8hpu.json\n"
         "  - name: h100-nonic\n    flavor: h100-2\n    count: 1\n    vendor: nvidia\n    network: {rdma: sriov}\n"
         "  - name: system\n    flavor: cpu\n    count: 3\n    vendor: none\n";
}

// Removes the template directory when the test binary ends.
class RemoveTemplateDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("accel-network-stack-" + std::to_string(::getpid())), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTemplateDir =
    ::testing::AddGlobalTestEnvironment(new RemoveTemplateDir);

ClusterTemplate Load(const std::string& text) {
  return ParseClusterTemplateText(text, "rdma.yaml", TemplateDir().string());
}

std::string AllYaml(const StackPart& part) {
  std::string out;
  for (const auto& [name, text] : part.files)
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0) out += "---\n" + text;
  return out;
}

const json* FindObject(const StackPart& part, const std::string& kind, const std::string& name) {
  for (const auto& o : part.objects)
    if (o["kind"] == kind && o["metadata"]["name"] == name) return &o;
  return nullptr;
}

TEST(NetworkStack, ObjectsValidateAgainstTheCrds) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  for (const std::string& ops : {std::string(), std::string("  operators: {network: {driverVersion: doca3.5.0-26.07-0.7.0.0-0}}\n")}) {
    const ClusterTemplate t = Load(TemplateText(ops));
    const StackPart part = NetworkStack(t, PlanCluster(t));
    ASSERT_FALSE(part.objects.empty());
    const test_support::CrdResult r = test_support::ValidateObjects(AllYaml(part), "network-stack");
    EXPECT_EQ(r.exit_code, 0) << r.output << AllYaml(part);
    EXPECT_NE(r.output.find(std::to_string(part.objects.size()) + " object(s) checked"), std::string::npos) << r.output;
  }
}

TEST(NetworkStack, OnePolicyPerRdmaGroupAndNoOverlap) {
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  // Files: the cluster policy, a node policy for each group with NICs, a HostDeviceNetwork for sriov.
  std::set<std::string> names;
  for (const auto& [name, text] : part.files) names.insert(name);
  const std::set<std::string> want = {
      "stack/network/nic-cluster-policy.yaml",
      "h100-train/network/nic-node-policy.yaml",
      "h100-train/network/host-device-network.yaml",
      "h100-board/network/nic-node-policy.yaml",
      "mi300x-train/network/nic-node-policy.yaml",
      "h100-train/nccl/nccl-topo.xml",
      "h100-train/nccl/nccl.env",
      "h100-board/nccl/nccl-topo.xml",
      "h100-board/nccl/nccl.env",
      "mi300x-train/nccl/nccl-topo.xml",
      "mi300x-train/nccl/nccl.env",
  };
  EXPECT_EQ(names, want);
  EXPECT_TRUE(part.node_labels.empty());

  // Every NicNodePolicy selects exactly its group; no two select the same nodes.
  std::set<std::string> selected;
  const std::set<std::string> per_group = {"ofedDriver", "rdmaSharedDevicePlugin", "sriovDevicePlugin"};
  for (const json& o : part.objects) {
    if (o["kind"] != "NicNodePolicy") continue;
    const json& sel = o["spec"]["nodeSelector"];
    ASSERT_EQ(sel.size(), 1u) << o.dump(2);
    const std::string group = sel[kNodeGroupLabel].get<std::string>();
    EXPECT_EQ(o["metadata"]["name"], group + "-rdma");
    EXPECT_TRUE(selected.insert(group).second) << "two policies select " << group;
    const NodeGroup* g = t.FindGroup(group);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(o["spec"].contains("sriovDevicePlugin"), g->network.rdma == RdmaMode::kSriov);
    EXPECT_EQ(o["spec"].contains("rdmaSharedDevicePlugin"), g->network.rdma == RdmaMode::kShared);
    EXPECT_FALSE(o["spec"].contains("ofedDriver")) << "no driverVersion: the guest's inbox driver";
  }
  EXPECT_EQ(selected, (std::set<std::string>{"h100-train", "h100-board", "mi300x-train"}));
  // The cluster policy holds none of the per-group sections (the operator refuses a section in
  // both kinds), and runs on the RDMA groups' nodes only, tolerating their taints.
  const json* ncp = FindObject(part, "NicClusterPolicy", "nic-cluster-policy");
  ASSERT_NE(ncp, nullptr);
  for (const std::string& section : per_group) EXPECT_FALSE((*ncp)["spec"].contains(section)) << section;
  EXPECT_TRUE((*ncp)["spec"].contains("secondaryNetwork"));
  EXPECT_TRUE((*ncp)["spec"].contains("nvIpam"));
  const json& terms = (*ncp)["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  EXPECT_EQ(terms[0]["matchExpressions"][0]["values"], json({"h100-train", "h100-board", "mi300x-train"}));
  EXPECT_EQ((*ncp)["spec"]["tolerations"].size(), 2u) << (*ncp)["spec"]["tolerations"].dump();
  // Groups left out say why in the cluster policy's header.
  const std::string& header = part.files.at("stack/network/nic-cluster-policy.yaml");
  EXPECT_NE(header.find("gaudi-train (rdma: shared): its Gaudi HPUs carry their own RoCE ports"), std::string::npos) << header;
  EXPECT_NE(header.find("h100-nonic (rdma: sriov): flavor h100-2 passes no RDMA NIC"), std::string::npos) << header;
}

TEST(NetworkStack, DevicePluginConfigsSelectTheGuestsNics) {
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  const std::regex plugin_name("^[A-Za-z0-9_]+$");  // both plugins refuse other characters

  const json* h100 = FindObject(part, "NicNodePolicy", "h100-train-rdma");
  ASSERT_NE(h100, nullptr);
  const json sriov = json::parse((*h100)["spec"]["sriovDevicePlugin"]["config"].get<std::string>());
  ASSERT_EQ(sriov["resourceList"].size(), 1u);
  const json& res = sriov["resourceList"][0];
  EXPECT_EQ(res["resourceName"], "h100_train_rdma");
  EXPECT_TRUE(std::regex_match(res["resourceName"].get<std::string>(), plugin_name));
  EXPECT_EQ(res["resourcePrefix"], "nvidia.com");
  EXPECT_EQ(res["deviceType"], "netDevice");
  EXPECT_EQ(res["selectors"], json::parse(R"([{"vendors": ["15b3"], "devices": ["1021"], "isRdma": true}])"));
  EXPECT_EQ(RdmaResourceName(*t.FindGroup("h100-train")), "nvidia.com/h100_train_rdma");
  // The tolerations of the group's taints.
  EXPECT_EQ((*h100)["spec"]["tolerations"], json::parse(R"([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])"));

  const json* hdn = FindObject(part, "HostDeviceNetwork", "h100-train-rdma");
  ASSERT_NE(hdn, nullptr);
  EXPECT_EQ((*hdn)["spec"]["resourceName"], "nvidia.com/h100_train_rdma");
  EXPECT_EQ(json::parse((*hdn)["spec"]["ipam"].get<std::string>()), json::parse(R"({"type": "nv-ipam", "poolName": "h100-train-rdma"})"));

  // AMD with Broadcom Thor2 NICs: the shared plugin selects the guest's vendor and device ids.
  const json* amd = FindObject(part, "NicNodePolicy", "mi300x-train-rdma");
  ASSERT_NE(amd, nullptr);
  const json shared = json::parse((*amd)["spec"]["rdmaSharedDevicePlugin"]["config"].get<std::string>());
  ASSERT_EQ(shared["configList"].size(), 1u);
  EXPECT_EQ(shared["configList"][0]["resourceName"], "mi300x_train_shared");
  EXPECT_EQ(shared["configList"][0]["resourcePrefix"], "rdma");
  EXPECT_EQ(shared["configList"][0]["rdmaHcaMax"], 63);
  EXPECT_EQ(shared["configList"][0]["selectors"], json::parse(R"({"vendors": ["14e4"], "deviceIDs": ["1760"]})"));
  EXPECT_EQ(RdmaResourceName(*t.FindGroup("mi300x-train")), "rdma/mi300x_train_shared");
  EXPECT_EQ(FindObject(part, "HostDeviceNetwork", "mi300x-train-rdma"), nullptr) << "shared mode: no host-device network";
}

TEST(NetworkStack, DocaDriverOnlyWithAVersionAndOnlyForConnectX) {
  const ClusterTemplate t = Load(TemplateText("  operators: {network: {driverVersion: doca3.5.0-26.07-0.7.0.0-0}}\n"));
  const StackPart part = NetworkStack(t, PlanCluster(t));
  std::set<std::string> with_driver;
  for (const json& o : part.objects) {
    if (o["kind"] != "NicNodePolicy" || !o["spec"].contains("ofedDriver")) continue;
    with_driver.insert(o["metadata"]["name"].get<std::string>());
    EXPECT_EQ(o["spec"]["ofedDriver"]["image"], "doca-driver");
    EXPECT_EQ(o["spec"]["ofedDriver"]["version"], "doca3.5.0-26.07-0.7.0.0-0");
  }
  // mi300x-train's NICs are Broadcom Thor2: they keep their own driver.
  EXPECT_EQ(with_driver, (std::set<std::string>{"h100-train-rdma", "h100-board-rdma"}));
}

TEST(NetworkStack, Deterministic) {
  const ClusterTemplate t = Load(TemplateText());
  const ClusterPlan plan = PlanCluster(t);
  const StackPart a = NetworkStack(t, plan), b = NetworkStack(t, plan);
  EXPECT_EQ(a.files, b.files);
  ASSERT_EQ(a.objects.size(), b.objects.size());
  for (size_t i = 0; i < a.objects.size(); ++i) EXPECT_EQ(a.objects[i], b.objects[i]);
}

TEST(NetworkStack, ObjectsComeInFileOrder) {
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  std::vector<std::string> kinds;
  for (const json& o : part.objects) kinds.push_back(o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>());
  // Files sort as h100-board/, h100-train/ (host-device-network before nic-node-policy),
  // mi300x-train/, stack/.
  EXPECT_EQ(kinds, (std::vector<std::string>{"NicNodePolicy/h100-board-rdma", "HostDeviceNetwork/h100-train-rdma",
                                             "NicNodePolicy/h100-train-rdma", "NicNodePolicy/mi300x-train-rdma",
                                             "NicClusterPolicy/nic-cluster-policy"}));
}

TEST(NetworkStack, ExampleTemplate) {
  // The example's RDMA groups: h100-train's flavor passes no NIC, gaudi-train's ports are the
  // HPUs' own; whichever of them has NICs gets a policy.
  const ClusterTemplate t = LoadClusterTemplate(Src("examples/cluster/ai-prod.yaml"));
  const ClusterPlan plan = PlanCluster(t);
  const StackPart part = NetworkStack(t, plan);
  for (const GroupPlan& gp : plan.groups) {
    const NodeGroup& g = *t.FindGroup(gp.group);
    const bool wants = g.network.rdma != RdmaMode::kNone && g.vendor != Vendor::kHabana && !RdmaNicsOf(gp.layout).empty();
    EXPECT_EQ(part.files.count(g.name + "/network/nic-node-policy.yaml"), wants ? 1u : 0u) << g.name;
  }
}

TEST(NetworkStack, PlanGroupMissingFromTemplateIsAnInputError) {
  const ClusterTemplate t = Load(TemplateText());
  ClusterPlan plan = PlanCluster(t);
  plan.groups[0].group = "nope";
  EXPECT_THROW(NetworkStack(t, plan), InputError);
}

// ---- NCCL ---------------------------------------------------------------------------------

// The placement PlanCluster makes for a group (an empty hypervisor), for the domain XML.
struct Placed {
  placement::Placement placement;
  kubelet::GuestLayout layout;
};

Placed PlaceGroup(const NodeGroup& g) {
  placement::PlaceResult r = placement::Place(*g.hypervisor, {}, {}, g.request);
  EXPECT_TRUE(r.fits()) << g.name;
  return {*r.placement, kubelet::GuestLayoutOf(g.request, *r.placement, *g.hypervisor, kubelet::DeviceCellSource::kExpanderBus)};
}

// Host address -> (guest address, guest cell) as the domain reader sees the domain accel writes.
std::map<std::string, std::pair<std::string, int>> ReadBack(const topology::HostTopology& host,
                                                            const placement::PlacementRequest& request,
                                                            const placement::Placement& p) {
  const std::string xml = placement::RenderDomainXml(host, request, p, placement::DomainOptions{});
  const fabric::GuestDeviceMap m = fabric::ReadLibvirtDomain(xml, "domain");
  std::map<std::string, std::pair<std::string, int>> out;
  for (const fabric::GuestDevice& d : m.devices) out[d.host_address] = {d.guest_address, d.guest_cell};
  return out;
}

std::map<std::string, std::pair<std::string, int>> ViewOf(const kubelet::GuestLayout& layout) {
  std::map<std::string, std::pair<std::string, int>> out;
  for (const fabric::GuestDevice& d : GuestPciView(layout).devices) out[d.host_address] = {d.guest_address, d.guest_cell};
  return out;
}

TEST(GuestPciView, MatchesTheDomainReaderOnRandomFlavors) {
  const std::vector<topology::HostTopology> hosts = {
      topology::LoadTopology(Src("fixtures/hosts/hgx-h100.json")),
      topology::LoadTopology(Src("fixtures/hosts/epyc-nps4-mi300x.json")),
      topology::LoadTopology(Src("fixtures/hosts/gaudi2-8hpu.json")),
  };
  const placement::PciAliasTable aliases = placement::ParsePciAliases(json::parse(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "h100-pref", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "cx7", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF", "numa_policy": "required"},
    {"name": "cx7-pref", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF", "numa_policy": "preferred"},
    {"name": "mi300x", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "thor2", "vendor_id": "14e4", "product_id": "1760", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "gaudi2", "vendor_id": "1da3", "product_id": "1020", "device_type": "type-PCI", "numa_policy": "required"}
  ])"), "test aliases");
  static const char* const kGpu[] = {"h100", "h100-pref", "mi300x", "gaudi2"};
  static const char* const kNic[] = {"cx7", "cx7-pref", "thor2"};
  int compared = 0, devices = 0, unplaced = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
    placement::Flavor f;
    f.name = "random-" + std::to_string(seed);
    const int cells = uniform(1, 4);
    f.vcpus = 4 * cells;
    f.ram_mib = 8192ull * cells;
    // One in five floats (no NUMA topology: no device has a guest cell); the others are pinned
    // over `cells` guest cells.
    if (uniform(0, 4)) {
      f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
      f.extra_specs.push_back({"hw:numa_nodes", std::to_string(cells)});
    }
    // Preferred aliases may take more devices than the guest's cells have locally (the rest are
    // remote: no guest cell, no fixed address).
    const int gpu = uniform(0, 3);
    std::string alias = std::string(kGpu[gpu]) + ":" + std::to_string(uniform(1, gpu == 1 ? 8 : 2 * cells));
    const int nic = uniform(0, 2);
    if (uniform(0, 2)) alias += "," + std::string(kNic[nic]) + ":" + std::to_string(uniform(1, nic == 1 ? 8 : 2 * cells));
    f.extra_specs.push_back({"pci_passthrough:alias", alias});
    placement::PlacementRequest req;
    try {
      req = placement::BuildRequest(f, aliases, f.name);
    } catch (const InputError&) {
      continue;
    }
    for (const topology::HostTopology& host : hosts) {
      placement::PlaceResult r = placement::Place(host, {}, {}, req);
      if (!r.fits()) continue;
      const kubelet::GuestLayout layout = kubelet::GuestLayoutOf(req, *r.placement, host, kubelet::DeviceCellSource::kExpanderBus);
      const auto want = ReadBack(host, req, *r.placement);
      const auto got = ViewOf(layout);
      // The reader has no address for a device without an expander; the view says "" too.
      EXPECT_EQ(got, want) << "seed " << seed << " " << alias << " on " << host.hostname;
      ++compared;
      devices += static_cast<int>(got.size());
      for (const auto& [addr, v] : got) unplaced += v.first.empty() ? 1 : 0;
      break;
    }
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(unplaced, 0) << "preferred aliases must give some devices without a guest cell";
  std::cout << "[ measure  ] " << compared << " placed flavors, " << devices << " devices compared, " << unplaced
            << " without a guest cell\n";
}

TEST(NcclTopology, WholeBoardEqualsTheFabricCommandsOutput) {
  // h100-board passes all 8 GPUs and the 8 compute NICs: the file must be what
  // `accel place -o libvirt | accel fabric topo-xml --topology hgx-h100.json --domain -` writes.
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  const NodeGroup& g = *t.FindGroup("h100-board");
  const Placed p = PlaceGroup(g);
  const std::string xml = placement::RenderDomainXml(*g.hypervisor, g.request, p.placement, placement::DomainOptions{});
  const fabric::GuestDeviceMap domain = fabric::ReadLibvirtDomain(xml, "domain");
  const fabric::Fabric fabric = fabric::PairGpusWithNics(*g.hypervisor, {}, {});
  std::vector<std::string> warnings;
  const std::string want = fabric::WriteNcclTopologyXml(*g.hypervisor, fabric, domain, {}, &warnings);
  EXPECT_EQ(part.files.at("h100-board/nccl/nccl-topo.xml"), want);
  EXPECT_TRUE(warnings.empty());
}

TEST(NcclTopology, EveryGpuSitsWithAGuestNicOfItsCell) {
  const ClusterTemplate t = Load(TemplateText());
  const ClusterPlan plan = PlanCluster(t);
  const StackPart part = NetworkStack(t, plan);
  for (const std::string name : {"h100-train", "mi300x-train"}) {
    const GroupPlan* gp = nullptr;
    for (const GroupPlan& x : plan.groups)
      if (x.group == name) gp = &x;
    ASSERT_NE(gp, nullptr);
    const fabric::GuestDeviceMap view = GuestPciView(gp->layout);
    std::map<std::string, const fabric::GuestDevice*> by_guest;
    for (const fabric::GuestDevice& d : view.devices) by_guest[d.guest_address] = &d;
    std::map<std::string, topology::PciRole> role_of;
    for (const kubelet::GuestDevice& d : gp->layout.devices) role_of[d.host_address] = d.role;
    const std::string xml = part.files.at(name + "/nccl/nccl-topo.xml");
    // Each virtual switch: a GPU then its NIC, both guest addresses of the layout, one cell.
    const std::regex sw(R"re(<cpu numaid="(\d+)"[^>]*>|<pci busid="(0000:[0-9a-f:.]+)" class="(0x[0-9a-f]+)")re");
    int cell = -1, gpus = 0, nics = 0;
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), sw); it != std::sregex_iterator(); ++it) {
      if ((*it)[1].matched) {
        cell = std::stoi((*it)[1]);
        continue;
      }
      const auto dev = by_guest.find((*it)[2]);
      ASSERT_NE(dev, by_guest.end()) << (*it)[2] << " is not a guest address of " << name << "\n" << xml;
      EXPECT_EQ(dev->second->guest_cell, cell) << name << " " << (*it)[2];
      (role_of.at(dev->second->host_address) == topology::PciRole::kGpu ? gpus : nics) += 1;
    }
    int want_gpus = 0, want_nics = static_cast<int>(RdmaNicsOf(gp->layout).size());
    for (const kubelet::GuestDevice& d : gp->layout.devices) want_gpus += d.role == topology::PciRole::kGpu ? 1 : 0;
    EXPECT_EQ(gpus, want_gpus) << name << "\n" << xml;
    EXPECT_EQ(nics, want_nics) << name << "\n" << xml;
  }
}

TEST(NcclTopology, EnvPointsAtTheFileAndNamesNoHostDevice) {
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  const std::string env = part.files.at("h100-train/nccl/nccl.env");
  EXPECT_NE(env.find(std::string("\nNCCL_TOPO_FILE=") + kGuestNcclTopoPath + "\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nNCCL_SOCKET_IFNAME==eth0\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nCUDA_DEVICE_ORDER=PCI_BUS_ID\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("NCCL_IB_HCA="), std::string::npos) << env;
  EXPECT_EQ(env.find("mlx5_"), std::string::npos) << "host RDMA names mean nothing in the guest:\n" << env;
  EXPECT_EQ(env.find("UCX_"), std::string::npos) << env;
  // Every line is a comment or NAME=value (kubectl --from-env-file).
  std::istringstream lines(env);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(line.empty() || line[0] == '#' || std::regex_match(line, std::regex("[A-Z_]+=.+"))) << line;
  // AMD: no CUDA_DEVICE_ORDER; RCCL reads NCCL_TOPO_FILE too.
  const std::string amd = part.files.at("mi300x-train/nccl/nccl.env");
  EXPECT_EQ(amd.find("CUDA_DEVICE_ORDER"), std::string::npos) << amd;
  EXPECT_NE(amd.find("NCCL_TOPO_FILE="), std::string::npos) << amd;
}

TEST(NcclTopology, DeviceWithoutGuestCellIsLeftToNccl) {
  // A GPU remote to every guest cell (numa_policy preferred) has no expander, so no fixed guest
  // address: the file leaves it out and nccl.env says so.
  const ClusterTemplate t = Load(TemplateText());
  ClusterPlan plan = PlanCluster(t);
  GroupPlan* gp = nullptr;
  for (GroupPlan& x : plan.groups)
    if (x.group == "h100-train") gp = &x;
  ASSERT_NE(gp, nullptr);
  std::string moved;
  for (kubelet::GuestDevice& d : gp->layout.devices)
    if (d.role == topology::PciRole::kGpu && moved.empty()) {
      d.guest_cell = -1;
      moved = d.host_address;
    }
  const StackPart part = NetworkStack(t, plan);
  const std::string xml = part.files.at("h100-train/nccl/nccl-topo.xml");
  int gpus = 0;
  for (size_t at = xml.find("class=\"0x030200\""); at != std::string::npos; at = xml.find("class=\"0x030200\"", at + 1)) ++gpus;
  EXPECT_EQ(gpus, 3) << xml;
  const std::string env = part.files.at("h100-train/nccl/nccl.env");
  EXPECT_NE(env.find("# note: device " + moved + " has no guest cell"), std::string::npos) << env;
  // With no GPU addressed at all there is nothing to describe.
  for (kubelet::GuestDevice& d : gp->layout.devices) d.guest_cell = -1;
  EXPECT_EQ(NetworkStack(t, plan).files.count("h100-train/nccl/nccl-topo.xml"), 0u);
}

TEST(NcclTopology, NoFileWithoutGpusAndNics) {
  const ClusterTemplate t = Load(TemplateText());
  const StackPart part = NetworkStack(t, PlanCluster(t));
  for (const char* g : {"gaudi-train", "h100-nonic", "system"}) {
    EXPECT_EQ(part.files.count(std::string(g) + "/nccl/nccl-topo.xml"), 0u) << g;
    EXPECT_EQ(part.files.count(std::string(g) + "/nccl/nccl.env"), 0u) << g;
  }
}

}  // namespace
}  // namespace accel::cluster
