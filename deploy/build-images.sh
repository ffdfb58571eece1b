#!/usr/bin/env bash
# Builds the farm's local Docker images, each only when it is missing (or with --force).
# No image is ever pulled: the bases are made here (FROM scratch, and a Debian root made
# with debootstrap and `docker import`), and every build uses --pull=false on local bases.
# Run `deploy/build-images.sh --help` for the list.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGES_DIR=$REPO/deploy/images
HOSTILE_DIR=$REPO/bots/hostile
SUITE=bookworm
DEFAULT_MIRROR=http://deb.debian.org/debian
STATIC_TARGET=x86_64-unknown-linux-gnu
STATIC_DIR=$REPO/target/static/$STATIC_TARGET/release

# Hostile bots: every executable NAME.py in bots/hostile (stdio_bot.py is their library).
HOSTILE=()
for file in "$HOSTILE_DIR"/*.py; do
    if [ -x "$file" ]; then HOSTILE+=("$(basename "$file" .py)"); fi
done

ALL=(base-static base-debian
    bot-vindinium-random-py bot-botwars-random-py
    bot-vindinium-random-rs bot-botwars-random-rs)
for name in "${HOSTILE[@]}"; do ALL+=("hostile-$name"); done

usage() {
    cat <<EOF
Usage: deploy/build-images.sh [--force] [NAME ...]

Builds the matchfarm Docker images that are missing, all tagged :latest, with no
registry: NAME is one of the images below without "matchfarm/" (default: all).

  matchfarm/base-static       FROM scratch: /etc/passwd with user bot (10001), /tmp
  matchfarm/base-debian       debootstrap --variant=minbase $SUITE + python3, nodejs,
                              user bot (10001), imported with docker import (needs root)
  matchfarm/bot-*-random-py   the example Python bots on base-debian
  matchfarm/bot-*-random-rs   the example Rust bots, static (+crt-static), on base-static
  matchfarm/hostile-NAME      the misbehaving bots of bots/hostile/ (see its README):
                              ${HOSTILE[*]}

Options:
  --force    rebuild the named images (default: all) even if they exist
  -h, --help show this help

A missing base image is always built first, even when only a bot is named, and the
images built on a base that was (re)built in this run are rebuilt with it. The Debian mirror is
the one the host's apt sources use for $SUITE (override: MATCHFARM_DEBIAN_MIRROR=URL).
EOF
}

FORCE=0
SELECTED=()
while [ $# -gt 0 ]; do
    case $1 in
        --force) FORCE=1 ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
        *)
            name=${1#matchfarm/}
            name=${name%:latest}
            if [[ " ${ALL[*]} " != *" $name "* ]]; then
                echo "error: unknown image $1 (see --help)" >&2
                exit 2
            fi
            SELECTED+=("$name")
            ;;
    esac
    shift
done

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Everything temporary lives here and goes away at exit (the chroot's /proc first).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/matchfarm-images.XXXXXX")
PROC_MOUNT=
cleanup() {
    if [ -n "$PROC_MOUNT" ]; then
        umount "$PROC_MOUNT" 2>/dev/null || umount -l "$PROC_MOUNT" 2>/dev/null || true
    fi
    if grep -q " $WORK/" /proc/mounts 2>/dev/null; then
        log "warning: something is still mounted under $WORK; leaving it in place"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

docker info >/dev/null 2>&1 || die "cannot talk to the Docker daemon"

declare -A REBUILT=()
BUILT=()
SKIPPED=()

image_id() { docker image inspect --format '{{.Id}}' "matchfarm/$1:latest" 2>/dev/null || true; }

selected() {
    [ ${#SELECTED[@]} -eq 0 ] && return 0
    [[ " ${SELECTED[*]} " == *" $1 "* ]]
}

# needs_build NAME [BASE ...]: whether NAME is to be built in this run.
needs_build() {
    local name=$1 base
    shift
    if [ -z "$(image_id "$name")" ]; then
        # A missing base is built even when only its dependents were named.
        [[ $name == base-* ]] && return 0
        selected "$name" && return 0
        return 1
    fi
    # An image whose base was rebuilt in this run is rebuilt too, named or not.
    for base in "$@"; do
        [ -n "${REBUILT[$base]:-}" ] && return 0
    done
    selected "$name" && [ "$FORCE" = 1 ]
}

skip() {
    selected "$1" || return 0
    SKIPPED+=("matchfarm/$1")
    log "skipped matchfarm/$1:latest (exists)"
}

# done_building NAME OLD_ID START_SECONDS: report, and drop the image it replaced.
done_building() {
    local name=$1 old=$2 start=$3 new
    new=$(image_id "$name")
    [ -n "$new" ] || die "matchfarm/$name:latest is missing after its build"
    if [ -n "$old" ] && [ "$old" != "$new" ]; then
        docker image rm "$old" >/dev/null 2>&1 || true # still used by an older image: keep
    fi
    REBUILT[$name]=1
    BUILT+=("matchfarm/$name")
    log "built   matchfarm/$name:latest in $((SECONDS - start)) s"
}

# docker_build NAME CONTEXT [docker build args ...]: a build from a local base only.
docker_build() {
    local name=$1 context=$2 old start base
    shift 2
    start=$SECONDS
    old=$(image_id "$name")
    base=$(awk 'toupper($1) == "FROM" { print $2; exit }' "$context/Dockerfile")
    if [ "$base" != scratch ] && ! docker image inspect "$base" >/dev/null 2>&1; then
        die "base image $base of matchfarm/$name is missing (it is never pulled)"
    fi
    log "building matchfarm/$name:latest ..."
    # The legacy builder (this Docker has no buildx); --pull=false: local bases only.
    if ! DOCKER_BUILDKIT=0 docker build --pull=false --force-rm -t "matchfarm/$name:latest" \
        "$@" "$context" >"$WORK/build.log" 2>&1; then
        cat "$WORK/build.log" >&2
        die "docker build of matchfarm/$name failed"
    fi
    done_building "$name" "$old" "$start"
}

# new_context NAME FILE...: a fresh build context holding only the given files; the
# first one becomes its Dockerfile. Prints the directory.
new_context() {
    local dir=$WORK/context-$1
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$1" "$dir/Dockerfile"
    shift
    [ $# -eq 0 ] || cp -- "$@" "$dir/"
    printf '%s\n' "$dir"
}

# --- matchfarm/base-static ---------------------------------------------------------

if needs_build base-static; then
    context=$(new_context base-static "$IMAGES_DIR/base-static/Dockerfile")
    stage=$WORK/base-static-root
    mkdir -p "$stage/etc" "$stage/tmp"
    install -m 644 "$IMAGES_DIR/base-static/passwd" "$IMAGES_DIR/base-static/group" \
        "$IMAGES_DIR/base-static/hosts" "$stage/etc/"
    chmod 755 "$stage" "$stage/etc"
    chmod 1777 "$stage/tmp"
    tar --numeric-owner --owner=0 --group=0 -C "$stage" -cf "$context/rootfs.tar" etc tmp
    docker_build base-static "$context"
else
    skip base-static
fi

# --- matchfarm/base-debian ---------------------------------------------------------

# host_mirror SUITE: the first URI the host's apt sources use for SUITE (one-line
# sources.list files and deb822 .sources files), or nothing.
host_mirror() {
    local suite=$1 file
    {
        for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -r "$file" ] || continue
            awk -v suite="$suite" '
                $1 == "deb" {
                    i = 2
                    if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                    if ($(i + 1) == suite) { print $i; exit }
                }' "$file"
        done
        for file in /etc/apt/sources.list.d/*.sources; do
            [ -r "$file" ] || continue
            awk -v suite="$suite" '
                BEGIN { RS = "" }
                {
                    types = ""; uris = ""; suites = ""; enabled = 1
                    n = split($0, lines, "\n")
                    for (j = 1; j <= n; j++) {
                        line = lines[j]
                        if (line ~ /^#/) continue
                        if (line ~ /^Types:/) types = line
                        else if (line ~ /^URIs:/) uris = line
                        else if (line ~ /^Suites:/) suites = line
                        else if (line ~ /^Enabled:[ \t]*no/) enabled = 0
                    }
                    if (!enabled || types !~ /[ \t]deb([ \t]|$)/) next
                    m = split(suites, names, /[ \t]+/)
                    for (k = 2; k <= m; k++) if (names[k] == suite) {
                        split(uris, list, /[ \t]+/); print list[2]; exit
                    }
                }' "$file"
        done
    } | awk 'NR == 1 { sub(/\/+$/, ""); print }'
}

build_base_debian() {
    local start=$SECONDS old mirror security root step
    old=$(image_id base-debian)
    [ "$(id -u)" -eq 0 ] || die "matchfarm/base-debian needs root (debootstrap, chroot)"
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    fi
    mirror=${MATCHFARM_DEBIAN_MIRROR:-$(host_mirror "$SUITE")}
    if [ -z "$mirror" ]; then
        mirror=$DEFAULT_MIRROR
        log "no $SUITE mirror in the host's apt sources; using $mirror"
    fi
    security=$(host_mirror "$SUITE-security")
    log "building matchfarm/base-debian:latest from $mirror (security: ${security:-none}) ..."

    root=$WORK/root
    step=$SECONDS
    if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
        tail -n 30 "$WORK/debootstrap.log" >&2
        [ -r "$root/debootstrap/debootstrap.log" ] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
        die "debootstrap failed"
    fi
    log "  debootstrap: $((SECONDS - step)) s"

    step=$SECONDS
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" # name resolution for apt in the chroot
    cp "$IMAGES_DIR/base-debian/setup-root.sh" "$root/setup-root.sh"
    mount -t proc proc "$root/proc"
    PROC_MOUNT=$root/proc
    if ! chroot "$root" /bin/sh /setup-root.sh "$mirror" "$security" >"$WORK/setup.log" 2>&1; then
        tail -n 40 "$WORK/setup.log" >&2
        die "setting up the Debian root failed"
    fi
    umount "$root/proc"
    PROC_MOUNT=
    rm -f "$root/setup-root.sh"
    log "  python3, nodejs, user bot, clean-up: $((SECONDS - step)) s ($(du -sh "$root" | cut -f1))"

    step=$SECONDS
    tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
        docker import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change 'CMD ["/bin/bash"]' \
            --message "debootstrap --variant=minbase $SUITE $mirror; python3, nodejs" \
            - matchfarm/base-debian:latest >/dev/null
    rm -rf "$root"
    log "  docker import: $((SECONDS - step)) s"
    done_building base-debian "$old" "$start"
}

if needs_build base-debian; then
    build_base_debian
else
    skip base-debian
fi

# --- the example bots --------------------------------------------------------------

for game in vindinium botwars; do
    name=bot-$game-random-py
    if needs_build "$name" base-debian; then
        context=$(new_context "$name" "$REPO/bots/$game/Dockerfile.random-py" \
            "$REPO/bots/$game/random_bot.py")
        docker_build "$name" "$context"
    else
        skip "$name"
    fi
done

RS_BUILT=0
static_binaries() {
    [ "$RS_BUILT" = 1 ] && return
    log "building the static Rust bots (cargo, +crt-static) ..."
    (cd "$REPO" && RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked \
        --target "$STATIC_TARGET" --target-dir target/static \
        -p vindinium-random-bot -p botwars-random-bot) >"$WORK/cargo.log" 2>&1 ||
        { cat "$WORK/cargo.log" >&2; die "cargo build of the static bots failed"; }
    local bin linked
    for bin in vindinium-random-bot botwars-random-bot; do
        linked=$(ldd "$STATIC_DIR/$bin" 2>&1 || true)
        case $linked in
            *"statically linked"* | *"not a dynamic executable"*) ;;
            *) die "$bin is not static: $linked" ;;
        esac
        if command -v file >/dev/null 2>&1; then
            case $(file -b "$STATIC_DIR/$bin") in
                *static*) ;;
                *) die "$bin is not static: $(file -b "$STATIC_DIR/$bin")" ;;
            esac
        fi
    done
    RS_BUILT=1
}

for game in vindinium botwars; do
    name=bot-$game-random-rs
    bin=$game-random-bot
    if needs_build "$name" base-static; then
        static_binaries
        context=$(new_context "$name" "$REPO/bots/$game/Dockerfile.random-rs")
        # Debug information is useless in the image: strip the copy when we can.
        strip -o "$context/$bin" "$STATIC_DIR/$bin" 2>/dev/null || cp "$STATIC_DIR/$bin" "$context/$bin"
        docker_build "$name" "$context"
    else
        skip "$name"
    fi
done

# --- the hostile bots --------------------------------------------------------------

for bot in "${HOSTILE[@]}"; do
    name=hostile-$bot
    if needs_build "$name" base-debian; then
        context=$(new_context "$name" "$HOSTILE_DIR/Dockerfile" "$HOSTILE_DIR/stdio_bot.py" \
            "$HOSTILE_DIR/$bot.py")
        docker_build "$name" "$context" --build-arg "BOT=$bot"
    else
        skip "$name"
    fi
done

log ""
log "built ${#BUILT[@]}, skipped ${#SKIPPED[@]} (existing) in $SECONDS s"
