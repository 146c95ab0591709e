// topologyManagerPolicy none (topologymanager/policy_none.go): the managers are not asked for
// hints; each allocates on its own, anywhere on the node.
#include "kubelet/topology_policy.h"

namespace accel::kubelet {

bool AdmitUnderNone(DemandContext& c) {
  if (!c.SmtAligned()) return false;
  return c.AllocateAnywhere();
}

}  // namespace accel::kubelet
