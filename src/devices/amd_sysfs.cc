#include "devices/amd_sysfs.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace accel::devices::amd_sysfs {

namespace fs = std::filesystem;

std::string SysfsRoot() {
  const char* root = std::getenv("ACCEL_SYSFS_ROOT");
  return root && *root ? root : "/sys";
}

std::string CardDeviceDir(const std::string& root, const std::string& bdf) {
  std::error_code ec;
  const fs::path pci_dir = fs::path(root) / "bus/pci/devices" / bdf;
  for (const auto& entry : fs::directory_iterator(pci_dir / "drm", ec)) {
    const std::string name = entry.path().filename().string();
    // renderD* nodes sit next to cardN; only cardN has a class/drm entry with the amdgpu files.
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) continue;
    fs::path card_dir = fs::path(root) / "class/drm" / name / "device";
    if (fs::is_directory(card_dir, ec)) return card_dir.string();
  }
  return fs::is_directory(pci_dir, ec) ? pci_dir.string() : "";
}

std::optional<double> CurrentDpmLevelMhz(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find('*') == std::string::npos) continue;
    // "<level>: <value><unit> *" where the level may be a number or "S" (deep sleep).
    size_t colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const char* begin = line.c_str() + colon + 1;
    char* end = nullptr;
    double value = std::strtod(begin, &end);
    if (end == begin) return std::nullopt;
    std::string unit(end);
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (unit.find("ghz") != std::string::npos) return value * 1000.0;
    if (unit.find("khz") != std::string::npos) return value / 1000.0;
    return value;  // amdgpu prints "Mhz"
  }
  return std::nullopt;
}

}  // namespace accel::devices::amd_sysfs
