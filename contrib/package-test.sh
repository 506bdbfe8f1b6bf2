#!/bin/bash
# Build the Debian package from a clean copy of the source tree, check it
# with lintian, install it with apt-get, test the INSTALLED binaries
# (mount -t fuse.h5fs / fstab with the plain fuse.h5fs type, and a mount
# of the shipped example), then remove it and check nothing is left.
#
#   contrib/package-test.sh WORKDIR RESULTS
#
# Each step is one test: a line "PASS name", "FAIL name" or "SKIP name" is
# appended to RESULTS (contrib/run-tests.sh counts them); its output goes to
# WORKDIR/NAME.log. Needs root, dpkg-buildpackage and /dev/fuse; every
# step is skipped without them. A package installed before is left alone
# (the install and removal steps are skipped).
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
results=$2
py=/usr/bin/python3
steps=(build lintian install fstab example remove)

result() { echo "$1 package-$2" >>"$results"; }
skip_all() {
	for s in "${steps[@]}"; do result SKIP "$s"; done
	echo "package-test: skipped: $*" >"$work/skip.log"
	exit 0
}
# run NAME CMD...: one step, its output in WORKDIR/NAME.log
run() {
	local name=$1
	shift
	if "$@" >"$work/$name.log" 2>&1; then
		result PASS "$name"
		return 0
	fi
	result FAIL "$name"
	return 1
}

[ "$(id -u)" = 0 ] || skip_all "not root"
command -v dpkg-buildpackage >/dev/null || skip_all "dpkg-buildpackage not installed (dpkg-dev)"
[ -e /dev/fuse ] || skip_all "no /dev/fuse"
preinstalled=0
dpkg-query -W -f='${Status}' h5fs 2>/dev/null | grep -q 'install ok installed' && preinstalled=1

build_pkg() {
	rm -rf "$work/tree" && mkdir -p "$work/tree/h5fs"
	# the files git knows (tracked, or new and not ignored): never a build
	# configured in place by run-tests.sh
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$work/tree/h5fs") || return 1
	rm -f "$work"/tree/h5fs_*.deb
	# the unit tests ran in `make check` already
	(cd "$work/tree/h5fs" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b) || return 1
	ls "$work"/tree/h5fs_*_*.deb
}

check_lintian() {
	command -v lintian >/dev/null || { echo "lintian not installed"; return 1; }
	lintian --fail-on error --info "$work"/tree/h5fs_*.changes
}

install_pkg() {
	apt-get install -y "$(ls "$work"/tree/h5fs_*_*.deb | grep -v dbgsym)" || return 1
	dpkg-query -W -f='${Status}\n' h5fs | grep -q 'install ok installed' || return 1
	/usr/bin/h5fs --version && /usr/bin/h5fs-ls --help >/dev/null &&
		[ -f /usr/share/man/man1/h5fs.1.gz ] && [ -f /usr/share/bash-completion/completions/h5fs ]
}

fstab_test() {
	H5FS_BIN=/usr/bin/h5fs H5FS_LS=/usr/bin/h5fs-ls H5FS_SRCDIR="$src" H5FS_BUILDDIR="$work/fstab" \
		H5FS_REQUIRE_INSTALLED=1 timeout 300 $py "$src/tests/integration/test_fstab.py"
}

# The shipped example through the installed daemon: every dataset's bytes
# and an attribute equal what h5py reads.
example_test() {
	local mnt=$work/mnt pid rc=0
	mkdir -p "$mnt"
	/usr/bin/h5fs -f -o ro "$src/examples/example.h5" "$mnt" &
	pid=$!
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
	mountpoint -q "$mnt" || { kill "$pid"; wait "$pid"; echo "no mount"; return 1; }
	timeout 120 $py - "$src/examples/example.h5" "$mnt" <<'EOF' || rc=1
import os, sys
import h5py
f, mnt = h5py.File(sys.argv[1], "r"), sys.argv[2]
n = 0
def visit(name, obj):
    global n
    if isinstance(obj, h5py.Dataset) and obj.dtype.kind not in "OV":
        with open(os.path.join(mnt, name), "rb") as fh:
            assert fh.read() == obj[()].tobytes(), name
        n += 1
f.visititems(visit)
assert os.getxattr(os.path.join(mnt, "measurements/temperature"), "user.units") == b"degC"
print("example: %d datasets equal through /usr/bin/h5fs" % n)
assert n > 0
EOF
	fusermount3 -u "$mnt" || rc=1
	timeout 30 tail --pid="$pid" -f /dev/null
	kill "$pid" 2>/dev/null
	wait "$pid"
	return $rc
}

remove_pkg() {
	apt-get purge -y h5fs || return 1
	! dpkg-query -W -f='${Status}' h5fs 2>/dev/null | grep -q 'install ok installed' || return 1
	for p in /usr/bin/h5fs /usr/bin/h5fs-ls /usr/share/doc/h5fs /usr/share/man/man1/h5fs.1.gz \
		/usr/share/bash-completion/completions/h5fs; do
		[ ! -e "$p" ] || { echo "left behind: $p"; return 1; }
	done
	echo "removed, nothing left"
}

if ! run build build_pkg; then
	for s in lintian install fstab example remove; do result SKIP "$s"; done
	exit 0
fi
run lintian check_lintian
if [ "$preinstalled" = 1 ]; then
	echo "an h5fs package was installed before: not replaced" >"$work/install.log"
	for s in install fstab example remove; do result SKIP "$s"; done
	exit 0
fi
if run install install_pkg; then
	run fstab fstab_test
	run example example_test
	run remove remove_pkg
else
	result SKIP fstab
	result SKIP example
	apt-get purge -y h5fs >/dev/null 2>&1
	result SKIP remove
fi
exit 0
