#include "kube/mps_paths.h"

namespace accel::kube {

MpsPaths MpsPathsFor(const std::string& root, const std::string& resource) {
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") base.clear();
  MpsPaths p;
  p.pipe_dir = base + "/" + resource + "/pipe";
  p.log_dir = base + "/" + resource + "/log";
  p.container_pipe_dir = std::string(kMpsContainerRoot) + "/" + resource + "/pipe";
  return p;
}

}  // namespace accel::kube
