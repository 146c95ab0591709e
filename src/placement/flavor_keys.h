// Which extra-spec keys accel understands, ignores or refuses (used by BuildRequest and the
// flavor reader). A typo in an hw: key must not silently change placement, so every hw: key is
// either one accel interprets, one Nova knows that does not affect placement, or an error.
// Free functions over constant tables; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace accel::placement {

/// What accel does with an extra spec key.
enum class SpecKeyKind {
  kInterpreted,  ///< hw: keys BuildRequest reads (hw:cpu_policy, hw:numa_cpus.0, ...),
                 ///< pci_passthrough:alias, resources[N]:PCPU/VCPU, trait[N]:HW_CPU_HYPERTHREADING
  kIgnored,      ///< kept as given: other namespaces, and hw: keys with no effect on placement
  kRefused,      ///< an unknown or unsupported hw: key, an image property name, ...
};

/// Classifies `key`. For kRefused, *problem and *hint say why and what to write instead
/// (naming the closest supported key when there is one).
SpecKeyKind ClassifySpecKey(std::string_view key, std::string* problem, std::string* hint);

/// Checks the shape Nova's API enforces on every extra spec: key of 1-255 characters from
/// [A-Za-z0-9-_:. ], value of at most 255 characters. Returns "" when fine, else the problem.
std::string ExtraSpecShapeProblem(std::string_view key, std::string_view value);

/// If `key` is `family` + "." + N (e.g. "hw:numa_cpus.3"), returns N; -1 when it is not that
/// family; -2 when it is the family with a malformed N ("hw:numa_cpus.x", "hw:numa_cpus.01").
int NumaCellIndex(std::string_view key, std::string_view family);

}  // namespace accel::placement
