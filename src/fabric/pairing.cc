#include "fabric/pairing.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "fabric/matching.h"

namespace accel::fabric {
namespace {

// "" | InfiniBand | Ethernet, accepting the spellings people type.
std::string NormalizeLinkLayer(const std::string& text) {
  std::string l = AsciiLower(text);
  if (l.empty()) return "";
  if (l == "ib" || l == "infiniband") return "InfiniBand";
  if (l == "eth" || l == "ethernet" || l == "roce") return "Ethernet";
  throw InputError("command line", "--link-layer", "unknown link layer '" + text + "'",
                   "use IB (InfiniBand) or Ethernet (RoCE)");
}

std::string ShortAddress(const std::string& address) {
  return address.rfind("0000:", 0) == 0 ? address.substr(5) : address;
}

std::string NicName(const FabricNic& nic) {
  return nic.rdma_device + (nic.port != 1 ? ":" + std::to_string(nic.port) : "");
}

// The accelerators to pair, canonical, PCI order; throws for an address that is not one.
std::vector<std::string> SelectGpus(const topology::HostTopology& host,
                                    const PathClassifier& paths,
                                    const std::vector<std::string>& all,
                                    const std::vector<std::string>& wanted) {
  if (wanted.empty()) return all;
  std::set<std::string> chosen;
  for (const std::string& address : wanted) {
    int at = paths.Find(address);
    if (at < 0 || !host.pci[at].is_accelerator()) {
      std::string known;
      for (const std::string& a : all) known += (known.empty() ? "" : ", ") + ShortAddress(a);
      throw InputError("command line", "--gpus",
                       "'" + address + "' is not an accelerator of this host",
                       known.empty() ? "the host has no accelerators"
                                     : "accelerators: " + known);
    }
    chosen.insert(host.pci[at].address);
  }
  return {chosen.begin(), chosen.end()};
}

// One FabricNic per RDMA port, with the index of its PCI function (-1 when not in the tree).
struct NicSource {
  FabricNic nic;
  int pci = -1;
};

std::vector<NicSource> CollectNics(const topology::HostTopology& host,
                                   const PathClassifier& paths,
                                   const std::vector<NicPort>& ports,
                                   std::vector<std::string>* notes) {
  std::vector<NicSource> out;
  auto from_device = [&](int at, const std::string& rdma, int k) {
    const topology::PciDevice& dev = host.pci[at];
    NicSource src;
    src.pci = at;
    src.nic.pci_address = dev.address;
    src.nic.rdma_device = rdma;
    src.nic.numa_node = dev.numa_node;
    src.nic.is_vf = dev.is_vf();
    if (k < static_cast<int>(dev.netdevs.size())) src.nic.netdev = dev.netdevs[k];
    return src;
  };
  if (ports.empty()) {
    for (size_t i = 0; i < host.pci.size(); ++i) {
      const auto& devs = host.pci[i].rdma_devices;
      for (size_t k = 0; k < devs.size(); ++k) {
        out.push_back(from_device(static_cast<int>(i), devs[k], static_cast<int>(k)));
      }
    }
    return out;
  }
  std::set<std::string> seen;  // rdma devices that have a port
  for (const NicPort& port : ports) {
    int at = port.pci_address.empty() ? -1 : paths.Find(port.pci_address);
    if (at < 0) {  // no address: find the device by name
      for (size_t i = 0; i < host.pci.size() && at < 0; ++i) {
        const auto& devs = host.pci[i].rdma_devices;
        if (std::find(devs.begin(), devs.end(), port.rdma_device) != devs.end()) {
          at = static_cast<int>(i);
        }
      }
    }
    if (at < 0) {
      notes->push_back("RDMA device " + port.rdma_device + " (" +
                       (port.pci_address.empty() ? "no PCI address" : port.pci_address) +
                       ") is not in the topology: ignored");
      continue;
    }
    seen.insert(port.rdma_device);
    const auto& devs = host.pci[at].rdma_devices;
    int k = static_cast<int>(std::find(devs.begin(), devs.end(), port.rdma_device) - devs.begin());
    NicSource src = from_device(at, port.rdma_device, k);
    src.nic.port = port.port;
    if (!port.netdev.empty()) src.nic.netdev = port.netdev;
    src.nic.link_layer = port.link_layer;
    src.nic.state = port.state;
    src.nic.rate_gbps = port.rate_gbps;
    src.nic.is_vf = src.nic.is_vf || !port.physfn.empty();
    out.push_back(std::move(src));
  }
  for (size_t i = 0; i < host.pci.size(); ++i) {
    const auto& devs = host.pci[i].rdma_devices;
    for (size_t k = 0; k < devs.size(); ++k) {
      if (seen.count(devs[k])) continue;
      NicSource src = from_device(static_cast<int>(i), devs[k], static_cast<int>(k));
      src.nic.excluded = "not in sys/class/infiniband (RDMA driver not loaded?)";
      out.push_back(std::move(src));
    }
  }
  return out;
}

bool MatchesExclude(const FabricNic& nic, const std::string& entry) {
  if (entry.empty()) return false;
  return entry == nic.rdma_device || entry == nic.rdma_device + ":" + std::to_string(nic.port) ||
         (!nic.netdev.empty() && entry == nic.netdev) ||
         CanonicalPciAddress(entry) == nic.pci_address;
}

// The exclusion rules, in order; each fills `excluded` of NICs it rejects.
void ApplyExclusions(const topology::HostTopology& host, const PathClassifier& paths,
                     const std::vector<std::string>& all_gpus, const PairingOptions& options,
                     std::vector<NicSource>* nics, std::vector<std::string>* notes) {
  auto usable = [](const NicSource& s) { return s.nic.excluded.empty(); };
  for (NicSource& s : *nics) {
    FabricNic& nic = s.nic;
    if (!usable(s)) continue;
    if (nic.is_vf && !options.include_vfs) {
      std::string pf = host.pci[s.pci].physfn;
      const topology::PciDevice* pf_dev = pf.empty() ? nullptr : host.FindPci(pf);
      if (pf_dev && !pf_dev->rdma_devices.empty()) pf = pf_dev->rdma_devices[0];
      nic.excluded = "virtual function" + (pf.empty() ? std::string() : " of " + pf) +
                     " (--include-vfs uses VFs)";
      continue;
    }
    for (const std::string& entry : options.exclude) {
      if (MatchesExclude(nic, entry)) {
        nic.excluded = "excluded by --exclude " + entry;
        break;
      }
    }
    if (!usable(s)) continue;
    if (!nic.state.empty() && nic.state != "ACTIVE") nic.excluded = "port " + nic.state;
  }

  std::string wanted = NormalizeLinkLayer(options.link_layer);
  if (!wanted.empty()) {
    for (NicSource& s : *nics) {
      if (usable(s) && !s.nic.link_layer.empty() && s.nic.link_layer != wanted) {
        s.nic.excluded = "link layer " + s.nic.link_layer + " (want " + wanted + ")";
      }
    }
  }

  if (!options.keep_unswitched) {
    std::vector<int> gpu_index;
    for (const std::string& g : all_gpus) gpu_index.push_back(paths.Find(g));
    std::vector<char> switched(nics->size(), 0);
    bool any = false;
    for (size_t n = 0; n < nics->size(); ++n) {
      if (!usable((*nics)[n])) continue;
      for (int g : gpu_index) {
        if (paths.Classify(g, (*nics)[n].pci).type <= PathType::kPxb) switched[n] = 1;
      }
      any = any || switched[n];
    }
    std::string names;
    for (size_t n = 0; any && n < nics->size(); ++n) {
      if (!usable((*nics)[n]) || switched[n]) continue;
      (*nics)[n].nic.excluded =
          "storage/management NIC: shares no PCIe switch with an accelerator while others do";
      names += (names.empty() ? "" : ", ") + NicName((*nics)[n].nic);
    }
    if (!names.empty()) {
      notes->push_back("NICs outside the accelerators' PCIe switches left out as storage/"
                       "management: " + names + " (--keep-unswitched uses them)");
    }
  }

  if (wanted.empty()) {
    std::map<std::string, int> count;
    for (const NicSource& s : *nics) {
      if (usable(s) && !s.nic.link_layer.empty()) ++count[s.nic.link_layer];
    }
    if (count.size() > 1) {
      // NCCL refuses to mix link layers; the majority wins, InfiniBand on a tie.
      wanted = count.begin()->first;
      for (const auto& [layer, c] : count) {
        if (c > count[wanted] || (c == count[wanted] && layer == "InfiniBand")) wanted = layer;
      }
      for (NicSource& s : *nics) {
        if (usable(s) && !s.nic.link_layer.empty() && s.nic.link_layer != wanted) {
          s.nic.excluded = "link layer " + s.nic.link_layer + " (want " + wanted + ")";
        }
      }
      notes->push_back("NICs of several link layers: using " + wanted +
                       " ones (NCCL cannot mix them; --link-layer chooses)");
    }
  }
}

}  // namespace

std::vector<const FabricNic*> Fabric::UsedNics() const {
  std::vector<char> used(nics.size(), 0);
  for (const GpuNicPair& p : pairs) {
    if (p.nic >= 0 && p.nic < static_cast<int>(nics.size())) used[p.nic] = 1;
  }
  std::vector<const FabricNic*> out;
  for (size_t i = 0; i < nics.size(); ++i) {
    if (used[i]) out.push_back(&nics[i]);
  }
  return out;
}

Fabric PairGpusWithNics(const topology::HostTopology& host, const std::vector<NicPort>& ports,
                        const PairingOptions& options) {
  PathClassifier paths(host);
  Fabric fabric;

  std::vector<std::string> all_gpus;
  for (const topology::PciDevice& dev : host.pci) {
    if (dev.is_accelerator()) all_gpus.push_back(dev.address);
  }
  std::sort(all_gpus.begin(), all_gpus.end());
  fabric.gpus = SelectGpus(host, paths, all_gpus, options.gpus);

  std::vector<NicSource> nics = CollectNics(host, paths, ports, &fabric.notes);
  std::stable_sort(nics.begin(), nics.end(), [](const NicSource& a, const NicSource& b) {
    if (a.nic.pci_address != b.nic.pci_address) return a.nic.pci_address < b.nic.pci_address;
    return a.nic.port < b.nic.port;
  });
  ApplyExclusions(host, paths, all_gpus, options, &nics, &fabric.notes);

  std::vector<int> gpu_pci;
  for (const std::string& g : fabric.gpus) gpu_pci.push_back(paths.Find(g));
  std::vector<int> usable;  // indexes into nics
  for (size_t n = 0; n < nics.size(); ++n) {
    if (nics[n].nic.excluded.empty()) usable.push_back(static_cast<int>(n));
  }

  // Costs of every (GPU, usable NIC) pair, then the exact assignment.
  size_t G = fabric.gpus.size(), N = usable.size();
  std::vector<PairCost> costs(G * N);
  for (size_t g = 0; g < G; ++g) {
    for (size_t n = 0; n < N; ++n) {
      PathInfo path = paths.Classify(gpu_pci[g], nics[usable[n]].pci);
      costs[g * N + n] = PairCost{static_cast<int>(path.type), path.bandwidth_gbs, path.hops,
                                  static_cast<int>(n)};
    }
  }
  std::vector<int> assignment = AssignWithCapacity(G, N, costs);

  for (size_t g = 0; g < G; ++g) {
    GpuNicPair pair;
    pair.gpu_address = fabric.gpus[g];
    pair.gpu_index = static_cast<int>(
        std::lower_bound(all_gpus.begin(), all_gpus.end(), fabric.gpus[g]) - all_gpus.begin());
    const topology::PciDevice& dev = host.pci[gpu_pci[g]];
    pair.numa_node = dev.numa_node;
    if (!assignment.empty() && assignment[g] >= 0) {
      int n = usable[assignment[g]];
      pair.nic = n;
      pair.path = paths.Classify(gpu_pci[g], nics[n].pci);
    }
    fabric.pairs.push_back(pair);
  }

  for (NicSource& s : nics) fabric.nics.push_back(std::move(s.nic));

  // The matrix: GPUs first, then every NIC port.
  std::vector<int> ends = gpu_pci;
  for (const NicSource& s : nics) ends.push_back(s.pci);
  size_t E = ends.size();
  fabric.matrix.resize(E * E);
  for (size_t i = 0; i < E; ++i) {
    for (size_t j = 0; j < E; ++j) {
      fabric.matrix[i * E + j] = j < i ? fabric.matrix[j * E + i] : paths.Classify(ends[i], ends[j]);
    }
  }

  // Notes.
  if (all_gpus.empty()) {
    fabric.notes.push_back("no accelerators (GPUs, HPUs) in the topology: nothing to pair");
  }
  if (G > 0 && N == 0) {
    fabric.notes.push_back(
        fabric.nics.empty()
            ? "no RDMA NIC found: GPUs are not paired (inter-node traffic would use TCP sockets)"
            : "no usable RDMA NIC: all " + std::to_string(fabric.nics.size()) +
                  " ports are excluded (see the reasons)");
  }
  if (N > 0 && N < G) {
    size_t cap = (G + N - 1) / N;
    fabric.notes.push_back(std::to_string(N) + (N == 1 ? " NIC for " : " NICs for ") +
                           std::to_string(G) +
                           " GPUs: each NIC serves up to " + std::to_string(cap) + " GPUs");
  }
  std::string far;
  for (const GpuNicPair& p : fabric.pairs) {
    if (p.nic < 0) continue;
    if (p.path.numa_unknown) {
      fabric.notes.push_back("GPU " + p.gpu_address +
                             ": NUMA node unknown, path to NICs treated as SYS");
    }
    if (p.path.type > PathType::kPxb) {
      far += (far.empty() ? "" : ", ") + ShortAddress(p.gpu_address) + "->" +
             NicName(fabric.nics[p.nic]) + " " + PathTypeName(p.path.type);
    }
  }
  if (!far.empty()) {
    fabric.notes.push_back("beyond NCCL's default GPUDirect RDMA level PXB (GDR off unless "
                           "NCCL_NET_GDR_LEVEL allows it): " + far);
  }
  return fabric;
}

}  // namespace accel::fabric
