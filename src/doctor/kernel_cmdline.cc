#include "doctor/kernel_cmdline.h"

#include <cctype>
#include <cstdint>

namespace accel::doctor {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Parameter names compare with '-' and '_' equal (kernel/params.c parameq).
bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] == '-' ? '_' : a[i];
    char y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string StripQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (c != '"') out += c;
  return out;
}

// A non-negative decimal number, or "N" meaning the last CPU. Rejects overflow.
bool ParseCpuNumber(std::string_view s, int nr_cpus, int* out) {
  if (s == "N") {
    if (nr_cpus <= 0) return false;
    *out = nr_cpus - 1;
    return true;
  }
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

KernelCmdline KernelCmdline::Parse(std::string_view text) {
  KernelCmdline cmd;
  size_t i = 0;
  bool after_dashes = false;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) break;
    size_t start = i;
    bool in_quote = false;
    while (i < text.size() && (in_quote || !IsSpace(text[i]))) {
      if (text[i] == '"') in_quote = !in_quote;
      ++i;
    }
    std::string_view word = text.substr(start, i - start);
    if (after_dashes) {
      cmd.init_args_.push_back(StripQuotes(word));
      continue;
    }
    if (word == "--") {
      after_dashes = true;
      continue;
    }
    // The name ends at the first '=' outside quotes.
    KernelParam p;
    bool q = false;
    size_t eq = std::string_view::npos;
    for (size_t k = 0; k < word.size(); ++k) {
      if (word[k] == '"') q = !q;
      if (word[k] == '=' && !q) {
        eq = k;
        break;
      }
    }
    if (eq == std::string_view::npos) {
      p.key = StripQuotes(word);
    } else {
      p.key = StripQuotes(word.substr(0, eq));
      p.value = StripQuotes(word.substr(eq + 1));
      p.has_value = true;
    }
    cmd.params_.push_back(std::move(p));
  }
  return cmd;
}

bool KernelCmdline::Has(std::string_view key) const {
  for (const KernelParam& p : params_)
    if (SameName(p.key, key)) return true;
  return false;
}

std::optional<std::string> KernelCmdline::Last(std::string_view key) const {
  std::optional<std::string> v;
  for (const KernelParam& p : params_)
    if (SameName(p.key, key)) v = p.value;
  return v;
}

std::vector<std::string> KernelCmdline::All(std::string_view key) const {
  std::vector<std::string> v;
  for (const KernelParam& p : params_)
    if (SameName(p.key, key)) v.push_back(p.value);
  return v;
}

bool ParseKernelCpuList(std::string_view text, int nr_cpus, CpuSet* out, std::string* error) {
  CpuSet set;
  if (nr_cpus <= 0 || nr_cpus > 65536) {
    *error = "the host's CPU count is unknown";
    return false;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view region =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (region.empty()) {
      if (text.empty()) break;  // an empty list is the empty set
      *error = "empty entry in CPU list " + Quote(text);
      return false;
    }
    if (region == "all") {
      for (int c = 0; c < nr_cpus; ++c) set.Add(c);
      continue;
    }
    // A[-B[:USED/GROUP]]
    std::string_view range = region, stride;
    if (size_t colon = region.find(':'); colon != std::string_view::npos) {
      range = region.substr(0, colon);
      stride = region.substr(colon + 1);
    }
    int first = 0, last = 0;
    size_t dash = range.find('-');
    if (dash == std::string_view::npos) {
      if (!ParseCpuNumber(range, nr_cpus, &first)) {
        *error = "bad CPU " + Quote(region);
        return false;
      }
      last = first;
    } else if (!ParseCpuNumber(range.substr(0, dash), nr_cpus, &first) ||
               !ParseCpuNumber(range.substr(dash + 1), nr_cpus, &last)) {
      *error = "bad CPU range " + Quote(region);
      return false;
    }
    if (last < first) {
      *error = "CPU range " + Quote(region) + " ends before it starts";
      return false;
    }
    int used = 1, group = 1;
    if (!stride.empty() || region.find(':') != std::string_view::npos) {
      size_t slash = stride.find('/');
      if (slash == std::string_view::npos ||
          !ParseCpuNumber(stride.substr(0, slash), 1 << 30, &used) ||
          !ParseCpuNumber(stride.substr(slash + 1), 1 << 30, &group) || used == 0 || group == 0 ||
          used > group) {
        *error = "bad CPU group " + Quote(region) + " (want A-B:USED/GROUP, 0 < USED <= GROUP)";
        return false;
      }
    }
    if (last >= nr_cpus) {
      *error = "CPU " + std::to_string(last) + " in " + Quote(region) + " is beyond the last CPU " +
               std::to_string(nr_cpus - 1);
      return false;
    }
    for (int c = first; c <= last; ++c)
      if ((c - first) % group < used) set.Add(c);
  }
  *out = set;
  return true;
}

bool ParseIsolCpus(std::string_view value, int nr_cpus, IsolCpus* out, std::string* error) {
  IsolCpus iso;
  std::string_view rest = value;
  // Flags are alphabetic words ending in ','; "all" and "N" are CPU lists, not flags.
  while (!rest.empty() && std::isalpha(static_cast<unsigned char>(rest[0]))) {
    size_t comma = rest.find(',');
    std::string_view word = rest.substr(0, comma);
    bool is_word = true;
    for (char c : word)
      if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') is_word = false;
    if (!is_word || word == "all" || word == "N" || comma == std::string_view::npos) break;
    if (word == "nohz") {
      iso.nohz = true;
    } else if (word == "domain") {
      iso.domain = true;
    } else if (word == "managed_irq") {
      iso.managed_irq = true;
    } else {
      *error = "unknown isolcpus flag " + Quote(word) + " (known: nohz, domain, managed_irq)";
      return false;
    }
    iso.flags.emplace_back(word);
    rest = rest.substr(comma + 1);
  }
  if (iso.flags.empty()) iso.domain = true;
  if (!ParseKernelCpuList(rest, nr_cpus, &iso.cpus, error)) return false;
  *out = std::move(iso);
  return true;
}

}  // namespace accel::doctor
