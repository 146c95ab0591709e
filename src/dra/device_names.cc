#include "dra/device_names.h"

#include <cstdio>

#include "common/hash.h"
#include "common/strings.h"

namespace accel::dra {

std::string GpuDeviceName(int index) { return "gpu-" + std::to_string(index); }

std::string NicDeviceName(int index) { return "nic-" + std::to_string(index); }

std::string VfDeviceName(int pf, int k) {
  return "nic-" + std::to_string(pf) + "-vf-" + std::to_string(k);
}

std::string GpuCounterSetName(int gpu) { return "gpu-" + std::to_string(gpu) + "-counters"; }

std::string DnsLabelFragment(std::string_view text) {
  std::string out;
  for (char c : text) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string MigDeviceName(int gpu, std::string_view profile, int n) {
  const std::string head = "gpu-" + std::to_string(gpu) + "-mig-";
  const std::string tail = "-" + std::to_string(n);
  std::string mid = DnsLabelFragment(profile);
  if (mid.empty()) mid = "unknown";
  const size_t room = head.size() + tail.size() < 63 ? 63 - head.size() - tail.size() : 1;
  if (mid.size() > room) {
    mid.resize(room);
    while (mid.size() > 1 && mid.back() == '-') mid.pop_back();
  }
  return head + mid + tail;
}

std::string ResourceSliceName(std::string_view node, std::string_view driver, int n) {
  const std::string base = std::string(node) + "-" + std::string(driver);
  const std::string tail = "-" + std::to_string(n);
  std::string name = base + tail;
  if (IsDnsSubdomain(name)) return name;
  // Too long (or odd characters): keep a readable head, then a hash of the whole base.
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a(base)));
  std::string head;
  for (char c : base) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '-' || l == '.';
    head += ok ? l : '-';
  }
  // Labels are ≤ 63: cut the head to 40 characters so the hash's label stays short, then trim
  // characters a label may not end with.
  if (head.size() > 40) head.resize(40);
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) head.pop_back();
  while (!head.empty() && (head.front() == '-' || head.front() == '.')) head.erase(0, 1);
  name = (head.empty() ? std::string() : head + "-") + hash + tail;
  if (!IsDnsSubdomain(name)) name = std::string(hash) + tail;  // e.g. ".." inside the head
  return name;
}

}  // namespace accel::dra
