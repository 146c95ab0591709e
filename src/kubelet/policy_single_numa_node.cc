// topologyManagerPolicy single-numa-node (topologymanager/policy_single_numa_node.go): only hints
// of one NUMA node are kept, so every aligned resource must fit one guest cell, and one cell must
// hold all of it free now; else TopologyAffinityError. Then the CPU Manager's Allocate.
#include "kubelet/topology_policy.h"

namespace accel::kubelet {

bool AdmitUnderSingleNumaNode(DemandContext& c) { return c.MergeHints(/*single=*/true) && c.SmtAligned(); }

}  // namespace accel::kubelet
