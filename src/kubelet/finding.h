// KubeletFinding: one problem a KubeletConfiguration has on a node, with the fix — what the
// typed reader (kubelet/settings.h), the configuration checks (kubelet/check.h), `accel cluster
// check` and `accel doctor` report. Plain data.
#pragma once

#include <string>

namespace accel::kubelet {

/// How bad a finding is.
enum class Severity {
  kError,    ///< the kubelet will not start, or will refuse pods it should admit
  kWarning,  ///< it starts, but a setting does not do what it says (ignored, overridden)
};

/// One problem, with the field at fault and the fix.
struct KubeletFinding {
  Severity severity = Severity::kError;  ///< error or warning
  std::string field;    ///< the KubeletConfiguration field path, e.g. "reservedMemory[0].limits.memory"
  std::string problem;  ///< what will go wrong, e.g. "the kubelet will not start: ..."
  std::string fix;      ///< how to fix it
};

}  // namespace accel::kubelet
