// Shared by the files of the vendor stack generator (vendor_stack*.cc): the Builder that writes
// every vendor's part in order, what it knows of each group, the YAML and Kubernetes pieces every
// vendor's objects are made of, and the MIG and device plugin configs both NVIDIA's GPU Operator
// and accel's agent are given. Not part of the public interface (vendor_stack.h is); do not
// include elsewhere.
//
// Which file holds what:
//   vendor_stack.cc          the Builder's frame (groups, node labels, files), YAML and Kubernetes
//                            pieces, GroupMigStrategy
//   vendor_stack_sharing.cc  mig-parted configs and device plugin sharing configs
//   vendor_stack_nvidia.cc   the NVIDIA GPU Operator: ClusterPolicy, ConfigMaps, NVIDIADrivers
//   vendor_stack_amd.cc      the AMD GPU Operator: DeviceConfigs
//   vendor_stack_gaudi.cc    the Intel Gaudi Base Operator: its ClusterPolicy
//   vendor_stack_agent.cc    accel's node agent: agent.yaml, ConfigMap + DaemonSet, Helm values
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"
#include "cluster/vendor_stack.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_geometry.h"
#include "sharing/mig_parted_config.h"

namespace accel::cluster::vendor_stack_internal {

using nlohmann::ordered_json;
using sharing::GpuModel;
using sharing::MigDevices;
using MigConfigKind = sharing::DefaultMigConfigKind;

/// NVIDIA's chart default (migManager.config.default): the config of nodes without a
/// nvidia.com/mig.config label, always in the mig-parted configs accel writes.
inline constexpr const char* kMigDefaultConfig = "all-disabled";

// --- YAML text (vendor_stack.cc) -------------------------------------------------------------

/// `text` as YAML comment lines ("# ..."); "" stays "".
std::string Comment(const std::string& text);

/// One Kubernetes object and the comment above it.
struct ObjectDocument {
  std::string comment;  ///< YAML comment lines above the object, without the "# "
  ordered_json object;  ///< the object
};

/// A file of Kubernetes objects.
struct ObjectFile {
  std::string header;                 ///< comment at the top of the file
  std::vector<ObjectDocument> docs;   ///< its documents, in order
};

/// `v` as 16 hex digits (hashes in keys and annotations).
std::string Hex(uint64_t v);

// --- Small Kubernetes pieces (vendor_stack.cc) -----------------------------------------------

/// metadata: name, namespace (when not ""), accel's managed-by label and, for a group's object,
/// kNodeGroupLabel.
ordered_json Metadata(const std::string& name, const std::string& namespace_name, const std::string& group);
/// The nodeSelector of a group's nodes: kNodeGroupLabel=<group>.
ordered_json GroupSelector(const NodeGroup& g);
/// Tolerations for a set of (key, effect): `operator: Exists`, so a changed taint value does not
/// strand the stack.
ordered_json Tolerations(const std::set<std::pair<std::string, std::string>>& taints);
/// A group's taints as (key, effect).
std::set<std::pair<std::string, std::string>> TaintsOf(const NodeGroup& g);
/// "spec.nodeGroups[index].key": where an InputError points.
std::string FieldOf(size_t index, const std::string& key);

// --- Groups, MIG and device plugin sharing (vendor_stack_sharing.cc) -------------------------

/// The MIG-capable GPU models among a group's passed-through NVIDIA GPUs (catalog order), and the
/// PCI ids of NVIDIA GPUs the catalog does not know.
struct GroupGpus {
  std::vector<const GpuModel*> models;  ///< MIG catalog models, catalog order
  std::vector<std::string> unknown;     ///< "10de:2684"
};

/// The GPUs of a group's guest layout; none when `plan` is null.
GroupGpus GpusOf(const GroupPlan* plan);

/// What one group is, as this part sees it.
struct GroupInfo {
  const NodeGroup* group = nullptr;          ///< in the template
  size_t index = 0;                          ///< in t.groups
  GroupGpus gpus;                            ///< NVIDIA GPUs of its flavor
  MigConfigKind mig = MigConfigKind::kNone;  ///< its sharing.mig
};

/// One mig-parted config name and every group that asks for it.
struct MigUse {
  std::vector<const GroupInfo*> groups;  ///< template order
};

/// Builds the mig-parted config with every name of `uses` (plus all-disabled), each config with
/// one entry per distinct layout over the models of the groups that use it. Throws InputError
/// for a name accel cannot write.
sharing::MigPartedConfig BuildMigConfig(const ClusterTemplate& t, const std::map<std::string, MigUse>& uses);

/// The group's sharing.mps, else its sharing.timeSlicing; null without either.
const ReplicaSharing* ReplicasOf(const NodeGroup& g);

/// The resources a group's device plugin shares: the vendor's resource, or under the mixed MIG
/// strategy the group's MIG device resources.
std::vector<std::string> SharedResources(const GroupInfo& g, const std::string& mig_strategy);

/// sharing.timeSlicing or sharing.mps of NVIDIA's device plugin config (version v1); the group
/// must have one of them (ReplicasOf).
ordered_json SharingSection(const NodeGroup& g, const std::vector<std::string>& resources);

// --- The generator ---------------------------------------------------------------------------

/// VendorStack's one run: each vendor's part adds its files (object_files_, or part_.files for
/// files that are not objects) and node labels; Build renders the object files, in path order.
class Builder {
 public:
  Builder(const ClusterTemplate& t, const ClusterPlan& plan);  // vendor_stack.cc

  StackPart Build();  // vendor_stack.cc

 private:
  // vendor_stack.cc
  /// The groups of one vendor and stack, template order.
  std::vector<const GroupInfo*> Select(Vendor vendor, Stack stack) const;
  /// The first line of every file's header comment.
  std::string Written() const;
  /// The container runtime the kubelet talks to, as the operators name it.
  std::string ContainerEngine() const;

  void Nvidia();  // vendor_stack_nvidia.cc
  void Amd();     // vendor_stack_amd.cc
  void Habana();  // vendor_stack_gaudi.cc
  void Agents();  // vendor_stack_agent.cc

  const ClusterTemplate& t_;
  std::vector<GroupInfo> groups_;                    ///< one per group, template order
  std::string mig_strategy_ = "single";              ///< the ClusterPolicy's (Nvidia sets it)
  std::map<std::string, ObjectFile> object_files_;   ///< path -> file of objects
  StackPart part_;
};

}  // namespace accel::cluster::vendor_stack_internal
