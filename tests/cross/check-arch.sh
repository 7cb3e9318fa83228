#!/usr/bin/env bash
# check-arch.sh — placement must give byte-identical answers on every host.
# Builds tests/cross/placement_digest.c from the plugin sources natively
# (gcc and, if present, clang at -O0 and -O2) and for aarch64 (run under
# qemu-user), and compares the digests.  Needs gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross and qemu-user (not part of `dev.sh test`: run it by
# hand after touching the mapping code).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d /tmp/tsr-cross-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SRC=(tests/cross/placement_digest.c plugins/placebase/topo.c plugins/placebase/topo_bin.c
	plugins/placebase/topo_text.c plugins/placebase/placebase.c
	core/encoding/encoding.c "$tmp/crush.c" "$tmp/hrw.c")
# each plugin's descriptor under its own name, so both link into one program
sed 's/\btessera_plugin\b/crush_desc/' plugins/placement-crush/crush.c > "$tmp/crush.c"
sed 's/\btessera_plugin\b/hrw_desc/' plugins/placement-hrw/hrw.c > "$tmp/hrw.c"
FLAGS=(-std=c11 -D_GNU_SOURCE -ffp-contract=off -Icore/include -Icore -Iplugins)
build_run() { # name compiler [runner] -- flags
	local name=$1 cc=$2 runner=$3
	shift 3
	"$cc" "${FLAGS[@]}" "$@" "${SRC[@]}" -o "$tmp/$name" 2>/dev/null || { echo "$name: cannot build (skipped)"; return; }
	$runner "$tmp/$name" > "$tmp/$name.out"
	echo "$name: $(md5sum < "$tmp/$name.out" | cut -c1-12)"
}
build_run gcc-O0 gcc "" -O0
build_run gcc-O2 gcc "" -O2
build_run gcc-O3-native gcc "" -O3 -march=native
command -v clang >/dev/null && build_run clang-O2 clang "" -O2
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then
	build_run aarch64-O2 aarch64-linux-gnu-gcc "qemu-aarch64 -L /usr/aarch64-linux-gnu" -O2 -static
else
	echo "aarch64: skipped (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
fi
cat "$tmp/gcc-O2.out"
n=$(cat "$tmp"/*.out | sort | uniq | wc -l)
lines=$(wc -l < "$tmp/gcc-O2.out")
if [ "$n" -eq "$lines" ]; then
	echo "identical on every build"
else
	echo "DIFFERENT results between builds:"; for f in "$tmp"/*.out; do echo "$f"; cat "$f"; done
	exit 1
fi
