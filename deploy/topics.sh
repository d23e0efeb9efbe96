#!/bin/sh
# The gateway's topics, created with explicit partitions and retention before any gateway starts (a
# gateway creates a missing topic with KAFKA_TOPIC_PARTITIONS and the broker's default retention).
# compose.yaml's `topics` step runs it with Redpanda's rpk; docs/deploy.md, Topics, gives the same for
# Kafka's own tools. An existing topic gets its retention set again and keeps its partitions: adding
# partitions moves keys to other partitions, and the runs and control topics must keep the same count.
#   BROKERS              host:port list (required)
#   REPLICAS             replication factor (1 for a single broker; 3 in production)
#   PARTITIONS           of each topic (the runs and control topics must have the same count)
#   HARNESS_RETENTION_S  the gateways' value: the runs topic keeps a day more, so a run that ends on
#                        the last day of a week-long retention is still in the log while it is kept
set -eu
: "${BROKERS:?BROKERS: the brokers, host:port}"
REPLICAS="${REPLICAS:-1}"
PARTITIONS="${PARTITIONS:-12}"
HARNESS_RETENTION_S="${HARNESS_RETENTION_S:-604800}"
DAY_MS=86400000
WEEK_MS=604800000
RUNS_MS=$(( (HARNESS_RETENTION_S * 1000) + DAY_MS ))

topic() { # name retention.ms
  if rpk topic describe "$1" -X brokers="$BROKERS" >/dev/null 2>&1; then
    rpk topic alter-config "$1" --set retention.ms="$2" -X brokers="$BROKERS"
  else
    rpk topic create "$1" -p "$PARTITIONS" -r "$REPLICAS" -c cleanup.policy=delete -c retention.ms="$2" -X brokers="$BROKERS"
  fi
}

topic asset.telemetry.v1 "$WEEK_MS"
topic stream.events.v1 "$WEEK_MS"
topic harness.runs.v1 "$RUNS_MS"
# Cancel requests between nodes; a request is retried every second for 5 s, a day is ample.
topic harness.control.v1 "$DAY_MS"
rpk topic list -X brokers="$BROKERS"
