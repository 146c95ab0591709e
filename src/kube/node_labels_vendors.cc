// NodeLabels' other vendors: the ROCm node labeller's amd.com/gpu.* labels, Habana Feature
// Discovery's habana.ai/* labels, and accel.io/* facts from the topology model.
#include <cctype>
#include <cstdio>
#include <set>

#include "kube/node_labels_internal.h"

namespace accel::kube {

namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr size_t kMaxLabel = 63;

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The ROCm labeller's rule: one value on every GPU → "<key>=<value>", otherwise

// "<key>.<value>=<count>" per value. Devices without a value are left out.

void AddAmdKind(const std::string& key, const std::vector<std::string>& values, LabelMap* labels) {
  std::map<std::string, int> counts;
  for (const std::string& v : values) {
    if (!v.empty()) ++counts[v];
  }
  if (counts.size() == 1 && counts.begin()->second == static_cast<int>(values.size())) {
    (*labels)[key] = counts.begin()->first;
    return;
  }
  for (const auto& [value, count] : counts) {
    std::string name = key + "." + value;
    size_t slash = name.find('/');
    if (name.size() - slash - 1 > kMaxLabel) name.resize(slash + 1 + kMaxLabel);
    (*labels)[name] = std::to_string(count);
  }
}

std::string PciDeviceId(const topology::HostTopology& host, const std::string& address) {
  const topology::PciDevice* pci = address.empty() ? nullptr : host.FindPci(address);
  if (pci == nullptr || pci->device_id == 0) return "";
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04x", pci->device_id);
  return hex;
}

// Gaudi generation (1, 2, 3) from the PCI device id as HFD does, else from the HL-xxx model.

int GaudiGeneration(const std::string& pci_id, const std::string& model) {
  static const std::map<std::string, int> kByPci = {
      {"1000", 1}, {"1001", 1}, {"1010", 1}, {"1011", 1}, {"1020", 2}, {"1021", 2},
      {"1030", 3}, {"1060", 3}, {"1061", 3}, {"1062", 3}, {"1063", 3}};
  auto it = kByPci.find(pci_id);
  if (it != kByPci.end()) return it->second;
  if (model.find("HL-3") != std::string::npos) return 3;
  if (model.find("HL-22") != std::string::npos) return 2;
  if (model.find("HL-20") != std::string::npos) return 1;
  return 0;
}

}  // namespace

std::string SanitizeLabelValue(const std::string& s) {
  std::string out;
  bool gap = false;
  for (char c : s) {
    if (Alnum(c) || c == '.' || c == '_' || c == '-') {
      if (gap && !out.empty()) out += '-';
      out += c;
      gap = false;
    } else {
      gap = true;
    }
  }
  if (out.size() > kMaxLabel) out.resize(kMaxLabel);
  while (!out.empty() && !Alnum(out.back())) out.pop_back();
  size_t first = 0;
  while (first < out.size() && !Alnum(out[first])) ++first;
  return out.substr(first);
}

void AddAmdLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
            LabelMap* labels) {
  std::vector<std::string> product, vram, device_id, driver;
  for (const NodeDevice& d : devices) {
    if (d.vendor != devices::Vendor::kAmd || d.is_mig()) continue;
    product.push_back(SanitizeLabelValue(d.model));
    vram.push_back(d.memory_bytes ? std::to_string((d.memory_bytes + kGiB / 2) / kGiB) + "G" : "");
    device_id.push_back(PciDeviceId(host, d.pci_address));
    driver.push_back(SanitizeLabelValue(d.driver_version));
  }
  if (product.empty()) return;
  (*labels)["amd.com/gpu.count"] = std::to_string(product.size());
  AddAmdKind("amd.com/gpu.product-name", product, labels);
  AddAmdKind("amd.com/gpu.vram", vram, labels);
  AddAmdKind("amd.com/gpu.device-id", device_id, labels);
  AddAmdKind("amd.com/gpu.driver-version", driver, labels);
}

void AddGaudiLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
              LabelMap* labels) {
  std::vector<const NodeDevice*> hpus;
  for (const NodeDevice& d : devices) {
    if (d.vendor == devices::Vendor::kHabana) hpus.push_back(&d);
  }
  if (hpus.empty()) return;
  const NodeDevice& first = *hpus[0];
  std::string pci_id = PciDeviceId(host, first.pci_address);
  (*labels)["habana.ai/device.count"] = std::to_string(hpus.size());
  (*labels)["habana.ai/device.family"] = "gaudi";
  if (!pci_id.empty()) (*labels)["habana.ai/device.id"] = pci_id;
  if (int gen = GaudiGeneration(pci_id, first.model); gen > 0) {
    (*labels)["habana.ai/device.name"] = "gaudi" + std::to_string(gen);
    (*labels)["habana.ai/device.type"] = gen == 1 ? "GAUDI" : "GAUDI" + std::to_string(gen);
  }
  if (!first.model.empty()) (*labels)["habana.ai/product.name"] = SanitizeLabelValue(first.model);
  if (!first.driver_version.empty()) {
    (*labels)["habana.ai/driver.version"] = SanitizeLabelValue(first.driver_version);
  }
}

void AddHostLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
             LabelMap* labels) {
  std::set<int> gpu_nodes;
  for (const NodeDevice& d : devices) {
    if (!d.is_mig() && d.numa_node >= 0) gpu_nodes.insert(d.numa_node);
  }
  std::string joined;
  for (int n : gpu_nodes) joined += (joined.empty() ? "" : ".") + std::to_string(n);
  if (!joined.empty()) (*labels)["accel.io/gpu-numa-nodes"] = joined;
  if (host.numa_nodes.empty() && host.pci.empty()) return;  // no topology model
  uint64_t pages_2m = 0, pages_1g = 0;
  for (const topology::NumaNode& node : host.numa_nodes) {
    for (const topology::HugepagePool& pool : node.pages) {
      if (pool.size_kib == 2048) pages_2m += pool.total;
      if (pool.size_kib == 1048576) pages_1g += pool.total;
    }
  }
  int rdma = 0;
  for (const topology::PciDevice& pci : host.pci) {
    rdma += pci.role == topology::PciRole::kNic && pci.is_rdma() && !pci.is_vf() ? 1 : 0;
  }
  (*labels)["accel.io/numa-nodes"] = std::to_string(host.numa_nodes.size());
  (*labels)["accel.io/hugepages-2Mi"] = std::to_string(pages_2m);
  (*labels)["accel.io/hugepages-1Gi"] = std::to_string(pages_1g);
  (*labels)["accel.io/rdma-nics"] = std::to_string(rdma);
}

}  // namespace accel::kube
