/**
 * Every environment variable the gateway reads, in one table. The ajv schema,
 * the defaults and the configuration tables (docs/configuration.md, README.md)
 * are all derived from (or checked against) this list, so they cannot drift apart.
 */
export type VariableType = 'string' | 'integer' | 'boolean' | 'list' | 'url'

export interface Variable {
  readonly name: string
  readonly type: VariableType
  readonly default?: string | number | boolean | readonly string[]
  readonly enum?: readonly string[]
  readonly minimum?: number
  readonly maximum?: number
  readonly description: string
}

const KiB = 1024
const MiB = 1024 * KiB

export const variables = [
  // Processes and ports
  { name: 'ROLES', type: 'list', default: ['auth', 'ingest', 'frontdoor', 'harness'], enum: ['auth', 'ingest', 'frontdoor', 'harness'], description: 'roles this process runs (comma-separated)' },
  { name: 'WORKERS', type: 'string', default: '1', description: 'server processes on the same ports: an integer ≥ 1, or `auto` (the cores this process may use); above 1 a supervisor starts, restarts and drains them (docs/scaling.md)' },
  { name: 'PORT', type: 'integer', default: 8080, minimum: 0, maximum: 65535, description: 'login, ingest, front door, JWKS, health and metrics' },
  { name: 'HARNESS_PORT', type: 'integer', default: 8081, minimum: 0, maximum: 65535, description: 'harness routes (/runs*, /health, /health/ready)' },
  { name: 'HOST', type: 'string', default: '127.0.0.1', description: 'listen address (0.0.0.0 in the container)' },
  { name: 'DATA_DIR', type: 'string', default: './data', description: 'LMDB environment, filesystem objects, local bus log; made 0700 and its files 0600 whatever the umask (docs/auth.md)' },
  { name: 'LOG_LEVEL', type: 'string', default: 'info', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], description: 'pino level; JSON lines on stdout' },
  { name: 'SHUTDOWN_TIMEOUT_MS', type: 'integer', default: 10000, minimum: 0, description: 'how long SIGTERM waits for in-flight requests' },
  { name: 'HEAP_SEMI_SPACE_MB', type: 'integer', default: 8, minimum: 1, maximum: 64, description: 'cap of V8\'s young generation, per semi-space, in MiB (rounded up to a power of two; V8\'s own default is 16, 64 on Node 24): uploads keep the process under 150 MB at 8. On Node 22 and later V8 takes it from node\'s command line only: npm start, the image and the workers of WORKERS > 1 pass it (docs/evidence.md)' },
  { name: 'METRICS_TOKEN', type: 'string', description: 'bearer token `/metrics` requires (compared in constant time); unset, `/metrics` answers loopback callers only (docs/http.md)' },
  { name: 'UWS_ALLOW_FALLBACK', type: 'boolean', default: false, description: 'start even on the slow uWS Node emulation (never for figures)' },

  // HTTP edge
  { name: 'HTTP_BODY_BUFFER_BYTES', type: 'integer', default: 64 * MiB, minimum: MiB, description: 'memory all JSON bodies being collected may hold together; past it, 503 `overloaded`' },
  { name: 'HTTP_OPEN_BODY_BUFFER_BYTES', type: 'integer', default: 4 * MiB, minimum: 64 * 1024, description: 'memory all body bytes no route\'s check vouched for may hold together (logins, a first piece waiting for its token check), apart from HTTP_BODY_BUFFER_BYTES; past it, 503 `overloaded`' },
  { name: 'HTTP_BODY_MIN_BYTES_PER_S', type: 'integer', default: 1024, minimum: 1, description: 'the slowest a request body may come, measured over 4 s (time the gateway paused the socket not counted); slower or stalled, 408 `request_timeout` and the connection closed' },
  { name: 'HTTP_DRAIN_MAX_BYTES', type: 'integer', default: 64 * MiB, minimum: 0, description: 'body bytes read and discarded after an early answer (401, a replay...) so the client receives it; past it, answer at once and close' },
  { name: 'HTTP_DRAIN_TIMEOUT_MS', type: 'integer', default: 10000, minimum: 1, description: 'longest wait for the rest of a body after an early answer; past it, answer at once and close' },

  // Login
  { name: 'AUTH_CLIENTS_FILE', type: 'string', description: 'JSON array of clients (see docs/auth.md)' },
  { name: 'AUTH_SIGNING_KEY_FILE', type: 'string', description: 'PKCS#8 PEM RSA key to sign with instead of the generated one' },
  { name: 'AUTH_KEY_WRAP_FILE', type: 'string', description: 'file outside DATA_DIR holding a key (at least 32 bytes) that wraps the generated signing keys (AES-256-GCM) before they are stored: DATA_DIR alone then signs nothing (docs/auth.md)' },
  { name: 'AUTH_ISSUER', type: 'string', default: 'http://127.0.0.1:8080/', description: '`iss` of issued tokens' },
  { name: 'AUTH_AUDIENCE', type: 'list', default: ['evidence-gateway'], description: 'audiences the ingest routes accept' },
  { name: 'AUTH_TOKEN_TTL_S', type: 'integer', default: 86400, minimum: 60, description: 'token validity' },
  { name: 'AUTH_KEY_ROTATION_S', type: 'integer', default: 2592000, minimum: 60, description: 'age at which the signing key is replaced' },
  { name: 'AUTH_KEY_PUBLISH_LEAD_S', type: 'integer', default: 900, minimum: 0, description: 'how long a new signing key is in the JWKS before it signs: longer than any verifier caches the set (jose\'s remote set, as the harness gate uses: 10 minutes); below AUTH_KEY_ROTATION_S' },
  { name: 'AUTH_MAX_FAILURES', type: 'integer', default: 10, minimum: 1, description: 'failed logins of one client_id from one address before 429' },
  { name: 'AUTH_ADDRESS_MAX_FAILURES', type: 'integer', default: 100, minimum: 1, description: 'failed logins from one address, any client_id, before 429' },
  { name: 'AUTH_PREFIX_MAX_FAILURES', type: 'integer', default: 300, minimum: 1, description: 'failed logins from one network (IPv4 /24, IPv6 /64), any address, before 429' },
  { name: 'AUTH_FAILURE_WINDOW_S', type: 'integer', default: 300, minimum: 1, description: 'window of the failed-login counts' },
  { name: 'AUTH_CLIENT_ADDRESS_HEADER', type: 'string', description: 'header a trusted proxy sets to the client address (last entry used), for the failed-login counts; only when nothing else can reach the gateway' },
  { name: 'AUTH_HASH_THREADS', type: 'integer', default: 1, minimum: 1, maximum: 1023, description: 'threads of libuv\'s pool that may check client secrets (scrypt) at once; below UV_THREADPOOL_SIZE (4)' },
  { name: 'AUTH_HASH_QUEUE', type: 'integer', default: 64, minimum: 0, description: 'logins that may wait for a hash thread, in each of three lanes (clients known from their network first, then networks without a recent failure, then the rest); past the lanes a login may use, 503 with Retry-After' },
  { name: 'AUTH_SECRET_CACHE_S', type: 'integer', default: 300, minimum: 0, description: 'how long a verified client secret is trusted without hashing again (0: never)' },

  // Bus
  { name: 'BUS', type: 'string', default: 'local', enum: ['local', 'kafka'], description: '`local` (durable LMDB log) or `kafka`' },
  { name: 'KAFKA_BROKERS', type: 'list', description: 'host:port list; Redpanda and Apache Kafka alike' },
  { name: 'KAFKA_CLIENT_ID', type: 'string', default: 'evidence-gateway', description: 'Kafka client id' },
  { name: 'KAFKA_SASL_MECHANISM', type: 'string', enum: ['plain', 'scram-sha-256', 'scram-sha-512'], description: 'SASL mechanism' },
  { name: 'KAFKA_USERNAME', type: 'string', description: 'SASL user' },
  { name: 'KAFKA_PASSWORD', type: 'string', description: 'SASL password' },
  { name: 'KAFKA_TLS', type: 'boolean', default: false, description: 'TLS to the brokers' },
  { name: 'KAFKA_COMPRESSION', type: 'string', default: 'gzip', enum: ['none', 'gzip'], description: 'codec of the record batches the gateway produces (docs/telemetry.md)' },
  { name: 'KAFKA_TOPIC_PARTITIONS', type: 'integer', default: 6, minimum: 1, description: 'partitions of topics the gateway creates' },
  { name: 'TOPIC_TELEMETRY', type: 'string', default: 'asset.telemetry.v1', description: 'telemetry topic, key `asset_id`' },
  { name: 'TOPIC_EVIDENCE', type: 'string', default: 'stream.events.v1', description: 'evidence topic, key `client_id/device_id`' },
  { name: 'TOPIC_RUNS', type: 'string', default: 'harness.runs.v1', description: 'every event of every run, key `run_id`' },
  { name: 'TOPIC_RUNS_CONTROL', type: 'string', default: 'harness.control.v1', description: 'run commands (start, cancel) for the owner of each run\'s partition in a cluster, key `run_id`, as many partitions as TOPIC_RUNS; cancels between the processes of one DATA_DIR otherwise' },

  // Telemetry
  { name: 'TELEMETRY_BATCH_MAX', type: 'integer', default: 500, minimum: 1, description: 'records per batch' },
  { name: 'TELEMETRY_LINGER_MS', type: 'integer', default: 5, minimum: 0, description: 'longest wait before a partial batch leaves' },
  { name: 'TELEMETRY_PUBLISH_TIMEOUT_MS', type: 'integer', default: 10000, minimum: 1, description: 'publish deadline before 500' },
  { name: 'TELEMETRY_MAX_PENDING', type: 'integer', default: 20000, minimum: 1, description: 'records awaiting acknowledgment before 503' },
  { name: 'TELEMETRY_MAX_BODY', type: 'integer', default: MiB, minimum: 1, description: 'largest telemetry body in bytes (413 past it); in a batch or a stream, largest record' },
  { name: 'TELEMETRY_BATCH_MAX_RECORDS', type: 'integer', default: 1000, minimum: 1, description: 'records per `POST /v1/asset/track:batch` (413 past it)' },
  { name: 'TELEMETRY_BATCH_MAX_BODY', type: 'integer', default: 8 * MiB, minimum: 1, description: 'largest batch body in bytes (413 past it)' },
  { name: 'TELEMETRY_STREAM_WINDOW_RECORDS', type: 'integer', default: 1000, minimum: 1, description: 'records a telemetry stream may have unacknowledged; more are refused `overloaded`' },
  { name: 'TELEMETRY_STREAM_WINDOW_BYTES', type: 'integer', default: MiB, minimum: 1024, description: 'bytes of those records; also the largest stream message (uWS drops a stream that sends a larger one)' },
  { name: 'TELEMETRY_METRICS_SCHEMAS', type: 'list', default: ['svc.metrics@1.0'], description: '`metrics.schema` values asset track accepts: the spec\'s `svc.metrics@1.0`, which stays accepted, and any the devices of a system being migrated send (e.g. `svc.metrics@1.0,miot.metrics@1.0`; README)' },
  { name: 'TELEMETRY_STREAM_PER_CLIENT', type: 'integer', default: 8, minimum: 1, description: 'telemetry streams one client may hold open; more get 429 `too_many_streams`' },

  // Storage
  { name: 'STORAGE', type: 'string', default: 'fs', enum: ['fs', 's3'], description: '`fs` (DATA_DIR/objects) or `s3`' },
  { name: 'S3_ENDPOINT', type: 'url', description: 'S3 API endpoint (MinIO, Ceph, R2); AWS when unset' },
  { name: 'S3_REGION', type: 'string', default: 'us-east-1', description: 'S3 region' },
  { name: 'S3_BUCKET', type: 'string', default: 'evidence', description: 'bucket for evidence objects' },
  { name: 'S3_FORCE_PATH_STYLE', type: 'boolean', default: false, description: 'path-style addressing (MinIO)' },
  { name: 'S3_PART_SIZE', type: 'integer', default: 8 * MiB, minimum: 5 * MiB, description: 'multipart part size in bytes, and so the size of each slab of STORAGE_BUFFER_BYTES an upload is written through (a part is one slab)' },
  { name: 'S3_QUEUE_SIZE', type: 'integer', default: 4, minimum: 1, description: 'parts in flight per upload' },
  { name: 'STORAGE_BUFFER_BYTES', type: 'integer', default: 32 * MiB, minimum: 5 * MiB, description: 'memory for media being stored, shared by all uploads (slabs of `S3_PART_SIZE`); an upload waits, its socket paused, when it is spent' },
  { name: 'STORAGE_CLIENT_MAX_SLABS', type: 'integer', minimum: 1, description: 'slabs of that memory one client may hold at once (default: all but a quarter of them, at least one kept back)' },
  { name: 'STORAGE_CLIENT_MAX_UPLOADS', type: 'integer', minimum: 1, description: 'media parts one client may be storing at once; the next gets 503 `storage_busy` (default: twice its slabs)' },
  { name: 'STORAGE_SLAB_WAIT_MS', type: 'integer', default: 30000, minimum: 1, description: 'longest wait of an upload for buffer memory before 503 `storage_busy`' },
  { name: 'STORAGE_UPLOAD_MIN_BYTES_PER_S', type: 'integer', default: 64 * 1024, minimum: 1, description: 'bytes a second a media part must arrive at while it fills a slab of that memory (after its first 10 s); a slower upload is ended with 408 `upload_too_slow`, freeing its slab' },
  { name: 'STORAGE_SLAB_HOLD_MS', type: 'integer', default: 180000, minimum: 1, description: 'longest an upload may hold one slab of that memory, filled and stored; past it the upload is ended with 408 `upload_too_slow`' },
  { name: 'S3_REQUEST_TIMEOUT_MS', type: 'integer', default: 15000, minimum: 1, description: 'deadline of each S3 request but parts (create, complete, abort, list, delete, probe), retries included; past it 503 `storage_unavailable`' },
  { name: 'S3_PART_TIMEOUT_MS', type: 'integer', default: 60000, minimum: 1, description: 'deadline of one part (or a small object\'s PutObject), retries included' },
  { name: 'S3_ABORT_INCOMPLETE_UPLOADS_DAYS', type: 'integer', default: 1, minimum: 0, description: 'days after which the bucket\'s lifecycle aborts an incomplete multipart upload: a rule merged into the bucket\'s lifecycle at start, where the credentials allow (docs/storage.md); 0 leaves the lifecycle alone' },
  { name: 'S3_SWEEP_INTERVAL_MS', type: 'integer', default: 60000, minimum: 100, description: 'how often recorded multipart uploads that are not in flight are aborted (and the longest retry backoff)' },

  // Evidence
  { name: 'EVIDENCE_MAX_BYTES', type: 'integer', default: 268435456, minimum: 1, description: 'largest request (413 `payload_too_large`)' },
  { name: 'EVIDENCE_MAX_MEDIA', type: 'integer', default: 32, minimum: 0, description: 'media parts per request' },
  { name: 'EVIDENCE_EVENT_TYPES', type: 'list', default: [], description: 'event types allowed beyond the built-in allowlist' },
  { name: 'EVIDENCE_PLAYBACK_BASE_URL', type: 'url', description: 'adds `playback_url` to published media' },
  { name: 'EVIDENCE_HASH_THREADS', type: 'integer', default: 2, minimum: 1, maximum: 64, description: 'worker threads that hash media (SHA-256) off the event loop' },
  { name: 'EVIDENCE_UPLOAD_EXPIRES_S', type: 'integer', default: 86400, minimum: 1, description: 'life of a resumable (tus) upload not committed to an event (`Upload-Expires`, from its creation); then the sweep aborts its parts or deletes its object. At most S3_ABORT_INCOMPLETE_UPLOADS_DAYS with STORAGE=s3 (checked at start): the bucket\'s rule would abort its parts' },
  { name: 'EVIDENCE_UPLOAD_MAX_OPEN', type: 'integer', default: 64, minimum: 1, description: 'resumable uploads one client may have open (created, not committed nor expired); the next creation gets 429 `too_many_uploads`' },
  { name: 'EVIDENCE_UPLOAD_MAX_BYTES_HELD', type: 'integer', default: 8 * 1024 * MiB, minimum: 1, description: 'sum of the `Upload-Length` of one client\'s open resumable uploads; a creation past it gets 429 `too_many_uploads`' },
  { name: 'IDEMPOTENCY_TTL_S', type: 'integer', default: 86400, minimum: 1, description: 'how long an event_id is remembered' },

  // Harness
  { name: 'SVC_HARNESS_AUTH_ENABLED', type: 'boolean', default: false, description: 'gate /runs* on an RS256 bearer token' },
  { name: 'HARNESS_ALLOW_OPEN', type: 'boolean', default: false, description: 'start with SVC_HARNESS_AUTH_ENABLED=false on a HOST other than loopback (refused otherwise); a warning is logged' },
  { name: 'HARNESS_ALLOWED_HOSTS', type: 'list', default: [], description: 'Host names the harness port answers besides IP literals and `localhost` (`*`: any); unset, any name when harness auth is on, none when it is off (DNS rebinding, docs/harness.md)' },
  { name: 'HARNESS_ALLOWED_ORIGINS', type: 'list', default: [], description: 'browser origins (`https://console.example`) the harness port answers besides its own; a request from another origin is 403 `origin_not_allowed`' },
  { name: 'IDP_ISSUER', type: 'string', description: '`iss` the harness (and ingest) accept' },
  { name: 'IDP_JWKS_URL', type: 'url', description: 'RS256 public key set of that issuer' },
  { name: 'IDP_RS256_AUDIENCE', type: 'string', description: '`aud` the harness requires' },
  { name: 'HARNESS_SYNC_TIMEOUT_MS', type: 'integer', default: 30000, minimum: 1, description: '`POST /runs` answers 202 past this' },
  { name: 'HARNESS_MAX_RUNS_IN_FLIGHT', type: 'integer', default: 10000, minimum: 1, description: 'runs queued or running in one process; past it a start is 503 `runs_in_flight_limit`' },
  { name: 'HARNESS_MAX_RUNS_IN_FLIGHT_PER_TENANT', type: 'integer', default: 1000, minimum: 1, description: 'the same, per tenant, so one tenant cannot hold all of them' },
  { name: 'HARNESS_MAX_RUNS_IN_FLIGHT_PER_ADDRESS', type: 'integer', default: 1000, minimum: 1, description: 'with harness auth off (the tenant is only a header), runs one client address may hold queued or running in one process' },
  { name: 'HARNESS_MAX_RUN_S', type: 'integer', default: 3600, minimum: 1, maximum: 604800, description: 'longest life of a run: past it the run fails with `run_timeout`' },
  { name: 'HARNESS_TENANT_STORED_BYTES', type: 'integer', minimum: 64 * KiB, description: 'run events one tenant\'s runs may hold in a process\'s store (ended runs within `HARNESS_RETENTION_S` and runs in flight); past it a start is 429 `run_storage_limit` and a run in flight fails with it; unset, a quarter of the size of the file system `DATA_DIR` is on' },
  { name: 'HARNESS_TENANT_WRITE_BYTES_PER_S', type: 'integer', default: 32 * MiB, minimum: 1024, description: 'the rate one tenant\'s runs may write events at, over 8 s of it; past it a start is 429 `run_storage_limit` with the wait in `Retry-After`' },
  { name: 'HARNESS_TENANT_READ_BYTES_PER_S', type: 'integer', default: 64 * MiB, minimum: 64 * 1024, description: 'bytes of run records, list pages and sync answers served to one tenant a second, over a 2 s burst; past it, 429 `too_many_reads` with the wait' },
  { name: 'HARNESS_MAX_STREAMS', type: 'integer', default: 5000, minimum: 1, description: 'run streams and watch feeds one process serves at once; past it, 429 `too_many_streams`' },
  { name: 'HARNESS_MAX_STREAMS_PER_TENANT', type: 'integer', default: 100, minimum: 1, description: 'the same, per tenant' },
  { name: 'HARNESS_REPLAY_BUFFER_BYTES', type: 'integer', default: 64 * MiB, minimum: 1024 * 1024, description: 'memory all run-stream replays of a process hold in their slices at once; past it replays wait their turn' },
  { name: 'HARNESS_RETENTION_S', type: 'integer', default: 604800, minimum: 1, description: 'how long terminal runs are kept' },
  { name: 'HARNESS_HEARTBEAT_MS', type: 'integer', default: 15000, minimum: 100, description: 'SSE comment interval' },
  { name: 'HARNESS_SSE_BUFFER', type: 'integer', default: 256 * KiB, minimum: 1024, description: 'bytes queued per slow subscriber before it is closed' },
  { name: 'HARNESS_PUBLISH_BATCH_MAX', type: 'integer', default: 500, minimum: 1, description: 'run events per bus publish' },
  { name: 'HARNESS_PUBLISH_LINGER_MS', type: 'integer', default: 5, minimum: 0, description: 'longest wait before a partial batch of run events leaves' },
  { name: 'HARNESS_GROUP_ID', type: 'string', default: 'evidence-gateway-runs', description: 'in a cluster, the Kafka consumer group that assigns the partitions of TOPIC_RUNS to processes, and the prefix of each partition\'s `transactional.id`' },
  { name: 'HARNESS_SESSION_TIMEOUT_MS', type: 'integer', default: 10000, minimum: 1000, maximum: 300000, description: 'in a cluster, how long a process may go unheard before its partitions go to others (and it stops writing for them)' },
  { name: 'HARNESS_PEER_PORT', type: 'integer', default: 8082, minimum: 0, maximum: 65535, description: 'in a cluster, where other members forward requests for the runs this process owns; worker i of WORKERS listens on this + i - 1 (0: any free port)' },
  { name: 'CLUSTER_ADVERTISED_HOST', type: 'string', description: 'in a cluster, the host other members reach this process at (default HOST, or the machine\'s hostname when HOST is a wildcard)' },
  { name: 'HARNESS_LLM_URL', type: 'url', description: 'OpenAI-compatible base URL for `agentic` runs' },
  { name: 'HARNESS_LLM_MODEL', type: 'string', default: 'gpt-4o-mini', description: 'model name sent to it' },
  { name: 'HARNESS_LLM_API_KEY', type: 'string', description: 'bearer key sent to it' },

  // Front door
  { name: 'HARNESS_URL', type: 'url', description: 'where the front door forwards, a harness in another process: an http:// origin and optional base path (unset: this process\'s harness serves it in-process, or 127.0.0.1:HARNESS_PORT without the harness role)' },
  { name: 'HARNESS_TENANT_ASSERTION_SECRET', type: 'string', description: 'HMAC key (at least 32 bytes) the front door and the harness share: when set, the harness takes a tenant header only with the front door\'s signed assertion' },
  { name: 'FRONTDOOR_JWKS_URL', type: 'url', description: 'RS256 key set for user tokens (default this service\'s)' },
  { name: 'FRONTDOOR_HS256_SECRET', type: 'string', description: 'shared secret for service (HS256) tokens' },
  { name: 'ORGS_FILE', type: 'string', description: 'JSON: org slug → tenant and members' }
] as const satisfies readonly Variable[]

/**
 * Prefixes we own: an unknown variable under one of them is a typo, and fatal.
 * Not `GATEWAY_`: no setting of ours uses it, and the tools around the
 * gateway do (`GATEWAY_INFRA_RUN` of scripts/infra.sh is in the environment
 * of every process a test starts).
 */
export const ownedPrefixes: readonly string[] = [
  'AUTH_', 'BUS_', 'KAFKA_', 'TOPIC_', 'TELEMETRY_', 'STORAGE_', 'S3_', 'EVIDENCE_',
  'IDEMPOTENCY_', 'HARNESS_', 'SVC_HARNESS_', 'IDP_', 'FRONTDOOR_', 'ORGS_', 'SHUTDOWN_', 'CLUSTER_', 'METRICS_',
  // Not all of HTTP_: HTTP_PROXY and its kin belong to other tools.
  'HTTP_BODY_', 'HTTP_DRAIN_'
]
