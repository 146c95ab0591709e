#include "cluster/template.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include "kubelet/overrides.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "common/yaml_config.h"
#include "fleet/labels.h"
#include "topology/classify.h"
#include "topology/sources.h"

namespace accel::cluster {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kApiVersion = "accel.cluster/v1";
constexpr const char* kKind = "ClusterTemplate";
constexpr int kMaxCount = 100000;  // nodes per group; far beyond any cluster, a guard against typos

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// PCI vendor ids of the accelerator vendors (pci.ids): NVIDIA, AMD/ATI, Habana Labs.
constexpr uint16_t kVendorIds[] = {topology::kVendorNvidia, topology::kVendorAmd, topology::kVendorHabana};
constexpr Vendor kVendorOfId[] = {Vendor::kNvidia, Vendor::kAmd, Vendor::kHabana};

// What a group reads before the files are loaded and checked against.
struct GroupText {
  NodeGroup group;
  bool has_count = false, has_vendor = false, has_stack = false;
  std::string hypervisor;  // as written
  YAML::Node kubelet;
  bool has_network = false;
  bool has_driver = false, has_kernel_module_type = false;
};

class Loader {
 public:
  Loader(std::string where, std::string base_dir) : where_(std::move(where)), base_(std::move(base_dir)) {}

  ClusterTemplate Load(std::string_view text) {
    // LoadYamlText refuses what YAML readers disagree on or let through (duplicate keys, text
    // that is not UTF-8, alias bombs, several documents), with the line and column.
    const YAML::Node root = LoadYamlText(std::string(text), where_);
    if (root.IsNull()) Fail("", "is empty", "start from examples/cluster/ai-prod.yaml");
    t_.source = where_;
    t_.base_dir = base_;
    bool has_api = false, has_kind = false, has_metadata = false, has_spec = false;
    YamlMapReader(where_, root, "")
        .On("apiVersion", [&](const YAML::Node& v, const std::string& f) {
          const std::string s = String(v, f);
          if (s != kApiVersion) Fail(f, "is '" + s + "'", std::string("this reader reads ") + kApiVersion);
          has_api = true;
        })
        .On("kind", [&](const YAML::Node& v, const std::string& f) {
          const std::string s = String(v, f);
          if (s != kKind) Fail(f, "is '" + s + "'", std::string("write kind: ") + kKind);
          has_kind = true;
        })
        .On("metadata", [&](const YAML::Node& v, const std::string& f) {
          has_metadata = true;
          YamlMapReader(where_, v, f)
              .On("name", [&](const YAML::Node& n, const std::string& nf) { t_.name = Dns1123(n, nf, "ai-prod"); })
              .Run();
        })
        .On("spec", [&](const YAML::Node& v, const std::string& f) {
          has_spec = true;
          ReadSpec(v, f);
        })
        .Run();
    if (!root.IsMap()) Fail("", "must be a mapping", "start from examples/cluster/ai-prod.yaml");
    if (!has_api) Fail("apiVersion", "is missing", std::string("write apiVersion: ") + kApiVersion);
    if (!has_kind) Fail("kind", "is missing", std::string("write kind: ") + kKind);
    if (!has_metadata || t_.name.empty()) Fail("metadata.name", "is missing", "name the cluster, e.g. metadata: {name: ai-prod}");
    if (!has_spec) Fail("spec", "is missing", "give kubernetesVersion, flavors and nodeGroups");
    if (!has_version_) Fail("spec.kubernetesVersion", "is missing", "e.g. kubernetesVersion: v1.33.2");
    if (t_.flavor_paths.empty()) Fail("spec.flavors", "is missing", "name flavor files or directories, e.g. flavors: [flavors/]");
    if (groups_.empty()) Fail("spec.nodeGroups", "is missing or empty", "give at least one node group");
    if (t_.infrastructure.image.empty()) t_.infrastructure.image = "ubuntu-2404-kube-" + t_.kubernetes_version.ToString();
    if (t_.infrastructure.identity_secret.empty()) t_.infrastructure.identity_secret = t_.name + "-cloud-config";
    LoadFiles();
    for (size_t i = 0; i < groups_.size(); ++i) t_.groups.push_back(FinishGroup(groups_[i], Index("spec.nodeGroups", i)));
    return std::move(t_);
  }

 private:
  [[noreturn]] void Fail(const std::string& field, const std::string& what, const std::string& fix) const {
    throw InputError(where_, field, what, fix);
  }

  std::string String(const YAML::Node& v, const std::string& f) const { return YamlString(where_, v, f); }

  std::string Dns1123(const YAML::Node& v, const std::string& f, const char* example) const {
    const std::string s = String(v, f);
    if (!IsDns1123Label(s))
      Fail(f, "'" + s + "' is not a DNS-1123 label",
           std::string("use 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. ") + example);
    return s;
  }

  int Count(const YAML::Node& v, const std::string& f) const {
    const long long n = YamlInteger(where_, v, f);
    if (n < 0 || n > kMaxCount) Fail(f, std::to_string(n) + " is out of range", "use 0 to " + std::to_string(kMaxCount));
    return static_cast<int>(n);
  }

  // A path of the template, resolved against its directory.
  std::string Resolve(const std::string& p) const {
    fs::path path(p);
    if (path.is_relative() && !base_.empty()) path = fs::path(base_) / path;
    return path.lexically_normal().string();
  }

  // ---- spec ----

  void ReadSpec(const YAML::Node& node, const std::string& path) {
    YamlMapReader(where_, node, path)
        .On("kubernetesVersion", [&](const YAML::Node& v, const std::string& f) { ReadVersion(v, f); })
        .On("flavors", [&](const YAML::Node& v, const std::string& f) {
          std::vector<std::string> items = YamlStringList(where_, v, f, /*scalar_ok=*/true);
          flavor_written_ = items;
          if (items.empty()) Fail(f, "is empty", "name flavor files or directories, e.g. flavors: [flavors/]");
          for (size_t i = 0; i < items.size(); ++i) {
            if (items[i].empty()) Fail(Index(f, i), "is empty", "name a flavor file or directory");
            t_.flavor_paths.push_back(Resolve(items[i]));
          }
        })
        .On("aliases", [&](const YAML::Node& v, const std::string& f) {
          const std::string s = String(v, f);
          if (s.empty()) Fail(f, "is empty", "name the Nova [pci]alias file, or leave aliases out");
          t_.aliases_path = Resolve(s);
        })
        .On("hypervisor", [&](const YAML::Node& v, const std::string& f) { hypervisor_ = String(v, f); })
        .On("kubelet", [&](const YAML::Node& v, const std::string& f) { t_.kubelet = kubelet::ReadKubeletOverrides(v, where_, f); })
        .On("infrastructure", [&](const YAML::Node& v, const std::string& f) { ReadInfrastructure(v, f); })
        .On("operators", [&](const YAML::Node& v, const std::string& f) { ReadOperators(v, f); })
        .On("nodeGroups", [&](const YAML::Node& v, const std::string& f) {
          if (!v.IsSequence()) Fail(f, "must be a list of node groups", "e.g. nodeGroups: [{name: system, flavor: shared, count: 3, vendor: none}]");
          for (size_t i = 0; i < v.size(); ++i) groups_.push_back(ReadGroup(v[i], Index(f, i)));
        })
        .Run();
    if (!t_.kubelet.is_object()) t_.kubelet = json::object();
  }

  // A Kubernetes or OpenStack name: non-empty, no whitespace or control characters.
  std::string Name(const YAML::Node& v, const std::string& f, const char* example) const {
    const std::string s = String(v, f);
    const bool bad = s.empty() || s.size() > 253 || std::any_of(s.begin(), s.end(), [](char c) {
                       return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
                     });
    if (bad) Fail(f, "'" + s + "' is not a name", std::string("give 1-253 characters without spaces, e.g. ") + example);
    return s;
  }

  void ReadInfrastructure(const YAML::Node& node, const std::string& path) {
    Infrastructure& in = t_.infrastructure;
    YamlMapReader(where_, node, path)
        .On("namespace", [&](const YAML::Node& v, const std::string& f) { in.namespace_name = Dns1123(v, f, "default"); })
        .On("image", [&](const YAML::Node& v, const std::string& f) { in.image = Name(v, f, "ubuntu-2404-kube-v1.33.2"); })
        .On("sshKeyName", [&](const YAML::Node& v, const std::string& f) { in.ssh_key_name = Name(v, f, "ops"); })
        .On("cloudName", [&](const YAML::Node& v, const std::string& f) { in.cloud_name = Name(v, f, "openstack"); })
        .On("identitySecret", [&](const YAML::Node& v, const std::string& f) {
          in.identity_secret = Dns1123(v, f, "ai-prod-cloud-config");
        })
        .On("networks", [&](const YAML::Node& v, const std::string& f) {
          const std::vector<std::string> nets = YamlStringList(where_, v, f, /*scalar_ok=*/true);
          for (size_t i = 0; i < nets.size(); ++i) {
            if (nets[i].empty()) Fail(Index(f, i), "is empty", "name a Neutron network, e.g. k8s-nodes");
            in.networks.push_back(nets[i]);
          }
        })
        .On("failureDomain", [&](const YAML::Node& v, const std::string& f) { in.failure_domain = Name(v, f, "az-1"); })
        .Run();
  }

  void ReadOperators(const YAML::Node& node, const std::string& path) {
    Operators& ops = t_.operators;
    auto settings = [&](OperatorSettings& s, bool has_driver) {
      return [&s, has_driver, this](const YAML::Node& v, const std::string& f) {
        YamlMapReader reader(where_, v, f);
        reader.On("namespace", [&](const YAML::Node& x, const std::string& xf) { s.namespace_name = Dns1123(x, xf, "gpu-operator"); });
        if (has_driver)
          reader.On("driverVersion", [&](const YAML::Node& x, const std::string& xf) { s.driver_version = DriverVersion(x, xf); });
        reader.Run();
      };
    };
    YamlMapReader(where_, node, path)
        .On("nvidia", settings(ops.nvidia, true))
        .On("amd", settings(ops.amd, true))
        .On("habana", settings(ops.habana, true))
        .On("network", settings(ops.network, true))
        .On("accel", settings(ops.accel, false))
        .On("monitoring", settings(ops.monitoring, false))
        .Run();
  }

  // A driver version as the operators take it: digits and dots (and a branch's letters), no spaces.
  std::string DriverVersion(const YAML::Node& v, const std::string& f) const {
    const std::string s = String(v, f);
    const bool ok = !s.empty() && s.size() <= 64 && std::isalnum(static_cast<unsigned char>(s[0])) &&
                    std::all_of(s.begin(), s.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '+';
                    });
    if (!ok) Fail(f, "'" + s + "' is not a driver version", "quote it as the vendor writes it, e.g. driverVersion: \"580.95.05\"");
    return s;
  }

  void ReadVersion(const YAML::Node& v, const std::string& f) {
    const std::string s = String(v, f);
    int parts[3] = {0, 0, 0};
    size_t i = 1, part = 0;
    bool ok = s.size() >= 6 && s[0] == 'v';
    while (ok && part < 3) {
      size_t digits = 0;
      long long n = 0;
      for (; i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 6; ++i, ++digits) n = n * 10 + (s[i] - '0');
      ok = digits > 0 && !(digits > 1 && s[i - digits] == '0');
      parts[part++] = static_cast<int>(n);
      if (part < 3) ok = ok && i < s.size() && s[i++] == '.';
    }
    ok = ok && i == s.size();
    if (!ok) Fail(f, "'" + s + "' is not vMAJOR.MINOR.PATCH", "e.g. kubernetesVersion: v1.33.2 (as kubeadm writes it)");
    if (parts[0] != 1) Fail(f, "'" + s + "': only Kubernetes 1.x exists", "e.g. v1.33.2");
    t_.kubernetes_version = {parts[0], parts[1], parts[2]};
    has_version_ = true;
  }

  // ---- one node group (syntax only; files are checked in FinishGroup) ----

  GroupText ReadGroup(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) Fail(path, "must be a mapping", "e.g. {name: system, flavor: shared, count: 3, vendor: none}");
    GroupText g;
    NodeGroup& n = g.group;
    YamlMapReader(where_, node, path)
        .On("name", [&](const YAML::Node& v, const std::string& f) { n.name = Dns1123(v, f, "h100-train"); })
        .On("flavor", [&](const YAML::Node& v, const std::string& f) {
          n.flavor_name = String(v, f);
          if (n.flavor_name.empty()) Fail(f, "is empty", "name a flavor defined in spec.flavors");
        })
        .On("count", [&](const YAML::Node& v, const std::string& f) {
          n.count = Count(v, f);
          g.has_count = true;
        })
        .On("minCount", [&](const YAML::Node& v, const std::string& f) { n.min_count = Count(v, f); })
        .On("maxCount", [&](const YAML::Node& v, const std::string& f) { n.max_count = Count(v, f); })
        .On("vendor", [&](const YAML::Node& v, const std::string& f) {
          n.vendor = YamlOneOf<Vendor>(where_, v, f, {{"nvidia", Vendor::kNvidia}, {"amd", Vendor::kAmd},
                                                      {"habana", Vendor::kHabana}, {"none", Vendor::kNone}});
          g.has_vendor = true;
        })
        .On("stack", [&](const YAML::Node& v, const std::string& f) {
          n.stack = YamlOneOf<Stack>(where_, v, f, {{"accel", Stack::kAccel}, {"operator", Stack::kOperator}});
          g.has_stack = true;
        })
        .On("sharing", [&](const YAML::Node& v, const std::string& f) { n.sharing = ReadSharing(v, f); })
        .On("network", [&](const YAML::Node& v, const std::string& f) {
          g.has_network = true;
          YamlMapReader(where_, v, f)
              .On("rdma", [&](const YAML::Node& r, const std::string& rf) {
                n.network.rdma = YamlOneOf<RdmaMode>(where_, r, rf, {{"sriov", RdmaMode::kSriov},
                                                                     {"shared", RdmaMode::kShared},
                                                                     {"none", RdmaMode::kNone}});
              })
              .Run();
        })
        .On("labels", [&](const YAML::Node& v, const std::string& f) { n.labels = ReadLabels(v, f); })
        .On("taints", [&](const YAML::Node& v, const std::string& f) { n.taints = ReadTaints(v, f); })
        .On("hypervisor", [&](const YAML::Node& v, const std::string& f) {
          g.hypervisor = String(v, f);
          if (g.hypervisor.empty()) Fail(f, "is empty", "name a host file, or leave hypervisor out");
        })
        .On("kubelet", [&](const YAML::Node& v, const std::string& f) { n.kubelet = kubelet::ReadKubeletOverrides(v, where_, f); })
        .On("image", [&](const YAML::Node& v, const std::string& f) { n.image = Name(v, f, "ubuntu-2404-kube-v1.33.2-nvidia"); })
        .On("driver", [&](const YAML::Node& v, const std::string& f) {
          g.has_driver = true;
          YamlMapReader(where_, v, f)
              .On("version", [&](const YAML::Node& x, const std::string& xf) { n.driver.version = DriverVersion(x, xf); })
              .On("kernelModuleType", [&](const YAML::Node& x, const std::string& xf) {
                n.driver.kernel_module_type = YamlOneOf<std::string>(
                    where_, x, xf, {{"auto", "auto"}, {"open", "open"}, {"proprietary", "proprietary"}});
                g.has_kernel_module_type = true;
              })
              .Run();
        })
        .Run();
    if (n.name.empty()) Fail(path + ".name", "is missing", "name the group, e.g. name: h100-train");
    if (n.flavor_name.empty()) Fail(path + ".flavor", "is missing", "name a flavor defined in spec.flavors");
    if (!g.has_count) Fail(path + ".count", "is missing", "give the number of nodes, e.g. count: 4 (0 is allowed)");
    if (!g.has_vendor) Fail(path + ".vendor", "is missing", "write vendor: nvidia, amd, habana or none");
    if (!n.kubelet.is_object()) n.kubelet = json::object();
    CheckCombination(g, path);
    return g;
  }

  ReplicaSharing ReadReplicas(const YAML::Node& v, const std::string& f, bool fail_default) {
    ReplicaSharing r;
    r.fail_requests_greater_than_one = fail_default;
    bool has_replicas = false;
    YamlMapReader(where_, v, f)
        .On("replicas", [&](const YAML::Node& x, const std::string& xf) {
          const long long n = YamlInteger(where_, x, xf);
          if (n < 2 || n > 1024)
            Fail(xf, std::to_string(n) + " is out of range", "use 2 to 1024 (NVIDIA's device plugin needs at least 2 replicas)");
          r.replicas = static_cast<int>(n);
          has_replicas = true;
        })
        .On("renameByDefault", [&](const YAML::Node& x, const std::string& xf) { r.rename_by_default = YamlBool(where_, x, xf); })
        .On("failRequestsGreaterThanOne", [&](const YAML::Node& x, const std::string& xf) {
          r.fail_requests_greater_than_one = YamlBool(where_, x, xf);
        })
        .Run();
    if (!has_replicas) Fail(f + ".replicas", "is missing", "give the replicas per device, e.g. replicas: 4");
    return r;
  }

  Sharing ReadSharing(const YAML::Node& v, const std::string& f) {
    Sharing s;
    if (v.IsScalar() && v.Scalar() == "none") return s;
    if (!v.IsMap()) Fail(f, "must be a mapping or none", "e.g. sharing: {mig: all-1g.10gb} or {timeSlicing: {replicas: 4}}");
    YamlMapReader(where_, v, f)
        .On("mig", [&](const YAML::Node& x, const std::string& xf) {
          s.mig = String(x, xf);
          try {
            fleet::ParseLabel("nvidia.com/mig.config=" + s.mig, where_);
          } catch (const InputError&) {
            s.mig.clear();
          }
          if (s.mig.empty())
            Fail(xf, "'" + String(x, xf) + "' cannot be a mig-parted config name",
                 "it becomes the nvidia.com/mig.config label value: 1-63 of A-Z a-z 0-9 - _ . starting and "
                 "ending with a letter or digit, e.g. all-1g.10gb");
        })
        .On("timeSlicing", [&](const YAML::Node& x, const std::string& xf) { s.time_slicing = ReadReplicas(x, xf, false); })
        .On("mps", [&](const YAML::Node& x, const std::string& xf) { s.mps = ReadReplicas(x, xf, true); })
        .Run();
    if (s.mps && !s.mig.empty())
      Fail(f + ".mps", "MPS cannot be combined with MIG", "NVIDIA's device plugin refuses MPS on MIG devices; keep one of them");
    if (s.mps && s.time_slicing)
      Fail(f + ".mps", "MPS and time-slicing exclude each other", "the device plugin applies one sharing strategy; keep one of them");
    return s;
  }

  std::map<std::string, std::string> ReadLabels(const YAML::Node& v, const std::string& f) {
    if (!v.IsMap()) Fail(f, "must be a mapping of label keys to values", "e.g. labels: {accel.io/pool: training}");
    std::map<std::string, std::string> out;
    for (const auto& kv : v) {
      if (!kv.first.IsScalar()) Fail(f, "has a key that is not a string", "write label keys as plain text");
      const std::string key = kv.first.Scalar();
      const std::string kf = YamlKeyPath(f, key);
      if (kv.second.IsNull()) Fail(kf, "has no value", "write key: \"\" for an empty value");
      const std::string value = String(kv.second, kf);
      if (IsPlainYamlScalar(kv.second) && LooksTyped(kv.second))
        Fail(kf, "'" + value + "' reads as a " + (IsInteger(value) ? "number" : "boolean") + " in Kubernetes YAML",
             "quote it: " + key + ": \"" + value + "\"");
      CheckLabel(key, value, kf, "label");
      CheckKubeletMaySet(key, kf);
      out[key] = value;
    }
    return out;
  }

  static bool IsInteger(const std::string& s) {
    size_t start = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return s.size() > start && s.find_first_not_of("0123456789", start) == std::string::npos;
  }

  bool LooksTyped(const YAML::Node& v) const {
    if (IsInteger(v.Scalar())) return true;
    try {
      YamlBool(where_, v, "");
      return true;
    } catch (const InputError&) {
      return false;
    }
  }

  // The common label check (fleet/labels.h), reported at this key path.
  void CheckLabel(const std::string& key, const std::string& value, const std::string& f, const std::string& what) const {
    try {
      fleet::ParseLabel(key + "=" + value, where_);
    } catch (const InputError& e) {
      Fail(f, "not a valid " + what + " key or value: " + e.problem(), e.hint());
    }
  }

  // Node labels reach the node through the kubelet (--node-labels / nodeRegistration), and the
  // kubelet refuses labels in the kubernetes.io and k8s.io namespaces except its own prefixes and
  // the well-known topology labels (kubelet --node-labels validation; NodeRestriction).
  void CheckKubeletMaySet(const std::string& key, const std::string& f) const {
    const size_t slash = key.find('/');
    if (slash == std::string::npos) return;
    const std::string prefix = key.substr(0, slash);
    auto in_namespace = [&](const std::string& ns) {
      return prefix == ns || (prefix.size() > ns.size() && prefix.compare(prefix.size() - ns.size() - 1, ns.size() + 1, "." + ns) == 0);
    };
    if (!in_namespace("kubernetes.io") && !in_namespace("k8s.io")) return;
    if (in_namespace("kubelet.kubernetes.io") || in_namespace("node.kubernetes.io")) return;
    static const std::set<std::string> kWellKnown = {
        "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/region", "topology.kubernetes.io/zone"};
    if (kWellKnown.count(key)) return;
    Fail(f, "the kubelet may not set '" + key + "' on its own node",
         "use your own prefix (e.g. accel.io/pool) or node.kubernetes.io/...; node-role.kubernetes.io/* must be set by an "
         "administrator after the node joins");
  }

  std::vector<Taint> ReadTaints(const YAML::Node& v, const std::string& f) {
    if (!v.IsSequence()) Fail(f, "must be a list", "e.g. taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]");
    std::vector<Taint> out;
    std::set<std::pair<std::string, TaintEffect>> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string tf = Index(f, i);
      if (!v[i].IsMap()) Fail(tf, "must be a mapping", "e.g. {key: nvidia.com/gpu, value: present, effect: NoSchedule}");
      Taint t;
      bool has_key = false, has_effect = false;
      YamlMapReader(where_, v[i], tf)
          .On("key", [&](const YAML::Node& x, const std::string& xf) {
            t.key = String(x, xf);
            has_key = true;
            CheckLabel(t.key, "", xf, "taint");
          })
          .On("value", [&](const YAML::Node& x, const std::string& xf) {
            t.value = String(x, xf);
            CheckLabel("k", t.value, xf, "taint");
          })
          .On("effect", [&](const YAML::Node& x, const std::string& xf) {
            t.effect = YamlOneOf<TaintEffect>(where_, x, xf, {{"NoSchedule", TaintEffect::kNoSchedule},
                                                              {"PreferNoSchedule", TaintEffect::kPreferNoSchedule},
                                                              {"NoExecute", TaintEffect::kNoExecute}});
            has_effect = true;
          })
          .Run();
      if (!has_key || t.key.empty()) Fail(tf + ".key", "is missing", "e.g. key: nvidia.com/gpu");
      if (!has_effect) Fail(tf + ".effect", "is missing", "write effect: NoSchedule, PreferNoSchedule or NoExecute");
      if (!seen.insert({t.key, t.effect}).second)
        Fail(tf, "taint " + t.key + ":" + std::string(TaintEffectName(t.effect)) + " is listed twice",
             "Kubernetes keeps one taint per key and effect; remove one");
      out.push_back(t);
    }
    return out;
  }

  // Combinations that cannot work, whatever the files say.
  void CheckCombination(const GroupText& g, const std::string& path) const {
    const NodeGroup& n = g.group;
    if (n.min_count && *n.min_count > n.count)
      Fail(path + ".minCount", std::to_string(*n.min_count) + " is above count " + std::to_string(n.count),
           "minCount <= count <= maxCount");
    if (n.max_count && *n.max_count < n.count)
      Fail(path + ".maxCount", std::to_string(*n.max_count) + " is below count " + std::to_string(n.count),
           "minCount <= count <= maxCount");
    if (g.has_driver && (n.vendor == Vendor::kNone || n.stack != Stack::kOperator))
      Fail(path + ".driver", "only a vendor operator installs drivers (this group has vendor " + std::string(VendorName(n.vendor)) +
                                 ", stack " + std::string(StackName(n.stack)) + ")",
           "remove driver, or set stack: operator; with stack: accel the image brings the driver");
    if (g.has_kernel_module_type && n.vendor != Vendor::kNvidia)
      Fail(path + ".driver.kernelModuleType", "is an NVIDIA GPU Operator setting", "remove it for vendor " + std::string(VendorName(n.vendor)));
    if (n.vendor == Vendor::kNone) {
      if (n.stack == Stack::kOperator)
        Fail(path + ".stack", "a group with vendor none has no vendor operator",
             "leave stack out (or accel) for a CPU-only group, or set the group's vendor");
      if (!n.sharing.none())
        Fail(path + ".sharing", "a group with vendor none has no accelerators to share", "remove sharing, or set the group's vendor");
      return;
    }
    const std::string vendor(VendorName(n.vendor));
    if (!n.sharing.mig.empty() && n.vendor != Vendor::kNvidia)
      Fail(path + ".sharing.mig", "MIG is an NVIDIA feature; this group's vendor is " + vendor,
           n.vendor == Vendor::kAmd ? "AMD GPUs are partitioned by the AMD GPU Operator's DCM profiles, not mig-parted; remove mig"
                                    : "remove mig");
    if (n.sharing.mps && n.vendor != Vendor::kNvidia)
      Fail(path + ".sharing.mps", "MPS is an NVIDIA feature; this group's vendor is " + vendor, "remove mps");
    if (n.sharing.time_slicing && n.vendor != Vendor::kNvidia && n.stack == Stack::kOperator)
      Fail(path + ".sharing.timeSlicing", "the " + vendor + " operator's device plugin has no time-slicing",
           "use stack: accel (accel's device plugin replicates any vendor's devices) or remove timeSlicing");
  }

  // ---- files ----

  // Refuses a path that does not exist or is neither a regular file nor (when allowed) a directory.
  void CheckPath(const std::string& resolved, const std::string& written, const std::string& f, bool dir_ok,
                 const std::string& what) const {
    std::error_code ec;
    const fs::file_status st = fs::status(resolved, ec);
    if (ec || !fs::exists(st))
      Fail(f, "'" + written + "' does not exist (looked for " + resolved + ")",
           "paths are relative to the template's directory; give the " + what);
    if (fs::is_regular_file(st) || (dir_ok && fs::is_directory(st))) return;
    Fail(f, "'" + written + "' is not a " + std::string(dir_ok ? "file or directory" : "regular file"), "give the " + what);
  }

  std::shared_ptr<const topology::HostTopology> Hypervisor(const std::string& written, const std::string& f) {
    if (written == "live")
      Fail(f, "'live' would plan on the machine running accel",
           "name a host file (accel topo -o json > host.json), or plan with --fleet");
    std::string target = written;
    std::string prefix;
    if (target.rfind("sysfs:", 0) == 0) {
      prefix = "sysfs:";
      target = target.substr(6);
    }
    const std::string resolved = Resolve(target);
    auto cached = hosts_.find(resolved);
    if (cached != hosts_.end()) return cached->second;
    CheckPath(resolved, written, f, true, "host topology: accel.host/v1 JSON, hwloc XML or a sysfs copy");
    auto host = std::make_shared<const topology::HostTopology>(topology::LoadTopology(prefix + resolved));
    hosts_[resolved] = host;
    return host;
  }

  bool SameFile(const std::string& a, const std::string& b) const {
    std::error_code ec;
    return !b.empty() && fs::equivalent(a, b, ec) && !ec;
  }

  void LoadFiles() {
    if (!t_.aliases_path.empty()) {
      CheckPath(t_.aliases_path, t_.aliases_path, "spec.aliases", false, "Nova [pci]alias file (JSON, YAML or nova.conf lines)");
      t_.aliases = std::make_shared<const placement::PciAliasTable>(placement::LoadPciAliases(t_.aliases_path));
    } else {
      t_.aliases = std::make_shared<const placement::PciAliasTable>();
    }
    std::map<std::string, size_t> where_defined;
    for (size_t i = 0; i < t_.flavor_paths.size(); ++i) {
      const std::string f = Index("spec.flavors", i);
      const std::string& path = t_.flavor_paths[i];
      CheckPath(path, flavor_written_[i], f, true, "flavor file or directory");
      std::vector<std::string> files;
      std::error_code ec;
      if (fs::is_directory(path, ec)) {
        for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
          const std::string ext = e.path().extension().string();
          if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
          if (!e.is_regular_file(ec)) continue;
          if (SameFile(e.path().string(), t_.aliases_path)) continue;  // the alias file may sit among the flavors
          files.push_back(e.path().lexically_normal().string());
        }
        if (ec) Fail(f, "cannot list '" + path + "': " + ec.message(), "check the directory's permissions");
        std::sort(files.begin(), files.end());
        if (files.empty())
          Fail(f, "directory '" + flavor_written_[i] + "' holds no .yaml, .yml or .json flavor files", "add flavors or name their files");
      } else {
        files.push_back(path);
      }
      for (const std::string& file : files) {
        for (placement::Flavor& flavor : placement::LoadFlavors(file)) {
          auto [it, fresh] = where_defined.emplace(flavor.name, t_.flavors.size());
          if (!fresh)
            Fail(f, "flavor '" + flavor.name + "' is defined in both " + t_.flavor_files[it->second] + " and " + file,
                 "flavor names are unique in Nova; remove or rename one");
          t_.flavors.push_back(std::move(flavor));
          t_.flavor_files.push_back(file);
        }
      }
    }
    if (!hypervisor_.empty()) {
      t_.hypervisor_path = Resolve(hypervisor_.rfind("sysfs:", 0) == 0 ? hypervisor_.substr(6) : hypervisor_);
      t_.hypervisor = Hypervisor(hypervisor_, "spec.hypervisor");
    }
  }

  NodeGroup FinishGroup(GroupText& g, const std::string& path) {
    NodeGroup n = std::move(g.group);
    for (const NodeGroup& before : t_.groups)
      if (before.name == n.name)
        Fail(path + ".name", "'" + n.name + "' is the name of an earlier group", "node group names are unique; rename one");
    const placement::Flavor* flavor = t_.FindFlavor(n.flavor_name);
    if (!flavor) {
      std::vector<std::string> names;
      for (const placement::Flavor& fl : t_.flavors) names.push_back(fl.name);
      std::vector<std::string_view> views(names.begin(), names.end());
      const std::string near(ClosestMatch(n.flavor_name, views, 3));
      Fail(path + ".flavor", "no flavor named '" + n.flavor_name + "' in spec.flavors",
           (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "known: " + JoinStrings(names, ", "));
    }
    const size_t index = static_cast<size_t>(flavor - t_.flavors.data());
    n.flavor = *flavor;
    n.flavor_file = t_.flavor_files[index];
    n.request = placement::BuildRequest(n.flavor, *t_.aliases, n.flavor_file + " (flavor " + n.flavor.name + ")");
    CheckFlavorVendor(n, path);
    if (!g.hypervisor.empty()) {
      const std::string target = g.hypervisor.rfind("sysfs:", 0) == 0 ? g.hypervisor.substr(6) : g.hypervisor;
      n.hypervisor_path = Resolve(target);
      n.hypervisor = Hypervisor(g.hypervisor, path + ".hypervisor");
    } else {
      n.hypervisor_path = t_.hypervisor_path;
      n.hypervisor = t_.hypervisor;
    }
    n.kubelet_merged = kubelet::MergeKubeletOverrides(t_.kubelet, n.kubelet);
    return n;
  }

  // The group's vendor must be the vendor of the accelerators its flavor passes through.
  void CheckFlavorVendor(const NodeGroup& n, const std::string& path) const {
    int devices[3] = {0, 0, 0};
    for (const placement::PciRequest& r : n.request.pci) {
      for (size_t v = 0; v < 3; ++v) {
        const bool match = std::any_of(r.specs.begin(), r.specs.end(), [&](const placement::PciSpec& s) {
          return s.vendor_id && *s.vendor_id == kVendorIds[v];
        });
        if (match) devices[v] += r.count;
      }
    }
    const bool vgpu = std::any_of(n.flavor.extra_specs.begin(), n.flavor.extra_specs.end(),
                                  [](const auto& kv) { return kv.first == "resources:VGPU"; });
    for (size_t v = 0; v < 3; ++v) {
      if (devices[v] == 0 || kVendorOfId[v] == n.vendor) continue;
      Fail(path + ".vendor",
           "is " + std::string(VendorName(n.vendor)) + " but flavor '" + n.flavor.name + "' passes through " +
               std::to_string(devices[v]) + " " + std::string(VendorName(kVendorOfId[v])) + " device(s)",
           "set vendor: " + std::string(VendorName(kVendorOfId[v])) + ", or use a flavor of one vendor's accelerators");
    }
    if (n.vendor == Vendor::kNone) return;
    const size_t want = static_cast<size_t>(std::find(std::begin(kVendorOfId), std::end(kVendorOfId), n.vendor) - kVendorOfId);
    if (devices[want] == 0 && !(vgpu && n.vendor == Vendor::kNvidia))
      Fail(path + ".flavor",
           "flavor '" + n.flavor.name + "' passes through no " + std::string(VendorName(n.vendor)) + " accelerator (PCI vendor " +
               [&] { char b[8]; std::snprintf(b, sizeof b, "%04x", kVendorIds[want]); return std::string(b); }() + ")",
           "give the group a flavor with pci_passthrough:alias naming such a device, or set vendor: none");
  }

  std::string where_, base_;
  ClusterTemplate t_;
  bool has_version_ = false;
  std::vector<std::string> flavor_written_;
  std::string hypervisor_;
  std::vector<GroupText> groups_;
  std::map<std::string, std::shared_ptr<const topology::HostTopology>> hosts_;
};

}  // namespace

std::string ClusterTemplate::ImageOf(const NodeGroup& group) const {
  return group.image.empty() ? infrastructure.image : group.image;
}

std::string ClusterTemplate::DriverVersionOf(const NodeGroup& group) const {
  if (!group.driver.version.empty()) return group.driver.version;
  switch (group.vendor) {
    case Vendor::kNvidia: return operators.nvidia.driver_version;
    case Vendor::kAmd: return operators.amd.driver_version;
    case Vendor::kHabana: return operators.habana.driver_version;
    case Vendor::kNone: break;
  }
  return "";
}

const NodeGroup* ClusterTemplate::FindGroup(std::string_view name) const {
  for (const NodeGroup& g : groups)
    if (g.name == name) return &g;
  return nullptr;
}

const placement::Flavor* ClusterTemplate::FindFlavor(std::string_view name) const {
  for (const placement::Flavor& f : flavors)
    if (f.name == name) return &f;
  return nullptr;
}

ClusterTemplate ParseClusterTemplateText(std::string_view text, const std::string& where, const std::string& base_dir) {
  try {
    return Loader(where, base_dir).Load(text);
  } catch (const InputError& e) {
    if (!e.hint().empty() || e.where().rfind(where, 0) != 0) throw;
    // The common readers say what is wrong; add how to write it right.
    const std::string& f = e.field();
    const std::string key = f.substr(f.find_last_of('.') + 1);
    std::string hint = "see docs/schemas.md, \"Cluster template: accel.cluster/v1\"";
    if (f.empty()) hint = "check indentation and quoting; examples/cluster/ai-prod.yaml is a complete template";
    else if (key == "count" || key == "minCount" || key == "maxCount" || key == "replicas")
      hint = "write a plain number, e.g. " + key + ": 4";
    else if (key == "renameByDefault" || key == "failRequestsGreaterThanOne")
      hint = "write " + key + ": true or false, without quotes";
    else if (e.problem().find("must be a string") != std::string::npos)
      hint = "write one value, e.g. " + key + ": x";
    throw InputError(e.where(), e.field(), e.problem(), hint);
  }
}

ClusterTemplate LoadClusterTemplate(const std::string& path) {
  const std::string text = ReadWholeFile(path);
  return ParseClusterTemplateText(text, path, fs::path(path).parent_path().string());
}

std::string_view VendorName(Vendor vendor) {
  switch (vendor) {
    case Vendor::kNvidia: return "nvidia";
    case Vendor::kAmd: return "amd";
    case Vendor::kHabana: return "habana";
    case Vendor::kNone: return "none";
  }
  return "none";
}

std::string_view StackName(Stack stack) { return stack == Stack::kOperator ? "operator" : "accel"; }

std::string_view RdmaModeName(RdmaMode mode) {
  switch (mode) {
    case RdmaMode::kSriov: return "sriov";
    case RdmaMode::kShared: return "shared";
    case RdmaMode::kNone: return "none";
  }
  return "none";
}

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule: return "NoSchedule";
    case TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case TaintEffect::kNoExecute: return "NoExecute";
  }
  return "NoSchedule";
}

bool IsDns1123Label(std::string_view name) { return IsDnsLabel(name); }

}  // namespace accel::cluster
