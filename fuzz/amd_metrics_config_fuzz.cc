// libFuzzer target: arbitrary bytes as AMD device-metrics-exporter's config.json or its
// ConfigMap (`accel exporter --amd-metrics-config`, exporter.amdMetricsConfig). Only
// accel::InputError may leave ParseAmdMetricsConfig. An accepted config's fields must all be
// names accel serves, the rest known names; rendering an AMD node with it must not fail and
// every family it prints must carry the config's prefix.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "common/error.h"
#include "telemetry/field_selection.h"
#include "telemetry/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  accel::telemetry::AmdMetricsConfig config;
  try {
    config = accel::telemetry::ParseAmdMetricsConfig(text, "fuzz input");
  } catch (const accel::InputError&) {
    return 0;
  }
  const auto& served = accel::telemetry::AmdServedFields();
  const auto& known = accel::telemetry::AmdFieldNames();
  for (const std::string& f : config.fields) {
    if (std::find(served.begin(), served.end(), f) == served.end()) std::abort();
  }
  for (const std::string& f : config.not_served) {
    if (std::find(known.begin(), known.end(), f) == known.end()) std::abort();
    if (std::find(served.begin(), served.end(), f) != served.end()) std::abort();
  }
  if (config.all_fields && !config.fields.empty()) std::abort();

  accel::telemetry::Snapshot snap;
  accel::telemetry::DeviceState d;
  d.identity.vendor = accel::devices::Vendor::kAmd;
  d.sample.power_w = 500;
  d.sample.memory_used_bytes = 1 << 30;
  snap.devices.push_back(d);
  auto selection = std::make_shared<accel::telemetry::FieldSelection>();
  selection->amd = config;
  accel::telemetry::RenderOptions options;
  options.dcgm = options.gaudi = options.accel = false;
  options.fields = selection;
  std::string out;
  accel::telemetry::RenderMetrics(snap, options, &out);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0 && line.compare(7, config.prefix.size(), config.prefix) != 0) {
      std::abort();
    }
  }
  accel::telemetry::SelectionWarning(*selection);
  return 0;
}
