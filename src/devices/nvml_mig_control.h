// Internals of OpenNvmlMigControl (mig_control.h): the shared NVML session and the per-GPU
// MigControl over it. Nothing outside src/devices/*mig_control.cc includes this header.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devices/mig_control.h"
#include "devices/nvml_session.h"

namespace accel::devices {

/// The NVML session (nvml_session.h) shared by the GPUs of one OpenNvmlMigControl call, with MIG
/// control's error wording; the last owner's destruction shuts NVML down. Immutable.
class NvmlMigSession {
 public:
  /// Takes over an initialised session that has the MIG control symbols.
  explicit NvmlMigSession(std::unique_ptr<NvmlSession> session) : session_(std::move(session)) {}

  const NvmlApi& api() const { return session_->api(); }
  /// Throws BackendError "NVML (<path>) GPU <gpu>: <call> failed: <NVML text>" unless SUCCESS.
  void Check(unsigned gpu, const char* call, nvml::nvmlReturn_t rc) const;
  [[noreturn]] void Fail(unsigned gpu, const std::string& what) const;

 private:
  std::unique_ptr<NvmlSession> session_;
};

/// MigControl over one NVML device handle. nvml_mig_control.cc.
class NvmlMigControl : public MigControl {
 public:
  /// Reads identity and MIG capability. Throws BackendError.
  NvmlMigControl(std::shared_ptr<const NvmlMigSession> session, unsigned index);

  unsigned index() const override { return index_; }
  const std::string& product_name() const override { return name_; }
  uint32_t pci_id() const override { return pci_id_; }
  uint32_t pci_subsystem_id() const override { return pci_subsystem_id_; }
  bool mig_capable() const override { return mig_capable_; }

  MigModeState Mode() override;
  bool SetMigEnabled(bool enabled) override;
  bool HasProcesses() override;
  const std::vector<MigDriverProfile>& Profiles() override;
  std::vector<MigGpuInstanceInfo> GpuInstances() override;
  std::vector<MigSlotRange> PossiblePlacements(unsigned profile_id) override;
  unsigned CreateGpuInstance(unsigned profile_id, int start) override;
  void CreateComputeInstances(unsigned gpu_instance, int slices, int count) override;
  void DestroyComputeInstances(unsigned gpu_instance) override;
  void DestroyGpuInstance(unsigned gpu_instance) override;

 private:
  using ComputeInstance = std::pair<nvml::nvmlComputeInstance_t, MigComputeInstanceInfo>;

  const NvmlApi& api() const { return session_->api(); }
  void Check(const char* call, nvml::nvmlReturn_t rc) const { session_->Check(index_, call, rc); }
  nvml::nvmlGpuInstance_t GpuInstanceHandle(unsigned id);
  /// Compute-instance profiles the GI offers (deduplicated by id).
  std::vector<nvml::nvmlComputeInstanceProfileInfo_t> ComputeProfiles(nvml::nvmlGpuInstance_t gi);
  std::vector<ComputeInstance> ComputeInstances(nvml::nvmlGpuInstance_t gi);
  std::vector<nvml::nvmlProcessInfo_t> Processes();

  std::shared_ptr<const NvmlMigSession> session_;
  nvml::nvmlDevice_t handle_ = nullptr;
  unsigned index_ = 0;
  std::string name_;
  uint32_t pci_id_ = 0;
  uint32_t pci_subsystem_id_ = 0;
  bool mig_capable_ = false;
  std::vector<MigDriverProfile> profiles_;  ///< cached once non-empty
};

}  // namespace accel::devices
