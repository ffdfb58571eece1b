#!/usr/bin/env bash
# A private RabbitMQ node on loopback for the tests.
#
#   scripts/services/rabbitmq.sh start        install if missing, start, wait (idempotent)
#   scripts/services/rabbitmq.sh stop         stop the node (and epmd)
#   scripts/services/rabbitmq.sh restart-app  stop_app + start_app, wait for AMQP (a broker restart)
#   scripts/services/rabbitmq.sh status       is it running?
#   scripts/services/rabbitmq.sh env          `export` lines for the tests
#
# All state (config, database, logs, enabled plugins, pid) lives in one directory:
# $FARM_TEST_RABBITMQ_DIR, by default ${FARM_TEST_STATE:-/tmp/matchfarm-test}/rabbitmq.
# Ports: FARM_TEST_RABBITMQ_AMQP_PORT (5672), FARM_TEST_RABBITMQ_MGMT_PORT (15672),
# FARM_TEST_RABBITMQ_PROMETHEUS_PORT (15692); the Erlang distribution port is AMQP + 20000.
# Every listener, epmd included, is bound to 127.0.0.1. The user farm/farm is an
# administrator with full permissions on vhost /.
#
# As root the node runs as the Debian package's `rabbitmq` user through the package's
# wrappers in /usr/sbin (so a plain `rabbitmqctl` run as root, with the variables of
# `env`, reaches it); as another user it runs as that user from /usr/lib/rabbitmq/bin.
set -euo pipefail

SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

STATE=${FARM_TEST_STATE:-/tmp/matchfarm-test}
DIR=${FARM_TEST_RABBITMQ_DIR:-$STATE/rabbitmq}
AMQP_PORT=${FARM_TEST_RABBITMQ_AMQP_PORT:-5672}
MGMT_PORT=${FARM_TEST_RABBITMQ_MGMT_PORT:-15672}
PROMETHEUS_PORT=${FARM_TEST_RABBITMQ_PROMETHEUS_PORT:-15692}
NODENAME=${FARM_TEST_RABBITMQ_NODENAME:-rabbit@localhost}
START_TIMEOUT=${FARM_TEST_RABBITMQ_START_TIMEOUT:-60}
USER_NAME=farm
USER_PASS=farm

log() { printf '[rabbitmq] %s\n' "$*" >&2; }
die() {
    printf '[rabbitmq] error: %s\n' "$*" >&2
    exit 1
}

if [ "$(id -u)" -eq 0 ]; then
    BIN=/usr/sbin
else
    BIN=/usr/lib/rabbitmq/bin
fi

# The environment that points the server and the CLI tools at our node and directory.
export RABBITMQ_NODENAME=$NODENAME
export RABBITMQ_CONFIG_FILE=$DIR/rabbitmq.conf
export RABBITMQ_ADVANCED_CONFIG_FILE=$DIR/advanced.config
export RABBITMQ_CONF_ENV_FILE=$DIR/rabbitmq-env.conf
export RABBITMQ_ENABLED_PLUGINS_FILE=$DIR/enabled_plugins
export RABBITMQ_MNESIA_BASE=$DIR/mnesia
export RABBITMQ_LOG_BASE=$DIR/log
export RABBITMQ_PID_FILE=$DIR/rabbitmq.pid
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$AMQP_PORT
export RABBITMQ_DIST_PORT=$((AMQP_PORT + 20000))
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
export RABBITMQ_CTL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
export ERL_EPMD_ADDRESS=127.0.0.1

ctl() { "$BIN/rabbitmqctl" "$@"; }
diagnostics() { "$BIN/rabbitmq-diagnostics" "$@"; }

env_lines() {
    local name
    printf 'export %s=%q\n' \
        FARM_TEST_AMQP_URL "amqp://$USER_NAME:$USER_PASS@127.0.0.1:$AMQP_PORT/%2f" \
        FARM_TEST_RABBITMQ_MGMT "http://127.0.0.1:$MGMT_PORT" \
        FARM_TEST_RABBITMQ_PROMETHEUS "http://127.0.0.1:$PROMETHEUS_PORT" \
        FARM_TEST_RABBITMQ_SCRIPT "$SCRIPT" \
        FARM_TEST_RABBITMQCTL "$BIN/rabbitmqctl" \
        FARM_TEST_STATE "$STATE" \
        FARM_TEST_RABBITMQ_DIR "$DIR" \
        FARM_TEST_RABBITMQ_AMQP_PORT "$AMQP_PORT" \
        FARM_TEST_RABBITMQ_MGMT_PORT "$MGMT_PORT" \
        FARM_TEST_RABBITMQ_PROMETHEUS_PORT "$PROMETHEUS_PORT" \
        FARM_TEST_RABBITMQ_NODENAME "$NODENAME"
    for name in $(compgen -e | grep -E '^(RABBITMQ|ERL)_' | sort); do
        printf 'export %s=%q\n' "$name" "${!name}"
    done
}

# True when something answers the AMQP protocol header on the port with a frame
# (connection.start), i.e. the broker is up and accepting clients.
amqp_answers() {
    local reply
    reply=$(timeout 3 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "AMQP\0\0\x09\x01" >&3
        head -c 1 <&3 | od -An -tx1' _ "$AMQP_PORT" 2>/dev/null) || return 1
    [ "$(echo $reply)" = 01 ]
}

port_in_use() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

node_pid() {
    local pid
    [ -s "$RABBITMQ_PID_FILE" ] || return 1
    pid=$(cat "$RABBITMQ_PID_FILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

show_log_tail() {
    local file
    for file in "$RABBITMQ_LOG_BASE"/*.log "$DIR"/startup.log; do
        [ -s "$file" ] || continue
        printf -- '--- last lines of %s\n' "$file" >&2
        tail -n 30 "$file" >&2
    done
}

install() {
    command -v "$BIN/rabbitmq-server" >/dev/null 2>&1 && return
    [ "$(id -u)" -eq 0 ] || die "rabbitmq-server is missing and only root can install it"
    log "installing rabbitmq-server (Debian package)"
    local started=$SECONDS
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
    log "installed rabbitmq-server in $((SECONDS - started)) s"
}

# The Debian package's postinst may start (and enables) a system node on 0.0.0.0:5672
# with its own epmd on 0.0.0.0:4369. This is a test machine: stop and disable it.
stop_system_service() {
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        if systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
            log "stopping and disabling the system rabbitmq-server service (systemd)"
            systemctl stop rabbitmq-server || true
        fi
        systemctl disable --quiet rabbitmq-server 2>/dev/null || true
        return
    fi
    local pid_file=/var/run/rabbitmq/pid
    if [ -s "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
        log "stopping and disabling the system rabbitmq-server service"
        service rabbitmq-server stop >&2 || true
    fi
    if [ -x /etc/init.d/rabbitmq-server ] && command -v update-rc.d >/dev/null 2>&1; then
        update-rc.d rabbitmq-server disable >/dev/null 2>&1 || true
    fi
}

# epmd started by anyone without ERL_EPMD_ADDRESS listens on every interface; end it
# if no node is registered with it, so that ours starts a loopback-only one.
kill_public_epmd() {
    local listeners
    listeners=$(ss -Hltn 'sport = :4369' 2>/dev/null | awk '{print $4}')
    [ -n "$listeners" ] || return 0
    if echo "$listeners" | grep -qvE '^(127\.0\.0\.1|\[::1\]):'; then
        if [ -z "$(epmd -names 2>/dev/null | grep '^name ')" ]; then
            log "ending an epmd that listens beyond loopback"
            epmd -kill >/dev/null 2>&1 || true
        else
            log "warning: epmd listens beyond loopback and has nodes registered: $(epmd -names | grep '^name ' | tr '\n' ' ')"
        fi
    fi
}

write_config() {
    mkdir -p "$DIR" "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE"
    cat >"$RABBITMQ_CONFIG_FILE" <<EOF
# Written by scripts/services/rabbitmq.sh: a test broker on loopback only.
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
management.tcp.ip = 127.0.0.1
management.tcp.port = $MGMT_PORT
prometheus.tcp.ip = 127.0.0.1
prometheus.tcp.port = $PROMETHEUS_PORT
# Matches can be long: 2 hours before an unacknowledged delivery closes the channel.
consumer_timeout = 7200000
# Created on the first boot of an empty database; no guest user.
default_user = $USER_NAME
default_pass = $USER_PASS
default_vhost = /
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
log.file.level = info
log.console = false
EOF
    # Sourced by the node's start script: every connection is a file descriptor, and `su`
    # leaves the node the login default of 1024 (farm-bench fleet opens thousands).
    echo 'ulimit -S -n "$(ulimit -H -n)" 2>/dev/null || true' >"$RABBITMQ_CONF_ENV_FILE"
    # What `rabbitmq-plugins enable --offline rabbitmq_management rabbitmq_prometheus`
    # writes, without starting an Erlang VM for it.
    echo '[rabbitmq_management,rabbitmq_prometheus].' >"$RABBITMQ_ENABLED_PLUGINS_FILE"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R rabbitmq:rabbitmq "$DIR"
        runuser -u rabbitmq -- test -w "$DIR" ||
            die "$DIR is not writable by the rabbitmq user (a parent directory is closed to it); set FARM_TEST_STATE"
    fi
}

# The user farm is made from the config on a new database; make sure it exists on an
# older one too (for example a directory left by an earlier version of this script).
ensure_user() {
    if curl -fsS -o /dev/null -u "$USER_NAME:$USER_PASS" "http://127.0.0.1:$MGMT_PORT/api/whoami" 2>/dev/null; then
        return
    fi
    log "creating user $USER_NAME"
    ctl -q add_user "$USER_NAME" "$USER_PASS" >/dev/null 2>&1 || ctl -q change_password "$USER_NAME" "$USER_PASS" >/dev/null
    ctl -q set_user_tags "$USER_NAME" administrator >/dev/null
    ctl -q set_permissions -p / "$USER_NAME" '.*' '.*' '.*' >/dev/null
}

wait_for_amqp() {
    local deadline=$((SECONDS + START_TIMEOUT))
    until amqp_answers; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "AMQP on 127.0.0.1:$AMQP_PORT did not answer within $START_TIMEOUT s"
        fi
        sleep 0.2
    done
}

wait_for_management() {
    local deadline=$((SECONDS + START_TIMEOUT))
    until curl -s -o /dev/null "http://127.0.0.1:$MGMT_PORT/api/overview"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "the management API on 127.0.0.1:$MGMT_PORT did not answer within $START_TIMEOUT s"
        fi
        sleep 0.2
    done
}

start() {
    install
    if node_pid >/dev/null; then
        if ! amqp_answers; then
            log "node is up but AMQP does not answer: starting the app"
            ctl -q start_app >/dev/null
            wait_for_amqp
        fi
        log "already running (pid $(node_pid)) on 127.0.0.1:$AMQP_PORT"
        return
    fi
    stop_system_service
    kill_public_epmd
    for port in "$AMQP_PORT" "$MGMT_PORT" "$PROMETHEUS_PORT" "$RABBITMQ_DIST_PORT"; do
        port_in_use "$port" && die "port $port is already in use: $(ss -Hltnp "sport = :$port" | tr -s ' ')"
    done
    write_config
    log "starting node $NODENAME (state in $DIR)"
    local started=$SECONDS
    "$BIN/rabbitmq-server" -detached >"$DIR/startup.log" 2>&1 </dev/null ||
        {
            show_log_tail
            die "rabbitmq-server -detached failed"
        }
    local deadline=$((SECONDS + START_TIMEOUT))
    until diagnostics -q ping >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "node $NODENAME did not answer a ping within $START_TIMEOUT s"
        fi
        sleep 0.5
    done
    wait_for_amqp
    wait_for_management
    ensure_user
    log "running on 127.0.0.1:$AMQP_PORT (management $MGMT_PORT, prometheus $PROMETHEUS_PORT), ready in $((SECONDS - started)) s"
}

stop() {
    local pid
    if pid=$(node_pid); then
        log "stopping node $NODENAME (pid $pid)"
        ctl -q stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || ctl -q stop >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 30))
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                log "node did not stop within 30 s: killing it"
                kill -9 "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.2
        done
    else
        log "not running"
    fi
    rm -f "$RABBITMQ_PID_FILE"
    # epmd outlives the node; end it unless another node still uses it.
    if command -v epmd >/dev/null 2>&1 && epmd -names >/dev/null 2>&1; then
        if [ -z "$(epmd -names 2>/dev/null | grep '^name ')" ]; then
            epmd -kill >/dev/null 2>&1 || true
        else
            log "epmd left running for: $(epmd -names | grep '^name ' | tr '\n' ' ')"
        fi
    fi
}

restart_app() {
    node_pid >/dev/null || die "node $NODENAME is not running (start it first)"
    local started=$SECONDS
    log "stop_app"
    ctl -q stop_app >/dev/null
    log "start_app"
    ctl -q start_app >/dev/null
    wait_for_amqp
    log "AMQP answers again after $((SECONDS - started)) s"
}

status() {
    local pid
    if pid=$(node_pid) && amqp_answers; then
        echo "running: node $NODENAME, pid $pid, amqp 127.0.0.1:$AMQP_PORT"
    elif [ -n "${pid:-}" ]; then
        echo "node $NODENAME is up (pid $pid) but AMQP on 127.0.0.1:$AMQP_PORT does not answer"
        return 1
    else
        echo "stopped"
        return 3
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
restart-app) restart_app ;;
status) status ;;
env) env_lines ;;
*)
    echo "usage: $0 {start|stop|restart-app|status|env}" >&2
    exit 2
    ;;
esac
