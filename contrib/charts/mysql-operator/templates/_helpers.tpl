{{/* The release's full name, used for every object's name. */}}
{{- define "mysql-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mysql-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The selector labels as a label selector string (k=v,k=v), for flags. */}}
{{- define "mysql-operator.selector" -}}
app.kubernetes.io/name={{ .Chart.Name }},app.kubernetes.io/instance={{ .Release.Name }}
{{- end -}}

{{- define "mysql-operator.labels" -}}
{{ include "mysql-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mysql-operator.serviceAccountName" -}}
{{- default (include "mysql-operator.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The operator's permissions: exactly the verbs its controllers use, no wildcards. */}}
{{- define "mysql-operator.rules" -}}
- apiGroups: ["mysqlop.io"]
  resources: [mysqlclusters, mysqlbackups, mysqlbackupschedules, mysqlrestores, mysqlusers, mysqldatabases]
  verbs: [get, list, watch, update, patch]
# Schedules create and prune backups; a cluster's spec.bootstrap becomes a restore.
- apiGroups: ["mysqlop.io"]
  resources: [mysqlbackups]
  verbs: [create, delete]
- apiGroups: ["mysqlop.io"]
  resources: [mysqlrestores]
  verbs: [create]
# A verification restore creates its scratch clusters, then deletes them and their volumes.
- apiGroups: ["mysqlop.io"]
  resources: [mysqlclusters]
  verbs: [create, delete]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [deletecollection]
- apiGroups: ["mysqlop.io"]
  resources: [mysqlclusters/status, mysqlbackups/status, mysqlbackupschedules/status, mysqlrestores/status, mysqlusers/status, mysqldatabases/status]
  verbs: [get, update, patch]
# Children of clusters; also the Secrets MySQLUsers reference (each watched by name).
- apiGroups: [""]
  resources: [secrets, configmaps, services]
  verbs: [get, list, watch, create, update, patch]
# Role labels, in-place agent updates and member restarts.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, update, patch, delete]
# The end of a crash-looping server's log: does InnoDB report corrupt data (docs/clustering.md)?
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, watch, create, update, patch]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch, create, update, patch]
# spec.tls.certManager: the Certificate cert-manager issues the servers' certificate from.
- apiGroups: [cert-manager.io]
  resources: [certificates]
  verbs: [get, create, update]
{{- if .Values.networkPolicy.enabled }}
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch, create, update, patch]
{{- end }}
{{- end -}}
