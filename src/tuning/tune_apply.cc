// How a plan is applied: the kernel command line, nova.conf and the commands, from the pages
// and CPU sets PlanTuning chose.
#include <string>
#include <vector>

#include "common/strings.h"
#include "tuning/tune_internal.h"

namespace accel::tuning {

namespace {


bool ModelHas(const topology::HostTopology& host, const std::string& word) {
  for (const topology::Package& p : host.packages)
    if (p.model.find(word) != std::string::npos) return true;
  return false;
}

// IOMMU on, in passthrough mode for the host's own DMA (only assigned devices are translated).
std::vector<std::string> IommuArgs(const topology::HostTopology& host) {
  // AMD's IOMMU is on whenever the firmware enables it; amd_iommu= takes only off/fullflush/...
  if (ModelHas(host, "AMD")) return {"iommu=pt"};
  if (ModelHas(host, "Neoverse") || ModelHas(host, "Grace") || ModelHas(host, "Ampere"))
    return {"iommu.passthrough=1"};
  return {"intel_iommu=on", "iommu=pt"};
}

// "hugepages=0:16,1:16" (the per-node form; a plain count on a one-node host).
std::string HugepagesArg(const topology::HostTopology& host, const TunePlan& plan, bool one_gig) {
  std::vector<std::string> parts;
  uint64_t total = 0;
  for (const NodePlan& np : plan.nodes) {
    int index = host.NodeIndex(np.node);
    if (index < 0 || host.numa_nodes[index].memory_kib == 0) continue;
    uint64_t pages = one_gig ? np.pages_1g : np.pages_2m;
    parts.push_back(std::to_string(np.node) + ":" + std::to_string(pages));
    total += pages;
  }
  return "hugepages=" + (parts.size() == 1 ? std::to_string(total) : JoinStrings(parts, ","));
}

std::vector<std::string> KernelArgs(const topology::HostTopology& host, const TunePlan& plan,
                                    bool pin) {
  std::vector<std::string> args = IommuArgs(host);
  uint64_t pages_1g = 0, pages_2m = 0;
  for (const NodePlan& np : plan.nodes) {
    pages_1g += np.pages_1g;
    pages_2m += np.pages_2m;
  }
  if (pages_1g > 0) {
    args.insert(args.end(), {"default_hugepagesz=1G", "hugepagesz=1G", HugepagesArg(host, plan, true)});
  }
  if (pages_2m > 0) {
    if (pages_1g == 0) args.push_back("default_hugepagesz=2M");
    args.insert(args.end(), {"hugepagesz=2M", HugepagesArg(host, plan, false)});
  }
  if (pin && !plan.dedicated.Empty()) {
    std::string cpus = plan.dedicated.ToString();
    args.push_back("isolcpus=managed_irq,domain," + cpus);
    args.push_back("nohz_full=" + cpus);
    args.push_back("rcu_nocbs=" + cpus);
    args.push_back("irqaffinity=" + plan.housekeeping.ToString());
  }
  return args;
}

std::vector<std::string> NovaConf(const TunePlan& plan, bool pin, const TuneOptions& options) {
  uint64_t host_mib = 0;
  for (const NodePlan& np : plan.nodes) host_mib += np.host_memory_mib;
  std::vector<std::string> lines = {"[DEFAULT]", "reserved_host_memory_mb = " + std::to_string(host_mib),
                                    "[compute]"};
  if (pin) lines.push_back("cpu_dedicated_set = " + plan.dedicated.ToString());
  lines.push_back("cpu_shared_set = " + plan.housekeeping.ToString());
  if (options.spare_pages_per_node > 0)
    for (const NodePlan& np : plan.nodes)
      if (np.pages_1g > 0)
        lines.push_back("reserved_huge_pages = node:" + std::to_string(np.node) +
                        ",size:1GB,count:" + std::to_string(options.spare_pages_per_node));
  return lines;
}

std::vector<std::string> Commands(const TunePlan& plan, bool pin) {
  std::string args = JoinStrings(plan.kernel_args, " ");
  std::vector<std::string> c = {
      "# RHEL, Rocky, Alma: add the kernel arguments to every installed kernel",
      "grubby --update-kernel=ALL --args=\"" + args + "\"",
      "# Debian, Ubuntu: the same through /etc/default/grub",
      "sed -i 's|^GRUB_CMDLINE_LINUX_DEFAULT=\"|&" + args + " |' /etc/default/grub && update-grub",
      "# automatic NUMA balancing off, now and after reboots",
      "sysctl -w kernel.numa_balancing=0",
      "echo 'kernel.numa_balancing = 0' > /etc/sysctl.d/90-accel-numa.conf",
  };
  if (pin && !plan.dedicated.Empty()) {
    c.push_back("# tuned: keep IRQs, kernel threads and irqbalance off the dedicated CPUs");
    c.push_back("echo 'isolated_cores=" + plan.dedicated.ToString() +
                "' > /etc/tuned/cpu-partitioning-variables.conf");
    c.push_back("tuned-adm profile cpu-partitioning");
  }
  c.push_back("# then reboot: kernel arguments and boot-time hugepages apply at boot");
  return c;
}

void GeneralNotes(const topology::HostTopology& host, const TuneOptions& options, bool pin,
                  TunePlan* plan) {
  std::vector<std::string>& notes = plan->notes;
  if (!pin)
    notes.push_back("no flavor pins vCPUs: no CPUs are isolated and every CPU is in cpu_shared_set");
  bool multi = plan->nodes.size() > 1;
  bool pages = false;
  for (const NodePlan& np : plan->nodes) pages = pages || np.pages_1g > 0 || np.pages_2m > 0;
  if (pages && multi)
    notes.push_back(
        "hugepages=N:COUNT,... is the per-node boot form of newer kernels; on an older kernel "
        "boot with the total and set /sys/devices/system/node/nodeN/hugepages/*/nr_hugepages "
        "early at boot instead");
  for (const NodePlan& np : plan->nodes) {
    int index = host.NodeIndex(np.node);
    bool has_cpus = index >= 0 && !host.numa_nodes[index].cpus.Empty();
    if (has_cpus && np.guests.empty())
      notes.push_back("node " + std::to_string(np.node) +
                      ": no NUMA-placed instance planned; its dedicated CPUs and memory stay "
                      "free for other flavors");
  }
  int unknown = 0;
  for (const topology::PciDevice& d : host.pci)
    if (d.is_accelerator() && d.numa_node < 0) ++unknown;
  if (unknown > 0)
    notes.push_back(std::to_string(unknown) +
                    " accelerators have no NUMA node (a VM, or firmware without _PXM): they are "
                    "local to no guest cell, so flavors with numa_policy required cannot use them");
  if (options.spare_pages_per_node > 0)
    notes.push_back("each node boots " + std::to_string(options.spare_pages_per_node) +
                    " spare 1G pages, kept from guests by reserved_huge_pages");
}

}  // namespace

void FinishPlan(const topology::HostTopology& host, const TuneOptions& options, bool pin,
                TunePlan* plan) {
  plan->kernel_args = KernelArgs(host, *plan, pin);
  plan->nova_conf = NovaConf(*plan, pin, options);
  plan->commands = Commands(*plan, pin);
  GeneralNotes(host, options, pin, plan);
}

}  // namespace accel::tuning
