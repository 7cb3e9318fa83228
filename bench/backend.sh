#!/usr/bin/env bash
# bench/backend.sh — object-store benchmark: Tessera's "file" and "blockdev"
# backends against the file system under them, on this machine, in one run.
#
# `tessera backend bench` makes a fresh store in a temporary directory — for
# "file" a directory with a 1 GiB journal, for "blockdev" an 8 GiB image
# file written with zeros at mkfs (zero_fill=true: a device's blocks need
# no allocation, and an image file's should not either) — and runs each
# workload twice: through the plugin's
# submit()/read(), and with plain system calls on a scratch file next to it
# (O_DIRECT, an fdatasync per write, queue depth 1: the disk's own figure).
#   seq-write-4m       new 4 MiB objects, queue depth 1 and 4    MiB/s
#   rand-overwrite-4k  4 KiB overwrites of 4 MiB objects         IOPS
#   create-small       new objects of 4 KiB and one attribute    creates/s
#   rand-read-4k       4 KiB reads of the objects                IOPS
#   seq-read-4m        whole-object reads                        MiB/s
# A write counts only once the backend said it is durable.
#
# Reading the ratio (backend / raw): 1.0 is the disk's speed.  Data that
# goes through the journal is written twice (journal, then object file), so
# about 0.5 is good for overwrites; new objects' data is written in place
# when larger than 256 KiB (smaller rides in the journal record, where a
# commit's small objects share one flush), so seq-write can come near 1.0.  Far below that, the backend spends time
# of its own (CPU, extra syncs, commits not batched).  The raw figures of a
# shared or virtual disk vary by 1.5x or more between runs: compare ratios
# of one run, and repeat a run before believing a change.  Backend rows at
# queue depth > 1 are set against raw at depth 1, so a backend that batches
# commits can exceed 1.0 there.  Read ratios above 1.0 mean the backend was
# served by the page cache (raw reads are O_DIRECT): run as root with
# --drop-caches for disk reads.
#
# Usage: bench/backend.sh [--drop-caches] [--seconds S] [EXTRA BENCH ARGS...]
# Environment: TESSERA (default build/tools/tessera/tessera), PLUGIN_DIR
# (default build/lib/plugins), BENCH_DIR (default /var/tmp): the store goes
# in a new directory there, so BENCH_DIR picks the file system measured.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
T=${TESSERA:-build/tools/tessera/tessera}
P=${PLUGIN_DIR:-build/lib/plugins}
[ -x "$T" ] || { echo "build first: ./dev.sh up (no $T)" >&2; exit 1; }
for b in file blockdev; do
	[ -e "$P/$b.so" ] || { echo "no $b backend in $P (set PLUGIN_DIR)" >&2; exit 1; }
done
tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/tsr-bench-backend-XXXXXX")
# the bench removes its own store and scratch; this catches the rest
trap 'rm -rf "$tmp"' EXIT

"$T" backend bench --plugin-dir "$P" --plugin file -o path="$tmp/store" \
	-o journal_size=1G "$@"
echo
"$T" backend bench --plugin-dir "$P" --plugin blockdev -o path="$tmp/dev.img" \
	-o size=8G -o zero_fill=true "$@"
