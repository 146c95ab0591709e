#include "devices/nvml_links.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "devices/nvml_session.h"
#include "devices/topology_join.h"

namespace accel::devices {

using namespace nvml;

namespace {

// The far end's canonical address: NVML's busId, else the legacy spelling, else the numbers.
std::string RemoteAddress(const nvmlPciInfo_t& pci) {
  auto canonical = [](const char* text, size_t size) {
    return CanonicalPciAddress(std::string(text, strnlen(text, size)));
  };
  std::string address = canonical(pci.busId, sizeof pci.busId);
  if (address.empty()) address = canonical(pci.busIdLegacy, sizeof pci.busIdLegacy);
  if (!address.empty()) return address;
  char numeric[32];
  std::snprintf(numeric, sizeof numeric, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
  return numeric;
}

// Whether the far end of `link` is an NVSwitch: NVML's answer, else "not one of our GPUs".
bool RemoteIsSwitch(const NvmlApi& api, nvmlDevice_t handle, unsigned link,
                    const std::string& remote, const std::set<std::string>& gpus) {
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  if (api.nvmlDeviceGetNvLinkRemoteDeviceType &&
      api.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link, &type) == NVML_SUCCESS) {
    return type == NVML_NVLINK_DEVICE_TYPE_SWITCH;
  }
  return gpus.count(remote) == 0;
}

std::vector<PeerLink> GpuLinks(const NvmlApi& api, nvmlDevice_t handle,
                               const std::set<std::string>& gpus) {
  std::vector<PeerLink> links;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = api.nvmlDeviceGetNvLinkState(handle, link, &active);
    // Past the GPU's last link, or the GPU is gone: nothing further will answer.
    if (rc == NVML_ERROR_INVALID_ARGUMENT || rc == NVML_ERROR_GPU_IS_LOST) break;
    if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t pci{};
    if (api.nvmlDeviceGetNvLinkRemotePciInfo_v2(handle, link, &pci) != NVML_SUCCESS) continue;
    PeerLink peer;
    peer.remote_pci_address = RemoteAddress(pci);
    peer.remote_is_switch = RemoteIsSwitch(api, handle, link, peer.remote_pci_address, gpus);
    links.push_back(std::move(peer));
  }
  return links;
}

void ReadAll(const std::string& library_path, const std::vector<std::string>& pci_addresses,
             std::vector<std::vector<PeerLink>>* out) {
  std::unique_ptr<NvmlSession> session = TryNvmlSession(library_path, [](const NvmlApi& api) {
    return api.nvmlDeviceGetNvLinkState && api.nvmlDeviceGetNvLinkRemotePciInfo_v2;
  });
  if (!session) return;
  std::set<std::string> gpus;
  for (const std::string& address : pci_addresses) gpus.insert(CanonicalPciAddress(address));
  for (size_t i = 0; i < pci_addresses.size(); ++i) {
    if (nvmlDevice_t handle = session->DeviceAt(pci_addresses[i])) {
      (*out)[i] = GpuLinks(session->api(), handle, gpus);
    }
  }
}

}  // namespace

std::vector<std::vector<PeerLink>> ReadNvmlPeerLinks(const std::string& library_path,
                                                     const std::vector<std::string>& pci_addresses) {
  std::vector<std::vector<PeerLink>> links(pci_addresses.size());
  try {
    ReadAll(library_path, pci_addresses, &links);
  } catch (...) {
    // Out of memory halfway: partial answers would mislead the allocator more than none.
    return std::vector<std::vector<PeerLink>>(pci_addresses.size());
  }
  return links;
}

std::vector<int> ReadNvmlPersistenceModes(const std::string& library_path,
                                          const std::vector<std::string>& pci_addresses) {
  std::vector<int> modes(pci_addresses.size(), -1);
  try {
    std::unique_ptr<NvmlSession> session = TryNvmlSession(
        library_path, [](const NvmlApi& api) { return api.nvmlDeviceGetPersistenceMode != nullptr; });
    if (!session) return modes;
    for (size_t i = 0; i < pci_addresses.size(); ++i) {
      nvmlDevice_t handle = session->DeviceAt(pci_addresses[i]);
      nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
      if (handle && session->api().nvmlDeviceGetPersistenceMode(handle, &mode) == NVML_SUCCESS) {
        modes[i] = mode == NVML_FEATURE_ENABLED ? 1 : 0;
      }
    }
  } catch (...) {
    return std::vector<int>(pci_addresses.size(), -1);
  }
  return modes;
}

}  // namespace accel::devices
