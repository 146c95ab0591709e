// DeviceBackend: one vendor library (NVML, ROCm SMI, HLML) loaded at run time with dlopen.
//
// A backend enumerates its devices once (Open*), then reads them on demand. Read() on distinct
// devices may run concurrently from different threads (the collector runs one worker per device,
// so a hung vendor call stalls only that device); WaitEvents() runs on its own thread. The binary
// links none of the vendor libraries: a node without one simply has no devices of that vendor.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "devices/device.h"

namespace accel::devices {

/// A vendor library was found (or named) but could not be used: dlopen failed, a required
/// symbol is missing, or init returned an error. The message names the library path, the call
/// and the vendor's error string, and says how to fix it. The CLI exits 2 on it.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual Vendor vendor() const = 0;
  /// The path dlopen resolved (from dlinfo / the name that succeeded).
  virtual const std::string& library_path() const = 0;
  /// Driver version string ("580.95.05"); empty when the library does not say.
  virtual const std::string& driver_version() const = 0;

  /// Devices found at open time, in the vendor's index order. Stable for the backend's life.
  virtual const std::vector<DeviceIdentity>& devices() const = 0;

  /// Reads one device (position in devices()). Never throws for device faults: a lost device
  /// comes back with lost = true, an unsupported field stays absent. May block as long as the
  /// vendor library blocks. Thread-safe for distinct positions.
  virtual DeviceReading Read(size_t position) = 0;

  /// Asks for readings beyond the default set from now on (ExtraReads); call before the first
  /// Read, from one thread. May read static facts right away (ExtraReads::identity_details
  /// fills devices()' brand, InfoROM and library versions). The default does nothing: a backend
  /// without those readings leaves them absent.
  virtual void SetExtraReads(const ExtraReads& extra) { (void)extra; }

  /// Waits up to `timeout` for health events on any device and returns them (empty on timeout).
  /// Backends without an event channel sleep for `timeout` and return empty.
  virtual std::vector<HealthEvent> WaitEvents(std::chrono::milliseconds timeout) = 0;
};

/// Opens NVML. library: an explicit path (--nvml-library), or empty to search the default names
/// ("libnvidia-ml.so.1" through the loader's path). Returns nullptr when `library` is empty and
/// no NVML is installed. Throws BackendError when the library is found or named but cannot be
/// loaded or initialised (including nvmlInit failing: the driver is not loaded).
std::unique_ptr<DeviceBackend> OpenNvml(const std::string& library);

/// Opens ROCm SMI (librocm_smi64.so.1 / .so.7 / /opt/rocm/lib). Same contract as OpenNvml.
std::unique_ptr<DeviceBackend> OpenRocmSmi(const std::string& library);

/// Opens Gaudi HLML (libhlml.so, /usr/lib/habanalabs/libhlml.so). Same contract as OpenNvml.
std::unique_ptr<DeviceBackend> OpenHlml(const std::string& library);

}  // namespace accel::devices
