#!/usr/bin/env bash
# bench/fs.sh — the file system through its FUSE mount, set against a plain
# FUSE passthrough of a local directory measured in the same run (the floor
# any FUSE file system pays: libfuse's passthrough_ll example, built here
# from libfuse3-dev's examples) and, with --ceph, against ceph-fuse on the
# anchor cluster (../shared/anchors/ceph.sh: CephFS at /mnt/cephfs-anchor).
#
# The lines (fio for the data, bench/fsops.c for the names):
#   seq write 4 MiB     1 GiB in 4 MiB writes, fsync at the end    MiB/s
#   seq read 4 MiB      it back, page cache dropped first           MiB/s
#   rand write 4 KiB    4 jobs, 128 MiB files, 30 s                 IOPS
#   rand read 4 KiB     4 jobs, the same files, cache dropped       IOPS
#   fsync'd 4 KiB       one job, each write followed by fsync       IOPS
#   create/stat/rename/unlink   5,000 files, 1 process and 4        ops/s
#   tree copy           cp -a of ~8,000 small files (a source tree
#                       copied until it reaches that many)         files/s
#   tree remove         rm -rf of it                               files/s
# Each line is timed once the work the one before left in the background
# is done (settle: sync, and Tessera's purges of removed files).
# Tessera keeps 3 copies of data and metadata (the development cluster's
# pools), as the anchors do.  The resident memory of the MDS and of the
# FUSE client is printed after the run.
#
# Usage: bench/fs.sh [--seconds S] [--ceph] [--only tessera|passthrough]
# The development cluster is started if it is not running (and stopped
# again if this script started it).  Needs fio, jq and bc (installed when
# missing).
# Benchmarks hold /tmp/bench.lock while they time something.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
SECS=30
CEPH=0
ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift ;;
	--ceph) CEPH=1 ;;
	--only) ONLY=$2; shift ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for tool in fio jq bc; do
	command -v $tool >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $tool >/dev/null
done
WORK=$(mktemp -d /tmp/tsr-bench-fs.XXXXXX)
PT_PID=
STARTED=0
cleanup() {
	if [ -n "$PT_PID" ]; then
		fusermount3 -u -z "$WORK/pt-mnt" 2>/dev/null || true
		kill "$PT_PID" 2>/dev/null || true
	fi
	[ "$STARTED" = 1 ] && ./dev.sh down >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# the tools: fsops, the passthrough
gcc -O2 -Wall -o "$WORK/fsops" bench/fsops.c
gcc -O2 -Wall /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c \
	$(pkg-config fuse3 --cflags --libs) -o "$WORK/passthrough_ll"

# a tree of about 8,000 small files: copies of the source tree's files
mkdir -p "$WORK/tree"
n=0
while [ "$n" -lt 8000 ]; do
	cp -r core client daemons plugins tools "$WORK/tree/" 2>/dev/null
	mv "$WORK/tree/core" "$WORK/tree/core$n" && mv "$WORK/tree/client" "$WORK/tree/client$n"
	mv "$WORK/tree/daemons" "$WORK/tree/daemons$n" && mv "$WORK/tree/plugins" "$WORK/tree/plugins$n"
	mv "$WORK/tree/tools" "$WORK/tree/tools$n"
	n=$(find "$WORK/tree" -type f | wc -l)
done
TREE_FILES=$n

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# Between lines, what the line before left to do in the background is
# done before the next is timed, so each line measures its own work: the
# kernel's dirty pages (sync) and, for Tessera, the removal of the data
# of the files the line before deleted (the MDS's purges, which run once
# clients are quiet: doc/architecture.md "Purges").  At most 120 s; the
# wait is printed on stderr.
mds_purges() {
	local s
	for s in "$SRC"/dev-cluster/run/mds-*.asok; do
		"$SRC"/build/tools/tessera/tessera admin "$s" mds status 2>/dev/null |
			jq -r 'select(.active) | .purges'
	done | head -1
}
settle() { # LABEL
	local t0=$SECONDS n i
	sync
	if [ "$1" = tessera ]; then
		for i in $(seq 1 240); do
			n=$(mds_purges)
			[ "${n:-0}" = 0 ] && break
			sleep 0.5
		done
	fi
	echo "$1: settled in $((SECONDS - t0)) s" >&2
}

fio_line() { # DIR NAME ARGS... -> prints the figure fio reports
	local dir=$1 name=$2; shift 2
	fio --name="$name" --directory="$dir" --ioengine=psync --group_reporting \
		--output-format=json "$@" > "$WORK/$name.json"
}

# bw in MiB/s or IOPS from fio's JSON
fio_get() { # FILE read|write bw|iops
	if [ "$3" = bw ]; then
		jq -r ".jobs[0].$2.bw_bytes / 1048576 * 10 | round / 10" "$1"
	else
		jq -r ".jobs[0].$2.iops * 10 | round / 10" "$1"
	fi
}

run_lines() { # LABEL DIR -> lines "LABEL line value"
	local label=$1 dir=$2 out=$WORK/$1.txt
	: > "$out"
	exec 9>/tmp/bench.lock
	flock 9
	settle "$label"
	fio_line "$dir" sw --rw=write --bs=4M --size=1G --end_fsync=1
	echo "seq-write-MiB/s $(fio_get "$WORK/sw.json" write bw)" >> "$out"
	drop
	fio_line "$dir" sw --rw=read --bs=4M --size=1G
	echo "seq-read-MiB/s $(fio_get "$WORK/sw.json" read bw)" >> "$out"
	rm -f "$dir"/sw.*
	settle "$label"
	fio_line "$dir" rw --rw=randwrite --bs=4k --size=128M --numjobs=4 --time_based \
		--runtime="$SECS" --end_fsync=1
	echo "rand-write-IOPS $(fio_get "$WORK/rw.json" write iops)" >> "$out"
	drop
	fio_line "$dir" rw --rw=randread --bs=4k --size=128M --numjobs=4 --time_based \
		--runtime="$SECS"
	echo "rand-read-IOPS $(fio_get "$WORK/rw.json" read iops)" >> "$out"
	rm -f "$dir"/rw.*
	settle "$label"
	fio_line "$dir" fs --rw=write --bs=4k --size=64M --fsync=1 --time_based \
		--runtime="$SECS"
	echo "fsync-4K-IOPS $(fio_get "$WORK/fs.json" write iops)" >> "$out"
	rm -f "$dir"/fs.*
	for p in 1 4; do
		settle "$label"
		mkdir "$dir/ops$p"
		"$WORK/fsops" "$dir/ops$p" 5000 $p | while read -r op v; do
			echo "$op-$p-ops/s $v" >> "$out"
		done
		rm -rf "$dir/ops$p"
	done
	local t0 t1
	settle "$label"
	t0=$(date +%s.%N)
	cp -a "$WORK/tree" "$dir/tree"
	t1=$(date +%s.%N)
	echo "tree-copy-files/s $(echo "$TREE_FILES / ($t1 - $t0)" | bc -l | xargs printf '%.1f')" >> "$out"
	settle "$label"
	t0=$(date +%s.%N)
	rm -rf "$dir/tree"
	t1=$(date +%s.%N)
	echo "tree-remove-files/s $(echo "$TREE_FILES / ($t1 - $t0)" | bc -l | xargs printf '%.1f')" >> "$out"
	flock -u 9
	sed "s/^/$label /" "$out"
}

# the passthrough of a local directory (the floor)
if [ "$ONLY" != tessera ]; then
	mkdir -p "$WORK/pt-src" "$WORK/pt-mnt"
	"$WORK/passthrough_ll" -f -o allow_other,source="$WORK/pt-src" "$WORK/pt-mnt" &
	PT_PID=$!
	for i in $(seq 1 100); do
		grep -q " $WORK/pt-mnt " /proc/mounts && break
		sleep 0.1
	done
	run_lines passthrough "$WORK/pt-mnt"
	fusermount3 -u "$WORK/pt-mnt"
	wait "$PT_PID" || true
	PT_PID=
fi

# Tessera, through the development cluster's mount
if [ "$ONLY" != passthrough ]; then
	DEV=$SRC/dev-cluster
	if ! grep -q " $DEV/mnt fuse.tessera " /proc/mounts; then
		./dev.sh up >/dev/null
		STARTED=1
	fi
	mkdir -p "$DEV/mnt/bench"
	run_lines tessera "$DEV/mnt/bench"
	rm -rf "$DEV/mnt/bench"
	for d in mds-a mds-b; do
		pid=$(cat "$DEV/run/$d.pid" 2>/dev/null || true)
		[ -n "$pid" ] && echo "rss $d $(awk '/VmRSS/ { print $2 }' /proc/$pid/status) KiB"
	done
	# (mounted by dev.sh with the absolute path, by hand maybe not)
	pid=$(pgrep -f "tessera-fuse (\S*/)?dev-cluster/mnt( |$)" | head -1 || true)
	if [ -n "$pid" ]; then
		echo "rss tessera-fuse $(awk '/VmRSS/ { print $2 }' /proc/$pid/status) KiB"
	else
		echo "rss tessera-fuse: no process found for $DEV/mnt"
	fi
fi

if [ "$CEPH" = 1 ]; then
	../shared/anchors/ceph.sh start >/dev/null
	mkdir -p /mnt/cephfs-anchor/bench
	run_lines ceph-fuse /mnt/cephfs-anchor/bench
	rm -rf /mnt/cephfs-anchor/bench
	../shared/anchors/ceph.sh stop >/dev/null
fi
