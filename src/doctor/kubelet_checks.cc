// KUBE-01..05 (role k8s-node): the running kubelet's configuration checked against the topology
// this node shows in sysfs — the CPU Manager (static on a node worth pinning, reservedSystemCPUs
// whole cores and online), the Topology Manager (single-numa-node only when every accelerator and
// RDMA NIC has a NUMA node), the Memory Manager (reservedMemory sums exactly, hugepage
// reservations inside the pools) and the hugepage pools per NUMA node. See docs/doctor.md.
//
// Finding the configuration as the kubelet does (cmd/kubelet/app/server.go, 1.28-1.35):
//   - the flags come from the running kubelet's command line (/proc/PID/cmdline, comm "kubelet"),
//     else from its systemd unit: kubelet.service and its kubelet.service.d/*.conf drop-ins
//     (kubeadm's 10-kubeadm.conf: Environment=, EnvironmentFile=/var/lib/kubelet/kubeadm-flags.env
//     and /etc/default/kubelet, ExecStart= with $VARS), else /var/lib/kubelet/config.yaml, kubeadm's
//     default, is assumed;
//   - --config FILE is read first; --config-dir DIR then adds every *.conf file below DIR, in the
//     lexical order of filepath.WalkDir (subdirectories included, "10-a.conf" before "9-b.conf"),
//     each a JSON merge patch over the result (mergeKubeletConfigurations) — the merge is
//     kubelet::MergeKubeletOverrides, the same RFC 7386 merge the plan uses; every file needs its
//     apiVersion and kind (kubernetes#124796);
//   - the kubelet decodes leniently: a field it does not know is dropped with a log line, so a
//     misspelt field silently does nothing (a warning here);
//   - command-line flags override both (kubeletConfigFlagPrecedence): accel checks the files and
//     warns about the deprecated flags that would override what it checks.
// Fields accel knows (kubelet::KnownKubeletFields) are read strictly by
// kubelet::ReadKubeletOverrides; the rules are kubelet::CheckKubeletConfig's, run on a
// kubelet::GuestLayout built from sysfs — nothing here re-states them. What sysfs adds: CPUs that
// are offline (the kubelet refuses reserved CPUs that are not online: getReservedCPUs) and SMT
// siblings numbered the way Linux numbers bare metal (CPU n and n+N), which the layout's model
// (siblings consecutive, as libvirt numbers a guest's vCPUs) cannot express.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "common/error.h"
#include "common/strings.h"
#include "common/yaml_config.h"
#include "doctor/doctor_internal.h"
#include "kubelet/check.h"
#include "kubelet/derive.h"
#include "kubelet/guest_layout.h"
#include "kubelet/overrides.h"
#include "kubelet/version.h"

namespace accel::doctor {

namespace {

using nlohmann::json;

constexpr const char* kDefaultConfig = "/var/lib/kubelet/config.yaml";
constexpr const char* kDefaultDropInDir = "/etc/kubernetes/kubelet.conf.d";
constexpr const char* kAccelHugepagesUnit = "accel-guest-hugepages.service";
constexpr const char* kKubeletDefault = "(kubelet default)";

// Deprecated kubelet flags that set a field these checks read; on the command line they win over
// every file (kubeletConfigFlagPrecedence).
const std::set<std::string>& OverridingFlags() {
  static const std::set<std::string> kFlags = {
      "cpu-manager-policy", "cpu-manager-policy-options", "reserved-cpus", "topology-manager-policy",
      "topology-manager-scope", "topology-manager-policy-options", "memory-manager-policy", "reserved-memory",
      "kube-reserved", "system-reserved", "eviction-hard", "feature-gates"};
  return kFlags;
}

// ---- where the kubelet's files are ----

struct KubeletFlags {
  std::string config;       ///< --config; "" when not given
  std::string config_dir;   ///< --config-dir; "" when not given
  std::vector<std::string> overriding;  ///< "--cpu-manager-policy=static" ...
};

// Absolute path as the kubelet resolves it (filepath.Abs from its working directory, "/" under
// systemd — unconfirmed for other service managers).
std::string Absolute(const std::string& path) { return path.empty() || path[0] == '/' ? path : "/" + path; }

KubeletFlags ParseKubeletFlags(const std::vector<std::string>& words) {
  KubeletFlags flags;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2) continue;
    std::string name = word.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    std::replace(name.begin(), name.end(), '_', '-');  // pflag's WordSepNormalizeFunc
    const bool wanted = name == "config" || name == "config-dir" || OverridingFlags().count(name);
    if (!wanted) continue;
    if (!inline_value && i + 1 < words.size()) value = words[++i];
    if (name == "config")
      flags.config = Absolute(value);
    else if (name == "config-dir")
      flags.config_dir = Absolute(value);
    else
      flags.overriding.push_back("--" + name + "=" + value);
  }
  return flags;
}

// Words of a systemd value or an environment file value: split at white space outside double or
// single quotes, quotes removed.
std::vector<std::string> QuotedWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

struct FlagSource {
  bool found = false;              ///< a running kubelet or a kubelet unit was found
  std::vector<std::string> words;  ///< the kubelet's arguments (argv[1..])
  std::vector<Evidence> evidence;
};

// The running kubelet: the first process whose comm is "kubelet".
FlagSource FromProcess(const std::string& root) {
  FlagSource src;
  for (const std::string& pid : ListDir(root, "/proc")) {
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    FileValue comm = ReadFile(root, "/proc/" + pid + "/comm", 256);
    if (!comm.ok || comm.value != "kubelet") continue;
    std::string bytes, why;
    if (!ReadBytes(root, "/proc/" + pid + "/cmdline", 1 << 16, &bytes, &why)) continue;
    std::vector<std::string> argv;
    std::string arg;
    for (char c : bytes) {
      if (c == '\0') {
        argv.push_back(arg);
        arg.clear();
      } else {
        arg += c;
      }
    }
    if (!arg.empty()) argv.push_back(arg);
    if (argv.empty()) continue;  // a zombie or kernel thread
    src.found = true;
    src.words.assign(argv.begin() + 1, argv.end());
    src.evidence.push_back({"/proc/" + pid + "/cmdline", JoinStrings(argv, " ")});
    return src;
  }
  return src;
}

// The kubelet's systemd unit: kubelet.service, then its drop-ins (same name: /etc over /run over
// /usr/lib over /lib), Environment= and EnvironmentFile= (which wins, as in systemd), the last
// ExecStart= with $VAR and ${VAR} expanded.
FlagSource FromSystemd(const std::string& root) {
  FlagSource src;
  static const char* kDirs[] = {"/lib/systemd/system", "/usr/lib/systemd/system", "/run/systemd/system",
                                "/etc/systemd/system"};
  std::string unit;
  std::map<std::string, std::string> dropins;  // name -> path, sorted as systemd sorts them
  for (const char* dir : kDirs) {
    if (PathExists(root, std::string(dir) + "/kubelet.service")) unit = std::string(dir) + "/kubelet.service";
    for (const std::string& name : ListDir(root, std::string(dir) + "/kubelet.service.d"))
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".conf") == 0)
        dropins[name] = std::string(dir) + "/kubelet.service.d/" + name;
  }
  std::vector<std::string> files;
  if (!unit.empty()) files.push_back(unit);
  for (const auto& [name, path] : dropins) files.push_back(path);
  if (files.empty()) return src;

  std::map<std::string, std::string> env;
  std::vector<std::string> env_files;
  std::string exec_start;
  for (const std::string& path : files) {
    FileValue f = ReadFile(root, path, 256 * 1024);
    src.evidence.push_back({path, f.ok ? "read" : f.value});
    if (!f.ok) continue;
    std::istringstream in(f.value);
    std::string line, logical;
    bool in_service = false;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\\') {  // continuation
        logical += line.substr(0, line.size() - 1) + " ";
        continue;
      }
      logical += line;
      const std::string text(Trim(logical));
      logical.clear();
      if (text.empty() || text[0] == '#' || text[0] == ';') continue;
      if (text[0] == '[') {
        in_service = text == "[Service]";
        continue;
      }
      const size_t eq = text.find('=');
      if (!in_service || eq == std::string::npos) continue;
      const std::string key(Trim(text.substr(0, eq)));
      const std::string value(Trim(text.substr(eq + 1)));
      if (key == "Environment") {
        for (const std::string& assignment : QuotedWords(value)) {
          const size_t e = assignment.find('=');
          if (e != std::string::npos) env[assignment.substr(0, e)] = assignment.substr(e + 1);
        }
      } else if (key == "EnvironmentFile") {
        if (value.empty())
          env_files.clear();
        else
          env_files.push_back(value[0] == '-' ? value.substr(1) : value);
      } else if (key == "ExecStart") {
        exec_start = value;  // an empty ExecStart= resets the list; the last one runs
      }
    }
  }
  for (const std::string& path : env_files) {
    FileValue f = ReadFile(root, path, 64 * 1024);
    src.evidence.push_back({path, f.value});
    if (!f.ok) continue;
    std::istringstream in(f.value);
    for (std::string line; std::getline(in, line);) {
      const std::string text(Trim(line));
      const size_t eq = text.find('=');
      if (text.empty() || text[0] == '#' || eq == std::string::npos) continue;
      std::vector<std::string> value = QuotedWords(text.substr(eq + 1));
      env[std::string(Trim(text.substr(0, eq)))] = JoinStrings(value, " ");
    }
  }
  if (exec_start.empty()) return src;
  while (!exec_start.empty() && std::string("-@:+!").find(exec_start[0]) != std::string::npos)
    exec_start.erase(0, 1);
  std::vector<std::string> argv;
  for (std::string word : QuotedWords(exec_start)) {
    if (word.size() > 1 && word[0] == '$' && word[1] != '{') {  // $VAR: split into words
      for (const std::string& w : QuotedWords(env[word.substr(1)])) argv.push_back(w);
      continue;
    }
    for (size_t at; (at = word.find("${")) != std::string::npos;) {  // ${VAR}: one word
      const size_t end = word.find('}', at);
      if (end == std::string::npos) break;
      word.replace(at, end - at + 1, env[word.substr(at + 2, end - at - 2)]);
    }
    if (!word.empty()) argv.push_back(word);
  }
  if (argv.empty()) return src;
  src.found = true;
  src.words.assign(argv.begin() + 1, argv.end());
  src.evidence.push_back({"ExecStart (expanded)", JoinStrings(argv, " ")});
  return src;
}

// ---- reading and merging the files ----

struct KubeletConfig {
  bool found = false;       ///< the kubelet's configuration could be read (or it runs on defaults)
  bool broken = false;      ///< a file the kubelet would refuse
  json merged = json::object();
  std::map<std::string, std::string> origin;  ///< top-level field -> the file that set it last
  kubelet::KubernetesVersion version{1, 33, 0};
  std::string version_text;  ///< "1.33.2-1.1 (dpkg)" or "unknown, assumed 1.33"
};

// What the checks tell about the files, for KUBE-01.
struct ReadReport {
  Severity severity = Severity::kOk;
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  std::vector<Evidence> evidence;
  std::string summary_ok;
  void Add(Severity s, std::string problem, std::string fix) {
    severity = std::max(severity, s);
    problems.push_back(std::move(problem));
    if (!fix.empty() && std::find(fixes.begin(), fixes.end(), fix) == fixes.end()) fixes.push_back(std::move(fix));
  }
};

std::string ValueText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The line (1-based) of top-level key `key` in `doc`, 0 when unknown.
int LineOf(const YAML::Node& doc, const std::string& key) {
  for (const auto& kv : doc)
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first.Mark().line + 1;
  return 0;
}

// One file: parsed, apiVersion/kind present, accel's fields read strictly, the others kept
// unchecked, unknown ones reported. Returns false (with the problem in `report`) when the kubelet
// would refuse the file.
bool ReadConfigFile(const std::string& root, const std::string& path, json* fields, ReadReport* report) {
  FileValue f = ReadFile(root, path, 4 << 20);
  if (!f.ok) {
    report->Add(Severity::kFail, path + ": " + f.value + ": the kubelet cannot load it",
                "restore the file, or drop it from the kubelet's --config/--config-dir");
    return false;
  }
  YAML::Node doc;
  try {
    doc = LoadYamlText(f.value, path);
  } catch (const InputError& e) {
    report->Add(Severity::kFail, e.where() + ": " + e.problem() + ": the kubelet refuses to start with it",
                "fix the YAML in " + path + " (" + e.hint() + ")");
    return false;
  }
  if (!doc.IsMap()) {
    report->Add(Severity::kFail, path + ": is not a mapping of KubeletConfiguration fields",
                "write it as apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration and fields");
    return false;
  }
  if (!doc["apiVersion"] || !doc["kind"]) {
    report->Add(Severity::kFail,
                path + ": has no " + std::string(!doc["apiVersion"] ? "apiVersion" : "kind") +
                    ": the kubelet cannot decode it and refuses to start (each --config-dir drop-in needs both, "
                    "kubernetes#124796)",
                "start " + path + " with apiVersion: kubelet.config.k8s.io/v1beta1 and kind: KubeletConfiguration");
    return false;
  }
  YAML::Node known(YAML::NodeType::Map);
  std::vector<std::string> names;
  for (const kubelet::KubeletField& field : kubelet::KnownKubeletFields()) names.push_back(field.name);
  for (const std::string& name : kubelet::AllKubeletFields()) names.push_back(name);
  std::vector<std::string_view> views(names.begin(), names.end());
  for (const auto& kv : doc) {
    if (!kv.first.IsScalar()) continue;
    const std::string key = kv.first.Scalar();
    if (kubelet::FindKubeletField(key) || key == "apiVersion" || key == "kind") {
      known[key] = kv.second;
    } else if (!kubelet::AllKubeletFields().count(key)) {
      const std::string near(ClosestMatch(key, views, std::max<size_t>(3, key.size() / 3)));
      report->Add(Severity::kWarn,
                  path + " line " + std::to_string(kv.first.Mark().line + 1) + ": '" + key +
                      "' is not a KubeletConfiguration field: the kubelet drops it (lenient decoding), so it does "
                      "nothing",
                  near.empty() ? "remove '" + key + "' from " + path
                               : "did you mean '" + near + "'? (names are case-sensitive) in " + path);
    }
  }
  try {
    *fields = kubelet::ReadKubeletOverrides(known, path, "");
  } catch (const InputError& e) {
    const std::string top = e.field().substr(0, e.field().find_first_of(".["));
    const int line = LineOf(doc, top);
    report->Add(Severity::kFail,
                path + (line ? " line " + std::to_string(line) : std::string()) + ": " + e.field() + ": " +
                    e.problem() + ": the kubelet refuses to start with it",
                e.hint().empty() ? "fix " + e.field() + " in " + path : e.hint() + " (" + path + ")");
    return false;
  }
  return true;
}

// Every *.conf below `dir` in the order filepath.WalkDir visits them (lexical per directory,
// subdirectories in place).
void DropIns(const std::string& root, const std::string& dir, int depth, std::vector<std::string>* out) {
  if (depth > 8) return;
  std::vector<std::string> names = ListDir(root, dir);
  std::sort(names.begin(), names.end());  // byte order, as Go sorts directory entries
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    if (!ListDir(root, path).empty()) {
      DropIns(root, path, depth + 1, out);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".conf") == 0 &&
               ReadFile(root, path, 1).value.find("Is a directory") == std::string::npos) {
      out->push_back(path);
    }
  }
}

// The kubelet's version from dpkg's database (Debian and Ubuntu packages); 1.33 assumed
// otherwise — it only decides which CPU Manager options still need a feature gate.
void ReadVersion(const std::string& root, KubeletConfig* config) {
  FileValue status = ReadFile(root, "/var/lib/dpkg/status", 64 << 20);
  config->version_text = "unknown (no kubelet package in /var/lib/dpkg/status), 1.33 assumed";
  if (!status.ok) return;
  std::istringstream in(status.value);
  bool kubelet = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Package: ", 0) == 0) kubelet = Trim(line.substr(9)) == "kubelet";
    if (!kubelet || line.rfind("Version: ", 0) != 0) continue;
    const std::string v(Trim(line.substr(9)));
    int major = 0, minor = 0, patch = 0;
    const std::string plain = v.substr(v.find(':') == std::string::npos ? 0 : v.find(':') + 1);  // epoch
    if (std::sscanf(plain.c_str(), "%d.%d.%d", &major, &minor, &patch) >= 2) {
      config->version = {major, minor, patch};
      config->version_text = v + " (dpkg)";
    }
    return;
  }
}

KubeletConfig ReadKubeletConfig(const Context& ctx, ReadReport* report) {
  KubeletConfig config;
  const std::string& root = ctx.root;
  FlagSource src = FromProcess(root);
  std::string how = "the running kubelet's command line";
  if (!src.found) {
    src = FromSystemd(root);
    how = "the kubelet's systemd unit";
  }
  for (const Evidence& e : src.evidence) report->evidence.push_back(e);
  KubeletFlags flags;
  if (src.found) {
    flags = ParseKubeletFlags(src.words);
  } else {
    flags.config = kDefaultConfig;
    how = "kubeadm's default path: no kubelet process or unit found";
  }
  ReadVersion(root, &config);
  report->evidence.push_back({"/var/lib/dpkg/status", "kubelet " + config.version_text});

  if (src.found && flags.config.empty() && flags.config_dir.empty()) {
    report->Add(Severity::kWarn,
                "the kubelet runs without --config or --config-dir: every field has its default "
                "(cpuManagerPolicy none, no Topology or Memory Manager)",
                "give the kubelet a configuration file (kubeadm: /var/lib/kubelet/config.yaml, --config) and "
                "accel's drop-in (--config-dir " + std::string(kDefaultDropInDir) + ", accel cluster plan's "
                "<group>/kubelet.conf.d/50-accel.conf)");
    config.found = true;
  }
  std::vector<std::string> files;
  if (!flags.config.empty()) {
    FileValue probe = ReadFile(root, flags.config, 1);
    if (probe.missing) {
      report->evidence.push_back({flags.config, "(missing)"});
      report->Add(Severity::kInfo,
                  "no kubelet configuration at " + flags.config + " (found through " + how +
                      "): the kubelet settings cannot be checked",
                  "run the doctor on the node itself, or mount the kubelet's files read-only under --root: "
                  "/var/lib/kubelet, /etc/kubernetes (the --config-dir drop-ins) and "
                  "/etc/systemd/system/kubelet.service.d");
      return config;
    }
    files.push_back(flags.config);
  }
  if (!flags.config_dir.empty()) {
    std::vector<std::string> dropins;
    DropIns(root, flags.config_dir, 0, &dropins);
    report->evidence.push_back({flags.config_dir, dropins.empty() ? "no *.conf drop-ins" : JoinList(dropins, 16)});
    files.insert(files.end(), dropins.begin(), dropins.end());
  } else {
    std::vector<std::string> unread;
    DropIns(root, kDefaultDropInDir, 0, &unread);
    if (!unread.empty()) {
      report->evidence.push_back({kDefaultDropInDir, JoinList(unread, 16)});
      report->Add(Severity::kWarn,
                  "drop-ins in " + std::string(kDefaultDropInDir) + " (" + JoinList(unread, 4) +
                      ") do nothing: the kubelet is not started with --config-dir",
                  "add --config-dir=" + std::string(kDefaultDropInDir) +
                      " to the kubelet's flags (kubeadm: KUBELET_KUBEADM_ARGS in /var/lib/kubelet/kubeadm-flags.env, "
                      "or KUBELET_EXTRA_ARGS in /etc/default/kubelet), then systemctl restart kubelet");
    }
  }
  if (!flags.overriding.empty())
    report->Add(Severity::kWarn,
                "the kubelet's command line overrides its files: " + JoinList(flags.overriding, 6) +
                    " (flags win; accel checks the files)",
                "move these settings into the configuration file and drop the deprecated flags");

  std::vector<std::string> overridden;
  for (size_t i = 0; i < files.size(); ++i) {
    json fields;
    if (!ReadConfigFile(root, files[i], &fields, report)) {
      config.broken = true;
      continue;
    }
    const bool dropin = !flags.config.empty() ? i > 0 : true;
    // The kubelet defaults evictionHard of the --config file before merging drop-ins: a drop-in
    // that sets one eviction signal keeps the default memory.available (loadConfigFile).
    if (dropin && fields.contains("evictionHard") && !config.merged.contains("evictionHard")) {
      config.merged["evictionHard"] = {{"memory.available", "100Mi"}};
      config.origin["evictionHard"] = kKubeletDefault;
    }
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      const bool was_default = config.origin.count(it.key()) && config.origin[it.key()] == kKubeletDefault;
      if (config.merged.contains(it.key()) && config.merged[it.key()] != it.value() && !was_default)
        overridden.push_back(it.key() + " " + ValueText(config.merged[it.key()]) + " (" + config.origin[it.key()] +
                             ") -> " + ValueText(it.value()) + " (" + files[i] + ")");
      config.origin[it.key()] = files[i];
    }
    config.merged = kubelet::MergeKubeletOverrides(config.merged, fields);
    report->evidence.push_back({files[i], std::to_string(fields.size()) + " fields accel checks"});
  }
  if (!overridden.empty())
    report->Add(Severity::kInfo, "drop-ins change fields set before them: " + JoinList(overridden, 6), "");
  if (!config.broken) config.found = true;
  report->summary_ok = files.empty() ? "kubelet defaults (no files)"
                                     : "read " + JoinList(files, 4) + " (found through " + how + ")";
  return config;
}

// ---- the node as the kubelet's managers see it ----

struct NodeView {
  kubelet::GuestLayout layout;                 ///< NUMA nodes, CPUs, devices, for CheckKubeletConfig
  std::vector<kubelet::GuestHugepagePool> pools;  ///< hugepage pools per NUMA node (total pages)
  CpuSet online;                               ///< /sys/devices/system/cpu/online
  std::map<int, CpuSet> core_of;               ///< CPU -> its SMT siblings (itself included)
  bool smt = false;                            ///< some core has more than one CPU
  bool consecutive = true;                     ///< siblings are consecutive ids in equal groups
};

NodeView ViewOf(const Context& ctx) {
  NodeView v;
  const topology::HostTopology& host = *ctx.host;
  v.online = host.AllCpus();
  FileValue online = ReadFile(ctx.root, "/sys/devices/system/cpu/online");
  CpuSet parsed;
  std::string error;
  if (online.ok && CpuSet::Parse(online.value, &parsed, &error)) v.online = parsed;
  kubelet::GuestLayout& g = v.layout;
  g.flavor = "(this node)";
  g.host = host.hostname;
  int max_cpu = -1;
  for (int c : host.AllCpus().ToVector()) max_cpu = std::max(max_cpu, c);
  g.vcpus = max_cpu + 1;
  size_t threads = 0;
  for (const topology::NumaNode& node : host.numa_nodes)
    for (const CpuSet& core : node.cores) {
      const std::vector<int> cpus = core.ToVector();
      if (cpus.empty()) continue;
      if (threads == 0) threads = cpus.size();
      if (cpus.size() > 1) v.smt = true;
      bool run = cpus.size() == threads && cpus.front() % static_cast<int>(threads) == 0;
      for (size_t i = 1; run && i < cpus.size(); ++i) run = cpus[i] == cpus.front() + static_cast<int>(i);
      if (!run) v.consecutive = false;
      for (int c : cpus) v.core_of[c] = core;
    }
  if (static_cast<int>(v.core_of.size()) != g.vcpus) v.consecutive = false;  // holes in the CPU ids
  // The layout's SMT model (siblings 2c, 2c+1) holds only for consecutive siblings; otherwise the
  // whole-core rule is checked here from the sysfs sibling lists instead.
  g.threads_per_core = v.smt && v.consecutive ? static_cast<int>(threads) : 1;
  g.sockets = std::max<int>(1, static_cast<int>(host.packages.size()));
  g.cores_per_socket = std::max(1, g.vcpus / g.threads_per_core / g.sockets);
  for (const topology::NumaNode& node : host.numa_nodes) {
    kubelet::GuestCellLayout cell;
    cell.cell = node.id;
    cell.vcpus = node.cpus;
    cell.dedicated_vcpus = node.cpus;
    cell.memory_mib = node.memory_kib / 1024;
    g.cells.push_back(cell);
    g.memory_mib += cell.memory_mib;
    for (size_t p = 1; p < node.pages.size(); ++p)
      if (node.pages[p].total > 0) v.pools.push_back({node.id, node.pages[p].size_kib, node.pages[p].total});
  }
  for (const topology::PciDevice& dev : host.pci) {
    const bool rdma_nic = dev.role == topology::PciRole::kNic && dev.is_rdma();
    if (!dev.is_accelerator() && !rdma_nic) continue;
    kubelet::GuestDevice d;
    d.alias = std::string(topology::PciRoleName(dev.role)) + (dev.is_rdma() ? " " + dev.rdma_devices.front() : "");
    d.host_address = dev.address;
    d.vendor_id = dev.vendor_id;
    d.device_id = dev.device_id;
    d.role = dev.role;
    d.rdma = dev.is_rdma();
    d.guest_cell = host.numa_nodes.size() > 1 ? dev.numa_node : host.numa_nodes.empty() ? -1 : host.numa_nodes[0].id;
    g.devices.push_back(d);
  }
  return v;
}

// ---- the checks ----

struct Problems {
  Severity severity = Severity::kOk;
  std::vector<std::string> problems;
  std::string fix;
  std::vector<Evidence> evidence;
  void Add(Severity s, const std::string& problem, const std::string& fix_line) {
    severity = std::max(severity, s);
    problems.push_back(problem);
    if (!fix_line.empty() && fix.find(fix_line) == std::string::npos) fix += fix_line + "\n";
  }
  Finding ToFinding(const char* id, const char* title, const std::string& ok_summary) const {
    if (problems.empty()) {
      Finding f = MakeFinding(id, title, Severity::kOk, ok_summary);
      f.evidence = evidence;
      return f;
    }
    Finding f = ProblemFinding(id, title, severity, problems, fix);
    f.evidence = evidence;
    return f;
  }
};

// A CheckKubeletConfig finding's severity: the ones that only cost performance or cannot be
// checked are warnings; every other one stops the kubelet or rejects pods.
Severity SeverityOf(const kubelet::KubeletFinding& k) {
  for (const char* soft : {"has no effect", "is split", "cannot be checked"})
    if (k.problem.find(soft) != std::string::npos) return Severity::kWarn;
  return Severity::kFail;
}

enum class Area { kCpu, kTopology, kMemory };

Area AreaOf(const kubelet::KubeletFinding& k) {
  if (k.field.rfind("topologyManager", 0) == 0 || k.problem.find("single-numa-node") != std::string::npos)
    return Area::kTopology;
  for (const char* memory : {"memoryManagerPolicy", "reservedMemory", "kubeReserved", "systemReserved", "evictionHard"})
    if (k.field.rfind(memory, 0) == 0) return Area::kMemory;
  return Area::kCpu;
}

std::string Str(const json& c, const char* key, const std::string& fallback) {
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : fallback;
}

// Evidence for the fields a check read: the file that set each (or the kubelet default).
void FieldEvidence(const KubeletConfig& config, std::initializer_list<const char*> keys, const char* dflt_of_first,
                   std::vector<Evidence>* out) {
  bool first = true;
  for (const char* key : keys) {
    auto it = config.origin.find(key);
    if (config.merged.contains(key))
      out->push_back({it == config.origin.end() ? kKubeletDefault : it->second,
                      std::string(key) + ": " + ValueText(config.merged[key])});
    else if (first && dflt_of_first)
      out->push_back({kKubeletDefault, std::string(key) + ": " + dflt_of_first});
    first = false;
  }
}

// Pool sizes the accel guest unit asks per (node, page KiB): its ExecStart lines
// "echo N > /sys/devices/system/node/nodeX/hugepages/hugepages-SkB/nr_hugepages".
std::map<std::pair<int, uint64_t>, uint64_t> UnitPools(const std::string& text) {
  std::map<std::pair<int, uint64_t>, uint64_t> wanted;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    unsigned long long pages = 0, kib = 0;
    int node = -1;
    const size_t echo = line.find("echo ");
    if (echo == std::string::npos) continue;
    if (std::sscanf(line.c_str() + echo, "echo %llu > /sys/devices/system/node/node%d/hugepages/hugepages-%llukB", &pages,
                    &node, &kib) == 3)
      wanted[{node, kib}] = pages;
  }
  return wanted;
}

std::string PageName(uint64_t kib) {
  return kib % 1048576 == 0 ? std::to_string(kib / 1048576) + "Gi" : std::to_string(kib / 1024) + "Mi";
}

}  // namespace

void AppendKubeletChecks(const Context& ctx, std::vector<Finding>* out) {
  static const char* kTitles[] = {"kubelet configuration", "kubelet CPU Manager", "kubelet Topology Manager",
                                  "kubelet Memory Manager", "hugepage pools per NUMA node"};
  ReadReport read;
  KubeletConfig config = ReadKubeletConfig(ctx, &read);
  {
    Finding f = read.problems.empty()
                    ? MakeFinding("KUBE-01", kTitles[0], Severity::kOk, read.summary_ok)
                    : ProblemFinding("KUBE-01", kTitles[0], read.severity, read.problems, JoinStrings(read.fixes, "\n"));
    f.evidence = read.evidence;
    out->push_back(std::move(f));
  }
  const NodeView view = ViewOf(ctx);

  // KUBE-05 reads sysfs only; it runs even without a kubelet configuration.
  Problems pools;
  {
    std::map<uint64_t, std::map<int, uint64_t>> by_size;  // page KiB -> node -> pages
    for (const kubelet::GuestHugepagePool& p : view.pools) by_size[p.page_kib][p.cell] = p.pages;
    std::vector<int> memory_nodes;
    for (const topology::NumaNode& node : ctx.host->numa_nodes)
      if (node.memory_kib > 0) memory_nodes.push_back(node.id);
    for (const auto& [kib, nodes] : by_size) {
      std::vector<std::string> have, lack;
      for (int n : memory_nodes) {
        auto it = nodes.find(n);
        if (it == nodes.end())
          lack.push_back("node" + std::to_string(n));
        else
          have.push_back("node" + std::to_string(n) + " " + std::to_string(it->second));
        pools.evidence.push_back({"/sys/devices/system/node/node" + std::to_string(n) + "/hugepages/hugepages-" +
                                      std::to_string(kib) + "kB/nr_hugepages",
                                  std::to_string(it == nodes.end() ? 0 : it->second)});
      }
      if (!lack.empty())
        pools.Add(Severity::kWarn,
                  "hugepages-" + PageName(kib) + " pools on " + JoinList(have) + " but none on " + JoinList(lack) +
                      ": a pod asking hugepages-" + PageName(kib) + " can be aligned to those nodes only",
                  "reserve hugepages-" + PageName(kib) + " on every NUMA node (accel cluster plan's "
                  "<group>/hugepages/accel-guest-hugepages.service sets each node's pool at boot)");
    }
    for (const char* dir : {"/etc/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/"}) {
      FileValue unit = ReadFile(ctx.root, std::string(dir) + kAccelHugepagesUnit, 64 * 1024);
      if (!unit.ok) continue;
      pools.evidence.push_back({unit.path, "installed"});
      for (const auto& [key, want] : UnitPools(unit.value)) {
        const auto& [node, kib] = key;
        uint64_t have = 0;
        for (const kubelet::GuestHugepagePool& p : view.pools)
          if (p.cell == node && p.page_kib == kib) have = p.pages;
        if (have < want)
          pools.Add(Severity::kFail,
                    "node" + std::to_string(node) + " has " + std::to_string(have) + " of the " + std::to_string(want) +
                        " hugepages-" + PageName(kib) + " pages " + kAccelHugepagesUnit +
                        " asks: the kernel could not find that much contiguous memory after boot",
                    "reserve the pages at boot on the kernel command line (accel cluster plan's "
                    "<group>/hugepages/kernel-cmdline.txt: default_hugepagesz, hugepagesz, hugepages), "
                    "keep the unit for the per-node split, reboot; check: systemctl status " +
                        std::string(kAccelHugepagesUnit));
      }
      break;
    }
  }
  const std::string pools_ok = [&] {
    if (view.pools.empty()) return std::string("no hugepage pools: pods cannot ask for hugepages on this node");
    std::vector<std::string> parts;
    for (const kubelet::GuestHugepagePool& p : view.pools)
      parts.push_back("node" + std::to_string(p.cell) + " " + std::to_string(p.pages) + " x " + PageName(p.page_kib));
    return "hugepage pools on every NUMA node with memory: " + JoinList(parts);
  }();

  if (!config.found) {
    const std::string why = config.broken ? "the kubelet configuration cannot be read (KUBE-01)"
                                          : "no kubelet configuration to check (KUBE-01)";
    for (int i = 1; i < 4; ++i) {
      static const char* kIds[] = {"", "KUBE-02", "KUBE-03", "KUBE-04"};
      out->push_back(MakeFinding(kIds[i], kTitles[i], Severity::kNotApplicable, why));
    }
    out->push_back(pools.ToFinding("KUBE-05", kTitles[4], pools_ok));
    return;
  }

  const json& c = config.merged;
  const std::vector<kubelet::KubeletFinding> rules =
      kubelet::CheckKubeletConfig(c, view.layout, view.pools, config.version);
  Problems cpu, topo, memory;
  for (const kubelet::KubeletFinding& k : rules) {
    Problems& p = AreaOf(k) == Area::kTopology ? topo : AreaOf(k) == Area::kMemory ? memory : cpu;
    p.Add(SeverityOf(k), k.field + ": " + k.problem, k.fix);
  }
  const bool multi_node = ctx.host->numa_nodes.size() > 1;
  const bool accelerators = !ctx.accelerators.empty();
  std::string shape = std::to_string(ctx.host->numa_nodes.size()) + " NUMA node" + (multi_node ? "s" : "") +
                      (accelerators ? ", " + std::to_string(ctx.accelerators.size()) + " accelerator" +
                                          (ctx.accelerators.size() > 1 ? "s" : "")
                                    : ", no accelerators") +
                      (ctx.vm_guest ? " (a VM guest)" : "");

  // --- KUBE-02: CPU Manager ---
  const std::string cpu_policy = Str(c, "cpuManagerPolicy", "none");
  FieldEvidence(config, {"cpuManagerPolicy", "reservedSystemCPUs", "cpuManagerPolicyOptions"}, "none", &cpu.evidence);
  cpu.evidence.push_back({"/sys/devices/system/cpu/online", view.online.ToString()});
  if (cpu_policy == "none" && (accelerators || multi_node))
    cpu.Add(accelerators ? Severity::kWarn : Severity::kInfo,
            "cpuManagerPolicy none on a node with " + shape +
                ": every pod floats over every CPU; Guaranteed pods get no exclusive CPUs and pinned vCPUs buy "
                "nothing",
            "set cpuManagerPolicy: static with reservedSystemCPUs on whole cores of NUMA node 0 (accel cluster "
            "plan derives them), drain the node, rm /var/lib/kubelet/cpu_manager_state, restart the kubelet");
  CpuSet reserved;
  std::string error;
  if (c.contains("reservedSystemCPUs") && c["reservedSystemCPUs"].is_string() &&
      CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &reserved, &error)) {
    CpuSet offline = reserved.Minus(view.online);
    if (cpu_policy == "static") {  // CheckKubeletConfig already names the ids past the last CPU
      CpuSet beyond;
      for (int id : offline.ToVector())
        if (id >= view.layout.vcpus) beyond.Add(id);
      offline = offline.Minus(beyond);
    }
    if (!offline.Empty())
      cpu.Add(Severity::kFail,
              "reservedSystemCPUs: CPUs " + offline.ToString() + " are not online (" + view.online.ToString() +
                  "): the kubelet refuses to start (reserved-cpus is not a subset of online-cpus)",
              "reserve online CPUs only, whole cores of NUMA node 0");
    if (cpu_policy == "static" && view.smt) {
      for (int id : reserved.ToVector()) {
        auto it = view.core_of.find(id);
        if (it == view.core_of.end()) continue;
        cpu.evidence.push_back({"/sys/devices/system/cpu/cpu" + std::to_string(id) + "/topology/thread_siblings_list",
                                it->second.ToString()});
        if (!view.consecutive && !it->second.IsSubsetOf(reserved)) {
          cpu.Add(Severity::kWarn,
                  "reservedSystemCPUs: CPU " + std::to_string(id) + " is reserved but its SMT sibling(s) " +
                      it->second.Minus(reserved).ToString() +
                      " are not: that core is split between system threads and pods",
                  "reserve whole cores (" + it->second.ToString() + ")");
          break;
        }
      }
    }
  }
  std::string cpu_ok = "cpuManagerPolicy " + cpu_policy;
  if (cpu_policy == "static")
    cpu_ok += ", reservedSystemCPUs " + (reserved.Empty() ? std::string("(none: kubeReserved/systemReserved cpu)")
                                                          : "\"" + reserved.ToString() + "\"") +
              (view.smt ? ": whole cores, online" : ": online");
  else
    cpu_ok += " (" + shape + ": nothing to pin)";
  out->push_back(cpu.ToFinding("KUBE-02", kTitles[1], cpu_ok));

  // --- KUBE-03: Topology Manager ---
  const std::string topo_policy = Str(c, "topologyManagerPolicy", "none");
  FieldEvidence(config, {"topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions"}, "none",
                &topo.evidence);
  std::vector<std::string> cellless;
  for (const kubelet::GuestDevice& d : view.layout.devices) {
    topo.evidence.push_back({PciAttr(d.host_address, "numa_node"), std::to_string(d.guest_cell)});
    if (d.guest_cell < 0) cellless.push_back(d.host_address);
  }
  if (multi_node && accelerators && (topo_policy == "none" || topo_policy == "best-effort"))
    topo.Add(Severity::kWarn,
             "topologyManagerPolicy " + topo_policy + " on a node with " + shape +
                 ": a pod's accelerators, CPUs and memory may sit on different NUMA nodes",
             cellless.empty()
                 ? "set topologyManagerPolicy: single-numa-node (every accelerator has a NUMA node) with "
                   "topologyManagerScope: pod"
                 : "set topologyManagerPolicy: restricted with topologyManagerPolicyOptions: "
                   "{prefer-closest-numa-nodes: \"true\"} (" + JoinList(cellless, 4) + " have no NUMA node)");
  std::string topo_ok = "topologyManagerPolicy " + topo_policy + " (scope " + Str(c, "topologyManagerScope", "container") + ")";
  if (topo_policy == "single-numa-node")
    topo_ok += multi_node ? ": every accelerator and RDMA NIC has a NUMA node" : ": one NUMA node";
  else if (!multi_node)
    topo_ok += ": one NUMA node, nothing to align";
  out->push_back(topo.ToFinding("KUBE-03", kTitles[2], topo_ok));

  // --- KUBE-04: Memory Manager ---
  const std::string mem_policy = Str(c, "memoryManagerPolicy", "None");
  FieldEvidence(config, {"memoryManagerPolicy", "reservedMemory", "kubeReserved", "systemReserved", "evictionHard"},
                "None", &memory.evidence);
  if (mem_policy == "None" && multi_node && accelerators && topo_policy == "single-numa-node")
    memory.Add(Severity::kInfo,
               "memoryManagerPolicy None: Guaranteed pods get CPUs and devices of one NUMA node, but their memory "
               "comes from any node",
               "set memoryManagerPolicy: Static with reservedMemory per NUMA node summing to kubeReserved + "
               "systemReserved + evictionHard memory (accel cluster plan derives it)");
  std::string mem_ok = "memoryManagerPolicy " + mem_policy;
  if (mem_policy == "Static")
    mem_ok += ": reservedMemory sums to kubeReserved + systemReserved + evictionHard per memory type, every "
              "hugepage reservation inside its pool";
  out->push_back(memory.ToFinding("KUBE-04", kTitles[3], mem_ok));

  // --- KUBE-05: hugepage pools ---
  out->push_back(pools.ToFinding("KUBE-05", kTitles[4], pools_ok));
}

}  // namespace accel::doctor
