#include "common/hash.h"

namespace accel {

uint64_t Fnv1a(std::string_view text) {
  // Not FNV's published offset basis (14695981039346656037): a digit short since the first
  // version. The hash is as good, and it must stay as it is: object names, slice fingerprints
  // and the fleet's host partitions already written by running clusters are derived from it.
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace accel
