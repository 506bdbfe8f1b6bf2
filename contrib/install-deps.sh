#!/bin/bash
# Install whatever h5fs needs that is not installed yet: Debian packages
# with apt-get, then npm packages globally with npm (s3rver for
# test_s3rver.py). Needs root, or sudo. Debian/Ubuntu only.
#
#   install-deps.sh           everything: building, running and testing
#                             (contrib/run-tests.sh, hence CI)
#   install-deps.sh --build   only what building and running h5fs need
#                             (contrib/quickstart.sh: trying h5fs installs
#                             no test tools, no npm)
#   install-deps.sh --list    print the full Debian list (.ci/run installs
#                             it in one apt-get call); --list --build the
#                             build-and-run part
set -euo pipefail

# building (every codec configure finds, libcurl for remote FILEs) and
# running (fuse3's fusermount3; for README's tour attr's getfattr, tree,
# Debian's python3 with numpy, and libtiff-tools' tiffinfo)
BUILD_PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 zlib1g-dev libsqlite3-dev
	libdeflate-dev liblz4-dev libzstd-dev libbz2-dev libaec-dev libblosc-dev
	liblzo2-dev libzfp-dev libcurl4-openssl-dev attr tree
	python3-numpy libtiff-tools
)
# testing only: Check, the libhdf5 oracles and fixture writers, servers,
# packaging tools
TEST_PACKAGES=(
	check hdf5-filter-plugin-zfp-serial
	python3-h5py hdf5-tools
	python3-hdf5plugin python3-tables hdf5-plugin-lzf hdf5-filter-plugin python3-netcdf4
	hdf5-filter-plugin-blosc-serial bitshuffle python3-zstandard
	dpkg-dev debhelper lintian libhdf5-dev rsync netcdf-bin
	nco python3-h5netcdf python3-anndata
	nginx-light python3-botocore
	python3-fsspec python3-zarr python3-numcodecs python3-aiohttp
	python3-xarray python3-dask python3-distributed
	python3-tifffile python3-pil libpng-dev
	strace fio bash-completion stress-ng
)

build_only=0
list=0
for a in "$@"; do
	case $a in
	--build) build_only=1 ;;
	--list) list=1 ;;
	*) echo "usage: install-deps.sh [--build] [--list]" >&2; exit 2 ;;
	esac
done
PACKAGES=("${BUILD_PACKAGES[@]}")
[ "$build_only" = 1 ] || PACKAGES+=("${TEST_PACKAGES[@]}")
if [ "$list" = 1 ]; then
	echo "${PACKAGES[@]}"
	exit 0
fi

# npm packages (the registry through npm itself), installed globally after
# the Debian ones: s3rver, the S3-compatible server of test_s3rver.py;
# h5wasm 0.8.11, libhdf5 1.14.6 as WebAssembly: the second oracle of the
# write tests (tests/integration/h514.py; Debian bookworm has only 1.10);
# h5wasm 0.10.3 (libhdf5 2.0) under the alias h5wasm2 beside it: the HDF5
# 2.x oracle of format specification 4.0 (tests/integration/test_h5v2.py)
NPM_PACKAGES=(s3rver@3 h5wasm@0.8.11 h5wasm2@npm:h5wasm@0.10.3)

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

npm_deps() {
	[ "$build_only" = 0 ] || return 0
	if ! command -v npm >/dev/null; then
		# nodejs from wherever apt has it (Debian's brings npm separately)
		echo "install-deps: installing nodejs npm"
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nodejs npm
	fi
	if command -v s3rver >/dev/null &&
		grep -qs '"version": "0.8.11"' "$(npm root -g)/h5wasm/package.json" &&
		grep -qs '"version": "0.10.3"' "$(npm root -g)/h5wasm2/package.json"; then
		echo "install-deps: s3rver, h5wasm and h5wasm2 are installed"
		return 0
	fi
	echo "install-deps: npm install -g ${NPM_PACKAGES[*]}"
	# one more try after a pause: a registry hiccup should not fail CI
	$SUDO npm install -g --no-audit --no-fund "${NPM_PACKAGES[@]}" ||
		{ sleep 10 && $SUDO npm install -g --no-audit --no-fund "${NPM_PACKAGES[@]}"; }
}

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all Debian $([ "$build_only" = 1 ] && echo build || echo "build and test") dependencies are installed"
	npm_deps
	exit 0
fi

if [ -n "$SUDO" ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# no service started by what is installed (nginx-light would listen on
# port 80): the tests run their own servers on 127.0.0.1
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod +x /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
npm_deps
