#!/usr/bin/env bash
# bench/msgr.sh — the messenger on loopback against plain TCP, on this
# machine, in one run: `tessera msgr bench` with handlers on the dispatch
# threads (as a daemon's blocking handlers run) and on the I/O threads
# (TSR_MSGR_INLINE, for handlers that never block).
#
# Reading the ratio (messenger / raw TCP, measured in the same run): the
# raw side is a blocking socket ping-pong or stream with no framing,
# checksums, sessions or threads.  Round trips at 1 in flight are pure
# latency: each hop between threads costs what a wake-up costs on the
# machine, which the dispatch rows pay twice per round trip.  The
# 16-in-flight rows are a multiple of the messenger's own 1-in-flight rate.
#
# Usage: bench/msgr.sh [--seconds S]
# Environment: TESSERA (default build/tools/tessera/tessera).
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
T=${TESSERA:-build/tools/tessera/tessera}
[ -x "$T" ] || { echo "build first: ./dev.sh up (no $T)" >&2; exit 1; }
"$T" msgr bench "$@"
echo
"$T" msgr bench --inline "$@"
