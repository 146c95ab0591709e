// accel fabric env|pod|topo-xml|netconf: settings and configs derived from the pairing.
// `pod` writes a Kubeflow PyTorchJob (Training Operator v1) or, with -o trainjob, a Trainer v2
// ClusterTrainingRuntime + TrainJob (device plugin resources or a DRA claim template).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/fabric_common.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/structured_file.h"
#include "fabric/guest_topology.h"
#include "fabric/network_configs.h"
#include "fabric/nic_ports.h"
#include "fabric/trainer_v2.h"
#include "fabric/training_env.h"

namespace accel::cli {

namespace {

// NCCL reads this path in a guest (or pod) without NCCL_TOPO_FILE (NCCL >= 2.10).
constexpr const char* kNcclDefaultTopoPath = "/var/run/nvidia-topologyd/virtualTopology.xml";

struct EnvCmdOptions {
  FabricInputs inputs;
  fabric::TrainingOptions training;
  std::string output = "shell";
  /// pod -o trainjob: the runtime's name and how pods get GPUs and NICs.
  fabric::TrainerV2Options trainer;
  std::string claims = "device-plugin";  ///< --claims as typed: device-plugin or dra
};

struct TopoXmlOptions {
  FabricInputs inputs;
  std::string domain;
  std::vector<std::string> guest_map;
  std::string output;  // "" = stdout
};

struct NetconfOptions {
  FabricInputs inputs;
  std::string kind = "nicclusterpolicy";
  fabric::NetworkConfigOptions config;
  bool no_per_numa = false;
};

void PrintWarnings(const std::string& cmd, const std::vector<std::string>& warnings,
                   const char* label = "warning") {
  for (const std::string& w : warnings)
    std::cerr << "accel fabric " << cmd << ": " << label << ": " << w << "\n";
}

// The RDMA ports LoadFabric paired with (same rule: --root, or / for a live topology), for
// the RoCE v2 GID check it cannot see through the Fabric.
std::vector<fabric::NicPort> PortsOf(const FabricInputs& inputs) {
  if (!inputs.root.empty()) return fabric::ReadNicPorts(inputs.root);
  if (inputs.topology == "live") return fabric::ReadNicPorts("/");
  return {};
}

fabric::Fabric LoadForTraining(EnvCmdOptions* opts) {
  topology::HostTopology host;
  fabric::Fabric f = LoadFabric(opts->inputs, &host);
  opts->training.ports = PortsOf(opts->inputs);
  for (const std::string& gpu : f.gpus) {
    if (const topology::PciDevice* dev = host.FindPci(gpu)) {
      const std::string vendor = topology::AcceleratorVendor(*dev);
      if (!vendor.empty()) opts->training.accelerator_vendor = vendor;
      break;
    }
  }
  if (f.gpus.empty())
    throw InputError(opts->inputs.topology, "", "has no accelerator to pair",
                     "point --topology at a GPU host");
  return f;
}

int RunEnv(EnvCmdOptions opts) {
  const fabric::Fabric f = LoadForTraining(&opts);
  const fabric::TrainingSettings s = fabric::BuildTrainingSettings(f, opts.training);
  if (opts.output == "json") {
    std::cout << fabric::RenderEnvJson(s);
  } else {
    std::cout << fabric::RenderEnvShell(s);  // warnings are comments in it
  }
  PrintWarnings("env", s.warnings);
  std::cout.flush();
  return kExitOk;
}

// A Kubernetes object name Trainer accepts: TrainJob names become JobSet, Job and Service
// names, so they must be RFC 1035 labels (Trainer's webhook); the runtime and the claim
// template are DNS subdomains.
void CheckName(const std::string& flag, const std::string& name, bool label) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !name.empty() && name.size() <= (label ? 63u : 253u) && alnum(name.front()) &&
            alnum(name.back()) && (!label || (name.front() >= 'a' && name.front() <= 'z'));
  for (char c : name) ok = ok && (alnum(c) || c == '-' || (!label && c == '.'));
  if (!ok) {
    throw InputError("command line", flag, "'" + name + "' is not a valid Kubernetes name",
                     label ? "lowercase letters, digits and '-', starting with a letter, at most "
                             "63 characters"
                           : "lowercase letters, digits, '-' and '.', at most 253 characters");
  }
}

int RunPod(EnvCmdOptions opts) {
  const bool trainjob = opts.output == "trainjob";
  opts.trainer.claims =
      opts.claims == "dra" ? fabric::ClaimMode::kDra : fabric::ClaimMode::kDevicePlugin;
  if (!trainjob && opts.trainer.claims == fabric::ClaimMode::kDra)
    throw InputError("command line", "--claims", "dra is for -o trainjob",
                     "the PyTorchJob output asks for device plugin resources; use -o trainjob");
  if (trainjob) {
    CheckName("--job", opts.training.job_name, true);
    CheckName("--runtime", opts.trainer.runtime_name, false);
    if (opts.trainer.claims == fabric::ClaimMode::kDra)
      CheckName("--claim-template", opts.trainer.claim_template, false);
  }
  const fabric::Fabric f = LoadForTraining(&opts);
  const fabric::TrainingSettings s = fabric::BuildTrainingSettings(f, opts.training);
  if (trainjob) {
    std::cout << fabric::RenderTrainerV2(s, opts.training, opts.trainer);
    PrintWarnings("pod", fabric::TrainerV2Warnings(s, opts.training, opts.trainer));
  } else {
    std::cout << fabric::RenderPyTorchJob(s, f, opts.training);
  }
  PrintWarnings("pod", s.warnings);
  std::cout.flush();
  return kExitOk;
}

std::string ReadDomain(const std::string& path) {
  if (path != "-") return ReadWholeFile(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  if (text.size() > fabric::kMaxDomainXmlBytes)
    throw InputError("<stdin>", "", "is larger than a libvirt domain XML can be");
  return text;
}

int RunTopoXml(const TopoXmlOptions& opts) {
  topology::HostTopology host;
  const fabric::Fabric f = LoadFabric(opts.inputs, &host);
  const std::string where = opts.domain == "-" ? "<stdin>" : opts.domain;
  const fabric::GuestDeviceMap guest = fabric::ReadLibvirtDomain(ReadDomain(opts.domain), where);
  std::vector<std::string> warnings = guest.notes;
  const std::string xml = fabric::WriteNcclTopologyXml(host, f, guest, opts.guest_map, &warnings);
  if (opts.output.empty() || opts.output == "-") {
    std::cout << xml;
    std::cout.flush();
  } else {
    WriteFileAtomically(opts.output, xml);
  }
  PrintWarnings("topo-xml", warnings);
  return kExitOk;
}

int RunNetconf(NetconfOptions opts) {
  topology::HostTopology host;
  const fabric::Fabric f = LoadFabric(opts.inputs, &host);
  opts.config.per_numa = !opts.no_per_numa;
  if (opts.kind == "sriov") {
    std::cout << fabric::RenderSriovDevicePluginConfig(host, f, opts.config);
  } else if (opts.kind == "rdma-shared") {
    std::cout << fabric::RenderRdmaSharedDevicePluginConfig(f, opts.config);
  } else {
    std::cout << fabric::RenderNicClusterPolicy(host, f, opts.config);
  }
  PrintWarnings("netconf", fabric::NetworkConfigNotes(host, f), "note");
  std::cout.flush();
  return kExitOk;
}

// --socket-ifname, --fabric, --topo-file, --ib-tc, --debug: what env and pod share.
void AddTrainingOptions(CLI::App* cmd, fabric::TrainingOptions* t) {
  cmd->add_option("--socket-ifname", t->socket_ifname,
                  "NCCL_SOCKET_IFNAME: the pod network interface for bootstrap ('' = unset); "
                  "written as '=NAME' (exact match) unless it starts with = or ^")
      ->capture_default_str();
  cmd->add_option("--fabric", t->fabric_design,
                  "cluster wiring: rail (rail-optimised, NCCL_CROSS_NIC=0), any (rails "
                  "interconnected, 1) or auto (NCCL's default)")
      ->check(CLI::IsMember({"rail", "any", "auto"}))
      ->capture_default_str();
  cmd->add_option("--topo-file", t->topo_file,
                  std::string("NCCL_TOPO_FILE to set, for a pod or VM whose PCI tree is not the "
                              "real one (a VM reads ") +
                      kNcclDefaultTopoPath + " without it)");
  cmd->add_option("--ib-tc", t->ib_tc, "NCCL_IB_TC: the RoCE fabric's lossless traffic class")
      ->check(CLI::Range(0, 255));
  cmd->add_flag("--debug", t->debug,
                "add NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH,NET (first bring-up)");
}

void RegisterEnv(CLI::App* fabric, int* exit_code) {
  auto opts = std::make_shared<EnvCmdOptions>();
  CLI::App* cmd = fabric->add_subcommand(
      "env",
      "NCCL and UCX environment for the paired GPUs: the exact NCCL_IB_HCA list (storage and\n"
      "management NICs left out), the bootstrap interface, NCCL_CROSS_NIC for the fabric's\n"
      "wiring, and per rank the UCX_NET_DEVICES of the NIC beside its GPU (a `case\n"
      "$LOCAL_RANK` block). RoCE: NCCL_IB_GID_INDEX is left to NCCL, with a warning for a port\n"
      "that has no RoCE v2 GID. Warnings go to stderr and into the output as comments.\n\n"
      "Examples:\n"
      "  accel fabric env > /etc/profile.d/nccl.sh       # this node, all GPUs\n"
      "  accel fabric env --fabric rail --debug          # rail-optimised cluster, bring-up\n"
      "  accel fabric env --topology fixtures/hosts/hgx-h100.json -o json\n"
      "  accel fabric env --gpus 1b:00.0,43:00.0 --link-layer Ethernet --ib-tc 106\n"
      "  accel fabric env --topo-file /var/run/nvidia-topologyd/virtualTopology.xml  # in a VM\n\n"
      "Exit status: 0 written; 2 bad input.");
  AddFabricInputOptions(cmd, &opts->inputs);
  AddTrainingOptions(cmd, &opts->training);
  cmd->add_option("-o,--output", opts->output,
                  "shell (export lines to source) or json {env, why, ranks, warnings}")
      ->check(CLI::IsMember({"shell", "json"}))
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunEnv(*opts); });
}

void RegisterPod(CLI::App* fabric, int* exit_code) {
  auto opts = std::make_shared<EnvCmdOptions>();
  opts->output = "pytorchjob";
  CLI::App* cmd = fabric->add_subcommand(
      "pod",
      "A Kubeflow PyTorchJob (kubeflow.org/v1) for the paired GPUs, with a ConfigMap holding\n"
      "the per-rank wrapper: the pod-wide NCCL env, IPC_LOCK, /dev/shm in memory, the GPU and\n"
      "RDMA resources, and a torchrun command that sets UCX_NET_DEVICES per LOCAL_RANK through\n"
      "the wrapper. Edit the image and the training script; apply with kubectl.\n\n"
      "-o trainjob writes Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) instead: a\n"
      "ClusterTrainingRuntime carrying the same settings (Trainer injects no vendor env) and a\n"
      "TrainJob using it. --claims dra asks for GPUs and NICs through a DRA\n"
      "ResourceClaimTemplate (accel's DRA driver then sets NCCL_IB_HCA per claim) instead of\n"
      "device plugin resources. Trainer v2 for new clusters; the PyTorchJob for clusters that\n"
      "run the Training Operator v1.\n\n"
      "Examples:\n"
      "  accel fabric pod --rdma-resource rdma/rdma_shared_device_a --job llm --nodes 4\n"
      "  accel fabric pod --rdma-resource 'nvidia.com/rdma_rail%d' --fabric rail   # per rail\n"
      "  accel fabric pod --topology fixtures/hosts/hgx-h100.json --image "
      "nvcr.io/nvidia/pytorch:25.01-py3\n"
      "  accel fabric pod -o trainjob --rdma-resource rdma/rdma_shared_device_a --nodes 4\n"
      "  accel fabric pod -o trainjob --claims dra --claim-template 8-gpus-with-nics --job llm\n\n"
      "--rdma-resource with %d asks for one of each rail (the names `accel fabric netconf`\n"
      "generates). Exit status: 0 written; 2 bad input.");
  AddFabricInputOptions(cmd, &opts->inputs);
  AddTrainingOptions(cmd, &opts->training);
  cmd->add_option("--rdma-resource", opts->training.rdma_resource,
                  "RDMA device plugin resource to request: one NAME, or a pattern with %d for "
                  "one per rail");
  cmd->add_option("--gpu-resource", opts->training.gpu_resource,
                  "GPU resource name; default from the GPUs' vendor (nvidia.com/gpu, amd.com/gpu)");
  cmd->add_option("--job", opts->training.job_name,
                  "PyTorchJob name (the ConfigMap is NAME-rank-env), or the TrainJob's")
      ->capture_default_str();
  cmd->add_option("--image", opts->training.image, "container image; default a placeholder");
  cmd->add_option("--nodes", opts->training.nodes,
                  "pods in the job: 1 Master + NODES-1 Workers (trainjob: numNodes)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "pytorchjob (Training Operator v1) or trainjob (Trainer v2: "
                  "ClusterTrainingRuntime + TrainJob)")
      ->check(CLI::IsMember({"pytorchjob", "trainjob"}))
      ->capture_default_str();
  cmd->add_option("--claims", opts->claims,
                  "trainjob: how pods get GPUs and NICs: device-plugin (resources.limits) or dra "
                  "(a ResourceClaimTemplate)")
      ->check(CLI::IsMember({"device-plugin", "dra"}))
      ->capture_default_str();
  cmd->add_option("--claim-template", opts->trainer.claim_template,
                  "--claims dra: the ResourceClaimTemplate of each pod's claim (in the "
                  "TrainJob's namespace)")
      ->capture_default_str();
  cmd->add_option("--runtime", opts->trainer.runtime_name,
                  "trainjob: name of the ClusterTrainingRuntime")
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunPod(*opts); });
}

void RegisterTopoXml(CLI::App* fabric, int* exit_code) {
  auto opts = std::make_shared<TopoXmlOptions>();
  CLI::App* cmd = fabric->add_subcommand(
      "topo-xml",
      "NCCL topology XML for a VM, written on the hypervisor: one <cpu> per guest NUMA cell and\n"
      "one virtual PCIe switch per passed-through GPU holding it and its paired NIC, at their\n"
      "guest addresses (read from the libvirt domain). Put it in the guest at\n"
      "/var/run/nvidia-topologyd/virtualTopology.xml (NCCL reads it there) or point\n"
      "NCCL_TOPO_FILE at it.\n\n"
      "Guest bus numbers: a device behind root port k of a pcie-expander-bus with busNr B is at\n"
      "guest bus B+1+k (accel place -o libvirt); on plain libvirt layouts accel numbers buses\n"
      "as guest firmware does (depth-first, in slot order). Check with lspci in the guest and\n"
      "correct any device with --guest-map HOST=GUEST.\n\n"
      "Examples:\n"
      "  accel fabric topo-xml --domain guest.xml -o virtualTopology.xml\n"
      "  virsh dumpxml train-0 | accel fabric topo-xml --domain -\n"
      "  accel fabric topo-xml --topology fixtures/hosts/hgx-h100.json \\\n"
      "      --domain examples/fabric/hgx-8gpu.libvirt.xml\n"
      "  accel fabric topo-xml --domain nova.xml --guest-map 1b:00.0=00:05.0 --guest-map "
      "18:00.0=00:06.0\n\n"
      "Exit status: 0 written; 2 bad input (nothing written); 5 -o FILE cannot be written.");
  AddFabricInputOptions(cmd, &opts->inputs);
  cmd->add_option(
         "--domain", opts->domain,
         "libvirt domain XML of the guest (accel place -o libvirt, virsh dumpxml); - = stdin")
      ->required();
  cmd->add_option("--guest-map", opts->guest_map,
                  "HOST=GUEST PCI address of a passed-through device, overriding or supplying "
                  "the one read from the domain (repeatable)");
  cmd->add_option("-o,--output", opts->output,
                  "file to write (atomically: temporary file, then rename); default stdout");
  cmd->callback([opts, exit_code] { *exit_code = RunTopoXml(*opts); });
}

void RegisterNetconf(CLI::App* fabric, int* exit_code) {
  auto opts = std::make_shared<NetconfOptions>();
  CLI::App* cmd = fabric->add_subcommand(
      "netconf",
      "Device plugin configs with one RDMA resource per rail (rail k = the k-th NIC paired with\n"
      "a GPU, PCI order), so a pod can ask for the NICs beside its GPUs: the SR-IOV network\n"
      "device plugin's resourceList (VFs of each rail's PF, isRdma), the RDMA shared device\n"
      "plugin's configList (by netdev, plus per-NUMA pools), or both inside a NicClusterPolicy\n"
      "for the NVIDIA Network Operator (with nv-ipam).\n\n"
      "Examples:\n"
      "  accel fabric netconf > nic-cluster-policy.yaml\n"
      "  accel fabric netconf --kind sriov --resource-prefix nvidia.com --rail-name 'rail%d'\n"
      "  accel fabric netconf --kind rdma-shared --rdma-hca-max 16 --no-per-numa\n"
      "  accel fabric netconf --topology fixtures/hosts/hgx-h100.json --operator-version "
      "network-operator-v26.4.1\n\n"
      "Exit status: 0 written; 2 bad input.");
  AddFabricInputOptions(cmd, &opts->inputs);
  cmd->add_option("--kind", opts->kind,
                  "sriov (JSON), rdma-shared (JSON) or nicclusterpolicy (YAML with both)")
      ->check(CLI::IsMember({"sriov", "rdma-shared", "nicclusterpolicy"}))
      ->capture_default_str();
  cmd->add_option("--resource-prefix", opts->config.resource_prefix, "SR-IOV resourcePrefix")
      ->capture_default_str();
  cmd->add_option("--rdma-prefix", opts->config.rdma_prefix, "RDMA shared resourcePrefix")
      ->capture_default_str();
  cmd->add_option("--rdma-hca-max", opts->config.rdma_hca_max,
                  "rdmaHcaMax: pods that may share one RDMA shared resource")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--rail-name", opts->config.rail_name,
                  "per-rail resource name; %d becomes the rail index")
      ->capture_default_str();
  cmd->add_flag("--no-per-numa", opts->no_per_numa,
                "no rdma_numa<N> pools in the RDMA shared config");
  cmd->add_option("--repository", opts->config.repository,
                  "image repository of the Network Operator components")
      ->capture_default_str();
  cmd->add_option("--operator-version", opts->config.version,
                  "image version of the components (your Network Operator release's)")
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunNetconf(*opts); });
}

}  // namespace

void RegisterFabricOutputs(CLI::App* fabric, int* exit_code) {
  RegisterEnv(fabric, exit_code);
  RegisterPod(fabric, exit_code);
  RegisterTopoXml(fabric, exit_code);
  RegisterNetconf(fabric, exit_code);
}

}  // namespace accel::cli
