# The toolchain container's program (worker/src/build/compile/mod.rs), run as
# `sh -c WRAPPER matchfarm COMPILE`: the source tar from standard input is unpacked in
# /scratch/src, the layout's compile command ($1) runs there under `sh -e` with its
# output on standard error (the build log), then /scratch/out is written as a tar on
# standard output. Exit status: 0 built, 1 the compile failed, 2 the scratch space is
# full, 3 nothing in /scratch/out.
mkdir -p /scratch/src /scratch/out /scratch/tmp /scratch/home || exit 2
tar -x -f - -C /scratch/src --no-same-owner --no-same-permissions || exit 2
cd /scratch/src || exit 2
sh -ec "$1" >&2
status=$?
# df, not du or ls: gVisor's kernel refuses the statx that coreutils' du and ls make.
usage=$(df -Pk /scratch | awk 'NR == 2 { print $3 " " $4 }')
used=${usage% *}
free=${usage#* }
echo "matchfarm: the compile exited $status; scratch space used: ${used:-?} KiB, free: ${free:-?} KiB" >&2
if [ "$status" -ne 0 ]; then
    # Unknown (the pids limit can leave no fork for df) is not full.
    if [ -n "$free" ] && [ "$free" -lt 1024 ]; then exit 2; fi
    exit 1
fi
[ -n "$(find /scratch/out -mindepth 1 -maxdepth 1 -print -quit)" ] || exit 3
tar -c -f - -C /scratch/out .
