#!/bin/sh
# Makes the compose farm's worker identities: WORKER_IDENTITIES RabbitMQ users
# (farm-worker-1, farm-worker-2, ...), each a file in IDENTITY_DIR holding its password,
# through `farm-coordinator workers add` as RabbitMQ's administrator. Each worker replica
# claims one of them (farm_worker::identity); a replica beyond them does not start. Run
# by compose's worker-identities service before the workers, at every `up`: identities
# that exist (a file and its user) are kept, a file whose user is gone (a new RabbitMQ
# volume) is made again. Run as root: the files and the claims directory become
# IDENTITY_OWNER's (the workers' user, 10000), readable by nobody else.
set -eu
: "${WORKER_IDENTITIES:?how many worker identities to make}"
dir=${IDENTITY_DIR:-/identities}
umask 077
listed=$(farm-coordinator workers list | cut -f1)
i=1
while [ "$i" -le "$WORKER_IDENTITIES" ]; do
    name=farm-worker-$i
    i=$((i + 1))
    known=no
    if printf '%s\n' "$listed" | grep -qx "$name"; then known=yes; fi
    if [ -s "$dir/$name" ] && [ "$known" = yes ]; then
        continue
    fi
    # A user without its file (the volume was removed): its password is lost, so it
    # is made again, and any claim of it goes with the old password.
    if [ "$known" = yes ]; then
        farm-coordinator workers revoke "$name" >/dev/null
    fi
    rm -rf "$dir/.claims/$name"
    farm-coordinator workers add "$name" >"$dir/.$name.new"
    mv "$dir/.$name.new" "$dir/$name"
    echo "worker identity $name made"
done
chown -R "${IDENTITY_OWNER:-10000:10000}" "$dir"
chmod 0700 "$dir"
