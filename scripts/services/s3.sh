#!/usr/bin/env bash
# The farm's S3 server (farm-s3, deploy/images/s3/farm-s3: s3s-fs's storage, one key
# per role) on loopback for the tests.
#
#   scripts/services/s3.sh start    install farm-s3 (when cargo is here), start it, wait (idempotent)
#   scripts/services/s3.sh stop     stop it
#   scripts/services/s3.sh status   is it running?
#   scripts/services/s3.sh env      `export` lines for the tests
#   scripts/services/s3.sh install  build and install farm-s3 into ~/.cargo/bin (matchfarm/s3 holds it)
#
# State lives in $FARM_TEST_S3_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/s3:
# data/ is the served directory (each sub-directory is a bucket; `matchfarm` is made),
# farm-s3.pid and farm-s3.log. Port: FARM_TEST_S3_PORT (9000). Signatures are checked
# (v4), any region is accepted, and each key has a role: farmtest/farmtestsecret is the
# admin (everything; FARM_TEST_S3_ACCESS_KEY and _SECRET_KEY, what the tests' farms
# use), and FARM_TEST_S3_COORDINATOR_* and FARM_TEST_S3_WORKER_* are the coordinator's
# and the workers' keys, which may do only what those parts do.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
CRATE=$REPO/deploy/images/s3/farm-s3

NAME=s3
PROGRAM=farm-s3
STATE=${FARM_TEST_STATE:-/tmp/matchfarm-test}
DIR=${FARM_TEST_S3_DIR:-$STATE/s3}
PORT=${FARM_TEST_S3_PORT:-9000}
BUCKET=matchfarm
ACCESS_KEY=farmtest
SECRET_KEY=farmtestsecret
COORDINATOR_ACCESS_KEY=farmtest-coordinator
COORDINATOR_SECRET_KEY=farmtest-coordinator-secret
WORKER_ACCESS_KEY=farmtest-worker
WORKER_SECRET_KEY=farmtest-worker-secret
REGION=us-east-1
START_TIMEOUT=${FARM_TEST_S3_START_TIMEOUT:-30}
PID_FILE=$DIR/farm-s3.pid
LOG_FILE=$DIR/farm-s3.log

# shellcheck source=scripts/services/daemon.sh
. "$(dirname "$0")/daemon.sh"

env_lines() {
    printf 'export %s=%q\n' \
        FARM_TEST_S3_ENDPOINT "http://127.0.0.1:$PORT" \
        FARM_TEST_S3_BUCKET "$BUCKET" \
        FARM_TEST_S3_ACCESS_KEY "$ACCESS_KEY" \
        FARM_TEST_S3_SECRET_KEY "$SECRET_KEY" \
        FARM_TEST_S3_COORDINATOR_ACCESS_KEY "$COORDINATOR_ACCESS_KEY" \
        FARM_TEST_S3_COORDINATOR_SECRET_KEY "$COORDINATOR_SECRET_KEY" \
        FARM_TEST_S3_WORKER_ACCESS_KEY "$WORKER_ACCESS_KEY" \
        FARM_TEST_S3_WORKER_SECRET_KEY "$WORKER_SECRET_KEY" \
        FARM_TEST_S3_REGION "$REGION" \
        FARM_TEST_S3_DATA_DIR "$DIR/data"
}

binary() {
    local cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin/farm-s3
    if command -v farm-s3 >/dev/null 2>&1; then
        command -v farm-s3
    elif [ -x "$cargo_bin" ]; then
        echo "$cargo_bin"
    else
        return 1
    fi
}

# cargo install --path rebuilds what changed (its build stays in target/farm-s3), so the
# installed server is always the repository's; without cargo, an installed one is used.
install() {
    if ! command -v cargo >/dev/null 2>&1; then
        binary >/dev/null || die "farm-s3 is missing and so is cargo to install it"
        return
    fi
    log "installing farm-s3 with cargo install --path (about 2 minutes the first time)"
    local started=$SECONDS
    cargo install --path "$CRATE" --locked --target-dir "$REPO/target/farm-s3" --quiet
    log "installed farm-s3 in $((SECONDS - started)) s"
    binary >/dev/null || die "cargo install succeeded but farm-s3 is neither on PATH nor in ~/.cargo/bin"
}

answers() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; }

# The keys go to farm-s3 in its environment: a command line is visible to every user.
prepare() {
    mkdir -p "$DIR/data"
    export S3_ADMIN_ACCESS_KEY=$ACCESS_KEY S3_ADMIN_SECRET_KEY=$SECRET_KEY \
        S3_COORDINATOR_ACCESS_KEY=$COORDINATOR_ACCESS_KEY S3_COORDINATOR_SECRET_KEY=$COORDINATOR_SECRET_KEY \
        S3_WORKER_ACCESS_KEY=$WORKER_ACCESS_KEY S3_WORKER_SECRET_KEY=$WORKER_SECRET_KEY
    DAEMON=("$(binary)" --host 127.0.0.1 --port "$PORT" --bucket "$BUCKET" "$DIR/data")
}

main "$@"
