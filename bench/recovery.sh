#!/usr/bin/env bash
# bench/recovery.sh — the storage cluster heals itself: how fast, and what
# clients see meanwhile.  On the development cluster (./dev.sh up: three
# monitors, four OSDs on the file backend, all on loopback):
#
#   start     ./dev.sh up from nothing (a fresh dev-cluster/) until every
#             PG of the pool "data" is active+clean
#   fill      pool "rec" (32 PGs, 3 copies, min_size 2): 4 MiB objects
#             written for --fill seconds, 16 in flight (about 3 GiB)
#   recovery  `osd out 0`: until every PG is active+clean again; the
#             bytes the OSDs pushed meanwhile (their recovery_pace
#             counters) over the time
#   rebalance `osd in 0`: the same, back
#   probes    during both, a client writes 4 MiB objects one at a time
#             (tessera bench, 2 s runs): failures and the slowest write
#   memory    the resident memory of the seven daemons at the end
#
# The Ceph figures it is set against are the anchor's, measured on this
# kind of machine (issue 18: Ceph 16.2.15, four BlueStore OSDs, size 3,
# ~3.3 GiB): recovery 61.8 s at 54-63 MiB/s, rebalance 46.8 s, 0 of 1,004
# probes failed with the worst 4 MiB write 2.3 s, 4.3 GiB resident after
# the benchmarks, 29-37 s from nothing to healthy.  The recovery throttles
# are the defaults (osd_max_backfills 1, osd_recovery_max_active 8, no
# osd_recovery_max_bytes).
#
# Usage: bench/recovery.sh [--fill SECONDS] [--fresh] [--recovery-max-bytes SIZE]
#                          [--osd-set 'KEY = VALUE; ...']
# --recovery-max-bytes sets osd_recovery_max_bytes for the OSDs, --osd-set
# any OSD options (the OSDs are restarted with them after the start is
# measured): the throttles a client's share depends on.
# It needs the development cluster stopped and absent; --fresh stops it
# (./dev.sh down) and deletes dev-cluster/ first.  It stops the cluster
# at the end and leaves dev-cluster/ for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
FILL=15
FRESH=0
PACE=
OSDSET=
while [ $# -gt 0 ]; do
	case $1 in
	--fill) FILL=$2; shift ;;
	--recovery-max-bytes) PACE=$2; shift ;;
	--osd-set) OSDSET=$2; shift ;;
	--fresh) FRESH=1 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
DEV=$PWD/dev-cluster
if [ -e "$DEV" ]; then
	if [ $FRESH = 0 ]; then
		echo "bench/recovery.sh: $DEV exists; it measures a start from nothing:" \
			"add --fresh to stop and delete it" >&2
		exit 2
	fi
	./dev.sh down >/dev/null || true
	rm -rf "$DEV"
fi
T=build/tools/tessera/tessera
export TESSERA_CONF=$DEV/tessera.conf
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
cleanup() { ./dev.sh down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# the build first, so that the start is the cluster's own
if [ -d build ]; then make -C build -s -j"$(nproc)" >/dev/null; fi

# is every PG of the cluster active+clean, as its primary reported at
# epoch $MIN_EPOCH or later?
MIN_EPOCH=0
all_clean() {
	$T pg dump --format json --timeout 10 2>/dev/null | python3 -c '
import json, sys
try:
    pgs = json.load(sys.stdin)["pgs"]
except Exception:
    sys.exit(1)
ok = len(pgs) > 0 and all(p["state"] == "active+clean" and p.get("epoch", 0) >= int(sys.argv[1])
                          for p in pgs)
sys.exit(0 if ok else 1)' "$MIN_EPOCH"
}
epoch() { $T osd dump --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["osdmap_epoch"])'; }
# wait for it (bounded)
clean() {
	local i
	for i in $(seq 1 "${1:-3000}"); do
		if all_clean; then
			return 0
		fi
		sleep 0.1
	done
	echo "bench/recovery.sh: PGs not clean in time" >&2
	$T status >&2 || true
	return 1
}
# the bytes the OSDs pushed so far (recovery and backfill)
pushed() {
	local i s=0 b
	for i in 0 1 2 3; do
		b=$($T admin "$DEV/run/osd-$i.asok" pg dump 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["recovery_pace"]["bytes"])' 2>/dev/null || echo 0)
		s=$((s + b))
	done
	echo $s
}
# until clean: 2 s probe runs of one 4 MiB write at a time; prints
# "seconds probes failed worst_ms"
heal() {
	local t0 k=0 failed=0 worst=0 n=0 j
	t0=$(now)
	while :; do
		if all_clean; then
			break
		fi
		if j=$($T bench rec 2 write -t 1 --run-name "probe$k" --format json 2>/dev/null); then
			read -r ops ms < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["ops"], int(d["lat_max_ms"]))' "$j")
			n=$((n + ops))
			[ "$ms" -gt "$worst" ] && worst=$ms
		else
			failed=$((failed + 1))
		fi
		k=$((k + 1))
		if [ "$(secs "$t0" "$(now)" | cut -d. -f1)" -gt 600 ]; then
			echo "bench/recovery.sh: not clean after 600 s" >&2
			return 1
		fi
	done
	echo "$(secs "$t0" "$(now)") $n $failed $worst"
}
rss() { # MiB resident, the seven daemons
	local f s=0 pid
	for f in "$DEV"/run/*.pid; do
		pid=$(cat "$f")
		s=$((s + $(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)))
	done
	echo $((s / 1024))
}

t0=$(now)
./dev.sh up >/dev/null
t_up=$(secs "$t0" "$(now)")
clean
t_start=$(secs "$t0" "$(now)")
mem_idle=$(rss)
if [ -n "$PACE$OSDSET" ]; then
	# every OSD's section (after global, so it wins), then restarted
	[ -n "$PACE" ] && OSDSET="osd_recovery_max_bytes = \"$PACE\"; $OSDSET"
	for i in 0 1 2 3; do
		echo "osd-$i = { $OSDSET };" >>"$TESSERA_CONF"
	done
	./dev.sh down >/dev/null
	./dev.sh up >/dev/null
	clean
fi

$T pool create rec 32 --size 3 --min-size 2 >/dev/null
clean
fill=$($T bench rec "$FILL" write -t 16 --no-cleanup --run-name fill --format json)
read -r fill_mib fill_s < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(round(d["ops"] * d["block_size"] / 1048576), round(d["seconds"], 1))' "$fill")
clean

p0=$(pushed)
$T osd out 0 >/dev/null
MIN_EPOCH=$(epoch)
read -r rec_s rec_ops rec_failed rec_worst < <(heal)
p1=$(pushed)
$T osd in 0 >/dev/null
MIN_EPOCH=$(epoch)
read -r reb_s reb_ops reb_failed reb_worst < <(heal)
p2=$(pushed)
mem_end=$(rss)

rec_mib=$(( (p1 - p0) / 1048576 ))
reb_mib=$(( (p2 - p1) / 1048576 ))
rate() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.1f", m / s }'; }
cat <<EOF
fill: $fill_mib MiB in pool rec ($fill_s s of 4 MiB writes); OSD options: ${OSDSET:-(defaults)}
| measure | Tessera | Ceph (anchor) | Tessera / Ceph |
|---|---|---|---|
| recovery after osd out (1 of 4) | $rec_s s, $rec_mib MiB pushed, $(rate $rec_mib $rec_s) MiB/s | 61.8 s, 54-63 MiB/s | $(awk -v s="$rec_s" 'BEGIN { printf "%.2fx faster", 61.8 / s }') |
| rebalance after osd in | $reb_s s, $reb_mib MiB pushed, $(rate $reb_mib $reb_s) MiB/s | 46.8 s | $(awk -v s="$reb_s" 'BEGIN { printf "%.2fx faster", 46.8 / s }') |
| client 4 MiB writes meanwhile | $((rec_ops + reb_ops)) written, $((rec_failed + reb_failed)) runs failed, worst ${rec_worst}/${reb_worst} ms | 0 of 1,004 failed, worst 2.3 s | |
| resident memory, 7 daemons | ${mem_idle} MiB idle, ${mem_end} MiB at the end | 647 MiB idle, ~4.3 GiB after | $(awk -v t="$mem_end" 'BEGIN { printf "%.2f", t / 4403 }') |
| dev.sh up from nothing to active+clean | $t_start s (up returned after $t_up s) | 29-37 s | |
EOF
