#!/usr/bin/env bash
# Local test infrastructure for the evidence gateway: a single-node Kafka
# (KRaft, broker+controller in one JVM) and a single-drive MinIO, both bound to
# 127.0.0.1 only, on ports chosen at `up` time.
#
# Usage: scripts/infra.sh up|down|status|env|up-kafka|down-kafka|kill-kafka|freeze-kafka|thaw-kafka|up-minio|kill-minio|freeze-minio|thaw-minio
#        |up-kafka-only|up-broker2|down-broker2|kill-broker2|freeze-broker2|thaw-broker2
#
#   up          install what is missing (into the cache), start what is not
#               running, wait until both answer, print the env lines (stdout)
#   down        stop both (TERM, then KILL), delete the run dir (data); the
#               cache stays
#   status      say what runs (exit 0 only if both run and answer)
#   env         print $RUN/env
#   down-kafka  stop only Kafka; its data dir and port are kept
#   up-kafka    start only Kafka again, on the same port with the same data
#   kill-kafka  SIGKILL Kafka, as a crash would; its data dir and port are kept
#   freeze-kafka  SIGSTOP Kafka: connections are accepted, nothing is answered
#   thaw-kafka  SIGCONT Kafka
#   up-minio    start only MinIO (in a fresh run dir too: a MinIO-only run,
#               whose Kafka is set up by a later 'up'), on the same port with
#               the same data
#   kill-minio  SIGKILL MinIO, as a crash would; its data dir and port are kept
#   freeze-minio  SIGSTOP MinIO: connections are accepted, nothing is answered
#   thaw-minio  SIGCONT MinIO
#   up-kafka-only  start Kafka alone in a fresh run dir (MinIO is never
#               started); prints KAFKA_BROKERS
#   up-broker2  start a second broker-only Kafka process (node 2) in the
#               cluster of the running Kafka (node 1, which stays the only
#               controller), for tests that need partitions with different
#               leaders; its storage is formatted on first use and kept, as
#               its port; prints KAFKA_BROKER2
#   down-broker2 / kill-broker2 / freeze-broker2 / thaw-broker2
#               TERM then KILL / SIGKILL / SIGSTOP / SIGCONT node 2 (data and
#               port kept: up-broker2 starts it again); `down` stops it too
#
# Environment:
#   GATEWAY_INFRA_CACHE    install cache  (default ~/.cache/evidence-gateway-infra)
#   GATEWAY_INFRA_RUN      run state: pids, ports, data, logs
#                          (default /tmp/evidence-gateway-infra)
#   GATEWAY_INFRA_TIMEOUT  seconds to wait for a service to answer (default 120)
#   GATEWAY_INFRA_MINIO_REF  Go module version of github.com/minio/minio to build
#
# Needs: bash, curl, flock/setsid (util-linux), java >= 11 (17 tested),
# and for the first install only: mvn (Kafka jars from Maven Central) and
# go (MinIO is built with `go install`).
#
# Output: progress lines on stderr prefixed "infra:"; the env lines
# (KAFKA_BROKERS=..., S3_ENDPOINT=..., ...) on stdout and in $RUN/env.
set -euo pipefail

KAFKA_VERSION=3.9.2 # newest 3.9.x on Maven Central (3.9.0, 3.9.1, 3.9.2)
SCALA_VERSION=2.13
SLF4J_VERSION=1.7.36 # slf4j-reload4j: the log4j 1.x binding Kafka 3.9 ships with
# MinIO: `@latest` of github.com/minio/minio resolves (Feb 2026) to this
# pseudo-version (MinIO's RELEASE.* tags are not semver, so the proxy only
# offers pseudo-versions).  It builds with Go 1.26; pinned so every machine
# builds the same server.  Override with GATEWAY_INFRA_MINIO_REF=latest.
MINIO_REF="${GATEWAY_INFRA_MINIO_REF:-v0.0.0-20260212201848-7aac2a2c5b7c}"
MINIO_USER=minioadmin
MINIO_PASS=minioadmin-secret
S3_REGION=us-east-1

SCRIPT_NAME=infra
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RUN="${GATEWAY_INFRA_RUN:-/tmp/evidence-gateway-infra}"
TIMEOUT="${GATEWAY_INFRA_TIMEOUT:-120}"
KAFKA_STOP_GRACE=15 # seconds between TERM and KILL (clean shutdown = fast restart)
MINIO_STOP_GRACE=5

KAFKA_HOME="$CACHE/kafka-$KAFKA_VERSION"
MINIO_HOME="$CACHE/minio-$MINIO_REF"



java_bin() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    printf '%s\n' "$JAVA_HOME/bin/java"
  else
    command -v java || die "java not found (need a JDK/JRE >= 11 for Kafka 3.9)"
  fi
}

# ---------------------------------------------------------------- locking ---
# One lock for installs (in the cache) and one for the run dir (beside it,
# since `down` deletes the run dir).  fd 8/9 are closed in every daemon we
# start, so a running server never holds a lock.
lock_cache() {
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.install.lock"
  flock 8
}
unlock_cache() { exec 8>&-; }
lock_run() {
  mkdir -p "$(dirname "$RUN")"
  exec 9>"$RUN.lock"
  flock 9
}

# --------------------------------------------------------------- install ---
# cached_install HOME TOOL WHY BUILD: run BUILD TMP once into a temporary
# folder beside HOME, then move it into place with a .complete marker.  The
# cache lock makes concurrent `up`s build once; a half-built folder is never
# taken for a complete one.
cached_install() {
  local home="$1" tool="$2" why="$3" build="$4"
  [[ -f "$home/.complete" ]] && return 0
  need "$tool" "$why"
  lock_cache
  [[ -f "$home/.complete" ]] && { unlock_cache; return 0; }
  local tmp
  tmp="$(dirname "$home")/.tmp-$(basename "$home")"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  "$build" "$tmp"
  touch "$tmp/.complete"
  rm -rf "$home"
  mv "$tmp" "$home"
  unlock_cache
}

# build_kafka TMP: the broker's jars from Maven Central.
build_kafka() {
  local tmp="$1"
  log "installing Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_HOME"
  # kafka_2.13 = broker + StorageTool; kafka-tools = TopicCommand (used for the
  # readiness check) minus connect-runtime, which only Connect tools need.
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.evidence-gateway</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_$SCALA_VERSION</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$KAFKA_VERSION</version>
      <exclusions>
        <exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>$SLF4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  if ! mvn -B -q -f "$tmp/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/jars" >"$tmp/mvn.log" 2>&1; then
    tail -n 30 "$tmp/mvn.log" >&2
    die "mvn could not fetch org.apache.kafka:kafka_$SCALA_VERSION:$KAFKA_VERSION (log: $tmp/mvn.log)"
  fi
  [[ -f "$tmp/jars/kafka_$SCALA_VERSION-$KAFKA_VERSION.jar" ]] || die "kafka jar missing after mvn run ($tmp/jars)"
}

# build_minio TMP: the server built from the Go module proxy.
build_minio() {
  local tmp="$1"
  log "building MinIO (github.com/minio/minio@$MINIO_REF) with $(go version | awk '{print $3}'); this takes several minutes on a cold Go cache"
  mkdir -p "$tmp/bin"
  # CGO off: a static binary, as MinIO's own release builds; run outside any
  # module so the repo's go.mod/go.work (if any) cannot interfere.
  if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false \
        go install "github.com/minio/minio@$MINIO_REF") >"$tmp/build.log" 2>&1; then
    tail -n 30 "$tmp/build.log" >&2
    die "go install github.com/minio/minio@$MINIO_REF failed (log: $tmp/build.log)"
  fi
  [[ -x "$tmp/bin/minio" ]] || die "minio binary missing after go install ($tmp/bin)"
  # go-installed builds report "DEVELOPMENT.GOGET" from --version; the module
  # version embedded in the binary is the real identity.
  go version -m "$tmp/bin/minio" | awk '$1 == "mod" && $2 == "github.com/minio/minio" {print $3}' >"$tmp/VERSION"
  [[ -s "$tmp/VERSION" ]] || echo "$MINIO_REF" >"$tmp/VERSION"
}

install_kafka() {
  [[ -f "$KAFKA_HOME/.complete" ]] && return 0
  cached_install "$KAFKA_HOME" mvn "used once to fetch the Kafka jars from Maven Central" build_kafka
  log "Kafka $KAFKA_VERSION installed ($(find "$KAFKA_HOME/jars" -name '*.jar' | wc -l) jars)"
}

install_minio() {
  [[ -f "$MINIO_HOME/.complete" ]] && return 0
  cached_install "$MINIO_HOME" go "used once to build MinIO with 'go install'" build_minio
  log "MinIO $(cat "$MINIO_HOME/VERSION") installed"
}

# ------------------------------------------------------------- processes ---
# A pid counts as ours only if it is alive and its command line mentions our
# run dir (guards against pid reuse after a reboot or a stale /tmp).
pid_alive() {
  local pid="$1"
  local cmd
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)"
  [[ "$cmd" == *"$RUN/"* ]]
}
# Gone or a zombie (a zombie holds no ports or files any more).
pid_exited() {
  local st
  st="$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$1/stat" 2>/dev/null || true)"
  [[ -z "$st" || "$st" == Z ]]
}
read_pid() { if [[ -f "$1" ]]; then cat "$1" 2>/dev/null || true; fi; }
kafka_pid() { read_pid "$RUN/kafka.pid"; }
minio_pid() { read_pid "$RUN/minio.pid"; }
kafka_running() { pid_alive "$(kafka_pid)"; }
minio_running() { pid_alive "$(minio_pid)"; }

# spawn PIDFILE LOGFILE CMD...: start CMD detached (own session, no inherited
# stdio or lock fds), the pid it writes is the server's own (bash execs it).
spawn() {
  local pidfile="$1" logfile="$2"
  shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016 # expanded by the inner bash
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" \
    </dev/null >>"$logfile" 2>&1 8>&- 9>&- &
  for _ in $(seq 1 50); do
    [[ -s "$pidfile" ]] && return 0
    sleep 0.1
  done
  die "could not start $1 (no pid file $pidfile)"
}

# stop_pid NAME PIDFILE GRACE
stop_pid() {
  local name="$1" pidfile="$2" grace="$3" pid
  pid="$(read_pid "$pidfile")"
  if ! pid_alive "$pid"; then
    rm -f "$pidfile"
    return 0
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 10))); do
    pid_alive "$pid" || break
    sleep 0.1
  done
  if pid_alive "$pid"; then
    log "$name did not stop within ${grace}s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      pid_alive "$pid" || break
      sleep 0.1
    done
  fi
  pid_alive "$pid" && die "$name (pid $pid) is still running"
  # cmdline empties early in exit(); wait until sockets are really released
  for _ in $(seq 1 50); do
    pid_exited "$pid" && break
    sleep 0.1
  done
  rm -f "$pidfile"
}

# ----------------------------------------------------------------- ports ---
# Free ports below the kernel's ephemeral range, so that while Kafka is down
# (down-kafka) no client's outgoing connection can be handed its port, and the
# broker can always come back on the same one.  All four are bound at once to
# be distinct, then released.
pick_ports() {
  local lo
  lo="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  (( lo > 12000 )) || lo=32768
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$lo" <<'EOF'
import random, socket, sys
hi = int(sys.argv[1]) - 1
socks = []
while len(socks) < 4:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", random.randint(10000, hi)))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
  else
    need node "python3 or node is needed to pick free ports"
    node - "$lo" <<'EOF'
const net = require("net");
const hi = Number(process.argv[2]) - 1, servers = [];
const next = () => {
  if (servers.length === 4) {
    console.log(servers.map((s) => s.address().port).join(" "));
    servers.forEach((s) => s.close());
    return;
  }
  const s = net.createServer();
  s.once("error", next);
  s.listen(10000 + Math.floor(Math.random() * (hi - 10000)), "127.0.0.1", () => { servers.push(s); next(); });
};
next();
EOF
  fi
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ------------------------------------------------------------------ Kafka ---
# JVM flags as in Kafka's bin/kafka-run-class.sh / kafka-server-start.sh,
# with a modest heap.
# kafka_server_cmd [DIR]: the server of DIR (default $RUN/kafka: node 1).
kafka_server_cmd() {
  local dir="${1:-$RUN/kafka}"
  KAFKA_CMD=("$(java_bin)" -Xmx512m -Xms128m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
    -Djava.awt.headless=true -Dlog4j.configuration="file:$RUN/kafka/log4j.properties"
    -Dkafka.logs.dir="$dir/logs" -cp "$KAFKA_HOME/jars/*"
    kafka.Kafka "$dir/server.properties")
}

# Short-lived Kafka tools (StorageTool, TopicCommand), killed after $1 s:
# small heap, C1 only for a quicker start, log4j warnings to stderr.
kafka_tool() {
  local limit="$1"
  shift
  timeout "$limit" "$(java_bin)" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Djava.awt.headless=true -Dlog4j.configuration="file:$RUN/kafka/tools-log4j.properties" \
    -cp "$KAFKA_HOME/jars/*" "$@"
}

write_kafka_config() {
  mkdir -p "$RUN/kafka/data" "$RUN/kafka/logs"
  cat >"$RUN/kafka/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$RUN/kafka/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
# 1 partition instead of 50: the first consumer group join stays fast
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
EOF
  # Broker log -> a file in the run dir (stdout/stderr go to kafka.out).
  cat >"$RUN/kafka/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.Append=true
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.org.apache.kafka.controller=INFO
log4j.logger.state.change.logger=INFO
EOF
  cat >"$RUN/kafka/tools-client.properties" <<'EOF'
request.timeout.ms=5000
default.api.timeout.ms=10000
EOF
  # Short-lived tools (StorageTool, TopicCommand): warnings to stderr only.
  cat >"$RUN/kafka/tools-log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
}

format_kafka_storage() {
  local uuid
  uuid="$(kafka_tool 60 kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  [[ -n "$uuid" ]] || die "kafka StorageTool random-uuid failed"
  echo "$uuid" >"$RUN/kafka/cluster-id"
  if ! kafka_tool 60 kafka.tools.StorageTool format \
      -t "$uuid" -c "$RUN/kafka/server.properties" >"$RUN/kafka/logs/format.log" 2>&1; then
    cat "$RUN/kafka/logs/format.log" >&2
    die "kafka storage format failed"
  fi
  log "formatted Kafka storage (cluster id $uuid)"
}

start_kafka() {
  if kafka_running; then return 0; fi
  [[ -f "$RUN/kafka/data/meta.properties" ]] || die "Kafka data dir $RUN/kafka/data is not formatted (run 'down' then 'up')"
  if tcp_open "$KAFKA_PORT" || tcp_open "$CONTROLLER_PORT"; then
    die "Kafka port $KAFKA_PORT or $CONTROLLER_PORT is taken by another process ('$0 down' then 'up' picks new ports)"
  fi
  log "starting Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT (controller 127.0.0.1:$CONTROLLER_PORT)"
  kafka_server_cmd
  spawn "$RUN/kafka.pid" "$RUN/kafka/kafka.out" "${KAFKA_CMD[@]}"
}

# kafka_fail MESSAGE [DIR]: the tails of the failing node's logs (DIR, default node 1's), then exit 1.
kafka_fail() {
  local dir="${2:-$RUN/kafka}"
  log "Kafka failed: $1"
  log "--- tail of $dir/logs/server.log ---"
  tail -n 40 "$dir/logs/server.log" >&2 2>/dev/null || true
  log "--- tail of $dir/kafka.out ---"
  tail -n 20 "$dir/kafka.out" >&2 2>/dev/null || true
  log "Kafka failed: $1 (whatever else runs stays up: '$0 down' stops it)"
  exit 1
}

# wait_kafka [PORT RUNNING DIR]: until the broker on PORT (default node 1's)
# answers, failing as soon as RUNNING (a function) says its process is gone,
# with the logs of the node in DIR.
wait_kafka() {
  local port="${1:-$KAFKA_PORT}" running="${2:-kafka_running}" dir="${3:-$RUN/kafka}"
  local deadline=$((SECONDS + TIMEOUT))
  while ! tcp_open "$port"; do
    "$running" || kafka_fail "the Kafka process exited during startup" "$dir"
    (( SECONDS < deadline )) || kafka_fail "port $port not open after ${TIMEOUT}s" "$dir"
    sleep 0.5
  done
  # A metadata round trip through the real client: list topics.
  while ! kafka_tool 30 org.apache.kafka.tools.TopicCommand \
      --bootstrap-server "127.0.0.1:$port" \
      --command-config "$RUN/kafka/tools-client.properties" --list \
      >"$RUN/kafka/logs/check.log" 2>&1; do
    "$running" || kafka_fail "the Kafka process exited during startup" "$dir"
    (( SECONDS < deadline )) || { cat "$RUN/kafka/logs/check.log" >&2; kafka_fail "no answer to a topic listing after ${TIMEOUT}s" "$dir"; }
    sleep 1
  done
  log "Kafka answers on 127.0.0.1:$port"
}

# -------------------------------------------------------- second broker ---
# Node 2: a broker-only process in node 1's cluster (node 1 stays the only
# controller), so that partitions can have different leaders and one can
# lose its leader while the rest of the cluster answers.
broker2_pid() { read_pid "$RUN/kafka2.pid"; }
broker2_running() { pid_alive "$(broker2_pid)"; }

load_broker2_port() {
  [[ -f "$RUN/ports2" ]] || return 1
  # shellcheck disable=SC1091
  . "$RUN/ports2"
  [[ -n "${BROKER2_PORT:-}" ]]
}

# Node 1's settings where they concern the cluster (replication of the
# internal topics, defaults of new topics); its own id, port and data.
broker2_ready() {
  local ports
  ports="$(pick_ports)"
  BROKER2_PORT="${ports%% *}"
  [[ -n "$BROKER2_PORT" ]] || die "could not pick a free port"
  mkdir -p "$RUN/kafka2/data" "$RUN/kafka2/logs"
  {
    echo "process.roles=broker"
    echo "node.id=2"
    echo "controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT"
    echo "listeners=PLAINTEXT://127.0.0.1:$BROKER2_PORT"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$BROKER2_PORT"
    echo "log.dirs=$RUN/kafka2/data"
    grep -E '^(controller.listener.names|inter.broker.listener.name|listener.security.protocol.map)=' "$RUN/kafka/server.properties"
    sed -n '/^num.partitions=/,$p' "$RUN/kafka/server.properties" | grep -v '^#'
  } >"$RUN/kafka2/server.properties"
  if ! kafka_tool 60 kafka.tools.StorageTool format -t "$(cat "$RUN/kafka/cluster-id")" \
      -c "$RUN/kafka2/server.properties" >"$RUN/kafka2/logs/format.log" 2>&1; then
    cat "$RUN/kafka2/logs/format.log" >&2
    die "kafka storage format of node 2 failed"
  fi
  # the port last: a run dir with a ports2 file has a complete node 2
  echo "BROKER2_PORT=$BROKER2_PORT" >"$RUN/ports2"
}

# ------------------------------------------------------------------ MinIO ---
start_minio() {
  if minio_running; then return 0; fi
  if tcp_open "$MINIO_PORT" || tcp_open "$MINIO_CONSOLE_PORT"; then
    die "MinIO port $MINIO_PORT or $MINIO_CONSOLE_PORT is taken by another process ('$0 down' then 'up' picks new ports)"
  fi
  mkdir -p "$RUN/minio/data"
  log "starting MinIO on 127.0.0.1:$MINIO_PORT (console 127.0.0.1:$MINIO_CONSOLE_PORT)"
  spawn "$RUN/minio.pid" "$RUN/minio/minio.log" \
    env MINIO_ROOT_USER="$MINIO_USER" MINIO_ROOT_PASSWORD="$MINIO_PASS" \
    MINIO_UPDATE=off HOME="$RUN/minio" \
    "$MINIO_HOME/bin/minio" server "$RUN/minio/data" \
    --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" --anonymous
}

minio_fail() {
  log "MinIO failed: $1"
  log "--- tail of $RUN/minio/minio.log ---"
  tail -n 40 "$RUN/minio/minio.log" >&2 2>/dev/null || true
  log "MinIO failed: $1 (whatever else runs stays up: '$0 down' stops it)"
  exit 1
}

wait_minio() {
  local deadline=$((SECONDS + TIMEOUT))
  until curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$MINIO_PORT/minio/health/ready"; do
    minio_running || minio_fail "the MinIO process exited during startup"
    (( SECONDS < deadline )) || minio_fail "/minio/health/ready not OK after ${TIMEOUT}s"
    sleep 0.5
  done
  log "MinIO answers on 127.0.0.1:$MINIO_PORT"
}

# ------------------------------------------------------------- run state ---
load_ports() {
  [[ -f "$RUN/ports" ]] || return 1
  # shellcheck disable=SC1091
  . "$RUN/ports"
  [[ -n "${KAFKA_PORT:-}" && -n "${CONTROLLER_PORT:-}" && -n "${MINIO_PORT:-}" && -n "${MINIO_CONSOLE_PORT:-}" ]]
}

# init_run_dir [minio-only]: ports for both; Kafka's storage formatted unless
# only MinIO is wanted (kafka_ready formats it when Kafka is first started).
init_run_dir() {
  local ports
  rm -rf "$RUN"
  mkdir -p "$RUN"
  ports="$(pick_ports)"
  read -r KAFKA_PORT CONTROLLER_PORT MINIO_PORT MINIO_CONSOLE_PORT <<<"$ports"
  [[ -n "${MINIO_CONSOLE_PORT:-}" ]] || die "could not pick free ports"
  [[ "${1:-}" == minio-only ]] || kafka_ready
  # ports last: a run dir with a ports file is complete
  cat >"$RUN/ports" <<EOF
KAFKA_PORT=$KAFKA_PORT
CONTROLLER_PORT=$CONTROLLER_PORT
MINIO_PORT=$MINIO_PORT
MINIO_CONSOLE_PORT=$MINIO_CONSOLE_PORT
EOF
}

kafka_ready() {
  [[ -f "$RUN/kafka/server.properties" ]] && return 0
  write_kafka_config
  format_kafka_storage
}

write_env() {
  cat >"$RUN/env.tmp" <<EOF
KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
AWS_ACCESS_KEY_ID=$MINIO_USER
AWS_SECRET_ACCESS_KEY=$MINIO_PASS
AWS_REGION=$S3_REGION
INFRA_KAFKA_VERSION=$KAFKA_VERSION
INFRA_MINIO_VERSION=$(cat "$MINIO_HOME/VERSION")
EOF
  mv "$RUN/env.tmp" "$RUN/env"
}

print_versions() {
  local kver
  kver="$(grep -o 'Kafka version: [^ ]*' "$RUN/kafka/logs/server.log" 2>/dev/null | tail -n 1 || true)"
  log "Kafka: ${kver:-jar kafka_$SCALA_VERSION-$KAFKA_VERSION.jar} (KRaft, broker+controller)"
  log "MinIO: module github.com/minio/minio $(cat "$MINIO_HOME/VERSION"); $("$MINIO_HOME/bin/minio" --version 2>/dev/null | head -n 1 || true)"
}

# -------------------------------------------------------------- commands ---
cmd_up() {
  need curl "used for the MinIO health check"
  java_bin >/dev/null
  install_kafka
  install_minio
  lock_run
  if ! load_ports; then
    init_run_dir
    load_ports
  elif [[ ! -f "$RUN/kafka/server.properties" ]]; then
    kafka_ready
  elif kafka_running && minio_running \
      && curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$MINIO_PORT/minio/health/ready" \
      && tcp_open "$KAFKA_PORT" && [[ -f "$RUN/env" ]]; then
    log "already up ($RUN)"
    cat "$RUN/env"
    return 0
  fi
  start_minio
  start_kafka
  wait_minio
  wait_kafka
  write_env
  print_versions
  log "up; env in $RUN/env"
  cat "$RUN/env"
}

cmd_up_kafka() {
  java_bin >/dev/null
  install_kafka
  lock_run
  load_ports || die "no run state in $RUN (run 'up' first)"
  if kafka_running; then
    log "Kafka already running (pid $(kafka_pid))"
  else
    start_kafka
  fi
  wait_kafka
  [[ -f "$RUN/env" ]] && cat "$RUN/env"
}

cmd_down_kafka() {
  lock_run
  load_ports || die "no run state in $RUN"
  # A frozen Kafka would hold its TERM until the grace ran out.
  if kafka_running; then kill -CONT "$(kafka_pid)" 2>/dev/null || true; fi
  stop_pid Kafka "$RUN/kafka.pid" "$KAFKA_STOP_GRACE"
  log "Kafka stopped; data and port $KAFKA_PORT kept (use up-kafka)"
}

cmd_up_kafka_only() {
  java_bin >/dev/null
  install_kafka
  lock_run
  if ! load_ports; then
    init_run_dir
    load_ports
  fi
  kafka_running || start_kafka
  wait_kafka
  echo "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT" >"$RUN/env"
  cat "$RUN/env"
}

cmd_up_broker2() {
  java_bin >/dev/null
  lock_run
  load_ports || die "no run state in $RUN (run 'up-kafka-only' or 'up' first)"
  kafka_running || die "node 1 (Kafka) is not running: node 2 joins its cluster"
  load_broker2_port || broker2_ready
  if broker2_running; then
    log "Kafka node 2 already running (pid $(broker2_pid))"
  else
    if tcp_open "$BROKER2_PORT"; then die "node 2's port $BROKER2_PORT is taken by another process"; fi
    log "starting Kafka node 2 (broker) on 127.0.0.1:$BROKER2_PORT"
    kafka_server_cmd "$RUN/kafka2"
    spawn "$RUN/kafka2.pid" "$RUN/kafka2/kafka.out" "${KAFKA_CMD[@]}"
  fi
  wait_kafka "$BROKER2_PORT" broker2_running "$RUN/kafka2"
  echo "KAFKA_BROKER2=127.0.0.1:$BROKER2_PORT"
}

cmd_down_broker2() {
  lock_run
  if broker2_running; then kill -CONT "$(broker2_pid)" 2>/dev/null || true; fi
  stop_pid "Kafka node 2" "$RUN/kafka2.pid" "$KAFKA_STOP_GRACE"
}

cmd_up_minio() {
  need curl "used for the MinIO health check"
  install_minio
  lock_run
  if ! load_ports; then
    init_run_dir minio-only
    load_ports
  fi
  if minio_running; then
    log "MinIO already running (pid $(minio_pid))"
  else
    start_minio
  fi
  wait_minio
  write_env
  cat "$RUN/env"
}

# kill_service NAME PIDFILE: SIGKILL, as a crash would; data and port kept.
kill_service() {
  local name="$1" pidfile="$2" pid
  lock_run
  load_ports || die "no run state in $RUN"
  pid="$(read_pid "$pidfile")"
  pid_alive "$pid" || die "$name is not running"
  kill -KILL "$pid"
  for _ in $(seq 1 50); do
    pid_exited "$pid" && break
    sleep 0.1
  done
  pid_exited "$pid" || die "$name (pid $pid) did not die"
  rm -f "$pidfile"
  log "$name killed; data and port kept"
}

# signal_service NAME PIDFILE SIG: STOP freezes the server (the kernel still
# accepts connections and buffers what is sent), CONT resumes it.
signal_service() {
  local pid
  load_ports || die "no run state in $RUN"
  pid="$(read_pid "$2")"
  pid_alive "$pid" || die "$1 is not running"
  kill "-$3" "$pid"
  log "$1 (pid $pid) sent SIG$3"
}

cmd_down() {
  lock_run
  # A frozen server would hold its TERM until the grace ran out.
  if broker2_running; then kill -CONT "$(broker2_pid)" 2>/dev/null || true; fi
  stop_pid "Kafka node 2" "$RUN/kafka2.pid" "$KAFKA_STOP_GRACE"
  if kafka_running; then kill -CONT "$(kafka_pid)" 2>/dev/null || true; fi
  stop_pid Kafka "$RUN/kafka.pid" "$KAFKA_STOP_GRACE"
  if minio_running; then kill -CONT "$(minio_pid)" 2>/dev/null || true; fi
  stop_pid MinIO "$RUN/minio.pid" "$MINIO_STOP_GRACE"
  # Safety net for lost pid files: a server this script started from this run
  # dir (Kafka with its server.properties, MinIO with its data dir).
  local p cmd
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" || true)"
    if [[ "$cmd" == *" kafka.Kafka $RUN/kafka/server.properties"* \
       || "$cmd" == *" kafka.Kafka $RUN/kafka2/server.properties"* \
       || "$cmd" == *"/bin/minio server $RUN/minio/data "* ]]; then
      echo "$p" >"$RUN.stray.pid"
      stop_pid "leftover server" "$RUN.stray.pid" 5
    fi
  done
  rm -f "$RUN.stray.pid"
  rm -rf "$RUN"
  log "down; removed $RUN (cache kept in $CACHE)"
}

cmd_status() {
  local rc=0
  if ! load_ports; then
    log "not up (no run state in $RUN)"
    return 1
  fi
  if kafka_running; then
    if tcp_open "$KAFKA_PORT"; then
      echo "kafka: running pid $(kafka_pid) on 127.0.0.1:$KAFKA_PORT (Kafka $KAFKA_VERSION)"
    else
      echo "kafka: process pid $(kafka_pid) running, port $KAFKA_PORT not open"
      rc=1
    fi
  else
    echo "kafka: stopped (port $KAFKA_PORT, data $RUN/kafka/data kept)"
    rc=1
  fi
  if minio_running; then
    if curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$MINIO_PORT/minio/health/ready"; then
      echo "minio: running pid $(minio_pid) on 127.0.0.1:$MINIO_PORT (console 127.0.0.1:$MINIO_CONSOLE_PORT)"
    else
      echo "minio: process pid $(minio_pid) running, not ready on port $MINIO_PORT"
      rc=1
    fi
  else
    echo "minio: stopped (port $MINIO_PORT)"
    rc=1
  fi
  return "$rc"
}

cmd_env() {
  [[ -f "$RUN/env" ]] || die "no $RUN/env (run 'up' first)"
  cat "$RUN/env"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  up-kafka) cmd_up_kafka ;;
  down-kafka) cmd_down_kafka ;;
  up-minio) cmd_up_minio ;;
  kill-kafka) kill_service Kafka "$RUN/kafka.pid" ;;
  freeze-kafka) signal_service Kafka "$RUN/kafka.pid" STOP ;;
  thaw-kafka) signal_service Kafka "$RUN/kafka.pid" CONT ;;
  kill-minio) kill_service MinIO "$RUN/minio.pid" ;;
  freeze-minio) signal_service MinIO "$RUN/minio.pid" STOP ;;
  thaw-minio) signal_service MinIO "$RUN/minio.pid" CONT ;;
  up-kafka-only) cmd_up_kafka_only ;;
  up-broker2) cmd_up_broker2 ;;
  down-broker2) cmd_down_broker2 ;;
  kill-broker2) kill_service "Kafka node 2" "$RUN/kafka2.pid" ;;
  freeze-broker2) signal_service "Kafka node 2" "$RUN/kafka2.pid" STOP ;;
  thaw-broker2) signal_service "Kafka node 2" "$RUN/kafka2.pid" CONT ;;
  *)
    echo "usage: $0 up|down|status|env|up-kafka|down-kafka|kill-kafka|freeze-kafka|thaw-kafka|up-minio|kill-minio|freeze-minio|thaw-minio|up-kafka-only|up-broker2|down-broker2|kill-broker2|freeze-broker2|thaw-broker2" >&2
    exit 2
    ;;
esac
