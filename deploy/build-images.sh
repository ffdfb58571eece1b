#!/usr/bin/env bash
# Builds the farm's local Docker images, each only when it is missing or out of date (or
# with --force). Every image carries the label matchfarm.source, the sha256 of the inputs
# of its build (build context, Dockerfile, build args, its base's matchfarm.source; for the
# Rust bots their sources, for base-debian its setup); a differing label means a rebuild.
# No image is ever pulled: the bases are made here (FROM scratch, and a Debian root made
# with debootstrap and `docker import`), and every build uses --pull=false on local bases.
# The images are the lines of deploy/images.txt (`deploy/build-images.sh --help` lists
# them): a bot or service image is one line there, built by the generic code at the end
# of this script; only the bases have recipes of their own here.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGES_DIR=$REPO/deploy/images
IMAGES_TABLE=$REPO/deploy/images.txt
HOSTILE_DIR=$REPO/bots/hostile
SUITE=bookworm
DEFAULT_MIRROR=http://deb.debian.org/debian
STATIC_TARGET=x86_64-unknown-linux-gnu
STATIC_DIR=$REPO/target/static/$STATIC_TARGET/release
STATIC_RUSTFLAGS='-C target-feature=+crt-static'
SOURCE_LABEL=matchfarm.source
DEBIAN_VARIANT=minbase
# The image config `docker import` gives base-debian (its matchfarm.source is added).
DEBIAN_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    'ENV LANG=C.UTF-8' 'CMD ["/bin/bash"]')

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- the table: deploy/images.txt, one line per image ------------------------------

# ALL: every image, in the table's order (a base before the images on it); by NAME, its
# local base (empty for a base), Dockerfile (from the repository's root; empty for none),
# context (FILE,... beside the Dockerfile, program:NAME among them, '-', crate:DIR or
# recipe) and description.
ALL=()
declare -A BASE_OF=() DOCKERFILE_OF=() CONTEXT_OF=() ABOUT_OF=()
line_no=0
while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    read -r name role base game lang transport dockerfile context about <<<"$line"
    case $name in '' | '#'*) continue ;; esac
    where="${IMAGES_TABLE#"$REPO"/}:$line_no ($name)"
    [ -n "$about" ] || die "$where: 9 columns expected (image role base game lang transport dockerfile context description)"
    [[ $name =~ ^[a-z0-9][a-z0-9.-]*$ ]] || die "$where: not an image name"
    [ -z "${ABOUT_OF[$name]:-}" ] || die "$where: a second line for $name"
    case $role in
        base)
            # A root base (a recipe, or FROM scratch), or a toolchain on a root base.
            if [ "$base" != - ] && { [ -z "${ABOUT_OF[$base]:-}" ] || [ -n "${BASE_OF[$base]:-}" ]; }; then
                die "$where: a base's base '$base' is not a root base listed above it"
            fi
            ;;
        example | bench | hostile)
            if [ "$base" = - ] || [ -z "${ABOUT_OF[$base]:-}" ] || [ -n "${BASE_OF[$base]:-}" ]; then
                die "$where: its base '$base' is not a base listed above it"
            fi
            if [ "$game" = - ] || [ "$lang" = - ]; then die "$where: a bot image needs a game and a language"; fi
            case $transport in stdio | http | http-form | vindinium-server) ;; *) die "$where: transport '$transport' is not stdio, http, http-form or vindinium-server" ;; esac
            ;;
        service)
            if [ "$base" = - ] || [ -z "${ABOUT_OF[$base]:-}" ] || [ -n "${BASE_OF[$base]:-}" ]; then
                die "$where: its base '$base' is not a base listed above it"
            fi
            if [ "$game" != - ] || [ "$lang" != - ] || [ "$transport" != - ]; then
                die "$where: a service image has no game, language or transport ('-')"
            fi
            ;;
        *) die "$where: role '$role' is not one of base, example, bench, hostile, service" ;;
    esac
    if [ "$context" = recipe ]; then
        [ "$role" = base ] || die "$where: only a base has a recipe"
    else
        [ "$dockerfile" != - ] || die "$where: a Dockerfile is needed unless the context is 'recipe'"
    fi
    if [ "$dockerfile" != - ]; then
        [ -f "$REPO/$dockerfile" ] || die "$where: $dockerfile is missing"
        # The base the line names is the one its Dockerfile is FROM (a base: scratch).
        from=$(awk 'toupper($1) == "FROM" { print $2; exit }' "$REPO/$dockerfile")
        if [ "$base" = - ]; then want=scratch; else want=matchfarm/$base:latest; fi
        [ "$from" = "$want" ] || die "$where: $dockerfile is FROM '$from', not $want"
    fi
    ALL+=("$name")
    BASE_OF[$name]=${base#-}
    DOCKERFILE_OF[$name]=${dockerfile#-}
    CONTEXT_OF[$name]=$context
    ABOUT_OF[$name]=$about
done <"$IMAGES_TABLE"
[ ${#ALL[@]} -gt 0 ] || die "$IMAGES_TABLE lists no image"

# The hostile bot's modes: every executable NAME.py in bots/hostile (stdio_bot.py is
# their library, hostile.py the entrypoint that picks one by its argument).
HOSTILE=()
for file in "$HOSTILE_DIR"/*.py; do
    if [ -x "$file" ]; then HOSTILE+=("$(basename "$file" .py)"); fi
done

usage() {
    cat <<EOF
Usage: deploy/build-images.sh [--force] [NAME ...]
       deploy/build-images.sh --list

Builds the matchfarm Docker images that are missing or out of date, all tagged :latest,
with no registry. NAME is one of the images of deploy/images.txt (default: all), which
says for each its base, game, language, transport, Dockerfile and build context:

EOF
    local name
    for name in "${ALL[@]}"; do
        printf '  %-26s %s\n' "$name" "${ABOUT_OF[$name]}"
    done
    cat <<EOF

The modes of matchfarm/hostile (image:matchfarm/hostile MODE):
$(printf '%s\n' "${HOSTILE[*]}" | fold -s -w 84 | sed 's/^/  /; s/ *$//')

Options:
  --force    rebuild the named images (default: all) even if they are up to date
  --list     print the images' names (without matchfarm/), one a line, bases first
  -h, --help show this help

Every image has a label $SOURCE_LABEL: the sha256 of the inputs of its build (its
build context, Dockerfile and build args, and the $SOURCE_LABEL of its base; for the
Rust bots their crate sources, Cargo.toml and Cargo.lock; for base-debian its setup:
setup-root.sh, suite, mirrors, image config, not the mirror's contents). An image is
rebuilt when it is missing or its label differs from the hash of its inputs now.
A base image is checked (and built if need be) first, even when only images built on it
are named, and the images built on a base that was (re)built in this run are rebuilt
with it. The Debian base is $SUITE; its mirror is the one the host's apt sources use for
$SUITE (override: MATCHFARM_DEBIAN_MIRROR=URL).
EOF
}

FORCE=0
SELECTED=()
while [ $# -gt 0 ]; do
    case $1 in
        --force) FORCE=1 ;;
        --list) printf '%s\n' "${ALL[@]}"; exit 0 ;;
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
REPLACED=()

# What Docker has now: the id and matchfarm.source of every image that exists, by NAME.
declare -A IMAGE_ID=() IMAGE_SOURCE=()
# shellcheck disable=SC2016 # a Go template, not a shell expression
INSPECT_FORMAT='{{.Id}}|{{range $k, $v := .Config.Labels}}{{if eq $k "'$SOURCE_LABEL'"}}{{$v}}{{end}}{{end}}|{{range .RepoTags}}{{.}} {{end}}'

# load_images NAME...: (re)reads the id and matchfarm.source of the images, in one call.
load_images() {
    local refs=("${@/#/matchfarm/}") name id source tags tag
    for name; do unset "IMAGE_ID[$name]" "IMAGE_SOURCE[$name]"; done
    while IFS='|' read -r id source tags; do
        for tag in $tags; do
            case $tag in
                matchfarm/*:latest)
                    name=${tag#matchfarm/}
                    name=${name%:latest}
                    IMAGE_ID[$name]=$id
                    IMAGE_SOURCE[$name]=$source
                    ;;
            esac
        done
    done < <(docker image inspect --format "$INSPECT_FORMAT" "${refs[@]/%/:latest}" 2>/dev/null || true)
}
load_images "${ALL[@]}"

image_id() { printf '%s\n' "${IMAGE_ID[$1]:-}"; }

selected() {
    [ ${#SELECTED[@]} -eq 0 ] && return 0
    [[ " ${SELECTED[*]} " == *" $1 "* ]]
}

# wanted NAME: whether NAME is named (default: all) or is the base of an image that is.
wanted() {
    local other
    selected "$1" && return 0
    for other in "${SELECTED[@]}"; do
        [ "${BASE_OF[$other]:-}" = "$1" ] && return 0
    done
    return 1
}

# needs_build NAME SOURCE: whether NAME is to be built in this run, SOURCE being the
# matchfarm.source of its inputs now; WHY says why.
WHY=
needs_build() {
    local name=$1 source=$2 base=${BASE_OF[$1]:-}
    # An image whose base was rebuilt in this run is rebuilt too, named or not.
    if [ -n "${IMAGE_ID[$name]:-}" ] && [ -n "$base" ] && [ -n "${REBUILT[$base]:-}" ]; then
        WHY="base rebuilt"
        return 0
    fi
    wanted "$name" || return 1
    if [ -z "${IMAGE_ID[$name]:-}" ]; then
        WHY=missing
    elif [ "${IMAGE_SOURCE[$name]:-}" != "$source" ]; then
        WHY="out of date"
    elif selected "$name" && [ "$FORCE" = 1 ]; then
        WHY=forced
    else
        return 1
    fi
}

skip() {
    selected "$1" || return 0
    SKIPPED+=("matchfarm/$1")
    log "skipped matchfarm/$1:latest (up to date)"
}

# source_hash DIR FILE... [-- LINE ...]: the matchfarm.source of a build whose inputs are
# the files (paths relative to DIR: names, modes and contents) and the lines (build args,
# the base's matchfarm.source, the recipe's settings).
source_hash() {
    local dir=$1 files=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        files+=("$1")
        shift
    done
    [ $# -eq 0 ] || shift
    {
        printf '%s\n' "$@"
        (cd "$dir" && stat -c '%a %n' -- "${files[@]}" && sha256sum -- "${files[@]}")
    } | sha256sum | cut -d' ' -f1
}

# context_hash DIR [LINE ...]: the source_hash of every file of the build context DIR.
context_hash() {
    local dir=$1 files
    shift
    mapfile -t files < <(cd "$dir" && find . -type f | LC_ALL=C sort)
    source_hash "$dir" "${files[@]}" -- "$@"
}

# from_line NAME: the line standing for NAME's base in its source_hash.
from_line() {
    local base=${BASE_OF[$1]}
    printf 'FROM matchfarm/%s:latest %s\n' "$base" "${IMAGE_SOURCE[$base]:-}"
}

# done_building NAME OLD_ID START_SECONDS SOURCE: report, and drop the image it replaced.
done_building() {
    local name=$1 old=$2 start=$3 source=$4 new
    load_images "$name"
    new=$(image_id "$name")
    [ -n "$new" ] || die "matchfarm/$name:latest is missing after its build"
    [ "${IMAGE_SOURCE[$name]:-}" = "$source" ] ||
        die "matchfarm/$name:latest has $SOURCE_LABEL '${IMAGE_SOURCE[$name]:-}', not $source"
    if [ -n "$old" ] && [ "$old" != "$new" ]; then
        # Still used by an older image (a base before its children): tried again at the end.
        docker image rm "$old" >/dev/null 2>&1 || REPLACED+=("$old")
    fi
    REBUILT[$name]=1
    BUILT+=("matchfarm/$name")
    log "built   matchfarm/$name:latest in $((SECONDS - start)) s"
}

# docker_build NAME CONTEXT SOURCE [docker build args ...]: a build from a local base only,
# labelled with its matchfarm.source.
docker_build() {
    local name=$1 context=$2 source=$3 old start base
    shift 3
    start=$SECONDS
    old=$(image_id "$name")
    base=$(awk 'toupper($1) == "FROM" { print $2; exit }' "$context/Dockerfile")
    if [ "$base" != scratch ] && ! docker image inspect "$base" >/dev/null 2>&1; then
        die "base image $base of matchfarm/$name is missing (it is never pulled)"
    fi
    log "building matchfarm/$name:latest ($WHY) ..."
    # The legacy builder (this Docker has no buildx); --pull=false: local bases only.
    if ! DOCKER_BUILDKIT=0 docker build --pull=false --force-rm -t "matchfarm/$name:latest" \
        --label "$SOURCE_LABEL=$source" "$@" "$context" >"$WORK/build.log" 2>&1; then
        cat "$WORK/build.log" >&2
        die "docker build of matchfarm/$name failed"
    fi
    done_building "$name" "$old" "$start" "$source"
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

# --- the bases' recipes: recipe_NAME builds matchfarm/NAME (the table's "recipe") ------

# matchfarm/base-static. The context (Dockerfile and rootfs.tar) is made every time, to
# hash it: the tar is reproducible (sorted, numeric owner 0, mtime 0), so only its files'
# contents count.
recipe_base_static() {
    local context stage source
    context=$(new_context base-static "$REPO/${DOCKERFILE_OF[base-static]}")
    stage=$WORK/base-static-root
    mkdir -p "$stage/etc" "$stage/tmp"
    install -m 644 "$IMAGES_DIR/base-static/passwd" "$IMAGES_DIR/base-static/group" \
        "$IMAGES_DIR/base-static/hosts" "$stage/etc/"
    chmod 755 "$stage" "$stage/etc"
    chmod 1777 "$stage/tmp"
    tar --sort=name --mtime=@0 --numeric-owner --owner=0 --group=0 -C "$stage" \
        -cf "$context/rootfs.tar" etc tmp
    source=$(context_hash "$context")
    if needs_build base-static "$source"; then
        docker_build base-static "$context" "$source"
    else
        skip base-static
    fi
}

# matchfarm/base-debian.

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

# build_base_debian MIRROR SECURITY_MIRROR SOURCE
build_base_debian() {
    local mirror=$1 security=$2 source=$3 start=$SECONDS old root step change changes=()
    old=$(image_id base-debian)
    [ "$(id -u)" -eq 0 ] || die "matchfarm/base-debian needs root (debootstrap, chroot)"
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    fi
    if [ -z "${MATCHFARM_DEBIAN_MIRROR:-}" ] && [ -z "$(host_mirror "$SUITE")" ]; then
        log "no $SUITE mirror in the host's apt sources; using $mirror"
    fi
    log "building matchfarm/base-debian:latest ($WHY) from $mirror (security: ${security:-none}) ..."

    root=$WORK/root
    step=$SECONDS
    if ! debootstrap --variant="$DEBIAN_VARIANT" "$SUITE" "$root" "$mirror" \
        >"$WORK/debootstrap.log" 2>&1; then
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
    for change in "${DEBIAN_CHANGES[@]}" "LABEL $SOURCE_LABEL=$source"; do
        changes+=(--change "$change")
    done
    tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
        docker import "${changes[@]}" \
            --message "debootstrap --variant=$DEBIAN_VARIANT $SUITE $mirror; python3, nodejs" \
            - matchfarm/base-debian:latest >/dev/null
    rm -rf "$root"
    log "  docker import: $((SECONDS - step)) s"
    done_building base-debian "$old" "$start" "$source"
}

# Its inputs: setup-root.sh and the settings of the recipe (suite, variant, mirrors, image
# config); what the mirror serves today is not one (no daily rebuilds; --force for that).
recipe_base_debian() {
    local mirror security source
    mirror=${MATCHFARM_DEBIAN_MIRROR:-$(host_mirror "$SUITE")}
    mirror=${mirror:-$DEFAULT_MIRROR}
    security=$(host_mirror "$SUITE-security")
    source=$(source_hash "$IMAGES_DIR/base-debian" setup-root.sh -- \
        "debootstrap --variant=$DEBIAN_VARIANT $SUITE $mirror" "security: $security" \
        "${DEBIAN_CHANGES[@]}")
    if needs_build base-debian "$source"; then
        build_base_debian "$mirror" "$security" "$source"
    else
        skip base-debian
    fi
}

# --- the bot and service images: the table's FILE,... and crate:DIR contexts --------

# host_program NAME: the path of the host's program NAME, from PATH or ~/.cargo/bin.
host_program() {
    local cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin/$1
    if command -v "$1" >/dev/null 2>&1; then
        command -v "$1"
    elif [ -x "$cargo_bin" ]; then
        printf '%s\n' "$cargo_bin"
    else
        return 1
    fi
}

# context_files NAME: sets FILES to the files of NAME's context besides its Dockerfile
# (the table's FILE,... beside the Dockerfile, each name possibly a pattern, or
# program:NAME, the host's program NAME; '-' for none).
FILES=()
context_files() {
    local dir entry entries file matches
    dir=$(dirname "${DOCKERFILE_OF[$1]}")
    FILES=()
    [ "${CONTEXT_OF[$1]}" != - ] || return 0
    IFS=, read -r -a entries <<<"${CONTEXT_OF[$1]}"
    for entry in "${entries[@]}"; do
        if [[ $entry == program:* ]]; then
            file=$(host_program "${entry#program:}") ||
                die "matchfarm/$1 needs the program ${entry#program:} (its context in deploy/images.txt), which is neither on PATH nor in ~/.cargo/bin: install it (farm-s3: scripts/services/s3.sh install)"
            FILES+=("$file")
            continue
        fi
        # shellcheck disable=SC2206 # the entry is a pattern: expanded on purpose
        matches=("$REPO/$dir"/$entry)
        for file in "${matches[@]}"; do
            [ -f "$file" ] || die "matchfarm/$1: no file $dir/$entry (its context in deploy/images.txt)"
            FILES+=("$file")
        done
    done
}

# build_files NAME: an image whose context is its Dockerfile and the table's files.
build_files() {
    local name=$1 context source
    context_files "$name"
    context=$(new_context "$name" "$REPO/${DOCKERFILE_OF[$name]}" "${FILES[@]}")
    source=$(context_hash "$context" "$(from_line "$name")")
    if needs_build "$name" "$source"; then
        docker_build "$name" "$context" "$source"
    else
        skip "$name"
    fi
}

# crate_dir NAME: the crate (from the repository's root) of a Rust bot (crate:DIR).
crate_dir() {
    printf '%s/%s\n' "$(dirname "${DOCKERFILE_OF[$1]}")" "${CONTEXT_OF[$1]#crate:}"
}

# crate_package DIR: the package name of the crate in DIR, which is its binary's name.
crate_package() {
    local package
    package=$(awk -F'"' '/^\[/ { in_package = ($0 == "[package]") }
        in_package && /^name *=/ { print $2; exit }' "$REPO/$1/Cargo.toml" 2>/dev/null || true)
    [ -n "$package" ] || die "$1/Cargo.toml names no package"
    printf '%s\n' "$package"
}

# Every Rust bot's package is built in one cargo run, the first time one is needed.
RS_BUILT=0
static_binaries() {
    [ "$RS_BUILT" = 1 ] && return
    log "building the static Rust bots (cargo, +crt-static) ..."
    local name bin linked packages=() bins=()
    for name in "${ALL[@]}"; do
        [[ ${CONTEXT_OF[$name]} == crate:* ]] || continue
        bin=$(crate_package "$(crate_dir "$name")")
        [[ " ${bins[*]} " == *" $bin "* ]] && continue
        packages+=(-p "$bin")
        bins+=("$bin")
    done
    (cd "$REPO" && RUSTFLAGS=$STATIC_RUSTFLAGS cargo build --release --locked \
        --target "$STATIC_TARGET" --target-dir target/static "${packages[@]}") >"$WORK/cargo.log" 2>&1 ||
        { cat "$WORK/cargo.log" >&2; die "cargo build of the static bots failed"; }
    for bin in "${bins[@]}"; do
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

# rs_sources CRATE_DIR DOCKERFILE: the files (relative to the repository) a Rust bot is
# built from: its Dockerfile, its crate, the workspace's Cargo.toml and Cargo.lock.
rs_sources() {
    local file
    printf '%s\n' "$2" Cargo.toml Cargo.lock
    for file in rust-toolchain rust-toolchain.toml .cargo/config.toml; do
        [ ! -f "$REPO/$file" ] || printf '%s\n' "$file"
    done
    (cd "$REPO" && find "$1" -name target -prune -o -type f -print | LC_ALL=C sort)
}

# build_crate NAME: a Rust bot (crate:DIR), static, its stripped binary the context.
# Hashed from its sources, so that cargo only runs when an image is to be (re)built.
build_crate() {
    local name=$1 dockerfile=${DOCKERFILE_OF[$1]} crate bin files source context
    crate=$(crate_dir "$name")
    bin=$(crate_package "$crate")
    mapfile -t files < <(rs_sources "$crate" "$dockerfile")
    source=$(source_hash "$REPO" "${files[@]}" -- "$(from_line "$name")" \
        "RUSTFLAGS=$STATIC_RUSTFLAGS cargo build --release --locked --target $STATIC_TARGET" \
        "strip $bin")
    if needs_build "$name" "$source"; then
        static_binaries
        context=$(new_context "$name" "$REPO/$dockerfile")
        # Debug information is useless in the image: strip the copy when we can.
        strip -o "$context/$bin" "$STATIC_DIR/$bin" 2>/dev/null || cp "$STATIC_DIR/$bin" "$context/$bin"
        docker_build "$name" "$context" "$source"
    else
        skip "$name"
    fi
}

# --- every image, in the table's order -------------------------------------------------

for name in "${ALL[@]}"; do
    case ${CONTEXT_OF[$name]} in
        recipe)
            recipe=recipe_${name//-/_}
            declare -F "$recipe" >/dev/null || die "matchfarm/$name: no function $recipe for its recipe"
            "$recipe"
            ;;
        crate:*) build_crate "$name" ;;
        *) build_files "$name" ;;
    esac
done

# The images replaced while images built on them still existed (old bases), now free.
for old in "${REPLACED[@]}"; do
    docker image rm "$old" >/dev/null 2>&1 || true # still used by an image not rebuilt: keep
done

log ""
log "built ${#BUILT[@]}, skipped ${#SKIPPED[@]} (up to date) in $SECONDS s"
