#include "dra/claim_preparer.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "fabric/training_env.h"

namespace accel::dra {

namespace {

using fabric::PathType;

// NCCL's own ceiling for GPUDirect RDMA (training_env.cc's kGdrLimit).
constexpr PathType kGdrLimit = PathType::kPxb;

// The GPU→NIC path of fabric GPU `g` and NIC `n` from the pairing's matrix; SYS when the
// matrix does not hold it (a fabric built without one).
fabric::PathInfo MatrixPath(const fabric::Fabric& f, size_t g, size_t n) {
  size_t e = f.gpus.size() + f.nics.size();
  size_t at = g * e + f.gpus.size() + n;
  if (f.matrix.size() == e * e && at < f.matrix.size()) return f.matrix[at];
  return fabric::PathInfo{};
}

}  // namespace

ClaimNccl ClaimNcclEnv(const Inventory& inventory, const std::vector<const DraDevice*>& devices,
                       const NcclOptions& options, const ClaimParameters& parameters) {
  ClaimNccl out;
  if (!options.enabled || !parameters.nccl) {
    out.notes.push_back("NCCL env off (" +
                        std::string(!options.enabled ? "driver option" : "claim parameter") + ")");
    return out;
  }
  const fabric::Fabric& full = inventory.fabric;
  // The claim's GPUs as indexes into the fabric (PCI order), and its NICs.
  std::set<size_t> gpus;
  std::set<int> nics;
  std::set<devices::Vendor> vendors;
  for (const DraDevice* d : devices) {
    if (d->kind == DeviceKind::kNic) {
      if (d->nic >= 0 && static_cast<size_t>(d->nic) < full.nics.size()) nics.insert(d->nic);
      continue;
    }
    if (d->node_device < 0 || static_cast<size_t>(d->node_device) >= inventory.node_devices.size())
      continue;
    const kube::NodeDevice& nd = inventory.node_devices[d->node_device];
    vendors.insert(nd.vendor);
    auto it = std::find(full.gpus.begin(), full.gpus.end(), nd.pci_address);
    if (it == full.gpus.end()) {
      out.notes.push_back("accelerator " + d->name + " (" + nd.pci_address +
                          ") is not in the pairing: left out of the NCCL settings");
      continue;
    }
    gpus.insert(static_cast<size_t>(it - full.gpus.begin()));
  }
  if (gpus.empty() || nics.empty()) {
    out.notes.push_back(gpus.empty() ? "no NCCL env: the claim has no paired accelerator"
                                     : "no NCCL env: the claim has no RDMA NIC");
    return out;
  }
  if (vendors.count(devices::Vendor::kHabana) && vendors.size() == 1) {
    out.notes.push_back("no NCCL env: Gaudi collectives (HCCL) use the HPUs' own RoCE ports");
    return out;
  }

  // The fabric restricted to the claim: its GPUs, each with its own pair's NIC when the claim
  // holds that NIC, else the claim NIC closest to it (path type, then fewest GPUs already on
  // it, then PCI order). nics stays whole so indexes keep meaning the same ports.
  fabric::Fabric claim;
  claim.nics = full.nics;
  std::map<int, int> load;
  std::vector<size_t> repair;
  for (size_t g : gpus) {
    claim.gpus.push_back(full.gpus[g]);
    fabric::GpuNicPair pair;
    if (g < full.pairs.size()) pair = full.pairs[g];
    pair.gpu_address = full.gpus[g];
    if (pair.nic >= 0 && nics.count(pair.nic)) {
      ++load[pair.nic];
    } else {
      pair.nic = -1;
      repair.push_back(claim.pairs.size());
    }
    claim.pairs.push_back(pair);
  }
  for (size_t k : repair) {
    size_t g = *std::next(gpus.begin(), static_cast<long>(k));
    int best = -1;
    fabric::PathInfo best_path;
    for (int n : nics) {
      fabric::PathInfo p = MatrixPath(full, g, static_cast<size_t>(n));
      if (best < 0 || p.type < best_path.type ||
          (p.type == best_path.type && load[n] < load[best])) {
        best = n;
        best_path = p;
      }
    }
    claim.pairs[k].nic = best;
    claim.pairs[k].path = best_path;
    ++load[best];
    out.notes.push_back("GPU " + claim.pairs[k].gpu_address +
                        ": its paired NIC is not in the claim; uses " +
                        full.nics[best].rdma_device + " (" +
                        fabric::PathTypeName(best_path.type) + ")");
  }
  for (size_t k = 0; k < claim.pairs.size(); ++k) claim.pairs[k].gpu_index = static_cast<int>(k);

  fabric::TrainingOptions training;
  training.socket_ifname = parameters.socket_ifname.value_or(options.socket_ifname);
  training.fabric_design = options.fabric_design;
  training.ib_tc = options.ib_tc;
  training.debug = options.debug;
  training.accelerator_vendor = devices::VendorName(*vendors.begin());
  if (!options.topo_file.empty()) training.topo_file = options.topo_file_container_path;
  fabric::TrainingSettings s = fabric::BuildTrainingSettings(claim, training);

  // NICs of the claim no GPU of it is paired with still belong to the claim: NCCL may use
  // them (it picks NICs per GPU by topology), so they join the exact list after the paired ones.
  std::vector<std::string> extra;
  std::set<int> used;
  for (const fabric::GpuNicPair& p : claim.pairs) used.insert(p.nic);
  for (int n : nics)
    if (!used.count(n)) extra.push_back(full.nics[n].rdma_device + ":" + std::to_string(full.nics[n].port));
  for (const fabric::EnvVar& v : s.env) {
    std::string value = v.value;
    if (v.name == "NCCL_IB_HCA" && !extra.empty()) value += "," + JoinStrings(extra, ",");
    out.env.emplace_back(v.name, value);
  }
  if (options.gdr_level) {
    PathType worst = PathType::kLoc;
    for (const fabric::GpuNicPair& p : claim.pairs) worst = std::max(worst, p.path.type);
    PathType level = worst <= kGdrLimit ? worst : kGdrLimit;
    out.env.emplace_back("NCCL_NET_GDR_LEVEL", fabric::PathTypeName(level));
    if (worst > kGdrLimit)
      out.notes.push_back(std::string("NCCL_NET_GDR_LEVEL stays PXB: a pair of the claim is ") +
                          fabric::PathTypeName(worst) + ", beyond GPUDirect RDMA's ceiling");
  }
  for (const fabric::RankSettings& rank : s.ranks)
    for (const fabric::EnvVar& v : rank.env)
      if (v.name == "UCX_NET_DEVICES")
        out.env.emplace_back("ACCEL_UCX_NET_DEVICES_" + std::to_string(rank.local_rank), v.value);
  if (!options.topo_file.empty())
    out.mounts.push_back({options.topo_file_container_path, options.topo_file, true});
  for (const std::string& w : s.warnings) out.notes.push_back("warning: " + w);
  return out;
}

ClaimPreparer::ClaimPreparer(std::shared_ptr<const Inventory> inventory, FetchClaim fetch_claim,
                             PreparerOptions options, Log log)
    : fetch_claim_(std::move(fetch_claim)),
      options_(std::move(options)),
      log_(std::move(log)),
      checkpoint_(options_.state_dir, log_),
      inventory_(std::move(inventory)) {
  if (!inventory_) inventory_ = std::make_shared<Inventory>();
}

void ClaimPreparer::SetInventory(std::shared_ptr<const Inventory> inventory) {
  if (!inventory) return;
  std::lock_guard<std::mutex> lock(mu_);
  inventory_ = std::move(inventory);
}

std::shared_ptr<const Inventory> ClaimPreparer::CurrentInventory() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inventory_;
}

std::shared_ptr<std::mutex> ClaimPreparer::ClaimMutex(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<std::mutex>& m = claim_mutexes_[uid];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

PreparerStats ClaimPreparer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ClaimPreparer::Say(const std::string& line) const {
  if (log_) log_(line);
}

PrepareResult ClaimPreparer::Prepare(const ClaimRef& claim) {
  auto start = std::chrono::steady_clock::now();
  PrepareResult result;
  {
    std::shared_ptr<std::mutex> m = ClaimMutex(claim.uid);
    std::lock_guard<std::mutex> lock(*m);
    try {
      result = PrepareLocked(claim);
    } catch (const std::exception& e) {  // a bug or bad_alloc: still this claim's error only
      result = {{}, std::string("internal error preparing the claim: ") + e.what()};
    }
  }
  if (!result.error.empty())
    Say("DRA prepare " + claim.namespace_ + "/" + claim.name + " (" + claim.uid +
        "): " + result.error);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (result.error.empty())
      ++stats_.prepared;
    else
      ++stats_.failed;
  }
  if (options_.on_prepare)
    options_.on_prepare(claim,
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start),
                        result);
  return result;
}

PrepareResult ClaimPreparer::PrepareLocked(const ClaimRef& claim) {
  PrepareResult result;
  const std::string label = "ResourceClaim " + claim.namespace_ + "/" + claim.name;
  if (claim.uid.empty()) return {{}, label + ": the kubelet gave no claim uid"};

  if (std::optional<CheckpointEntry> done = checkpoint_.Get(claim.uid)) {
    // /var/run/cdi is a tmpfs and the checkpoint is not: after a reboot the entry outlives
    // its spec, and answering it would hand the runtime CDI ids it cannot resolve.
    std::error_code ec;
    if (done->cdi_spec_path.empty() || std::filesystem::exists(done->cdi_spec_path, ec)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.from_checkpoint;
      return {done->devices, ""};
    }
    Say("DRA prepare " + claim.uid + ": CDI spec " + done->cdi_spec_path +
        " is gone (reboot?): preparing the claim again");
  }

  std::shared_ptr<const Inventory> inv = CurrentInventory();
  const std::string driver = inv->driver.empty() ? std::string("accel.io") : inv->driver;

  nlohmann::json object;
  try {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.fetches;
    }
    if (!fetch_claim_) return {{}, "cannot read " + label + ": no API client configured"};
    object = fetch_claim_(claim);
  } catch (const std::exception& e) {
    return {{}, "cannot read " + label + ": " + e.what()};
  }
  ClaimAllocation allocation;
  try {
    allocation = ParseClaimAllocation(object, claim, driver);
  } catch (const InputError& e) {
    return {{}, e.what()};
  }

  // Devices in allocation order, each once, with every request it serves.
  std::vector<const DraDevice*> devices;
  std::vector<PreparedDevice> answer;
  for (const AllocatedDevice& a : allocation.devices) {
    if (a.pool != inv->node_name)
      return {{}, label + ": device " + a.device + " of pool " + a.pool +
                      " is not this node's (pool " + inv->node_name +
                      "): the claim was allocated for another node"};
    const DraDevice* d = inv->Find(a.device);
    if (!d)
      return {{}, "device " + a.device + " is not published by this node (pool " +
                      inv->node_name + "): " + label +
                      " was allocated from a ResourceSlice that no longer matches the node "
                      "(device removed or renamed); delete the pod so the claim is allocated again"};
    auto same = std::find(devices.begin(), devices.end(), d);
    if (same != devices.end()) {
      std::vector<std::string>& names = answer[same - devices.begin()].request_names;
      if (std::find(names.begin(), names.end(), a.request) == names.end())
        names.push_back(a.request);
      continue;
    }
    devices.push_back(d);
    PreparedDevice p;
    p.request_names = {a.request};
    p.pool_name = a.pool;
    p.device_name = a.device;
    answer.push_back(std::move(p));
  }

  CheckpointEntry entry;
  entry.namespace_ = allocation.namespace_;
  entry.name = allocation.name;
  if (!devices.empty()) {
    CdiSpec spec;
    spec.kind = ClaimCdiKind(driver);
    std::vector<std::pair<std::string, std::vector<std::string>>> visible;
    try {
      for (size_t i = 0; i < devices.size(); ++i) {
        DeviceCdi edits = DeviceCdiEdits(*inv, *devices[i], options_.device_nodes);
        std::string name = ClaimCdiDeviceName(allocation.uid, devices[i]->name);
        spec.devices.push_back({name, std::move(edits.edits)});
        answer[i].cdi_device_ids = {QualifiedCdiName(spec.kind, name)};
        if (edits.visible_env.empty()) continue;
        auto it = std::find_if(visible.begin(), visible.end(),
                               [&](const auto& v) { return v.first == edits.visible_env; });
        if (it == visible.end()) {
          visible.push_back({edits.visible_env, {}});
          it = visible.end() - 1;
        }
        if (std::find(it->second.begin(), it->second.end(), edits.visible_value) ==
            it->second.end())
          it->second.push_back(edits.visible_value);
      }
    } catch (const std::exception& e) {
      return {{}, label + ": " + e.what()};
    }
    for (const auto& [name, values] : visible)
      spec.edits.env.emplace_back(name, JoinStrings(values, ","));
    ClaimNccl nccl = ClaimNcclEnv(*inv, devices, options_.nccl, allocation.parameters);
    for (auto& v : nccl.env) spec.edits.env.push_back(std::move(v));
    spec.edits.mounts = std::move(nccl.mounts);
    try {
      entry.cdi_spec_path = WriteCdiSpec(options_.cdi_dir, spec, allocation.uid);
    } catch (const std::exception& e) {
      return {{}, label + ": " + e.what()};
    }
  }
  entry.devices = answer;
  try {
    checkpoint_.Put(claim.uid, entry);
  } catch (const std::exception& e) {
    // Without its entry the spec could never be removed by Unprepare's record: take it back.
    if (!entry.cdi_spec_path.empty()) {
      try {
        RemoveCdiSpec(entry.cdi_spec_path);
      } catch (const std::exception& r) {
        Say(std::string("DRA prepare: ") + r.what());
      }
    }
    return {{}, label + ": " + e.what()};
  }
  result.devices = std::move(answer);
  return result;
}

std::string ClaimPreparer::Unprepare(const ClaimRef& claim) {
  std::string error;
  {
    std::shared_ptr<std::mutex> m = ClaimMutex(claim.uid);
    std::lock_guard<std::mutex> lock(*m);
    try {
      error = UnprepareLocked(claim);
    } catch (const std::exception& e) {
      error = std::string("internal error unpreparing the claim: ") + e.what();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (error.empty()) {
    ++stats_.unprepared;
    auto it = claim_mutexes_.find(claim.uid);
    // Forget the claim's mutex unless another call holds it too.
    if (it != claim_mutexes_.end() && it->second.use_count() == 1) claim_mutexes_.erase(it);
  } else {
    Say("DRA unprepare " + claim.namespace_ + "/" + claim.name + " (" + claim.uid +
        "): " + error);
  }
  return error;
}

std::string ClaimPreparer::UnprepareLocked(const ClaimRef& claim) {
  const std::string label = "ResourceClaim " + claim.namespace_ + "/" + claim.name;
  if (claim.uid.empty()) return label + ": the kubelet gave no claim uid";
  std::optional<CheckpointEntry> entry = checkpoint_.Get(claim.uid);
  try {
    if (entry && !entry->cdi_spec_path.empty()) RemoveCdiSpec(entry->cdi_spec_path);
    // A spec without an entry (the agent died between the two writes) goes too.
    std::shared_ptr<const Inventory> inv = CurrentInventory();
    const std::string driver = inv->driver.empty() ? std::string("accel.io") : inv->driver;
    RemoveCdiSpec((std::filesystem::path(options_.cdi_dir) /
                   CdiSpecFileName(ClaimCdiKind(driver), claim.uid))
                      .string());
    checkpoint_.Erase(claim.uid);
  } catch (const std::exception& e) {
    return label + ": " + e.what();
  }
  return "";
}

}  // namespace accel::dra
