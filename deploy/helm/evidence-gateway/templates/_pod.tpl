{{/* Variables the chart sets itself; `env` may not name them. */}}
{{- define "eg.chartVariables" -}}
WORKERS LOG_LEVEL HOST PORT HARNESS_PORT DATA_DIR AUTH_ISSUER SVC_HARNESS_AUTH_ENABLED IDP_ISSUER IDP_JWKS_URL IDP_RS256_AUDIENCE HARNESS_TENANT_ASSERTION_SECRET FRONTDOOR_HS256_SECRET HARNESS_LLM_API_KEY METRICS_TOKEN AUTH_CLIENTS_FILE ORGS_FILE BUS STORAGE KAFKA_BROKERS KAFKA_TLS KAFKA_SASL_MECHANISM KAFKA_USERNAME KAFKA_PASSWORD KAFKA_TOPIC_PARTITIONS S3_ENDPOINT S3_REGION S3_BUCKET S3_FORCE_PATH_STYLE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY HARNESS_PEER_PORT CLUSTER_ADVERTISED_HOST
{{- end -}}

{{- define "eg.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .name }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{- define "eg.env" -}}
{{- $cluster := include "eg.cluster" . -}}
{{- $secret := .Values.existingSecret | required "existingSecret: name the Secret holding HARNESS_TENANT_ASSERTION_SECRET (docs/deploy.md)" -}}
{{- $workers := .Values.workers -}}
{{- if not (and (or (kindIs "float64" $workers) (kindIs "int64" $workers) (kindIs "int" $workers)) (ge (int $workers) 1) (eq (float64 $workers) (float64 (int $workers)))) -}}
{{- fail "workers must be an integer of at least 1 (not auto: it would count the node's cores, not the pod's)" -}}
{{- end -}}
- name: WORKERS
  value: {{ .Values.workers | int | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: HOST
  value: 0.0.0.0
- name: PORT
  value: {{ .Values.ports.http | quote }}
- name: HARNESS_PORT
  value: {{ .Values.ports.harness | quote }}
- name: DATA_DIR
  value: /data
- name: AUTH_ISSUER
  value: {{ .Values.publicUrl | required "publicUrl: the address clients use" | quote }}
- name: SVC_HARNESS_AUTH_ENABLED
  value: {{ .Values.harnessAuth.enabled | quote }}
{{- if .Values.harnessAuth.enabled }}
- name: IDP_ISSUER
  value: {{ .Values.publicUrl | quote }}
- name: IDP_JWKS_URL
  value: {{ printf "http://127.0.0.1:%d/.well-known/jwks.json" (int .Values.ports.http) | quote }}
- name: IDP_RS256_AUDIENCE
  value: {{ .Values.harnessAuth.audience | required "harnessAuth.audience" | quote }}
{{- end }}
{{ include "eg.secretEnv" (dict "name" "HARNESS_TENANT_ASSERTION_SECRET" "secret" $secret) }}
{{ include "eg.secretEnv" (dict "name" "FRONTDOOR_HS256_SECRET" "secret" $secret "optional" true) }}
{{ include "eg.secretEnv" (dict "name" "HARNESS_LLM_API_KEY" "secret" $secret "optional" true) }}
{{ include "eg.secretEnv" (dict "name" "METRICS_TOKEN" "secret" $secret "optional" true) }}
{{- if .Values.clientsFile.secretName }}
- name: AUTH_CLIENTS_FILE
  value: /etc/evidence-gateway/clients/{{ .Values.clientsFile.key }}
{{- end }}
{{- if .Values.orgsFile.configMapName }}
- name: ORGS_FILE
  value: /etc/evidence-gateway/orgs/{{ .Values.orgsFile.key }}
{{- end }}
{{- if $cluster }}
- name: BUS
  value: kafka
- name: KAFKA_BROKERS
  value: {{ required "kafka.brokers: the cluster profile needs Kafka" (join "," .Values.kafka.brokers) | quote }}
- name: KAFKA_TLS
  value: {{ .Values.kafka.tls | quote }}
{{- if .Values.kafka.saslMechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ .Values.kafka.saslMechanism | quote }}
{{ include "eg.secretEnv" (dict "name" "KAFKA_USERNAME" "secret" $secret) }}
{{ include "eg.secretEnv" (dict "name" "KAFKA_PASSWORD" "secret" $secret) }}
{{- end }}
- name: KAFKA_TOPIC_PARTITIONS
  value: {{ .Values.kafka.topicPartitions | quote }}
- name: STORAGE
  value: s3
{{- if .Values.s3.endpoint }}
- name: S3_ENDPOINT
  value: {{ .Values.s3.endpoint | quote }}
{{- end }}
- name: S3_REGION
  value: {{ .Values.s3.region | quote }}
- name: S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
- name: S3_FORCE_PATH_STYLE
  value: {{ .Values.s3.forcePathStyle | quote }}
{{- if .Values.s3.credentialsFromSecret }}
{{ include "eg.secretEnv" (dict "name" "AWS_ACCESS_KEY_ID" "secret" $secret) }}
{{ include "eg.secretEnv" (dict "name" "AWS_SECRET_ACCESS_KEY" "secret" $secret) }}
{{- end }}
- name: HARNESS_PEER_PORT
  value: {{ .Values.ports.peer | quote }}
- name: CLUSTER_ADVERTISED_HOST
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- else }}
- name: BUS
  value: local
- name: STORAGE
  value: fs
{{- end }}
{{- $set := splitList " " (include "eg.chartVariables" .) }}
{{- range $name, $value := .Values.env }}
{{- if has $name $set }}
{{- fail (printf "env.%s: the chart sets %s itself (values.yaml says from which value)" $name $name) }}
{{- end }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{- define "eg.podTemplate" -}}
{{- $cluster := include "eg.cluster" . -}}
metadata:
  labels:
    {{- include "eg.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "eg.serviceAccountName" . }}
  # The gateway never calls the Kubernetes API.
  automountServiceAccountToken: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  securityContext:
    runAsNonRoot: true
    # The image's `node` user.
    runAsUser: 1000
    runAsGroup: 1000
    fsGroup: 1000
    fsGroupChangePolicy: OnRootMismatch
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: gateway
      image: {{ include "eg.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["start"]
      env:
        {{- include "eg.env" . | nindent 8 }}
      ports:
        - name: http
          containerPort: {{ .Values.ports.http }}
        - name: harness
          containerPort: {{ .Values.ports.harness }}
        {{- if $cluster }}
        - name: peer
          containerPort: {{ .Values.ports.peer }}
        {{- end }}
      startupProbe:
        httpGet:
          path: /health
          port: http
        {{- toYaml .Values.probes.startup | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /health
          port: http
        {{- toYaml .Values.probes.liveness | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /health/ready
          port: http
        {{- toYaml .Values.probes.readiness | nindent 8 }}
      lifecycle:
        preStop:
          exec:
            command: ["/bin/sleep", {{ .Values.preStopSleepSeconds | quote }}]
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
      volumeMounts:
        - name: data
          mountPath: /data
        - name: tmp
          mountPath: /tmp
        {{- if .Values.clientsFile.secretName }}
        - name: clients
          mountPath: /etc/evidence-gateway/clients
          readOnly: true
        {{- end }}
        {{- if .Values.orgsFile.configMapName }}
        - name: orgs
          mountPath: /etc/evidence-gateway/orgs
          readOnly: true
        {{- end }}
  volumes:
    {{- if $cluster }}
    - name: data
      emptyDir:
        sizeLimit: {{ .Values.cache.sizeLimit }}
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if .Values.clientsFile.secretName }}
    - name: clients
      secret:
        secretName: {{ .Values.clientsFile.secretName }}
        items:
          - key: {{ .Values.clientsFile.key }}
            path: {{ .Values.clientsFile.key }}
    {{- end }}
    {{- if .Values.orgsFile.configMapName }}
    - name: orgs
      configMap:
        name: {{ .Values.orgsFile.configMapName }}
        items:
          - key: {{ .Values.orgsFile.key }}
            path: {{ .Values.orgsFile.key }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml .Values.topologySpreadConstraints | nindent 4 }}
  {{- else if $cluster }}
  topologySpreadConstraints:
    {{- range list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
    - maxSkew: 1
      topologyKey: {{ . }}
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "eg.selectorLabels" $ | nindent 10 }}
    {{- end }}
  {{- end }}
{{- end -}}
