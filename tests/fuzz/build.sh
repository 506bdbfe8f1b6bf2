#!/bin/sh
# build.sh - build the libFuzzer target and the sanitizer replay driver.
#
#   tests/fuzz/build.sh [OUTDIR]        (OUTDIR defaults to ./fuzz-build)
#
# Produces, in OUTDIR:
#   fuzz_walk   libFuzzer + ASan + UBSan target (tests/fuzz/fuzz_walk.c)
#   replay      the same walk with a plain main(), ASan + UBSan (replay.c)
#   fuzz_walk_nocsum, fixcsum   the target with metadata checksums waived,
#               and the tool that rewrites the checksums of its findings
#   seeds/      seed corpus: every file of the HDF5 test corpus plus the
#               h5py seeds of gen_seeds.py (when /usr/bin/python3 has h5py)
# Needs clang (Debian clang-14 + libclang-rt-14-dev) and the codec -dev
# packages of contrib/install-deps.sh. Never writes into the source tree.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${1:-$PWD/fuzz-build}
CC=${CC:-clang}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# config.h: the HAVE_* codec macros configure would define, from the
# headers and libraries actually installed.
libs="-lz -lm -lpthread"
: > "$out/config.h.new"
have() { # MACRO header lib
	if printf '#include <%s>\nint main(void){return 0;}\n' "$2" |
		$CC -x c - -o /dev/null "-l$3" >/dev/null 2>&1; then
		echo "#define $1 1" >> "$out/config.h.new"
		libs="$libs -l$3"
	fi
}
have HAVE_LIBDEFLATE libdeflate.h deflate
have HAVE_ZSTD zstd.h zstd
have HAVE_LZ4 lz4.h lz4
have HAVE_BLOSC blosc.h blosc
have HAVE_BZ2 bzlib.h bz2
have HAVE_AEC libaec.h aec
mv "$out/config.h.new" "$out/config.h"

# The engine is in one folder per layer (doc/DESIGN.md); its files include
# each other by bare name, so every layer folder is on the include path.
core=$src/src/h5core
cflags="-g -O1 -std=gnu11 -pthread -fno-omit-frame-pointer -fno-sanitize-recover=all -I$out -I$core"
for d in base io filter format file dataset write; do
	cflags="$cflags -I$core/$d"
done
# and the presentation the daemon and tools share (xattr names, src/common)
cflags="$cflags -I$src/src/common"
# The engine's sources without the remote byte sources: this config.h has
# no HAVE_CURL (as Makefile.am's "if HAVE_CURL"), so source.c does not
# name them, and they would need libcurl and PACKAGE_VERSION.
srcs=
for f in "$core"/*/*.c; do
	case ${f##*/} in
	source_http.c | source_s3.c) ;;
	*) srcs="$srcs $f" ;;
	esac
done
srcs="$srcs $src/src/common/xattrs.c"
echo "building $out/fuzz_walk"
$CC $cflags -fsanitize=fuzzer,address,undefined -o "$out/fuzz_walk" \
	$srcs "$here/fuzz_walk.c" $libs
# Same target with metadata checksums waived (nocsum.c), to fuzz behind
# them; fixcsum rewrites the checksums of what it finds.
echo "building $out/fuzz_walk_nocsum"
$CC $cflags -fsanitize=fuzzer,address,undefined -Wl,--wrap=h5_checksum_verify -o "$out/fuzz_walk_nocsum" \
	$srcs "$here/fuzz_walk.c" "$here/nocsum.c" $libs
echo "building $out/fixcsum"
$CC $cflags -fsanitize=address,undefined -Wl,--wrap=h5_checksum_verify -o "$out/fixcsum" \
	$srcs "$here/fuzz_walk.c" "$here/nocsum.c" "$here/fixcsum.c" $libs
echo "building $out/replay"
$CC $cflags -fsanitize=address,undefined -o "$out/replay" \
	$srcs "$here/fuzz_walk.c" "$here/replay.c" $libs

# Seeds: every corpus file (licences aside), copied flat: libFuzzer wants
# one directory.
mkdir -p "$out/seeds"
corpus=${H5FS_CORPUS:-$src/../shared/corpus/hdf5-testfiles}
if [ -d "$corpus" ]; then
	find "$corpus" -type f ! -name 'LICENSE*' ! -name SOURCE.txt | while read -r f; do
		cp -f "$f" "$out/seeds/$(echo "${f#"$corpus"/}" | tr / _)"
	done
fi
cp -f "$here"/regress/* "$out/seeds/" 2>/dev/null || true
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
	/usr/bin/python3 "$here/gen_seeds.py" "$out/seeds"
fi
echo "seeds: $(ls "$out/seeds" | wc -l) files in $out/seeds"
