#include "fleet/pod_request.h"

#include "common/error.h"
#include "common/json_reader.h"
#include "fleet/mig_request.h"
#include "fleet/workload_mix.h"

namespace accel::fleet {

placement::PlacementRequest PodRequestFromJson(const nlohmann::json& doc, const std::string& where) {
  const JsonReader r(where);
  r.Object(doc, "", {"name", "cpu_milli", "memory_mib", "gpu"});
  const std::string name = r.String(r.Require(doc, "", "name", "name the request; claims record it"), "name");
  if (name.empty()) r.Fail("name", "is empty", "name the request; claims record it");
  const nlohmann::json* cpu = r.FindNonNull(doc, "cpu_milli");
  const nlohmann::json* mem = r.FindNonNull(doc, "memory_mib");
  const int64_t cpu_milli = cpu ? r.Integer(*cpu, "cpu_milli", 0, int64_t{1} << 40) : 0;
  const uint64_t memory_mib = mem ? static_cast<uint64_t>(r.Integer(*mem, "memory_mib", 0, int64_t{1} << 40)) : 0;
  const nlohmann::json* gpu = r.FindNonNull(doc, "gpu");
  if (!gpu) {
    if (cpu_milli == 0)
      r.Fail("cpu_milli", "is 0 and the request asks for no GPU", "ask for CPU thousandths, a GPU, or both");
    return PodRequest(name, cpu_milli, memory_mib, 0, 0, {});
  }
  r.Object(*gpu, "gpu", {"count", "milli", "mig_profile", "models"});
  const nlohmann::json* count_v = r.FindNonNull(*gpu, "count");
  const nlohmann::json* milli_v = r.FindNonNull(*gpu, "milli");
  const nlohmann::json* mig_v = r.FindNonNull(*gpu, "mig_profile");
  const nlohmann::json* models_v = r.FindNonNull(*gpu, "models");
  const int count = count_v ? static_cast<int>(r.Integer(*count_v, "gpu.count", 1, 64)) : 1;
  const int milli = milli_v ? static_cast<int>(r.Integer(*milli_v, "gpu.milli", 1, 1000)) : 1000;
  const std::vector<std::string> models = models_v ? r.Strings(*models_v, "gpu.models") : std::vector<std::string>{};
  if (milli < 1000 && count != 1)
    r.Fail("gpu.count", "is " + std::to_string(count) + " with a share of " + std::to_string(milli),
           "a share is of one GPU: count 1 (or milli 1000 for whole GPUs)");
  placement::PlacementRequest req = PodRequest(name, cpu_milli, memory_mib, count, milli, models);
  if (mig_v) {
    if (milli_v) r.Fail("gpu.milli", "is given with a MIG profile", "a MIG slice's size is its profile's: remove milli");
    req.gpu->mig_profile = r.String(*mig_v, "gpu.mig_profile");
    ResolveMigShapes(&*req.gpu, where + ": gpu");
  }
  return req;
}

nlohmann::ordered_json PodRequestToJson(const placement::PlacementRequest& request) {
  nlohmann::ordered_json j;
  j["name"] = request.flavor;
  j["cpu_milli"] = request.cpu_milli + int64_t{request.vcpus} * 1000;
  j["memory_mib"] = request.memory_mib;
  if (request.gpu) {
    nlohmann::ordered_json g;
    g["count"] = request.gpu->count;
    if (request.gpu->mig_profile.empty()) g["milli"] = request.gpu->milli;
    else g["mig_profile"] = request.gpu->mig_profile;
    if (!request.gpu->models.empty()) g["models"] = request.gpu->models;
    j["gpu"] = std::move(g);
  }
  return j;
}

}  // namespace accel::fleet
