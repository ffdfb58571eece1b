#!/bin/sh
# matchfarm/s3's entrypoint: serves /data with farm-s3, which reads the roles' keys from
# this environment (never from its command line) and makes the bucket.
set -eu
: "${S3_COORDINATOR_ACCESS_KEY:?set S3_COORDINATOR_ACCESS_KEY}" "${S3_COORDINATOR_SECRET_KEY:?set S3_COORDINATOR_SECRET_KEY}"
: "${S3_WORKER_ACCESS_KEY:?set S3_WORKER_ACCESS_KEY}" "${S3_WORKER_SECRET_KEY:?set S3_WORKER_SECRET_KEY}"
# This shell stays the container's process 1 and passes `docker stop`'s SIGTERM on:
# farm-s3 then finishes the requests in flight (at most 5 s) and exits, and a stop on
# request is a clean exit whatever its status.
farm-s3 --host 0.0.0.0 --port "${S3_PORT:-9000}" --bucket "${S3_BUCKET:-matchfarm}" /data &
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
