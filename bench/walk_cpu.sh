#!/bin/bash
# walk_cpu.sh - the daemon's CPU over a cold `find` of a fresh mount, for
# several daemons and the FUSE floor alternated round by round (issue 82;
# results/issue82-walk.md). Run by hand, as root or a user who may mount,
# FILE on a tmpfs you mounted (its bytes in memory: no page cache to drop,
# so nothing else on a shared machine is disturbed):
#
#   bench/walk_cpu.sh ROUNDS FILE N OPTS DAEMON|floor ...
#   bench/walk_cpu.sh 3 /tmp/t/m200k.h5 200000 ro /tmp/h5fs.old ./h5fs floor
#
# FILE: bench/make_many.c's tree of N objects (make_many FILE N); "floor":
# bench/tree_floor.c (built as bench/README.md says, at $TREE_FLOOR or
# /tmp/tree_floor) serving the same shape of N objects. OPTS: the daemon's
# -o options. Each line: the names find listed, its wall time, the
# daemon's user+sys CPU over the walk (/proc/PID/stat: on a loaded machine
# steadier than the wall time), its RSS after, and the load average; the
# last lines the mean CPU of each.
set -e
[ $# -ge 5 ] || { sed -n 2,17p "$0"; exit 2; }
rounds=$1; file=$2; n=$3; opts=$4; shift 4
floor=${TREE_FLOOR:-/tmp/tree_floor}
tck=$(getconf CLK_TCK)
out=$(mktemp)
for r in $(seq "$rounds"); do
	for b in "$@"; do
		mnt=$(mktemp -d /tmp/walk-cpu.XXXXXX)
		if [ "$b" = floor ]; then
			"$floor" --synth "$n" "$mnt" & pid=$!
		else
			"$b" -f -o "$opts" "$file" "$mnt" 2>/dev/null & pid=$!
		fi
		for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
		mountpoint -q "$mnt" || { echo "$b: not mounted"; kill "$pid"; exit 1; }
		c0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t0=$(date +%s.%N)
		count=$(find "$mnt" | wc -l)
		t1=$(date +%s.%N); c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
		fusermount3 -u "$mnt"
		wait "$pid" || true
		rmdir "$mnt"
		awk -v r="$r" -v b="$b" -v n="$count" -v w="$(echo "$t1 - $t0" | bc)" -v c="$(echo "($c1 - $c0) / $tck" | bc -l)" \
		    -v m="$rss" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
		    'BEGIN { printf "round %d %s: %d names, find %.2f s, daemon CPU %.2f s, RSS %d MB, load %s\n", r, b, n, w, c, m / 1024, l }' |
			tee -a "$out"
	done
done
awk '{ b = $3; sub(":", "", b); c[b] += $(NF - 6); k[b]++ } END { for (b in c) printf "mean daemon CPU %s: %.2f s over %d rounds\n", b, c[b] / k[b], k[b] }' "$out"
rm -f "$out"
