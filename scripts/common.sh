# Sourced by the project's shell scripts: how they speak and where they cache.
# The sourcing script sets SCRIPT_NAME first; its messages are prefixed with it.

CACHE="${GATEWAY_INFRA_CACHE:-$HOME/.cache/evidence-gateway-infra}"

log() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
die() { printf '%s: ERROR: %s\n' "$SCRIPT_NAME" "$*" >&2; exit 1; }
# need COMMAND WHY: stop early, naming what is missing and what it is for.
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found in PATH ($2)"; }
