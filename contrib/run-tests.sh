#!/bin/bash
# The test command (README "Testing"; .ci/run runs exactly this): install
# what is missing, build in the source tree, run unit and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./contrib/install-deps.sh
autoreconf -fi
./configure
make -j2 check || { cat test-suite.log 2>/dev/null | tail -n 300; exit 1; }
