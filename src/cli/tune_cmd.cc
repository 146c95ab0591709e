// accel tune plan: kernel command line, hugepages and CPU sets for a flavor hypervisor.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"
#include "topology/sources.h"
#include "tuning/flavor_set.h"
#include "tuning/tune_plan.h"

namespace accel::cli {

namespace {

struct TunePlanCliOptions {
  std::string flavors;
  std::string topology = "live";
  std::string aliases;
  std::vector<std::string> counts;
  int housekeeping_cores = 1;
  int spare_pages = 0;
  uint64_t host_memory_mib = 0;
  std::string output = "text";
};

// "NAME=N" -> (NAME, N).
std::pair<std::string, int> ParseCount(const std::string& text) {
  size_t eq = text.rfind('=');
  const char* hint = "write --count FLAVOR=N, e.g. --count gpu-1g=8";
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--count", text, "is not NAME=N", hint);
  std::string digits = text.substr(eq + 1);
  if (digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--count", text, "\"" + digits + "\" is not a whole number of instances", hint);
  return {text.substr(0, eq), std::stoi(digits)};
}

int RunTunePlan(const TunePlanCliOptions& o) {
  tuning::FlavorSet set = tuning::LoadFlavorSet(o.flavors, o.aliases);
  tuning::TuneOptions options;
  for (const std::string& c : o.counts) {
    auto [name, n] = ParseCount(c);
    if (!options.counts.emplace(name, n).second)
      throw InputError("--count", name, "is given twice", "give one count per flavor");
  }
  options.housekeeping_cores_per_node = o.housekeeping_cores;
  options.spare_pages_per_node = o.spare_pages;
  options.host_memory_mib_per_node = o.host_memory_mib;
  options.aliases = set.aliases;
  topology::HostTopology host = topology::LoadTopology(o.topology);
  tuning::TunePlan plan = tuning::PlanTuning(host, set.flavors, options);
  std::cout << (o.output == "json" ? tuning::RenderTunePlanJson(plan)
                                   : tuning::RenderTunePlanText(plan));
  std::cout.flush();
  // Exit 1 when an instance the operator counted does not fit.
  for (const auto& [name, n] : options.counts) {
    int planned = 0;
    for (const std::string& p : plan.planned)
      if (p.rfind(name + " #", 0) == 0) ++planned;
    if (planned < n) return kExitNoFit;
  }
  return kExitOk;
}

}  // namespace

void RegisterTune(CLI::App& app, int* exit_code) {
  CLI::App* tune = app.add_subcommand("tune", "Host tuning for accelerator flavors");
  tune->require_subcommand(1);
  auto opts = std::make_shared<TunePlanCliOptions>();
  CLI::App* plan = tune->add_subcommand(
      "plan",
      "Plan a hypervisor for accelerator flavors: place their instances one by one with the\n"
      "placement engine, then print the boot-time hugepages per NUMA node they take, the CPUs to\n"
      "isolate for pinned vCPUs (isolcpus, nohz_full, rcu_nocbs) and those kept for the host\n"
      "(irqaffinity, Nova cpu_shared_set), IOMMU passthrough, nova.conf lines, and the grubby /\n"
      "update-grub, sysctl and tuned commands that apply it. Instances that do not fit are named\n"
      "in the notes. `accel doctor --flavors` checks a running host against the same plan.\n\n"
      "Without --count, flavors that request PCI devices get as many instances as the host's\n"
      "devices allow; other flavors one each.\n\n"
      "Examples:\n"
      "  accel tune plan --topology fixtures/hosts/hgx-h100.json --flavors examples/flavors/gpu-1g.yaml \\\n"
      "      --aliases examples/flavors/aliases.json            # 8 one-GPU guests\n"
      "  accel tune plan --flavors examples/flavors --count gpu-1g=4 --count numa2=2 \\\n"
      "      --topology fixtures/hosts/hgx-h100.json            # aliases* in the directory are used\n"
      "  accel tune plan --flavors flavors/ --housekeeping-cores 2 -o json > plan.json\n"
      "  accel tune plan --flavors flavors/ --topology /tmp/sos/   # a copy of a host's /sys\n\n"
      "Exit status: 0 planned; 1 some counted instances do not fit; 2 bad input.");
  plan->add_option("--flavors", opts->flavors,
                   "Flavor file, or a directory of *.yaml/*.yml/*.json flavor files (files named "
                   "aliases* there are PCI alias tables)")
      ->required();
  plan->add_option("--topology,-t", opts->topology,
                   "'live', an accel host JSON, an hwloc XML, or a directory holding a copy of a "
                   "host's sys/ (sysfs:DIR)")
      ->capture_default_str();
  plan->add_option("--aliases", opts->aliases,
                   "Nova [pci]alias definitions (default: aliases* in --flavors DIR, else "
                   "aliases by accelerator kind: gpu, hpu, nic)");
  plan->add_option("--count", opts->counts,
                   "NAME=N: plan N instances of flavor NAME (repeatable)");
  plan->add_option("--housekeeping-cores", opts->housekeeping_cores,
                   "Physical cores per NUMA node kept for the host (IRQs, emulator threads of "
                   "shared guests, the OS)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  plan->add_option("--spare-pages", opts->spare_pages,
                   "Extra 1 GiB pages per NUMA node, kept from guests (reserved_huge_pages)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  plan->add_option("--host-memory-mb", opts->host_memory_mib,
                   "Memory per NUMA node left in base pages for the host (default: 1/32 of the "
                   "node, at least 4096)");
  plan->add_option("-o,--output", opts->output, "Output: text or json (accel.tune-plan/v1)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  plan->callback([opts, exit_code] { *exit_code = RunTunePlan(*opts); });
}

}  // namespace accel::cli
