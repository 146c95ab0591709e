// The doctor's text report: a headline with counts, then one block per finding worth reading.
#include <cctype>
#include <map>
#include <sstream>

#include "doctor/doctor.h"

namespace accel::doctor {

namespace {

std::string Upper(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Prefixes every line of `text` with `indent`.
std::string Indent(const std::string& text, const std::string& indent) {
  std::string out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out += indent + line + "\n";
  return out;
}

}  // namespace

std::string RenderDoctorText(const DoctorReport& report, bool verbose) {
  std::map<Severity, int> counts;
  int needs_root = 0;
  for (const Finding& f : report.findings) {
    counts[f.severity]++;
    needs_root += f.needs_root;
  }
  std::ostringstream out;
  out << "accel doctor: " << report.hostname << " (role " << report.role << "): ";
  bool first = true;
  for (Severity s : {Severity::kFail, Severity::kWarn, Severity::kInfo, Severity::kOk,
                     Severity::kNotApplicable}) {
    if (!counts[s]) continue;
    out << (first ? "" : ", ") << counts[s] << " " << SeverityName(s);
    first = false;
  }
  if (first) out << "no checks";
  out << "\n";
  int hidden = 0;
  for (const Finding& f : report.findings) {
    bool show = verbose || f.severity >= Severity::kInfo;
    if (!show) {
      ++hidden;
      continue;
    }
    out << "\n[" << Upper(SeverityName(f.severity)) << "] " << f.id << " " << f.title << "\n";
    out << Indent(f.summary, "  ");
    if (!f.evidence.empty() && (verbose || f.severity >= Severity::kWarn || f.needs_root)) {
      out << "  evidence:\n";
      for (const Evidence& e : f.evidence) out << "    " << e.path << " = " << e.value << "\n";
    }
    if (!f.fix.empty()) {
      out << "  fix" << (f.needs_reboot ? " (needs a reboot)" : "") << ":\n";
      out << Indent(f.fix, "    ");
    }
    if (f.needs_root) out << "  (run as root to check everything)\n";
  }
  if (hidden > 0)
    out << "\n" << hidden << " checks ok or not applicable (--verbose shows them)\n";
  if (needs_root > 0)
    out << needs_root << " check" << (needs_root > 1 ? "s" : "")
        << " could not read everything without root\n";
  return out.str();
}

}  // namespace accel::doctor
