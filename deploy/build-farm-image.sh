#!/usr/bin/env bash
# Builds matchfarm/farm:latest (deploy/Dockerfile: farm-coordinator, farm-worker and a CA
# bundle) with no registry, only when it is missing or out of date (or with --force).
#
# deploy/Dockerfile builds FROM two build arguments, BUILDER and BASE. Public images
# cannot be pulled here, so this script makes the builder locally, in two images:
#
#   matchfarm/rust-toolchain  matchfarm/base-debian + gcc, libc6-dev, ca-certificates
#                             (apt-get inside the build: the Debian mirror is reachable
#                             from build containers) + the host's Rust toolchain (rustc,
#                             cargo, the std of x86_64-unknown-linux-gnu, from
#                             `rustc --print sysroot`; no docs, no rustup)
#   matchfarm/farm-builder    matchfarm/rust-toolchain + the crates of Cargo.lock
#                             (`cargo vendor` on the host) and a $CARGO_HOME/config.toml
#                             that makes cargo use them offline
#
# then builds deploy/Dockerfile with the repository as context (.dockerignore keeps
# target/ out), BUILDER=matchfarm/farm-builder:latest, BASE=matchfarm/base-debian:latest.
# base-debian itself comes from deploy/build-images.sh (run here; it skips it when up
# to date).
#
# Like build-images.sh, every image carries the label matchfarm.source, the sha256 of
# the inputs of its build; an image whose label matches is not built again:
#   rust-toolchain  its Dockerfile, `rustc -vV`, `cargo -V`, base-debian's label
#   farm-builder    its Dockerfile, Cargo.lock, rust-toolchain's label
#   farm            deploy/Dockerfile, .dockerignore, Cargo.toml, Cargo.lock, every
#                   member's Cargo.toml, proto/engine/runtime/worker/coordinator/supervisor src/, maps/,
#                   the builder's and the base's labels
# Inside a farm build, the dependencies' layer is cached by Docker as long as the
# manifests and Cargo.lock are unchanged (see deploy/Dockerfile).
#
# With --binaries DIR it compiles nothing: the image is deploy/Dockerfile's runtime stage
# around farm-coordinator and farm-worker already built in DIR (stripped of debug info)
# and the static supervisor of scripts/build-supervisor. scripts/test uses it with
# target/debug, the binaries its own build just made (compiling the workspace a second
# time inside Docker took most of a CI run's quarter hour); its label is the sha256 of
# those binaries and of that stage.
#
# Usage: deploy/build-farm-image.sh [--force] [--binaries DIR]
#   --force          rebuild matchfarm/farm even when it is up to date
#   --binaries DIR   take the binaries from DIR instead of building them in Docker
# Environment: FARM_IMAGE (default matchfarm/farm:latest) names the result.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOURCE_LABEL=matchfarm.source
FARM_IMAGE=${FARM_IMAGE:-matchfarm/farm:latest}
BASE_IMAGE=matchfarm/base-debian:latest
TOOLCHAIN_IMAGE=matchfarm/rust-toolchain:latest
BUILDER_IMAGE=matchfarm/farm-builder:latest
TARGET_TRIPLE=x86_64-unknown-linux-gnu
# The workspace members (their manifests are inputs; see deploy/Dockerfile).
MEMBERS=(proto engine runtime worker coordinator bench supervisor fuzz testkit bots/vindinium/random-rs
    bots/botwars/random-rs bots/maze/explorer-rs bots/bench/echo-rs)

FORCE=0
BINARIES=
while [ $# -gt 0 ]; do
    case $1 in
        --force) FORCE=1 ;;
        --binaries)
            [ $# -ge 2 ] || { echo "error: --binaries needs a directory" >&2; exit 2; }
            BINARIES=$2
            shift
            ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/matchfarm-farm-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

docker info >/dev/null 2>&1 || die "cannot talk to the Docker daemon"
START=$SECONDS

label_of() {
    docker image inspect --format "{{ index .Config.Labels \"$SOURCE_LABEL\" }}" "$1" 2>/dev/null || true
}

# hash_stdin: sha256 of stdin.
hash_stdin() { sha256sum | cut -d' ' -f1; }

# files_hash DIR FILE...: names, modes and contents of the files (relative to DIR).
files_hash() {
    local dir=$1
    shift
    (cd "$dir" && stat -c '%a %n' -- "$@" && sha256sum -- "$@") | hash_stdin
}

# build IMAGE SOURCE CONTEXT [docker build args...]: the legacy builder, local bases only.
build() {
    local image=$1 source=$2 context=$3 start=$SECONDS old
    shift 3
    old=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
    log "building $image ..."
    if ! DOCKER_BUILDKIT=0 docker build --pull=false --force-rm -t "$image" \
        --label "$SOURCE_LABEL=$source" "$@" "$context" >"$WORK/build.log" 2>&1; then
        tail -n 60 "$WORK/build.log" >&2
        die "docker build of $image failed"
    fi
    [ "$(label_of "$image")" = "$source" ] || die "$image lacks its $SOURCE_LABEL after the build"
    local new
    new=$(docker image inspect --format '{{.Id}}' "$image")
    if [ -n "$old" ] && [ "$old" != "$new" ]; then
        docker image rm "$old" >/dev/null 2>&1 || true # still a parent of something: keep
    fi
    log "built   $image in $((SECONDS - start)) s"
}

# --- the runtime base (and the builder's): matchfarm/base-debian -----------------------

"$REPO/deploy/build-images.sh" base-debian
base_source=$(label_of "$BASE_IMAGE")
[ -n "$base_source" ] || die "$BASE_IMAGE is missing after deploy/build-images.sh"

# --- with --binaries: the runtime stage around binaries built already ---------------------

if [ -n "$BINARIES" ]; then
    context=$WORK/prebuilt
    mkdir -p "$context/out/bin" "$context/out/data"
    for binary in farm-coordinator farm-worker; do
        [ -x "$BINARIES/$binary" ] || die "$BINARIES/$binary is missing: build it first (cargo build)"
        # Debug info is most of a debug build's size; the image needs none of it.
        strip --strip-debug -o "$context/out/bin/$binary" "$BINARIES/$binary" 2>/dev/null ||
            cp "$BINARIES/$binary" "$context/out/bin/$binary"
    done
    supervisor=$("$REPO/scripts/build-supervisor") || die "scripts/build-supervisor failed"
    cp "$supervisor" "$context/out/bin/farm-supervisor"
    [ -f /etc/ssl/certs/ca-certificates.crt ] || die "/etc/ssl/certs/ca-certificates.crt is missing (apt-get install ca-certificates)"
    cp /etc/ssl/certs/ca-certificates.crt "$context/out/"
    # deploy/Dockerfile's runtime stage, its `builder` stage replaced by these files.
    {
        printf 'ARG BASE\nFROM scratch AS builder\nCOPY out/ /out/\n'
        sed -n '/^FROM \${BASE}$/,$p' "$REPO/deploy/Dockerfile"
    } >"$context/Dockerfile"
    grep -q '^FROM ${BASE}$' "$context/Dockerfile" || die "deploy/Dockerfile has no 'FROM \${BASE}' runtime stage"
    prebuilt_source=$({
        printf '%s\n' "FROM $BASE_IMAGE $base_source"
        files_hash "$context" Dockerfile out/bin/farm-coordinator out/bin/farm-worker out/bin/farm-supervisor
    } | hash_stdin)
    if [ "$FORCE" = 1 ] || [ "$(label_of "$FARM_IMAGE")" != "$prebuilt_source" ]; then
        build "$FARM_IMAGE" "$prebuilt_source" "$context" --build-arg "BASE=$BASE_IMAGE"
    else
        log "skipped $FARM_IMAGE (up to date)"
    fi
    log "$FARM_IMAGE ready in $((SECONDS - START)) s (from $BINARIES)"
    exit 0
fi

# --- matchfarm/rust-toolchain ----------------------------------------------------------

command -v rustc >/dev/null 2>&1 && command -v cargo >/dev/null 2>&1 ||
    die "rustc and cargo are needed on the host (their toolchain goes into the builder)"
sysroot=$(rustc --print sysroot)
[ -d "$sysroot/lib/rustlib/$TARGET_TRIPLE/lib" ] || die "no $TARGET_TRIPLE std in $sysroot"

toolchain_dockerfile=$(cat <<EOF
FROM $BASE_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        gcc libc6-dev ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
COPY rust/ /usr/local/rust/
ENV PATH=/usr/local/rust/bin:/usr/local/cargo/bin:\$PATH CARGO_HOME=/usr/local/cargo
RUN rustc -vV && cargo -V && cc --version
EOF
)
toolchain_source=$({
    printf '%s\n' "$toolchain_dockerfile" "FROM $BASE_IMAGE $base_source"
    rustc -vV
    cargo -V
} | hash_stdin)
toolchain_rebuilt=0
if [ "$(label_of "$TOOLCHAIN_IMAGE")" != "$toolchain_source" ]; then
    context=$WORK/toolchain
    mkdir -p "$context/rust/bin" "$context/rust/lib/rustlib"
    printf '%s\n' "$toolchain_dockerfile" >"$context/Dockerfile"
    # Hard links when /tmp shares the toolchain's file system (no copy), else a copy.
    link() { cp -al "$@" 2>/dev/null || cp -a "$@"; }
    link "$sysroot/bin/rustc" "$sysroot/bin/cargo" "$context/rust/bin/"
    for lib in "$sysroot"/lib/*.so*; do link "$lib" "$context/rust/lib/"; done
    link "$sysroot/lib/rustlib/$TARGET_TRIPLE" "$context/rust/lib/rustlib/"
    build "$TOOLCHAIN_IMAGE" "$toolchain_source" "$context"
    toolchain_rebuilt=1
else
    log "skipped $TOOLCHAIN_IMAGE (up to date)"
fi

# --- matchfarm/farm-builder ------------------------------------------------------------

builder_dockerfile=$(cat <<EOF
FROM $TOOLCHAIN_IMAGE
COPY vendor/ /usr/local/cargo/vendor/
COPY config.toml /usr/local/cargo/config.toml
EOF
)
builder_config=$(cat <<'EOF'
# The crates of the farm's Cargo.lock, vendored by deploy/build-farm-image.sh: no network.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "/usr/local/cargo/vendor"

[net]
offline = true
EOF
)
builder_source=$({
    printf '%s\n' "$builder_dockerfile" "$builder_config" "FROM $TOOLCHAIN_IMAGE $toolchain_source"
    sha256sum <"$REPO/Cargo.lock"
} | hash_stdin)
if [ "$toolchain_rebuilt" = 1 ] || [ "$(label_of "$BUILDER_IMAGE")" != "$builder_source" ]; then
    context=$WORK/builder
    mkdir -p "$context"
    printf '%s\n' "$builder_dockerfile" >"$context/Dockerfile"
    printf '%s\n' "$builder_config" >"$context/config.toml"
    step=$SECONDS
    # From the host's cargo cache when it has them, else from crates.io.
    if ! (cd "$REPO" && cargo vendor --locked --quiet "$context/vendor") >"$WORK/vendor.log" 2>&1; then
        cat "$WORK/vendor.log" >&2
        die "cargo vendor failed"
    fi
    log "  cargo vendor: $((SECONDS - step)) s ($(du -sh "$context/vendor" | cut -f1))"
    build "$BUILDER_IMAGE" "$builder_source" "$context"
    builder_rebuilt=1
else
    builder_rebuilt=0
    log "skipped $BUILDER_IMAGE (up to date)"
fi

# --- matchfarm/farm --------------------------------------------------------------------

build_args=(--build-arg "BUILDER=$BUILDER_IMAGE" --build-arg "BASE=$BASE_IMAGE")
mapfile -t inputs < <(
    cd "$REPO"
    printf '%s\n' deploy/Dockerfile .dockerignore Cargo.toml Cargo.lock
    for member in "${MEMBERS[@]}"; do printf '%s\n' "$member/Cargo.toml"; done
    printf '%s\n' coordinator/build.rs
    find proto/src engine/src runtime/src worker/src coordinator/src supervisor/src coordinator/web maps -type f | LC_ALL=C sort
)
farm_source=$({
    printf '%s\n' "${build_args[@]}" "FROM $BUILDER_IMAGE $builder_source" "FROM $BASE_IMAGE $base_source"
    files_hash "$REPO" "${inputs[@]}"
} | hash_stdin)
if [ "$FORCE" = 1 ] || [ "$builder_rebuilt" = 1 ] || [ "$(label_of "$FARM_IMAGE")" != "$farm_source" ]; then
    build "$FARM_IMAGE" "$farm_source" "$REPO" -f "$REPO/deploy/Dockerfile" "${build_args[@]}"
    # The builder stage's intermediate images are kept: they are the layer cache of
    # the next build (the dependencies' layer above all).
else
    log "skipped $FARM_IMAGE (up to date)"
fi
log "$FARM_IMAGE ready in $((SECONDS - START)) s"
