#!/bin/bash
# write_order.sh - issue 71's checks of the write path, by hand (bench/results/issue71-pager.md):
# other people's test tools writing new files through a mount, FILE on a
# bounded tmpfs that this script mounts and unmounts itself (root).
#
#   bench/write_order.sh fsx     [SEEDS]  xfstests' fsx, 20,000 operations on a new file per seed,
#                                         both formats, plain, -A (AIO) and -U (io_uring); needs FSX=
#                                         the path of an fsx built from xfstests' ltp/fsx.c
#   bench/write_order.sh fio              fio randwrite 4 KiB, iodepth 16, libaio, --verify=crc32c,
#                                         into a new 32 MiB file on a 512 MiB tmpfs: peak use of it
#   bench/write_order.sh stressng [RUNS]  stress-ng --io-uring 2 -t 8 per run: runs with EPERM/EIO
#   bench/write_order.sh ioclass [RUNS]   stress-ng --class io --seq 1 -t 3 per run (both formats
#                                         in turn): runs with EPERM, EIO or a failed stressor
#
# H5FS: the daemon (default ./h5fs). Exit 1 when any check failed.
set -u
H5FS=${H5FS:-./h5fs}
H5FS=$(readlink -f "$H5FS")
what=${1:-}
work=$(mktemp -d /tmp/h5fs-wo.XXXXXX)
mount -t tmpfs -o size=512m tmpfs "$work" || exit 1
mnt=$work/mnt
bad=0
cleanup() { mountpoint -q "$mnt" && { timeout 30 "$H5FS" -u "$mnt" || umount -l "$mnt"; }; umount "$work"; rmdir "$work"; }
trap cleanup EXIT
mount_new() { # LIBVER: a fresh FILE with group g, mounted at $mnt (daemon's PID in $pid)
	rm -f "$work/f.h5"; mkdir -p "$mnt"
	/usr/bin/python3 -c "import h5py; h5py.File('$work/f.h5','w',libver='$1').create_group('g')"
	"$H5FS" -f "$work/f.h5" "$mnt" 2>"$work/log" & pid=$!
	for _ in $(seq 100); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	echo "mount failed"; return 1
}
unmount() { timeout 60 "$H5FS" -u "$mnt"; wait "$pid"; }
case $what in
fsx)
	[ -x "${FSX:-}" ] || { echo "FSX= must name xfstests' fsx"; exit 2; }
	for lv in earliest latest; do
		for s in ${2:-1 2 3 4 5}; do
			for mode in "" -A -U; do
				mount_new $lv || exit 1
				timeout 600 "$FSX" -q -N 20000 -S "$s" $mode -P "$work" "$mnt/g/fsxfile" >"$work/out" 2>&1
				rc=$?
				unmount
				/usr/bin/python3 -c "import h5py; h5py.File('$work/f.h5','r')['g/fsxfile'][()]" 2>/dev/null ||
					{ echo "  h5py cannot read FILE"; rc=99; }
				echo "fsx $lv seed $s ${mode:-plain}: rc=$rc $(grep -m1 -E 'BAD|error' "$work/out")"
				[ $rc = 0 ] || bad=1
			done
		done
	done ;;
fio)
	mount_new earliest || exit 1
	( while kill -0 $pid 2>/dev/null; do df -B1M --output=used "$work" | tail -1; sleep 0.5; done ) >"$work/df" &
	timeout 300 fio --verify_state_save=0 --name=rw --filename="$mnt/g/fio.dat" --size=32m --rw=randwrite --bs=4k --ioengine=libaio \
		--iodepth=16 --verify=crc32c >"$work/fio.out" 2>&1
	grep -E "err=|error" "$work/fio.out" | head -3
	unmount
	echo "fio: peak use of the 512 MiB file system $(sort -n "$work/df" | tail -1) MiB; FILE $(stat -c %s "$work/f.h5") bytes"
	grep -q "err= 0" "$work/fio.out" || bad=1 ;;
stressng)
	n=0
	for i in $(seq "${2:-16}"); do
		mount_new earliest || exit 1
		(cd "$mnt/g" && timeout 120 stress-ng --io-uring 2 -t 8 --temp-path "$mnt/g" >/dev/null 2>&1)
		unmount
		grep -q "EPERM\|EIO\|could not" "$work/log" && { n=$((n + 1)); grep -m2 "EPERM\|EIO\|could not" "$work/log"; }
	done
	echo "stress-ng --io-uring 2: $n of ${2:-16} runs with EPERM or EIO"
	[ $n = 0 ] || bad=1 ;;
ioclass)
	n=0
	for i in $(seq "${2:-20}"); do
		lv=earliest; [ $((i % 2)) = 0 ] && lv=latest
		mount_new $lv || exit 1
		(cd "$mnt/g" && timeout 600 stress-ng --class io --seq 1 -t 3 --temp-path "$mnt/g" >"$work/sng" 2>&1)
		rc=$?
		unmount
		# (stress-ng 0.15's io-uring stressor fails its IORING_OP_STATX with
		# ENOENT on any file system here, tmpfs too: not counted)
		grep "fail:" "$work/sng" | grep -v "IORING_OP_STATX), error=2" >"$work/sngfail"
		if [ -s "$work/sngfail" ] || grep -q "EPERM\|EIO\|could not" "$work/log"; then
			n=$((n + 1))
			echo "run $i ($lv): stress-ng exit $rc"
			grep -m3 "EPERM\|EIO\|could not" "$work/log"
			head -3 "$work/sngfail"
		fi
		/usr/bin/python3 -c "import h5py; h5py.File('$work/f.h5','r').visit(lambda k: None)" ||
			{ n=$((n + 1)); echo "run $i ($lv): h5py cannot open FILE"; }
	done
	echo "stress-ng --class io --seq 1: $n of ${2:-20} runs with EPERM, EIO or a failure"
	[ $n = 0 ] || bad=1 ;;
*)
	sed -n '2,18p' "$0"; exit 2 ;;
esac
exit $bad
