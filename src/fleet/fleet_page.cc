#include "fleet/fleet_page.h"

#include <cstdio>

#include <map>
#include <sstream>

#include "common/strings.h"
#include "placement/host_picture.h"

namespace accel::fleet {

namespace {

// "/hosts/NAME.svg" with NAME percent-encoded where a URL path needs it.
std::string PictureUrl(const std::string& name) { return "/hosts/" + PercentEncode(name) + ".svg"; }

// Free hugepages per size over the host's nodes: "1G 1530/1536, 2M 32768/32768".
std::string PagesFree(const HostEntry& e) {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> pools;  // size -> (free, total)
  for (const topology::NumaNode& n : e.hardware->numa_nodes) {
    for (const topology::HugepagePool& p : n.pages) {
      if (p.size_kib == 4) continue;
      uint64_t used = 0;
      if (auto u = e.usage.nodes.find(n.id); u != e.usage.nodes.end())
        if (auto pu = u->second.pages_used.find(p.size_kib); pu != u->second.pages_used.end()) used = pu->second;
      pools[p.size_kib].first += p.total > used ? p.total - used : 0;
      pools[p.size_kib].second += p.total;
    }
  }
  std::string s;
  for (const auto& [size, ft] : pools) {
    const std::string name = size >= 1048576 ? std::to_string(size / 1048576) + "G" : std::to_string(size / 1024) + "M";
    s += (s.empty() ? "" : ", ") + name + " " + std::to_string(ft.first) + "/" + std::to_string(ft.second);
  }
  return s.empty() ? "-" : s;
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:left;vertical-align:top}"
    "th{background:#f0f0f0}td.count,td.gpus,td.cpus{text-align:right}"
    "tr.disabled td,tr.maintenance td,tr.stale td{color:#888}"
    "details{margin:0.3em 0}img.host-picture{max-width:100%;border:1px solid #ddd}";

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FleetPage(const FleetView& view, const CapacityReport& capacity, int64_t now) {
  std::ostringstream o;
  int free_gpus = 0, total_gpus = 0;
  for (const HostEntry& e : view.hosts()) {
    free_gpus += e.summary.free_accelerators;
    total_gpus += e.summary.total_accelerators;
  }
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>accel fleet</title>"
    << "<style>" << kStyle << "</style></head><body>\n"
    << "<h1>accel fleet</h1>\n<p id=\"summary\">" << view.hosts().size() << " hosts, " << free_gpus << " of "
    << total_gpus << " accelerators free</p>\n";

  o << "<h2>Capacity</h2>\n";
  if (capacity.flavors.empty()) {
    o << "<p>No capacity flavors: start the service with <code>--capacity-flavor FILE</code>.</p>\n";
  } else {
    o << "<table id=\"capacity\"><thead><tr><th>flavor</th><th>more instances</th><th>runs out first</th></tr></thead><tbody>\n";
    for (const FlavorCapacity& f : capacity.flavors)
      o << "<tr data-flavor=\"" << HtmlEscape(f.flavor) << "\"><td class=\"flavor\">" << HtmlEscape(f.flavor)
        << "</td><td class=\"count\">" << f.count << "</td><td class=\"runs-out\">" << HtmlEscape(f.runs_out_first)
        << "</td></tr>\n";
    o << "</tbody></table>\n";
    {
      char line[240];
      const double free = static_cast<double>(capacity.free_gpu_milli) / 1000.0;
      const double frag = capacity.fragmented_gpu_milli / 1000.0;
      std::snprintf(line, sizeof line,
                    "<p id=\"fragmentation\">GPU fragmentation: <span class=\"fragmented\">%.2f</span> of "
                    "<span class=\"free\">%.2f</span> free GPUs the flavors cannot use (%.1f%%); "
                    "<span class=\"unwanted\">%.2f</span> of a kind no flavor asks for.</p>\n",
                    frag, free, free > 0 ? 100.0 * frag / free : 0.0,
                    static_cast<double>(capacity.unwanted_gpu_milli) / 1000.0);
      o << line;
    }
    o << "<p id=\"stranded\">" << capacity.stranded_accelerators << " stranded accelerators (by fragmentation), "
      << capacity.unwanted_accelerators << " not wanted by the flavors";
    if (!capacity.stranded.empty()) {
      o << ":</p><ul>\n";
      for (const StrandedHost& s : capacity.stranded) {
        o << "<li data-host=\"" << HtmlEscape(s.host) << "\">" << HtmlEscape(s.host) << ": ";
        if (!s.stranded.empty()) o << s.stranded.size() << " stranded — " << HtmlEscape(s.reason);
        if (!s.stranded.empty() && !s.unwanted.empty()) o << "; ";
        if (!s.unwanted.empty()) o << s.unwanted.size() << " not wanted by the flavors";
        o << "</li>\n";
      }
      o << "</ul>\n";
    } else {
      o << "</p>\n";
    }
  }

  o << "<h2>Hosts</h2>\n<table id=\"hosts\"><thead><tr><th>host</th><th>state</th><th>labels</th>"
    << "<th>GPUs free</th><th>pinnable CPUs free</th><th>hugepages free</th><th>claims</th></tr></thead><tbody>\n";
  for (const HostEntry& e : view.hosts()) {
    const HostRecord& r = e.record;
    std::string state = HostAdminStateName(r.state);
    if (IsStale(r, now)) state += " stale";
    std::string labels;
    for (const auto& [k, v] : r.labels) labels += (labels.empty() ? "" : ", ") + k + "=" + v;
    o << "<tr data-host=\"" << HtmlEscape(r.name) << "\" class=\"" << state << "\"><td class=\"name\">"
      << HtmlEscape(r.name) << "</td><td class=\"state\">" << state << "</td><td class=\"labels\">"
      << HtmlEscape(labels) << "</td><td class=\"gpus\">" << e.summary.free_accelerators << "/"
      << e.summary.total_accelerators << "</td><td class=\"cpus\">" << e.summary.free_pinnable_cpus << "/"
      << e.summary.total_pinnable_cpus << "</td><td class=\"pages\">" << HtmlEscape(PagesFree(e))
      << "</td><td class=\"claims\">" << e.claims.size() << "</td></tr>\n";
  }
  o << "</tbody></table>\n<h2>Pictures</h2>\n";
  for (const HostEntry& e : view.hosts())
    o << "<details data-host=\"" << HtmlEscape(e.record.name) << "\"><summary>" << HtmlEscape(e.record.name)
      << "</summary><img class=\"host-picture\" loading=\"lazy\" alt=\"" << HtmlEscape(e.record.name)
      << "\" src=\"" << HtmlEscape(PictureUrl(e.record.name)) << "\"></details>\n";
  o << "</body></html>\n";
  return o.str();
}

std::string HostPicture(const HostEntry& e, const std::vector<Claim>& claims) {
  topology::HostTopology hw = *e.hardware;
  hw.hostname = e.record.name;
  std::vector<placement::PictureClaim> pictured;
  for (const Claim& c : claims) pictured.push_back({c.id, c.flavor, c.placement});
  return placement::RenderHostSvg(hw, pictured);
}

}  // namespace accel::fleet
