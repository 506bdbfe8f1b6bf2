#!/bin/bash
# The test command (README "Testing"; .ci/run runs exactly this): install
# what is missing, build in the source tree, run the unit and integration
# tests, build/install/test/remove the Debian package, and run everything
# again under the sanitizers with the stress, race and growth tests.
#
# The stages (CI's bound: 30 minutes in all on a 2-core machine, about 30
# before issue 62 item 5; tests/README "CI stages and their time" has the
# measurements, per stage and per test, and what each change keeps):
#
#   dependencies, build   install-deps.sh, autoreconf, configure,
#                         make -j2 (about 1 min)
#   make check            make -j3 check: the integration tests the
#                         sanitizer stage does not run in full (Makefile.am
#                         CI_PLAIN_TESTS: the fault shim's, the corpus
#                         sweeps, the crash enumerations, the remote
#                         details); every test, unit tests and fuzz replay
#                         too, when the sanitizer stage is left out
#   Debian package        contrib/package-test.sh (about 1 min)
#   sanitizers            tests/stress/run-sanitizers.sh: ASan+UBSan build,
#                         make check of ASAN_TESTS (the crash enumerations
#                         with H5FS_CRASH_STATES=small: 56 s of CPU with
#                         test_append.py, was 271), stress, race and corpus
#                         under ASan; plain build: growth.py, append_kill.py
#                         (the random kill -9 loop of appends, 8 s of CPU);
#                         TSan build, make check of TSAN_TESTS, stress and
#                         race under TSan
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
# on any failure. A make check that dies (a full disk, a killed make, a
# test program that does not build) or runs no test is a failure, and so
# is a run that records no result at all: "0 passed, 1 failed, ..." then,
# never "0 passed, 0 failed". H5FS_SKIP_SANITIZERS=1 / H5FS_SKIP_PACKAGE=1
# leave those stages out (for a quick local run).
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
# A FAIL line that cannot be written (a full disk) still counts: the
# names are kept here too.
unrecorded=()
fail_result() { # NAME: one failed program, recorded even when RESULTS cannot be
	echo "FAIL $1" >>"$results" 2>/dev/null || unrecorded+=("$1")
}
nfail() { # the FAIL lines in RESULTS so far
	local n
	n=$(grep -c '^FAIL ' "$results" 2>/dev/null)
	echo "${n:-0}"
}
totals() {
	local p f s
	p=$(grep -c '^PASS ' "$results" 2>/dev/null)
	f=$(nfail)
	s=$(grep -c '^SKIP ' "$results" 2>/dev/null)
	p=${p:-0} f=${f:-0} s=${s:-0}
	f=$((f + ${#unrecorded[@]}))
	if [ $((p + f)) -eq 0 ]; then
		# nothing ran (or nothing could be recorded): that is a failure,
		# never "0 passed, 0 failed"
		unrecorded+=("no test ran (or no result could be recorded)")
		f=1
	fi
	if [ "$f" -gt 0 ]; then
		echo "-- failed:"
		sed -n 's/^FAIL /   /p' "$results" 2>/dev/null
		[ ${#unrecorded[@]} = 0 ] || printf '   %s\n' "${unrecorded[@]}"
	fi
	echo "$p passed, $f failed, $s skipped"
	[ "$f" -eq 0 ]
}
touch "$logs/.started"

stage "dependencies (contrib/install-deps.sh)"
if ! ./contrib/install-deps.sh >"$logs/deps.log" 2>&1; then
	tail_log "$logs/deps.log"
	fail_result dependencies
	totals
	exit 1
fi

stage "build (autoreconf -fi && ./configure && make -j2)"
if ! { autoreconf -fi && ./configure && make -j2; } >"$logs/build.log" 2>&1; then
	tail_log "$logs/build.log"
	fail_result build
	totals
	exit 1
fi

stage "make check: the tests the sanitizer stage does not run in full (Makefile.am CI_PLAIN_TESTS)"
before=$(nfail)
rc=0
# three tests at a time on two cores: they wait on mounts, servers and
# the kernel about half their time (740 s of CPU in 646 s of wall time
# at -j2 on an idle machine); H5FS_CHECK_JOBS changes it
# The unit tests, the fuzz replay and most integration tests run (and
# are built) in the sanitizer stage, under ASan+UBSan or TSan: here only
# when that stage is left out (Makefile.am CI_PLAIN_TESTS)
plain_tests=()
[ "${H5FS_SKIP_SANITIZERS:-0}" = 1 ] || plain_tests=('TESTS=$(CI_PLAIN_TESTS)' 'check_PROGRAMS=$(TEST_HELPERS)')
make -j"${H5FS_CHECK_JOBS:-3}" check "${plain_tests[@]}" >"$logs/make-check.log" 2>&1 || rc=$?
ran=$(find "$src/tests" -name '*.trs' -newer "$logs/.started" 2>/dev/null | wc -l)
count_trs "$src/tests" ""
if [ "$(nfail)" != "$before" ]; then
	failing_test_logs "$src/tests"
	[ -f tests/test-suite.log ] || tail_log "$logs/make-check.log"
fi
# make check that died (a full disk, a killed make, a helper that does
# not build) or ran no test fails the run, whatever the .trs files say
if [ "$ran" -eq 0 ] || { [ "$rc" != 0 ] && [ "$(nfail)" = "$before" ]; }; then
	tail_log "$logs/make-check.log"
	fail_result "make-check (exit $rc, $ran tests ran)"
fi

if [ "${H5FS_SKIP_PACKAGE:-0}" != 1 ]; then
	stage "Debian package: build, lintian, install, fstab and example with /usr/bin/h5fs, remove"
	before=$(nfail)
	rc=0
	./contrib/package-test.sh "$logs/package" "$results" >"$logs/package.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && [ "$(nfail)" = "$before" ]; then
		tail_log "$logs/package.log"
		fail_result "package (exit $rc)"
	elif [ "$(nfail)" -gt "$before" ]; then
		grep '^FAIL package-' "$results" | while read -r _ name; do
			tail_log "$logs/package/${name#package-}.log"
		done
	fi
fi

if [ "${H5FS_SKIP_SANITIZERS:-0}" != 1 ]; then
	stage "sanitizers: ASan+UBSan and TSan make check, stress, race, corpus, growth"
	before=$(nfail)
	rc=0
	./tests/stress/run-sanitizers.sh build-sanitizers "$results" >"$logs/sanitizers.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && [ "$(nfail)" = "$before" ]; then
		tail_log "$logs/sanitizers.log" 80
		fail_result "sanitizers (exit $rc)"
	elif [ "$(nfail)" -gt "$before" ]; then
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
