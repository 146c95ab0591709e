#include "dra/cdi_spec.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/small_file.h"

namespace accel::dra {

namespace {

using OJson = nlohmann::ordered_json;

OJson EditsJson(const CdiEdits& edits) {
  OJson out = OJson::object();
  if (!edits.env.empty()) {
    OJson env = OJson::array();
    for (const auto& [name, value] : edits.env) env.push_back(name + "=" + value);
    out["env"] = env;
  }
  if (!edits.device_nodes.empty()) {
    OJson nodes = OJson::array();
    for (const kube::DeviceNodeSpec& n : edits.device_nodes) {
      OJson node = {{"path", n.container_path}};
      if (!n.host_path.empty() && n.host_path != n.container_path) node["hostPath"] = n.host_path;
      if (!n.permissions.empty()) node["permissions"] = n.permissions;
      nodes.push_back(node);
    }
    out["deviceNodes"] = nodes;
  }
  if (!edits.mounts.empty()) {
    OJson mounts = OJson::array();
    for (const kube::MountSpec& m : edits.mounts)
      mounts.push_back({{"hostPath", m.host_path},
                        {"containerPath", m.container_path},
                        {"options", {m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"}}});
    out["mounts"] = mounts;
  }
  return out;
}

std::string Join(const std::string& root, const std::string& path) {
  std::string r = root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  return r + path;
}

// "uverbs12" → 12; −1 for anything else.
int UverbsNumber(const std::string& name) {
  const std::string prefix = "uverbs";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 6)
    return -1;
  int n = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

// "DeviceFileMinor: 42" in a capability's access file; −1 when absent.
int DeviceFileMinor(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "DeviceFileMinor:";
    if (line.rfind(key, 0) != 0) continue;
    try {
      size_t used = 0;
      std::string value = line.substr(key.size());
      int minor = std::stoi(value, &used);
      return minor >= 0 ? minor : -1;
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

}  // namespace

std::string ClaimCdiKind(const std::string& driver) { return "k8s." + driver + "/claim"; }

std::string ClaimCdiDeviceName(const std::string& claim_uid, const std::string& device) {
  return claim_uid + "-" + device;
}

std::string QualifiedCdiName(const std::string& kind, const std::string& name) {
  return kind + "=" + name;
}

std::string CdiSpecFileName(const std::string& kind, const std::string& claim_uid) {
  std::string vendor_class = kind;
  size_t slash = vendor_class.find('/');
  if (slash != std::string::npos) vendor_class[slash] = '-';
  std::string id = claim_uid;
  for (char& c : id)
    if (c == '/') c = '_';
  return vendor_class + "_" + id + ".json";
}

nlohmann::ordered_json CdiSpecJson(const CdiSpec& spec) {
  OJson out = {{"cdiVersion", kCdiVersion}, {"kind", spec.kind}};
  OJson devices = OJson::array();
  for (const CdiDevice& d : spec.devices)
    devices.push_back({{"name", d.name}, {"containerEdits", EditsJson(d.edits)}});
  out["devices"] = devices;
  if (!spec.edits.empty()) out["containerEdits"] = EditsJson(spec.edits);
  return out;
}

std::string WriteCdiSpec(const std::string& dir, const CdiSpec& spec,
                         const std::string& claim_uid) {
  std::string path = (std::filesystem::path(dir) / CdiSpecFileName(spec.kind, claim_uid)).string();
  AtomicWriteOptions options;
  options.mode = 0644;  // the runtime reads it; nothing secret in it
  options.create_directories = true;
  WriteFileAtomically(path, CdiSpecJson(spec).dump(2) + "\n", options);
  return path;
}

void RemoveCdiSpec(const std::string& path) {
  if (std::remove(path.c_str()) == 0 || errno == ENOENT) return;
  throw SystemError::FromErrno("cannot remove CDI spec", path, errno);
}

int FindUverbsIndex(const std::string& host_root, const std::string& rdma_device) {
  namespace fs = std::filesystem;
  if (rdma_device.empty() || rdma_device.find('/') != std::string::npos || rdma_device == "." ||
      rdma_device == "..")
    return -1;
  std::error_code ec;
  fs::path dir = Join(host_root, "/sys/class/infiniband/" + rdma_device +
                                     "/device/infiniband_verbs");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    int n = UverbsNumber(it->path().filename().string());
    if (n >= 0) return n;
  }
  ec.clear();
  fs::path verbs = Join(host_root, "/sys/class/infiniband_verbs");
  for (fs::directory_iterator it(verbs, ec), end; !ec && it != end; it.increment(ec)) {
    int n = UverbsNumber(it->path().filename().string());
    if (n < 0) continue;
    std::string ibdev = ReadSmallFile((it->path() / "ibdev").string()).value_or("");
    while (!ibdev.empty() && (ibdev.back() == '\n' || ibdev.back() == ' ')) ibdev.pop_back();
    if (ibdev == rdma_device) return n;
  }
  return -1;
}

std::vector<int> MigCapabilityMinors(const std::string& host_root, int gpu_minor,
                                     unsigned gpu_instance, unsigned compute_instance) {
  std::vector<int> out;
  if (gpu_minor < 0) return out;
  std::string gi = Join(host_root, "/proc/driver/nvidia/capabilities/gpu" +
                                       std::to_string(gpu_minor) + "/mig/gi" +
                                       std::to_string(gpu_instance));
  int gi_minor = DeviceFileMinor(ReadSmallFile(gi + "/access").value_or(""));
  int ci_minor =
      DeviceFileMinor(ReadSmallFile(gi + "/ci" + std::to_string(compute_instance) + "/access").value_or(""));
  if (gi_minor < 0 || ci_minor < 0) return out;  // both or nothing: one alone does not work
  return {gi_minor, ci_minor};
}

DeviceCdi DeviceCdiEdits(const Inventory& inventory, const DraDevice& device,
                         const DeviceNodeOptions& options) {
  DeviceCdi out;
  if (device.kind == DeviceKind::kNic) {
    if (device.nic < 0 || static_cast<size_t>(device.nic) >= inventory.fabric.nics.size())
      throw InputError("inventory", "device " + device.name, "names no NIC of the fabric");
    const fabric::FabricNic& nic = inventory.fabric.nics[device.nic];
    int uverbs = FindUverbsIndex(options.host_root, nic.rdma_device);
    if (uverbs < 0)
      throw SystemError("cannot find the uverbs device of", nic.rdma_device + " (" + device.name + ")",
                        "no " + Join(options.host_root, "/sys/class/infiniband/" + nic.rdma_device +
                                                            "/device/infiniband_verbs/uverbs*"),
                        "load ib_uverbs (modprobe ib_uverbs rdma_ucm)");
    std::string node = "/dev/infiniband/uverbs" + std::to_string(uverbs);
    out.edits.device_nodes.push_back({node, node, "rw"});
    out.edits.device_nodes.push_back({"/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm", "rw"});
    return out;
  }
  if (device.node_device < 0 ||
      static_cast<size_t>(device.node_device) >= inventory.node_devices.size())
    throw InputError("inventory", "device " + device.name, "names no accelerator of the node");
  const kube::NodeDevice& nd = inventory.node_devices[device.node_device];
  kube::DeviceEdits e = kube::EditsOfDevice(nd, "/", /*nvidia_by_index=*/false);
  if (e.device_nodes.empty() && nd.vendor != devices::Vendor::kNvidia)
    throw SystemError("cannot prepare", device.name + " (" + nd.id + ")",
                      "its device node is unknown (no minor number from the vendor library)");
  out.edits.device_nodes = e.device_nodes;
  if (nd.is_mig()) {
    for (int minor : MigCapabilityMinors(options.host_root, nd.minor, nd.gpu_instance_id,
                                         nd.compute_instance_id)) {
      std::string cap = "/dev/nvidia-caps/nvidia-cap" + std::to_string(minor);
      out.edits.device_nodes.push_back({cap, cap, "rw"});
    }
  }
  // Shared nodes per device, not per spec: a NIC-only claim needs no /dev/nvidiactl, and the
  // runtime replaces a node injected twice (CDI applies nodes by path).
  for (const kube::DeviceNodeSpec& n : e.shared_nodes) out.edits.device_nodes.push_back(n);
  out.visible_env = e.visible_env;
  out.visible_value = e.visible_value;
  return out;
}

}  // namespace accel::dra
