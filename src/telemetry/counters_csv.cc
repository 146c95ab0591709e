// ParseDcgmCounters: dcgm-exporter's counters CSV (internal/pkg/counters/counter_config.go reads
// it with Go's encoding/csv, Comment = '#', then trims each field of spaces, requires exactly 3
// fields, resolves the name through go-dcgm — DCGM_FI_*, legacy 1.x names, the exporter's own
// DCGM_EXP_* — and checks the type against gauge/counter/histogram/summary/label).
#include <algorithm>
#include <map>

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/field_selection.h"

namespace accel::telemetry {

namespace {

/// One CSV record and the line it starts on.
struct Record {
  std::vector<std::string> fields;
  int line = 0;
};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The blanks Go's strings.TrimSpace would remove from a CSV field (no line breaks inside one).
std::string TrimBlanks(std::string_view s) { return std::string(Trim(s, " \t\r")); }

[[noreturn]] void Fail(const std::string& source, int line, const std::string& problem,
                       const std::string& hint = "") {
  throw InputError(source + ":" + std::to_string(line), "", problem, hint);
}

// Splits `text` into records the way encoding/csv does (RFC 4180, a quoted field may span
// lines), skipping comment and blank lines. Accepts blanks before an opening quote.
std::vector<Record> ReadRecords(std::string_view text, const std::string& source) {
  std::vector<Record> records;
  size_t i = 0;
  int line = 1;
  const size_t n = text.size();
  while (i < n) {
    // Start of a line: a comment or blank line is skipped whole.
    size_t eol = text.find('\n', i);
    std::string_view whole = text.substr(i, eol == std::string_view::npos ? n - i : eol - i);
    std::string trimmed = TrimBlanks(whole);
    if (trimmed.empty() || trimmed[0] == '#') {
      i = eol == std::string_view::npos ? n : eol + 1;
      ++line;
      continue;
    }
    Record record;
    record.line = line;
    std::string field;
    bool record_done = false;
    while (!record_done) {
      // One field: blanks, then a quoted or a bare value, up to ',' or end of line.
      size_t j = i;
      while (j < n && IsBlank(text[j]) && text[j] != '\r') ++j;
      if (j < n && text[j] == '"') {
        int quote_line = line;
        field.clear();
        ++j;
        for (;;) {
          if (j >= n) Fail(source, quote_line, "a quoted field is never closed", "end it with \"");
          if (text[j] == '"') {
            if (j + 1 < n && text[j + 1] == '"') {
              field.push_back('"');
              j += 2;
              continue;
            }
            ++j;
            break;
          }
          if (text[j] == '\n') ++line;
          field.push_back(text[j++]);
        }
        while (j < n && IsBlank(text[j])) ++j;
        if (j < n && text[j] != ',' && text[j] != '\n') {
          Fail(source, line, "text after a closing quote",
               "quote the whole field, and write a quote inside it as \"\"");
        }
        record.fields.push_back(field);
      } else {
        size_t end = j;
        while (end < n && text[end] != ',' && text[end] != '\n') ++end;
        std::string_view bare = text.substr(i, end - i);
        if (bare.find('"') != std::string_view::npos) {
          Fail(source, line, "a quote inside an unquoted field",
               "quote the whole field: \"text with \"\"quotes\"\"\"");
        }
        record.fields.push_back(TrimBlanks(bare));
        j = end;
      }
      if (j < n && text[j] == ',') {
        i = j + 1;
      } else {
        i = j < n ? j + 1 : n;  // past '\n'
        record_done = true;
      }
    }
    ++line;
    for (std::string& f : record.fields) f = TrimBlanks(f);
    records.push_back(std::move(record));
  }
  return records;
}

std::string Closest(std::string_view name) {
  std::vector<std::string_view> names;
  for (const DcgmField& f : DcgmFields()) names.push_back(f.name);
  return std::string(ClosestMatch(name, names, 4));
}

}  // namespace

DcgmCounters ParseDcgmCounters(std::string_view text, const std::string& source) {
  DcgmCounters out;
  out.source = source;
  std::map<std::string, int> first_line;  // metric name -> line it was first served on
  for (const Record& r : ReadRecords(text, source)) {
    if (r.fields.size() != 3) {
      Fail(source, r.line,
           "expected 3 fields (DCGM field, Prometheus type, help), found " +
               std::to_string(r.fields.size()),
           r.fields.size() > 3 ? "a help text with commas must be in double quotes"
                               : "write e.g. DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).");
    }
    const std::string& name = r.fields[0];
    const std::string& type = r.fields[1];
    if (!IsDcgmFieldName(name)) {
      std::string closest = Closest(name);
      Fail(source, r.line, "'" + name + "' is not a DCGM field",
           closest.empty() ? "names are DCGM_FI_*, DCGM_EXP_* or go-dcgm's 1.x names (docs/metrics.md)"
                           : "did you mean " + closest + "?");
    }
    bool is_label = type == "label";
    MetricType metric_type = type == "counter" ? MetricType::kCounter : MetricType::kGauge;
    if (type != "gauge" && type != "counter" && !is_label) {
      if (type == "histogram" || type == "summary") {
        Fail(source, r.line, "type '" + type + "' for a single value",
             "dcgm-exporter accepts it but writes a plain sample under that TYPE, which "
             "Prometheus refuses; use gauge or counter");
      }
      Fail(source, r.line, "unknown Prometheus type '" + type + "'", "use gauge, counter or label");
    }
    const DcgmField* field = FindDcgmField(name);
    if (!field) {
      std::string_view why = WhyNotServed(name);
      out.not_served.push_back(name + " (line " + std::to_string(r.line) +
                               (why.empty() ? "" : ": " + std::string(why)) + ")");
      continue;
    }
    bool label_field = field->shape == DcgmShape::kLabel;
    if (is_label && !label_field) {
      Fail(source, r.line, name + " is a number, not a label", "give it type gauge or counter");
    }
    if (!is_label && label_field) {
      Fail(source, r.line, name + " is a string", "give it type label (it becomes a label on every series)");
    }
    auto [it, inserted] = first_line.emplace(name, r.line);
    if (!inserted) {
      out.duplicates.push_back(name + " (line " + std::to_string(r.line) + ", first at line " +
                               std::to_string(it->second) + ")");
      continue;
    }
    out.counters.push_back({name, field, metric_type, is_label, r.fields[2], r.line});
  }
  if (out.counters.empty()) {
    throw InputError(source, "",
                     "lists no field accel serves" +
                         (out.not_served.empty()
                              ? std::string()
                              : " (" + CountOf(out.not_served.size(), "field", "fields") +
                                    " it cannot read)"),
                     "list at least one field, e.g. DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).");
  }
  return out;
}

DcgmCounters LoadDcgmCounters(const std::string& path) {
  return ParseDcgmCounters(ReadWholeFile(path), path);
}

}  // namespace accel::telemetry
