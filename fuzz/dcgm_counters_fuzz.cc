// libFuzzer target: arbitrary bytes as a dcgm-exporter counters CSV (`accel exporter -f`,
// exporter.collectors). Only accel::InputError may leave ParseDcgmCounters. An accepted file
// must list at least one served field; written back as CSV (every field quoted) it must parse to
// the same lines; and rendering a small node with it must not fail.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/error.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/field_selection.h"
#include "telemetry/render.h"

namespace {

std::string Quoted(const std::string& field) {
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

accel::telemetry::Snapshot SmallNode() {
  accel::telemetry::Snapshot snap;
  snap.hostname = "node";
  for (unsigned i = 0; i < 2; ++i) {
    accel::telemetry::DeviceState d;
    d.identity.index = i;
    d.identity.uuid = "GPU-" + std::to_string(i);
    d.identity.pci_address = "0000:1" + std::to_string(i) + ":00.0";
    d.sample.sm_clock_mhz = 1980;
    d.sample.memory_total_bytes = 1ull << 36;
    d.sample.violation_ns[0] = 5;
    d.sample.nvlink_link_mb_per_second = {1.0, std::nullopt};
    d.xid_window = {{79, 1}};
    d.clock_event_window = {{0x4, 2}, {0x1000, 1}};
    d.p2p = {{1 - i, 0}};
    snap.devices.push_back(d);
  }
  snap.devices[1].mig_enabled = true;
  snap.devices[1].mig.push_back({});
  return snap;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  accel::telemetry::DcgmCounters counters;
  try {
    counters = accel::telemetry::ParseDcgmCounters(text, "fuzz input");
  } catch (const accel::InputError&) {
    return 0;
  }
  if (counters.counters.empty()) std::abort();
  std::string again;
  for (const accel::telemetry::DcgmCounter& c : counters.counters) {
    if (!c.field || c.line < 1) std::abort();
    const char* type = c.is_label ? "label"
                       : c.type == accel::http::MetricType::kCounter ? "counter"
                                                                          : "gauge";
    again += Quoted(c.metric) + "," + type + "," + Quoted(c.help) + "\n";
  }
  accel::telemetry::DcgmCounters reread = accel::telemetry::ParseDcgmCounters(again, "again");
  if (reread.counters.size() != counters.counters.size()) std::abort();
  for (size_t i = 0; i < reread.counters.size(); ++i) {
    const auto& a = counters.counters[i];
    const auto& b = reread.counters[i];
    if (a.metric != b.metric || a.help != b.help || a.type != b.type || a.field != b.field ||
        a.is_label != b.is_label) {
      std::abort();
    }
  }
  auto selection = std::make_shared<accel::telemetry::FieldSelection>();
  selection->dcgm = std::move(counters);
  accel::telemetry::RenderOptions options;
  options.fields = selection;
  std::string out;
  accel::telemetry::RenderMetrics(SmallNode(), options, &out);
  accel::telemetry::SelectionWarning(*selection);
  accel::telemetry::ExtraReadsFor(*selection);
  return 0;
}
