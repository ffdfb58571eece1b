#!/usr/bin/env bash
# A private S3-compatible server (s3s-fs) on loopback for the tests.
#
#   scripts/services/s3.sh start    install s3s-fs if missing, start it, wait (idempotent)
#   scripts/services/s3.sh stop     stop it
#   scripts/services/s3.sh status   is it running?
#   scripts/services/s3.sh env      `export` lines for the tests
#
# State lives in $FARM_TEST_S3_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/s3:
# data/ is the served directory (each sub-directory is a bucket; `matchfarm` is made),
# s3s-fs.pid and s3s-fs.log. Port: FARM_TEST_S3_PORT (9000). Signatures are checked
# (v4) with access key farmtest and secret farmtestsecret; any region is accepted.
set -euo pipefail

S3S_FS_VERSION=0.14.1 # the newest needs a newer rustc

STATE=${FARM_TEST_STATE:-/tmp/matchfarm-test}
DIR=${FARM_TEST_S3_DIR:-$STATE/s3}
PORT=${FARM_TEST_S3_PORT:-9000}
BUCKET=matchfarm
ACCESS_KEY=farmtest
SECRET_KEY=farmtestsecret
REGION=us-east-1
START_TIMEOUT=${FARM_TEST_S3_START_TIMEOUT:-30}
PID_FILE=$DIR/s3s-fs.pid
LOG_FILE=$DIR/s3s-fs.log

log() { printf '[s3] %s\n' "$*" >&2; }
die() {
    printf '[s3] error: %s\n' "$*" >&2
    exit 1
}

env_lines() {
    printf 'export %s=%q\n' \
        FARM_TEST_S3_ENDPOINT "http://127.0.0.1:$PORT" \
        FARM_TEST_S3_BUCKET "$BUCKET" \
        FARM_TEST_S3_ACCESS_KEY "$ACCESS_KEY" \
        FARM_TEST_S3_SECRET_KEY "$SECRET_KEY" \
        FARM_TEST_S3_REGION "$REGION" \
        FARM_TEST_S3_DATA_DIR "$DIR/data"
}

binary() {
    local cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs
    if command -v s3s-fs >/dev/null 2>&1; then
        command -v s3s-fs
    elif [ -x "$cargo_bin" ]; then
        echo "$cargo_bin"
    else
        return 1
    fi
}

install() {
    binary >/dev/null && return
    command -v cargo >/dev/null 2>&1 || die "s3s-fs is missing and so is cargo to install it"
    log "installing s3s-fs $S3S_FS_VERSION with cargo install (about 2 minutes)"
    local started=$SECONDS
    cargo install "s3s-fs@$S3S_FS_VERSION" --features binary --locked --quiet
    log "installed s3s-fs in $((SECONDS - started)) s"
    binary >/dev/null || die "cargo install succeeded but s3s-fs is neither on PATH nor in ~/.cargo/bin"
}

server_pid() {
    local pid
    [ -s "$PID_FILE" ] || return 1
    pid=$(cat "$PID_FILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

port_answers() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; }

show_log_tail() {
    [ -s "$LOG_FILE" ] || return 0
    printf -- '--- last lines of %s\n' "$LOG_FILE" >&2
    tail -n 30 "$LOG_FILE" >&2
}

start() {
    install
    local pid
    mkdir -p "$DIR/data/$BUCKET"
    if pid=$(server_pid) && port_answers; then
        log "already running (pid $pid) on 127.0.0.1:$PORT"
        return
    fi
    [ -z "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ] ||
        die "port $PORT is already in use: $(ss -Hltnp "sport = :$PORT" | tr -s ' ')"
    log "starting s3s-fs on 127.0.0.1:$PORT serving $DIR/data"
    local started=$SECONDS
    # A session of its own: not in the caller's process group, so a Ctrl-C there does
    # not reach it; `stop` (or the caller's trap) ends it by its pid.
    setsid "$(binary)" --host 127.0.0.1 --port "$PORT" \
        --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" \
        "$DIR/data" >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    local deadline=$((SECONDS + START_TIMEOUT))
    until port_answers; do
        if ! server_pid >/dev/null; then
            show_log_tail
            die "s3s-fs exited during start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "s3s-fs did not accept connections on 127.0.0.1:$PORT within $START_TIMEOUT s"
        fi
        sleep 0.1
    done
    log "running on 127.0.0.1:$PORT (pid $(cat "$PID_FILE")), ready in $((SECONDS - started)) s"
}

stop() {
    local pid
    if pid=$(server_pid); then
        log "stopping s3s-fs (pid $pid)"
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
    if pid=$(server_pid) && port_answers; then
        echo "running: s3s-fs pid $pid on 127.0.0.1:$PORT"
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
