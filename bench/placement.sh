#!/usr/bin/env bash
# bench/placement.sh — placement benchmark: Tessera's "crush" and "hrw"
# plugins side by side, and Ceph's crushtool on the same machine as the
# anchor when it is installed (Debian package ceph-base; pass --install to
# have this script install it).
#
# Map: 100 hosts x 10 OSDs, equal weights; rule: 3 replicas, one per host;
# inputs 0 .. 999,999.  For each plugin it prints mappings per second,
# utilization (max/mean, min/mean) and the data moved, as a multiple of the
# optimum, after adding one host of 10 OSDs, after removing one OSD from
# the map, and after marking one OSD out; and utilization over several
# input ranges and over the groups of three pools.
#
# Usage: bench/placement.sh [--install] [--inputs N] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
INSTALL=no
INPUTS=1000000
while [ $# -gt 0 ]; do
	case $1 in
	--install) INSTALL=yes; shift ;;
	--inputs) INPUTS=$2; shift 2 ;;
	-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
BUILD=${1:-build}
T="$BUILD/tools/tessera/tessera"
P="$BUILD/lib/plugins"
[ -x "$T" ] || { echo "build first: ./dev.sh up (no $T)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/tsr-bench-placement-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$T" placement generate --plugin-dir "$P" --hosts 100 --per-host 10 -o "$tmp/base.txt"
"$T" placement generate --plugin-dir "$P" --hosts 101 --per-host 10 -o "$tmp/plus-host.txt"
# remove osd.17 from the map: its device line and its bucket item
grep -v -E '^device 17 |^[[:space:]]*item osd\.17$' "$tmp/base.txt" > "$tmp/minus-osd.txt"

last=$((INPUTS))
# Rates: the median of three runs, since a shared machine's speed varies
# from one run to the next (seen here: 190k to 240k inputs/s for crush).
median3() { sort -n | sed -n 2p; }
echo "== mapping rate, median of 3 runs of $INPUTS inputs"
for plugin in crush hrw; do
	for i in 1 2 3; do
		"$T" placement test "$tmp/base.txt" --plugin-dir "$P" --plugin "$plugin" --rule 0 \
			--num-rep 3 --min-x 0 --max-x "$last" --format json |
			sed -n 's/.*"inputs_per_sec": \([0-9.]*\).*/\1/p' | head -1
	done | median3 | awk -v p="$plugin" '{ printf "%s: %.0f inputs/s\n", p, $1 }'
done
if command -v crushtool >/dev/null; then
	crushtool --build --num_osds 1000 -o "$tmp/c.bin" host straw2 10 root straw2 0 >/dev/null
	for i in 1 2 3; do
		start=$(date +%s.%N)
		crushtool -i "$tmp/c.bin" --test --rule 0 --num-rep 3 --min-x 0 --max-x $((INPUTS - 1)) >/dev/null 2>&1
		end=$(date +%s.%N)
		awk -v s="$start" -v e="$end" -v n="$INPUTS" 'BEGIN { printf "%.0f\n", n / (e - s) }'
	done | median3 | awk '{ printf "crushtool: %.0f inputs/s (whole process)\n", $1 }'
fi

for plugin in crush hrw; do
	echo "== $plugin"
	common=(--plugin-dir "$P" --plugin "$plugin" --rule 0 --num-rep 3 --min-x 0 --max-x "$last")
	"$T" placement test "$tmp/base.txt" "${common[@]}"
	echo "-- add one host of 10 OSDs"
	"$T" placement test "$tmp/base.txt" "${common[@]}" --compare "$tmp/plus-host.txt" | grep -iE 'changed|optim|ratio'
	echo "-- remove osd.17 from the map"
	"$T" placement test "$tmp/base.txt" "${common[@]}" --compare "$tmp/minus-osd.txt" | grep -iE 'changed|optim|ratio'
	echo "-- mark osd.17 out"
	"$T" placement test "$tmp/base.txt" "${common[@]}" --compare "$tmp/base.txt" --weight2 17=0 | grep -iE 'changed|optim|ratio'
done

if ! command -v crushtool >/dev/null && [ $INSTALL = yes ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ceph-base >/dev/null
fi

# Utilization over several input ranges: max/mean of one run is a sample of
# a noisy statistic (about 1 + 3.2/sqrt(3000) for 3000 placements per OSD),
# so compare the mean over RANGES disjoint ranges too.
RANGES=${RANGES:-5}
util_ours() { # plugin
	local k sum=0
	for k in $(seq 0 $((RANGES - 1))); do
		"$T" placement test "$tmp/base.txt" --plugin-dir "$P" --plugin "$1" --rule 0 \
			--num-rep 3 --min-x $((k * INPUTS)) --max-x $(((k + 1) * INPUTS)) --format json |
			sed -n 's/.*"max_over_mean": \([0-9.]*\).*/\1/p' | head -1
	done | awk -v p="$1" '{ s += $1; n++; printf "%s%.4f", (n > 1 ? " " : ""), $1 } END { printf "  -> %s mean max/mean %.4f\n", p, s / n }'
}
echo "== utilization, max/mean over $RANGES ranges of $INPUTS inputs"
for plugin in crush hrw; do util_ours $plugin; done

# A pool's groups as the cluster places them (tsr_pg_seed): the figure an
# operator sees, ~98 groups per OSD for 32768 groups x 3 replicas.
echo "== utilization of one pool's groups: pools 1-3 of 32768 groups"
for plugin in crush hrw; do
	for pool in 1 2 3; do
		"$T" placement test "$tmp/base.txt" --plugin-dir "$P" --plugin "$plugin" --rule 0 \
			--num-rep 3 --pool $pool --pg-num 32768 --format json |
			sed -n 's/.*"max_over_mean": \([0-9.]*\).*"stddev_over_mean": \([0-9.]*\).*/\1 \2/p'
	done | awk -v p="$plugin" '{ printf "%s: pool %d max/mean %.4f stddev/mean %.4f\n", p, NR, $1, $2 }'
done

if command -v crushtool >/dev/null; then
	echo "== anchor: crushtool ($(dpkg-query -W -f='${Version}' ceph-base 2>/dev/null || echo unknown version)), straw2, chooseleaf host"
	crushtool --build --num_osds 1000 -o "$tmp/c.bin" host straw2 10 root straw2 0 >/dev/null
	start=$(date +%s.%N)
	crushtool -i "$tmp/c.bin" --test --rule 0 --num-rep 3 --min-x 0 --max-x $((INPUTS - 1)) >/dev/null 2>&1
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" -v n="$INPUTS" 'BEGIN { printf "crushtool: %d inputs in %.2f s = %.0f inputs/s (whole process)\n", n, e - s, n / (e - s) }'
	# data moved, measured the same way as for the plugins: placements on a
	# device that did not hold them before, against the total-variation
	# distance of the device shares
	maps() { crushtool -i "$1" --test --rule 0 --num-rep 3 --min-x 0 --max-x $((INPUTS - 1)) \
		--show-mappings "${@:2}" 2>/dev/null | awk '/^CRUSH rule/ { print $5, $6 }'; }
	moved() { # old new
		awk 'NR == FNR { old[$1] = $2; next }
		     { gsub(/[\[\]]/, "", $2); n = split($2, b, ","); o = old[$1]; gsub(/[\[\]]/, "", o);
		       m = split(o, a, ","); for (i = 1; i <= m; i++) { has[a[i]] = 1; before[a[i]]++; tot1++ }
		       for (i = 1; i <= n; i++) { after[b[i]]++; tot2++; if (!(b[i] in has)) ch++ }
		       delete has }
		     END { for (d in before) dev[d] = 1; for (d in after) dev[d] = 1
		           for (d in dev) { x = after[d] / tot2 - before[d] / tot1; if (x > 0) tv += x }
		           printf "  changed %.6f, optimal %.6f, ratio %.4f\n", ch / tot2, tv, (tv > 0 ? ch / tot2 / tv : 0) }' "$1" "$2"; }
	crushtool --build --num_osds 1010 -o "$tmp/c-plus.bin" host straw2 10 root straw2 0 >/dev/null
	crushtool -i "$tmp/c.bin" --remove-item osd.17 -o "$tmp/c-minus0.bin" >/dev/null 2>&1
	crushtool -i "$tmp/c-minus0.bin" --reweight -o "$tmp/c-minus.bin" >/dev/null 2>&1
	maps "$tmp/c.bin" > "$tmp/c.map"
	echo "-- crushtool: add one host of 10 OSDs"
	maps "$tmp/c-plus.bin" > "$tmp/c2.map"; moved "$tmp/c.map" "$tmp/c2.map"
	echo "-- crushtool: remove osd.17 from the map (crushtool --remove-item, --reweight)"
	maps "$tmp/c-minus.bin" > "$tmp/c2.map"; moved "$tmp/c.map" "$tmp/c2.map"
	echo "-- crushtool: mark osd.17 out (--weight 17 0)"
	maps "$tmp/c.bin" --weight 17 0 > "$tmp/c2.map"; moved "$tmp/c.map" "$tmp/c2.map"
	for k in $(seq 0 $((RANGES - 1))); do
		crushtool -i "$tmp/c.bin" --test --rule 0 --num-rep 3 --min-x $((k * INPUTS)) \
			--max-x $(((k + 1) * INPUTS - 1)) --show-utilization 2>&1 |
			awk '/stored/ { for (i = 1; i <= NF; i++) if ($i == "stored") { c = $(i + 2); s += c; n++; if (c > mx) mx = c } }
			     END { printf "%.4f\n", mx / (s / n) }'
	done | awk '{ s += $1; n++; printf "%s%.4f", (n > 1 ? " " : ""), $1 } END { printf "  -> crushtool mean max/mean %.4f\n", s / n }'
else
	echo "== anchor: crushtool not installed (bench/placement.sh --install installs ceph-base)"
fi
