#!/bin/bash
# The test command (README "Testing"; .ci/run runs exactly this): install
# what is missing, build in the source tree, run the unit and integration
# tests, build/install/test/remove the Debian package, and run everything
# again under the sanitizers with the stress, race and growth tests.
#
# All build and test output goes to ci-logs/ (one log per stage, plus the
# per-test logs where automake writes them). Standard output gets one line
# per stage with the time since the start, the tail of the log of anything
# that failed, and as its last line the totals over every test program of
# every stage:
#
#     N passed, N failed, N skipped
#
# (a test program: a unit test, an integration script, the fuzz replay, a
# package step, a sanitizer/stress/race/growth run). Exit status non-zero
# on any failure. H5FS_SKIP_SANITIZERS=1 / H5FS_SKIP_PACKAGE=1 leave those
# stages out (for a quick local run).
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
logs=$src/ci-logs
mkdir -p "$logs"
# (apt.log is .ci/run's, written before this runs)
find "$logs" -mindepth 1 ! -name apt.log -exec rm -rf {} +
results=$logs/results.txt
: >"$results"
t0=$SECONDS

stage() { printf '== %02d:%02d  %s\n' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)) "$*"; }
tail_log() { # FILE [LINES]: the end of a failing log, indented
	echo "-- last lines of ${1#"$src"/}:"
	tail -n "${2:-40}" "$1" | sed 's/^/   | /'
}
# One result line per automake test program under DIR (its .trs files).
count_trs() { # DIR PREFIX
	find "$1" -name '*.trs' -newer "$logs/.started" | sort | while read -r trs; do
		r=$(sed -n 's/^:test-result: *//p' "$trs" | head -n 1)
		name=$2${trs#"$1"/}
		name=${name%.trs}
		case $r in
		PASS | XFAIL) echo "PASS $name" ;;
		SKIP) echo "SKIP $name" ;;
		*) echo "FAIL $name" ;;
		esac
	done >>"$results"
}
failing_test_logs() { # DIR: the logs of the failing programs of a make check
	find "$1" -name '*.trs' -newer "$logs/.started" | while read -r trs; do
		grep -q '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$trs" && tail_log "${trs%.trs}.log" 60
	done
}
totals() {
	local p f s
	p=$(grep -c '^PASS ' "$results")
	f=$(grep -c '^FAIL ' "$results")
	s=$(grep -c '^SKIP ' "$results")
	if [ "$f" -gt 0 ]; then
		echo "-- failed:"
		sed -n 's/^FAIL /   /p' "$results"
	fi
	echo "$p passed, $f failed, $s skipped"
	[ "$f" -eq 0 ]
}
touch "$logs/.started"

stage "dependencies (contrib/install-deps.sh)"
if ! ./contrib/install-deps.sh >"$logs/deps.log" 2>&1; then
	tail_log "$logs/deps.log"
	echo "FAIL dependencies" >>"$results"
	totals
	exit 1
fi

stage "build (autoreconf -fi && ./configure && make -j2)"
if ! { autoreconf -fi && ./configure && make -j2; } >"$logs/build.log" 2>&1; then
	tail_log "$logs/build.log"
	echo "FAIL build" >>"$results"
	totals
	exit 1
fi

stage "make check: unit tests, fuzz replay, integration tests"
make -j2 check >"$logs/make-check.log" 2>&1
count_trs "$src/tests" ""
if grep -q '^FAIL ' "$results"; then
	failing_test_logs "$src/tests"
	[ -f tests/test-suite.log ] || tail_log "$logs/make-check.log"
fi
if ! grep -q . "$results"; then
	tail_log "$logs/make-check.log"
	echo "FAIL make-check" >>"$results"
fi

if [ "${H5FS_SKIP_PACKAGE:-0}" != 1 ]; then
	stage "Debian package: build, lintian, install, fstab and example with /usr/bin/h5fs, remove"
	before=$(grep -c '^FAIL ' "$results")
	./contrib/package-test.sh "$logs/package" "$results" >"$logs/package.log" 2>&1
	if [ "$(grep -c '^FAIL ' "$results")" -gt "$before" ]; then
		grep '^FAIL package-' "$results" | while read -r _ name; do
			tail_log "$logs/package/${name#package-}.log"
		done
	fi
fi

if [ "${H5FS_SKIP_SANITIZERS:-0}" != 1 ]; then
	stage "sanitizers: ASan+UBSan and TSan make check, stress, race, corpus, growth"
	before=$(grep -c '^FAIL ' "$results")
	./tests/stress/run-sanitizers.sh build-sanitizers "$results" >"$logs/sanitizers.log" 2>&1
	if [ "$(grep -c '^FAIL ' "$results")" -gt "$before" ]; then
		# the failing programs' own logs, else the end of the stage's
		shown=0
		while read -r _ name; do
			case $name in
			"ASan+UBSan: "*) f=build-sanitizers/asan/${name#ASan+UBSan: }.log ;;
			"TSan: "*) f=build-sanitizers/tsan/${name#TSan: }.log ;;
			*) f= ;;
			esac
			if [ -n "$f" ] && [ -f "$f" ]; then
				tail_log "$src/$f" 60
				shown=1
			fi
		done < <(sed -n "$((before + 1)),\$p" <(grep '^FAIL ' "$results"))
		[ "$shown" = 1 ] || tail_log "$logs/sanitizers.log" 80
	fi
fi

stage "done"
totals
