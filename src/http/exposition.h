// ExpositionWriter: appends Prometheus text format 0.0.4 to one std::string.
//
// A family is declared with BeginFamily(); its HELP and TYPE lines are written only when its
// first sample arrives, so a family without samples leaves no trace. Labels come as chunks of
// already-escaped `key="value"` pairs (built once per device with AppendLabel), so the hot path
// only copies bytes: no heap allocation per sample once the output string has grown. No
// timestamps are written. Not thread-safe; use one writer per output string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace accel::http {

/// kHistogram: the family's samples are NAME_bucket{le=...}, NAME_sum and NAME_count, written
/// with StartSample(suffix).
enum class MetricType { kCounter, kGauge, kHistogram };

/// Appends `key="value"` to *chunk, preceded by ',' when *chunk is not empty; escapes \ " and
/// newline in `value` as the text format requires.
void AppendLabel(std::string* chunk, std::string_view key, std::string_view value);

/// Appends `value` with \ " and newline escaped (label-value escaping).
void AppendEscapedLabelValue(std::string* out, std::string_view value);

/// Appends `text` with \ and newline escaped (HELP escaping).
void AppendEscapedHelp(std::string* out, std::string_view text);

/// Appends `v` in decimal.
void AppendInt(std::string* out, int64_t v);
void AppendUint(std::string* out, uint64_t v);

/// Appends `v` the way Go's fmt %f does: fixed, 6 decimals ("71.234000"); NaN, +Inf, -Inf.
void AppendFixed6(std::string* out, double v);

/// Appends the shortest text that parses back to `v`, laid out like Go's
/// strconv.FormatFloat(v, 'g', -1, 64), which client_golang exporters write: plain decimal when
/// the decimal exponent is in [-4, 6), else "1.048576e+06"; NaN, +Inf, -Inf.
void AppendShortest(std::string* out, double v);

class ExpositionWriter {
 public:
  /// Appends to *out (not owned; must outlive the writer). Does not clear it.
  explicit ExpositionWriter(std::string* out) : out_(out) {}

  /// Declares the family that the next samples belong to. `name` and `help` must outlive the
  /// family's samples (string literals in practice). A family must be declared only once per
  /// exposition; the caller keeps each family's samples together.
  void BeginFamily(std::string_view name, std::string_view help, MetricType type);

  /// Starts a sample of the current family (writes HELP/TYPE first when it is the first one).
  void StartSample();
  /// Starts a sample named the family's name + `suffix` ("_bucket", "_sum", "_count" of a
  /// histogram); `suffix` is copied at once.
  void StartSample(std::string_view suffix);
  /// Adds a chunk of escaped `k="v"` pairs (from AppendLabel); an empty chunk adds nothing.
  void AddLabels(std::string_view chunk);
  /// Adds one pair, escaping `value`.
  void AddLabel(std::string_view key, std::string_view value);
  /// Ends the sample with its value and a newline.
  void FinishInt(int64_t v);
  void FinishUint(uint64_t v);
  void FinishFixed6(double v);
  void FinishShortest(double v);

  /// Samples written since construction.
  size_t samples() const { return samples_; }

 private:
  void CloseLabels();

  std::string* out_;
  std::string_view name_, help_;
  MetricType type_ = MetricType::kGauge;
  bool header_pending_ = false;
  bool has_labels_ = false;
  size_t samples_ = 0;
};

}  // namespace accel::http
