// Host memory checks: HOST-01 (hugepages per NUMA node against the flavors), HOST-03 (automatic
// NUMA balancing), HOST-04 (transparent hugepages). See docs/doctor.md.
#include <algorithm>
#include <map>
#include <set>

#include "doctor/doctor_internal.h"

namespace accel::doctor {

namespace {

// The bracketed choice of a sysfs selector: "always [madvise] never" → "madvise".
std::string Selected(const std::string& text) {
  size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return text;
  return text.substr(open + 1, close - open - 1);
}

std::string PoolDir(int node, uint64_t size_kib) {
  return "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
         std::to_string(size_kib) + "kB";
}

struct PoolRead {
  FileValue total, free;
  long long free_pages() const {
    std::optional<long long> v = ParseNumber(free.value);
    return free.ok && v ? *v : -1;
  }
};

PoolRead ReadPool(const Context& ctx, int node, uint64_t size_kib) {
  return {ReadFile(ctx.root, PoolDir(node, size_kib) + "/nr_hugepages"),
          ReadFile(ctx.root, PoolDir(node, size_kib) + "/free_hugepages")};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Finding CheckHost01Hugepages(const Context& ctx) {
  const char* id = "HOST-01";
  const char* title = "hugepages per NUMA node";
  std::set<int> accel_nodes;
  for (const topology::PciDevice* d : ctx.accelerators)
    if (d->numa_node >= 0) accel_nodes.insert(d->numa_node);
  if (ctx.options->flavors.empty()) {
    if (!ctx.hypervisor() || ctx.accelerators.empty())
      return MakeFinding(id, title, Severity::kNotApplicable,
                         "hugepages matter for flavors (--role hypervisor --flavors DIR)");
    // Without flavors: say what is there, nothing to compare against.
    Finding f = MakeFinding(id, title, Severity::kInfo, "");
    std::vector<std::string> parts;
    for (int node : accel_nodes) {
      PoolRead p = ReadPool(ctx, node, 1048576);
      f.evidence.push_back(p.free.ToEvidence());
      parts.push_back("node " + std::to_string(node) + ": " +
                      (p.free.ok ? p.free.value : std::string("?")));
    }
    f.summary = "no --flavors to check against; free 1G pages on accelerator nodes: " +
                (parts.empty() ? std::string("(no node known)") : JoinList(parts, 8));
    return f;
  }
  if (!ctx.plan)
    return MakeFinding(id, title, Severity::kInfo, "could not plan the flavors: " + ctx.plan_error);
  std::vector<Evidence> evidence;
  std::vector<std::string> short_nodes, ok_nodes;
  std::string runtime;  // the runtime part of the fix: raise each short pool by its shortfall
  for (const tuning::NodePlan& np : ctx.plan->nodes) {
    for (auto [size, need] : {std::pair<uint64_t, uint64_t>{1048576, np.pages_1g},
                              std::pair<uint64_t, uint64_t>{2048, np.pages_2m}}) {
      if (need == 0) continue;
      PoolRead p = ReadPool(ctx, np.node, size);
      evidence.push_back(p.total.ToEvidence());
      evidence.push_back(p.free.ToEvidence());
      long long have = std::max(0LL, p.free_pages());
      std::string label = "node " + std::to_string(np.node) + " " +
                          (size == 1048576 ? "1G" : "2M") + ": " + std::to_string(have) +
                          " free, flavors need " + std::to_string(need);
      if (static_cast<unsigned long long>(have) >= need) {
        ok_nodes.push_back(label);
        continue;
      }
      short_nodes.push_back(label);
      std::optional<long long> total = ParseNumber(p.total.value);
      unsigned long long target = (total ? static_cast<unsigned long long>(*total) : 0) + need -
                                  static_cast<unsigned long long>(have);
      runtime += "now, if memory allows: echo " + std::to_string(target) + " > " +
                 PoolDir(np.node, size) + "/nr_hugepages\n";
    }
  }
  if (short_nodes.empty()) {
    Finding ok = MakeFinding(id, title, Severity::kOk,
                             ok_nodes.empty() ? "the flavors need no hugepages"
                                              : "enough free hugepages: " + JoinList(ok_nodes, 8));
    ok.evidence = std::move(evidence);
    return ok;
  }
  Finding out = MakeFinding(id, title, Severity::kFail,
                            "not enough free hugepages for the flavors: " + JoinList(short_nodes, 8));
  out.evidence = std::move(evidence);
  std::string args;
  for (const std::string& a : ctx.plan->kernel_args)
    if (a.rfind("hugepage", 0) == 0 || a.rfind("default_hugepagesz", 0) == 0)
      args += (args.empty() ? "" : " ") + a;
  std::string fix = "kernel command line (reliable: 1G pages fragment away at run time): " +
                    (args.empty() ? std::string("see accel tune plan --flavors ...") : args) + "\n" +
                    runtime;
  fix.pop_back();
  out.fix = fix;
  out.needs_reboot = true;
  return out;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost03NumaBalancing(const Context& ctx) {
  const char* id = "HOST-03";
  const char* title = "automatic NUMA balancing";
  FileValue v = ReadFile(ctx.root, "/proc/sys/kernel/numa_balancing");
  Finding f;
  if (!ctx.multi_node()) {
    f = MakeFinding(id, title, Severity::kNotApplicable, "one NUMA node: nothing to balance");
  } else if (v.missing) {
    f = MakeFinding(id, title, Severity::kNotApplicable,
                    "the kernel has no automatic NUMA balancing");
  } else if (!v.ok) {
    f = MakeFinding(id, title, Severity::kInfo, "could not read the setting");
  } else if (v.value == "0") {
    f = MakeFinding(id, title, Severity::kOk, "off");
  } else {
    f = MakeFinding(id, title, Severity::kWarn,
                    "on (" + v.value +
                        "): the kernel unmaps and migrates pages of pinned, NUMA-placed guests "
                        "and training processes, adding page faults and jitter");
    f.fix =
        "sysctl -w kernel.numa_balancing=0\n"
        "echo 'kernel.numa_balancing = 0' > /etc/sysctl.d/90-accel-numa.conf   # keep after reboot";
  }
  f.evidence = {v.ToEvidence()};
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost04Thp(const Context& ctx) {
  const char* id = "HOST-04";
  const char* title = "transparent hugepages";
  FileValue enabled = ReadFile(ctx.root, "/sys/kernel/mm/transparent_hugepage/enabled");
  FileValue defrag = ReadFile(ctx.root, "/sys/kernel/mm/transparent_hugepage/defrag");
  Finding f;
  if (enabled.missing && defrag.missing) {
    f = MakeFinding(id, title, Severity::kNotApplicable, "the kernel has no transparent hugepages");
  } else if (!enabled.ok || !defrag.ok) {
    f = MakeFinding(id, title, Severity::kInfo, "could not read the THP settings");
  } else {
    std::string en = Selected(enabled.value), df = Selected(defrag.value);
    std::string state = "enabled [" + en + "], defrag [" + df + "]";
    if (df == "always") {
      f = MakeFinding(id, title, Severity::kWarn,
                      state + ": page faults stall in direct compaction when memory is fragmented "
                              "(vCPU and data-loader hiccups)");
      f.fix =
          "echo madvise > /sys/kernel/mm/transparent_hugepage/defrag\n"
          "keep it: a tuned profile ([vm] transparent_hugepages / sysfs plugin) or a tmpfiles.d "
          "line: w /sys/kernel/mm/transparent_hugepage/defrag - - - - madvise";
    } else if (en == "never") {
      f = MakeFinding(id, title, Severity::kInfo,
                      state + ": memory not backed by explicit hugepages gets 4 KiB pages only" +
                          std::string(ctx.hypervisor() ? " (guests without hw:mem_page_size)" : ""));
      f.fix = "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled   # or always "
              "(tuned virtual-host); transparent_hugepage=madvise on the kernel command line";
    } else {
      f = MakeFinding(id, title, Severity::kOk, state);
    }
  }
  f.evidence = {enabled.ToEvidence(), defrag.ToEvidence()};
  return f;
}

}  // namespace accel::doctor
