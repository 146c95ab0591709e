#include "placement/gpu_fit.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

namespace accel::placement {

namespace {

bool EqualsIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string PciIds(uint16_t vendor_id, uint16_t device_id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%04x", vendor_id, device_id);
  return buf;
}

const MigShape* ShapeFor(const GpuRequest& ask, const topology::PciDevice& d) {
  for (const MigShape& s : ask.mig_shapes)
    if (s.vendor_id == d.vendor_id && s.device_id == d.device_id) return &s;
  return nullptr;
}

// The bits of memory slices [start, start + count); the caller keeps 0 <= start, 1 <= count and
// start + count <= 32 (a GpuSlot tracks 32 slices).
uint32_t Bits(int start, int count) { return (count == 32 ? ~uint32_t{0} : (uint32_t{1} << count) - 1) << start; }

// Why `ask` is not a request GpuChoices can answer ("" when it is): GpuRequest's own rules.
std::string MalformedAsk(const GpuRequest& ask) {
  if (ask.count < 1) return "a GPU request for " + std::to_string(ask.count) + " GPUs";
  if (ask.milli < 1 || ask.milli > 1000) return "a GPU share of " + std::to_string(ask.milli) + " thousandths is not 1..1000";
  if (ask.count > 1 && ask.milli < 1000) return "a share of a GPU (milli < 1000) is for one GPU, not " + std::to_string(ask.count);
  if (ask.count > 1 && !ask.mig_profile.empty()) return "a MIG slice is for one GPU, not " + std::to_string(ask.count);
  return "";
}

}  // namespace

std::string GpuModelOf(const topology::PciDevice& d) {
  return d.name.empty() ? PciIds(d.vendor_id, d.device_id) : d.name;
}

bool GpuModelMatches(const std::string& model, uint16_t vendor_id, uint16_t device_id,
                     const std::vector<std::string>& allowed) {
  if (allowed.empty()) return true;
  const std::string ids = PciIds(vendor_id, device_id);
  for (const std::string& a : allowed) {
    if (EqualsIgnoringCase(a, model) || EqualsIgnoringCase(a, ids)) return true;
    size_t i = 0;
    while (i < model.size()) {
      while (i < model.size() && !std::isalnum(static_cast<unsigned char>(model[i]))) ++i;
      size_t j = i;
      while (j < model.size() && std::isalnum(static_cast<unsigned char>(model[j]))) ++j;
      if (j > i && EqualsIgnoringCase(a, model.substr(i, j - i))) return true;
      i = j;
    }
  }
  return false;
}

std::vector<const topology::PciDevice*> AcceleratorsOf(const topology::HostTopology& host) {
  std::vector<const topology::PciDevice*> out;
  for (const topology::PciDevice& d : host.pci)
    if (d.is_accelerator()) out.push_back(&d);
  return out;
}

std::vector<GpuSlot> GpuSlotsOf(const std::vector<const topology::PciDevice*>& accelerators,
                                const HostUsage& usage) {
  std::vector<GpuSlot> slots(accelerators.size());
  for (size_t i = 0; i < accelerators.size(); ++i) {
    GpuSlot& s = slots[i];
    s.index = static_cast<int>(i);
    s.node = accelerators[i]->numa_node;
    if (usage.devices.empty() || !usage.devices.count(accelerators[i]->address)) continue;
    auto shared = usage.shared_gpus.find(accelerators[i]->address);
    if (shared == usage.shared_gpus.end()) {
      s.whole_held = true;
      s.free_milli = 0;
    } else {
      s.mig_slices = shared->second.mig_slices;
      s.free_milli = std::max(0, 1000 - shared->second.milli);
    }
  }
  return slots;
}

int MigMilli(int memory_slices, int gpu_slices) {
  if (gpu_slices <= 0) return 1;
  return std::max(1, memory_slices * 1000 / gpu_slices);
}

std::vector<GpuChoice> GpuChoices(const std::vector<const topology::PciDevice*>& accelerators,
                                  const std::vector<GpuSlot>& slots, const GpuRequest& ask, std::string* why) {
  std::vector<GpuChoice> out;
  if (std::string bad = MalformedAsk(ask); !bad.empty()) {
    if (why) *why = bad;
    return out;
  }
  int of_model = 0;
  auto allowed = [&](size_t i) {
    const topology::PciDevice& d = *accelerators[i];
    return GpuModelMatches(GpuModelOf(d), d.vendor_id, d.device_id, ask.models);
  };
  if (!ask.mig_profile.empty()) {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!allowed(i)) continue;
      const MigShape* shape = ShapeFor(ask, *accelerators[i]);
      if (!shape) continue;
      ++of_model;
      const GpuSlot& s = slots[i];
      if (s.whole_held || (s.mig_slices == 0 && s.free_milli < 1000)) continue;
      for (int start : shape->starts) {
        // Within the GPU's slices and the 32 that usage tracks (HostUsage refuses beyond them).
        if (start < 0 || shape->memory_slices <= 0 || start > shape->gpu_slices - shape->memory_slices ||
            start > 32 - shape->memory_slices)
          continue;
        if (s.mig_slices & Bits(start, shape->memory_slices)) continue;
        out.push_back({{static_cast<int>(i)}, start, shape->memory_slices, shape->gpu_slices});
      }
    }
    if (out.empty() && why)
      *why = of_model == 0 ? "no GPU of a model with MIG profile " + ask.mig_profile
                           : std::to_string(of_model) + " GPUs of a model with " + ask.mig_profile +
                                 ", none with room for it beside their MIG slices";
    return out;
  }
  if (ask.count == 1 && ask.milli < 1000) {
    int best_free = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!allowed(i)) continue;
      ++of_model;
      const GpuSlot& s = slots[i];
      if (s.whole_held || s.mig_slices != 0) continue;
      best_free = std::max(best_free, s.free_milli);
      if (s.free_milli >= ask.milli) out.push_back({{static_cast<int>(i)}});
    }
    if (out.empty() && why)
      *why = of_model == 0 ? "no GPU of an allowed model"
                           : std::to_string(of_model) + " GPUs of an allowed model, the most free " +
                                 std::to_string(best_free) + "/1000, needs " + std::to_string(ask.milli);
    return out;
  }
  // Whole GPUs: free ones of an allowed model, fewest NUMA nodes first.
  std::map<int, std::vector<int>> by_node;
  int free_count = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!allowed(i)) continue;
    ++of_model;
    if (slots[i].free_milli < 1000 || slots[i].mig_slices != 0 || slots[i].whole_held) continue;
    by_node[slots[i].node].push_back(static_cast<int>(i));
    ++free_count;
  }
  if (free_count < ask.count) {
    if (why)
      *why = of_model == 0 ? "no GPU of an allowed model"
                           : std::to_string(free_count) + " free whole GPUs of an allowed model, needs " +
                                 std::to_string(ask.count);
    return out;
  }
  std::vector<std::pair<int, std::vector<int>>> nodes(by_node.begin(), by_node.end());
  // A node that holds the whole request alone, the fullest such first (so bigger free groups
  // stay whole); otherwise the nodes with the most free GPUs first.
  std::stable_sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
    const bool fa = static_cast<int>(a.second.size()) >= ask.count, fb = static_cast<int>(b.second.size()) >= ask.count;
    if (fa != fb) return fa;
    if (fa) return a.second.size() < b.second.size();
    return a.second.size() > b.second.size();
  });
  GpuChoice c;
  for (const auto& [node, gpus] : nodes)
    for (int g : gpus)
      if (static_cast<int>(c.gpus.size()) < ask.count) c.gpus.push_back(g);
  std::sort(c.gpus.begin(), c.gpus.end());
  out.push_back(std::move(c));
  return out;
}

std::vector<GpuPlacement> GpuPlacementsOf(const std::vector<const topology::PciDevice*>& accelerators,
                                          const GpuChoice& choice, const GpuRequest& ask) {
  std::vector<GpuPlacement> out;
  for (int i : choice.gpus) {
    const topology::PciDevice& d = *accelerators[static_cast<size_t>(i)];
    GpuPlacement g;
    g.address = d.address;
    g.model = GpuModelOf(d);
    g.numa_node = d.numa_node;
    if (choice.mig_start >= 0) {
      g.mig_profile = ask.mig_profile;
      g.mig_start = choice.mig_start;
      g.mig_slices = choice.mig_slices;
      g.milli = MigMilli(choice.mig_slices, choice.mig_gpu_slices);
    } else {
      g.milli = ask.count == 1 ? ask.milli : 1000;
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace accel::placement
