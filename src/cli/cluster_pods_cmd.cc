// accel cluster pods: whether a node group's kubelet admits a pod, and how many fit one node.
#include "cli/commands.h"

namespace accel::cli {

void RegisterClusterPods(CLI::App* cluster, int* exit_code) {
  (void)cluster;
  (void)exit_code;
}

}  // namespace accel::cli
