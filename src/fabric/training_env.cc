#include "fabric/training_env.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "common/yaml_out.h"

namespace accel::fabric {

namespace {

using Json = nlohmann::ordered_json;

// Where the ConfigMap with the wrapper is mounted in the training container.
constexpr const char* kWrapperDir = "/etc/accel";
constexpr const char* kWrapperFile = "rank-env.sh";

// NCCL's own default ceiling for GPUDirect RDMA (NCCL_NET_GDR_LEVEL): beyond it, NCCL stages
// through host memory.
constexpr PathType kGdrLimit = PathType::kPxb;


std::string Hca(const FabricNic& nic) { return nic.rdma_device + ":" + std::to_string(nic.port); }

// Indexes into fabric.nics of the NICs some pair uses, each once, ascending (= PCI order).
// Computed here rather than through Fabric::UsedNics so that only the plain data is needed.
std::vector<int> UsedNicIndexes(const Fabric& fabric) {
  std::set<int> used;
  for (const GpuNicPair& p : fabric.pairs)
    if (p.nic >= 0 && static_cast<size_t>(p.nic) < fabric.nics.size()) used.insert(p.nic);
  return {used.begin(), used.end()};
}

const NicPort* FindPort(const std::vector<NicPort>& ports, const FabricNic& nic) {
  for (const NicPort& p : ports)
    if (p.rdma_device == nic.rdma_device && p.port == nic.port) return &p;
  return nullptr;
}

bool IsEthernet(const FabricNic& nic, const std::vector<NicPort>& ports) {
  if (!nic.link_layer.empty()) return nic.link_layer == "Ethernet";
  const NicPort* port = FindPort(ports, nic);
  return port && port->link_layer == "Ethernet";
}

std::string SocketIfname(const std::string& ifname) {
  if (ifname.empty() || ifname.front() == '=' || ifname.front() == '^') return ifname;
  return "=" + ifname;  // exact match: "eth0" alone would also match eth01, eth0.100, ...
}

std::string UcxTls(const std::string& vendor) {
  // rc for the network, sm/self so ranks of one node and a rank with itself have a transport
  // for host memory, and the vendor's copy/IPC transports for GPU memory.
  if (vendor == "amd") return "rc,sm,self,rocm_copy,rocm_ipc";
  return "rc,sm,self,cuda_copy,cuda_ipc";
}

void AddNcclNetworkEnv(const Fabric& fabric, const std::vector<int>& used,
                       const TrainingOptions& options, TrainingSettings* s) {
  std::vector<std::string> hcas;
  std::set<std::string> layers;
  bool roce = false;
  for (int i : used) {
    const FabricNic& nic = fabric.nics[i];
    hcas.push_back(Hca(nic));
    layers.insert(nic.link_layer.empty() ? "unknown" : nic.link_layer);
    roce = roce || IsEthernet(nic, options.ports);
  }
  s->hcas = hcas;
  if (!hcas.empty()) {
    s->env.push_back({"NCCL_IB_HCA", "=" + JoinStrings(hcas, ","),
                      "exact HCA list (leading '='): the " + std::to_string(hcas.size()) +
                          " NICs paired with the GPUs; storage/management NICs stay out"});
  } else {
    s->warnings.push_back("no usable RDMA NIC for these GPUs: NCCL falls back to TCP sockets");
  }
  if (layers.size() > 1)
    s->warnings.push_back("the paired NICs mix link layers (" +
                          JoinStrings({layers.begin(), layers.end()}, ", ") +
                          "); NCCL uses one kind per job: pass --link-layer");
  if (roce) {
    for (int i : used) {
      const FabricNic& nic = fabric.nics[i];
      const NicPort* port = FindPort(options.ports, nic);
      if (port && IsEthernet(nic, options.ports) && !port->roce_v2_gid)
        s->warnings.push_back(Hca(nic) +
                              " has no RoCE v2 GID: NCCL_IB_GID_INDEX is left to "
                              "NCCL's auto-selection, which then falls back to RoCE v1 (not "
                              "routable); give the netdev " +
                              (nic.netdev.empty() ? std::string("its") : nic.netdev) +
                              " an IP address");
    }
    if (options.ib_tc < 0)
      s->warnings.push_back(
          "RoCE without NCCL_IB_TC: traffic uses traffic class 0; pass "
          "--ib-tc with the fabric's lossless class (often 106 = DSCP 26)");
  }
  if (!options.socket_ifname.empty())
    s->env.push_back({"NCCL_SOCKET_IFNAME", SocketIfname(options.socket_ifname),
                      "bootstrap over the pod network, never over the RDMA netdevs"});
  if (options.fabric_design == "rail")
    s->env.push_back(
        {"NCCL_CROSS_NIC", "0",
         "rail-optimised fabric: NIC k of every node is on rail k, never cross rails"});
  else if (options.fabric_design == "any")
    s->env.push_back({"NCCL_CROSS_NIC", "1", "rails are interconnected: cross freely"});
  else if (options.fabric_design != "auto")
    s->warnings.push_back("fabric design '" + options.fabric_design +
                          "' is not rail, any or auto: NCCL_CROSS_NIC left to NCCL's default");
  if (options.ib_tc >= 0)
    s->env.push_back({"NCCL_IB_TC", std::to_string(options.ib_tc),
                      "traffic class of the fabric's lossless (PFC/ECN) queue"});
}

void AddPathWarnings(const Fabric& fabric, TrainingSettings* s) {
  for (const GpuNicPair& p : fabric.pairs) {
    if (p.nic < 0 || static_cast<size_t>(p.nic) >= fabric.nics.size()) {
      s->warnings.push_back("GPU " + p.gpu_address +
                            " has no usable NIC: its traffic leaves "
                            "through other GPUs' NICs (PXN) or sockets");
      continue;
    }
    if (p.path.type > kGdrLimit)
      s->warnings.push_back("GPU " + p.gpu_address + " reaches its NIC " +
                            fabric.nics[p.nic].rdma_device + " only through " +
                            PathTypeName(p.path.type) +
                            ": NCCL turns GPUDirect RDMA off beyond PXB; do not raise "
                            "NCCL_NET_GDR_LEVEL, fix the topology or the placement");
  }
}

}  // namespace

TrainingSettings BuildTrainingSettings(const Fabric& fabric, const TrainingOptions& options) {
  TrainingSettings s;
  const std::vector<int> used = UsedNicIndexes(fabric);
  if (options.accelerator_vendor == "nvidia" || options.accelerator_vendor.empty())
    s.env.push_back({"CUDA_DEVICE_ORDER", "PCI_BUS_ID",
                     "LOCAL_RANK k uses the k-th GPU in PCI order, the order the pairing uses"});
  AddNcclNetworkEnv(fabric, used, options, &s);
  if (!options.topo_file.empty())
    s.env.push_back({"NCCL_TOPO_FILE", options.topo_file,
                     "the PCI tree this pod or VM sees is not the real one"});
  if (options.debug) {
    s.env.push_back({"NCCL_DEBUG", "INFO", "first bring-up: log NCCL's choices"});
    s.env.push_back({"NCCL_DEBUG_SUBSYS", "INIT,ENV,GRAPH,NET",
                     "topology, graph and NIC selection in the log"});
  }
  if (!used.empty())
    s.env.push_back({"UCX_TLS", UcxTls(options.accelerator_vendor),
                     "RDMA plus node-local and GPU transports, no TCP"});
  for (size_t i = 0; i < fabric.pairs.size(); ++i) {
    const GpuNicPair& p = fabric.pairs[i];
    RankSettings rank;
    rank.local_rank = static_cast<int>(i);
    rank.gpu_address = p.gpu_address;
    if (p.nic >= 0 && static_cast<size_t>(p.nic) < fabric.nics.size()) {
      const FabricNic& nic = fabric.nics[p.nic];
      rank.env.push_back(
          {"UCX_NET_DEVICES", Hca(nic),
           "the NIC paired with GPU " + p.gpu_address + " (" + PathTypeName(p.path.type) + ")"});
    }
    s.ranks.push_back(std::move(rank));
  }
  AddPathWarnings(fabric, &s);
  s.notes = fabric.notes;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Shell

namespace {

// The `case "$LOCAL_RANK" in ... esac` block; `indent` prefixes each line.
std::string RankCase(const TrainingSettings& settings, const std::string& indent) {
  std::string out = indent + "case \"${LOCAL_RANK:-}\" in\n";
  for (const RankSettings& rank : settings.ranks) {
    out += indent + "  " + std::to_string(rank.local_rank) + ")";
    std::vector<std::string> exports;
    for (const EnvVar& v : rank.env)
      exports.push_back("export " + v.name + "=" + ShellQuote(v.value));
    out += exports.empty() ? " :" : " " + JoinStrings(exports, "; ");
    out += " ;;  # GPU " + rank.gpu_address + "\n";
  }
  out += indent + "  *) echo \"accel rank-env: LOCAL_RANK '${LOCAL_RANK:-}' is not one of 0.." +
         std::to_string(settings.ranks.empty() ? 0 : settings.ranks.size() - 1) +
         "; UCX picks NICs itself\" >&2 ;;\n";
  out += indent + "esac\n";
  return out;
}

}  // namespace

std::string RenderEnvShell(const TrainingSettings& settings) {
  std::string out =
      "# NCCL/UCX settings from accel fabric env: source this file in the pod, then\n"
      "# start each rank with LOCAL_RANK set (torchrun does) and source it again,\n"
      "# or use the wrapper of `accel fabric pod`.\n";
  for (const std::string& w : settings.warnings) out += CommentLine("warning: " + w);
  for (const std::string& n : settings.notes) out += CommentLine("note: " + n);
  for (const EnvVar& v : settings.env) {
    out += CommentLine(v.why);
    out += "export " + v.name + "=" + ShellQuote(v.value) + "\n";
  }
  if (!settings.ranks.empty()) {
    out += CommentLine("per rank: UCX does not pair GPUs with NICs, so each rank names its own");
    out += "if [ -n \"${LOCAL_RANK:-}\" ]; then\n" + RankCase(settings, "  ") + "fi\n";
  }
  return out;
}

std::string RenderRankWrapper(const TrainingSettings& settings) {
  std::string out =
      "#!/bin/sh\n"
      "# Per-rank environment from accel fabric pod. torchrun starts one process per GPU with\n"
      "# LOCAL_RANK set; run it as: torchrun --no-python " +
      std::string(kWrapperDir) + "/" + kWrapperFile +
      " python train.py ...\n"
      "# UCX does not pair GPUs with NICs by topology, so each rank names the NIC paired with\n"
      "# its GPU (CUDA_DEVICE_ORDER=PCI_BUS_ID keeps LOCAL_RANK k on the k-th GPU).\n";
  out += RankCase(settings, "");
  out += "exec \"$@\"\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON

std::string RenderEnvJson(const TrainingSettings& settings) {
  Json env = Json::object(), why = Json::object();
  for (const EnvVar& v : settings.env) {
    env[v.name] = v.value;
    why[v.name] = v.why;
  }
  Json ranks = Json::array();
  for (const RankSettings& rank : settings.ranks) {
    Json renv = Json::object();
    for (const EnvVar& v : rank.env) renv[v.name] = v.value;
    ranks.push_back({{"local_rank", rank.local_rank}, {"gpu", rank.gpu_address}, {"env", renv}});
  }
  Json doc = {{"env", env},
              {"why", why},
              {"ranks", ranks},
              {"warnings", settings.warnings},
              {"notes", settings.notes}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// ---------------------------------------------------------------------------------------------
// PyTorchJob

namespace {

// resources.limits: the GPUs, and one RDMA resource or one per rail.
Json Limits(const TrainingSettings& settings, const TrainingOptions& options) {
  Json limits = Json::object();
  for (const auto& [name, count] : DevicePluginResources(settings, options)) limits[name] = count;
  return limits;
}

Json PodTemplate(const TrainingSettings& settings, const TrainingOptions& options) {
  Json env = Json::array();
  for (const EnvVar& v : settings.env) env.push_back({{"name", v.name}, {"value", v.value}});
  const std::string nproc = std::to_string(std::max<size_t>(settings.ranks.size(), 1));
  Json command =
      Json::array({"torchrun", "--nproc-per-node=" + nproc, "--no-python",
                   std::string(kWrapperDir) + "/" + kWrapperFile, "python", "/workspace/train.py"});
  Json container = {
      {"name", "pytorch"},
      {"image", options.image.empty() ? "REPLACE-WITH-YOUR-TRAINING-IMAGE" : options.image},
      {"command", command},
      {"env", env},
      {"securityContext", {{"capabilities", {{"add", Json::array({"IPC_LOCK"})}}}}},
      {"resources", {{"limits", Limits(settings, options)}}},
      {"volumeMounts",
       Json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}},
                    {{"name", "rank-env"}, {"mountPath", kWrapperDir}, {"readOnly", true}}})}};
  Json volumes = Json::array(
      {{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}},
       {{"name", "rank-env"},
        {"configMap", {{"name", options.job_name + "-rank-env"}, {"defaultMode", 0755}}}}});
  return {{"spec", {{"containers", Json::array({container})}, {"volumes", volumes}}}};
}

Json ReplicaSpec(int replicas, const Json& pod) {
  return {{"replicas", replicas}, {"restartPolicy", "OnFailure"}, {"template", pod}};
}

std::string Header(const TrainingSettings& settings, const TrainingOptions& options) {
  std::string out =
      "# Generated by accel fabric pod. Replace the image and the training script; keep:\n"
      "#  - env: NCCL's pod-wide settings (exact HCA list, bootstrap interface, rails)\n"
      "#  - IPC_LOCK: RDMA pins memory; /dev/shm in memory: NCCL's intra-node buffers\n"
      "#  - the command: torchrun starts one process per GPU through " +
      std::string(kWrapperDir) + "/" + kWrapperFile +
      ",\n"
      "#    which sets UCX_NET_DEVICES for the process's LOCAL_RANK (ConfigMap below)\n"
      "#  - limits: the GPUs and the RDMA NIC resource(s) of the device plugin\n"
      "# Add the Multus annotation k8s.v1.cni.cncf.io/networks for the RDMA networks, and run\n"
      "# the kubelet with the static CPU manager and topology manager single-numa-node or\n"
      "# restricted so CPUs, GPUs and NICs stay on one NUMA node.\n";
  if (options.rdma_resource.empty())
    out += "# No --rdma-resource given: add your RDMA device plugin's resource to limits.\n";
  for (const std::string& w : settings.warnings) out += CommentLine("warning: " + w);
  for (const std::string& n : settings.notes) out += CommentLine("note: " + n);
  return out;
}

}  // namespace

std::string RenderPyTorchJob(const TrainingSettings& settings, const Fabric& fabric,
                             const TrainingOptions& options) {
  const Json pod = PodTemplate(settings, options);
  Json config_map = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", options.job_name + "-rank-env"}}},
                     {"data", {{kWrapperFile, RenderRankWrapper(settings)}}}};
  Json replicas = {{"Master", ReplicaSpec(1, pod)}};
  if (options.nodes > 1) replicas["Worker"] = ReplicaSpec(options.nodes - 1, pod);
  Json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata", {{"name", options.job_name}}},
              {"spec",
               {{"nprocPerNode", std::to_string(std::max<size_t>(fabric.pairs.size(), 1))},
                {"pytorchReplicaSpecs", replicas}}}};
  return Header(settings, options) + ToYaml(config_map) + "---\n" + ToYaml(job);
}

std::vector<std::pair<std::string, int>> DevicePluginResources(const TrainingSettings& settings,
                                                               const TrainingOptions& options) {
  std::string gpu = options.gpu_resource;
  if (gpu.empty())
    gpu = options.accelerator_vendor == "amd"      ? "amd.com/gpu"
          : options.accelerator_vendor == "habana" ? "habana.ai/gaudi"
                                                   : "nvidia.com/gpu";
  std::vector<std::pair<std::string, int>> out{{gpu, static_cast<int>(settings.ranks.size())}};
  const std::string& rdma = options.rdma_resource;
  if (rdma.empty()) return out;
  const size_t pct = rdma.find("%d");
  if (pct == std::string::npos) {
    out.emplace_back(rdma, 1);
    return out;
  }
  for (size_t k = 0; k < settings.hcas.size(); ++k)
    out.emplace_back(rdma.substr(0, pct) + std::to_string(k) + rdma.substr(pct + 2), 1);
  return out;
}

}  // namespace accel::fabric
