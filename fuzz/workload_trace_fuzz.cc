// libFuzzer target: the workload trace readers of `accel fleet replay` (a nodes CSV and a pods
// CSV, files users download from cluster-trace repositories or export from their schedulers) on
// arbitrary bytes must read or throw accel::InputError; nothing else. What they read must be
// sane: names non-empty, counts and shares in range, models of GPU nodes named.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "fleet/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const accel::fleet::TraceNode& n : accel::fleet::ParseTraceNodes(text, "nodes.csv")) {
      if (n.name.empty() || n.gpus < 0 || n.gpus > 64 || n.cpu_milli < 1 || (n.gpus > 0 && n.model.empty())) std::abort();
      (void)accel::fleet::TraceHostTopology(n);
    }
  } catch (const accel::InputError&) {
  }
  try {
    for (const accel::fleet::TracePod& p : accel::fleet::ParseTracePods(text, "pods.csv")) {
      if (p.name.empty() || p.num_gpu < 0 || p.num_gpu > 64 || p.gpu_milli < 0 || p.gpu_milli > 1000 ||
          (p.num_gpu == 1 && p.gpu_milli < 1))
        std::abort();
      if (p.created && p.deleted && *p.deleted < *p.created) std::abort();
      (void)accel::fleet::TracePodRequest(p);
    }
  } catch (const accel::InputError&) {
  }
  return 0;
}
