#!/bin/bash
# h5fs benchmarks against h5py (run by hand, never in CI). See bench/README.md.
#
#   bench/run.sh [--h5fs PATH] [--size MIB] [--reads N] [--only LIST]
#                [--dir DIR] [--rss-cache MIB,...] [--random-cache MIB,...]
#                [--cache MIB] [--daemon-env VAR=VAL] [--perf] [--regen]
#                [--nice N] [--baseline OLD_H5FS]
#
# --baseline: an older h5fs binary (the previous release's, or a build of
# the commit before a change) that `--only first` alternates with this one.
# Every option is passed on to bench/h5fs_bench.py; this wrapper only finds
# the h5fs binary and the right Python, and makes sure nothing stays mounted
# under the scratch directory whatever happens to the Python process.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
PY=/usr/bin/python3
DIR=/var/tmp/h5fs-bench
H5FS_BIN="${H5FS:-}"
NICE=

args=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help)
		awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "$0"
		exec "$PY" "$HERE/h5fs_bench.py" --h5fs /dev/null --help ;;
	--h5fs) H5FS_BIN="$2"; shift 2 ;;
	--h5fs=*) H5FS_BIN="${1#*=}"; shift ;;
	--dir) DIR="$2"; shift 2 ;;
	--dir=*) DIR="${1#*=}"; shift ;;
	--nice) NICE="$2"; shift 2 ;;   # e.g. -10: steadier numbers on a busy machine (root)
	--nice=*) NICE="${1#*=}"; shift ;;
	*) args+=("$1"); shift ;;
	esac
done

if [ -z "$H5FS_BIN" ]; then
	for c in ./h5fs "$HERE/../h5fs" "$(command -v h5fs || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then H5FS_BIN="$c"; break; fi
	done
fi
if [ -z "$H5FS_BIN" ] || [ ! -x "$H5FS_BIN" ]; then
	echo "run.sh: no h5fs binary: build it (make h5fs) and pass --h5fs PATH or set H5FS" >&2
	exit 2
fi
if ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then
	echo "run.sh: $PY cannot import h5py/numpy (apt-get install python3-h5py)" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "run.sh: not root: the page cache cannot be dropped, 'cold' reads will be warm" >&2
fi

mkdir -p "$DIR"
MNT="$(cd "$DIR" && pwd)/mnt"
cleanup() {
	# The Python side unmounts in finally blocks; this catches a kill -9.
	if grep -q " $MNT fuse" /proc/mounts 2>/dev/null; then
		fusermount3 -u "$MNT" || fusermount3 -u -z "$MNT" || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The append floor (bench/fuse_floor.c): built when a compiler and libfuse3's
# headers are there; without it the append benchmark just has no floor line.
FLOOR="$DIR/fuse_floor"
if cc -O2 -o "$FLOOR" "$HERE/fuse_floor.c" "$HERE/floor_common.c" $(pkg-config --cflags --libs fuse3 2>/dev/null) 2>/dev/null; then
	args+=(--floor "$FLOOR")
else
	echo "run.sh: cannot build bench/fuse_floor.c (cc, libfuse3-dev): no append floor" >&2
fi

# The read floor (bench/fuse_read_floor.c), likewise.
RFLOOR="$DIR/fuse_read_floor"
if cc -O2 -o "$RFLOOR" "$HERE/fuse_read_floor.c" "$HERE/floor_common.c" $(pkg-config --cflags --libs fuse3 2>/dev/null) -lpthread 2>/dev/null; then
	args+=(--read-floor "$RFLOOR")
else
	echo "run.sh: cannot build bench/fuse_read_floor.c (cc, libfuse3-dev): no read floor" >&2
fi

# The decode floor (bench/decode_floor.c): libdeflate + unshuffle on every
# core, from memory; without it the decode benchmark is skipped.
DFLOOR="$DIR/decode_floor"
if cc -O2 -o "$DFLOOR" "$HERE/decode_floor.c" "$HERE/decode_common.c" -ldeflate -lpthread 2>/dev/null; then
	args+=(--decode-floor "$DFLOOR")
else
	echo "run.sh: cannot build bench/decode_floor.c (cc, libdeflate-dev): no decode floor" >&2
fi
# The FUSE decode floor (bench/fuse_decode_floor.c): the same decoding
# served through FUSE, for the decode benchmark's second comparison.
FDFLOOR="$DIR/fuse_decode_floor"
if cc -O2 -o "$FDFLOOR" "$HERE/fuse_decode_floor.c" "$HERE/decode_common.c" "$HERE/floor_common.c" \
	$(pkg-config --cflags --libs fuse3 2>/dev/null) -ldeflate -lpthread 2>/dev/null; then
	args+=(--fuse-decode-floor "$FDFLOOR")
else
	echo "run.sh: cannot build bench/fuse_decode_floor.c (cc, libfuse3-dev, libdeflate-dev): no FUSE decode floor" >&2
fi

run=("$PY")
[ -n "$NICE" ] && run=(nice -n "$NICE" "$PY")
"${run[@]}" "$HERE/h5fs_bench.py" --h5fs "$H5FS_BIN" --dir "$DIR" ${args[@]+"${args[@]}"}
