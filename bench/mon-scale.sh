#!/usr/bin/env bash
# bench/mon-scale.sh — the monitors with many OSDs: three monitors on
# loopback, N OSDs added in ranges, all booting at once, then a tenth of
# them going silent (test_mon's `scale` case, with tsr-osdswarm playing
# the OSDs from one process, each session proving its OSD's key).
#
# For each N it prints the swarm's line — seconds until every OSD was up
# in the map and in how many epochs (boots are batched), seconds until
# the silent ones were down (the beacon grace is 3 s), the OSD map's
# encoded size — and the leader's per-change costs: decide (the leader
# decides a change on its projected state), commit (proposed to applied:
# a Raft round and the fsyncs of a majority), apply (every monitor
# applies a decision's incrementals).
#
# Usage: bench/mon-scale.sh [N ...]            (default: 1000 10000)
# Environment: BUILD (default build), the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
B=$(cd "${BUILD:-build}" && pwd)
T=$B/tests/integration/test_mon
[ -x "$T" ] || { echo "build the tests first: make -C $B check TESTS= (no $T)" >&2; exit 1; }
export TESSERA=$B/tools/tessera/tessera TESSERA_MON=$B/daemons/mon/tessera-mon \
	OSDSWARM=$B/tests/daemon/tsr-osdswarm PLUGIN_DIR=$B/lib/plugins
[ $# -gt 0 ] || set -- 1000 10000
for n in "$@"; do
	echo "== $n OSDs"
	SCALE_OSDS=$n CK_RUN_CASE=scale CK_TIMEOUT_MULTIPLIER=4 "$T" 2>&1 |
		grep -E '^scale:|Checks|Failures|:F:' || true
done
