// MonitoringStack: Prometheus Operator objects (monitoring.coreos.com/v1) that scrape each node
// group's accelerator exporter and alert per group, every series and alert carrying the group in
// a `node_group` label. One of the generators of `accel cluster plan` (stack_part.h).
//
// Scrapes (stack/monitoring/service-monitors.yaml, in spec.operators.monitoring.namespace):
// one ServiceMonitor per exporter some group runs, selecting the exporter's Service in its
// operator's namespace, with the job label fixed so the alert rules can name it:
//   exporter                      who runs it               Service it selects (port)              job
//   dcgm-exporter                 nvidia, stack: operator   app=nvidia-dcgm-exporter (gpu-metrics   nvidia-dcgm-exporter
//                                                           9400), NVIDIA/gpu-operator assets/
//                                                           state-dcgm-exporter/0600_service.yaml
//   AMD device-metrics-exporter   amd, stack: operator      label app.kubernetes.io/service set    amd-device-metrics-exporter
//                                                           (exporter-port 5000), ROCm/gpu-operator
//                                                           internal/metricsexporter
//   Gaudi metric exporter         habana, stack: operator   any Service of the operator's          habana-metric-exporter
//                                                           namespace, container port 41611
//                                                           (Habana's default; its Service labels
//                                                           are not public: unconfirmed)
//   accel agent (exporter)        stack: accel, accelerators accel-agent-metrics, a headless       accel-exporter
//                                                           Service this generator adds (the Helm
//                                                           chart has none), port metrics 9400
// The exporters' own ServiceMonitors (ClusterPolicy dcgmExporter.serviceMonitor, DeviceConfig
// metricsExporter.prometheus.serviceMonitor) must stay off, or every series is scraped twice.
//
// node_group. Node labels are not target labels, and a vendor exporter's pods carry no group
// label; but Prometheus ≥ 2.37 attaches the node's metadata to a pod's targets when asked
// (ServiceMonitor attachMetadata.node: true; its service account needs list/watch on Nodes, which
// kube-prometheus-stack grants), so one relabeling copies
// __meta_kubernetes_node_label_accel_io_node_group to node_group on every target of every
// group — one ServiceMonitor per exporter, not per group, and a node moved to another group is
// relabelled at once. Also: `node` from the pod's node name, and honorLabels with the scrape's
// own namespace/pod/container dropped, so the exporters' workload labels (the pod holding a
// device) survive, as deploy/kubernetes/accel-exporter.yaml does.
//
// Alerts (<group>/monitoring/prometheus-rule.yaml, one PrometheusRule per accelerator group):
// every rule selects node_group="<group>" and carries node_group and severity labels.
//   - stack: accel → the rules of deploy/prometheus/accel-alerts.yml (docs/alerts.md runbooks),
//     the same alerts, thresholds and texts with the group's matcher added;
//   - stack: operator → the same checks on the vendor exporter's own metrics (XID, ECC and row
//     remapping, temperature core 85 °C / memory 95 °C as accel's rules, device count dropped,
//     exporter down), each pointing at the accel runbook of the same problem. Metric names are the
//     exporters' (shared/peers/dcgm-exporter/default-counters.csv, shared/reference/telemetry.md
//     §3.4 and §4.2); AMD's are matched with and without its "amd_" MetricsFieldPrefix.
// "Exporter down" also fires when a group that should have nodes (minCount, else count > 0) has
// no target at all; for a group that may scale to zero only a down target fires.
//
// Pure functions over a loaded template and its plan; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"

namespace accel::cluster {

/// The label every scraped series and every alert of a group carries.
inline constexpr const char* kNodeGroupMetricLabel = "node_group";

/// One Prometheus alerting rule.
struct AlertRule {
  std::string alert;        ///< alert name, e.g. "AccelXidCritical"
  std::string expr;         ///< PromQL
  std::string for_duration; ///< `for`, e.g. "5m"; "" = fire at once
  std::string severity;     ///< "critical" or "warning"
  std::string summary;      ///< annotations.summary (Go template)
  std::string description;  ///< annotations.description (Go template)
  std::string runbook_url;  ///< annotations.runbook_url, e.g. "docs/alerts.md#AccelXidCritical"
};

/// The rules of deploy/prometheus/accel-alerts.yml with "$G" where a group's matcher goes: each
/// selector of a series as `name{$G, ...}` or `name{$G}`. With "{$G, " → "{" and "{$G}" → ""
/// each expression is the file's own (a test keeps the two equal).
const std::vector<AlertRule>& AccelAlertTemplates();

/// The alert rules of `group`, in the order they are written: the accel set for stack: accel,
/// the vendor exporter's set for stack: operator, none for vendor none. Every expression selects
/// node_group="<group>".
std::vector<AlertRule> GroupAlertRules(const NodeGroup& group);

/// The ServiceMonitors (and the accel agent's metrics Service) and the per-group
/// PrometheusRules of `plan` (each group's settings from `t`, matched by name). Files:
///   stack/monitoring/service-monitors.yaml      when some group has accelerators
///   <group>/monitoring/prometheus-rule.yaml     per group with accelerators
/// No node labels. Deterministic. Throws InputError when a plan group is not in `t`.
StackPart MonitoringStack(const ClusterTemplate& t, const ClusterPlan& plan);

}  // namespace accel::cluster
