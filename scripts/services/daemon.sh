# Sourced by the services that are one daemon on a loopback port (s3.sh, registry.sh):
# their start, stop, status and waiting, written once. Not run by itself.
#
# The script sets NAME (its log tag), PROGRAM (what it runs, as messages name it), DIR,
# PORT, START_TIMEOUT, PID_FILE and LOG_FILE; defines install (puts the program there if
# it is missing), prepare (what starting needs, and DAEMON: the command, an array),
# answers (whether it answers on PORT) and env_lines; then sources this and calls
# `main "$@"`, which takes start, stop, status, env or install.

log() { printf '[%s] %s\n' "$NAME" "$*" >&2; }
die() {
    printf '[%s] error: %s\n' "$NAME" "$*" >&2
    exit 1
}

server_pid() {
    local pid
    [ -s "$PID_FILE" ] || return 1
    pid=$(cat "$PID_FILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

show_log_tail() {
    [ -s "$LOG_FILE" ] || return 0
    printf -- '--- last lines of %s\n' "$LOG_FILE" >&2
    tail -n 30 "$LOG_FILE" >&2
}

start() {
    install
    local pid
    mkdir -p "$DIR"
    if pid=$(server_pid) && answers; then
        log "already running (pid $pid) on 127.0.0.1:$PORT"
        return
    fi
    [ -z "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ] ||
        die "port $PORT is already in use: $(ss -Hltnp "sport = :$PORT" | tr -s ' ')"
    prepare
    log "starting $PROGRAM on 127.0.0.1:$PORT, its data in $DIR/data"
    local started=$SECONDS
    # A session of its own: not in the caller's process group, so a Ctrl-C there does
    # not reach it; `stop` (or the caller's trap) ends it by its pid.
    setsid "${DAEMON[@]}" >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    local deadline=$((SECONDS + START_TIMEOUT))
    until answers; do
        if ! server_pid >/dev/null; then
            show_log_tail
            die "$PROGRAM exited during start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail
            die "$PROGRAM did not answer on 127.0.0.1:$PORT within $START_TIMEOUT s"
        fi
        sleep 0.1
    done
    log "running on 127.0.0.1:$PORT (pid $(cat "$PID_FILE")), ready in $((SECONDS - started)) s"
}

stop() {
    local pid
    if pid=$(server_pid); then
        log "stopping $PROGRAM (pid $pid)"
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
        echo "running: $PROGRAM pid $pid on 127.0.0.1:$PORT"
    else
        echo "stopped"
        return 3
    fi
}

main() {
    case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) env_lines ;;
    install) install ;;
    *)
        echo "usage: $0 {start|stop|status|env|install}" >&2
        exit 2
        ;;
    esac
}
