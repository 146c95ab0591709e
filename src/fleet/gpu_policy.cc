#include "fleet/gpu_policy.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/hash.h"

namespace accel::fleet {

namespace {

// The paper's normalizers (kubernetes-scheduler-simulator, open-gpu-share const.go): the
// largest node it models, 128 CPUs and 8 GPUs.
constexpr double kMaxSpecCpu = 128000;
constexpr double kMaxSpecGpu = 8000;

uint64_t AllowedMask(const ShareHostState& h, size_t entry) {
  if (!h.allowed || entry >= h.allowed->size()) return ~uint64_t{0};
  return (*h.allowed)[entry];
}

bool Usable(const placement::GpuSlot& g) { return !g.whole_held; }

// Whether GPU `gpu` of `h` has room for mix entry `entry`'s MIG profile: a start of the
// profile's shape on that GPU's model whose slices are free, and no time-slicing share there.
bool MigRoom(const ShareHostState& h, size_t entry, size_t gpu) {
  if (!h.mig_shapes || entry >= h.mig_shapes->size() || gpu >= (*h.mig_shapes)[entry].size()) return false;
  const placement::MigShape* shape = (*h.mig_shapes)[entry][gpu];
  const placement::GpuSlot& g = h.gpus[gpu];
  if (!shape || g.whole_held || (g.mig_slices == 0 && g.free_milli < 1000)) return false;
  for (int start : shape->starts) {
    if (start < 0 || shape->memory_slices <= 0 || start + shape->memory_slices > shape->gpu_slices || start + shape->memory_slices > 32)
      continue;
    const uint32_t bits = ((shape->memory_slices == 32 ? ~uint32_t{0} : (uint32_t{1} << shape->memory_slices) - 1)) << start;
    if (!(g.mig_slices & bits)) return true;
  }
  return false;
}

// Whether mix entry `m` fits `h` by CPU and GPUs (FGD's Q3: memory is not part of the measure),
// and the free thousandths of the GPUs it cannot use when it fits.
struct EntryFit {
  bool fits = false;
  int64_t unusable = 0;  ///< with fits: free capacity on GPUs the entry cannot use
};

EntryFit FitEntry(const MixEntry& m, size_t index, const ShareHostState& h) {
  EntryFit f;
  if (m.GpuMilli() == 0) return f;  // CPU-only: uses no GPU
  const uint64_t allowed = AllowedMask(h, index);
  if (h.free_cpu_milli < m.cpu_milli) return f;
  int ok = 0;
  for (size_t i = 0; i < h.gpus.size(); ++i) {
    const placement::GpuSlot& g = h.gpus[i];
    const bool model = i >= 64 || (allowed >> i) & 1;
    bool can = false;
    if (model && Usable(g)) {
      if (!m.mig_profile.empty()) can = MigRoom(h, index, i);
      else if (m.gpu_count == 1 && m.gpu_milli < 1000) can = g.mig_slices == 0 && g.free_milli >= m.gpu_milli;
      else can = g.mig_slices == 0 && g.free_milli == 1000;
    }
    if (can) ++ok;
    else f.unusable += g.free_milli;
  }
  f.fits = ok >= (m.mig_profile.empty() ? m.gpu_count : 1);
  return f;
}

int64_t FreeMilliOf(const ShareHostState& h) {
  int64_t t = 0;
  for (const placement::GpuSlot& g : h.gpus) t += g.free_milli;
  return t;
}

// FGD's F(h), as published: every typical pod that does not fit (or uses no GPU) makes all free
// GPU capacity a fragment; one that fits, the GPUs with less free than it asks.
double FgdFragmentation(const ShareHostState& h, const WorkloadMix& mix) {
  const int64_t total = FreeMilliOf(h);
  if (total == 0) return 0;
  double f = 0;
  for (size_t k = 0; k < mix.entries.size(); ++k) {
    const MixEntry& m = mix.entries[k];
    const EntryFit fit = FitEntry(m, k, h);
    f += m.weight * static_cast<double>(fit.fits ? fit.unusable : total);
  }
  return f;
}

uint64_t StateKey(const ShareHostState& h) {
  uint64_t k = Mix64(h.hardware + 0x9e3779b97f4a7c15ULL);
  k = Mix64(k ^ static_cast<uint64_t>(h.free_cpu_milli));
  for (const placement::GpuSlot& g : h.gpus)
    k = Mix64(k ^ (static_cast<uint64_t>(g.free_milli) | uint64_t{g.mig_slices} << 16 | uint64_t{g.whole_held} << 48));
  return k;
}

}  // namespace

uint64_t ShareStateKey(const ShareHostState& h, uint64_t hardware_identity) {
  uint64_t k = Mix64(hardware_identity ^ 0x2545f4914f6cdd1dULL);
  k = Mix64(k ^ static_cast<uint64_t>(h.free_cpu_milli));
  k = Mix64(k ^ static_cast<uint64_t>(h.total_cpu_milli));
  k = Mix64(k ^ h.free_memory_mib);
  for (const placement::GpuSlot& g : h.gpus)
    k = Mix64(k ^ (static_cast<uint64_t>(g.free_milli) | uint64_t{g.mig_slices} << 16 | uint64_t{g.whole_held} << 48 |
                   static_cast<uint64_t>(static_cast<uint32_t>(g.node)) << 52));
  return k;
}

namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// GpuClustering's tag of a request: 0 for a share (or MIG slice), N for N whole GPUs.
int ShapeTag(const MixEntry& ask) {
  return ask.gpu_count == 1 && (ask.gpu_milli < 1000 || !ask.mig_profile.empty()) ? 0 : ask.gpu_count;
}

}  // namespace

const char* GpuPolicyName(GpuPolicy policy) {
  switch (policy) {
    case GpuPolicy::kAccel: return "accel";
    case GpuPolicy::kFgd: return "fgd";
    case GpuPolicy::kBestFit: return "best-fit";
    case GpuPolicy::kPacking: return "packing";
    case GpuPolicy::kClustering: return "clustering";
    case GpuPolicy::kDotProduct: return "dot-product";
    case GpuPolicy::kRandom: return "random";
  }
  return "accel";
}

const std::vector<GpuPolicy>& AllGpuPolicies() {
  static const std::vector<GpuPolicy> all = {GpuPolicy::kAccel,      GpuPolicy::kFgd,        GpuPolicy::kBestFit,
                                             GpuPolicy::kPacking,    GpuPolicy::kClustering, GpuPolicy::kDotProduct,
                                             GpuPolicy::kRandom};
  return all;
}

GpuPolicy ParseGpuPolicy(const std::string& text, const std::string& where) {
  std::string names;
  for (GpuPolicy p : AllGpuPolicies()) {
    if (text == GpuPolicyName(p)) return p;
    names += (names.empty() ? "" : ", ") + std::string(GpuPolicyName(p));
  }
  throw InputError(where, text, "is not a GPU placement policy", "use one of " + names);
}

int64_t ShareHostState::FreeGpuMilli() const { return FreeMilliOf(*this); }


GpuScorer::GpuScorer(GpuPolicy policy, std::shared_ptr<const WorkloadMix> mix, uint64_t seed)
    : policy_(policy), mix_(std::move(mix)), rng_(Mix64(seed ^ 0x5851f42d4c957f2dULL)) {}

void GpuScorer::UseAskAsMix(const MixEntry& ask) {
  if (mix_ && !mix_->entries.empty()) return;
  auto mix = std::make_shared<WorkloadMix>();
  mix->entries.push_back(ask);
  mix->entries.back().weight = 1;
  // A share or a MIG slice alone as the mix would spread over whole GPUs (each stays usable for
  // more of the same); with no mix given the fleet also keeps whole GPUs of the models asked for.
  if (ask.gpu_count == 1 && (ask.gpu_milli < 1000 || !ask.mig_profile.empty())) {
    MixEntry whole;
    whole.name = "whole GPU";
    whole.gpu_count = 1;
    whole.gpu_milli = 1000;
    whole.models = ask.models;
    whole.request = PodRequest("whole GPU", 0, 0, 1, 1000, ask.models);
    whole.weight = 1;
    mix->entries.push_back(std::move(whole));
  }
  mix->Normalize();
  mix_ = std::move(mix);
  cpu_per_gpu_milli_ = -1;
  memo_.clear();
  allowed_.clear();
  mig_.clear();
  best_cache_.clear();
}

void GpuScorer::BeginDecision() { decision_draw_ = rng_ = Mix64(rng_ + 0x632be59bd9b4e019ULL); }

void GpuScorer::BeginHost(uint64_t host_hash) { host_draw_ = Mix64(decision_draw_ ^ Mix64(host_hash)); }

const std::vector<uint64_t>& GpuScorer::AllowedMasks(const void* hardware,
                                                     const std::vector<const topology::PciDevice*>& accelerators) {
  auto it = allowed_.find(hardware);
  if (it != allowed_.end()) return it->second;
  std::vector<uint64_t> masks;
  for (const MixEntry& m : mix_->entries) {
    uint64_t mask = 0;
    for (size_t i = 0; i < accelerators.size() && i < 64; ++i) {
      const topology::PciDevice& d = *accelerators[i];
      if (placement::GpuModelMatches(placement::GpuModelOf(d), d.vendor_id, d.device_id, m.models))
        mask |= uint64_t{1} << i;
    }
    masks.push_back(mask);
  }
  return allowed_.emplace(hardware, std::move(masks)).first->second;
}

double GpuScorer::CpuPerGpuMilli() {
  if (cpu_per_gpu_milli_ >= 0) return cpu_per_gpu_milli_;
  double cpu = 0, gpu = 0;
  for (const MixEntry& m : mix_->entries) {
    if (m.GpuMilli() == 0) continue;
    cpu += m.weight * static_cast<double>(m.cpu_milli);
    gpu += m.weight * static_cast<double>(m.GpuMilli());
  }
  cpu_per_gpu_milli_ = gpu > 0 ? cpu / gpu : 0;
  return cpu_per_gpu_milli_;
}

double GpuScorer::CpuStranded(const ShareHostState& host) {
  const double r = CpuPerGpuMilli();
  if (r <= 0) return 0;
  return std::max(0.0, static_cast<double>(FreeMilliOf(host)) - static_cast<double>(host.free_cpu_milli) / r);
}

const std::vector<std::vector<const placement::MigShape*>>& GpuScorer::MigShapes(
    const void* hardware, const std::vector<const topology::PciDevice*>& accelerators) {
  auto it = mig_.find(hardware);
  if (it != mig_.end()) return it->second;
  std::vector<std::vector<const placement::MigShape*>> shapes(mix_->entries.size());
  for (size_t k = 0; k < mix_->entries.size(); ++k) {
    const MixEntry& m = mix_->entries[k];
    if (m.mig_profile.empty() || !m.request.gpu) continue;
    for (const topology::PciDevice* d : accelerators) {
      const placement::MigShape* found = nullptr;
      for (const placement::MigShape& s : m.request.gpu->mig_shapes)
        if (s.vendor_id == d->vendor_id && s.device_id == d->device_id) found = &s;
      shapes[k].push_back(found);
    }
  }
  return mig_.emplace(hardware, std::move(shapes)).first->second;
}

double GpuScorer::Fragmentation(const ShareHostState& host) {
  const uint64_t key = StateKey(host);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  const double f = FgdFragmentation(host, *mix_);
  memo_.emplace(key, f);
  return f;
}

ChoiceCost GpuScorer::Cost(const MixEntry& ask, const ShareHostState& before, const ShareHostState& after,
                           const placement::GpuChoice& choice) {
  const int64_t t_before = FreeMilliOf(before);
  const double pod_gpu = static_cast<double>(ask.GpuMilli());
  const double pod_cpu = static_cast<double>(ask.cpu_milli);
  // "best" GPU selection of the baselines: the choice that leaves its GPU the least free.
  double best_gpu = 0;
  for (int g : choice.gpus) best_gpu += after.gpus[static_cast<size_t>(g)].free_milli;
  switch (policy_) {
    case GpuPolicy::kFgd: {
      const double f0 = Fragmentation(before), f1 = Fragmentation(after);
      const auto score = static_cast<int64_t>(Sigmoid((f0 - f1) / 1000.0) * 100);
      return {-static_cast<double>(score), 0};
    }
    case GpuPolicy::kAccel: {
      // FGD's score of the fragmentation delta plus the change in CPU-stranded GPU capacity,
      // ties: the fullest GPU within a host, then the seeded host order (as FGD).
      const double d = (Fragmentation(after) - Fragmentation(before)) + (CpuStranded(after) - CpuStranded(before));
      const auto score = static_cast<int64_t>(Sigmoid(-d / 1000.0) * 100);
      return {-static_cast<double>(score), best_gpu};
    }
    case GpuPolicy::kBestFit: {
      const double s = 0.5 * (static_cast<double>(before.free_cpu_milli) - pod_cpu) / kMaxSpecCpu +
                       0.5 * (static_cast<double>(t_before) - pod_gpu) / kMaxSpecGpu;
      return {-static_cast<double>(static_cast<int64_t>((1 - s) * 100)), best_gpu};
    }
    case GpuPolicy::kDotProduct: {
      const double dot = (static_cast<double>(before.free_cpu_milli) / kMaxSpecCpu) * (pod_cpu / kMaxSpecCpu) +
                         (static_cast<double>(t_before) / kMaxSpecGpu) * (pod_gpu / kMaxSpecGpu);
      return {-static_cast<double>(static_cast<int64_t>(100 * (1 - dot / 2))), best_gpu};
    }
    case GpuPolicy::kClustering: {
      if (ask.GpuMilli() == 0) return {0, best_gpu};
      const int64_t base = (25 * (8000 - t_before)) / 8000;
      int64_t bonus = 0;
      const int tag = ShapeTag(ask);
      const std::map<int, int> none;
      const std::map<int, int>& aff = before.gpu_shapes ? *before.gpu_shapes : none;
      auto same = aff.find(tag);
      if (same != aff.end() && same->second > 0) bonus = aff.size() == 1 ? 75 : 50;
      else if (aff.empty()) bonus = 25;
      return {-static_cast<double>(base + bonus), best_gpu};
    }
    case GpuPolicy::kPacking: {
      if (ask.GpuMilli() == 0) return {0, best_gpu};
      int fully_free = 0;
      for (const placement::GpuSlot& g : before.gpus) fully_free += g.free_milli == 1000 && Usable(g);
      int64_t score = 0;
      if (fully_free == ask.gpu_count && static_cast<size_t>(fully_free) == before.gpus.size()) {
        score = std::max(33 - fully_free, fully_free);
      } else {
        int k = 0;
        int64_t used_left = 0;
        for (int g : choice.gpus) {
          const int left = before.gpus[static_cast<size_t>(g)].free_milli;
          k += left == 1000;
          used_left += left * 100 / 1000;
        }
        score = k > 0 ? std::max(50 - k, 33) : std::max<int64_t>(100 - used_left / 10, 50);
      }
      return {-static_cast<double>(score), best_gpu};
    }
    case GpuPolicy::kRandom: {
      rng_ = Mix64(rng_ + 0x9e3779b97f4a7c15ULL);
      return {static_cast<double>(host_draw_ >> 11), static_cast<double>(rng_ >> 11)};
    }
  }
  return {};
}

}  // namespace accel::fleet
