#!/bin/sh
# matchfarm/rabbitmq's entrypoint: writes the settings that come from the environment,
# then runs RabbitMQ in the foreground as its own user (not root), logging to stdout.
set -eu

# The first user of a new node (RabbitMQ makes it only when its database is empty);
# any address may log in with it, unlike the built-in guest, which is loopback-only.
defaults=/etc/rabbitmq/conf.d/10-matchfarm-defaults.conf
{
    echo "# written by rabbitmq-entrypoint at start"
    echo "log.console = true"
    echo "log.console.level = info"
    echo "log.file = false"
    if [ -n "${RABBITMQ_DEFAULT_USER:-}" ]; then
        : "${RABBITMQ_DEFAULT_PASS:?RABBITMQ_DEFAULT_PASS must be set with RABBITMQ_DEFAULT_USER}"
        echo "default_user = $RABBITMQ_DEFAULT_USER"
        echo "default_pass = $RABBITMQ_DEFAULT_PASS"
        echo "loopback_users = none"
    fi
} >"$defaults"

# The farm's least-privilege users (deploy/rabbitmq/users.py, mounted at USERS_SCRIPT),
# when their passwords are given: loaded as definitions at every boot. RabbitMQ then
# makes no default user, so RABBITMQ_DEFAULT_USER becomes the definitions' administrator.
USERS_SCRIPT=/usr/local/lib/matchfarm/users.py
if [ -n "${FARM_RABBITMQ_COORDINATOR_PASSWORD:-}${FARM_RABBITMQ_WORKER_PASSWORD:-}" ]; then
    if [ ! -r "$USERS_SCRIPT" ]; then
        echo "rabbitmq-entrypoint: the farm users' passwords are set: mount deploy/rabbitmq/users.py at $USERS_SCRIPT" >&2
        exit 2
    fi
    definitions=/etc/rabbitmq/definitions.json
    FARM_RABBITMQ_ADMIN_PASSWORD=${RABBITMQ_DEFAULT_PASS:-} python3 "$USERS_SCRIPT" \
        ${RABBITMQ_DEFAULT_USER:+--admin-user "$RABBITMQ_DEFAULT_USER"} >"$definitions"
    chmod 0640 "$definitions"
    chgrp rabbitmq "$definitions"
    echo "load_definitions = $definitions" >>"$defaults"
fi
unset FARM_RABBITMQ_COORDINATOR_PASSWORD FARM_RABBITMQ_WORKER_PASSWORD
chmod 0640 "$defaults"
chgrp rabbitmq "$defaults"

# A new volume is root's: the node writes its database and its Erlang cookie there.
chown rabbitmq:rabbitmq /var/lib/rabbitmq
unset RABBITMQ_DEFAULT_PASS
export HOME=/var/lib/rabbitmq
exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups /usr/lib/rabbitmq/bin/rabbitmq-server "$@"
