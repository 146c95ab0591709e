// GPU Performance Monitoring (Hopper+): DCGM's profiling ("DCP") ratios without DCGM. A metric is
// computed from two samples, so each device (and each MIG GPU instance) keeps its previous one.
#include <utility>

#include "devices/nvml_backend.h"

namespace accel::devices {

using namespace nvml;

namespace {

const unsigned kMetricIds[] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL,         NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,  NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC,
};
// Asked for only with ExtraReads::gpm_more (DCGM's opt-in DCP fields).
const unsigned kMoreMetricIds[] = {
    NVML_GPM_METRIC_SM_OCCUPANCY, NVML_GPM_METRIC_FP64_UTIL, NVML_GPM_METRIC_FP32_UTIL,
    NVML_GPM_METRIC_FP16_UTIL,    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
};
constexpr double kBytesPerMiB = 1048576.0;

void Apply(const nvmlGpmMetric_t& m, Sample* s) {
  if (m.nvmlReturn != NVML_SUCCESS) return;
  switch (m.metricId) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL: s->engine_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_SM_UTIL: s->sm_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL: s->tensor_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_DRAM_BW_UTIL: s->dram_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
      s->pcie_tx_bytes_per_second = m.value * kBytesPerMiB;
      break;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
      s->pcie_rx_bytes_per_second = m.value * kBytesPerMiB;
      break;
    case NVML_GPM_METRIC_SM_OCCUPANCY: s->sm_occupancy = m.value / 100.0; break;
    case NVML_GPM_METRIC_FP64_UTIL: s->fp64_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_FP32_UTIL: s->fp32_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_FP16_UTIL: s->fp16_active = m.value / 100.0; break;
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
      s->nvlink_rx_bytes_per_second = m.value * kBytesPerMiB;
      break;
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
      s->nvlink_tx_bytes_per_second = m.value * kBytesPerMiB;
      break;
  }
}

// Asked once per GPU. Whole-GPU and per-GI samples are cached apart after that: in MIG mode a
// driver may refuse the first and serve the second.
bool DeviceSupportsGpm(NvmlReadContext& ctx) {
  NvmlDeviceState& dev = ctx.device();
  if (dev.gpm_supported) return true;
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  if (!ACCEL_NVML_ASK(ctx, NvmlSlot::kGpmSupport, nvmlGpmQueryDeviceSupport, ctx.handle(),
                      &support)) {
    return false;
  }
  if (!support.isSupportedDevice) ctx.MarkUnsupported(NvmlSlot::kGpmSupport);
  dev.gpm_supported = support.isSupportedDevice != 0;
  return dev.gpm_supported;
}

bool Allocate(NvmlReadContext& ctx, NvmlSlot slot, NvmlGpmPair* pair) {
  if (!ctx.Check(slot, "nvmlGpmSampleAlloc", ctx.api().nvmlGpmSampleAlloc(&pair->previous)) ||
      !ctx.Check(slot, "nvmlGpmSampleAlloc", ctx.api().nvmlGpmSampleAlloc(&pair->current))) {
    FreeGpm(ctx.api(), pair);
    return false;
  }
  return true;
}

}  // namespace

void FreeGpm(const NvmlApi& api, NvmlGpmPair* pair) {
  if (api.nvmlGpmSampleFree) {
    if (pair->previous) api.nvmlGpmSampleFree(pair->previous);
    if (pair->current) api.nvmlGpmSampleFree(pair->current);
  }
  *pair = NvmlGpmPair{};
}

void ReadGpm(NvmlReadContext& ctx, NvmlGpmPair* pair, std::optional<unsigned> gpu_instance,
             NvmlSlot slot, Sample* sample) {
  const NvmlApi& api = ctx.api();
  bool present =
      api.nvmlGpmQueryDeviceSupport && api.nvmlGpmSampleAlloc && api.nvmlGpmSampleFree &&
      api.nvmlGpmMetricsGet &&
      (gpu_instance ? api.nvmlGpmMigSampleGet != nullptr : api.nvmlGpmSampleGet != nullptr);
  if (!ctx.Want(slot, present)) return;
  if (!pair->current && (!DeviceSupportsGpm(ctx) || !Allocate(ctx, slot, pair))) return;
  nvmlReturn_t rc = gpu_instance
                        ? api.nvmlGpmMigSampleGet(ctx.handle(), *gpu_instance, pair->current)
                        : api.nvmlGpmSampleGet(ctx.handle(), pair->current);
  if (!ctx.Check(slot, gpu_instance ? "nvmlGpmMigSampleGet" : "nvmlGpmSampleGet", rc)) return;
  if (pair->primed) {
    // ~13 KB: the full 13.3 array, so a library that ever writes past numMetrics stays in bounds.
    static thread_local nvmlGpmMetricsGet_t request;
    request.version = NVML_GPM_METRICS_GET_VERSION;
    request.numMetrics = 0;
    request.sample1 = pair->previous;
    request.sample2 = pair->current;
    auto add = [&](unsigned id) {
      request.metrics[request.numMetrics] = nvmlGpmMetric_t{};
      request.metrics[request.numMetrics++].metricId = id;
    };
    for (unsigned id : kMetricIds) add(id);
    if (ctx.extra().gpm_more) {
      for (unsigned id : kMoreMetricIds) add(id);
    }
    if (ctx.Check(slot, "nvmlGpmMetricsGet", api.nvmlGpmMetricsGet(&request))) {
      for (unsigned i = 0; i < request.numMetrics; ++i) Apply(request.metrics[i], sample);
    }
  }
  std::swap(pair->previous, pair->current);
  pair->primed = true;
}

}  // namespace accel::devices
