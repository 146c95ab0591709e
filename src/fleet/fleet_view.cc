#include "fleet/fleet_view.h"

#include <algorithm>

#include "common/error.h"
#include "common/hash.h"
#include "fleet/host_policy_file.h"
#include "placement/node_view.h"

namespace accel::fleet {

namespace {

std::string UsageText(const placement::HostUsage& u) {
  std::string s;
  for (const auto& [node, nu] : u.nodes) {
    s += "n" + std::to_string(node) + ":" + nu.pinned_cpus.ToString() + "/" + std::to_string(nu.shared_vcpus);
    for (const auto& [size, pages] : nu.pages_used) s += "/" + std::to_string(size) + "x" + std::to_string(pages);
    s += ";";
  }
  for (const std::string& d : u.devices) s += d + ",";
  for (const auto& [address, g] : u.shared_gpus)
    s += "s" + address + "=" + std::to_string(g.milli) + "/" + std::to_string(g.mig_slices) + ",";
  s += "f" + std::to_string(u.floating_vcpus) + "/" + std::to_string(u.floating_memory_mib);
  if (u.floating_cpu_milli != 0) s += "/" + std::to_string(u.floating_cpu_milli) + "m";
  return s;
}

RankRow RowWithoutState(const HostEntry& e, const HardwareInfo& hw, uint32_t hardware_id) {
  RankRow r;
  r.hardware = hardware_id;
  r.name_hash = Fnv1a(e.record.name);
  r.enabled = e.record.state == HostAdminState::kEnabled;
  if (e.record.heartbeat_at && e.record.stale_after_s > 0)
    r.stale_after_unix = *e.record.heartbeat_at + e.record.stale_after_s;
  r.free_accelerators = e.summary.free_accelerators;
  r.free_pinnable_cpus = e.summary.free_pinnable_cpus;
  r.partly_used_node = e.summary.has_partly_used_node;
  r.idle = e.summary.idle;
  for (size_t j = 0; j < hw.accelerators.size() && j < 64; ++j)
    if (e.usage.devices.empty() || !e.usage.devices.count(hw.accelerators[j]->address))
      r.free_accelerator_mask |= uint64_t{1} << j;
  return r;
}

}  // namespace

void CountGpuShape(const placement::Placement& p, int sign, std::map<int, int>* shapes) {
  if (p.gpus.empty()) return;
  const bool part = p.gpus.size() == 1 && (p.gpus.front().is_share() || p.gpus.front().is_mig());
  const int key = part ? 0 : static_cast<int>(p.gpus.size());
  if ((*shapes)[key] += sign; (*shapes)[key] <= 0) shapes->erase(key);
}

void Summarize(HostEntry* e) {
  const topology::HostTopology& hw = *e->hardware;
  HostSummary s;
  const size_t nodes = hw.numa_nodes.size();
  s.node_free_accelerators.assign(nodes, 0);
  std::vector<int> node_total(nodes, 0);
  for (const topology::PciDevice& d : hw.pci) {
    if (!d.is_accelerator()) continue;
    ++s.total_accelerators;
    const int index = hw.NodeIndex(d.numa_node);
    if (index >= 0) ++node_total[index];
    if (e->usage.devices.count(d.address)) continue;
    ++s.free_accelerators;
    if (index >= 0) ++s.node_free_accelerators[index];
  }
  s.node_partly_used.assign(nodes, false);
  for (size_t i = 0; i < nodes; ++i) {
    if (node_total[i] > 0 && s.node_free_accelerators[i] == node_total[i]) ++s.whole_free_accelerator_nodes;
    s.node_partly_used[i] = s.node_free_accelerators[i] > 0 && s.node_free_accelerators[i] < node_total[i];
    s.has_partly_used_node = s.has_partly_used_node || s.node_partly_used[i];
  }
  const placement::HostCpuSets sets = placement::HostCpuSetsOf(hw, e->usage, e->record.policy);
  s.total_pinnable_cpus = sets.dedicated.Count();
  s.free_pinnable_cpus = sets.dedicated.Minus(sets.pinned).Count();
  s.idle = e->usage.nodes.empty() && e->usage.devices.empty() && e->usage.floating_vcpus == 0 &&
           e->usage.floating_memory_mib == 0 && e->usage.floating_cpu_milli == 0;
  {
    const std::vector<placement::NodeView> views = placement::BuildNodeViews(hw, e->usage, e->record.policy);
    const placement::FloatingRoom room = placement::FloatingRoomOf(views, e->usage);
    const placement::FloatingRoom empty_room = placement::FloatingRoomOf(views, placement::HostUsage{});
    s.share.total_cpu_milli = static_cast<int64_t>(room.vcpu_capacity * 1000 + 0.5);
    s.share.free_cpu_milli = std::max<int64_t>(
        0, s.share.total_cpu_milli - int64_t{room.vcpus_used} * 1000 - room.cpu_milli_used);
    s.share.free_memory_mib = room.free_base_mib;
    s.share.total_memory_mib = empty_room.free_base_mib;
    s.share.gpus = placement::GpuSlotsOf(placement::AcceleratorsOf(hw), e->usage);
    // The hardware's identity: its topology id (hosts of one SKU share it) with the policy.
    s.share.key = ShareStateKey(s.share, Fnv1a(e->record.topology_id) ^ Fnv1a(HostPolicyToJson(e->record.policy).dump()));
  }
  e->summary = std::move(s);
  e->usage_key = e->record.topology_id + "|" + HostPolicyToJson(e->record.policy).dump() + "|" + UsageText(e->usage);
}

HostEntry MakeHostEntry(const HostRecord& record, std::shared_ptr<const topology::HostTopology> hardware,
                        const std::vector<const Claim*>& claims) {
  HostEntry e;
  e.record = record;
  e.hardware = std::move(hardware);
  for (const Claim* c : claims) {
    if (std::string overlap = e.usage.Apply(c->placement); !overlap.empty())
      throw InputError("claim " + c->id, "", "overlaps earlier claims on " + record.name + ": " + overlap,
                       "run `accel fleet audit` and release it with `accel fleet release " + c->id + "`");
    e.claims.push_back(c->id);
    CountGpuShape(c->placement, +1, &e.gpu_shapes);
  }
  Summarize(&e);
  return e;
}

FleetView FleetView::FromSnapshot(const FleetSnapshot& snap) {
  FleetView view;
  view.taken_at_ = snap.taken_at;
  std::unordered_map<std::string, std::vector<const Claim*>> by_host;
  for (const Claim& c : snap.claims) by_host[c.host].push_back(&c);
  // Idle hosts of one SKU and policy share their summary: compute it once.
  std::unordered_map<std::string, HostSummary> idle_summaries;
  view.hosts_.reserve(snap.hosts.size());
  for (const HostRecord& r : snap.hosts) {
    auto hw = snap.topologies.at(r.topology_id);
    auto claims = by_host.find(r.name);
    if (claims != by_host.end()) {
      view.hosts_.push_back(MakeHostEntry(r, hw, claims->second));
      continue;
    }
    HostEntry e;
    e.record = r;
    e.hardware = hw;
    const std::string key = r.topology_id + "|" + HostPolicyToJson(r.policy).dump();
    auto cached = idle_summaries.find(key);
    if (cached == idle_summaries.end()) {
      Summarize(&e);
      idle_summaries.emplace(key, e.summary);
    } else {
      e.summary = cached->second;
      e.usage_key = key + "|" + UsageText(e.usage);
    }
    if (e.usage_key.empty()) e.usage_key = key + "|" + UsageText(e.usage);
    view.hosts_.push_back(std::move(e));
  }
  // PostgreSQL's ORDER BY follows the database's collation; the view's order is byte order.
  std::sort(view.hosts_.begin(), view.hosts_.end(),
            [](const HostEntry& a, const HostEntry& b) { return a.record.name < b.record.name; });
  view.Reindex();
  view.rows_.resize(view.hosts_.size());
  for (size_t i = 0; i < view.hosts_.size(); ++i) view.SetRow(i, /*had_row=*/false);
  return view;
}

uint32_t FleetView::HardwareId(const std::shared_ptr<const topology::HostTopology>& hardware) {
  auto it = hardware_ids_.find(hardware.get());
  if (it != hardware_ids_.end()) return it->second;
  HardwareInfo info;
  info.topology = hardware;  // held, so the pointer key is never reused by other hardware
  for (const topology::PciDevice& d : hardware->pci) {
    if (!d.is_accelerator()) continue;
    info.accelerators.push_back(&d);
    info.accelerator_node.push_back(hardware->NodeIndex(d.numa_node));
  }
  info.masks_complete = info.accelerators.size() <= 64;
  const uint32_t id = static_cast<uint32_t>(hardware_.size());
  hardware_.push_back(std::move(info));
  hardware_ids_.emplace(hardware.get(), id);
  return id;
}

uint32_t FleetView::InternState(const std::string& usage_key) {
  auto [it, inserted] = state_ids_.try_emplace(usage_key, 0);
  if (inserted) {
    if (free_states_.empty()) {
      it->second = static_cast<uint32_t>(state_refs_.size());
      state_refs_.push_back(0);
      state_keys_.emplace_back();
    } else {
      it->second = free_states_.back();
      free_states_.pop_back();
    }
    state_keys_[it->second] = usage_key;
  }
  ++state_refs_[it->second];
  return it->second;
}

void FleetView::DropState(uint32_t id) {
  if (id == kNoState || --state_refs_[id] > 0) return;
  state_ids_.erase(state_keys_[id]);
  state_keys_[id].clear();
  free_states_.push_back(id);
}

void FleetView::SetRow(size_t i, bool had_row) {
  const uint32_t old_state = had_row ? rows_[i].state : kNoState;
  const uint32_t hw = HardwareId(hosts_[i].hardware);
  RankRow row = RowWithoutState(hosts_[i], hardware_[hw], hw);
  row.state = InternState(hosts_[i].usage_key);
  DropState(old_state);  // after interning: an unchanged key keeps its id
  rows_[i] = row;
}

RankRow FleetView::RowOf(const HostEntry& entry) const {
  const uint32_t hw = hardware_ids_.at(entry.hardware.get());
  return RowWithoutState(entry, hardware_[hw], hw);
}

const HostEntry* FleetView::Find(const std::string& name) const {
  int i = IndexOf(name);
  return i < 0 ? nullptr : &hosts_[i];
}

int FleetView::IndexOf(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : static_cast<int>(it->second);
}

std::string FleetView::Apply(size_t index, const placement::Placement& p) {
  HostEntry& e = hosts_.at(index);
  if (std::string err = e.usage.Apply(p); !err.empty()) return err;
  CountGpuShape(p, +1, &e.gpu_shapes);
  ++e.record.generation;
  Summarize(&e);
  SetRow(index, /*had_row=*/true);
  return "";
}

void FleetView::Release(size_t index, const placement::Placement& p) {
  HostEntry& e = hosts_.at(index);
  e.usage.Release(p);
  CountGpuShape(p, -1, &e.gpu_shapes);
  ++e.record.generation;
  Summarize(&e);
  SetRow(index, /*had_row=*/true);
}

void FleetView::Upsert(HostEntry entry) {
  int i = IndexOf(entry.record.name);
  if (i >= 0) {
    hosts_[i] = std::move(entry);
    SetRow(static_cast<size_t>(i), /*had_row=*/true);
    return;
  }
  auto at = std::lower_bound(hosts_.begin(), hosts_.end(), entry.record.name,
                             [](const HostEntry& e, const std::string& name) { return e.record.name < name; });
  const size_t pos = static_cast<size_t>(at - hosts_.begin());
  hosts_.insert(at, std::move(entry));
  rows_.insert(rows_.begin() + static_cast<long>(pos), RankRow{});
  SetRow(pos, /*had_row=*/false);
  Reindex();
}

void FleetView::Remove(const std::string& name) {
  int i = IndexOf(name);
  if (i < 0) return;
  DropState(rows_[i].state);
  hosts_.erase(hosts_.begin() + i);
  rows_.erase(rows_.begin() + i);
  Reindex();
}

void FleetView::Reindex() {
  index_.clear();
  for (size_t i = 0; i < hosts_.size(); ++i) index_[hosts_[i].record.name] = i;
}

}  // namespace accel::fleet
