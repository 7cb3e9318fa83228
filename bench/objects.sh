#!/usr/bin/env bash
# bench/objects.sh — the object cluster end to end: `tessera bench` on the
# development cluster (./dev.sh up: three monitors, four OSDs on the file
# backend, all on loopback), set against the machine's own disk measured
# in the same run and, with --ceph, against Ceph's `rados bench` on the
# anchor cluster (../shared/anchors: four BlueStore OSDs on this machine).
#
# The workloads are the anchor's (rados-bench.sh): a pool of 32 PGs, 3
# copies, min_size 2; 16 operations in flight; 30 s each (--seconds):
#   write4M   new 4 MiB objects                 MiB/s, latency
#   seq       read them back in order           MiB/s
#   rand      read them in random order         MiB/s
#   write4K   new 4 KiB objects                 IOPS, latency
# Every write counts once all three copies are durable.  The disk row is
# dd with O_DIRECT and one fdatasync per 4 MiB write (MiB/s), and 4 KiB
# writes each synced (IOPS), on the file system the stores live on.
#
# Reading it: three copies on one disk write every byte three times (and
# the file backend's journal can write small writes twice more), so a
# 4 MiB write rate near a third of the disk's is the disk's limit here.
# Reads come from the primary, through the page cache.  The anchor shares
# the disk and the two cores the same way: its ratio is the one to
# compare.  Rates on this shared virtual machine drift by up to 2x within
# minutes; run it twice before believing a change.
#
# Usage: bench/objects.sh [--seconds S] [--ceph]
# The cluster is started if it is not running, and stopped again at the
# end if this script started it.  Benchmarks hold /tmp/bench.lock while
# they time something (as the anchors' scripts do).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=30
CEPH=0
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift ;;
	--ceph) CEPH=1 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
T=build/tools/tessera/tessera
DEV=$PWD/dev-cluster
export TESSERA_CONF=$DEV/tessera.conf
started=0
if ! [ -f "$DEV/run/osd-0.pid" ] || ! kill -0 "$(cat "$DEV/run/osd-0.pid")" 2>/dev/null; then
	./dev.sh up >/dev/null
	started=1
fi
out=$(mktemp -d /tmp/tsr-bench-objects-XXXXXX)
cleanup() {
	rm -rf "$out"
	if [ $started = 1 ]; then ./dev.sh down >/dev/null || true; fi
}
trap cleanup EXIT

if ! $T pool ls | grep -q '^bench '; then
	$T pool create bench 32 --size 3 --min-size 2 >/dev/null
fi
# until every PG of the pool is active+clean (a minute at most)
for i in $(seq 1 300); do
	if $T pg stat --format json | grep -q '"inactive": 0, "degraded_pgs": 0'; then
		break
	fi
	sleep 0.2
done

disk() { # the disk under the stores: MiB/s of 4 MiB direct writes, IOPS of 4 KiB synced writes
	local f=$DEV/raw-bench.tmp mibs iops
	mibs=$(flock /tmp/bench.lock dd if=/dev/zero of="$f" bs=4M count=128 oflag=direct \
		conv=fdatasync 2>&1 | awk '/copied/ { print $(NF-1), $NF }')
	iops=$(flock /tmp/bench.lock dd if=/dev/zero of="$f" bs=4k count=2000 oflag=dsync 2>&1 |
		awk '/copied/ { for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) t = $(i-1); print int(2000 / t) }')
	rm -f "$f"
	echo "$mibs|$iops"
}

run() { # NAME ARGS...: one tessera bench run under the lock; its JSON totals
	local name=$1
	shift
	flock /tmp/bench.lock $T bench bench "$@" --format json >"$out/$name.json"
	python3 - "$out/$name.json" "$name" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
print("%-8s %9.1f MiB/s %9.1f IOPS   lat ms p50 %8.2f p99 %8.2f max %8.2f   ops %d errors %d" % (
    sys.argv[2], j["mib_per_s"], j["iops"], j["lat_p50_ms"], j["lat_p99_ms"],
    j["lat_max_ms"], j["ops"], j["errors"]))
EOF
}

echo "# $(date -Is) $(nproc) cores, loadavg $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"
echo "# disk under $DEV (dd): $(disk)"
run write4M "$SECS" write -b 4194304 -t 16 --no-cleanup
run seq "$SECS" seq -t 16
run rand "$SECS" rand -t 16
$T bench bench 0 cleanup >/dev/null
run write4K "$SECS" write -b 4096 -t 16
echo "# disk under $DEV (dd), again: $(disk)"

if [ $CEPH = 1 ]; then
	A=$(cd .. && pwd)/shared/anchors
	[ -x "$A/ceph.sh" ] || A=/work/shared/anchors
	echo "# anchor: Ceph $(ceph --version 2>/dev/null | awk '{ print $3 }') ($A)"
	if [ $started = 1 ]; then ./dev.sh down >/dev/null; started=0; fi
	"$A/ceph.sh" start >/dev/null
	"$A/rados-bench.sh" "$out/ceph" || true
	"$A/ceph.sh" stop >/dev/null || true
fi
