// MonitoringStack (monitoring_stack.h): ServiceMonitors per exporter, PrometheusRules per group.
#include "cluster/monitoring_stack.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/yaml_out.h"

namespace accel::cluster {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kMonitoringApi = "monitoring.coreos.com/v1";
// kube-prometheus-stack's Prometheus selects ServiceMonitors and PrometheusRules by the label
// release=<its Helm release>; "prometheus" as deploy/kubernetes/accel-exporter.yaml uses. Change
// it to your release's name (or set the Prometheus' selectors to match everything).
constexpr const char* kReleaseLabel = "release";
constexpr const char* kReleaseValue = "prometheus";
// __meta_kubernetes_node_label_<name>: the node label's name with every character Prometheus
// does not allow in a label name turned into '_' (accel.io/node-group → accel_io_node_group).
constexpr const char* kNodeGroupMeta = "__meta_kubernetes_node_label_accel_io_node_group";

// Job names (fixed by relabeling, whatever the Service is called): the alert rules name them.
constexpr const char* kDcgmJob = "nvidia-dcgm-exporter";
constexpr const char* kAmdJob = "amd-device-metrics-exporter";
constexpr const char* kGaudiJob = "habana-metric-exporter";
constexpr const char* kAccelJob = "accel-exporter";  // what deploy/prometheus/accel-alerts.yml expects

// The accel agent's metrics Service (the Helm chart deploy/helm/accel-agent has none).
constexpr const char* kAccelServiceName = "accel-agent-metrics";
constexpr int kAccelPort = 9400;       // exporter.listen default (docs/node-agent.md)
constexpr int kGaudiPort = 41611;      // Habana metric exporter default (shared/reference/telemetry.md §4.2)

// NVIDIA XIDs that make the device or its work unusable (accel-alerts.yml AccelXidCritical).
constexpr int kCriticalXids[] = {48, 62, 64, 74, 79, 95, 119, 120};

}  // namespace

const std::vector<AlertRule>& AccelAlertTemplates() {
  // deploy/prometheus/accel-alerts.yml, group "accel", with "$G" where the group's matcher goes.
  static const std::vector<AlertRule> kRules = {
    {"AccelXidCritical",
     "increase(accel_xid_errors_total{$G, vendor=\"nvidia\", xid=~\"48|62|64|74|79|95|119|120\"}[5m]) > 0\n"
      "or\n"
      "(\n"
      "  accel_xid_errors_total{$G, vendor=\"nvidia\", xid=~\"48|62|64|74|79|95|119|120\"}\n"
      "  unless accel_xid_errors_total{$G, vendor=\"nvidia\", xid=~\"48|62|64|74|79|95|119|120\"} offset 5m\n"
      ")\n",
     "",
     "critical",
     "XID {{ $labels.xid }} on {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "Device {{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, {{ $labels.pci_address }}, uuid {{ $labels.uuid }}) on {{ $labels.hostname }} reported XID {{ $labels.xid }} in the last 5 minutes. This code means the device or its running jobs are unusable until they are restarted or the device is reset.",
     "docs/alerts.md#AccelXidCritical"},
    {"AccelXidWarning",
     "increase(accel_xid_errors_total{$G, vendor=\"nvidia\", xid=\"94\"}[5m]) > 0\n"
      "or\n"
      "(\n"
      "  accel_xid_errors_total{$G, vendor=\"nvidia\", xid=\"94\"}\n"
      "  unless accel_xid_errors_total{$G, vendor=\"nvidia\", xid=\"94\"} offset 5m\n"
      ")\n",
     "",
     "warning",
     "XID {{ $labels.xid }} on {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "Device {{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, {{ $labels.pci_address }}) on {{ $labels.hostname }} reported XID {{ $labels.xid }} (contained ECC error) in the last 5 minutes. The affected application was stopped; the device keeps working but needs a reset soon.",
     "docs/alerts.md#AccelXidWarning"},
    {"AccelDeviceLost",
     "accel_device_lost{$G} == 1",
     "",
     "critical",
     "{{ $labels.hostname }} lost {{ $labels.vendor }}{{ $labels.index }}",
     "The vendor library reports device {{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, {{ $labels.pci_address }}, uuid {{ $labels.uuid }}) on {{ $labels.hostname }} as lost: it no longer answers on the bus.",
     "docs/alerts.md#AccelDeviceLost"},
    {"AccelDeviceStale",
     "accel_device_up{$G} == 0 and accel_device_lost{$G} == 0",
     "5m",
     "warning",
     "No fresh readings from {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "The exporter on {{ $labels.hostname }} has had no fresh reading of {{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, {{ $labels.pci_address }}) for 5 minutes although the device is not lost: a vendor library call is hanging or failing.",
     "docs/alerts.md#AccelDeviceStale"},
    {"AccelDeviceCountDropped",
     "(\n"
      "  max by (hostname, vendor) (max_over_time(accel_devices{$G}[1h]))\n"
      "  - max by (hostname, vendor) (accel_devices{$G})\n"
      ") > 0\n"
      "or\n"
      "(\n"
      "  (\n"
      "    max by (hostname, vendor) (max_over_time(accel_devices{$G}[1h]))\n"
      "    unless max by (hostname, vendor) (accel_devices{$G})\n"
      "  )\n"
      "  and on (hostname) accel_exporter_build_info{$G}\n"
      ")\n",
     "",
     "critical",
     "{{ $labels.hostname }} lost {{ $value }} {{ $labels.vendor }} device(s)",
     "{{ $labels.hostname }} now enumerates {{ $value }} {{ $labels.vendor }} device(s) fewer than at its maximum during the last hour: a device fell off the bus or its driver dropped it. The alert clears by itself an hour after the drop; check the node even if it has cleared.",
     "docs/alerts.md#AccelDeviceCountDropped"},
    {"AccelTemperatureHigh",
     "accel_temperature_celsius{$G, sensor=\"core\"} > 85\n"
      "or\n"
      "accel_temperature_celsius{$G, sensor=\"memory\"} > 95\n",
     "5m",
     "warning",
     "{{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }} {{ $labels.sensor }} at {{ $value }} \u00b0C",
     "The {{ $labels.sensor }} temperature of {{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}) on {{ $labels.hostname }} has been above its limit (core 85 \u00b0C, memory 95 \u00b0C) for 5 minutes and is now {{ $value }} \u00b0C; the device will throttle its clocks.",
     "docs/alerts.md#AccelTemperatureHigh"},
    {"AccelEccUncorrectable",
     "increase(accel_ecc_errors_total{$G, type=\"uncorrectable\"}[15m]) > 0",
     "",
     "critical",
     "Uncorrectable ECC errors on {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "{{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, uuid {{ $labels.uuid }}) on {{ $labels.hostname }} counted about {{ $value }} new uncorrectable ECC error(s) in the last 15 minutes; data on the device may be corrupt.",
     "docs/alerts.md#AccelEccUncorrectable"},
    {"AccelRowRemapFailed",
     "accel_row_remap_failed{$G} == 1",
     "",
     "critical",
     "Row remapping failed on {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "{{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, uuid {{ $labels.uuid }}) on {{ $labels.hostname }} could not remap a faulty memory row: it has run out of spare rows.",
     "docs/alerts.md#AccelRowRemapFailed"},
    {"AccelRowRemapPending",
     "accel_row_remap_pending{$G} == 1",
     "",
     "warning",
     "Row remap pending on {{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }}",
     "{{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}, uuid {{ $labels.uuid }}) on {{ $labels.hostname }} has a memory row remap waiting for the next device reset.",
     "docs/alerts.md#AccelRowRemapPending"},
    {"AccelMemoryNearlyFull",
     "accel_memory_used_bytes{$G} / (accel_memory_total_bytes{$G} > 0) > 0.95",
     "10m",
     "warning",
     "{{ $labels.hostname }} {{ $labels.vendor }}{{ $labels.index }} memory {{ $value | humanizePercentage }} used",
     "{{ $labels.vendor }}{{ $labels.index }} ({{ $labels.model }}) on {{ $labels.hostname }} has had more than 95% of its memory in use for 10 minutes ({{ $value | humanizePercentage }} now); new allocations will fail.",
     "docs/alerts.md#AccelMemoryNearlyFull"},
    {"AccelExporterDown",
     "up{$G, job=\"accel-exporter\"} == 0 or absent(up{$G, job=\"accel-exporter\"})",
     "5m",
     "warning",
     "accel exporter {{ with $labels.instance }}{{ . }}{{ else }}(no target){{ end }} is down",
     "{{ with $labels.instance }}Prometheus could not scrape the accel exporter at {{ . }}{{ else }}Prometheus has no target of job accel-exporter at all{{ end }} for 5 minutes; device metrics and every other accel alert for it are blind.",
     "docs/alerts.md#AccelExporterDown"},
    {"AccelPodResourcesDown",
     "accel_exporter_pod_resources_up{$G} == 0",
     "5m",
     "warning",
     "accel exporter on {{ $labels.hostname }} cannot list pod resources",
     "The exporter on {{ $labels.hostname }} has failed to call the kubelet pod-resources List for 5 minutes; device series no longer show which pod holds them (accel_pod_device_info is out of date).",
     "docs/alerts.md#AccelPodResourcesDown"},
  };
  return kRules;
}

namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The most nodes a group can have at the least: minCount, else count.
bool MayHaveNoNodes(const NodeGroup& g) { return g.min_count.value_or(g.count) == 0; }

// "up{$G, job=...} == 0 or absent(up{$G, job=...})"; only the first branch for a group that may
// have no nodes (absent() would fire while it is scaled to zero).
std::string ExporterDownExpr(const NodeGroup& g, const std::string& job) {
  const std::string up = "up{$G, job=\"" + job + "\"}";
  if (MayHaveNoNodes(g)) return up + " == 0";
  return up + " == 0 or absent(" + up + ")";
}

// "Devices of a node dropped within the hour": `count` counts a node's devices now; the second
// branch catches a node whose device series vanished while its exporter still answers.
std::string CountDroppedExpr(const std::string& count, const std::string& job) {
  return "(\n"
         "  max_over_time((" + count + ")[1h:1m])\n"
         "  - " + count + "\n"
         ") > 0\n"
         "or\n"
         "(\n"
         "  (max_over_time((" + count + ")[1h:1m]) unless " + count + ")\n"
         "  and on (node) (up{$G, job=\"" + job + "\"} == 1)\n"
         ")\n";
}

std::vector<AlertRule> DcgmRules(const NodeGroup& g) {
  std::string xid;
  for (int code : kCriticalXids)
    xid += std::string(xid.empty() ? "" : "or ") + "DCGM_FI_DEV_XID_ERRORS{$G} == " + std::to_string(code) + "\n";
  const std::string gpus = "count by (node) (count by (node, gpu) (DCGM_FI_DEV_GPU_TEMP{$G}))";
  const std::string where = "{{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on {{ $labels.node }}";
  return {
      // DCGM_FI_DEV_XID_ERRORS holds the last XID of dcgm-exporter's window (5 minutes by default).
      {"DcgmXidCritical", xid, "", "critical", "XID {{ $value }} on {{ $labels.node }} GPU {{ $labels.gpu }}",
       "GPU " + where + " reported XID {{ $value }}: the GPU or its running jobs are unusable until restarted or reset.",
       "docs/alerts.md#AccelXidCritical"},
      {"DcgmXidWarning", "DCGM_FI_DEV_XID_ERRORS{$G} == 94", "", "warning",
       "XID 94 on {{ $labels.node }} GPU {{ $labels.gpu }}",
       "GPU " + where + " reported XID 94 (contained ECC error): the affected application was stopped; the GPU needs a reset soon.",
       "docs/alerts.md#AccelXidWarning"},
      {"DcgmEccUncorrectable", "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{$G}[15m]) > 0", "", "critical",
       "Uncorrectable ECC error on {{ $labels.node }} GPU {{ $labels.gpu }}",
       "GPU " + where + " remapped a memory row for an uncorrectable ECC error in the last 15 minutes; data on it may be corrupt.",
       "docs/alerts.md#AccelEccUncorrectable"},
      {"DcgmRowRemapFailed", "DCGM_FI_DEV_ROW_REMAP_FAILURE{$G} == 1", "", "critical",
       "Row remapping failed on {{ $labels.node }} GPU {{ $labels.gpu }}",
       "GPU " + where + " could not remap a faulty memory row: it has run out of spare rows.",
       "docs/alerts.md#AccelRowRemapFailed"},
      {"DcgmTemperatureHigh", "DCGM_FI_DEV_GPU_TEMP{$G} > 85 or DCGM_FI_DEV_MEMORY_TEMP{$G} > 95", "5m", "warning",
       "{{ $labels.node }} GPU {{ $labels.gpu }} at {{ $value }} °C",
       "GPU " + where + " has been above its limit (core 85 °C, memory 95 °C) for 5 minutes and is now {{ $value }} °C; it will throttle its clocks.",
       "docs/alerts.md#AccelTemperatureHigh"},
      {"DcgmGpuCountDropped", CountDroppedExpr(gpus, kDcgmJob), "", "critical",
       "{{ $labels.node }} lost {{ $value }} GPU(s)",
       "{{ $labels.node }} now reports {{ $value }} GPU(s) fewer than at its maximum during the last hour: a GPU fell off the bus or its driver dropped it.",
       "docs/alerts.md#AccelDeviceCountDropped"},
      {"DcgmExporterDown", ExporterDownExpr(g, kDcgmJob), "5m", "warning",
       "dcgm-exporter {{ with $labels.instance }}{{ . }}{{ else }}(no target){{ end }} is down",
       "Prometheus could not scrape dcgm-exporter {{ with $labels.instance }}at {{ . }}{{ else }}on any node of the group{{ end }} for 5 minutes; the group's GPU alerts are blind.",
       "docs/alerts.md#AccelExporterDown"},
  };
}

// AMD's exporter prefixes every name with its config's MetricsFieldPrefix (the example config
// sets "amd_", the operator's default config none): match both.
std::string Amd(const std::string& name) { return "{$G, __name__=~\"(amd_)?" + name + "\"}"; }

std::vector<AlertRule> AmdRules(const NodeGroup& g) {
  const std::string gpus = "count by (node) (count by (node, gpu_id) (" + Amd("gpu_health") + "))";
  const std::string where = "{{ $labels.gpu_id }} ({{ $labels.card_model }}, serial {{ $labels.serial_number }}) on {{ $labels.node }}";
  return {
      {"AmdGpuUnhealthy", Amd("gpu_health") + " == 0", "5m", "critical",
       "{{ $labels.node }} GPU {{ $labels.gpu_id }} is unhealthy",
       "The AMD metrics exporter has reported GPU " + where + " unhealthy for 5 minutes.",
       "docs/alerts.md#AccelDeviceLost"},
      // The exporter writes every series as a gauge, the ECC counts included: delta, not increase.
      {"AmdEccUncorrectable", "delta(" + Amd("gpu_ecc_uncorrect_total") + "[15m]) > 0", "", "critical",
       "Uncorrectable ECC errors on {{ $labels.node }} GPU {{ $labels.gpu_id }}",
       "GPU " + where + " counted about {{ $value }} new uncorrectable ECC error(s) in the last 15 minutes; data on it may be corrupt.",
       "docs/alerts.md#AccelEccUncorrectable"},
      {"AmdTemperatureHigh", Amd("gpu_junction_temperature") + " > 85 or " + Amd("gpu_memory_temperature") + " > 95", "5m",
       "warning", "{{ $labels.node }} GPU {{ $labels.gpu_id }} at {{ $value }} °C",
       "GPU " + where + " has been above its limit (junction 85 °C, memory 95 °C) for 5 minutes and is now {{ $value }} °C; it will throttle its clocks.",
       "docs/alerts.md#AccelTemperatureHigh"},
      {"AmdGpuCountDropped", CountDroppedExpr(gpus, kAmdJob), "", "critical",
       "{{ $labels.node }} lost {{ $value }} GPU(s)",
       "{{ $labels.node }} now reports {{ $value }} GPU(s) fewer than at its maximum during the last hour: a GPU fell off the bus or its driver dropped it.",
       "docs/alerts.md#AccelDeviceCountDropped"},
      {"AmdExporterDown", ExporterDownExpr(g, kAmdJob), "5m", "warning",
       "AMD metrics exporter {{ with $labels.instance }}{{ . }}{{ else }}(no target){{ end }} is down",
       "Prometheus could not scrape the AMD metrics exporter {{ with $labels.instance }}at {{ . }}{{ else }}on any node of the group{{ end }} for 5 minutes; the group's GPU alerts are blind.",
       "docs/alerts.md#AccelExporterDown"},
  };
}

std::vector<AlertRule> GaudiRules(const NodeGroup& g) {
  const std::string hpus = "count by (node) (habanalabs_device_config{$G})";
  const std::string where = "{{ $labels.id }} (serial {{ $labels.Serial }}) on {{ $labels.node }}";
  std::vector<AlertRule> rules = {
      {"GaudiDoubleBitEccRows", "habanalabs_pending_rows_with_double_bit_ecc_errors{$G} > 0", "", "critical",
       "Uncorrectable ECC errors on {{ $labels.node }} HPU {{ $labels.id }}",
       "HPU " + where + " has {{ $value }} memory row(s) with double-bit ECC errors waiting for replacement; data on it may be corrupt.",
       "docs/alerts.md#AccelEccUncorrectable"},
      {"GaudiRowReplacementPending", "habanalabs_pending_rows_state{$G} == 1", "", "warning",
       "Row replacement pending on {{ $labels.node }} HPU {{ $labels.id }}",
       "HPU " + where + " has memory rows waiting to be replaced at the next device reset.",
       "docs/alerts.md#AccelRowRemapPending"},
      {"GaudiTemperatureHigh", "habanalabs_temperature_onchip{$G} > 85", "5m", "warning",
       "{{ $labels.node }} HPU {{ $labels.id }} at {{ $value }} °C",
       "HPU " + where + " has been above 85 °C on chip for 5 minutes and is now {{ $value }} °C; it will throttle.",
       "docs/alerts.md#AccelTemperatureHigh"},
      {"GaudiDeviceCountDropped", CountDroppedExpr(hpus, kGaudiJob), "", "critical",
       "{{ $labels.node }} lost {{ $value }} HPU(s)",
       "{{ $labels.node }} now reports {{ $value }} HPU(s) fewer than at its maximum during the last hour: an HPU fell off the bus or its driver dropped it.",
       "docs/alerts.md#AccelDeviceCountDropped"},
      {"GaudiExporterDown", ExporterDownExpr(g, kGaudiJob), "5m", "warning",
       "Gaudi metric exporter {{ with $labels.instance }}{{ . }}{{ else }}(no target){{ end }} is down",
       "Prometheus could not scrape the Gaudi metric exporter {{ with $labels.instance }}at {{ . }}{{ else }}on any node of the group{{ end }} for 5 minutes; the group's HPU alerts are blind.",
       "docs/alerts.md#AccelExporterDown"},
  };
  if (g.network.rdma != RdmaMode::kNone)
    rules.push_back({"GaudiNicPortDown", "habanalabs_nic_port_status{$G} == 0", "5m", "warning",
                     "{{ $labels.node }} HPU {{ $labels.id }} port {{ $labels.port }} is down",
                     "Port {{ $labels.port }} ({{ $labels.port_type }}) of HPU " + where +
                         " has been down for 5 minutes; training across HPUs over it fails or slows down.",
                     "docs/node-groups.md#alerts-per-node-group"});
  return rules;
}

// ---------------------------------------------------------------------------------------------
// Objects

Json ObjectMeta(const ClusterTemplate& t, const std::string& name, const std::string& ns, const std::string& group) {
  Json labels = {{kReleaseLabel, kReleaseValue}, {"app.kubernetes.io/managed-by", "accel"}, {"app.kubernetes.io/part-of", t.name}};
  if (!group.empty()) labels[kNodeGroupLabel] = group;
  return {{"name", name}, {"namespace", ns}, {"labels", labels}};
}

// One exporter a ServiceMonitor scrapes.
struct Exporter {
  std::string name;       // ServiceMonitor name
  std::string job;        // job label
  std::string ns;         // namespace of its Service
  Json selector;          // spec.selector
  Json endpoint;          // port or targetPort (and scheme, path)
  std::string comment;    // what it is, for the file header
};

Json ServiceMonitor(const ClusterTemplate& t, const Exporter& e) {
  Json endpoint = e.endpoint;
  endpoint["path"] = "/metrics";
  endpoint["interval"] = "15s";
  endpoint["scrapeTimeout"] = "10s";
  // The exporters' own namespace/pod/container labels name the workload holding a device; keep
  // them, and drop the scrape's (the exporter pod's), which would otherwise land on every series.
  endpoint["honorLabels"] = true;
  endpoint["relabelings"] = Json::array({
      {{"action", "labeldrop"}, {"regex", "(namespace|pod|container)"}},
      {{"sourceLabels", {"__meta_kubernetes_pod_node_name"}}, {"targetLabel", "node"}},
      {{"sourceLabels", {kNodeGroupMeta}}, {"targetLabel", kNodeGroupMetricLabel}},
      {{"targetLabel", "job"}, {"replacement", e.job}},
  });
  return {{"apiVersion", kMonitoringApi},
          {"kind", "ServiceMonitor"},
          {"metadata", ObjectMeta(t, e.name, t.operators.monitoring.namespace_name, "")},
          {"spec",
           {{"attachMetadata", {{"node", true}}},
            {"selector", e.selector},
            {"namespaceSelector", {{"matchNames", {e.ns}}}},
            {"endpoints", Json::array({endpoint})}}}};
}

Json AccelAgentService(const ClusterTemplate& t) {
  const std::string& ns = t.operators.accel.namespace_name;
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", kAccelServiceName},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/name", "accel-agent"}, {"app.kubernetes.io/component", "metrics"},
                        {"app.kubernetes.io/managed-by", "accel"}}}}},
          // Headless: Prometheus scrapes every agent pod, never a load-balanced one.
          {"spec",
           {{"clusterIP", "None"},
            {"selector", {{"app.kubernetes.io/name", "accel-agent"}}},
            {"ports", Json::array({{{"name", "metrics"}, {"port", kAccelPort}, {"targetPort", "metrics"}, {"protocol", "TCP"}}})}}}};
}

Json PrometheusRule(const ClusterTemplate& t, const NodeGroup& g, const std::vector<AlertRule>& rules) {
  Json list = Json::array();
  for (const AlertRule& r : rules) {
    Json rule = {{"alert", r.alert}, {"expr", r.expr}};
    if (!r.for_duration.empty()) rule["for"] = r.for_duration;
    rule["labels"] = {{"severity", r.severity}, {kNodeGroupMetricLabel, g.name}};
    rule["annotations"] = {{"summary", r.summary}, {"description", r.description}, {"runbook_url", r.runbook_url}};
    list.push_back(rule);
  }
  return {{"apiVersion", kMonitoringApi},
          {"kind", "PrometheusRule"},
          {"metadata", ObjectMeta(t, t.name + "-" + g.name, t.operators.monitoring.namespace_name, g.name)},
          {"spec", {{"groups", Json::array({{{"name", "node-group-" + g.name}, {"rules", list}}})}}}};
}

}  // namespace

std::vector<AlertRule> GroupAlertRules(const NodeGroup& group) {
  std::vector<AlertRule> rules;
  if (group.vendor == Vendor::kNone) return rules;
  if (group.stack == Stack::kAccel) {
    rules = AccelAlertTemplates();
    for (AlertRule& r : rules)
      if (r.alert == "AccelExporterDown") r.expr = ExporterDownExpr(group, kAccelJob);
  } else if (group.vendor == Vendor::kNvidia) {
    rules = DcgmRules(group);
  } else if (group.vendor == Vendor::kAmd) {
    rules = AmdRules(group);
  } else {
    rules = GaudiRules(group);
  }
  const std::string matcher = std::string(kNodeGroupMetricLabel) + "=\"" + group.name + "\"";
  for (AlertRule& r : rules) r.expr = Replace(r.expr, "$G", matcher);
  return rules;
}

StackPart MonitoringStack(const ClusterTemplate& t, const ClusterPlan& plan) {
  StackPart part;
  std::set<std::string> wanted;                 // exporters some group runs
  std::map<std::string, std::vector<Json>> objects;  // file -> its objects, for file order
  for (const GroupPlan& gp : plan.groups) {
    const NodeGroup* g = t.FindGroup(gp.group);
    if (!g)
      throw InputError("plan", "groups", "node group " + gp.group + " is not in template " + t.name,
                       "plan the template the stack is generated for");
    if (g->vendor == Vendor::kNone) continue;
    if (g->stack == Stack::kAccel)
      wanted.insert("accel");
    else
      wanted.insert(std::string(VendorName(g->vendor)));
    const Json rule = PrometheusRule(t, *g, GroupAlertRules(*g));
    part.files[g->name + "/monitoring/prometheus-rule.yaml"] =
        "# Alerts of node group " + g->name + " (stack: " + std::string(StackName(g->stack)) + ", vendor: " +
        std::string(VendorName(g->vendor)) + "): every rule selects node_group=\"" + g->name +
        "\",\n# which the ServiceMonitors of stack/monitoring/service-monitors.yaml set. Runbooks: docs/alerts.md.\n"
        "# Written by accel cluster plan.\n" +
        ToYaml(rule);
    objects[g->name + "/monitoring/prometheus-rule.yaml"] = {rule};
  }
  const std::string monitors_file = "stack/monitoring/service-monitors.yaml";

  std::vector<Exporter> exporters;
  if (wanted.count("nvidia"))
    exporters.push_back({"accel-nvidia-dcgm-exporter", kDcgmJob, t.operators.nvidia.namespace_name,
                         {{"matchLabels", {{"app", "nvidia-dcgm-exporter"}}}},
                         {{"port", "gpu-metrics"}},
                         "dcgm-exporter of the NVIDIA GPU Operator (Service nvidia-dcgm-exporter)"});
  if (wanted.count("amd"))
    exporters.push_back({"accel-amd-metrics-exporter", kAmdJob, t.operators.amd.namespace_name,
                         {{"matchExpressions", Json::array({{{"key", "app.kubernetes.io/service"}, {"operator", "Exists"}}})}},
                         {{"port", "exporter-port"}},
                         "device-metrics-exporter of the AMD GPU Operator (one Service per DeviceConfig; http, "
                         "kube-rbac-proxy off)"});
  if (wanted.count("habana"))
    exporters.push_back({"accel-habana-metric-exporter", kGaudiJob, t.operators.habana.namespace_name, Json::object(),
                         {{"targetPort", kGaudiPort}},
                         "metric exporter of the Intel Gaudi Base Operator: every Service of its namespace, container "
                         "port 41611 (its labels are not documented)"});
  if (wanted.count("accel"))
    exporters.push_back({"accel-agent", kAccelJob, t.operators.accel.namespace_name,
                         {{"matchLabels", {{"app.kubernetes.io/name", "accel-agent"}, {"app.kubernetes.io/component", "metrics"}}}},
                         {{"port", "metrics"}},
                         "accel's node agent (stack: accel), through the Service " + std::string(kAccelServiceName) + " below"});

  std::string text =
      "# Scrapes of the node groups' accelerator exporters for " + t.name +
      ", one ServiceMonitor per exporter.\n"
      "# Every target gets node_group from its node's label accel.io/node-group (attachMetadata.node:\n"
      "# Prometheus >= 2.37, list/watch on Nodes) and node from the pod's node. Leave the exporters' own\n"
      "# ServiceMonitors off (ClusterPolicy dcgmExporter.serviceMonitor, DeviceConfig metricsExporter.prometheus),\n"
      "# or each series is scraped twice. Written by accel cluster plan.\n";
  for (const Exporter& e : exporters) {
    const Json monitor = ServiceMonitor(t, e);
    text += "---\n# " + e.comment + "\n" + ToYaml(monitor);
    objects[monitors_file].push_back(monitor);
  }
  if (wanted.count("accel")) {
    const Json service = AccelAgentService(t);
    text += "---\n# The accel agent's metrics port; the accel-agent Helm chart has no Service.\n" + ToYaml(service);
    objects[monitors_file].push_back(service);
  }
  if (!exporters.empty()) part.files[monitors_file] = text;
  for (auto& [file, list] : objects)
    for (Json& o : list) part.objects.push_back(std::move(o));
  return part;
}

}  // namespace accel::cluster
