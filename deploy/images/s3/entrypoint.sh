#!/bin/sh
# matchfarm/s3's entrypoint: makes the bucket (a directory of /data), then serves /data.
set -eu
: "${S3_ACCESS_KEY:?set S3_ACCESS_KEY}" "${S3_SECRET_KEY:?set S3_SECRET_KEY}"
bucket=${S3_BUCKET:-matchfarm}
case $bucket in
    '' | *[!a-z0-9.-]*) echo "s3-entrypoint: S3_BUCKET '$bucket' is not a bucket name" >&2; exit 2 ;;
esac
mkdir -p "/data/$bucket"
# s3s-fs sets no signal handler, and as the container's process 1 it would ignore
# `docker stop`'s SIGTERM until the kill 10 s later: this shell stays process 1 and
# passes the signal on (to which s3s-fs, not process 1, dies at once).
s3s-fs --host 0.0.0.0 --port "${S3_PORT:-9000}" \
    --access-key "$S3_ACCESS_KEY" --secret-key "$S3_SECRET_KEY" /data &
server=$!
stopping=0
trap 'stopping=1; kill -TERM "$server" 2>/dev/null' TERM INT
status=0
wait "$server" || status=$?
# A trapped signal ends the first wait early: wait for the server to be gone. Stopped
# on request is a clean exit.
wait "$server" 2>/dev/null || true
[ "$stopping" = 0 ] || status=0
exit "$status"
