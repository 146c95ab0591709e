// Checkpoint: the claims this node has prepared, kept in a JSON file in the driver's state
// directory so that NodePrepareResources stays idempotent across agent restarts (the kubelet
// calls Prepare again for every running pod's claims after it or the agent restarts) and
// NodeUnprepareResources still finds the CDI spec to remove.
//
// File <state_dir>/checkpoint.json, replaced atomically on every change:
//   {"version": 1, "claims": {"<uid>": {"namespace": "...", "name": "...",
//     "cdiSpec": "/var/run/cdi/k8s.accel.io-claim_<uid>.json",
//     "devices": [{"requestNames": ["gpu"], "pool": "node-1", "device": "gpu-0",
//                  "cdiDeviceIds": ["k8s.accel.io/claim=<uid>-gpu-0"]}]}}}
// A file that cannot be read as that (truncated by a crash of an older writer, edited by
// hand) is logged, renamed aside to checkpoint.json.corrupt, and the checkpoint starts empty:
// the agent never crashes on it, and the kubelet's next Prepare re-creates what is missing.
//
// Thread-safe: one mutex guards the entries and the file.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dra/claim_types.h"

namespace accel::dra {

/// One prepared claim.
struct CheckpointEntry {
  std::string namespace_;
  std::string name;
  /// What Prepare answered, in its order.
  std::vector<PreparedDevice> devices;
  /// The claim's CDI spec file; "" when none was written (a claim with no device of ours).
  std::string cdi_spec_path;

  bool operator==(const CheckpointEntry&) const;
};

/// The file's text for `entries` (keys: claim uids). Deterministic (sorted by uid).
std::string CheckpointJson(const std::map<std::string, CheckpointEntry>& entries);

/// Reads the file's text. Throws InputError (where `where`) when it is not valid JSON, not
/// version 1, or a field has the wrong type.
std::map<std::string, CheckpointEntry> ParseCheckpoint(std::string_view text,
                                                       const std::string& where);

class Checkpoint {
 public:
  using Log = std::function<void(const std::string&)>;

  /// Loads <state_dir>/checkpoint.json when it exists (see above for a corrupt one). Never
  /// throws for the file's content; `log` (may be empty) hears what was set aside.
  explicit Checkpoint(std::string state_dir, Log log = {});

  /// The file's path.
  const std::string& path() const { return path_; }

  /// The entry of `uid`, or std::nullopt.
  std::optional<CheckpointEntry> Get(const std::string& uid) const;
  /// Every entry.
  std::map<std::string, CheckpointEntry> Entries() const;

  /// Adds or replaces the entry of `uid` and writes the file (creating state_dir). Throws
  /// SystemError when the file cannot be written; the entries are then unchanged.
  void Put(const std::string& uid, const CheckpointEntry& entry);
  /// Removes the entry of `uid` (none: nothing happens, nothing is written). Throws
  /// SystemError when the file cannot be written; the entry is then kept.
  void Erase(const std::string& uid);

 private:
  void WriteLocked(const std::map<std::string, CheckpointEntry>& entries) const;

  std::string path_;
  mutable std::mutex mu_;
  std::map<std::string, CheckpointEntry> entries_;
};

}  // namespace accel::dra
