#!/usr/bin/env bash
# A private image registry (Debian's docker-registry) on loopback, where workers push
# the bots they build from their authors' sources and pull them by digest.
#
#   scripts/services/registry.sh start    install docker-registry if missing, start it, wait (idempotent)
#   scripts/services/registry.sh stop     stop it
#   scripts/services/registry.sh status   is it running?
#   scripts/services/registry.sh env      `export` lines for the tests
#
# State lives in $FARM_TEST_REGISTRY_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/registry:
# data/ holds the images, config.yml, registry.pid and registry.log. Port:
# FARM_TEST_REGISTRY_PORT (5055, beside the 5000 of the package's own service). No
# authentication: it listens on 127.0.0.1 only, which the Docker engine also trusts
# without TLS (127.0.0.0/8 is an insecure registry by default).
set -euo pipefail

STATE=${FARM_TEST_STATE:-/tmp/matchfarm-test}
DIR=${FARM_TEST_REGISTRY_DIR:-$STATE/registry}
PORT=${FARM_TEST_REGISTRY_PORT:-5055}
START_TIMEOUT=${FARM_TEST_REGISTRY_START_TIMEOUT:-30}
PID_FILE=$DIR/registry.pid
LOG_FILE=$DIR/registry.log
BINARY=/usr/bin/docker-registry

log() { printf '[registry] %s\n' "$*" >&2; }
die() {
    printf '[registry] error: %s\n' "$*" >&2
    exit 1
}

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

server_pid() {
    local pid
    [ -s "$PID_FILE" ] || return 1
    pid=$(cat "$PID_FILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

answers() { curl -fsS --max-time 2 "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1; }

show_log_tail() {
    [ -s "$LOG_FILE" ] || return 0
    printf -- '--- last lines of %s\n' "$LOG_FILE" >&2
    tail -n 30 "$LOG_FILE" >&2
}

write_config() {
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
}

start() {
    install
    local pid
    mkdir -p "$DIR/data"
    if pid=$(server_pid) && answers; then
        log "already running (pid $pid) on 127.0.0.1:$PORT"
        return
    fi
    [ -z "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ] ||
        die "port $PORT is already in use: $(ss -Hltnp "sport = :$PORT" | tr -s ' ')"
    write_config
    log "starting docker-registry on 127.0.0.1:$PORT storing $DIR/data"
    local started=$SECONDS
    # A session of its own, as the other services: a Ctrl-C in the caller does not reach it.
    setsid "$BINARY" serve "$DIR/config.yml" >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    local deadline=$((SECONDS + START_TIMEOUT))
    until answers; do
        if ! server_pid >/dev/null; then
            show_log_tail
            die "docker-registry exited during start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "docker-registry did not answer on 127.0.0.1:$PORT within $START_TIMEOUT s"
        fi
        sleep 0.1
    done
    log "running on 127.0.0.1:$PORT (pid $(cat "$PID_FILE")), ready in $((SECONDS - started)) s"
}

stop() {
    local pid
    if pid=$(server_pid); then
        log "stopping docker-registry (pid $pid)"
        kill "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                kill -9 "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
    else
        log "not running"
    fi
    rm -f "$PID_FILE"
}

status() {
    local pid
    if pid=$(server_pid) && answers; then
        echo "running: docker-registry pid $pid on 127.0.0.1:$PORT"
    else
        echo "stopped"
        return 3
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) env_lines ;;
*)
    echo "usage: $0 {start|stop|status|env}" >&2
    exit 2
    ;;
esac
