#include "common/json_reader.h"

namespace accel {

CpuSet JsonReader::ParseCpus(const std::string& text, JsonAt at) const {
  if (text.find('^') != std::string::npos) {
    Fail(at, "\"" + text + "\" uses an exclusion '^'", "list the CPUs, e.g. \"0-3,8\"");
  }
  CpuSet cpus;
  std::string error;
  if (!CpuSet::Parse(text, &cpus, &error)) Fail(at, error, "write it like \"0-3,8\"");
  return cpus;
}

uint16_t JsonReader::ParseHex4(const std::string& text, JsonAt at) const {
  bool ok = text.size() == 4;
  unsigned value = 0;
  for (char c : text) {
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    ok = ok && digit >= 0;
    value = value * 16 + static_cast<unsigned>(digit < 0 ? 0 : digit);
  }
  if (!ok) Fail(at, "\"" + text + "\" is not 4 hex digits", "write it like \"10de\"");
  return static_cast<uint16_t>(value);
}

}  // namespace accel
