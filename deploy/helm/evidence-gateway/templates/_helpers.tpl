{{- define "eg.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "eg.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "eg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "eg.labels" -}}
{{ include "eg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "eg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "eg.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "eg.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* "true" for the cluster profile; fails on a profile that is neither. */}}
{{- define "eg.cluster" -}}
{{- if eq .Values.profile "cluster" -}}
true
{{- else if ne .Values.profile "single" -}}
{{- fail (printf "profile must be single or cluster, not %q" .Values.profile) -}}
{{- end -}}
{{- end -}}

{{/* The peer ports of a pod: worker i (1 to workers) listens on ports.peer + i - 1. */}}
{{- define "eg.peerPorts" -}}
- protocol: TCP
  port: {{ .Values.ports.peer }}
  {{- if gt (int .Values.workers) 1 }}
  endPort: {{ sub (add .Values.ports.peer .Values.workers) 1 }}
  {{- end }}
{{- end -}}
