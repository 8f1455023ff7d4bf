{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "vcjob.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every resource name: the release name, plus the chart name unless it is part of it. */}}
{{- define "vcjob.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "vcjob.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "vcjob.labels" -}}
helm.sh/chart: {{ include "vcjob.chart" . }}
{{ include "vcjob.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vcjob
{{- end }}

{{- define "vcjob.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vcjob.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Per-component labels: call with (dict "root" $ "component" "webhook"). */}}
{{- define "vcjob.componentLabels" -}}
{{ include "vcjob.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "vcjob.componentSelectorLabels" -}}
{{ include "vcjob.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Names of the objects the processes refer to by name. */}}
{{- define "vcjob.webhook.name" -}}
{{- printf "%s-webhook" (include "vcjob.fullname" .) }}
{{- end }}

{{- define "vcjob.controller.name" -}}
{{- printf "%s-controller" (include "vcjob.fullname" .) }}
{{- end }}

{{- define "vcjob.webhook.secretName" -}}
{{- default (printf "%s-webhook-tls" (include "vcjob.fullname" .)) .Values.certs.secretName }}
{{- end }}

{{- define "vcjob.mutatingConfigName" -}}
{{- printf "%s-mutating-webhook" (include "vcjob.fullname" .) }}
{{- end }}

{{- define "vcjob.validatingConfigName" -}}
{{- printf "%s-validating-webhook" (include "vcjob.fullname" .) }}
{{- end }}

{{- define "vcjob.certificateName" -}}
{{- printf "%s-webhook-serving" (include "vcjob.fullname" .) }}
{{- end }}

{{/* The image, pinned by digest when `image.digest` is set (the tag is then ignored). */}}
{{- define "vcjob.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The DNS names the API server uses to reach the webhook Service. */}}
{{- define "vcjob.webhook.dnsNames" -}}
{{- $svc := include "vcjob.webhook.name" . -}}
- {{ $svc }}
- {{ $svc }}.{{ .Release.Namespace }}
- {{ $svc }}.{{ .Release.Namespace }}.svc
- {{ $svc }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end }}

{{/* The namespaceSelector of both webhooks: never the release's own namespace. */}}
{{- define "vcjob.webhook.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        - {{ .Release.Namespace }}
        {{- range .Values.webhook.excludedNamespaces }}
        - {{ . }}
        {{- end }}
{{- end }}

{{/* caBundle or cert-manager annotation for the webhook configurations. */}}
{{- define "vcjob.webhook.configAnnotations" -}}
{{- if eq .Values.certs.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "vcjob.certificateName" .) }}
{{- end }}
{{- end }}

{{- define "vcjob.webhook.clientConfig" -}}
{{- $root := .root -}}
clientConfig:
  service:
    name: {{ include "vcjob.webhook.name" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ .path }}
    port: {{ $root.Values.webhook.service.port }}
  {{- if eq $root.Values.certs.mode "external" }}
  caBundle: {{ $root.Values.certs.external.caBundle | nospace }}
  {{- end }}
{{- end }}

{{/* Probes on the health port (8081). Call with (dict "probe" .Values.x.livenessProbe "path" "/healthz"). */}}
{{- define "vcjob.probe" -}}
httpGet:
  path: {{ .path }}
  port: health
initialDelaySeconds: {{ .probe.initialDelaySeconds }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end }}

{{/* Impossible value combinations stop the render with a message saying what to change. */}}
{{- define "vcjob.validateValues" -}}
{{- if and (eq .Values.certs.mode "external") (not .Values.certs.secretName) }}
{{- fail "certs.mode=external needs certs.secretName: the Secret holding tls.crt and tls.key" }}
{{- end }}
{{- if and (eq .Values.certs.mode "external") (not .Values.certs.external.caBundle) }}
{{- fail "certs.mode=external needs certs.external.caBundle: the base64 PEM of the CA that signed the certificate" }}
{{- end }}
{{- if and (ne .Values.certs.mode "external") .Values.certs.external.caBundle }}
{{- fail (printf "certs.external.caBundle is only used with certs.mode=external (certs.mode is %s)" .Values.certs.mode) }}
{{- end }}
{{- if and .Values.webhook.podDisruptionBudget.enabled (not (kindIs "string" .Values.webhook.podDisruptionBudget.minAvailable)) (ge (int .Values.webhook.podDisruptionBudget.minAvailable) (int .Values.webhook.replicas)) }}
{{- fail (printf "webhook.podDisruptionBudget.minAvailable (%v) must be below webhook.replicas (%v), or no node could ever be drained" .Values.webhook.podDisruptionBudget.minAvailable .Values.webhook.replicas) }}
{{- end }}
{{- if and .Values.tests.namespace (has .Values.tests.namespace (append .Values.webhook.excludedNamespaces .Release.Namespace)) }}
{{- fail (printf "tests.namespace (%s) is excluded from the webhook, so helm test could not see a denial; pick another namespace" .Values.tests.namespace) }}
{{- end }}
{{- end }}

{{/* Namespace of the helm test's dry run: `default`, unless the webhook skips it. */}}
{{- define "vcjob.tests.namespace" -}}
{{- if .Values.tests.namespace }}
{{- .Values.tests.namespace }}
{{- else if has "default" (append .Values.webhook.excludedNamespaces .Release.Namespace) }}
{{- "kube-public" }}
{{- else }}
{{- "default" }}
{{- end }}
{{- end }}

{{/* Feature gates as `Name=true,Other=false`, names sorted. */}}
{{- define "vcjob.featureGates" -}}
{{- $pairs := list -}}
{{- range $name, $on := . -}}
{{- $pairs = append $pairs (printf "%s=%t" $name $on) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end }}
