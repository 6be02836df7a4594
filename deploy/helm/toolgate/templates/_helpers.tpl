{{/* The release's full name, at most 63 characters. */}}
{{- define "toolgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "toolgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the gateway's pods. */}}
{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "toolgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels that select the runner pods (sandbox.backend=kubernetes). */}}
{{- define "toolgate.runnerSelectorLabels" -}}
app.kubernetes.io/name: toolgate-runner
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: sandbox
{{- end -}}

{{- define "toolgate.serviceAccountName" -}}
{{- default (include "toolgate.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "toolgate.sandboxTemplateName" -}}
{{- default (printf "%s-sandbox" (include "toolgate.fullname" .)) .Values.sandbox.kubernetes.template -}}
{{- end -}}

{{/* An image reference: [registry/]name:tag[@digest]. Argument: (list $ name). */}}
{{- define "toolgate.image" -}}
{{- $ := index . 0 -}}
{{- $ref := printf "%s:%s" (index . 1) (default $.Chart.AppVersion $.Values.image.tag) -}}
{{- with $.Values.image.registry -}}
{{- $ref = printf "%s/%s" (trimSuffix "/" .) $ref -}}
{{- end -}}
{{- if $.Values.image.digest -}}
{{- $ref = printf "%s@%s" $ref $.Values.image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/* The gateway's image: toolgate-runner for serve (commands need a shell), toolgate for proxy. */}}
{{- define "toolgate.gatewayImage" -}}
{{- $name := .Values.image.name -}}
{{- if not $name -}}
{{- $name = ternary "toolgate/toolgate-runner" "toolgate/toolgate" (eq .Values.command "serve") -}}
{{- end -}}
{{- include "toolgate.image" (list . $name) -}}
{{- end -}}

{{/* Checks of the values that values.schema.json cannot express; a bad value fails the render. */}}
{{- define "toolgate.validate" -}}
{{- if and (eq .Values.sandbox.backend "kubernetes") (ne .Values.command "serve") -}}
{{- fail "sandbox.backend=kubernetes places the workspace of serve's built-in tools: set command=serve" -}}
{{- end -}}
{{- if and (eq .Values.sandbox.backend "kubernetes") (eq .Values.sandbox.mode "none") -}}
{{- fail "sandbox.backend=kubernetes with sandbox.mode=none: runner pods exist to run commands; choose userns, gvisor or reduced" -}}
{{- end -}}
{{- if and (not .Values.auth) (not .Values.allowRemote) (not .Values.policy.existingConfigMap) -}}
{{- fail "no auth: set auth (the policy's auth block, docs/auth.md), or allowRemote=true when something in front authenticates callers" -}}
{{- end -}}
{{- if and (eq .Values.command "proxy") (not .Values.proxy.existingConfigMap) (not .Values.proxy.config) -}}
{{- fail "command=proxy needs its upstreams: proxy.config (docs/proxy.example.yaml) or proxy.existingConfigMap" -}}
{{- end -}}
{{- end -}}

{{/* The policy file: .Values.policy.values with what the chart's values decide. */}}
{{- define "toolgate.policy" -}}
{{- $p := deepCopy .Values.policy.values -}}
{{- if .Values.stateless -}}
{{- $_ := set $p "http" (merge (dict "stateless" true) (get $p "http" | default dict)) -}}
{{- end -}}
{{- with .Values.auth -}}
{{- $_ := set $p "auth" (deepCopy .) -}}
{{- end -}}
{{- if .Values.redis.url -}}
{{- $r := dict "url" .Values.redis.url -}}
{{- if .Values.redis.passwordSecret.name -}}{{- $_ := set $r "password_env" "TOOLGATE_REDIS_PASSWORD" -}}{{- end -}}
{{- with .Values.redis.prefix -}}{{- $_ := set $r "prefix" . -}}{{- end -}}
{{- with .Values.redis.onError -}}{{- $_ := set $r "on_error" . -}}{{- end -}}
{{- $state := get $p "state" | default dict -}}
{{- $_ := set $state "redis" $r -}}
{{- $_ := set $p "state" $state -}}
{{- end -}}
{{- $s := get $p "sandbox" | default dict -}}
{{- if eq .Values.sandbox.mode "none" -}}
{{- $_ := set $s "commands" false -}}
{{- else -}}
{{- $_ := set $s "require" (ternary "full" "reduced" (eq .Values.sandbox.mode "userns")) -}}
{{- end -}}
{{- if eq .Values.sandbox.backend "kubernetes" -}}
{{- $k := .Values.sandbox.kubernetes -}}
{{- $_ := set $s "backend" "kubernetes" -}}
{{- $_ := set $s "workspace" $k.workspace -}}
{{- $_ := set $s "kubernetes" (dict "namespace" $k.namespace "template" (include "toolgate.sandboxTemplateName" .) "image" (include "toolgate.image" (list . .Values.image.runnerName)) "idle" $k.idle "max" $k.max "secret_env" "TOOLGATE_RUNNER_SECRET") -}}
{{- end -}}
{{- $_ := set $p "sandbox" $s -}}
{{- toYaml $p -}}
{{- end -}}

{{/*
The pod's security settings for the sandbox.mode where commands run.
Argument: (list $ runsCommands). A pod that runs no command (proxy, or
the gateway of backend kubernetes) gets the restricted defaults whatever
the mode.
*/}}
{{- define "toolgate.podSecurity" -}}
{{- $ := index . 0 -}}
{{- $mode := ternary $.Values.sandbox.mode "reduced" (index . 1) -}}
{{- if eq $mode "userns" }}
hostUsers: false
{{- end }}
{{- if eq $mode "gvisor" }}
runtimeClassName: {{ $.Values.sandbox.gvisor.runtimeClassName }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile:
    {{- if eq $mode "userns" }}
    type: Localhost
    localhostProfile: {{ $.Values.sandbox.userns.seccompProfile }}
    {{- else }}
    type: RuntimeDefault
    {{- end }}
{{- end -}}

{{/* The container's security settings. Argument: (list $ runsCommands). */}}
{{- define "toolgate.containerSecurity" -}}
{{- $ := index . 0 -}}
{{- $mode := ternary $.Values.sandbox.mode "reduced" (index . 1) -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
  {{- if eq $mode "userns" }}
  procMount: Unmasked
  appArmorProfile:
    {{- toYaml $.Values.sandbox.userns.appArmorProfile | nindent 4 }}
  {{- end }}
{{- end -}}
