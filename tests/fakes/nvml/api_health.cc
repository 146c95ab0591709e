// ECC, retired pages, row remapping, NVLink, batched field values, and processes.
#include <chrono>
#include <cstdio>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

struct FieldInfo {
  unsigned id;
  const char* metric;
  nvmlValueType_t type;
};

// The NVML_FI_DEV_* fields the fake serves; any other id answers NOT_SUPPORTED in its entry.
const FieldInfo kFields[] = {
    {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, "ecc_sbe_volatile", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, "ecc_dbe_volatile", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_ECC_SBE_AGG_TOTAL, "ecc_sbe_aggregate", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_ECC_DBE_AGG_TOTAL, "ecc_dbe_aggregate", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_MEMORY_TEMP, "memory_temperature_c", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, "energy_mj", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {91, "nvlink_links", NVML_VALUE_TYPE_UNSIGNED_INT},  // NVML_FI_DEV_NVLINK_LINK_COUNT
    {NVML_FI_DEV_PCIE_REPLAY_COUNTER, "pcie_replays", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, "nvlink_tx_kib", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, "nvlink_rx_kib", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_REMAPPED_COR, "remapped_rows_correctable", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_REMAPPED_UNC, "remapped_rows_uncorrectable", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_REMAPPED_PENDING, "remap_pending", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_REMAPPED_FAILURE, "remap_failure", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_POWER_INSTANT, "power_instant_mw", NVML_VALUE_TYPE_UNSIGNED_INT},
    {NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, "nvlink_crc_flit_errors",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, "nvlink_crc_data_errors",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, "nvlink_replay_errors",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, "nvlink_recovery_errors",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 0, "violation_power_ns", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 1, "violation_thermal_ns", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 2, "violation_sync_boost_ns",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 3, "violation_board_limit_ns",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 4, "violation_low_util_ns", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
    {NVML_FI_DEV_PERF_POLICY_POWER + 5, "violation_reliability_ns",
     NVML_VALUE_TYPE_UNSIGNED_LONG_LONG},
};

const char* EccMetric(nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter) {
  if (type > NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counter > NVML_AGGREGATE_ECC) return nullptr;
  static const char* const kNames[2][2] = {{"ecc_sbe_volatile", "ecc_sbe_aggregate"},
                                           {"ecc_dbe_volatile", "ecc_dbe_aggregate"}};
  return kNames[type][counter];
}

// The configured far end of an active link, or null (link down or past the list).
const NvLinkPeer* ActivePeer(const Device& dev, unsigned link) {
  if (!dev.nvlink_peers || link >= dev.nvlink_peers->size()) return nullptr;
  const NvLinkPeer& peer = (*dev.nvlink_peers)[link];
  return peer.kind == NvLinkPeer::Kind::kDown ? nullptr : &peer;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                                   nvmlEnableState_t* pending) {
  if (!pending) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t rc = GetMetric("nvmlDeviceGetEccMode", device, "ecc_mode", current);
  if (rc == NVML_SUCCESS) *pending = *current;
  return rc;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                          nvmlMemoryErrorType_t errorType,
                                                          nvmlEccCounterType_t counterType,
                                                          unsigned long long* eccCounts) {
  const char* metric = EccMetric(errorType, counterType);
  if (!metric) return NVML_ERROR_INVALID_ARGUMENT;
  return GetMetric("nvmlDeviceGetTotalEccErrors", device, metric, eccCounts);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device,
                                                        nvmlPageRetirementCause_t cause,
                                                        unsigned int* pageCount,
                                                        unsigned long long* addresses) {
  if (!pageCount || cause > NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned pages = 0;
  nvmlReturn_t rc = GetMetric("nvmlDeviceGetRetiredPages", device,
                              cause == 0 ? "retired_pages_sbe" : "retired_pages_dbe", &pages);
  if (rc != NVML_SUCCESS) return rc;
  // Two-call protocol: ask with *pageCount = 0 to learn the count.
  if (*pageCount < pages) {
    *pageCount = pages;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (pages && !addresses) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < pages; ++i) addresses[i] = 0x100000ull * (i + 1);
  *pageCount = pages;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                     nvmlEnableState_t* isPending) {
  return GetMetric("nvmlDeviceGetRetiredPagesPendingStatus", device, "retired_pages_pending",
                   isPending);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows,
                                                        unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetRemappedRows", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  std::optional<double> correctable = call.Metric("remapped_rows_correctable");
  if (!correctable) return NVML_ERROR_NOT_SUPPORTED;
  *corrRows = static_cast<unsigned>(*correctable);
  *uncRows = static_cast<unsigned>(call.Metric("remapped_rows_uncorrectable").value_or(0));
  *isPending = call.Metric("remap_pending").value_or(0) != 0;
  *failureOccurred = call.Metric("remap_failure").value_or(0) != 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       nvmlEnableState_t* isActive) {
  if (!isActive || link >= kNvLinkSlots) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetNvLinkState", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  bool active = false;
  if (call.device().nvlink_peers) {
    active = ActivePeer(call.device(), link) != nullptr;
  } else {
    std::optional<double> links = call.Metric("nvlink_links");
    if (!links) return NVML_ERROR_NOT_SUPPORTED;
    active = link < *links;
  }
  *isActive = active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  if (!pci || link >= kNvLinkSlots) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetNvLinkRemotePciInfo_v2", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const NvLinkPeer* peer = ActivePeer(call.device(), link);
  if (!peer) return NVML_ERROR_NOT_SUPPORTED;
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  std::sscanf(peer->bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function);
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain, bus, dev,
                function);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", peer->bus_id.c_str());
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = 0x22A310DE;  // NVSwitch (Hopper generation)
  if (peer->kind == NvLinkPeer::Kind::kGpu) {
    pci->pciDeviceId = 0;  // a GPU the config does not list stays anonymous
    for (const Device& other : Global().config.devices) {
      unsigned o[4] = {};
      std::sscanf(other.pci_bus_id.c_str(), "%x:%x:%x.%x", &o[0], &o[1], &o[2], &o[3]);
      if (o[0] == domain && o[1] == bus && o[2] == dev && o[3] == function) {
        pci->pciDeviceId = other.pci_device_id;
      }
    }
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  if (!pNvLinkDeviceType || link >= kNvLinkSlots) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetNvLinkRemoteDeviceType", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const NvLinkPeer* peer = ActivePeer(call.device(), link);
  if (!peer) return NVML_ERROR_NOT_SUPPORTED;
  *pNvLinkDeviceType = peer->kind == NvLinkPeer::Kind::kSwitch ? NVML_NVLINK_DEVICE_TYPE_SWITCH
                                                               : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device,
                                                              unsigned int link,
                                                              nvmlNvLinkErrorCounter_t counter,
                                                              unsigned long long* counterValue) {
  static const char* const kMetrics[] = {"nvlink_replay_errors", "nvlink_recovery_errors",
                                         "nvlink_crc_flit_errors", "nvlink_crc_data_errors"};
  if (link >= kNvLinkSlots || counter >= std::size(kMetrics)) return NVML_ERROR_INVALID_ARGUMENT;
  return GetMetric("nvmlDeviceGetNvLinkErrorCounter", device, kMetrics[counter], counterValue);
}

// NVLINK status between two configured GPUs: OK when both have an active link (to each other
// or into an NVSwitch fabric), NOT_SUPPORTED (5) otherwise; other capabilities answer OK.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                     nvmlGpuP2PCapsIndex_t p2pIndex,
                                                     nvmlGpuP2PStatus_t* p2pStatus) {
  if (!p2pStatus) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetP2PStatus", device1);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  int other = -1, mig = -1;
  if (!DecodeDevice(device2, &other, &mig) || mig >= 0 || other == call.position()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (p2pIndex != NVML_P2P_CAPS_INDEX_NVLINK) {
    *p2pStatus = NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
  }
  auto has_nvlink = [](Device& dev) {
    if (dev.nvlink_peers) {
      for (unsigned link = 0; link < dev.nvlink_peers->size(); ++link) {
        if (ActivePeer(dev, link)) return true;
      }
      return false;
    }
    std::optional<double> links = ReadValue(dev.metrics, "nvlink_links");
    return links && *links > 0;
  };
  Device& peer = Global().config.devices[other];
  *p2pStatus = has_nvlink(call.device()) && has_nvlink(peer) ? NVML_P2P_STATUS_OK : 5;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                       nvmlFieldValue_t* values) {
  if (valuesCount < 0 || (valuesCount > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetFieldValues", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  long long now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = now_us;
    v.latencyUsec = 0;
    v.value.ullVal = 0;
    v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    for (const FieldInfo& field : kFields) {
      if (field.id != v.fieldId) continue;
      std::optional<double> value = call.Metric(field.metric);
      if (!value) break;
      v.valueType = field.type;
      if (field.type == NVML_VALUE_TYPE_UNSIGNED_INT) {
        v.value.uiVal = static_cast<unsigned>(*value < 0 ? 0 : *value);
      } else {
        v.value.ullVal = static_cast<unsigned long long>(*value < 0 ? 0 : *value);
      }
      v.nvmlReturn = NVML_SUCCESS;
    }
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  if (!infoCount) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetComputeRunningProcesses_v3", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  std::vector<nvmlProcessInfo_t> found;
  for (const Process& p : call.device().processes) {
    if (call.mig() && p.gpu_instance_id != call.mig()->gpu_instance_id) continue;
    found.push_back({p.pid, p.used_bytes, p.gpu_instance_id, p.compute_instance_id});
  }
  if (*infoCount < found.size()) {
    *infoCount = static_cast<unsigned>(found.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (!found.empty() && !infos) return NVML_ERROR_INVALID_ARGUMENT;
  std::copy(found.begin(), found.end(), infos);
  *infoCount = static_cast<unsigned>(found.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  if (!processSamplesCount) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetProcessUtilization", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const auto& processes = call.device().processes;
  if (processes.empty()) return NVML_ERROR_NOT_FOUND;
  if (!utilization || *processSamplesCount < processes.size()) {
    *processSamplesCount = static_cast<unsigned>(processes.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned long long now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  for (size_t i = 0; i < processes.size(); ++i) {
    utilization[i] = {processes[i].pid,         now_us, processes[i].sm_util,
                      processes[i].memory_util, 0,      0};
  }
  *processSamplesCount = static_cast<unsigned>(processes.size());
  return NVML_SUCCESS;
}
