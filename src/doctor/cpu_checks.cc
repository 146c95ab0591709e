// CPU checks: HOST-02 (isolation on the kernel command line), HOST-05 (frequency governor),
// HOST-06 (idle states), HOST-07 (IRQ affinity of GPUs and NICs). See docs/doctor.md.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "doctor/doctor_internal.h"

namespace accel::doctor {

namespace {

using topology::PciDevice;

// "cpu12" → true (not "cpufreq", "cpuidle").
bool IsCpuDir(const std::string& name) {
  if (name.size() < 4 || name.rfind("cpu", 0) != 0) return false;
  for (size_t i = 3; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

std::vector<std::string> CpuDirs(const Context& ctx) {
  std::vector<std::string> cpus;
  for (const std::string& n : ListDir(ctx.root, "/sys/devices/system/cpu"))
    if (IsCpuDir(n)) cpus.push_back(n);
  return cpus;
}

// A CPU list from sysfs/procfs ("0-3,8"); "(null)" and "" are empty.
bool ParseSysList(const Context& ctx, const std::string& text, CpuSet* out) {
  std::string error;
  if (text.empty() || text == "(null)") {
    *out = CpuSet();
    return true;
  }
  return ParseKernelCpuList(text, std::max(ctx.nr_cpus, 65536 / 2), out, &error);
}

}  // namespace

CpuSet IsolatedCpus(const Context& ctx, std::vector<Evidence>* evidence) {
  FileValue sys = ReadFile(ctx.root, "/sys/devices/system/cpu/isolated");
  if (evidence) evidence->push_back(sys.ToEvidence());
  CpuSet set;
  if (sys.ok && ParseSysList(ctx, sys.value, &set)) return set;
  if (std::optional<std::string> iso = ctx.cmdline.Last("isolcpus")) {
    IsolCpus parsed;
    std::string error;
    if (ParseIsolCpus(*iso, ctx.nr_cpus, &parsed, &error)) return parsed.cpus;
  }
  return CpuSet();
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost02Cmdline(const Context& ctx) {
  const char* id = "HOST-02";
  const char* title = "kernel command line CPU isolation";
  std::vector<Evidence> evidence = {ctx.cmdline_file.ToEvidence()};
  if (!ctx.cmdline_file.ok) {
    Finding f = MakeFinding(id, title, Severity::kInfo, "could not read the kernel command line");
    f.evidence = std::move(evidence);
    return f;
  }
  const KernelCmdline& cmd = ctx.cmdline;
  std::vector<std::string> problems, notes;
  Severity sev = Severity::kOk;
  auto warn = [&](std::string p) {
    problems.push_back(std::move(p));
    sev = std::max(sev, Severity::kWarn);
  };
  // Each list as the kernel reads it; a bad one is ignored by the kernel entirely.
  auto list = [&](const char* key, CpuSet* out) -> bool {
    std::optional<std::string> v = cmd.Last(key);
    if (!v) return false;
    std::string error;
    if (!ParseKernelCpuList(*v, ctx.nr_cpus, out, &error)) {
      warn(std::string(key) + "=" + *v + " is ignored by the kernel: " + error);
      return false;
    }
    return true;
  };
  IsolCpus iso;
  bool has_iso = false;
  if (std::optional<std::string> v = cmd.Last("isolcpus")) {
    std::string error;
    if (ParseIsolCpus(*v, ctx.nr_cpus, &iso, &error))
      has_iso = true;
    else
      warn("isolcpus=" + *v + " is ignored by the kernel: " + error);
  }
  CpuSet nohz, nocbs, irqaff;
  bool has_nohz = list("nohz_full", &nohz);
  bool has_nocbs = false;
  if (std::optional<std::string> v = cmd.Last("rcu_nocbs"); v && !v->empty())
    has_nocbs = list("rcu_nocbs", &nocbs);
  bool has_irqaff = list("irqaffinity", &irqaff);

  FileValue sys_iso = ReadFile(ctx.root, "/sys/devices/system/cpu/isolated");
  FileValue sys_nohz = ReadFile(ctx.root, "/sys/devices/system/cpu/nohz_full");
  evidence.push_back(sys_iso.ToEvidence());
  evidence.push_back(sys_nohz.ToEvidence());
  CpuSet isolated = has_iso ? iso.cpus : CpuSet();

  if (has_nohz && !nohz.IsSubsetOf(isolated))
    warn("nohz_full CPUs " + nohz.Minus(isolated).ToString() +
         " are not in isolcpus: the scheduler still balances tasks onto tick-less CPUs");
  if (has_nohz && has_nocbs && !nohz.IsSubsetOf(nocbs)) {
    // The kernel offloads RCU callbacks of nohz_full CPUs anyway; the line just says otherwise.
    notes.push_back("rcu_nocbs lacks nohz_full CPUs " + nohz.Minus(nocbs).ToString() +
                    " (the kernel adds them itself)");
    sev = std::max(sev, Severity::kInfo);
  }
  if (has_irqaff && irqaff.Intersects(isolated))
    warn("irqaffinity includes isolated CPUs " + irqaff.Intersect(isolated).ToString());
  if (has_irqaff && irqaff.Empty()) warn("irqaffinity is empty");
  // What the running kernel did with it: isolated lists domain-isolated CPUs only.
  if (sys_iso.ok) {
    CpuSet running;
    CpuSet expect = has_iso && iso.domain ? iso.cpus : CpuSet();
    if (ParseSysList(ctx, sys_iso.value, &running) && running != expect)
      warn("the kernel isolated " + CpuSetText(running) + " but the command line asks for " +
           CpuSetText(expect));
  }
  if (sys_nohz.ok && has_nohz) {
    CpuSet running;
    if (ParseSysList(ctx, sys_nohz.value, &running) && running != nohz)
      warn("the kernel runs nohz_full on " + CpuSetText(running) + " but the command line asks for " +
           CpuSetText(nohz));
  }
  if (ctx.hypervisor()) {
    std::set<int> accel_nodes;
    for (const PciDevice* d : ctx.accelerators)
      if (d->numa_node >= 0) accel_nodes.insert(d->numa_node);
    std::vector<std::string> bare;
    for (int n : accel_nodes) {
      int idx = ctx.host->NodeIndex(n);
      if (idx >= 0 && !ctx.host->numa_nodes[idx].cpus.Intersects(isolated))
        bare.push_back("node " + std::to_string(n));
    }
    if (!bare.empty())
      warn("NUMA nodes with accelerators but no isolated CPUs: " + JoinList(bare) +
           " (pinned vCPUs there share CPUs with host threads and IRQs)");
    if (ctx.plan && ctx.plan->dedicated != isolated)
      warn("isolated CPUs " + CpuSetText(isolated) + " differ from the plan's dedicated set " +
           CpuSetText(ctx.plan->dedicated));
  }
  Finding f;
  if (problems.empty()) {
    std::string what = has_iso ? "isolcpus=" + iso.cpus.ToString() : "no isolcpus";
    if (has_nohz) what += ", nohz_full=" + nohz.ToString();
    if (has_irqaff) what += ", irqaffinity=" + irqaff.ToString();
    f = MakeFinding(id, title, sev, what + ": consistent" +
                                        (notes.empty() ? "" : "; " + JoinList(notes)));
  } else {
    std::vector<std::string> all = problems;
    all.insert(all.end(), notes.begin(), notes.end());
    f = ProblemFinding(id, title, sev, all);
    std::string args;
    if (ctx.plan)
      for (const std::string& a : ctx.plan->kernel_args)
        if (a.rfind("isolcpus", 0) == 0 || a.rfind("nohz", 0) == 0 || a.rfind("rcu_nocbs", 0) == 0 ||
            a.rfind("irqaffinity", 0) == 0)
          args += (args.empty() ? "" : " ") + a;
    f.fix = (args.empty()
                 ? std::string("make the lists agree: isolcpus=managed_irq,domain,<dedicated> "
                               "nohz_full=<dedicated> rcu_nocbs=<dedicated> "
                               "irqaffinity=<housekeeping> (accel tune plan --flavors DIR computes them)")
                 : "kernel command line from the plan: " + args) +
            "\nedit GRUB_CMDLINE_LINUX (or grubby --update-kernel=ALL --args=...), or tuned "
            "cpu-partitioning; reboot";
    f.needs_reboot = true;
  }
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost05Governor(const Context& ctx) {
  const char* id = "HOST-05";
  const char* title = "CPU frequency governor";
  std::map<std::string, int> counts;
  int unreadable = 0;
  for (const std::string& cpu : CpuDirs(ctx)) {
    FileValue v = ReadFile(ctx.root, "/sys/devices/system/cpu/" + cpu + "/cpufreq/scaling_governor");
    if (v.missing) continue;
    if (!v.ok) {
      ++unreadable;
      continue;
    }
    counts[v.value]++;
  }
  const std::string pattern = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor";
  if (counts.empty() && unreadable == 0)
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "no cpufreq (a VM, or the firmware controls frequency)");
  std::vector<std::string> parts;
  int total = unreadable, perf = 0;
  for (const auto& [gov, n] : counts) {
    parts.push_back(gov + " x" + std::to_string(n));
    total += n;
    if (gov == "performance") perf = n;
  }
  if (unreadable) parts.push_back("unreadable x" + std::to_string(unreadable));
  FileValue driver = ReadFile(ctx.root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver");
  Finding f;
  if (perf == total) {
    f = MakeFinding(id, title, Severity::kOk, "performance on all " + std::to_string(total) + " CPUs");
  } else {
    f = MakeFinding(id, title, Severity::kWarn,
                    std::to_string(total - perf) + " of " + std::to_string(total) +
                        " CPUs not on the performance governor (" + JoinList(parts) +
                        "): clocks ramp up late for bursty data loading and vCPU wakeups");
    f.fix =
        "cpupower frequency-set -g performance   # now\n"
        "keep it: tuned-adm profile accelerator-performance (training) or cpu-partitioning / "
        "virtual-host with governor=performance (hypervisor)";
  }
  f.evidence = {{pattern, JoinList(parts)}, driver.ToEvidence()};
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost06CStates(const Context& ctx) {
  const char* id = "HOST-06";
  const char* title = "CPU idle states";
  constexpr long long kMaxLatencyUs = 10;
  struct State {
    long long latency = 0;
    int enabled = 0;
  };
  // Idle states are the cpuidle driver's, the same list on every CPU: names and latencies come
  // from the first CPU that has them, and only each CPU's "disable" switch of the deep ones is
  // read (a 400-CPU host stays at a few hundred reads).
  std::vector<std::string> cpus = CpuDirs(ctx);
  std::vector<std::pair<std::string, State>> deep;  // state dir → name, latency, enabled count
  std::vector<std::string> deep_dirs;
  bool has_idle = false;
  for (const std::string& cpu : cpus) {
    std::string base = "/sys/devices/system/cpu/" + cpu + "/cpuidle";
    std::vector<std::string> states = ListDir(ctx.root, base);
    states.erase(std::remove_if(states.begin(), states.end(),
                                [](const std::string& s) { return s.rfind("state", 0) != 0; }),
                 states.end());
    if (states.empty()) continue;
    has_idle = true;
    for (const std::string& s : states) {
      FileValue latency = ReadFile(ctx.root, base + "/" + s + "/latency");
      std::optional<long long> lat = ParseNumber(latency.value);
      if (!latency.ok || !lat || *lat <= kMaxLatencyUs) continue;
      FileValue name = ReadFile(ctx.root, base + "/" + s + "/name");
      deep.push_back({name.ok ? name.value : s, State{*lat, 0}});
      deep_dirs.push_back(s);
    }
    break;
  }
  for (const std::string& cpu : cpus) {
    std::string base = "/sys/devices/system/cpu/" + cpu + "/cpuidle/";
    for (size_t i = 0; i < deep_dirs.size(); ++i) {
      FileValue disable = ReadFile(ctx.root, base + deep_dirs[i] + "/disable");
      if (!disable.missing && (!disable.ok || disable.value == "0")) deep[i].second.enabled++;
    }
  }
  FileValue driver = ReadFile(ctx.root, "/sys/devices/system/cpu/cpuidle/current_driver");
  if (!has_idle) {
    Finding f = MakeFinding(id, title, Severity::kNotApplicable,
                            "no cpuidle states (a VM, or idle=poll)");
    f.evidence = {driver.ToEvidence()};
    return f;
  }
  Finding f;
  std::vector<std::string> parts;
  for (const auto& [name, st] : deep)
    if (st.enabled > 0)
      parts.push_back(name + " (" + std::to_string(st.latency) + " us) on " +
                      std::to_string(st.enabled) + " CPUs");
  if (parts.empty()) {
    f = MakeFinding(id, title, Severity::kOk,
                    "no idle state deeper than " + std::to_string(kMaxLatencyUs) +
                        " us exit latency is enabled");
  } else {
    f = MakeFinding(id, title, Severity::kWarn,
                    "deep idle states enabled: " + JoinList(parts) +
                        "; waking from them adds latency to every interrupt and doorbell");
    f.fix =
        "cpupower idle-set -D " + std::to_string(kMaxLatencyUs) +
        "   # now: disables states with exit latency above 10 us\n"
        "keep it: tuned-adm profile accelerator-performance (force_latency) or cpu-partitioning, "
        "or the kernel command line intel_idle.max_cstate=1 processor.max_cstate=1 (reboot)";
  }
  f.evidence = {{"/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}",
                 parts.empty() ? "no enabled state above 10 us" : JoinList(parts)},
                driver.ToEvidence()};
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost07IrqAffinity(const Context& ctx) {
  const char* id = "HOST-07";
  const char* title = "IRQ affinity of GPUs and NICs";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  std::vector<const PciDevice*> devices = ctx.accelerators;
  devices.insert(devices.end(), ctx.rdma_pfs.begin(), ctx.rdma_pfs.end());
  // IRQ numbers per device: msi_irqs/ lists them; /proc/interrupts names mlx5 vectors
  // "mlx5_comp3@pci:0000:18:00.0" and VFIO ones "vfio-msix[0](0000:1b:00.0)".
  std::map<const PciDevice*, std::set<int>> irqs;
  for (const PciDevice* d : devices)
    for (const std::string& n : ListDir(ctx.root, PciAttr(d->address, "msi_irqs")))
      if (std::optional<long long> v = ParseNumber(n)) irqs[d].insert(static_cast<int>(*v));
  FileValue interrupts = ReadFile(ctx.root, "/proc/interrupts", 8 << 20);
  if (interrupts.ok) {
    std::istringstream lines(interrupts.value);
    std::string line;
    while (std::getline(lines, line)) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string head = line.substr(0, colon);
      head.erase(0, std::min(head.size(), head.find_first_not_of(' ')));
      std::optional<long long> irq = ParseNumber(head);
      if (!irq) continue;
      for (const PciDevice* d : devices)
        if (line.find(d->address, colon) != std::string::npos) irqs[d].insert(static_cast<int>(*irq));
    }
  }
  size_t total = 0;
  for (const auto& [d, set] : irqs) total += set.size();
  if (total == 0) {
    Finding f = MakeFinding(id, title, Severity::kNotApplicable,
                            "no IRQs of the accelerators or NICs found");
    f.evidence = {interrupts.ok ? Evidence{interrupts.path, "(no matching lines)"}
                                : interrupts.ToEvidence(),
                  {PciAttr(devices.front()->address, "msi_irqs"), "(empty)"}};
    return f;
  }
  std::vector<Evidence> iso_evidence;
  CpuSet isolated = IsolatedCpus(ctx, &iso_evidence);
  bool isolation = !isolated.Empty();
  std::vector<Evidence> evidence;
  std::vector<std::string> on_isolated, mostly_remote, some_remote;
  CpuSet on_isolated_cpus;
  for (const PciDevice* d : devices) {
    auto it = irqs.find(d);
    if (it == irqs.end()) continue;
    CpuSet local;
    if (!isolation && d->numa_node >= 0) {
      FileValue lc = ReadFile(ctx.root, PciAttr(d->address, "local_cpulist"));
      if (!(lc.ok && ParseSysList(ctx, lc.value, &local))) {
        int idx = ctx.host->NodeIndex(d->numa_node);
        if (idx >= 0) local = ctx.host->numa_nodes[idx].cpus;
      }
    }
    int bad = 0, remote = 0;
    for (int irq : it->second) {
      std::string dir = "/proc/irq/" + std::to_string(irq);
      FileValue aff = ReadFile(ctx.root, dir + "/effective_affinity_list");
      if (!aff.ok || aff.value.empty()) aff = ReadFile(ctx.root, dir + "/smp_affinity_list");
      CpuSet cpus;
      if (!aff.ok || !ParseSysList(ctx, aff.value, &cpus) || cpus.Empty()) continue;
      if (isolation && cpus.Intersects(isolated)) {
        if (++bad <= 2) evidence.push_back({aff.path, aff.value + " (" + DeviceLabel(*d) + ")"});
        on_isolated_cpus = on_isolated_cpus.Union(cpus.Intersect(isolated));
      } else if (!isolation && !local.Empty() && !cpus.IsSubsetOf(local)) {
        if (++remote <= 1)
          evidence.push_back(
              {aff.path, aff.value + " (" + DeviceLabel(*d) + ", local " + local.ToString() + ")"});
      }
    }
    std::string label = DeviceLabel(*d) + " " + std::to_string(bad ? bad : remote) + "/" +
                        std::to_string(it->second.size());
    if (bad) on_isolated.push_back(label);
    if (remote * 2 > static_cast<int>(it->second.size()))
      mostly_remote.push_back(label);
    else if (remote)
      some_remote.push_back(label);
  }
  Finding f;
  if (!on_isolated.empty()) {
    f = MakeFinding(id, title, Severity::kWarn,
                    "device IRQs may run on isolated CPUs " + on_isolated_cpus.ToString() + ": " +
                        JoinList(on_isolated, 4));
    f.fix =
        "irqbalance: IRQBALANCE_BANNED_CPULIST=" + isolated.ToString() +
        " in /etc/sysconfig/irqbalance (Debian: /etc/default/irqbalance); systemctl restart irqbalance\n"
        "now: echo <housekeeping CPUs> > /proc/irq/<N>/smp_affinity_list for each IRQ listed\n"
        "kernel-managed vectors (mlx5 completion queues) follow isolcpus=managed_irq,... (reboot)";
  } else if (!mostly_remote.empty() || !some_remote.empty()) {
    std::vector<std::string> all = mostly_remote;
    all.insert(all.end(), some_remote.begin(), some_remote.end());
    f = MakeFinding(id, title, mostly_remote.empty() ? Severity::kInfo : Severity::kWarn,
                    "device IRQs served by CPUs of another NUMA node (remote/total): " +
                        JoinList(all, 4));
    f.fix =
        "pin them to the device's local CPUs: echo <local_cpulist> > /proc/irq/<N>/smp_affinity_list,\n"
        "or MLNX_OFED's set_irq_affinity_bynode.sh <node> <netdev>; keep irqbalance from undoing it\n"
        "(IRQBALANCE_BANNED_CPULIST, or stop irqbalance)";
  } else {
    f = MakeFinding(id, title, Severity::kOk,
                    std::to_string(total) + " device IRQs " +
                        (isolation ? "stay off the isolated CPUs" : "run on their device's NUMA node"));
  }
  f.evidence = iso_evidence;
  f.evidence.insert(f.evidence.end(), evidence.begin(), evidence.end());
  return f;
}

}  // namespace accel::doctor
