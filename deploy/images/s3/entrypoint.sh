#!/bin/sh
# matchfarm/s3's entrypoint: makes the bucket (a directory of /data), then serves /data.
set -eu
: "${S3_ACCESS_KEY:?set S3_ACCESS_KEY}" "${S3_SECRET_KEY:?set S3_SECRET_KEY}"
bucket=${S3_BUCKET:-matchfarm}
case $bucket in
    '' | *[!a-z0-9.-]*) echo "s3-entrypoint: S3_BUCKET '$bucket' is not a bucket name" >&2; exit 2 ;;
esac
mkdir -p "/data/$bucket"
exec s3s-fs --host 0.0.0.0 --port "${S3_PORT:-9000}" \
    --access-key "$S3_ACCESS_KEY" --secret-key "$S3_SECRET_KEY" /data
