#!/usr/bin/env bash
# A private S3-compatible server (s3s-fs) on loopback for the tests.
#
#   scripts/services/s3.sh start    install s3s-fs if missing, start it, wait (idempotent)
#   scripts/services/s3.sh stop     stop it
#   scripts/services/s3.sh status   is it running?
#   scripts/services/s3.sh env      `export` lines for the tests
#   scripts/services/s3.sh install  install s3s-fs if missing (matchfarm/s3 holds it)
#
# State lives in $FARM_TEST_S3_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/s3:
# data/ is the served directory (each sub-directory is a bucket; `matchfarm` is made),
# s3s-fs.pid and s3s-fs.log. Port: FARM_TEST_S3_PORT (9000). Signatures are checked
# (v4) with access key farmtest and secret farmtestsecret; any region is accepted.
set -euo pipefail

S3S_FS_VERSION=0.14.1 # the newest needs a newer rustc

NAME=s3
PROGRAM=s3s-fs
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

# shellcheck source=scripts/services/daemon.sh
. "$(dirname "$0")/daemon.sh"

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

answers() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; }

prepare() {
    mkdir -p "$DIR/data/$BUCKET"
    DAEMON=("$(binary)" --host 127.0.0.1 --port "$PORT" --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" "$DIR/data")
}

main "$@"
