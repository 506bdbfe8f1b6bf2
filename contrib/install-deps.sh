#!/bin/bash
# Install (with apt-get) whatever h5fs needs to build and test that is not
# installed yet. Needs root, or sudo. Debian/Ubuntu only.
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 zlib1g-dev check
	libdeflate-dev liblz4-dev libzstd-dev libbz2-dev libaec-dev libblosc-dev
	python3-h5py python3-numpy hdf5-tools attr tree
	python3-hdf5plugin python3-tables hdf5-plugin-lzf hdf5-filter-plugin python3-netcdf4
	dpkg-dev debhelper lintian libhdf5-dev rsync netcdf-bin
	libcurl4-openssl-dev nginx-light python3-botocore
)

# --list: print the list (.ci/run installs it in one apt-get call)
if [ "${1:-}" = --list ]; then
	echo "${PACKAGES[@]}"
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all build and test dependencies are installed"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
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
