// ExecuteApply: runs the steps in order; on the first failure undoes, in reverse, everything it
// did, so a failed apply leaves the node as it found it.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "sharing/mig_apply_internal.h"

namespace accel::sharing {

namespace {

using Kind = MigApplyStep::Kind;

// One thing to undo, pushed when its step may have changed something.
struct Undo {
  std::string what;
  std::function<void()> run;
};

// Creates compute instances of the given slice sizes, equal sizes in one call.
void CreateCis(devices::MigControl& gpu, unsigned gi, const std::vector<int>& slices) {
  for (size_t i = 0; i < slices.size();) {
    size_t j = i;
    while (j < slices.size() && slices[j] == slices[i]) ++j;
    gpu.CreateComputeInstances(gi, slices[i], static_cast<int>(j - i));
    i = j;
  }
}

// The compute slices of GI `gi`'s compute instances now.
std::vector<int> CisNow(devices::MigControl& gpu, unsigned gi) {
  std::vector<int> out;
  for (const auto& info : gpu.GpuInstances()) {
    if (info.id != gi) continue;
    for (const auto& ci : info.compute_instances) out.push_back(ci.slices);
  }
  return out;
}

// Runs the steps of one GPU. Each step pushes its undo (before running when a failure can
// leave part of it done). Throws what the step threw.
class GpuRun {
 public:
  GpuRun(devices::MigControl& gpu, std::vector<Undo>* undo, std::vector<std::string>* done)
      : gpu_(gpu), undo_(undo), done_(done) {}

  void Run(const std::vector<MigApplyStep>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      Step(steps[i], static_cast<int>(i));
      done_->push_back(Prefix() + steps[i].description);
    }
  }

 private:
  std::string Prefix() const { return "GPU " + std::to_string(gpu_.index()) + ": "; }

  // The current id of an instance that existed before (recreated ones get new ids).
  unsigned Current(unsigned id) const {
    auto it = renamed_->find(id);
    return it == renamed_->end() ? id : it->second;
  }

  void Push(const std::string& what, std::function<void()> run) {
    undo_->push_back({Prefix() + what, std::move(run)});
  }

  void Step(const MigApplyStep& s, int index) {
    devices::MigControl* gpu = &gpu_;  // outlives the undo closures; captured by value
    auto renamed = renamed_;
    switch (s.kind) {
      case Kind::kEnableMig:
      case Kind::kDisableMig: {
        bool enable = s.kind == Kind::kEnableMig;
        Push(std::string(enable ? "disable" : "enable") + " MIG mode again",
             [gpu, enable] { gpu->SetMigEnabled(!enable); });
        if (!gpu->SetMigEnabled(enable)) {
          throw devices::BackendError(Prefix() +
                                      "the MIG mode change is pending until the GPU "
                                      "is reset (reset it or reboot, then apply again)");
        }
        return;
      }
      case Kind::kDestroyComputeInstances: {
        unsigned id = *s.gpu_instance_id;
        std::vector<int> before = s.compute_slices;
        Push("recreate the compute instances of GPU instance " + std::to_string(id),
             [gpu, renamed, id, before] {
               auto it = renamed->find(id);
               unsigned now = it == renamed->end() ? id : it->second;
               std::vector<int> missing = before, have = CisNow(*gpu, now);
               for (int slices : have) {
                 auto at = std::find(missing.begin(), missing.end(), slices);
                 if (at != missing.end()) missing.erase(at);
               }
               CreateCis(*gpu, now, missing);
             });
        gpu->DestroyComputeInstances(Current(id));
        return;
      }
      case Kind::kDestroyGpuInstance: {
        unsigned id = *s.gpu_instance_id;
        gpu->DestroyGpuInstance(Current(id));
        unsigned profile = s.profile_id;
        int start = s.start;
        Push("recreate GPU instance " + std::to_string(id) + " at memory slice " +
                 std::to_string(start),
             [gpu, renamed, id, profile, start] {
               (*renamed)[id] = gpu->CreateGpuInstance(profile, start);
             });
        return;
      }
      case Kind::kCreateGpuInstance: {
        unsigned id = gpu->CreateGpuInstance(s.profile_id, s.start);
        (*created_)[index] = id;
        Push("destroy the created GPU instance " + std::to_string(id), [gpu, id] {
          gpu->DestroyComputeInstances(id);
          gpu->DestroyGpuInstance(id);
        });
        return;
      }
      case Kind::kCreateComputeInstances: {
        unsigned id =
            s.created_by_step >= 0 ? created_->at(s.created_by_step) : Current(*s.gpu_instance_id);
        Push("destroy the compute instances created in GPU instance " + std::to_string(id),
             [gpu, id] { gpu->DestroyComputeInstances(id); });
        CreateCis(*gpu, id, s.compute_slices);
        return;
      }
    }
  }

  devices::MigControl& gpu_;
  std::vector<Undo>* undo_;
  std::vector<std::string>* done_;
  /// Old GI id -> id after a rollback recreated it; shared with the undo closures.
  std::shared_ptr<std::map<unsigned, unsigned>> renamed_ =
      std::make_shared<std::map<unsigned, unsigned>>();
  std::shared_ptr<std::map<int, unsigned>> created_ = std::make_shared<std::map<int, unsigned>>();
};

}  // namespace

MigApplyResult ExecuteApply(const MigApplyPlan& plan, const devices::MigGpus& gpus) {
  MigApplyResult result;
  if (!plan.ok()) {
    result.error = "the plan has errors; nothing was applied";
    return result;
  }
  std::vector<Undo> undo;
  try {
    for (const MigApplyGpu& g : plan.gpus) {
      if (g.steps.empty()) continue;
      GpuRun(*gpus.at(g.position), &undo, &result.done).Run(g.steps);
    }
    result.success = true;
    return result;
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    try {
      it->run();
      result.rolled_back.push_back(it->what);
    } catch (const std::exception& e) {
      result.rollback_errors.push_back(it->what + ": " + e.what());
    }
  }
  return result;
}

}  // namespace accel::sharing
