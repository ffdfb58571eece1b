#!/usr/bin/env bash
# A private image registry (Debian's docker-registry) on loopback, where workers push
# the bots they build from their authors' sources and pull them by digest.
#
#   scripts/services/registry.sh start    install docker-registry if missing, start it, wait (idempotent)
#   scripts/services/registry.sh stop     stop it
#   scripts/services/registry.sh status   is it running?
#   scripts/services/registry.sh env      `export` lines for the tests
#   scripts/services/registry.sh install  install docker-registry if missing
#
# State lives in $FARM_TEST_REGISTRY_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/registry:
# data/ holds the images, config.yml, registry.pid and registry.log. Port:
# FARM_TEST_REGISTRY_PORT (5055, beside the 5000 of the package's own service). No
# authentication: it listens on 127.0.0.1 only, which the Docker engine also trusts
# without TLS (127.0.0.0/8 is an insecure registry by default).
set -euo pipefail

NAME=registry
PROGRAM=docker-registry
STATE=${FARM_TEST_STATE:-/tmp/matchfarm-test}
DIR=${FARM_TEST_REGISTRY_DIR:-$STATE/registry}
PORT=${FARM_TEST_REGISTRY_PORT:-5055}
START_TIMEOUT=${FARM_TEST_REGISTRY_START_TIMEOUT:-30}
PID_FILE=$DIR/registry.pid
LOG_FILE=$DIR/registry.log
BINARY=/usr/bin/docker-registry

# shellcheck source=scripts/services/daemon.sh
. "$(dirname "$0")/daemon.sh"

env_lines() {
    printf 'export %s=%q\n' FARM_TEST_REGISTRY "127.0.0.1:$PORT"
}

install() {
    [ -x "$BINARY" ] && return
    [ "$(id -u)" -eq 0 ] || die "docker-registry is missing and only root can install it"
    log "installing Debian's docker-registry"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
}

answers() { curl -fsS --max-time 2 "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1; }

prepare() {
    mkdir -p "$DIR/data"
    cat >"$DIR/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
CONFIG
    DAEMON=("$BINARY" serve "$DIR/config.yml")
}

main "$@"
