#include "http/exposition.h"

#include <charconv>
#include <cmath>

namespace accel::http {
namespace {

// Writes NaN / +Inf / -Inf in the spelling Prometheus and Go both use; false for finite values.
bool AppendNonFinite(std::string* out, double v) {
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
  } else {
    return false;
  }
  return true;
}

}  // namespace

void AppendEscapedLabelValue(std::string* out, std::string_view value) {
  size_t start = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out->append(value.data() + start, i - start);
    out->append(c == '\\' ? "\\\\" : c == '"' ? "\\\"" : "\\n");
    start = i + 1;
  }
  out->append(value.data() + start, value.size() - start);
}

void AppendEscapedHelp(std::string* out, std::string_view text) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '\\' && c != '\n') continue;
    out->append(text.data() + start, i - start);
    out->append(c == '\\' ? "\\\\" : "\\n");
    start = i + 1;
  }
  out->append(text.data() + start, text.size() - start);
}

void AppendLabel(std::string* chunk, std::string_view key, std::string_view value) {
  if (!chunk->empty()) chunk->push_back(',');
  chunk->append(key);
  chunk->append("=\"");
  AppendEscapedLabelValue(chunk, value);
  chunk->push_back('"');
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendUint(std::string* out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendFixed6(std::string* out, double v) {
  if (AppendNonFinite(out, v)) return;
  char buf[400];  // DBL_MAX in fixed notation is 309 digits + 7
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6);
  out->append(buf, r.ptr);
}

void AppendShortest(std::string* out, double v) {
  if (AppendNonFinite(out, v)) return;
  char buf[64];
  // The shortest digits in exponent form tell the decimal exponent; Go's 'g' with the shortest
  // precision keeps that form outside [-4, 6) and prints plain decimals inside it.
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const char* e = buf;
  while (e < r.ptr && *e != 'e') ++e;
  // "e+06" / "e-05": sign, then at least two digits (buf is not NUL-terminated).
  int exponent = 0;
  for (const char* p = e + 2; p < r.ptr; ++p) exponent = exponent * 10 + (*p - '0');
  if (e + 1 < r.ptr && e[1] == '-') exponent = -exponent;
  if (exponent < -4 || exponent >= 6) {
    out->append(buf, r.ptr);
    return;
  }
  r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  out->append(buf, r.ptr);
}

void ExpositionWriter::BeginFamily(std::string_view name, std::string_view help,
                                   MetricType type) {
  name_ = name;
  help_ = help;
  type_ = type;
  header_pending_ = true;
}

void ExpositionWriter::StartSample() { StartSample(std::string_view()); }

void ExpositionWriter::StartSample(std::string_view suffix) {
  if (header_pending_) {
    out_->append("# HELP ");
    out_->append(name_);
    out_->push_back(' ');
    AppendEscapedHelp(out_, help_);
    out_->append("\n# TYPE ");
    out_->append(name_);
    out_->append(type_ == MetricType::kCounter     ? " counter\n"
                 : type_ == MetricType::kHistogram ? " histogram\n"
                                                   : " gauge\n");
    header_pending_ = false;
  }
  out_->append(name_);
  out_->append(suffix);
  has_labels_ = false;
}

void ExpositionWriter::AddLabels(std::string_view chunk) {
  if (chunk.empty()) return;
  out_->push_back(has_labels_ ? ',' : '{');
  out_->append(chunk);
  has_labels_ = true;
}

void ExpositionWriter::AddLabel(std::string_view key, std::string_view value) {
  out_->push_back(has_labels_ ? ',' : '{');
  out_->append(key);
  out_->append("=\"");
  AppendEscapedLabelValue(out_, value);
  out_->push_back('"');
  has_labels_ = true;
}

void ExpositionWriter::CloseLabels() {
  out_->append(has_labels_ ? "} " : " ");
  ++samples_;
}

void ExpositionWriter::FinishInt(int64_t v) {
  CloseLabels();
  AppendInt(out_, v);
  out_->push_back('\n');
}

void ExpositionWriter::FinishUint(uint64_t v) {
  CloseLabels();
  AppendUint(out_, v);
  out_->push_back('\n');
}

void ExpositionWriter::FinishFixed6(double v) {
  CloseLabels();
  AppendFixed6(out_, v);
  out_->push_back('\n');
}

void ExpositionWriter::FinishShortest(double v) {
  CloseLabels();
  AppendShortest(out_, v);
  out_->push_back('\n');
}

}  // namespace accel::http
