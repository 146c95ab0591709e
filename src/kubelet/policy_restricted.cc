// topologyManagerPolicy restricted (topologymanager/policy_restricted.go): the merged hint must be
// preferred, which it is only when every aligned resource prefers the same cells: their
// narrowest widths must agree and some cell set of that width must hold it all free now; else
// TopologyAffinityError. Then the CPU Manager's Allocate.
#include "kubelet/topology_policy.h"

namespace accel::kubelet {

bool AdmitUnderRestricted(DemandContext& c) { return c.MergeHints(/*single=*/false) && c.SmtAligned(); }

}  // namespace accel::kubelet
