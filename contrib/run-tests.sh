#!/bin/bash
# The test command (README "Testing"; .ci/run runs exactly this): install
# what is missing, build in the source tree, run unit and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./contrib/install-deps.sh
autoreconf -fi
./configure
set +e
# automake's "# PASS: N" summary block is kept in make-check.out only: CI
# readers take "# pass N"/"# fail N" lines for node's test runner, whose
# closing block also counts "# tests N", and so read it as "no test ran".
make -j2 check 2>&1 | tee make-check.out | grep -v -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR): '
status=${PIPESTATUS[0]}
set -e
# One plain closing line with the totals of every test program.
count() { sed -n "s/^# $1: *\\([0-9]*\\)/\\1/p" make-check.out | tail -n 1; }
echo "tests: $(count PASS) passed, $(( $(count FAIL) + $(count ERROR) )) failed, $(count SKIP) skipped"
if [ "$status" -ne 0 ]; then
	tail -n 300 test-suite.log 2>/dev/null || true
	exit "$status"
fi
# The same suites again under ASan+UBSan and ThreadSanitizer, plus the
# stress, race and fd/memory-growth tests (tests/stress/run-sanitizers.sh).
./tests/stress/run-sanitizers.sh build-sanitizers
