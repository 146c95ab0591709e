// The doctor's JSON report (schema "accel.doctor/v1"): every finding, with its evidence.
#include <nlohmann/json.hpp>

#include "doctor/doctor.h"

namespace accel::doctor {

std::string RenderDoctorJson(const DoctorReport& report) {
  nlohmann::ordered_json doc;
  doc["schema"] = "accel.doctor/v1";
  doc["hostname"] = report.hostname;
  doc["role"] = report.role;
  doc["worst"] = SeverityName(report.Worst());
  doc["exit_code"] = DoctorExitCode(report);
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (Severity s : {Severity::kFail, Severity::kWarn, Severity::kInfo, Severity::kOk,
                     Severity::kNotApplicable})
    counts[SeverityName(s)] = 0;
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const Finding& f : report.findings) {
    counts[SeverityName(f.severity)] = counts[SeverityName(f.severity)].get<int>() + 1;
    nlohmann::ordered_json j;
    j["id"] = f.id;
    j["title"] = f.title;
    j["severity"] = SeverityName(f.severity);
    j["summary"] = f.summary;
    nlohmann::ordered_json ev = nlohmann::ordered_json::array();
    for (const Evidence& e : f.evidence) ev.push_back({{"path", e.path}, {"value", e.value}});
    j["evidence"] = std::move(ev);
    j["fix"] = f.fix;
    j["needs_root"] = f.needs_root;
    j["needs_reboot"] = f.needs_reboot;
    findings.push_back(std::move(j));
  }
  doc["counts"] = std::move(counts);
  doc["findings"] = std::move(findings);
  // Evidence comes from files: replace invalid UTF-8 rather than throwing.
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace accel::doctor
