#!/usr/bin/env bash
# bench/scrub.sh — how fast a deep scrub reads a PG, on the development
# cluster (./dev.sh up: three monitors, four OSDs on the file backend, all
# on loopback), set against the disk under the stores measured in the
# same run.
#
# A pool of one PG, 3 copies, is filled with 4 MiB objects (`tessera
# bench ... write` for --seconds, 16 in flight).  Then `tessera pg
# deep-scrub` runs twice:
#   cold   after the page cache is dropped: every copy's data read from
#          the disk (the three OSDs read at once, from one disk)
#   warm   again at once, from the page cache: the CRC32C and the
#          messages bound it
# Each row gives the PG's bytes per second of scrub (the data of one
# copy) and, for cold, the bytes read from the disk per second (three
# copies).  The disk row is dd reading a file of 512 MiB with O_DIRECT in
# 4 MiB blocks.
#
# Usage: bench/scrub.sh [--seconds S]   (default 10)
# Dropping the page cache needs root; without it the cold row is warm.
# The cluster is started if it is not running, and stopped again at the
# end if this script started it.  It holds /tmp/bench.lock while timing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=10
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift ;;
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
cleanup() {
	$T bench scrubbench 0 cleanup >/dev/null 2>&1 || true
	$T pool rm scrubbench --yes-i-really-mean-it >/dev/null 2>&1 || true
	rm -f "$DEV/raw-read.tmp"
	if [ $started = 1 ]; then ./dev.sh down >/dev/null || true; fi
}
trap cleanup EXIT

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "# (page cache not dropped: not root)" >&2
}

disk_read() { # MiB/s of 4 MiB O_DIRECT reads of a 512 MiB file under the stores
	local f=$DEV/raw-read.tmp
	dd if=/dev/urandom of="$f" bs=4M count=128 conv=fdatasync status=none
	drop_caches
	flock /tmp/bench.lock dd if="$f" of=/dev/null bs=4M iflag=direct 2>&1 |
		awk '/copied/ { print $(NF-1), $NF }'
	rm -f "$f"
}

$T pool create scrubbench 1 --size 3 --min-size 2 >/dev/null
pool=$($T pool ls --format json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print([p["id"] for p in (j["pools"] if isinstance(j, dict) else j) if p["name"] == "scrubbench"][0])')
pgid=$pool.0
for i in $(seq 1 150); do # the PG active+clean before the writes
	$T pg query "$pgid" --format json 2>/dev/null | grep -q '"state": "active+clean' && break
	sleep 0.2
done
$T bench scrubbench "$SECS" write -b 4194304 -t 16 --no-cleanup --format json >/dev/null

scrub() { # NAME: one deep scrub of the PG, timed; its line
	local name=$1 t0 t1 json
	t0=$(date +%s.%N)
	json=$(flock /tmp/bench.lock $T pg deep-scrub "$pgid" --format json)
	t1=$(date +%s.%N)
	python3 - "$name" "$t0" "$t1" "$json" <<'EOF'
import json, sys
name, t0, t1, j = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
mib = j["objects"] * 4.0
s = t1 - t0
print("%-5s %6d objects, %8.1f MiB a copy in %6.2f s: %7.1f MiB/s of PG, %7.1f MiB/s read (3 copies), %d inconsistent" % (
    name, j["objects"], mib, s, mib / s, 3 * mib / s, j["inconsistent"]))
EOF
}

echo "# $(date -Is) $(nproc) cores, loadavg $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"
echo "# disk under $DEV (dd, O_DIRECT reads): $(disk_read)"
drop_caches
scrub cold
scrub warm
