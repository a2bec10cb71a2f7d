{{/*
Names. The CronJob name is limited to 52 characters (its Jobs add a suffix).
*/}}
{{- define "gpuledger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "gpuledger.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpuledger.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gpuledger.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gpuledger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpuledger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpuledger.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpuledger.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the existing ServiceAccount to use (serviceAccount.create is false)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gpuledger.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Paths inside the pod. The image ships the binary in /usr/local/bin and the
queries in /usr/share/gpuledger/queries (examples/Dockerfile).
*/}}
{{- define "gpuledger.configDir" -}}/etc/gpuledger{{- end }}
{{- define "gpuledger.dataDir" -}}/var/lib/gpuledger{{- end }}
{{- define "gpuledger.imageQueries" -}}/usr/share/gpuledger/queries{{- end }}
{{- define "gpuledger.editedQueries" -}}/etc/gpuledger-queries{{- end }}
{{- define "gpuledger.mergedQueries" -}}/var/run/gpuledger/queries{{- end }}
{{- define "gpuledger.pricesDir" -}}/etc/gpuledger-prices{{- end }}
{{- define "gpuledger.secretsDir" -}}/etc/gpuledger-secrets{{- end }}
{{- define "gpuledger.caDir" -}}/etc/gpuledger-ca{{- end }}
{{- define "gpuledger.saDir" -}}/var/run/secrets/kubernetes.io/serviceaccount{{- end }}
{{- define "gpuledger.awsTokenDir" -}}/var/run/secrets/gpuledger/aws-web-identity{{- end }}
{{- define "gpuledger.azureTokenDir" -}}/var/run/secrets/gpuledger/azure-workload-identity{{- end }}
{{- define "gpuledger.azureAudience" -}}api://AzureADTokenExchange{{- end }}

{{- define "gpuledger.queriesEdited" -}}
{{- if or .Values.queries.files .Values.queries.existingConfigMap }}true{{ end }}
{{- end }}

{{- define "gpuledger.queriesConfigMap" -}}
{{- default (printf "%s-queries" (include "gpuledger.fullname" .)) .Values.queries.existingConfigMap }}
{{- end }}

{{/*
The Prometheus settings in effect, as a JSON list: the top-level one (when a
cluster reads it) and, for every cluster with its own `prometheus`, the
top-level settings with the cluster's merged over them. Each entry carries
`_where` (its path in the values) for error messages.
*/}}
{{- define "gpuledger.promValues" -}}
{{- $useTop := true }}
{{- if .Values.clusters }}
{{- $useTop = false }}
{{- range .Values.clusters }}
{{- if not .prometheus }}{{ $useTop = true }}{{ end }}
{{- end }}
{{- end }}
{{- $out := list }}
{{- if $useTop }}
{{- $out = append $out (merge (dict "_where" "prometheus") (deepCopy .Values.prometheus)) }}
{{- end }}
{{- range $i, $c := .Values.clusters }}
{{- if $c.prometheus }}
{{- $p := mergeOverwrite (deepCopy $.Values.prometheus) (deepCopy $c.prometheus) }}
{{- $out = append $out (merge (dict "_where" (printf "clusters[%d].prometheus" $i) "_cluster" $i) $p) }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* {"secret name": ["key", ...]} of every Secret a Prometheus block reads. */}}
{{- define "gpuledger.secretKeys" -}}
{{- $m := dict }}
{{- range (include "gpuledger.promValues" . | fromJsonArray) }}
{{- if eq .auth "basicAuth" }}
{{- $s := required (printf "%s.basicAuth.existingSecret: the Secret holding user:password (auth is basicAuth)" ._where) .basicAuth.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .basicAuth.key | uniq | sortAlpha) }}
{{- end }}
{{- if eq .ca.source "secret" }}
{{- $s := required (printf "%s.ca.name: the Secret holding the CA (ca.source is secret)" ._where) .ca.name }}
{{- $_ := set $m $s (append (get $m $s | default list) .ca.key | uniq | sortAlpha) }}
{{- end }}
{{- if .clientCert.existingSecret }}
{{- $s := .clientCert.existingSecret }}
{{- $_ := set $m $s (concat (get $m $s | default list) (list .clientCert.certKey .clientCert.keyKey) | uniq | sortAlpha) }}
{{- end }}
{{- if and (eq .auth "awsSigv4") (eq (include "gpuledger.awsSource" .awsSigv4) "files") }}
{{- $k := .awsSigv4.accessKeys }}
{{- $s := $k.existingSecret }}
{{- $_ := set $m $s (concat (get $m $s | default list) (compact (list $k.accessKeyIdKey $k.secretAccessKeyKey ($k.sessionTokenKey | default ""))) | uniq | sortAlpha) }}
{{- end }}
{{- if and (eq .auth "awsSigv4") .awsSigv4.sharedCredentials.existingSecret }}
{{- $s := .awsSigv4.sharedCredentials.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .awsSigv4.sharedCredentials.key | uniq | sortAlpha) }}
{{- end }}
{{- if and (eq .auth "azure") .azure.clientSecret.existingSecret }}
{{- $s := .azure.clientSecret.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .azure.clientSecret.key | uniq | sortAlpha) }}
{{- end }}
{{- if eq .auth "grafanaCloud" }}
{{- $s := required (printf "%s.grafanaCloud.existingSecret: the Secret holding the access-policy token (auth is grafanaCloud)" ._where) .grafanaCloud.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .grafanaCloud.key | uniq | sortAlpha) }}
{{- end }}
{{- end }}
{{- if include "gpuledger.s3" . }}
{{- with .Values.objectStorage }}
{{- if and .accessKeys.existingSecret (eq (include "gpuledger.awsSource" .) "files") }}
{{- $k := .accessKeys }}
{{- $s := $k.existingSecret }}
{{- $_ := set $m $s (concat (get $m $s | default list) (compact (list $k.accessKeyIdKey $k.secretAccessKeyKey ($k.sessionTokenKey | default ""))) | uniq | sortAlpha) }}
{{- end }}
{{- if .sharedCredentials.existingSecret }}
{{- $s := .sharedCredentials.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .sharedCredentials.key | uniq | sortAlpha) }}
{{- end }}
{{- if .ca.existingSecret }}
{{- $s := .ca.existingSecret }}
{{- $_ := set $m $s (append (get $m $s | default list) .ca.key | uniq | sortAlpha) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $m }}
{{- end }}

{{/* "true" when config.outputs.s3 is set (uploads configured). */}}
{{- define "gpuledger.s3" -}}
{{- if (.Values.config.outputs | default dict).s3 }}true{{ end }}
{{- end }}

{{/* The CA source in effect for one entry of gpuledger.promValues ("auto"
resolved: the cluster CA next to the token for in-cluster Prometheus, the
image's CAs for the managed services with public certificates). */}}
{{- define "gpuledger.caSource" -}}
{{- if ne .ca.source "auto" }}{{ .ca.source }}
{{- else if has .auth (list "serviceAccountToken" "basicAuth" "none") }}serviceAccount
{{- else }}system{{ end }}
{{- end }}

{{/* The credentials source of prometheus.awsSigv4 or objectStorage (VALUES)
with "auto" resolved: roleArn -> webIdentity, accessKeys -> files (the
Secret's keys mounted as files for this block only), sharedCredentials ->
profile; else auto (the engine's choice). */}}
{{- define "gpuledger.awsSource" -}}
{{- $src := .credentials }}
{{- if eq $src "auto" }}
{{- if .roleArn }}{{ $src = "webIdentity" }}
{{- else if .accessKeys.existingSecret }}{{ $src = "files" }}
{{- else if .sharedCredentials.existingSecret }}{{ $src = "profile" }}
{{- end }}
{{- end }}
{{- $src }}
{{- end }}

{{/*
The aws_sigv4 credential keys of gpuledger.json from prometheus.awsSigv4 or
objectStorage: dict "v" VALUES "where" PATH "secretsDir" DIR.
*/}}
{{- define "gpuledger.awsCredentials" -}}
{{- $v := .v }}
{{- $a := dict }}
{{- $src := include "gpuledger.awsSource" $v }}
{{- $_ := set $a "credentials" (get (dict "auto" "auto" "webIdentity" "web_identity" "podIdentity" "pod_identity" "env" "env" "profile" "profile" "files" "files") $src) }}
{{- if eq $src "webIdentity" }}
{{- if $v.roleArn }}
{{- $_ := set $a "role_arn" $v.roleArn }}
{{- $_ := set $a "web_identity_token_file" (printf "%s/token" .tokenDir) }}
{{- end }}
{{- with $v.roleSessionName }}{{ $_ := set $a "role_session_name" . }}{{ end }}
{{- with $v.stsEndpoint }}{{ $_ := set $a "sts_endpoint" . }}{{ end }}
{{- else if eq $src "env" }}
{{- $_ := required (printf "%s.accessKeys.existingSecret: the Secret holding the access keys (credentials is env)" .where) $v.accessKeys.existingSecret }}
{{- else if eq $src "files" }}
{{- with $v.accessKeys }}
{{- $dir := printf "%s/%s" $.secretsDir (required (printf "%s.accessKeys.existingSecret: the Secret holding the access keys (credentials is files)" $.where) .existingSecret) }}
{{- $_ := set $a "access_key_id_file" (printf "%s/%s" $dir .accessKeyIdKey) }}
{{- $_ := set $a "secret_access_key_file" (printf "%s/%s" $dir .secretAccessKeyKey) }}
{{- with .sessionTokenKey }}{{ $_ := set $a "session_token_file" (printf "%s/%s" $dir .) }}{{ end }}
{{- end }}
{{- else if eq $src "profile" }}
{{- with $v.sharedCredentials }}
{{- $_ := set $a "credentials_file" (printf "%s/%s/%s" $.secretsDir (required (printf "%s.sharedCredentials.existingSecret: the Secret holding the shared credentials file (credentials is profile)" $.where) .existingSecret) .key) }}
{{- with .profile }}{{ $_ := set $a "profile" . }}{{ end }}
{{- end }}
{{- end }}
{{- toJson $a }}
{{- end }}

{{/* [{"where", "secret", "idKey", "secretKey"}] of the access keys passed as
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (credentials env only: one pod
environment, one pair, seen by every SigV4 block whose credentials are
auto; "files", the default for accessKeys, keeps the keys to their block). */}}
{{- define "gpuledger.awsAccessKeys" -}}
{{- $out := list }}
{{- range (include "gpuledger.promValues" . | fromJsonArray) }}
{{- if and (eq .auth "awsSigv4") .awsSigv4.accessKeys.existingSecret (eq .awsSigv4.credentials "env") }}
{{- $out = append $out (dict "where" (printf "%s.awsSigv4" ._where) "secret" .awsSigv4.accessKeys.existingSecret "idKey" .awsSigv4.accessKeys.accessKeyIdKey "secretKey" .awsSigv4.accessKeys.secretAccessKeyKey) }}
{{- end }}
{{- end }}
{{- if include "gpuledger.s3" . }}
{{- with .Values.objectStorage }}
{{- if and .accessKeys.existingSecret (eq .credentials "env") }}
{{- $out = append $out (dict "where" "objectStorage" "secret" .accessKeys.existingSecret "idKey" .accessKeys.accessKeyIdKey "secretKey" .accessKeys.secretAccessKeyKey) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $out }}
{{- $f := index $out 0 }}
{{- if or (ne .secret $f.secret) (ne .idKey $f.idKey) (ne .secretKey $f.secretKey) }}
{{- fail (printf "%s.accessKeys and %s.accessKeys differ: the pod has one AWS_ACCESS_KEY_ID; use sharedCredentials (a file per block) for the second" $f.where .where) }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* The projected service-account tokens the pod needs, as JSON
{"aws": {"audience", "path"}, "azure": {...}}; and the role ARN, Google
service account and Azure client for the ServiceAccount's annotations. */}}
{{- define "gpuledger.identity" -}}
{{- $tok := dict }}
{{- $ann := dict }}
{{- range (include "gpuledger.promValues" . | fromJsonArray) }}
{{- if eq .auth "awsSigv4" }}
{{- if and .awsSigv4.roleArn (has .awsSigv4.credentials (list "auto" "webIdentity")) }}
{{- if not (hasKey $tok "aws") }}{{ $_ := set $tok "aws" (dict "audience" .awsSigv4.audience "dir" (include "gpuledger.awsTokenDir" $)) }}{{ end }}
{{- if not (hasKey $ann "eks.amazonaws.com/role-arn") }}{{ $_ := set $ann "eks.amazonaws.com/role-arn" .awsSigv4.roleArn }}{{ end }}
{{- end }}
{{- else if eq .auth "gcp" }}
{{- with .gcp.googleServiceAccount }}
{{- if not (hasKey $ann "iam.gke.io/gcp-service-account") }}{{ $_ := set $ann "iam.gke.io/gcp-service-account" . }}{{ end }}
{{- end }}
{{- else if eq .auth "azure" }}
{{- if not .azure.clientSecret.existingSecret }}
{{- $_ := set $tok "azure" (dict "audience" (include "gpuledger.azureAudience" $) "dir" (include "gpuledger.azureTokenDir" $)) }}
{{- if not (hasKey $ann "azure.workload.identity/client-id") }}
{{- $_ := set $ann "azure.workload.identity/client-id" .azure.clientId }}
{{- $_ := set $ann "azure.workload.identity/tenant-id" .azure.tenantId }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if include "gpuledger.s3" . }}
{{- with .Values.objectStorage }}
{{- if and .roleArn (has .credentials (list "auto" "webIdentity")) }}
{{- if not (hasKey $tok "aws") }}{{ $_ := set $tok "aws" (dict "audience" .audience "dir" (include "gpuledger.awsTokenDir" $)) }}{{ end }}
{{- if not (hasKey $ann "eks.amazonaws.com/role-arn") }}{{ $_ := set $ann "eks.amazonaws.com/role-arn" .roleArn }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "tokens" $tok "annotations" $ann) }}
{{- end }}

{{/* {"ConfigMap name": ["key", ...]} of every CA bundle read from a ConfigMap. */}}
{{- define "gpuledger.caConfigMaps" -}}
{{- $m := dict }}
{{- range (include "gpuledger.promValues" . | fromJsonArray) }}
{{- if eq .ca.source "configMap" }}
{{- $s := required (printf "%s.ca.name: the ConfigMap holding the CA (ca.source is configMap)" ._where) .ca.name }}
{{- $_ := set $m $s (append (get $m $s | default list) .ca.key | uniq | sortAlpha) }}
{{- end }}
{{- end }}
{{- toJson $m }}
{{- end }}

{{/* "true" when a Prometheus block reads the service account token or CA. */}}
{{- define "gpuledger.needsToken" -}}
{{- range (include "gpuledger.promValues" . | fromJsonArray) }}
{{- if or (eq .auth "serviceAccountToken") (eq (include "gpuledger.caSource" .) "serviceAccount") }}true{{ end }}
{{- end }}
{{- end }}

{{/*
One Prometheus block of gpuledger.json (engine keys) from one entry of
gpuledger.promValues.
*/}}
{{- define "gpuledger.promConfig" -}}
{{- $p := dict "url" (required (printf "%s.url is required: the base URL of the Prometheus HTTP API, e.g. --set %s.url=http://prometheus-operated.monitoring.svc:9090" ._where ._where) .url) }}
{{- if eq .auth "serviceAccountToken" }}
{{- $_ := set $p "bearer_token_file" (printf "%s/token" (include "gpuledger.saDir" .)) }}
{{- else if eq .auth "basicAuth" }}
{{- $_ := set $p "basic_auth_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .basicAuth.existingSecret .basicAuth.key) }}
{{- else if eq .auth "awsSigv4" }}
{{- $a := dict "type" "aws_sigv4" "region" (required (printf "%s.awsSigv4.region: the workspace's region (auth is awsSigv4)" ._where) .awsSigv4.region) }}
{{- with .awsSigv4.service }}{{ $_ := set $a "service" . }}{{ end }}
{{- $a = merge $a (include "gpuledger.awsCredentials" (dict "v" .awsSigv4 "where" (printf "%s.awsSigv4" ._where) "secretsDir" (include "gpuledger.secretsDir" .) "tokenDir" (include "gpuledger.awsTokenDir" .)) | fromJson) }}
{{- $_ := set $p "auth" $a }}
{{- else if eq .auth "gcp" }}
{{- $a := dict "type" "gcp" }}
{{- with .gcp.metadataUrl }}{{ $_ := set $a "metadata_url" . }}{{ end }}
{{- $_ := set $p "auth" $a }}
{{- else if eq .auth "azure" }}
{{- $a := dict "type" "azure" "tenant_id" (required (printf "%s.azure.tenantId: the Entra tenant (auth is azure)" ._where) .azure.tenantId) "client_id" (required (printf "%s.azure.clientId: the application or managed identity (auth is azure)" ._where) .azure.clientId) }}
{{- if .azure.clientSecret.existingSecret }}
{{- $_ := set $a "client_secret_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .azure.clientSecret.existingSecret .azure.clientSecret.key) }}
{{- else }}
{{- $_ := set $a "federated_token_file" (printf "%s/token" (include "gpuledger.azureTokenDir" .)) }}
{{- end }}
{{- with .azure.authority }}{{ $_ := set $a "authority" . }}{{ end }}
{{- with .azure.scope }}{{ $_ := set $a "scope" . }}{{ end }}
{{- $_ := set $p "auth" $a }}
{{- else if eq .auth "grafanaCloud" }}
{{- $_ := set $p "auth" (dict "type" "basic" "username" (required (printf "%s.grafanaCloud.username: the stack's Prometheus instance ID (auth is grafanaCloud)" ._where) (toString .grafanaCloud.username)) "password_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .grafanaCloud.existingSecret .grafanaCloud.key)) }}
{{- end }}
{{- $ca := include "gpuledger.caSource" . }}
{{- if eq $ca "serviceAccount" }}
{{- $_ := set $p "ca_file" (printf "%s/%s" (include "gpuledger.saDir" .) .ca.key) }}
{{- else if eq $ca "secret" }}
{{- $_ := set $p "ca_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .ca.name .ca.key) }}
{{- else if eq $ca "configMap" }}
{{- $_ := set $p "ca_file" (printf "%s/%s/%s" (include "gpuledger.caDir" .) .ca.name .ca.key) }}
{{- end }}
{{- if .clientCert.existingSecret }}
{{- $_ := set $p "client_cert_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .clientCert.existingSecret .clientCert.certKey) }}
{{- $_ := set $p "client_key_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" .) .clientCert.existingSecret .clientCert.keyKey) }}
{{- end }}
{{- if .headers }}
{{- $_ := set $p "headers" .headers }}
{{- end }}
{{- $_ := set $p "timeout_seconds" (int .timeoutSeconds) }}
{{- $_ := set $p "retries" (int .retries) }}
{{- $_ := set $p "max_in_flight" (int .maxInFlight) }}
{{- if .maxResponseBytes }}
{{- $_ := set $p "max_response_bytes" (int64 .maxResponseBytes) }}
{{- end }}
{{- if .requestDeadlineSeconds }}
{{- $_ := set $p "request_deadline_seconds" (int .requestDeadlineSeconds) }}
{{- end }}
{{- if .acceptWarnings }}
{{- $_ := set $p "accept_warnings" .acceptWarnings }}
{{- end }}
{{- if .compression }}
{{- $_ := set $p "compression" .compression }}
{{- end }}
{{- toJson $p }}
{{- end }}

{{/* gpuledger.json as a dict, rendered by configmap.yaml. */}}
{{- define "gpuledger.config" -}}
{{- $cfg := dict }}
{{- $proms := include "gpuledger.promValues" . | fromJsonArray }}
{{- range $proms }}
{{- if eq ._where "prometheus" }}
{{- $_ := set $cfg "prometheus" (include "gpuledger.promConfig" . | fromJson) }}
{{- end }}
{{- end }}
{{- if .Values.clusters }}
{{- $_ := set $cfg "cluster" (dict "label" .Values.cluster.label) }}
{{- $cls := list }}
{{- range $i, $c := .Values.clusters }}
{{- $cl := dict "name" $c.name }}
{{- if $c.selector }}{{ $_ := set $cl "selector" $c.selector }}{{ end }}
{{- range $proms }}
{{- if and (hasKey . "_cluster") (eq (int ._cluster) $i) }}
{{- $_ := set $cl "prometheus" (include "gpuledger.promConfig" . | fromJson) }}
{{- end }}
{{- end }}
{{- $cls = append $cls $cl }}
{{- end }}
{{- $_ := set $cfg "clusters" $cls }}
{{- else }}
{{- $_ := set $cfg "cluster" (dict "name" .Values.cluster.name "label" .Values.cluster.label) }}
{{- end }}
{{- $qd := include "gpuledger.imageQueries" . }}
{{- if include "gpuledger.queriesEdited" . }}{{ $qd = include "gpuledger.mergedQueries" . }}{{ end }}
{{- $_ := set $cfg "collection" (merge (dict "queries_dir" $qd) (deepCopy (.Values.config.collection | default dict))) }}
{{- $_ := set $cfg "run" (merge (dict "out_dir" (printf "%s/out" (include "gpuledger.dataDir" .))) (deepCopy (.Values.config.run | default dict))) }}
{{- range $k := list "memory_source" "teams" "idle_overhead" "allocation" "compute" "billing" "dra" "outputs" "retention" "close" }}
{{- $v := get $.Values.config $k }}
{{- if $v }}{{ $_ := set $cfg $k (deepCopy $v) }}{{ end }}
{{- end }}
{{- if include "gpuledger.s3" . }}
{{- $s3 := $cfg.outputs.s3 }}
{{- $a := include "gpuledger.awsCredentials" (dict "v" .Values.objectStorage "where" "objectStorage" "secretsDir" (include "gpuledger.secretsDir" .) "tokenDir" (include "gpuledger.awsTokenDir" .)) | fromJson }}
{{- if or (ne $a.credentials "auto") (gt (len $a) 1) }}
{{- $_ := set $s3 "auth" (merge (dict "type" "aws_sigv4") ($s3.auth | default dict) $a) }}
{{- end }}
{{- with .Values.objectStorage.ca.existingSecret }}
{{- $_ := set $s3 "ca_file" (printf "%s/%s/%s" (include "gpuledger.secretsDir" $) . $.Values.objectStorage.ca.key) }}
{{- end }}
{{- end }}
{{- if .Values.prices.existingConfigMap }}
{{- $_ := set $cfg "prices" (dict "file" (printf "%s/prices.csv" (include "gpuledger.pricesDir" .))) }}
{{- else }}
{{- $_ := set $cfg "prices" (dict "file" (printf "%s/prices.csv" (include "gpuledger.configDir" .))) }}
{{- end }}
{{- with (.Values.metrics | default dict).pushgateway }}
{{- if .url }}
{{- $_ := set $cfg "metrics" (dict "pushgateway_url" .url "job" (.job | default "gpuledger") "timeout_seconds" (int (.timeoutSeconds | default 30))) }}
{{- end }}
{{- end }}
{{- toPrettyJson $cfg }}
{{- end }}

{{/*
The pod spec shared by the CronJob, the shell pod and the test pod.
dict "ctx" $ "name" CONTAINER "command" LIST "data" BOOL (mount the volume)
"extra" DICT (more pod spec keys)
*/}}
{{- define "gpuledger.podSpec" -}}
{{- $ := .ctx }}
{{- $edited := include "gpuledger.queriesEdited" $ }}
{{- $secrets := include "gpuledger.secretKeys" $ | fromJson }}
{{- $cas := include "gpuledger.caConfigMaps" $ | fromJson }}
{{- $tokens := (include "gpuledger.identity" $ | fromJson).tokens }}
{{- $keys := include "gpuledger.awsAccessKeys" $ | fromJsonArray -}}
serviceAccountName: {{ include "gpuledger.serviceAccountName" $ }}
automountServiceAccountToken: {{ include "gpuledger.needsToken" $ | eq "" | not }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- with $.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $.Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $edited }}
initContainers:
  # The image's queries, then the edited ones over them, into an emptyDir
  # that collection.queries_dir points at.
  - name: queries
    image: {{ include "gpuledger.image" $ }}
    imagePullPolicy: {{ $.Values.image.pullPolicy }}
    command:
      - sh
      - -c
      - 'cp -L "$1"/*.promql "$3"/ && cp -L "$2"/*.promql "$3"/ && ls -l "$3"'
      - copy-queries
      - {{ include "gpuledger.imageQueries" $ }}
      - {{ include "gpuledger.editedQueries" $ }}
      - {{ include "gpuledger.mergedQueries" $ }}
    {{- with $.Values.securityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $.Values.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: edited-queries
        mountPath: {{ include "gpuledger.editedQueries" $ }}
        readOnly: true
      - name: queries
        mountPath: {{ include "gpuledger.mergedQueries" $ }}
      - name: tmp
        mountPath: /tmp
{{- end }}
containers:
  - name: {{ .name }}
    image: {{ include "gpuledger.image" $ }}
    imagePullPolicy: {{ $.Values.image.pullPolicy }}
    command:
      {{- toYaml .command | nindent 6 }}
    {{- if .data }}
    workingDir: {{ include "gpuledger.dataDir" $ }}
    {{- end }}
    env:
      # SQLite's temporary files go to the writable emptyDir.
      - name: TMPDIR
        value: /tmp
      {{- if ne $.Values.logFormat "logfmt" }}
      - name: GPULEDGER_LOG_FORMAT
        value: {{ $.Values.logFormat }}
      {{- end }}
      {{- with (first $keys) }}
      # SigV4 access keys ({{ .where }}.accessKeys), read by the engine's
      # credentials "env"
      - name: AWS_ACCESS_KEY_ID
        valueFrom:
          secretKeyRef:
            name: {{ .secret }}
            key: {{ .idKey }}
      - name: AWS_SECRET_ACCESS_KEY
        valueFrom:
          secretKeyRef:
            name: {{ .secret }}
            key: {{ .secretKey }}
      {{- end }}
      {{- with $.Values.env }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- with $.Values.envFrom }}
    envFrom:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $.Values.securityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $.Values.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: config
        mountPath: {{ include "gpuledger.configDir" $ }}
        readOnly: true
      {{- if $.Values.prices.existingConfigMap }}
      - name: prices
        mountPath: {{ include "gpuledger.pricesDir" $ }}
        readOnly: true
      {{- end }}
      {{- if $edited }}
      - name: queries
        mountPath: {{ include "gpuledger.mergedQueries" $ }}
        readOnly: true
      {{- end }}
      {{- range $i, $name := keys $secrets | sortAlpha }}
      - name: secret-{{ $i }}
        mountPath: {{ include "gpuledger.secretsDir" $ }}/{{ $name }}
        readOnly: true
      {{- end }}
      {{- range $i, $name := keys $cas | sortAlpha }}
      - name: ca-{{ $i }}
        mountPath: {{ include "gpuledger.caDir" $ }}/{{ $name }}
        readOnly: true
      {{- end }}
      {{- range $k := keys $tokens | sortAlpha }}
      - name: {{ $k }}-token
        mountPath: {{ (get $tokens $k).dir }}
        readOnly: true
      {{- end }}
      {{- if .data }}
      - name: data
        mountPath: {{ include "gpuledger.dataDir" $ }}
      {{- end }}
      - name: tmp
        mountPath: /tmp
volumes:
  - name: config
    configMap:
      name: {{ include "gpuledger.fullname" $ }}-config
  {{- with $.Values.prices.existingConfigMap }}
  - name: prices
    configMap:
      name: {{ . }}
      items:
        - key: {{ $.Values.prices.key }}
          path: prices.csv
  {{- end }}
  {{- if $edited }}
  - name: edited-queries
    configMap:
      name: {{ include "gpuledger.queriesConfigMap" $ }}
  - name: queries
    emptyDir:
      sizeLimit: 16Mi
  {{- end }}
  {{- range $i, $name := keys $secrets | sortAlpha }}
  - name: secret-{{ $i }}
    secret:
      secretName: {{ $name }}
      items:
        {{- range get $secrets $name }}
        - key: {{ . }}
          path: {{ . }}
        {{- end }}
  {{- end }}
  {{- range $i, $name := keys $cas | sortAlpha }}
  - name: ca-{{ $i }}
    configMap:
      name: {{ $name }}
      items:
        {{- range get $cas $name }}
        - key: {{ . }}
          path: {{ . }}
        {{- end }}
  {{- end }}
  {{- range $k := keys $tokens | sortAlpha }}
  # {{ if eq $k "aws" }}IRSA web identity (exchanged at STS){{ else }}Entra workload identity (client_assertion){{ end }}:
  # a service-account token for audience {{ (get $tokens $k).audience }}, renewed by the kubelet
  - name: {{ $k }}-token
    projected:
      sources:
        - serviceAccountToken:
            audience: {{ (get $tokens $k).audience }}
            expirationSeconds: 3600
            path: token
  {{- end }}
  {{- if .data }}
  - name: data
    {{- if $.Values.persistence.enabled }}
    persistentVolumeClaim:
      claimName: {{ default (printf "%s-data" (include "gpuledger.fullname" $)) $.Values.persistence.existingClaim }}
    {{- else }}
    emptyDir: {}
    {{- end }}
  {{- end }}
  - name: tmp
    emptyDir:
      sizeLimit: {{ $.Values.tmpSizeLimit }}
{{- end }}

{{/* The engine's command line: gpuledger --config ... --db ... ARGS */}}
{{- define "gpuledger.command" -}}
{{- $ := .ctx }}
{{- $cmd := list "gpuledger" "--config" (printf "%s/gpuledger.json" (include "gpuledger.configDir" $)) "--db" .db }}
{{- toJson (concat $cmd .args) }}
{{- end }}

{{/* Pod labels an identity webhook acts on (AKS workload identity). */}}
{{- define "gpuledger.identityLabels" -}}
{{- if hasKey (include "gpuledger.identity" . | fromJson).tokens "azure" }}
azure.workload.identity/use: "true"
{{- end }}
{{- end }}
