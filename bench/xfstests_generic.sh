#!/bin/bash
# xfstests_generic.sh - run xfstests' generic tests against h5fs by hand
# (there is no FSTYP=fuse harness here): each test's body is evaluated with
# xfstests' common/filter and common/attr, its fsx helpers from common/rc,
# and stubs for mounting (a fresh empty h5py FILE per test, mounted at the
# root of both TEST_DIR and SCRATCH_MNT; a cycle mount is h5fs -u, mount),
# its output compared with tests/generic/NNN.out. FILE is on a 512 MiB tmpfs
# this script mounts and unmounts (root). Results: bench/results/xfstests-71-72.md.
#
#   XFSTESTS=DIR bench/xfstests_generic.sh [-l earliest|latest] NNN...
#
# DIR: an xfstests tree (git archive HEAD common src ltp tests) with the
# tools the tests run built into DIR/src (holetest, listxattr,
# rewinddir-test, min_dio_alignment; feature may be a script printing
# the page size for -s) and DIR/ltp/fsx (gcc -D_GNU_SOURCE -Isrc -Iinclude
# -DAIO -DURING ltp/fsx.c -laio -luring, config.h defining the HAVE_*_H of
# src/global.h). H5FS: the daemon (default ./h5fs). Each test is bounded
# by 300 s; prints NNN pass|FAIL|timeout, the diff in $OUT/NNN.diff
# (OUT default /tmp/h5fs-xfst), exit 1 when any failed.
set -u
H5FS=$(readlink -f "${H5FS:-./h5fs}")
LIBVER=earliest
[ "${1:-}" = -l ] && { LIBVER=$2; shift 2; }
X=${XFSTESTS:?XFSTESTS= must name an xfstests tree}
OUT=${OUT:-/tmp/h5fs-xfst}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/h5fs-xfst-fs.XXXXXX)
mount -t tmpfs -o size=512m tmpfs "$W" || exit 1
trap 'mountpoint -q "$W/mnt" && { timeout 60 "$H5FS" -u "$W/mnt" || umount -l "$W/mnt"; }; umount "$W"; rmdir "$W"' EXIT
bad=0
for t in "$@"; do
	timeout 300 env H5FS="$H5FS" X="$X" W="$W" OUT="$OUT" LIBVER="$LIBVER" T="$t" bash -c '
		here=$X; FILE=$W/f.h5; MNT=$W/mnt; t=$T
		SCRATCH_MNT=$MNT; TEST_DIR=$MNT; SCRATCH_DEV=none; TEST_DEV=none
		RESULT_DIR=$OUT; seq=$t; seqres=$OUT/$t; tmp=$OUT/tmp.$$
		FSTYP=fuse; LOAD_FACTOR=1; FSX_AVOID=""; FSX_PROG=$X/ltp/fsx; FIO_PROG=fio; AWK_PROG=awk
		XFS_IO_PROG="timeout 60 xfs_io"; ATTR_PROG=$(command -v attr)
		GETFATTR_PROG=$(command -v getfattr); SETFATTR_PROG=$(command -v setfattr); DF_PROG=df
		status=1
		mkdir -p "$MNT"; rm -f "$FILE"
		/usr/bin/python3 -c "import h5py; h5py.File(\"$FILE\", \"w\", libver=\"$LIBVER\").close()" || exit 9
		"$H5FS" -o logfile="$OUT/$t.log" "$FILE" "$MNT" || exit 9
		_test_cycle_mount() { cd /; "$H5FS" -u "$MNT" >&2; "$H5FS" -o logfile="$OUT/$t.log" "$FILE" "$MNT"; }
		_scratch_cycle_mount() { _test_cycle_mount; }
		_scratch_unmount() { cd /; "$H5FS" -u "$MNT"; }
		_scratch_mkfs() { :; }; _scratch_mount() { :; }; _scratch_sync() { sync; }
		_begin_fstest() { :; }; _register_cleanup() { :; }; _fixed_by_kernel_commit() { :; }
		_link_out_file() { :; }; _check_test_fs() { :; }; _check_dmesg() { return 0; }; _require_fio() { :; }
		_exit() { status=$1; exit $1; }; _notrun() { echo "NOTRUN: $*" >&2; exit 77; }; _fail() { echo "$*"; exit 1; }
		_hexdump() { od -Ax -t x1z "$@"; }
		_get_available_space() { df -B 1 $1 | tail -n1 | awk "{ print \$4 }"; }
		_get_total_space() { df -B 1 $1 | tail -n1 | awk "{ print \$2 }"; }
		_get_block_size() { stat -f -c %S $1; }
		cd "$X"
		. ./common/filter
		. ./common/attr
		eval "$(sed -n "/^_require_hugepage_fsx()/,/^}/p; /^_run_fsx_on_file()/,/^}/p; /^_run_fsx()/,/^}/p;
			/^_run_hugepage_fsx()/,/^}/p; /^run_fsx()/,/^}/p; /^_require_thp()/,/^}/p" common/rc)"
		_cleanup() { cd /; rm -rf $tmp.*; }     # a test may define its own
		trap "_cleanup" EXIT                     # as _begin_fstest does
		echo "QA output created by $t"
		body=$(sed -n "/^_begin_fstest/,\$p" tests/generic/$t |
			sed "1d; /^\. \.\/common/d; /^_require/{/_require_thp\|_require_hugepage_fsx/!d}")
		eval "$body"' >"$OUT/$t.got" 2>&1
	rc=$?
	mountpoint -q "$W/mnt" && { timeout 60 "$H5FS" -u "$W/mnt" || umount -l "$W/mnt"; }
	sed -i "s#$W/mnt#SCRATCH_MNT#g" "$OUT/$t.got"
	if [ $rc = 124 ]; then r=timeout; bad=1
	elif [ $rc = 77 ]; then r="not run: $(grep -m1 NOTRUN "$OUT/$t.got")"
	elif diff -u "$X/tests/generic/$t.out" "$OUT/$t.got" >"$OUT/$t.diff"; then r=pass
	else r=FAIL; bad=1; fi
	echo "$t $LIBVER: $r"
done
exit $bad
