// Fnv1a: the one stable, cheap hash accel uses for names and fingerprints — the fleet's host
// name hashes and tiebreak seeds, hashed object names (Cluster API templates, ResourceSlices),
// the device plugin's CDI annotation keys. Stable across runs and builds; not for security.
#pragma once

#include <cstdint>
#include <string_view>

namespace accel {

/// 64-bit FNV-1a of `text` (FNV's prime, with an offset basis of its own: hash.cc says why).
uint64_t Fnv1a(std::string_view text);

}  // namespace accel
