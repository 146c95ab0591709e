// Host labels (`--label az=rack-3`) and the filters that select hosts by them
// (`--where gpu=h100`). The syntax is Kubernetes' label syntax, which these operators already
// write every day: key = [prefix/]name, name and value at most 63 characters of [A-Za-z0-9-_.]
// starting and ending alphanumeric (value may be empty), prefix a DNS subdomain.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fleet/host_record.h"

namespace accel::fleet {

/// Parses "key=value". Throws InputError naming `where` (e.g. "--label") with the rule broken.
std::pair<std::string, std::string> ParseLabel(const std::string& text, const std::string& where);

/// One filter term.
struct LabelRequirement {
  enum Op { kEquals, kNotEquals, kExists, kNotExists };
  std::string key;
  Op op = kEquals;
  std::string value;  ///< for kEquals / kNotEquals
  bool Matches(const Labels& labels) const;
  std::string ToString() const;  ///< as written: "gpu=h100", "gpu!=a100", "gpu", "!gpu"
};

/// Parses one --where term: "key=value", "key!=value", "key" (has the label), "!key" (has not).
/// Throws InputError naming `where`.
LabelRequirement ParseRequirement(const std::string& text, const std::string& where);

/// True when `labels` satisfy every requirement (an empty list selects every host).
bool MatchesAll(const std::vector<LabelRequirement>& reqs, const Labels& labels);

}  // namespace accel::fleet
