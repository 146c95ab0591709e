// accel dra: what accel's DRA driver (the dra: part of `accel serve`) publishes on this node and
// what it would do for a claim, without a cluster — the same vendor backends, device discovery,
// inventory, ResourceSlices and claim preparation the agent runs, printed instead of published.
//
//   accel dra slices   the node's devices as the driver publishes them (table), or the exact
//                      ResourceSlice objects at pool generation 1 (-o yaml|json)
//   accel dra claim    a ResourceClaim (as `kubectl get resourceclaim -o yaml` prints it) run
//                      through the driver's own NodePrepareResources (dra::ClaimPreparer) in a
//                      private temporary directory: its devices, CDI spec and NCCL env, with
//                      Prepare's own error for a claim this node would refuse
//
// The node is read the way `accel serve` reads it, by the same calls: an agent.yaml (--config)
// for vendors, libraries, topology and the dra: block, with the command line's flags on top,
// read by dra::ReadNodeHardware (topology, devices, NVLink, RDMA ports, pairing) and published
// by dra::BuildNodeInventory — so `slices` prints what the agent publishes, nvlinkClique and
// rails included.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent_config.h"
#include "agent/dra_driver.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "common/error.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "devices/open_backends.h"
#include "dra/cdi_spec.h"
#include "dra/claim_allocation.h"
#include "dra/claim_preparer.h"
#include "dra/inventory.h"
#include "dra/node_hardware.h"
#include "dra/resource_slices.h"

namespace accel::cli {

namespace {

namespace fs = std::filesystem;

/// The flags both subcommands read the node with (same meaning as `accel serve`'s and the
/// agent.yaml keys they override); "" = not given.
struct NodeFlags {
  std::string config;    ///< --config: agent.yaml
  std::string topology;  ///< --topology: overrides `topology:` ("live", a file, "none")
  std::string vendors;   ///< --vendors: comma list
  std::string nvml_library, rocm_smi_library, hlml_library;
  std::string node;      ///< --node: overrides dra.nodeName
  std::string driver;    ///< --driver: overrides dra.driverName
  std::string root;      ///< --root: sysfs root (RDMA ports, uverbs nodes)
  bool no_vfs = false;   ///< --no-vfs: dra.publishVfs false
};

/// The node as the driver sees it. Backends stay open for the view's lifetime.
struct NodeView {
  agent::AgentConfig config;
  std::vector<std::unique_ptr<devices::DeviceBackend>> backends;
  /// The node as the agent reads it (dra::ReadNodeHardware); hw.rdma_root is the root RDMA
  /// ports and device nodes are read under ("" = none: a topology file).
  dra::NodeHardware hw;
  dra::Inventory inventory;
};

void AddNodeFlags(CLI::App* cmd, NodeFlags* f) {
  cmd->add_option("--config,-f", f->config,
                  "agent YAML (as `accel serve --config`): vendors, libraries, topology and the "
                  "dra: block; none = defaults");
  cmd->add_option("--topology,-t", f->topology,
                  "'live' (this machine), an hwloc XML, accel host JSON, or 'none'; overrides "
                  "topology: of the file (default live)");
  cmd->add_option("--vendors", f->vendors, "comma list of nvidia, amd, habana (overrides vendors:)");
  cmd->add_option("--nvml-library", f->nvml_library, "overrides libraries.nvml");
  cmd->add_option("--rocm-smi-library", f->rocm_smi_library, "overrides libraries.rocmSmi");
  cmd->add_option("--hlml-library", f->hlml_library, "overrides libraries.hlml");
  cmd->add_option("--node", f->node,
                  "the node's Kubernetes name, also the pool name (overrides dra.nodeName; "
                  "default $NODE_NAME, else the host name)");
  cmd->add_option("--driver", f->driver, "DRA driver name (overrides dra.driverName; default accel.io)");
  cmd->add_option("--root", f->root,
                  "filesystem root holding sys/class/infiniband (RDMA ports, uverbs nodes); "
                  "default as the agent: the directory of a sysfs-copy topology, else "
                  "dra.hostRoot (default /) with a live topology or when it is not /, else none "
                  "(a topology file): then every RDMA port counts as up");
  cmd->add_flag("--no-vfs", f->no_vfs, "leave SR-IOV virtual functions out (dra.publishVfs: false)");
}

/// The agent file with the command line on top (serve_cmd.cc's LoadConfig, plus dra:).
agent::AgentConfig LoadConfig(const NodeFlags& f) {
  agent::AgentConfig c = agent::LoadAgentConfig(f.config);
  if (!f.topology.empty()) c.topology = f.topology;
  if (!f.vendors.empty()) c.vendors = SplitList(f.vendors);
  if (!f.nvml_library.empty()) c.nvml_library = f.nvml_library;
  if (!f.rocm_smi_library.empty()) c.rocm_smi_library = f.rocm_smi_library;
  if (!f.hlml_library.empty()) c.hlml_library = f.hlml_library;
  if (!f.node.empty()) c.dra.node_name = f.node;
  if (!f.driver.empty()) c.dra.driver_name = f.driver;
  if (f.no_vfs) c.dra.publish_vfs = false;
  return c;
}

/// Reads the node and builds the inventory with the agent's own calls (dra::ReadNodeHardware
/// from agent::NodeSourceOf, dra::BuildNodeInventory with the driver's options), so what is
/// printed is what the agent publishes. Unlike the agent, an unreadable topology file is an
/// error here: the operator named it. Throws InputError, BackendError.
NodeView ReadNode(const NodeFlags& f) {
  NodeView v;
  v.config = LoadConfig(f);
  const agent::AgentConfig& c = v.config;
  if (!f.root.empty()) {
    std::error_code ec;
    if (!fs::is_directory(f.root, ec))
      throw InputError("command line", "--root", "'" + f.root + "' is not a directory",
                       "give the directory that holds sys/class/infiniband, e.g. /");
  }
  dra::NodeSource source = agent::NodeSourceOf(c);
  source.sysfs_root = f.root;
  source.topology_required = true;
  auto log = [](const std::string& line) { std::cerr << "accel dra: " << line << "\n"; };
  devices::VendorLibraries libraries{c.nvml_library, c.rocm_smi_library, c.hlml_library};
  v.backends = devices::OpenBackends(c.vendors, libraries, log, "vendors");
  std::vector<devices::DeviceBackend*> raw;
  for (auto& b : v.backends) raw.push_back(b.get());
  v.hw = dra::ReadNodeHardware(source, raw, log);
  v.inventory = dra::BuildNodeInventory(v.hw, agent::internal::DraInventoryOptions(c.dra, v.hw.host));
  return v;
}

std::string Attr(const dra::DraDevice& d, const std::string& name) {
  auto it = d.attributes.find(name);
  if (it == d.attributes.end()) return "";
  const dra::AttributeValue& a = it->second;
  switch (a.type) {
    case dra::AttributeValue::Type::kInt: return std::to_string(a.int_value);
    case dra::AttributeValue::Type::kBool: return a.bool_value ? "true" : "false";
    default: return a.string_value;
  }
}

std::string Or(const std::string& s) { return s.empty() ? "-" : s; }

/// What a device is, in one cell: the model of an accelerator, the MIG profile of a MIG
/// device, the RDMA device and port of a NIC.
std::string WhatCell(const dra::DraDevice& d) {
  if (d.kind == dra::DeviceKind::kNic) {
    std::string rdma = Attr(d, "rdmaDevice");
    std::string port = Attr(d, "port");
    return Or(rdma.empty() ? "" : rdma + (port.empty() ? "" : ":" + port));
  }
  if (d.kind == dra::DeviceKind::kMig) return Or(Attr(d, "profile"));
  return Or(Attr(d, "model"));
}

std::string RenderSlicesTable(const dra::Inventory& inv, size_t slices) {
  std::vector<std::vector<std::string>> rows{
      {"DEVICE", "TYPE", "MODEL/RDMA", "PCI", "NUMA", "RAIL", "PATH", "PCIE SWITCH"}};
  for (const dra::DraDevice& d : inv.devices) {
    rows.push_back({d.name, dra::DeviceKindName(d.kind), WhatCell(d), Or(d.pci_address),
                    d.numa_node >= 0 ? std::to_string(d.numa_node) : "-",
                    d.rail >= 0 ? std::to_string(d.rail) : "-", Or(Attr(d, "pathType")),
                    Or(Attr(d, "pcieSwitch"))});
  }
  std::string out = FormatTable(rows);
  out += "\nPool " + inv.node_name + " of driver " + inv.driver + ": " +
         std::to_string(inv.devices.size()) + " device(s), " +
         std::to_string(inv.counter_sets.size()) + " counter set(s), " + std::to_string(slices) +
         " ResourceSlice(s) at generation 1 (-o yaml shows them).\n";
  std::vector<std::vector<std::string>> excluded{{"NIC", "PCI", "REASON"}};
  for (const fabric::FabricNic& nic : inv.fabric.nics) {
    if (nic.excluded.empty()) continue;
    excluded.push_back({nic.rdma_device + ":" + std::to_string(nic.port), nic.pci_address, nic.excluded});
  }
  if (excluded.size() > 1) out += "\nNICs without a rail:\n" + FormatTable(excluded);
  std::vector<std::string> notes = inv.fabric.notes;
  notes.insert(notes.end(), inv.notes.begin(), inv.notes.end());
  if (!notes.empty()) {
    out += "\nNotes:\n";
    for (const std::string& note : notes) out += "  - " + note + "\n";
  }
  return out;
}

struct SlicesOptions {
  NodeFlags node;
  std::string output = "table";
};

int RunSlices(const SlicesOptions& o) {
  NodeView v = ReadNode(o.node);
  std::vector<nlohmann::json> slices = dra::BuildResourceSlices(v.inventory, 1);
  if (o.output == "yaml") {
    std::cout << dra::ResourceSlicesYaml(slices);
  } else if (o.output == "json") {
    std::cout << dra::ResourceSliceList(slices).dump(2) << "\n";
  } else {
    std::cout << RenderSlicesTable(v.inventory, slices.size());
  }
  std::cout.flush();
  return kExitOk;
}

struct ClaimOptions {
  NodeFlags node;
  std::string claim;
  std::string socket_ifname;
  bool socket_ifname_set = false;
  std::string topo_file;
  std::string output = "text";
};

/// A private directory for the preparer's CDI spec and checkpoint, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "accel-dra-claim-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw SystemError("cannot create a temporary directory", pattern, std::strerror(errno),
                        "set TMPDIR to a writable directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// The claim object of `path`: a ResourceClaim, or a List holding exactly one (what
/// `kubectl get resourceclaims -o yaml` prints for one claim). Throws InputError.
nlohmann::json ReadClaimObject(const std::string& path) {
  nlohmann::json doc = ReadStructuredFile(path);
  if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    if (doc["items"].size() != 1)
      throw InputError(path, "items",
                       "holds " + std::to_string(doc["items"].size()) + " objects, not one claim",
                       "kubectl get resourceclaim NAME -n NAMESPACE -o yaml > claim.yaml");
    doc = doc["items"][0];
  }
  if (!doc.is_object())
    throw InputError(path, "", "is not a ResourceClaim object",
                     "kubectl get resourceclaim NAME -n NAMESPACE -o yaml > claim.yaml");
  if (doc.contains("kind") && doc["kind"] != "ResourceClaim")
    throw InputError(path, "kind", "is " + doc["kind"].dump() + ", not \"ResourceClaim\"");
  return doc;
}

nlohmann::ordered_json EnvJson(const std::vector<std::pair<std::string, std::string>>& env) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : env) out[name] = value;
  return out;
}

int RunClaim(const ClaimOptions& o) {
  const std::string me = "accel dra claim: ";
  nlohmann::json object = ReadClaimObject(o.claim);
  const agent::AgentConfig config = LoadConfig(o.node);
  const std::string driver = config.dra.driver_name;
  // Read the claim as Prepare will, first: a malformed claim is bad input (2); one that is
  // well formed but not allocated is a claim Prepare refuses (1).
  dra::ClaimAllocation allocation;
  try {
    allocation = dra::ParseClaimAllocation(object, dra::ClaimRef{}, driver);
  } catch (const InputError& e) {
    if (e.field() != "status.allocation") throw InputError(o.claim, "", e.what());
    std::cerr << me << e.what() << "\n";
    return kExitNoFit;
  }

  NodeView v = ReadNode(o.node);
  const dra::Inventory& inv = v.inventory;
  TempDir tmp;
  dra::PreparerOptions po;
  po.cdi_dir = (tmp.path() / "cdi").string();
  po.state_dir = (tmp.path() / "state").string();
  // Without a root (a topology file) nothing of this machine is read: an empty directory
  // stands in for the host, so NICs' uverbs nodes are not found, as on a host without them.
  po.device_nodes.host_root = v.hw.rdma_root.empty() ? (tmp.path() / "no-host").string() : v.hw.rdma_root;
  fs::create_directories(po.device_nodes.host_root);
  po.nccl.socket_ifname = o.socket_ifname_set ? o.socket_ifname : config.dra.nccl_socket_ifname;
  po.nccl.topo_file = o.topo_file.empty() ? config.dra.nccl_topo_file : o.topo_file;
  auto shared = std::make_shared<const dra::Inventory>(inv);
  dra::ClaimPreparer preparer(shared, [&object](const dra::ClaimRef&) { return object; }, po);
  const dra::ClaimRef ref{allocation.namespace_, allocation.uid, allocation.name};
  dra::PrepareResult result = preparer.Prepare(ref);
  if (!result.error.empty()) {
    std::cerr << me << result.error << "\n";
    for (const dra::AllocatedDevice& a : allocation.devices) {
      if (a.pool != inv.node_name) {
        std::cerr << me << "hint: --node " << a.pool << " previews the claim as that node\n";
        break;
      }
    }
    if (v.hw.rdma_root.empty() && result.error.find("uverbs") != std::string::npos)
      std::cerr << me << "hint: with a topology file, --root DIR names the sysfs copy the NICs' "
                         "uverbs nodes are read from\n";
    return kExitNoFit;
  }

  std::vector<const dra::DraDevice*> devices;
  for (const dra::PreparedDevice& p : result.devices) devices.push_back(inv.Find(p.device_name));
  dra::ClaimNccl nccl = dra::ClaimNcclEnv(inv, devices, po.nccl, allocation.parameters);
  const std::string kind = dra::ClaimCdiKind(inv.driver);
  const std::string spec_name = dra::CdiSpecFileName(kind, allocation.uid);
  nlohmann::ordered_json spec;  // null when the claim has no device of ours (nothing written)
  if (!result.devices.empty()) {
    const std::string spec_path = (fs::path(po.cdi_dir) / spec_name).string();
    spec = ParseOrderedJsonText(ReadWholeFile(spec_path), spec_path);
  }
  std::vector<std::string> notes = nccl.notes;
  if (result.devices.empty())
    notes.insert(notes.begin(), "the claim holds no device of driver " + inv.driver +
                                    ": Prepare answers no device and writes no CDI spec");

  if (o.output == "json") {
    nlohmann::ordered_json out;
    out["claim"] = {{"namespace", allocation.namespace_}, {"name", allocation.name}, {"uid", allocation.uid}};
    out["node"] = inv.node_name;
    out["driver"] = inv.driver;
    out["devices"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < result.devices.size(); ++i) {
      const dra::PreparedDevice& p = result.devices[i];
      out["devices"].push_back({{"device", p.device_name},
                                {"pool", p.pool_name},
                                {"requests", p.request_names},
                                {"type", dra::DeviceKindName(devices[i]->kind)},
                                {"pciAddress", devices[i]->pci_address},
                                {"rail", devices[i]->rail},
                                {"cdiDeviceIds", p.cdi_device_ids}});
    }
    out["ncclEnv"] = EnvJson(nccl.env);
    out["notes"] = notes;
    out["cdiSpecFile"] = result.devices.empty() ? "" : spec_name;
    out["cdiSpec"] = spec;
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }

  std::cout << "ResourceClaim " << allocation.namespace_ << "/" << allocation.name << " (uid "
            << allocation.uid << ") on node " << inv.node_name << ", driver " << inv.driver << ": "
            << result.devices.size() << " device(s)\n";
  if (!result.devices.empty()) {
    std::vector<std::vector<std::string>> rows{{"DEVICE", "REQUEST", "TYPE", "MODEL/RDMA", "PCI", "RAIL", "CDI DEVICE"}};
    for (size_t i = 0; i < result.devices.size(); ++i) {
      const dra::PreparedDevice& p = result.devices[i];
      const dra::DraDevice& d = *devices[i];
      rows.push_back({p.device_name, JoinStrings(p.request_names, ","), dra::DeviceKindName(d.kind), WhatCell(d),
                      Or(d.pci_address), d.rail >= 0 ? std::to_string(d.rail) : "-",
                      JoinStrings(p.cdi_device_ids, ",")});
    }
    std::cout << "\n" << FormatTable(rows);
  }
  if (!nccl.env.empty()) {
    std::cout << "\nNCCL env (in the CDI spec's containerEdits):\n";
    for (const auto& [name, value] : nccl.env) std::cout << "  " << name << "=" << value << "\n";
  }
  if (!notes.empty()) {
    std::cout << "\nNotes:\n";
    for (const std::string& n : notes) std::cout << "  - " << n << "\n";
  }
  if (!spec.is_null())
    std::cout << "\nCDI spec " << spec_name << " (Prepare writes it to the CDI directory, "
              << config.dra.cdi_dir << " by default):\n"
              << spec.dump(2) << "\n";
  std::cout.flush();
  return kExitOk;
}

void RegisterSlices(CLI::App* dra, int* exit_code) {
  auto o = std::make_shared<SlicesOptions>();
  CLI::App* cmd = dra->add_subcommand(
      "slices",
      "What accel's DRA driver publishes on this node, as a table or as ResourceSlices. Every\n"
      "GPU, MIG device and RDMA NIC with its rail (a GPU and the NIC paired with it share one,\n"
      "so `matchAttribute: accel.io/rail` pairs them), PCIe path and switch; or the exact\n"
      "ResourceSlice objects (resource.k8s.io/v1) the driver would publish at pool generation 1.\n"
      "Reads the vendor libraries and the topology as `accel serve` does; contacts no API server.\n\n"
      "Examples:\n"
      "  accel dra slices                                # this node, as a table\n"
      "  accel dra slices -o yaml --node gpu-node-7      # the ResourceSlices, for kubectl diff\n"
      "  accel dra slices --config /etc/accel/agent.yaml -o json\n"
      "  accel dra slices --topology host.json --vendors nvidia --no-vfs\n"
      "  FAKE_NVML_CONFIG=tests/fakes/nvml/examples/h100x8-mig.json accel dra slices \\\n"
      "      --nvml-library build/tests/fakes/nvml/libnvidia-ml.so.1 --vendors nvidia \\\n"
      "      --topology fixtures/hosts/hgx-h100.json   # the fake HGX H100, no GPU needed\n\n"
      "Exit status: 0 printed; 2 bad input (agent file, topology, flag, node or driver name,\n"
      "a vendor library that cannot be used).");
  AddNodeFlags(cmd, &o->node);
  cmd->add_option("--output,-o", o->output, "table, yaml (ResourceSlices) or json (a ResourceSliceList)")
      ->check(CLI::IsMember({"table", "yaml", "json"}))
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = RunSlices(*o); });
}

void RegisterClaim(CLI::App* dra, int* exit_code) {
  auto o = std::make_shared<ClaimOptions>();
  CLI::App* cmd = dra->add_subcommand(
      "claim",
      "What NodePrepareResources would do on this node for an allocated ResourceClaim. Its\n"
      "devices and CDI device ids, the CDI spec (device nodes, visible-devices env, NCCL_IB_HCA\n"
      "of the claim's NICs in pair order, NCCL_NET_GDR_LEVEL, per-rank UCX devices) and why\n"
      "anything was left out. Runs the driver's own Prepare against a private temporary\n"
      "directory it removes: nothing is written to the CDI or state directories, no API server\n"
      "is contacted (the claim comes from the file).\n\n"
      "Examples:\n"
      "  kubectl get resourceclaim train-0-gpu -n team-a -o yaml > claim.yaml\n"
      "  accel dra claim --claim claim.yaml --node \"$(hostname)\"\n"
      "  accel dra claim --claim claim.yaml --config /etc/accel/agent.yaml -o json\n"
      "  accel dra claim --claim claim.yaml --topology host.json --root /tmp/sysfs-copy\n"
      "  accel dra claim --claim claim.yaml --socket-ifname net1 --topo-file /etc/accel/topo.xml\n\n"
      "With a topology file and no --root, NICs' uverbs device nodes cannot be found and a claim\n"
      "with NICs fails as Prepare would on such a host: give --root (a sysfs copy).\n"
      "Exit status: 0 printed; 1 Prepare would refuse the claim (not allocated, a device this node\n"
      "does not publish, another node's pool, a device node not found): Prepare's own message;\n"
      "2 bad input (unreadable or malformed claim, agent file, topology, flag).");
  AddNodeFlags(cmd, &o->node);
  cmd->add_option("--claim", o->claim, "the ResourceClaim, YAML or JSON (kubectl get -o yaml)")
      ->required();
  cmd->add_option("--socket-ifname", o->socket_ifname,
                  "NCCL_SOCKET_IFNAME for claims (dra.nccl.socketIfname; default eth0; '' = unset)")
      ->each([o](const std::string&) { o->socket_ifname_set = true; });
  cmd->add_option("--topo-file", o->topo_file,
                  "host path of an NCCL topology XML mounted into claims (dra.nccl.topoFile; in a VM)");
  cmd->add_option("--output,-o", o->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = RunClaim(*o); });
}

}  // namespace

void RegisterDra(CLI::App& app, int* exit_code) {
  CLI::App* dra = app.add_subcommand(
      "dra",
      "accel's DRA driver (the dra: part of `accel serve`, docs/dra.md) without a cluster:\n"
      "`slices` shows what it publishes on this node, `claim` what a claim would get.");
  dra->require_subcommand(1);
  RegisterSlices(dra, exit_code);
  RegisterClaim(dra, exit_code);
}

}  // namespace accel::cli
