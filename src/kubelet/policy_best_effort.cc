// topologyManagerPolicy best-effort (topologymanager/policy_best_effort.go): the merged hint is
// taken whether or not it is preferred. What restricted admits, best-effort admits the same way
// (it picks the same best hint). Beyond that, without Memory-Manager memory, the managers
// allocate anywhere (as under none); with it, where the memory goes depends on the merged hint of
// every resource, which accel does not model: it answers no (the kubelet may still admit it).
#include "kubelet/topology_policy.h"

#include <string>

namespace accel::kubelet {

bool AdmitUnderBestEffort(DemandContext& c) {
  if (c.MergeHints(/*single=*/false) && c.SmtAligned()) return true;
  if (c.memory_aligned()) {
    const Admission& refused = c.out();
    if (refused.reason == "SMTAlignmentError" || refused.message.find("has no guest cells with") != std::string::npos)
      return false;
    return c.Refuse("UnexpectedAdmissionError",
                    "under best-effort the Memory Manager places the memory at the topology manager's merged hint; "
                    "accel admits such a pod only where restricted would (" + refused.message +
                        "). The kubelet may still admit it");
  }
  c.Reset();
  return AdmitUnderNone(c);
}

}  // namespace accel::kubelet
