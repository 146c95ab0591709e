#include "fabric/trainer_v2.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "common/yaml_out.h"

namespace accel::fabric {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kApiVersion = "trainer.kubeflow.org/v1alpha1";
// Trainer's torch plugin injects PET_* (torchrun's nnodes, node rank, master) into the
// container "node" of the replicated job "node", and TrainJob.trainer overrides that container.
constexpr const char* kNodeJob = "node";
// $0 of the inline wrapper (what `ps` shows for it).
constexpr const char* kWrapperName = "accel-rank-env";
constexpr const char* kPlaceholderImage = "REPLACE-WITH-YOUR-TRAINING-IMAGE";

int ProcsPerNode(const TrainingSettings& settings) {
  return std::max<int>(static_cast<int>(settings.ranks.size()), 1);
}

// resources.limits of the device plugin mode: the GPUs, and one RDMA resource or one per rail
// (the same rule as the PyTorchJob's).
Json TrainerLimits(const TrainingSettings& settings, const TrainingOptions& options) {
  Json limits = Json::object();
  std::vector<std::pair<std::string, int>> resources = DevicePluginResources(settings, options);
  resources.front().second = ProcsPerNode(settings);  // a node asks for at least one GPU
  for (const auto& [name, count] : resources) limits[name] = count;
  return limits;
}

// The per-rank wrapper, run by torchrun once per local process as `sh -c SCRIPT $0 PROGRAM...`.
std::string WrapperScript(const TrainingSettings& settings, ClaimMode mode) {
  std::string out;
  if (mode == ClaimMode::kDra) {
    out =
        "# UCX does not pair GPUs with NICs: accel's DRA driver names the NIC of the claim's\n"
        "# k-th GPU in ACCEL_UCX_NET_DEVICES_k; this rank (LOCAL_RANK, from torchrun) takes its own.\n"
        "case \"${LOCAL_RANK:-x}\" in\n"
        "  *[!0-9]*) ;;\n"
        "  *) eval \"nic=\\${ACCEL_UCX_NET_DEVICES_${LOCAL_RANK}:-}\"\n"
        "     if [ -n \"$nic\" ]; then export UCX_NET_DEVICES=\"$nic\"; fi ;;\n"
        "esac\n";
  } else {
    out =
        "# UCX does not pair GPUs with NICs: each rank (LOCAL_RANK, from torchrun) names the NIC\n"
        "# paired with its GPU (CUDA_DEVICE_ORDER=PCI_BUS_ID keeps LOCAL_RANK k on the k-th GPU).\n"
        "case \"${LOCAL_RANK:-}\" in\n";
    for (const RankSettings& rank : settings.ranks) {
      out += "  " + std::to_string(rank.local_rank) + ")";
      std::string exports;
      for (const EnvVar& v : rank.env)
        exports += (exports.empty() ? "" : "; ") + ("export " + v.name + "=" + ShellQuote(v.value));
      out += exports.empty() ? " :" : " " + exports;
      out += " ;;  # GPU " + rank.gpu_address + "\n";
    }
    out += "  *) echo \"" + std::string(kWrapperName) +
           ": LOCAL_RANK '${LOCAL_RANK:-}' is not one of 0.." + std::to_string(settings.ranks.empty() ? 0 : settings.ranks.size() - 1) +
           "; UCX picks NICs itself\" >&2 ;;\n"
           "esac\n";
  }
  return out + "exec \"$@\"\n";
}

Json Container(const TrainingSettings& settings, const TrainingOptions& training,
               const TrainerV2Options& options) {
  Json env = Json::array();
  for (const EnvVar& v : settings.env) {
    // With DRA the NICs are known at allocation only; the driver writes NCCL_IB_HCA then.
    if (options.claims == ClaimMode::kDra && v.name == "NCCL_IB_HCA") continue;
    env.push_back({{"name", v.name}, {"value", v.value}});
  }
  Json resources = Json::object();
  if (options.claims == ClaimMode::kDra) {
    resources["claims"] = Json::array({{{"name", kTrainerClaimName}}});
  } else {
    resources["limits"] = TrainerLimits(settings, training);
  }
  return {{"name", kNodeJob},
          {"image", training.image.empty() ? kPlaceholderImage : training.image},
          {"command", Json::array({"torchrun", "--no-python", "sh", "-c",
                                   WrapperScript(settings, options.claims), kWrapperName})},
          {"args", Json::array({"python", "/workspace/train.py"})},
          {"env", env},
          {"securityContext", {{"capabilities", {{"add", Json::array({"IPC_LOCK"})}}}}},
          {"resources", resources},
          {"volumeMounts", Json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}})}};
}

Json Runtime(const TrainingSettings& settings, const TrainingOptions& training,
             const TrainerV2Options& options) {
  Json pod = {{"containers", Json::array({Container(settings, training, options)})},
              {"volumes",
               Json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}})}};
  if (options.claims == ClaimMode::kDra)
    pod["resourceClaims"] = Json::array(
        {{{"name", kTrainerClaimName}, {"resourceClaimTemplateName", options.claim_template}}});
  Json job = {
      {"name", kNodeJob},
      {"replicas", 1},
      {"template",
       {{"metadata", {{"labels", {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}}}}},
        {"spec", {{"template", {{"spec", pod}}}}}}}};
  return {{"apiVersion", kApiVersion},
          {"kind", "ClusterTrainingRuntime"},
          {"metadata",
           {{"name", options.runtime_name},
            {"labels", {{"trainer.kubeflow.org/framework", "torch"}}}}},
          {"spec",
           {{"mlPolicy", {{"numNodes", std::max(training.nodes, 1)}, {"torch", Json::object()}}},
            {"template", {{"spec", {{"replicatedJobs", Json::array({job})}}}}}}}};
}

Json TrainJob(const TrainingSettings& settings, const TrainingOptions& training,
              const TrainerV2Options& options) {
  return {{"apiVersion", kApiVersion},
          {"kind", "TrainJob"},
          {"metadata", {{"name", training.job_name}}},
          {"spec",
           {{"runtimeRef",
             {{"apiGroup", "trainer.kubeflow.org"},
              {"kind", "ClusterTrainingRuntime"},
              {"name", options.runtime_name}}},
            {"trainer",
             {{"image", training.image.empty() ? kPlaceholderImage : training.image},
              {"args", Json::array({"python", "/workspace/train.py"})},
              {"numNodes", std::max(training.nodes, 1)},
              {"numProcPerNode", ProcsPerNode(settings)}}}}}};
}

// The GPU count a template's name states: "gpu-with-nic" 1, "8-gpus-with-nics" 8; -1 none.
int CountInName(const std::string& name) {
  if (name.rfind("gpu-", 0) == 0) return 1;
  size_t digits = 0;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
  if (digits == 0 || digits > 4 || name.compare(digits, 5, "-gpus") != 0) return -1;
  return std::stoi(name.substr(0, digits));
}

std::string Header(const TrainingSettings& settings, const TrainingOptions& training,
                   const TrainerV2Options& options) {
  std::string out =
      "# Generated by accel fabric pod -o trainjob: a Kubeflow Trainer v2 ClusterTrainingRuntime\n"
      "# (cluster-scoped, apply once) and a TrainJob that uses it. Trainer does not inject\n"
      "# vendor settings (kubeflow/trainer#1966), so the runtime's pod template carries them:\n"
      "#  - env: NCCL's pod-wide settings (bootstrap interface, rails";
  out += options.claims == ClaimMode::kDra
             ? "); NCCL_IB_HCA comes from\n"
               "#    accel's DRA driver, which writes the claim's NICs into its CDI env\n"
             : ", the exact HCA list)\n";
  out +=
      "#  - IPC_LOCK: RDMA pins memory; /dev/shm in memory: NCCL's intra-node buffers\n"
      "#  - command: torchrun (PET_* set by Trainer) runs each rank through an inline wrapper\n"
      "#    that sets UCX_NET_DEVICES for its LOCAL_RANK; the TrainJob's args are the program\n"
      "#    (trainer.command in a TrainJob would replace the wrapper: set args instead)\n";
  if (options.claims == ClaimMode::kDra) {
    out += "#  - resourceClaims: one claim per pod from the ResourceClaimTemplate " +
           options.claim_template +
           ",\n"
           "#    which must exist in the TrainJob's namespace (deploy/kubernetes/dra/)\n";
  } else {
    out +=
        "#  - limits: the GPUs and the RDMA NIC resource(s) of the device plugins; a TrainJob's\n"
        "#    trainer.resourcesPerNode would replace them\n";
  }
  out += "# TrainJob: set image and args; numProcPerNode is the GPUs paired on this host.\n";
  for (const std::string& w : settings.warnings) out += CommentLine("warning: " + w);
  for (const std::string& w : TrainerV2Warnings(settings, training, options))
    out += CommentLine("warning: " + w);
  for (const std::string& n : settings.notes) out += CommentLine("note: " + n);
  return out;
}

}  // namespace

const char* ClaimModeName(ClaimMode mode) {
  return mode == ClaimMode::kDra ? "dra" : "device-plugin";
}

std::vector<std::string> TrainerV2Warnings(const TrainingSettings& settings,
                                           const TrainingOptions& training,
                                           const TrainerV2Options& options) {
  std::vector<std::string> out;
  if (options.claims == ClaimMode::kDra) {
    const int stated = CountInName(options.claim_template);
    const int paired = ProcsPerNode(settings);
    if (stated > 0 && stated != paired)
      out.push_back("claim template " + options.claim_template + " asks for " +
                    std::to_string(stated) + " GPU(s) but " + std::to_string(paired) +
                    " are paired here: numProcPerNode is " + std::to_string(paired) +
                    "; pick a matching template or --gpus");
  } else if (training.rdma_resource.empty()) {
    out.push_back("no --rdma-resource: the pods ask for GPUs only; add your RDMA device "
                  "plugin's resource (or use --claims dra)");
  }
  return out;
}

std::string RenderTrainerV2(const TrainingSettings& settings, const TrainingOptions& training,
                            const TrainerV2Options& options) {
  return Header(settings, training, options) + ToYaml(Runtime(settings, training, options)) +
         "---\n" + ToYaml(TrainJob(settings, training, options));
}

}  // namespace accel::fabric
