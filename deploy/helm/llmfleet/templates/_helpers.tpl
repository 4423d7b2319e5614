{{/* The name of the chart's objects: the release's, with the chart's name. */}}
{{- define "llmfleet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the pods. */}}
{{- define "llmfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "llmfleet.labels" -}}
{{ include "llmfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret the pods read their environment from. */}}
{{- define "llmfleet.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "llmfleet.fullname" .) -}}
{{- end -}}

{{/* Whether the state is in PostgreSQL (else SQLite on /data). */}}
{{- define "llmfleet.postgres" -}}
{{- if or .Values.postgres.url .Values.postgres.urlInExistingSecret }}true{{ end -}}
{{- end -}}

{{/*
Checks of the values: several replicas need PostgreSQL (a SQLite
database is one process's), and PostgreSQL needs the sealing secret
(the replicas must share it; no file beside the database holds it).
*/}}
{{- define "llmfleet.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "llmfleet.postgres" .)) -}}
{{- fail "replicaCount > 1 needs postgres.url (or postgres.urlInExistingSecret): several replicas share one PostgreSQL database; SQLite serves one process" -}}
{{- end -}}
{{- if and .Values.postgres.urlInExistingSecret (not .Values.secrets.existingSecret) -}}
{{- fail "postgres.urlInExistingSecret needs secrets.existingSecret" -}}
{{- end -}}
{{- if and (include "llmfleet.postgres" .) (not .Values.secrets.existingSecret) -}}
{{- $_ := required "with PostgreSQL, secrets.sealingSecret is required (openssl rand -hex 32): every replica seals and unseals keys with it" .Values.secrets.sealingSecret -}}
{{- end -}}
{{- end -}}
