{{/* Full name: release-chart, shortened to 63 characters (a DNS label). */}}
{{- define "accel-agent.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "accel-agent.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "accel-agent.serviceAccountName" -}}
{{- default (include "accel-agent.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/*
The agent.yaml of one node group. Called with (dict "root" $ "name" NAME "group" GROUP).
*/}}
{{- define "accel-agent.config" -}}
{{- $g := .group -}}
{{- $agent := deepCopy .root.Values.common | merge (deepCopy (default (dict) $g.agent)) -}}
{{- $plugin := dict "version" "v1" "flags" (dict "migStrategy" (default "none" $g.migStrategy)) -}}
{{- if and $g.timeSlicing (ge (int $g.timeSlicing.replicas) 2) -}}
{{- $resource := dict "name" "nvidia.com/gpu" "replicas" (int $g.timeSlicing.replicas) -}}
{{- $ts := dict "renameByDefault" $g.timeSlicing.renameByDefault "failRequestsGreaterThanOne" $g.timeSlicing.failRequestsGreaterThanOne "resources" (list $resource) -}}
{{- $_ := set $plugin "sharing" (dict "timeSlicing" $ts) -}}
{{- end -}}
{{- if and $g.mps (ge (int $g.mps.replicas) 2) -}}
{{- if and $g.timeSlicing (ge (int $g.timeSlicing.replicas) 2) -}}
{{- fail (printf "nodeGroups.%s: timeSlicing.replicas and mps.replicas are exclusive; set one of them to 0" .name) -}}
{{- end -}}
{{- $resource := dict "name" "nvidia.com/gpu" "replicas" (int $g.mps.replicas) -}}
{{- $mps := dict "renameByDefault" $g.mps.renameByDefault "failRequestsGreaterThanOne" $g.mps.failRequestsGreaterThanOne "resources" (list $resource) -}}
{{- $_ := set $plugin "sharing" (dict "mps" $mps) -}}
{{- $_ := set $plugin.flags "mpsRoot" .root.Values.hostPaths.mpsRoot -}}
{{- end -}}
{{- /* Paths inside the container: the hostPaths are mounted there. */ -}}
{{- $_ := set $plugin "pluginDir" "/var/lib/kubelet/device-plugins" -}}
{{- $_ := set $agent "devicePlugin" (dict "enabled" true "config" $plugin) -}}
{{- $labels := default (dict) $agent.labels -}}
{{- $_ := set $labels "file" "/etc/kubernetes/node-feature-discovery/features.d/accel" -}}
{{- $_ := set $agent "labels" $labels -}}
{{- if and $g.mig $g.mig.enabled -}}
{{- $_ := set $agent "mig" (dict "enabled" true "config" $g.mig.config "configFile" "/etc/accel/mig-parted.yaml" "stateFile" "/etc/kubernetes/node-feature-discovery/features.d/accel-mig") -}}
{{- end -}}
{{- toYaml $agent -}}
{{- end -}}
