#!/bin/bash
# Sanitizer and concurrency checks (issue "No input crashes, hangs or fools
# h5fs"), for CI after contrib/run-tests.sh:
#
#   1. ASan+UBSan build (configure --enable-sanitizers): the whole `make
#      check` (unit tests, and the integration tests whose daemon runs
#      under ASan too; h5fs_testlib fails a test on any sanitizer report in
#      the daemon's output, LeakSanitizer's at exit included);
#   2. tests/stress/stress.py against the ASan daemon (16 threads, 1 MiB
#      cache, every byte checked);
#   3. tests/stress/growth.py (fd count constant, RSS bounded) against a
#      plain build (ASan's allocator and fake stacks make RSS meaningless;
#      its leak check at exit already ran in steps 1 and 2);
#   4. ThreadSanitizer build (configure --enable-tsan when configure has it,
#      else CFLAGS=-fsanitize=thread): `make check` and stress.py with the
#      TSan daemon.
#
#   tests/stress/run-sanitizers.sh [BUILD_DIR]      (default ./build-sanitizers)
#
# Environment: H5FS_STRESS_SECONDS (default here 30), H5FS_GROWTH_CYCLES
# (default here 20000), H5FS_SANI_TSAN=0 to skip step 4, H5FS_SANI_CHECK=0 to
# skip both `make check` runs, JOBS (2).  About 7 minutes on 2 cores.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(mkdir -p "${1:-build-sanitizers}" && cd "${1:-build-sanitizers}" && pwd)
export H5FS_STRESS_SECONDS=${H5FS_STRESS_SECONDS:-30}
export H5FS_GROWTH_CYCLES=${H5FS_GROWTH_CYCLES:-20000}
jobs=${JOBS:-2}
# UBSan aborts on the first error (configure adds -fno-sanitize-recover);
# the stack trace makes the report usable.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1:halt_on_error=0}

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

# automake refuses an out-of-tree build of a source tree configured in
# place (contrib/run-tests.sh does that): build from a clean copy then.
if [ ! -x "$src/configure" ] || [ -f "$src/config.status" ]; then
	copy=$build/src
	step "copying the sources to $copy (the source tree is configured in place)"
	rm -rf "$copy" && mkdir -p "$copy"
	(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$copy")
	(cd "$copy" && autoreconf -fi >/dev/null 2>&1)
	src=$copy
fi

configure_in() { # DIR ARGS...: configure once per DIR
	local dir=$1
	shift
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ]; then
		(cd "$dir" && "$src/configure" -q "$@")
	fi
}

show_logs() { # DIR: the failing tests' logs
	(cd "$1" && for f in $(grep -l '^:test-result: \(FAIL\|ERROR\)' tests/*/*.trs 2>/dev/null); do
		echo "----- ${f%.trs}.log"
		tail -n 150 "${f%.trs}.log"
	done)
}

fail=0
t0=$SECONDS

asan=$build/asan
step "ASan+UBSan build in $asan"
configure_in "$asan" --enable-sanitizers
make -C "$asan" -s -j"$jobs" >/dev/null
if [ "${H5FS_SANI_CHECK:-1}" != 0 ]; then
	step "make check under ASan+UBSan"
	if ! make -C "$asan" -j"$jobs" check; then
		show_logs "$asan"
		fail=1
	fi
fi

export H5FS_BUILDDIR=$asan
step "stress.py (${H5FS_STRESS_SECONDS} s) against the ASan daemon"
H5FS_BIN=$asan/h5fs /usr/bin/python3 "$src/tests/stress/stress.py" || fail=1

plain=$build/plain
step "plain build in $plain"
configure_in "$plain"
make -C "$plain" -s -j"$jobs" h5fs >/dev/null
step "growth.py (${H5FS_GROWTH_CYCLES} cycles) against the plain daemon"
H5FS_BUILDDIR=$plain H5FS_BIN=$plain/h5fs /usr/bin/python3 "$src/tests/stress/growth.py" || fail=1

if [ "${H5FS_SANI_TSAN:-1}" != 0 ]; then
	tsan=$build/tsan
	step "ThreadSanitizer build in $tsan"
	if "$src/configure" --help | grep -q -- '--enable-tsan'; then
		configure_in "$tsan" --enable-tsan
	else
		configure_in "$tsan" CFLAGS="-fsanitize=thread -g -O1" LDFLAGS=-fsanitize=thread
	fi
	make -C "$tsan" -s -j"$jobs" >/dev/null
	if [ "${H5FS_SANI_CHECK:-1}" != 0 ]; then
		step "make check under TSan"
		if ! make -C "$tsan" -j"$jobs" check; then
			show_logs "$tsan"
			fail=1
		fi
	fi
	export H5FS_BUILDDIR=$tsan
	step "stress.py (${H5FS_STRESS_SECONDS} s) against the TSan daemon"
	H5FS_BIN=$tsan/h5fs /usr/bin/python3 "$src/tests/stress/stress.py" || fail=1
fi

step "done in $((SECONDS - t0)) s"
if [ $fail = 0 ]; then
	echo "sanitizers: 1 passed, 0 failed"
else
	echo "sanitizers: 0 passed, 1 failed"
fi
exit $fail
