{{- define "companion.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "companion.labels" -}}
app.kubernetes.io/name: rdmatopo
app.kubernetes.io/component: companion
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
