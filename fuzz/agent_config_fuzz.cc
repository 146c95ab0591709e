// libFuzzer target: arbitrary bytes as the `accel serve` agent config (which embeds NVIDIA
// k8s-device-plugin's config schema under devicePlugin.config).
//
// Only accel::InputError may leave ParseAgentConfig. Inputs naming a devicePlugin.configFile are
// skipped: that key reads another file, and the fuzzer must not read /dev/zero.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/agent_config.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("onfigFile") != std::string::npos) return 0;
  try {
    accel::agent::AgentConfig config = accel::agent::ParseAgentConfig(text, "agent.yaml");
    (void)config;
  } catch (const accel::InputError&) {
  }
  return 0;
}
