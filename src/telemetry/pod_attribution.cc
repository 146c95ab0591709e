#include "telemetry/pod_attribution.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <unordered_map>

namespace accel::telemetry {

namespace {

using devices::Vendor;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Non-negative decimal that fits an int (nine digits at most, so no overflow check is needed).
bool ParseSmallUint(std::string_view s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

bool ParseHex(std::string_view s, size_t min_digits, size_t max_digits, unsigned* out) {
  if (s.size() < min_digits || s.size() > max_digits) return false;
  unsigned value = 0;
  for (char c : s) {
    unsigned digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return false;
    value = value * 16 + digit;
  }
  *out = value;
  return true;
}

// "[domain:]bus:device.function" -> "dddd:bb:dd.f". NVML writes an 8-digit domain, lspci and
// the AMD plugin 4 digits; some tools omit it (domain 0).
bool ParsePciAddress(std::string_view s, std::string* canonical) {
  unsigned domain = 0, bus, device, function;
  size_t last_colon = s.rfind(':');
  if (last_colon == std::string_view::npos) return false;
  std::string_view head = s.substr(0, last_colon);
  std::string_view tail = s.substr(last_colon + 1);
  size_t colon = head.find(':');
  if (colon != std::string_view::npos) {
    if (!ParseHex(head.substr(0, colon), 1, 8, &domain) || domain > 0xffff) return false;
    head = head.substr(colon + 1);
  }
  size_t dot = tail.find('.');
  if (dot == std::string_view::npos) return false;
  if (!ParseHex(head, 2, 2, &bus) || !ParseHex(tail.substr(0, dot), 2, 2, &device) ||
      !ParseHex(tail.substr(dot + 1), 1, 1, &function) || device > 0x1f || function > 7) {
    return false;
  }
  char text[16];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", domain, bus, device, function);
  *canonical = text;
  return true;
}

// "GPU-<body>" / "MIG-<body>" with a body that cannot be confused with the other forms.
bool IsUuid(std::string_view s, std::string_view prefix) {
  return StartsWith(s, prefix) && s.size() > prefix.size() &&
         s.find_first_of("/:", prefix.size()) == std::string_view::npos;
}

bool ParseLegacyMig(std::string_view id, DeviceRef* ref) {
  size_t first = id.find('/');
  if (first == std::string_view::npos) return false;
  size_t second = id.find('/', first + 1);
  if (second == std::string_view::npos) return false;
  std::string_view parent = id.substr(4, first - 4);  // after "MIG-"
  if (!IsUuid(parent, "GPU-") ||
      !ParseSmallUint(id.substr(first + 1, second - first - 1), &ref->gpu_instance_id) ||
      !ParseSmallUint(id.substr(second + 1), &ref->compute_instance_id)) {
    return false;
  }
  ref->kind = DeviceIdKind::kLegacyMig;
  ref->key = parent;
  return true;
}

// "GPU-<uuid>[::<n>]", "MIG-<uuid>[::<n>]".
bool ParseUuidForm(std::string_view id, DeviceRef* ref) {
  std::string_view base = id;
  int replica = -1;
  size_t sep = id.rfind("::");
  if (sep != std::string_view::npos) {
    if (!ParseSmallUint(id.substr(sep + 2), &replica)) return false;
    base = id.substr(0, sep);
  }
  if (IsUuid(base, "GPU-")) {
    ref->kind = replica >= 0 ? DeviceIdKind::kReplica : DeviceIdKind::kGpuUuid;
  } else if (IsUuid(base, "MIG-")) {
    ref->kind = DeviceIdKind::kMigUuid;
  } else {
    return false;
  }
  ref->key = base;
  ref->replica = replica;
  return true;
}

// "nvidia<N>", "nvidia<N>/gi<G>", "nvidia<N>/gi<G>/vgpu<V>", "nvidia<N>/vgpu<V>".
bool ParseNvidiaName(std::string_view id, DeviceRef* ref) {
  std::string_view parts[3];
  size_t count = 0;
  std::string_view rest = id.substr(6);  // after "nvidia"
  for (;;) {
    if (count == 3) return false;
    size_t slash = rest.find('/');
    parts[count++] = rest.substr(0, slash);
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (!ParseSmallUint(parts[0], &ref->index)) return false;
  size_t next = 1;
  if (next < count && StartsWith(parts[next], "gi")) {
    if (!ParseSmallUint(parts[next++].substr(2), &ref->gpu_instance_id)) return false;
  }
  if (next < count && StartsWith(parts[next], "vgpu")) {
    if (!ParseSmallUint(parts[next++].substr(4), &ref->replica)) return false;
  }
  if (next != count) return false;
  ref->kind = count == 1 ? DeviceIdKind::kDeviceName : DeviceIdKind::kGke;
  return true;
}

}  // namespace

DeviceRef ParseDeviceId(std::string_view id) {
  DeviceRef ref;
  if (StartsWith(id, "MIG-GPU-") && ParseLegacyMig(id, &ref)) return ref;
  ref = DeviceRef();
  if ((StartsWith(id, "GPU-") || StartsWith(id, "MIG-")) && ParseUuidForm(id, &ref)) return ref;
  ref = DeviceRef();
  if (StartsWith(id, "nvidia") && ParseNvidiaName(id, &ref)) return ref;
  ref = DeviceRef();
  if (ParsePciAddress(id, &ref.key)) {
    ref.kind = DeviceIdKind::kPciAddress;
    return ref;
  }
  ref = DeviceRef();
  ref.key = id;
  return ref;
}

std::optional<Vendor> ResourceVendor(std::string_view resource) {
  if (StartsWith(resource, "nvidia.com/")) return Vendor::kNvidia;
  if (StartsWith(resource, "amd.com/")) return Vendor::kAmd;
  if (StartsWith(resource, "habana.ai/")) return Vendor::kHabana;
  return std::nullopt;
}

namespace {

/// Where an ID points: a device, or one of its MIG instances, and which replica of it.
struct AttributionTarget {
  size_t device = 0;
  int mig = -1;      ///< index into DeviceState::mig; -1 for the whole device
  int replica = -1;  ///< PodRef::replica
};

// Every device key of every vendor in one hash map, keyed "<vendor><tag>:<lower-case value>" so a
// UUID, serial or index only ever matches devices of the resource's vendor.
class DeviceIndex {
 public:
  explicit DeviceIndex(const std::vector<DeviceState>& devices) : devices_(devices) {
    map_.reserve(devices.size() * 4);
    for (size_t d = 0; d < devices.size(); ++d) {
      const devices::DeviceIdentity& id = devices[d].identity;
      Add(id.vendor, 'u', id.uuid, {d, -1, -1});
      Add(id.vendor, 's', id.serial, {d, -1, -1});
      std::string pci;
      if (!ParsePciAddress(id.pci_address, &pci)) pci = id.pci_address;
      Add(id.vendor, 'p', pci, {d, -1, -1});
      Add(id.vendor, 'i', std::to_string(id.index), {d, -1, -1});
      for (size_t m = 0; m < devices[d].mig.size(); ++m) {
        Add(id.vendor, 'm', devices[d].mig[m].instance.uuid, {d, static_cast<int>(m), -1});
      }
    }
  }

  std::optional<AttributionTarget> Resolve(Vendor vendor, std::string_view id) const {
    DeviceRef ref = ParseDeviceId(id);
    if (std::optional<AttributionTarget> target = ResolveRef(vendor, ref)) {
      target->replica = ref.replica;
      return target;
    }
    // An ID that only looks like a known form may still be some plugin's serial or UUID.
    if (ref.kind != DeviceIdKind::kOpaque) return ResolveOpaque(vendor, id);
    return std::nullopt;
  }

 private:
  void Add(Vendor vendor, char tag, std::string_view value, AttributionTarget target) {
    if (!value.empty()) map_.emplace(Key(vendor, tag, value), target);  // first device wins
  }

  static std::string Key(Vendor vendor, char tag, std::string_view value) {
    std::string key;
    key.reserve(value.size() + 3);
    key += static_cast<char>('0' + static_cast<int>(vendor));
    key += tag;
    key += ':';
    for (char c : value) key += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return key;
  }

  std::optional<AttributionTarget> Find(Vendor vendor, char tag, std::string_view value) const {
    auto it = map_.find(Key(vendor, tag, value));
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  std::optional<AttributionTarget> FindMig(std::optional<AttributionTarget> device, int gpu_instance_id) const {
    if (!device) return std::nullopt;
    if (gpu_instance_id < 0) return device;
    const std::vector<MigState>& mig = devices_[device->device].mig;
    for (size_t m = 0; m < mig.size(); ++m) {
      if (static_cast<int>(mig[m].instance.gpu_instance_id) == gpu_instance_id) {
        return AttributionTarget{device->device, static_cast<int>(m), -1};
      }
    }
    return std::nullopt;
  }

  std::optional<AttributionTarget> ResolveRef(Vendor vendor, const DeviceRef& ref) const {
    switch (ref.kind) {
      case DeviceIdKind::kGpuUuid:
      case DeviceIdKind::kReplica: return Find(vendor, 'u', ref.key);
      case DeviceIdKind::kMigUuid: return Find(vendor, 'm', ref.key);
      case DeviceIdKind::kLegacyMig:
        return FindMig(Find(vendor, 'u', ref.key), ref.gpu_instance_id);
      case DeviceIdKind::kDeviceName:
      case DeviceIdKind::kGke:
        // "nvidia<N>" names are NVIDIA's; another vendor's plugin sending one means something else.
        if (vendor != Vendor::kNvidia) return std::nullopt;
        return FindMig(Find(vendor, 'i', std::to_string(ref.index)), ref.gpu_instance_id);
      case DeviceIdKind::kPciAddress: return Find(vendor, 'p', ref.key);
      case DeviceIdKind::kOpaque: return ResolveOpaque(vendor, ref.key);
    }
    return std::nullopt;
  }

  std::optional<AttributionTarget> ResolveOpaque(Vendor vendor, std::string_view id) const {
    for (char tag : {'s', 'u', 'm'}) {
      if (std::optional<AttributionTarget> t = Find(vendor, tag, id)) return t;
    }
    return std::nullopt;
  }

  const std::vector<DeviceState>& devices_;
  std::unordered_map<std::string, AttributionTarget> map_;
};

bool PodLess(const PodRef& a, const PodRef& b) {
  return std::tie(a.namespace_name, a.pod, a.container, a.replica, a.resource) <
         std::tie(b.namespace_name, b.pod, b.container, b.replica, b.resource);
}

bool PodEqual(const PodRef& a, const PodRef& b) {
  return std::tie(a.namespace_name, a.pod, a.container, a.replica, a.resource) ==
         std::tie(b.namespace_name, b.pod, b.container, b.replica, b.resource);
}

void SortUnique(std::vector<PodRef>* pods) {
  std::sort(pods->begin(), pods->end(), PodLess);
  pods->erase(std::unique(pods->begin(), pods->end(), PodEqual), pods->end());
}

}  // namespace

AttributionStats AttributePods(const std::vector<kube::ContainerDevices>& containers,
                               std::vector<DeviceState>* devices) {
  for (DeviceState& d : *devices) {
    d.pods.clear();
    for (MigState& m : d.mig) m.pods.clear();
  }
  AttributionStats stats;
  DeviceIndex index(*devices);
  for (const kube::ContainerDevices& c : containers) {
    std::optional<Vendor> vendor = ResourceVendor(c.resource);
    if (!vendor) {
      stats.ignored += c.device_ids.size();
      continue;
    }
    for (const std::string& id : c.device_ids) {
      std::optional<AttributionTarget> target = index.Resolve(*vendor, id);
      if (!target) {
        ++stats.unmatched;
        if (stats.unmatched_examples.size() < kMaxUnmatchedExamples) {
          stats.unmatched_examples.push_back(id);
        }
        continue;
      }
      ++stats.matched;
      DeviceState& d = (*devices)[target->device];
      std::vector<PodRef>& pods = target->mig < 0 ? d.pods : d.mig[target->mig].pods;
      pods.push_back(PodRef{c.namespace_name, c.pod, c.container, c.resource, target->replica});
    }
  }
  for (DeviceState& d : *devices) {
    SortUnique(&d.pods);
    for (MigState& m : d.mig) SortUnique(&m.pods);
  }
  return stats;
}

}  // namespace accel::telemetry
