// Fnv1a: the one stable, cheap hash accel uses for names and fingerprints — the fleet's host
// name hashes and tiebreak seeds, hashed object names (Cluster API templates, ResourceSlices),
// the device plugin's CDI annotation keys. Stable across runs and builds; not for security.
#pragma once

#include <cstdint>
#include <string_view>

namespace accel {

/// 64-bit FNV-1a of `text` (FNV's prime, with an offset basis of its own: hash.cc says why).
uint64_t Fnv1a(std::string_view text);

/// splitmix64's finalizer: every input bit moves every output bit. For mixing hashes and seeds
/// (FNV-1a's low bits depend only on the low bits of each byte) and for seeded orders.
constexpr uint64_t Mix64(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace accel
