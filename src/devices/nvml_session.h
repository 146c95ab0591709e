// NvmlSession: the one way accel opens NVML. Loads libnvidia-ml (LoadVendorLibrary), resolves the
// dlsym table (NvmlApi), initialises NVML, and shuts it down on destruction; looks GPUs up by PCI
// address. Used by the NVIDIA backend (OpenNvml), MIG control (OpenNvmlMigControl) and the
// one-shot queries beside them (NVLink peers, persistence mode for the doctor's HOST-09).
//
// NVML reference-counts nvmlInit/nvmlShutdown per process, so any number of sessions may be open at
// once (a backend that collects plus a one-shot query); each shutdown only drops its own count.
// A session is immutable after construction: api() and the lookups are safe from any thread (NVML
// itself is thread-safe). Nothing outside src/devices/nvml_*.cc includes this header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devices/nvml_abi.h"
#include "devices/shared_library.h"

namespace accel::devices {

/// MIG profile indexes NVML is asked about: past the last one it answers INVALID_ARGUMENT; the
/// bound only stops a broken library from keeping a loop going.
inline constexpr unsigned kMaxMigProfileIndex = 64;

/// The library names tried when none is given: the soname, then where container toolkits and the
/// GPU Operator's driver container put it.
const std::vector<std::string>& NvmlDefaultCandidates();

/// Every NVML function accel may call; a member is null when the library does not export it.
struct NvmlApi {
#define ACCEL_NVML_MEMBER(name, params) nvml::name##_fn* name = nullptr;
  ACCEL_NVML_FUNCTIONS(ACCEL_NVML_MEMBER)
#undef ACCEL_NVML_MEMBER
  nvml::nvmlErrorString_fn* nvmlErrorString = nullptr;

  /// Resolves every symbol in `library`. Returns the required ones that are missing (empty on
  /// success): init/shutdown, the driver version, device count, handle, UUID, name, PCI info,
  /// index and minor number. Optional ones simply stay null.
  std::vector<std::string> Load(const SharedLibrary& library);
  /// nvmlErrorString(rc), or "NVML error <rc>" when the library cannot say.
  std::string ErrorString(nvml::nvmlReturn_t rc) const;
};

/// How a session initialises NVML.
enum class NvmlInit {
  /// nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS): a node whose driver sees no GPU initialises fine
  /// and has zero devices (the exporter, the device plugin).
  kAllowNoGpus,
  /// nvmlInit_v2: fails without a GPU (MIG control and one-shot queries, which need one).
  kNeedGpus,
};

/// What one user of NVML needs from the library beyond NvmlApi's required symbols.
struct NvmlSessionOptions {
  NvmlInit init = NvmlInit::kAllowNoGpus;
  /// Names of further symbols that must be present (checked after Load); may be empty.
  std::function<std::vector<std::string>(const NvmlApi&)> also_required;
  /// The error's subject when symbols are missing, e.g. "required symbols missing".
  std::string missing_what = "required symbols missing";
  /// How to fix missing symbols, e.g. "MIG control needs the R470 driver or newer".
  std::string missing_fix =
      "the library is too old or not NVIDIA's; use the driver's libnvidia-ml.so.1 or pass "
      "--nvml-library";
};

class NvmlSession {
 public:
  /// Takes over `library` (already loaded), resolves its symbols and initialises NVML. Throws
  /// BackendError "NVML (<path>): <missing_what>: a, b (<missing_fix>)" when symbols are missing,
  /// or "NVML (<path>): <init call> failed: <NVML text> (<hint>)" when init fails, with a hint for
  /// the usual causes (driver not loaded, library/driver version mismatch, no permission).
  NvmlSession(std::unique_ptr<SharedLibrary> library, const NvmlSessionOptions& options);
  /// nvmlShutdown (drops this session's reference).
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  const NvmlApi& api() const { return api_; }
  /// The file dlopen opened.
  const std::string& path() const { return library_->path(); }

  /// The GPU at `pci_address` (any spelling CanonicalPciAddress accepts), from
  /// nvmlDeviceGetHandleByPciBusId_v2; nullptr when the address is malformed, the library lacks
  /// the lookup, or NVML does not know the GPU.
  nvml::nvmlDevice_t DeviceAt(const std::string& pci_address) const;

  /// "NVML (<path>): <call> failed: <NVML text>" — the prefix of every error about this session.
  std::string Failure(const std::string& call, nvml::nvmlReturn_t rc) const;

 private:
  std::unique_ptr<SharedLibrary> library_;
  NvmlApi api_;
};

/// A session on `library` (an explicit path), or on the first of NvmlDefaultCandidates() that
/// loads when `library` is empty. Returns nullptr when `library` is empty and no NVML is installed.
/// Throws BackendError when the library is named or found but cannot be loaded, lacks symbols
/// or does not initialise; `fix` ends the "cannot load" message.
std::unique_ptr<NvmlSession> OpenNvmlSession(const std::string& library,
                                             const NvmlSessionOptions& options,
                                             const std::string& fix);

/// Best effort, for one-shot queries beside a running backend: a session on exactly
/// `library_path` (nvmlInit_v2), or nullptr — never an exception — when the path is empty, the
/// library does not load or initialise, lacks nvmlDeviceGetHandleByPciBusId_v2, or `usable(api)`
/// says a symbol the caller needs is missing.
std::unique_ptr<NvmlSession> TryNvmlSession(const std::string& library_path,
                                            const std::function<bool(const NvmlApi&)>& usable);

}  // namespace accel::devices
