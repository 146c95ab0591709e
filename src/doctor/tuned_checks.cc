// HOST-10: the tuned profile — one that fits the host's role, and, for cpu-partitioning, a
// running kernel that already isolates the cores the profile names (its command line takes
// effect only after a reboot). See docs/doctor.md.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "doctor/doctor_internal.h"
#include "common/strings.h"

namespace accel::doctor {

namespace {

// include= of tuned's own profiles (redhat-performance/tuned profiles/*/tuned.conf), for when
// the profile directories are not under the root.
const std::map<std::string, std::string>& BuiltinIncludes() {
  static const std::map<std::string, std::string> kIncludes = {
      {"cpu-partitioning", "network-latency"},
      {"cpu-partitioning-powersave", "cpu-partitioning"},
      {"desktop", "balanced"},
      {"balanced-battery", "balanced"},
      {"hpc-compute", "throughput-performance"},
      {"network-latency", "latency-performance"},
      {"network-throughput", "throughput-performance"},
      {"realtime", "network-latency"},
      {"realtime-virtual-guest", "realtime"},
      {"realtime-virtual-host", "realtime"},
      {"virtual-guest", "throughput-performance"},
      {"virtual-host", "throughput-performance"},
  };
  return kIncludes;
}

bool PowerSaving(const std::string& profile) {
  static const std::set<std::string> kPower = {"balanced", "powersave", "balanced-battery",
                                               "laptop-battery-powersave", "laptop-ac-powersave",
                                               "server-powersave", "spindown-disk"};
  return kPower.count(profile) > 0;
}

// The value of `key` in an ini-style text ("key = value", "key=value"); the last one wins.
std::optional<std::string> IniValue(const std::string& text, const std::string& key) {
  std::optional<std::string> value;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos || Trim(line.substr(0, eq)) != key) continue;
    value = Trim(line.substr(eq + 1));
  }
  return value;
}

// The profiles `profile` includes: its tuned.conf's include= where the root has it (a site's
// profile in /etc/tuned, tuned's own in /usr/lib/tuned[/profiles]), else tuned's table.
std::vector<std::string> Includes(const Context& ctx, const std::string& profile) {
  for (const char* dir : {"/etc/tuned/", "/usr/lib/tuned/", "/usr/lib/tuned/profiles/"}) {
    FileValue conf = ReadFile(ctx.root, dir + profile + "/tuned.conf", 256 * 1024);
    if (!conf.ok) continue;
    std::vector<std::string> out;
    if (std::optional<std::string> inc = IniValue(conf.value, "include")) {
      std::string list = *inc;
      std::replace(list.begin(), list.end(), ',', ' ');
      std::istringstream words(list);
      for (std::string w; words >> w;)
        if (w.find('$') == std::string::npos) out.push_back(w);
    }
    return out;
  }
  auto it = BuiltinIncludes().find(profile);
  if (it == BuiltinIncludes().end()) return {};
  return {it->second};
}

// `profile` and everything it includes, breadth first, each once.
std::vector<std::string> Lineage(const Context& ctx, const std::string& profile) {
  std::vector<std::string> seen = {profile};
  for (size_t i = 0; i < seen.size() && seen.size() < 16; ++i)
    for (const std::string& inc : Includes(ctx, seen[i]))
      if (std::find(seen.begin(), seen.end(), inc) == seen.end()) seen.push_back(inc);
  return seen;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Finding CheckHost10Tuned(const Context& ctx) {
  const char* id = "HOST-10";
  const char* title = "tuned profile";
  const bool hyp = ctx.hypervisor();
  const std::vector<std::string> expected =
      hyp ? std::vector<std::string>{"cpu-partitioning", "virtual-host", "realtime-virtual-host"}
          : std::vector<std::string>{"accelerator-performance", "throughput-performance",
                                     "network-latency"};
  const std::string expected_text = hyp ? "cpu-partitioning or virtual-host"
                                        : "accelerator-performance (or throughput-performance, "
                                          "network-latency)";
  const std::string set_profile =
      hyp ? "echo 'isolated_cores=<the CPUs guests are pinned to>' > "
            "/etc/tuned/cpu-partitioning-variables.conf\n"
            "tuned-adm profile cpu-partitioning   # then reboot: it changes the kernel command line\n"
            "# or: tuned-adm profile virtual-host   (guests without dedicated CPUs)"
          : "tuned-adm profile accelerator-performance";

  FileValue active = ReadFile(ctx.root, "/etc/tuned/active_profile");
  std::vector<Evidence> evidence = {active.ToEvidence()};
  if (!active.ok || active.value.empty()) {
    Finding f = MakeFinding(id, title, Severity::kInfo,
                            std::string(active.ok ? "tuned is off (no active profile)"
                                                  : "tuned is not installed (no active profile)") +
                                ": the governor, C-state and sysctl settings it would keep are left "
                                "to hand; this " + RoleName(ctx.options->role) + " host wants " +
                                expected_text);
    f.fix = std::string(active.ok ? "" : "dnf install tuned   # or apt install tuned\n") +
            "systemctl enable --now tuned\n" + set_profile;
    f.evidence = std::move(evidence);
    return f;
  }

  // tuned-adm profile a b merges several; any of them may bring in what the role needs.
  std::vector<std::string> profiles;
  std::istringstream words(active.value);
  for (std::string w; words >> w;) profiles.push_back(w);
  std::set<std::string> lineage;
  std::vector<std::string> chain;  // the same, in include order
  for (const std::string& p : profiles)
    for (const std::string& q : Lineage(ctx, p))
      if (lineage.insert(q).second) chain.push_back(q);
  bool fits = false, power = false;
  for (const std::string& e : expected) fits |= lineage.count(e) > 0;
  for (const std::string& p : lineage) power |= PowerSaving(p);
  if (lineage.size() > profiles.size())
    evidence.push_back({"tuned include= chain", JoinList(chain, 8)});

  Severity sev = Severity::kOk;
  std::vector<std::string> problems;
  std::string fix;
  bool reboot = false;
  if (!fits) {
    sev = power ? Severity::kWarn : Severity::kInfo;
    problems.push_back("profile " + active.value + (power ? " saves power at the cost of latency" : "") +
                       "; a " + RoleName(ctx.options->role) + " host wants " + expected_text);
    fix += set_profile + "\n";
  }

  // cpu-partitioning: the isolated cores it names against what the running kernel isolates.
  if (lineage.count("cpu-partitioning")) {
    FileValue vars = ReadFile(ctx.root, "/etc/tuned/cpu-partitioning-variables.conf", 64 * 1024);
    evidence.push_back(vars.ToEvidence());
    std::optional<std::string> cores = vars.ok ? IniValue(vars.value, "isolated_cores") : std::nullopt;
    CpuSet wanted;
    std::string error;
    if (!cores || cores->empty()) {
      sev = std::max(sev, Severity::kWarn);
      problems.push_back("cpu-partitioning without isolated_cores in "
                         "/etc/tuned/cpu-partitioning-variables.conf: tuned refuses to apply it");
      fix += "echo 'isolated_cores=<CPUs>' > /etc/tuned/cpu-partitioning-variables.conf\n"
             "tuned-adm profile cpu-partitioning; reboot\n";
    } else if (cores->find('$') != std::string::npos ||
               !ParseKernelCpuList(*cores, std::max(ctx.nr_cpus, 32768), &wanted, &error)) {
      sev = std::max(sev, Severity::kInfo);
      problems.push_back("isolated_cores=" + *cores +
                         " is computed by tuned; compare it with the running kernel yourself");
      fix += "tuned-adm verify; cat /sys/devices/system/cpu/nohz_full\n";
    } else {
      // The profile's command line sets nohz_full=${isolated_cores}; fall back to isolcpus.
      FileValue nohz = ReadFile(ctx.root, "/sys/devices/system/cpu/nohz_full");
      evidence.push_back(nohz.ToEvidence());
      CpuSet booted;
      std::string source = "nohz_full";
      if (!(nohz.ok && nohz.value != "(null)" && !nohz.value.empty() &&
            ParseKernelCpuList(nohz.value, std::max(ctx.nr_cpus, 32768), &booted, &error))) {
        booted = IsolatedCpus(ctx, &evidence);
        source = "isolated";
      }
      if (booted != wanted) {
        sev = std::max(sev, Severity::kWarn);
        reboot = true;
        problems.push_back("cpu-partitioning isolates " + CpuSetText(wanted) +
                           " but the running kernel's " + source + " CPUs are " + CpuSetText(booted) +
                           ": a reboot is pending (tuned's kernel command line takes effect at "
                           "the next boot)");
        fix += "reboot; then check: cat /sys/devices/system/cpu/nohz_full   # " + CpuSetText(wanted) + "\n";
      }
    }
  }

  // tuned reverts its settings when it stops; systemd hosts leave its pid file while it runs.
  bool running = PathExists(ctx.root, "/run/tuned/tuned.pid");
  bool systemd = PathExists(ctx.root, "/run/systemd/system");
  evidence.push_back({"/run/tuned/tuned.pid", running ? "(present)" : "(missing)"});
  if (!running && systemd) {
    sev = std::max(sev, Severity::kInfo);
    problems.push_back("the tuned daemon is not running: the profile's settings are not applied");
    fix += "systemctl enable --now tuned\n";
  }

  Finding f;
  if (problems.empty()) {
    f = MakeFinding(id, title, Severity::kOk,
                    "profile " + active.value +
                        (lineage.count("cpu-partitioning") ? ", isolated cores booted" : ""));
  } else {
    f = ProblemFinding(id, title, sev, problems, fix);
  }
  f.needs_reboot = reboot;
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace accel::doctor
