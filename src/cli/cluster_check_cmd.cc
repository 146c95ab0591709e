// accel cluster check: what will go wrong in a cluster template's node groups, before it does.
#include "cli/commands.h"

namespace accel::cli {

void RegisterClusterCheck(CLI::App* cluster, int* exit_code) {
  (void)cluster;
  (void)exit_code;
}

}  // namespace accel::cli
