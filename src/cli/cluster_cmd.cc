// accel cluster plan: a cluster template's node groups → each group's guest layout, its
// kubelet configuration (with the reason for every field), and the files a cluster needs.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "common/atomic_dir.h"
#include "common/error.h"
#include "common/yaml_out.h"

namespace accel::cli {

namespace {

struct PlanOptions {
  std::string template_file;
  std::string out;
  bool force = false;
  std::string output = "table";
};

void PrintTable(const cluster::ClusterPlan& plan) {
  std::cout << "cluster " << plan.cluster << ": " << plan.groups.size() << " node group"
            << (plan.groups.size() == 1 ? "" : "s") << "\n";
  for (const cluster::GroupPlan& g : plan.groups) {
    const cluster::GuestLayout& l = g.layout;
    std::cout << "\n" << g.group << " (flavor " << g.flavor << ", planned on " << g.hypervisor << ")\n";
    std::cout << "  guest: " << l.vcpus << " vCPUs (" << l.threads_per_core << " thread"
              << (l.threads_per_core == 1 ? "" : "s") << " per core), " << cluster::MiQuantity(l.memory_mib) << ", "
              << (l.cells.empty() ? std::string("no NUMA topology") : std::to_string(l.cells.size()) + " NUMA cell(s)")
              << "\n";
    for (const cluster::GuestCellLayout& c : l.cells) {
      std::cout << "    cell " << c.cell << ": vCPUs " << c.vcpus.ToString() << ", " << cluster::MiQuantity(c.memory_mib)
                << (c.host_page_kib >= 1048576 ? " in 1G host pages" : c.host_page_kib >= 2048 ? " in 2M host pages" : "")
                << ", host node " << c.host_node;
      int devices = 0;
      for (const cluster::GuestDevice& d : l.devices) devices += d.guest_cell == c.cell ? 1 : 0;
      if (devices) std::cout << ", " << devices << " device" << (devices == 1 ? "" : "s");
      std::cout << "\n";
    }
    for (const cluster::GuestHugepagePool& p : g.hugepages)
      std::cout << "    guest hugepages: cell " << p.cell << ": " << p.pages << " x "
                << (p.page_kib >= 1048576 ? "1Gi" : "2Mi") << "\n";
    std::cout << "  kubelet:\n";
    for (const cluster::KubeletChoice& c : g.kubelet.choices)
      std::cout << "    " << c.field << ": " << c.value << "\n      why: " << c.reason << "\n";
    for (const cluster::KubeletFinding& f : g.findings)
      std::cout << "  PROBLEM " << f.field << ": " << f.problem << "\n    fix: " << f.fix << "\n";
  }
}

int Plan(const PlanOptions& o) {
  const cluster::ClusterTemplate t = cluster::LoadClusterTemplate(o.template_file);
  const cluster::ClusterPlan plan = cluster::PlanCluster(t);
  if (o.output == "json") std::cout << cluster::PlanJson(plan).dump(2) << "\n";
  else if (o.output == "yaml") std::cout << ToYaml(cluster::PlanJson(plan));
  else PrintTable(plan);
  const size_t findings = plan.finding_count();
  if (!o.out.empty()) {
    if (findings > 0 && !o.force) {
      std::cerr << "accel cluster plan: " << findings << " problem(s) above; nothing written to " << o.out
                << " (fix the template's kubelet overrides, or --force)\n";
      return kExitNoFit;
    }
    const auto files = cluster::PlanFiles(plan);
    WriteDirectoryAtomically(o.out, files);
    std::cerr << "accel cluster plan: wrote " << files.size() << " files to " << o.out << "\n";
  }
  return findings > 0 ? kExitNoFit : kExitOk;
}

}  // namespace

void RegisterCluster(CLI::App& app, int* exit_code) {
  CLI::App* cluster = app.add_subcommand(
      "cluster",
      "Kubernetes node groups on tuned flavors: from one cluster template (accel.cluster/v1) to\n"
      "each group's guest layout and the kubelet configuration that uses it.");
  cluster->require_subcommand(1);
  auto po = std::make_shared<PlanOptions>();
  CLI::App* plan = cluster->add_subcommand(
      "plan",
      "Derive each node group's guest layout and KubeletConfiguration, and write the files.\n\n"
      "Per group the flavor is placed on the group's hypervisor topology; the guest it gets (NUMA\n"
      "cells, SMT siblings, memory and host pages, which GPU/NIC sits behind which guest cell)\n"
      "decides the kubelet: static CPU Manager with whole-core reservedSystemCPUs on cell 0,\n"
      "single-numa-node only when every device reports a guest cell, a Static Memory Manager whose\n"
      "reservedMemory sums exactly to kubeReserved + systemReserved + evictionHard. The template's\n"
      "kubelet overrides are applied, then every rule is checked again.\n\n"
      "Files (--out DIR, replaced as a whole): plan.json and per group guest-layout.json,\n"
      "kubelet-config.yaml, kubeadm/patches/kubeletconfiguration+strategic.json,\n"
      "kubelet.conf.d/50-accel.conf and the guest's hugepages boot settings.\n\n"
      "Examples:\n"
      "  accel cluster plan examples/cluster/ai-prod.yaml\n"
      "  accel cluster plan examples/cluster/ai-prod.yaml --out /tmp/ai-prod -o json\n\n"
      "Exit status: 0 planned (and written); 1 a kubelet rule is broken (each with its fix;\n"
      "nothing written without --force); 2 bad template (key path and fix; nothing written);\n"
      "5 the output directory could not be written.");
  plan->add_option("template", po->template_file, "cluster template (accel.cluster/v1, YAML or JSON)")->required();
  plan->add_option("--out", po->out, "directory to write the plan's files to (replaced as a whole)");
  plan->add_flag("--force", po->force, "write the files even when a kubelet rule is broken");
  plan->add_option("-o,--output", po->output, "table (default, every choice with its reason), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}))
      ->capture_default_str();
  plan->callback([po, exit_code] { *exit_code = Plan(*po); });
  RegisterClusterCheck(cluster, exit_code);
  RegisterClusterPods(cluster, exit_code);
}

}  // namespace accel::cli
