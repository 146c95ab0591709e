// InputError: bad input from outside (a file, a flag, a field), reported to a person.
//
// Every parser of outside input throws InputError, never anything else, so the CLI can
// print one clear line (what, where, how to fix) and exit with kExitBadInput.
#pragma once

#include <stdexcept>
#include <string>

namespace accel {

/// Process exit codes shared by every subcommand.
enum ExitCode : int {
  kExitOk = 0,        ///< success (placed, valid, served)
  kExitNoFit = 1,     ///< a well-formed request that cannot be satisfied
  kExitBadInput = 2,  ///< malformed or inconsistent input; nothing was changed
};

class InputError : public std::runtime_error {
 public:
  /// where: the file (and position, when known), e.g. "flavor.yaml"
  /// field: the field or key path, e.g. "extra_specs.hw:numa_nodes"; may be empty
  /// problem: what is wrong, as a sentence fragment
  /// hint: how to fix it; may be empty
  InputError(std::string where, std::string field, std::string problem, std::string hint = "")
      : std::runtime_error(Format(where, field, problem, hint)),
        where_(std::move(where)),
        field_(std::move(field)),
        problem_(std::move(problem)),
        hint_(std::move(hint)) {}

  const std::string& where() const { return where_; }
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }
  const std::string& hint() const { return hint_; }

 private:
  static std::string Format(const std::string& where, const std::string& field,
                            const std::string& problem, const std::string& hint) {
    std::string s = where;
    if (!field.empty()) s += (s.empty() ? "" : ": ") + field;
    s += (s.empty() ? "" : ": ") + problem;
    if (!hint.empty()) s += " (" + hint + ")";
    return s;
  }
  std::string where_, field_, problem_, hint_;
};

}  // namespace accel
