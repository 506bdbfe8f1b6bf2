#!/bin/bash
# Newcomer's first run: install what building and running need and is
# missing (no test tools: contrib/run-tests.sh installs those), build,
# mount the example file read-only at ./mnt and list it.
set -euo pipefail
cd "$(dirname "$0")/.."
./contrib/install-deps.sh --build
[ -x ./configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j2
mkdir -p mnt
if grep -qs " $(pwd)/mnt " /proc/mounts; then
	./h5fs -u mnt || fusermount3 -u mnt
fi
# read-only: the tracked example stays as it is (README's tour)
./h5fs -o ro examples/example.h5 mnt
echo "== examples/example.h5 mounted read-only at ./mnt =="
if command -v tree >/dev/null; then tree -a --noreport mnt; fi
ls -lR mnt
echo
echo "Read a dataset:   od -A d -t f8 mnt/measurements/temperature | head"
echo "Unmount with:     ./h5fs -u mnt   (returns once FILE is final)"
