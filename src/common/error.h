// The error types and exit codes every layer shares, and the rule for which to use.
//
// Which error to throw (docs/architecture.md, "Error rules"):
//   - InputError: what a person handed to accel is wrong — a file, a flag, a field, a value.
//     The message says what, where and how to fix it. The CLI prints it and exits kExitBadInput.
//   - SystemError: the input is fine but the machine or a peer refused — a write, a rename, a
//     directory, a socket, a listen, the kubelet, a database, a child process. The message names
//     the operation, the path or address, and the OS's reason. The CLI exits kExitSystem.
//   - A layer's own error for a contract the layer speaks (devices::BackendError for a vendor
//     library that cannot be used, kube::AllocationError for a request the kubelet gets back as
//     INVALID_ARGUMENT). Each says in its header how the CLI maps it.
//   - Anything else escaping to main() is a bug: "internal error", kExitInternal.
// Functions that answer "no" as a normal outcome (does not fit, invalid config) return it; they
// do not throw. Errors are never used for control flow inside a layer.
#pragma once

#include <stdexcept>
#include <string>

namespace accel {

/// Process exit codes shared by every subcommand. Each command's --help says which it uses.
enum ExitCode : int {
  kExitOk = 0,            ///< success (placed, valid, served, written)
  kExitNoFit = 1,         ///< a well-formed request whose answer is no (does not fit, invalid config)
  kExitBadInput = 2,      ///< malformed or inconsistent input (InputError); nothing was changed
  kExitInternal = 3,      ///< a bug: an unexpected exception reached main()
  kExitFailedChecks = 4,  ///< accel doctor only: at least one check failed
  kExitSystem = 5,        ///< the OS or a peer refused (SystemError): disk, permission, port, socket
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

/// The machine or a peer refused an operation on well-formed input: "cannot write
/// /etc/kubernetes/node-feature-discovery/features.d/accel: No space left on device".
class SystemError : public std::runtime_error {
 public:
  /// operation: what accel tried, as a verb phrase ("cannot write", "cannot listen on")
  /// object: the path, address or peer it was done on; may be empty
  /// reason: the OS's or peer's answer (strerror, a gRPC status); may be empty
  /// hint: how to fix it; may be empty
  SystemError(std::string operation, std::string object, std::string reason, std::string hint = "")
      : std::runtime_error(Format(operation, object, reason, hint)),
        object_(std::move(object)),
        reason_(std::move(reason)) {}

  /// The errno of the failed call as strerror text, with "operation object: " in front.
  static SystemError FromErrno(const std::string& operation, const std::string& object, int err,
                               std::string hint = "");

  const std::string& object() const { return object_; }
  const std::string& reason() const { return reason_; }

 private:
  static std::string Format(const std::string& operation, const std::string& object,
                            const std::string& reason, const std::string& hint) {
    std::string s = operation;
    if (!object.empty()) s += (s.empty() ? "" : " ") + object;
    if (!reason.empty()) s += (s.empty() ? "" : ": ") + reason;
    if (!hint.empty()) s += " (" + hint + ")";
    return s;
  }
  std::string object_, reason_;
};

}  // namespace accel
