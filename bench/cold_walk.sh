#!/bin/bash
# cold_walk.sh - one cold `find` of a fresh mount and its unmount, timed
# apart (issue 70 items 2 and 5; results/issue70-speed.md). Run by hand,
# as root (the page cache is dropped), FILE on a tmpfs you mounted:
#
#   sudo bench/cold_walk.sh ./h5fs FILE [MOUNT_OPTIONS]    # default -o ro
#   sudo bench/cold_walk.sh --floor /tmp/tree_floor N      # the FUSE floor
#
# FILE: bench/make_many.c's tree (make_many FILE 1000000); the floor
# (bench/tree_floor.c, built as bench/README.md says) serves the same
# shape of N objects. Prints find's wall time, the daemon's CPU over the
# walk, its RSS after, then `fusermount3 -u`'s time and the daemon's exit
# after it, and the load average.
set -e
if [ "$1" = --floor ]; then
	floor=$2; n=$3; what="floor $n"
else
	daemon=$1; file=$2; opts=${3:-ro}; what="$daemon -o $opts"
fi
[ -n "$2" ] && [ -n "${3:-$file}" ] || { sed -n 2,12p "$0"; exit 2; }
mnt=$(mktemp -d /tmp/cold-walk.XXXXXX)
if [ -n "$floor" ]; then
	"$floor" --synth "$n" "$mnt" & pid=$!
else
	"$daemon" -f -o "$opts" "$file" "$mnt" 2>/dev/null & pid=$!
fi
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { echo "not mounted"; kill "$pid"; exit 1; }
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
now() { date +%s.%N; }
sync; echo 3 > /proc/sys/vm/drop_caches
c0=$(cpu); t0=$(now)
count=$(find "$mnt" | wc -l)
t1=$(now); c1=$(cpu)
rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
fusermount3 -u "$mnt"
t2=$(now)
wait "$pid" || true
t3=$(now)
rmdir "$mnt"
awk -v w="$what" -v n="$count" -v f="$(echo "$t1 - $t0" | bc)" -v c="$(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)" \
    -v r="$rss" -v u="$(echo "$t2 - $t1" | bc)" -v x="$(echo "$t3 - $t2" | bc)" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%s: %d names; find cold %.2f s, daemon CPU %.2f s, RSS %d MB; fusermount3 -u %.2f s, exit after %.2f s; load %s\n", w, n, f, c, r / 1024, u, x, l }'
