// ReadNvmlPeerLinks: what each NVIDIA GPU's active NVLink links reach, as NVML reports it — a
// peer GPU (direct NVLink, bridges, DGX-1 style meshes) or an NVSwitch port (HGX/DGX with
// NVSwitch, where every GPU on the fabric is reachable). Feeds devices::AddPeerLinks, which
// turns the lists into pairwise link counts.
//
// Best effort by design: a node whose NVML cannot say (old driver, PCIe-only GPUs, a GPU off
// the bus) still allocates, just without NVLink preference (NVIDIA's plugin failed every pod
// admission in that case, k8s-device-plugin #2038).
#pragma once

#include <string>
#include <vector>

#include "devices/interconnect.h"

namespace accel::devices {

/// Opens the NVML library at `library_path` (dlopen; the same file the NVIDIA backend loaded,
/// DeviceBackend::library_path()), initialises it, and for each of `pci_addresses` (any spelling
/// CanonicalPciAddress accepts) looks the GPU up by bus id and walks links 0 ..
/// NVML_NVLINK_MAX_LINKS-1: every ENABLED link gives one PeerLink with the far end's canonical
/// address ("0000:18:00.0"). remote_is_switch comes from nvmlDeviceGetNvLinkRemoteDeviceType;
/// when the library lacks it or refuses, a far end that is not one of `pci_addresses` counts as
/// a switch. Shuts NVML down again (init is reference counted, so a backend that holds NVML open
/// is unaffected).
///
/// Returns one list per address, in the same order. Never throws and logs nothing: a library that
/// does not load, lacks the NVLink functions or fails to initialise gives all-empty lists; a GPU
/// it cannot find, or a link it cannot describe, only loses those links. Blocks for as long as
/// NVML does (a hung GPU hangs the caller). Thread-safe (NVML is).
std::vector<std::vector<PeerLink>> ReadNvmlPeerLinks(const std::string& library_path,
                                                     const std::vector<std::string>& pci_addresses);

/// Persistence mode of each GPU in `pci_addresses`, as nvmlDeviceGetPersistenceMode reports it
/// (set by nvidia-persistenced or `nvidia-smi -pm 1`): 1 on, 0 off, -1 unknown (library missing,
/// GPU not found, call refused). Opens and shuts down NVML like ReadNvmlPeerLinks; never throws.
std::vector<int> ReadNvmlPersistenceModes(const std::string& library_path,
                                          const std::vector<std::string>& pci_addresses);

}  // namespace accel::devices
