#!/usr/bin/env bash
# A private image registry (Debian's docker-registry) on loopback, where workers push
# the bots they build from their authors' sources and pull them by digest.
#
#   scripts/services/registry.sh start    install what is missing, start it, wait (idempotent)
#   scripts/services/registry.sh stop     stop it
#   scripts/services/registry.sh status   is it running?
#   scripts/services/registry.sh env      `export` lines for the tests
#   scripts/services/registry.sh install  install docker-registry and htpasswd if missing
#
# State lives in $FARM_TEST_REGISTRY_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/registry:
# data/ holds the images, config.yml, htpasswd, password, registry.pid and registry.log.
# Port: FARM_TEST_REGISTRY_PORT (5055, beside the 5000 of the package's own service).
# It listens on 127.0.0.1 only, which the Docker engine trusts without TLS (127.0.0.0/8
# is an insecure registry by default), but loopback is every process on the host: without
# credentials any of them could push over a bot's image or pull another author's image
# by its digest. So it requires a user, matchfarm-worker, whose password is made once per
# state directory (the file `password`, mode 600, kept across restarts) and stored in
# htpasswd as bcrypt (the registry ignores other hashes; htpasswd from apache2-utils).
# Deletes are refused (405): an image a ledger names by digest stays pullable.
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
USER_NAME=matchfarm-worker
PASSWORD_FILE=$DIR/password

# shellcheck source=scripts/services/daemon.sh
. "$(dirname "$0")/daemon.sh"

# The workers' password: made on first use (48 hex digits, 192 bits), then reused.
password() {
    if [ ! -s "$PASSWORD_FILE" ]; then
        mkdir -p "$DIR"
        (umask 077 && od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$PASSWORD_FILE.new")
        mv "$PASSWORD_FILE.new" "$PASSWORD_FILE"
    fi
    chmod 600 "$PASSWORD_FILE"
    cat "$PASSWORD_FILE"
}

env_lines() {
    printf 'export %s=%q\n' \
        FARM_TEST_REGISTRY "127.0.0.1:$PORT" \
        FARM_TEST_REGISTRY_USER "$USER_NAME" \
        FARM_TEST_REGISTRY_PASSWORD "$(password)"
}

install() {
    local missing=()
    [ -x "$BINARY" ] || missing+=(docker-registry)
    command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
    [ ${#missing[@]} -eq 0 ] && return
    [ "$(id -u)" -eq 0 ] || die "${missing[*]} missing and only root can install it"
    log "installing Debian's ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Up when /v2/ answers 200 to the workers' credentials (without them it is 401): this
# also proves the htpasswd file is the password's. The password goes to curl on its
# standard input, not its command line.
answers() {
    [ -s "$PASSWORD_FILE" ] || return 1
    local code
    code=$(printf 'user = "%s:%s"\n' "$USER_NAME" "$(cat "$PASSWORD_FILE")" |
        curl -sS -K - -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/v2/" 2>/dev/null) || return 1
    [ "$code" = 200 ]
}

prepare() {
    mkdir -p "$DIR/data"
    (umask 077 && password | htpasswd -niB "$USER_NAME" >"$DIR/htpasswd.new")
    mv "$DIR/htpasswd.new" "$DIR/htpasswd"
    cat >"$DIR/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: false
auth:
  htpasswd:
    realm: matchfarm-registry
    path: $DIR/htpasswd
http:
  addr: 127.0.0.1:$PORT
CONFIG
    DAEMON=("$BINARY" serve "$DIR/config.yml")
}

main "$@"
