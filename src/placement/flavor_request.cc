// BuildRequest: a flavor's extra specs -> PlacementRequest, following Nova's
// numa_get_constraints (nova/virt/hardware.py) for a flavor booted without image properties.
// The order of checks is Nova's, so that a flavor with several problems reports the one Nova
// would report first.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/strings.h"
#include "placement/flavor.h"
#include "placement/flavor_cpu_topology.h"
#include "placement/flavor_keys.h"
#include "placement/flavor_page_size.h"

namespace accel::placement {

namespace {

constexpr int kMaxGuestNumaNodes = 128;  // Nova's ImageMetaProps.NUMA_NODES_MAX
std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// Nova strips spaces and tabs around extra-spec values.
std::string TrimSpec(std::string_view s) { return std::string(Trim(s, " \t")); }

// The flavor's extra specs by key, after the checks every key gets (shape, duplicates, known hw:
// keys, no empty hw: values). Fail() throws an InputError naming the key and the Nova exception.
class Specs {
 public:
  Specs(const Flavor& flavor, const std::string& where) : where_(where) {
    for (const auto& [key, value] : flavor.extra_specs) {
      std::string problem = ExtraSpecShapeProblem(key, value);
      if (!problem.empty()) Fail(key, problem, "");
      std::string hint;
      if (ClassifySpecKey(key, &problem, &hint) == SpecKeyKind::kRefused) {
        throw InputError(where_, "extra_specs." + key, problem, hint);
      }
      if (!specs_.emplace(key, value).second) Fail(key, "is given twice", "", "keep one value");
      bool checked = key.rfind("hw:", 0) == 0 || key == "pci_passthrough:alias";
      if (checked && TrimSpec(value).empty())
        Fail(key, "has an empty value", "", "give a value or remove the key");
    }
  }

  const std::string* Get(const std::string& key) const {
    auto it = specs_.find(key);
    return it == specs_.end() ? nullptr : &it->second;
  }

  const std::map<std::string, std::string>& all() const { return specs_; }

  /// problem: what is wrong; nova: the Nova exception class ("" when none); hint: the fix.
  [[noreturn]] void Fail(const std::string& key, const std::string& problem, const std::string& nova,
                         const std::string& hint = "") const {
    std::string full_hint = hint;
    if (!nova.empty()) full_hint += (full_hint.empty() ? "" : "; ") + std::string("Nova: ") + nova;
    throw InputError(where_, key.empty() ? "extra_specs" : "extra_specs." + key, problem, full_hint);
  }

 private:
  const std::string& where_;
  std::map<std::string, std::string> specs_;
};

// ---- small value parsers ----

// Python int() on a spec value: optional spaces and sign, decimal digits. Returns false on
// anything else or a value outside [lo, hi].
bool ParseInt(std::string_view text, long long lo, long long hi, long long* out) {
  std::string s = TrimSpec(text);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size() || s.size() - i > 12) return false;
  long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = negative ? -v : v;
  return *out >= lo && *out <= hi;
}

// oslo strutils.bool_from_string, strict.
std::optional<bool> ParseBool(std::string_view text) {
  std::string s = TrimSpec(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "t", "true", "on", "y", "yes"})
    if (s == t) return true;
  for (const char* f : {"0", "f", "false", "off", "n", "no"})
    if (s == f) return false;
  return std::nullopt;
}

// A Nova CPU spec; a mask starting with '^' is relative to all vCPUs, as Nova prepends
// "0-(vcpus-1),". Returns false and sets *error on a malformed spec.
bool ParseVcpuSpec(std::string_view text, int vcpus, bool mask, CpuSet* out, std::string* error) {
  std::string spec(text);
  if (mask && !TrimSpec(spec).empty() && TrimSpec(spec)[0] == '^') {
    spec = "0-" + std::to_string(vcpus - 1) + "," + spec;
  }
  return CpuSet::Parse(spec, out, error);
}

CpuSet AllVcpus(int vcpus) {
  CpuSet all;
  for (int v = 0; v < vcpus; ++v) all.Add(v);
  return all;
}

std::string ExpectedOneOf(const char* what, std::initializer_list<const char*> names) {
  std::string s = std::string("expected one of: ");
  bool first = true;
  for (const char* n : names) {
    s += std::string(first ? "" : ", ") + n;
    first = false;
  }
  return s + " (" + what + ")";
}

// ---- the constraints, step by step as numa_get_constraints takes them ----

struct Constraints {
  std::optional<CpuPolicy> cpu_policy;        // unset = Nova's None (treated as shared)
  std::optional<ThreadPolicy> thread_policy;  // unset = Nova's None (prefer)
  std::string thread_policy_key;              // where the thread policy came from
  std::optional<EmulatorPolicy> emulator;     // unset = None (share)
  std::optional<CpuSet> realtime;             // realtime vCPUs when hw:cpu_realtime is on
  std::optional<CpuSet> dedicated_mask;       // hw:cpu_dedicated_mask, resolved
  CpuSet dedicated;                           // vCPUs pinned 1:1 (Nova's pcpus)
};

std::optional<CpuPolicy> ReadCpuPolicy(const Specs& specs) {
  const std::string* v = specs.Get("hw:cpu_policy");
  if (!v) return std::nullopt;
  for (CpuPolicy p : {CpuPolicy::kShared, CpuPolicy::kDedicated, CpuPolicy::kMixed})
    if (*v == CpuPolicyName(p)) return p;
  specs.Fail("hw:cpu_policy", Quote(*v) + " is not a CPU policy", "InvalidCPUAllocationPolicy",
             ExpectedOneOf("the CPU policies", {"shared", "dedicated", "mixed"}));
}

std::optional<ThreadPolicy> ReadThreadPolicy(const Specs& specs) {
  const std::string* v = specs.Get("hw:cpu_thread_policy");
  if (!v) return std::nullopt;
  for (ThreadPolicy p : {ThreadPolicy::kPrefer, ThreadPolicy::kIsolate, ThreadPolicy::kRequire})
    if (*v == ThreadPolicyName(p)) return p;
  specs.Fail("hw:cpu_thread_policy", Quote(*v) + " is not a CPU thread policy",
             "InvalidCPUThreadAllocationPolicy",
             ExpectedOneOf("the CPU thread policies", {"prefer", "isolate", "require"}));
}

std::optional<EmulatorPolicy> ReadEmulatorPolicy(const Specs& specs) {
  const std::string* v = specs.Get("hw:emulator_threads_policy");
  if (!v) return std::nullopt;
  for (EmulatorPolicy p : {EmulatorPolicy::kShare, EmulatorPolicy::kIsolate})
    if (*v == EmulatorPolicyName(p)) return p;
  specs.Fail("hw:emulator_threads_policy", Quote(*v) + " is not an emulator threads policy",
             "InvalidEmulatorThreadsPolicy",
             ExpectedOneOf("the emulator threads policies", {"share", "isolate"}));
}

// Nova's get_realtime_cpu_constraint. Returns the realtime vCPUs, or nullopt when realtime is off.
std::optional<CpuSet> ReadRealtime(const Specs& specs, int vcpus, bool emulator_policy_set) {
  const std::string* mask = specs.Get("hw:cpu_realtime_mask");
  CpuSet rt;
  std::string error;
  if (mask && !ParseVcpuSpec(*mask, vcpus, true, &rt, &error)) {
    specs.Fail("hw:cpu_realtime_mask", error, "RealtimeMaskNotFoundOrInvalid",
               "write the vCPUs that are not realtime as ^0-1, or the realtime ones as 2-7");
  }
  const std::string* on = specs.Get("hw:cpu_realtime");
  if (!on) return std::nullopt;
  std::optional<bool> enabled = ParseBool(*on);
  if (!enabled) {
    specs.Fail("hw:cpu_realtime", Quote(*on) + " is not a boolean", "",
               "write true or false (yes/no, on/off, 1/0 also work)");
  }
  if (!*enabled) return std::nullopt;
  CpuSet all = AllVcpus(vcpus);
  if (!mask) rt = all;
  const std::string key = mask ? "hw:cpu_realtime_mask" : "hw:cpu_realtime";
  if (rt.Empty()) {
    specs.Fail(key, "the realtime mask leaves no realtime vCPU", "RealtimeMaskNotFoundOrInvalid",
               "hw:cpu_realtime_mask lists the realtime vCPUs, or excludes the others with ^");
  }
  if (rt == all && !emulator_policy_set) {
    specs.Fail(key,
               "use of realtime CPUs requires either one or more non-realtime CPU(s) or offloaded "
               "emulator threads",
               "RealtimeMaskNotFoundOrInvalid",
               "exclude a vCPU with hw:cpu_realtime_mask: ^0, or set hw:emulator_threads_policy");
  }
  if (!rt.IsSubsetOf(all)) {
    specs.Fail(key,
               "realtime vCPUs " + rt.Minus(all).ToString() + " are not vCPUs of the flavor (0-" +
                   std::to_string(vcpus - 1) + ")",
               "RealtimeMaskNotFoundOrInvalid");
  }
  return rt;
}

const char kMixedMaskProblem[] = "a mixed instance must have at least 1 pinned vCPU and 1 unpinned vCPU";

// Nova's get_dedicated_cpu_constraint.
std::optional<CpuSet> ReadDedicatedMask(const Specs& specs, int vcpus) {
  const std::string* mask = specs.Get("hw:cpu_dedicated_mask");
  if (!mask) return std::nullopt;
  CpuSet pcpus;
  std::string error;
  if (!ParseVcpuSpec(*mask, vcpus, true, &pcpus, &error)) {
    specs.Fail("hw:cpu_dedicated_mask", error, "InvalidMixedInstanceDedicatedMask",
               "write the pinned vCPUs as 2-7, or all but the shared ones as ^0-1");
  }
  CpuSet all = AllVcpus(vcpus);
  if (pcpus.Empty() || all.Minus(pcpus).Empty()) {
    specs.Fail("hw:cpu_dedicated_mask",
               Quote(*mask) + " pins " + std::to_string(pcpus.Count()) + " of " + std::to_string(vcpus) +
                   " vCPUs; " + kMixedMaskProblem,
               "InvalidMixedInstanceDedicatedMask");
  }
  if (!pcpus.IsSubsetOf(all)) {
    specs.Fail("hw:cpu_dedicated_mask",
               "dedicated vCPUs " + pcpus.Minus(all).ToString() + " are not vCPUs of the flavor (0-" +
                   std::to_string(vcpus - 1) + ")",
               "InvalidMixedInstanceDedicatedMask");
  }
  return pcpus;
}

// The framebuffer (GB) of the GPU each NVIDIA vGPU type family runs on, by the model part of
// the type's name ("A100-10C" -> A100, 40 GB; "A100D-20C" -> the 80 GB A100): a type's share of
// its GPU is its framebuffer over this.
struct VgpuFamily {
  const char* prefix;  ///< the model part of the type name
  const char* model;   ///< the GPU model the request allows (a word of the GPU's PCI name)
  int framebuffer_gb;
};
constexpr VgpuFamily kVgpuFamilies[] = {
    {"A100", "A100", 40},  {"A100D", "A100", 80}, {"A100X", "A100", 80}, {"H100", "H100", 80},
    {"H100L", "H100", 94}, {"H100XM", "H100", 80}, {"H200", "H200", 141}, {"H200X", "H200", 141},
    {"B200", "B200", 180}, {"L40S", "L40S", 48},  {"L40", "L40", 48},    {"L4", "L4", 24},
    {"A40", "A40", 48},    {"A30", "A30", 24},    {"A10", "A10", 24},    {"A16", "A16", 16},
    {"A2", "A2", 16},      {"T4", "T4", 16},      {"V100", "V100", 16},  {"V100D", "V100", 32},
    {"V100X", "V100", 16}, {"V100L", "V100", 16}, {"V100S", "V100S", 32}, {"RTX6000", "RTX6000", 24},
    {"RTX8000", "RTX8000", 48}};

// resources[N]:VGPU with accel:vgpu_type (an NVIDIA vGPU type such as "A100-10C", optionally
// prefixed "GRID " or "NVIDIA "): one share of a GPU of the type's model, its framebuffer's
// fraction of the GPU's. Nova gives an instance one vGPU.
std::optional<GpuRequest> ReadVgpu(const Specs& specs) {
  std::string key;
  long long count = 0;
  std::string problem, hint;
  for (const auto& [k, value] : specs.all()) {
    if (k.size() <= 5 || k.compare(k.size() - 5, 5, ":VGPU") != 0 || k.rfind("resources", 0) != 0) continue;
    long long n = 0;
    if (!ParseInt(value, 0, 64, &n)) specs.Fail(k, Quote(value) + " is not a number of vGPUs", "", "write resources:VGPU: \"1\"");
    count += n;
    if (n > 0) key = k;
  }
  const std::string* type = specs.Get("accel:vgpu_type");
  if (count == 0) {
    if (type) specs.Fail("accel:vgpu_type", "names a vGPU type but the flavor asks for no vGPU", "",
                         "add resources:VGPU: \"1\", or remove accel:vgpu_type");
    return std::nullopt;
  }
  if (count > 1) specs.Fail(key, "asks for " + std::to_string(count) + " vGPUs", "", "Nova gives an instance one vGPU: write 1");
  const std::string hint_type = "name the NVIDIA vGPU type with accel:vgpu_type, e.g. A100-10C or H100-20C (MODEL-<framebuffer GB><series>)";
  if (!type) specs.Fail(key, "asks for a vGPU without its type, so its size is unknown", "", hint_type);
  std::string t = TrimSpec(*type);
  for (const char* prefix : {"GRID ", "NVIDIA "})
    if (t.rfind(prefix, 0) == 0) t = t.substr(std::string(prefix).size());
  const size_t dash = t.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 2 > t.size())
    specs.Fail("accel:vgpu_type", Quote(*type) + " is not a vGPU type name", "", hint_type);
  const std::string family = t.substr(0, dash);
  size_t digits = dash + 1;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  if (digits == dash + 1 || digits + 1 != t.size() || std::string("CQBA").find(t[digits]) == std::string::npos)
    specs.Fail("accel:vgpu_type", Quote(*type) + " is not MODEL-<framebuffer GB><C|Q|B|A>", "", hint_type);
  const int gb = std::stoi(t.substr(dash + 1, digits - dash - 1));
  for (const VgpuFamily& f : kVgpuFamilies) {
    if (family != f.prefix) continue;
    if (gb < 1 || gb > f.framebuffer_gb)
      specs.Fail("accel:vgpu_type", Quote(*type) + ": " + std::to_string(gb) + " GB is more than the " + f.prefix +
                                        "'s " + std::to_string(f.framebuffer_gb) + " GB", "", hint_type);
    GpuRequest g;
    g.count = 1;
    g.milli = static_cast<int>(static_cast<long long>(gb) * 1000 / f.framebuffer_gb);
    if (g.milli < 1) g.milli = 1;
    g.models = {f.model};
    return g;
  }
  std::string known;
  for (const VgpuFamily& f : kVgpuFamilies) known += (known.empty() ? "" : ", ") + std::string(f.prefix);
  specs.Fail("accel:vgpu_type", Quote(*type) + ": accel does not know the framebuffer of " + family, "",
             "known families: " + known);
}

// resources[N]:PCPU / resources[N]:VCPU (Nova's explicit Placement resource requests).
void ApplyCpuResources(const Specs& specs, int vcpus, Constraints* c) {
  long long requested_vcpu = 0, requested_pcpu = 0;
  std::string problem, hint, pcpu_key, vcpu_key;
  for (const auto& [key, value] : specs.all()) {
    bool pcpu = key.size() > 5 && key.compare(key.size() - 5, 5, ":PCPU") == 0;
    bool vcpu = key.size() > 5 && key.compare(key.size() - 5, 5, ":VCPU") == 0;
    if ((!pcpu && !vcpu) || key.rfind("resources", 0) != 0 ||
        ClassifySpecKey(key, &problem, &hint) != SpecKeyKind::kInterpreted) {
      continue;
    }
    long long n = 0;
    if (!ParseInt(value, 0, kMaxFlavorVcpus, &n)) {
      specs.Fail(key, Quote(value) + " is not a whole number of CPUs", "", "write e.g. " + key + ": \"4\"");
    }
    (pcpu ? requested_pcpu : requested_vcpu) += n;
    if (n > 0) (pcpu ? pcpu_key : vcpu_key) = key;
  }
  if (c->cpu_policy && (requested_vcpu || requested_pcpu)) {
    specs.Fail(requested_pcpu ? pcpu_key : vcpu_key,
               "it is not possible to use the 'resources:VCPU' or 'resources:PCPU' extra specs in "
               "combination with the 'hw:cpu_policy' extra spec",
               "InvalidRequest", "use one or the other");
  }
  if (requested_vcpu && requested_pcpu) {
    specs.Fail(pcpu_key, "it is not possible to specify both 'resources:VCPU' and 'resources:PCPU'",
               "InvalidRequest", "use one or the other");
  }
  if (requested_pcpu) {
    bool isolate = c->emulator == EmulatorPolicy::kIsolate;
    long long want = vcpus + (isolate ? 1 : 0);
    if (requested_pcpu != want) {
      specs.Fail(pcpu_key,
                 "requests " + std::to_string(requested_pcpu) + " PCPUs but the flavor needs exactly " +
                     std::to_string(want) + " (flavor vcpus" +
                     (isolate ? " + 1 for the isolated emulator threads)" : ")"),
                 "InvalidRequest");
    }
    c->cpu_policy = CpuPolicy::kDedicated;
  }
  if (requested_vcpu) c->cpu_policy = CpuPolicy::kShared;
}

// trait[N]:HW_CPU_HYPERTHREADING=forbidden|required stands for thread policy isolate|require.
void ApplyHyperthreadingTrait(const Specs& specs, Constraints* c) {
  std::string trait_key, trait_value;
  std::string problem, hint;
  for (const auto& [key, value] : specs.all()) {
    if (key.rfind("trait", 0) != 0 || key.find(":HW_CPU_HYPERTHREADING") == std::string::npos ||
        ClassifySpecKey(key, &problem, &hint) != SpecKeyKind::kInterpreted) {
      continue;
    }
    if (value != "required" && value != "forbidden") {
      specs.Fail(key, Quote(value) + " is not a trait requirement", "", "write required or forbidden");
    }
    if (!trait_key.empty() && value != trait_value) {
      specs.Fail(key, "says " + value + " but " + trait_key + " says " + trait_value, "InvalidRequest");
    }
    trait_key = key;
    trait_value = value;
  }
  if (trait_key.empty()) return;
  if (c->thread_policy) {
    specs.Fail(trait_key,
               "it is not possible to use the 'trait:HW_CPU_HYPERTHREADING' extra spec in combination "
               "with the 'hw:cpu_thread_policy' extra spec",
               "InvalidRequest", "use one or the other");
  }
  c->thread_policy = trait_value == "forbidden" ? ThreadPolicy::kIsolate : ThreadPolicy::kRequire;
  c->thread_policy_key = trait_key;
}

// Nova's sanity checks of the policies against each other; fills c->dedicated.
void CheckPolicies(const Specs& specs, int vcpus, Constraints* c) {
  CpuPolicy policy = c->cpu_policy.value_or(CpuPolicy::kShared);
  if (policy == CpuPolicy::kShared) {
    if (c->thread_policy) {
      specs.Fail(c->thread_policy_key,
                 "cannot set a CPU thread pinning policy without a dedicated or mixed CPU policy",
                 "CPUThreadPolicyConfigurationInvalid", "add hw:cpu_policy: dedicated");
    }
    if (c->emulator == EmulatorPolicy::kIsolate) {
      specs.Fail("hw:emulator_threads_policy",
                 "an isolated CPU emulator threads option requires a dedicated or mixed CPU policy",
                 "BadRequirementEmulatorThreadsPolicy", "add hw:cpu_policy: dedicated");
    }
    if (c->dedicated_mask) {
      specs.Fail("hw:cpu_dedicated_mask", "cannot be given without the 'mixed' CPU policy",
                 "RequiredMixedInstancePolicy", "add hw:cpu_policy: mixed");
    }
    if (c->realtime) {
      specs.Fail("hw:cpu_realtime", "cannot set a realtime policy without a dedicated or mixed CPU policy",
                 "RealtimeConfigurationInvalid", "add hw:cpu_policy: dedicated");
    }
    return;
  }
  if (policy == CpuPolicy::kDedicated) {
    if (c->dedicated_mask) {
      specs.Fail("hw:cpu_dedicated_mask", "cannot be given without the 'mixed' CPU policy",
                 "RequiredMixedInstancePolicy",
                 "under 'dedicated' every vCPU is pinned; use hw:cpu_policy: mixed");
    }
    c->dedicated = AllVcpus(vcpus);
    return;
  }
  // mixed
  if (c->realtime && c->dedicated_mask) {
    specs.Fail("hw:cpu_dedicated_mask", "cannot be given together with hw:cpu_realtime_mask",
               "RequiredMixedOrRealtimeCPUMask", "use one or the other");
  }
  if (!c->realtime && !c->dedicated_mask) {
    specs.Fail("hw:cpu_policy",
               "the 'mixed' CPU policy needs either 'hw:cpu_dedicated_mask' or 'hw:cpu_realtime_mask'",
               "RequiredMixedOrRealtimeCPUMask", "e.g. hw:cpu_dedicated_mask: ^0-1 pins all but vCPUs 0-1");
  }
  c->dedicated = c->dedicated_mask ? *c->dedicated_mask : *c->realtime;
  // Nova checks this only for hw:cpu_dedicated_mask; a realtime mask covering every vCPU would
  // leave a mixed guest without shared vCPUs as well.
  if (AllVcpus(vcpus).Minus(c->dedicated).Empty()) {
    specs.Fail(specs.Get("hw:cpu_realtime_mask") ? "hw:cpu_realtime_mask" : "hw:cpu_realtime",
               std::string("realtime vCPUs cover every vCPU; ") + kMixedMaskProblem,
               "InvalidMixedInstanceDedicatedMask", "leave at least one vCPU out of the realtime mask");
  }
}

// Nova's _get_numa_node_count_constraint: nullopt when hw:numa_nodes is not set.
std::optional<int> ReadNumaNodes(const Specs& specs) {
  const std::string* v = specs.Get("hw:numa_nodes");
  if (!v) return std::nullopt;
  long long n = 0;
  // strutils.is_int_like: str(int(v)) == v, so " 2", "+2" and "02" are not numbers here.
  bool int_like = ParseInt(*v, -kMaxFlavorVcpus, kMaxFlavorVcpus, &n) && std::to_string(n) == *v;
  if (!int_like || n < 1) {
    specs.Fail("hw:numa_nodes",
               "the property 'numa_nodes' cannot be " + Quote(*v) + "; it must be a number greater than 0",
               "InvalidNUMANodesNumber");
  }
  if (n > kMaxGuestNumaNodes) {
    specs.Fail("hw:numa_nodes",
               std::to_string(n) + " guest NUMA nodes are more than Nova allows (" +
                   std::to_string(kMaxGuestNumaNodes) + ")",
               "InvalidNUMANodesNumber");
  }
  return static_cast<int>(n);
}

// hw:numa_cpus.N / hw:numa_mem.N by N.
struct ManualLayout {
  std::map<int, std::string> cpus, mem;
};

ManualLayout ReadManualLayout(const Specs& specs) {
  ManualLayout m;
  for (const auto& [key, value] : specs.all()) {
    int n = NumaCellIndex(key, "hw:numa_cpus");
    if (n >= 0) m.cpus[n] = value;
    n = NumaCellIndex(key, "hw:numa_mem");
    if (n >= 0) m.mem[n] = value;
  }
  return m;
}

const char kIncompleteHint[] =
    "give both hw:numa_cpus.N and hw:numa_mem.N for every guest node N = 0 .. hw:numa_nodes-1";

// Nova's _get_numa_topology_auto.
std::vector<GuestCell> AutoCells(const Specs& specs, int nodes, int vcpus, uint64_t ram_mib,
                                 const CpuSet& dedicated) {
  if (vcpus % nodes != 0 || ram_mib % nodes != 0) {
    specs.Fail("hw:numa_nodes",
               "instance CPUs and/or memory cannot be evenly distributed across " + std::to_string(nodes) +
                   " instance NUMA nodes (" + std::to_string(vcpus) + " vCPUs, " + std::to_string(ram_mib) +
                   " MiB)",
               "ImageNUMATopologyAsymmetric",
               "choose hw:numa_nodes dividing both, or assign them explicitly with hw:numa_cpus.N and "
               "hw:numa_mem.N");
  }
  std::vector<GuestCell> cells;
  int per_cell = vcpus / nodes;
  for (int n = 0; n < nodes; ++n) {
    CpuSet cpus;
    for (int v = n * per_cell; v < (n + 1) * per_cell; ++v) cpus.Add(v);
    cells.push_back({cpus.Intersect(dedicated), cpus.Minus(dedicated), ram_mib / nodes});
  }
  return cells;
}

// Nova's _get_numa_topology_manual (after the "both families, every node" check).
std::vector<GuestCell> ManualCells(const Specs& specs, const ManualLayout& m, int nodes, int vcpus,
                                   uint64_t ram_mib, const CpuSet& dedicated) {
  std::vector<GuestCell> cells;
  CpuSet unassigned = AllVcpus(vcpus);
  uint64_t total_mib = 0;
  for (int n = 0; n < nodes; ++n) {
    const std::string cpus_key = "hw:numa_cpus." + std::to_string(n);
    const std::string mem_key = "hw:numa_mem." + std::to_string(n);
    long long mem = 0;
    if (!ParseInt(m.mem.at(n), 1, 1ll << 40, &mem)) {
      specs.Fail(mem_key, Quote(m.mem.at(n)) + " is not a memory size in MiB (a whole number >= 1)", "",
                 "hw:numa_mem.N is in MiB, e.g. 1024");
    }
    CpuSet cpus;
    std::string error;
    if (!ParseVcpuSpec(m.cpus.at(n), vcpus, false, &cpus, &error)) specs.Fail(cpus_key, error, "");
    if (cpus.Empty()) specs.Fail(cpus_key, "gives guest NUMA node " + std::to_string(n) + " no vCPU", "");
    for (int cpu : cpus.ToVector()) {
      if (cpu > vcpus - 1) {
        specs.Fail(cpus_key,
                   "CPU number " + std::to_string(cpu) + " is larger than max " + std::to_string(vcpus - 1),
                   "ImageNUMATopologyCPUOutOfRange");
      }
      if (!unassigned.Contains(cpu)) {
        specs.Fail(cpus_key, "CPU number " + std::to_string(cpu) + " is assigned to two nodes",
                   "ImageNUMATopologyCPUDuplicates");
      }
      unassigned.Remove(cpu);
    }
    cells.push_back({cpus.Intersect(dedicated), cpus.Minus(dedicated), static_cast<uint64_t>(mem)});
    total_mib += static_cast<uint64_t>(mem);
  }
  if (!unassigned.Empty()) {
    specs.Fail("hw:numa_cpus.0", "CPU number(s) " + unassigned.ToString() + " are not assigned to any node",
               "ImageNUMATopologyCPUsUnassigned",
               "every vCPU 0-" + std::to_string(vcpus - 1) + " must be in exactly one hw:numa_cpus.N");
  }
  if (total_mib != ram_mib) {
    specs.Fail("hw:numa_mem.0",
               std::to_string(total_mib) + " MiB of memory assigned, but expected " +
                   std::to_string(ram_mib) + " MiB",
               "ImageNUMATopologyMemoryOutOfRange", "hw:numa_mem.N must add up to the flavor's ram");
  }
  return cells;
}

std::vector<GuestCell> BuildCells(const Specs& specs, std::optional<int> numa_nodes, int vcpus,
                                  uint64_t ram_mib, const CpuSet& dedicated) {
  int nodes = numa_nodes.value_or(1);
  ManualLayout m = ReadManualLayout(specs);
  for (const auto* family : {&m.cpus, &m.mem}) {
    for (const auto& [n, value] : *family) {
      if (n >= nodes) {
        std::string key = (family == &m.cpus ? "hw:numa_cpus." : "hw:numa_mem.") + std::to_string(n);
        specs.Fail(key,
                   "names guest NUMA node " + std::to_string(n) + " but the guest has " +
                       std::to_string(nodes) + " (hw:numa_nodes" + (numa_nodes ? "" : " unset, so 1") + ")",
                   "ImageNUMATopologyIncomplete", "guest nodes are numbered 0 .. hw:numa_nodes-1");
      }
    }
  }
  if (m.cpus.empty() && m.mem.empty()) return AutoCells(specs, nodes, vcpus, ram_mib, dedicated);
  for (int n = 0; n < nodes; ++n) {
    if (!m.cpus.count(n)) {
      specs.Fail("hw:numa_cpus." + std::to_string(n),
                 "is missing; CPU and memory allocation must be provided for "
                 "all NUMA nodes",
                 "ImageNUMATopologyIncomplete", kIncompleteHint);
    }
    if (!m.mem.count(n)) {
      specs.Fail("hw:numa_mem." + std::to_string(n),
                 "is missing; CPU and memory allocation must be provided for "
                 "all NUMA nodes",
                 "ImageNUMATopologyIncomplete", kIncompleteHint);
    }
  }
  return ManualCells(specs, m, nodes, vcpus, ram_mib, dedicated);
}

PageSizeRequest ReadPageSize(const Specs& specs, const std::string& where) {
  const std::string* v = specs.Get("hw:mem_page_size");
  if (!v) return {};
  return ParsePageSize(*v, where, "extra_specs.hw:mem_page_size");
}

// pci_passthrough:alias "name:count[,name:count]" -> PCI requests (Nova's
// _translate_alias_to_requests), with hw:pci_numa_affinity_policy overriding each alias's policy.
std::vector<PciRequest> ReadPciRequests(const Specs& specs, const PciAliasTable& aliases) {
  std::optional<PciNumaPolicy> override_policy;
  if (const std::string* v = specs.Get("hw:pci_numa_affinity_policy")) {
    for (PciNumaPolicy p : {PciNumaPolicy::kRequired, PciNumaPolicy::kLegacy, PciNumaPolicy::kPreferred,
                            PciNumaPolicy::kSocket}) {
      if (*v == PciNumaPolicyName(p)) override_policy = p;
    }
    if (!override_policy) {
      specs.Fail("hw:pci_numa_affinity_policy", "invalid PCI NUMA affinity policy " + Quote(*v),
                 "InvalidPCINUMAAffinity",
                 ExpectedOneOf("the policies", {"required", "legacy", "preferred", "socket"}));
    }
  }
  const std::string* spec = specs.Get("pci_passthrough:alias");
  if (!spec) return {};
  const std::string key = "pci_passthrough:alias";
  std::vector<PciRequest> requests;
  size_t pos = 0;
  while (pos <= spec->size()) {
    size_t comma = std::min(spec->find(',', pos), spec->size());
    std::string item = spec->substr(pos, comma - pos);
    pos = comma + 1;
    size_t colon = item.find(':');
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos) {
      specs.Fail(key, Quote(item) + " is not name:count", "", "write e.g. h100:2 or h100:1,cx7-vf:2");
    }
    std::string name = TrimSpec(item.substr(0, colon));
    if (name.empty()) specs.Fail(key, Quote(item) + " has no alias name before ':'", "", "write e.g. h100:2");
    long long count = 0;
    if (!ParseInt(item.substr(colon + 1), 1, 1 << 20, &count)) {
      specs.Fail(key,
                 "count " + Quote(TrimSpec(item.substr(colon + 1))) + " of alias " + Quote(name) +
                     " is not a whole number >= 1",
                 "", "write e.g. " + name + ":1");
    }
    const PciAlias* alias = aliases.Find(name);
    if (!alias) {
      std::string in = aliases.source().empty() ? "no aliases file was given" : "aliases " + aliases.source();
      std::string known;
      for (const PciAlias& a : aliases.aliases()) known += (known.empty() ? "" : ", ") + a.name;
      specs.Fail(key, "alias " + Quote(name) + " matches no entry in " + in, "PciRequestAliasNotDefined",
                 known.empty() ? "define it in the aliases file" : "known aliases: " + known);
    }
    requests.push_back(
        {name, static_cast<int>(count), alias->specs, override_policy.value_or(alias->numa_policy)});
    if (comma == spec->size()) break;
  }
  return requests;
}

// hw:cpu_sockets/cores/threads and hw:cpu_max_*: Nova's best guest topology when any is set.
GuestCpuTopology ReadGuestTopology(const Specs& specs, int vcpus) {
  GuestCpuTopology preferred, maximum;
  bool any = false;
  std::string first_max_key;
  auto read = [&](const char* key, int* out) {
    const std::string* v = specs.Get(key);
    if (!v) return;
    long long n = 0;
    if (!ParseInt(*v, 1, kMaxFlavorVcpus, &n)) {
      specs.Fail(key, Quote(*v) + " is not a whole number >= 1", "", "write e.g. 2");
    }
    *out = static_cast<int>(n);
    any = true;
  };
  read("hw:cpu_sockets", &preferred.sockets);
  read("hw:cpu_cores", &preferred.cores);
  read("hw:cpu_threads", &preferred.threads);
  for (const char* key : {"hw:cpu_max_sockets", "hw:cpu_max_cores", "hw:cpu_max_threads"})
    if (specs.Get(key) && first_max_key.empty()) first_max_key = key;
  read("hw:cpu_max_sockets", &maximum.sockets);
  read("hw:cpu_max_cores", &maximum.cores);
  read("hw:cpu_max_threads", &maximum.threads);
  if (!any) return {};
  std::optional<GuestCpuTopology> best = BestGuestCpuTopology(vcpus, preferred, maximum);
  if (!best) {
    auto limit = [](int v) { return std::to_string(v ? v : 65536); };
    specs.Fail(
        first_max_key,
        "requested vCPU limits " + limit(maximum.sockets) + ":" + limit(maximum.cores) + ":" +
            limit(maximum.threads) + " (sockets:cores:threads) are impossible to satisfy for vcpus count " +
            std::to_string(vcpus),
        "ImageVCPULimitsRangeImpossible", "raise hw:cpu_max_* so that sockets*cores*threads can equal vcpus");
  }
  return *best;
}

void CheckFlavorBasics(const Flavor& flavor, const std::string& where) {
  if (flavor.name.empty()) throw InputError(where, "name", "is empty", "every flavor needs a name");
  if (flavor.vcpus < 1 || flavor.vcpus > kMaxFlavorVcpus) {
    throw InputError(where, "vcpus",
                     std::to_string(flavor.vcpus) + " is not between 1 and " + std::to_string(kMaxFlavorVcpus));
  }
  if (flavor.ram_mib < 1 || flavor.ram_mib > (uint64_t{1} << 40)) {
    throw InputError(where, "ram", std::to_string(flavor.ram_mib) + " MiB is not between 1 MiB and 1 EiB");
  }
}

}  // namespace

PlacementRequest BuildRequest(const Flavor& flavor, const PciAliasTable& aliases, const std::string& where) {
  CheckFlavorBasics(flavor, where);
  Specs specs(flavor, where);
  const int vcpus = flavor.vcpus;

  Constraints c;
  c.cpu_policy = ReadCpuPolicy(specs);
  c.thread_policy = ReadThreadPolicy(specs);
  c.thread_policy_key = "hw:cpu_thread_policy";
  c.emulator = ReadEmulatorPolicy(specs);
  c.realtime = ReadRealtime(specs, vcpus, c.emulator.has_value());
  c.dedicated_mask = ReadDedicatedMask(specs, vcpus);
  ApplyCpuResources(specs, vcpus, &c);
  ApplyHyperthreadingTrait(specs, &c);
  CheckPolicies(specs, vcpus, &c);

  std::optional<int> nodes = ReadNumaNodes(specs);
  PageSizeRequest page_size = ReadPageSize(specs, where);

  PlacementRequest req;
  req.flavor = flavor.name;
  req.vcpus = vcpus;
  req.memory_mib = flavor.ram_mib;
  req.cpu_policy = c.cpu_policy.value_or(CpuPolicy::kShared);
  req.thread_policy = c.thread_policy.value_or(ThreadPolicy::kPrefer);
  req.emulator_policy = c.emulator.value_or(EmulatorPolicy::kShare);
  req.page_size = page_size;

  bool has_topology =
      nodes || page_size.kind != PageSizeRequest::kNone || req.cpu_policy != CpuPolicy::kShared;
  if (has_topology) {
    req.cells = BuildCells(specs, nodes, vcpus, flavor.ram_mib, c.dedicated);
  } else {
    ManualLayout m = ReadManualLayout(specs);
    if (!m.cpus.empty() || !m.mem.empty()) {
      int n = !m.cpus.empty() ? m.cpus.begin()->first : m.mem.begin()->first;
      specs.Fail((!m.cpus.empty() ? "hw:numa_cpus." : "hw:numa_mem.") + std::to_string(n),
                 "has no effect: the flavor has no NUMA topology (Nova ignores it silently)", "",
                 "add hw:numa_nodes, or remove the hw:numa_cpus.N / hw:numa_mem.N keys");
    }
  }
  req.pci = ReadPciRequests(specs, aliases);
  req.gpu = ReadVgpu(specs);
  req.guest_topology = ReadGuestTopology(specs, vcpus);
  req.extra_specs = flavor.extra_specs;
  return req;
}

}  // namespace accel::placement
