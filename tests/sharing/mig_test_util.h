// Shorthand for MIG tests: models by name, layouts written as "3g.40gb@4", problem kinds.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sharing/mig_geometry.h"
#include "sharing/mig_layout.h"

namespace accel::sharing::test {

/// The catalog model named `name`; fails the test (and aborts it) when unknown.
inline const GpuModel& Model(const std::string& name) {
  const GpuModel* model = FindGpuModel(name);
  if (model == nullptr) throw std::runtime_error("no MIG model " + name);
  return *model;
}

/// Profile indices of `names` on `model`.
inline std::vector<int> Profiles(const GpuModel& model, const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) {
    auto p = FindProfile(model, n);
    if (!p) throw std::runtime_error("no profile " + n + " on " + model.name);
    out.push_back(*p);
  }
  return out;
}

/// {"4g.20gb@0", "2g.10gb@4"} → placements, in the order written.
inline MigLayout Layout(const GpuModel& model, const std::vector<std::string>& items) {
  MigLayout layout;
  for (const std::string& item : items) {
    const size_t at = item.find('@');
    layout.push_back({Profiles(model, {item.substr(0, at)})[0], std::stoi(item.substr(at + 1))});
  }
  return layout;
}

/// The kinds of `problems`, as a multiset.
inline std::multiset<LayoutProblem::Kind> Kinds(const std::vector<LayoutProblem>& problems) {
  std::multiset<LayoutProblem::Kind> kinds;
  for (const LayoutProblem& p : problems) kinds.insert(p.kind);
  return kinds;
}

/// Counts vector for `model` from (name, count) pairs.
inline std::vector<int> Counts(const GpuModel& model,
                               const std::vector<std::pair<std::string, int>>& wanted) {
  std::vector<int> counts(model.profiles.size(), 0);
  for (const auto& [name, n] : wanted) counts[Profiles(model, {name})[0]] += n;
  return counts;
}

}  // namespace accel::sharing::test
