#!/usr/bin/env bash
# dev.sh — build, try and test Tessera from a source tree.
#
#   ./dev.sh up     install what is missing, build, and run Tessera locally
#   ./dev.sh down   stop what `up` started
#   ./dev.sh test   install what is missing, build, run the whole test suite
#                   (plain, then under ASan+UBSan, then `make distcheck`)
#
# Both work as root on a fresh Debian 12 machine from a clean clone; as
# another user they use sudo for apt-get.  Builds go to build/ (plain) and
# build-asan/ (sanitizers), outside the source directories.
set -euo pipefail
cd "$(dirname "$0")"
SRC=$(pwd)
JOBS=$(nproc 2>/dev/null || echo 2)

# Debian packages the build, the tests and the local cluster need.
PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libconfig-dev libzstd-dev libsodium-dev libleveldb-dev check libfuse3-dev fuse3
	valgrind procps clang libclang-rt-14-dev
	git sqlite3 rsync
)

# each step with the time since this script started, so the suite's
# budget (20 minutes on a 2-core machine) stays in sight
log() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

install_deps() {
	local missing=() p sudo=
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	log "installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [CONFIGURE-FLAGS...]: configure once per directory, then make.
build() {
	local dir=$1
	shift
	if [ ! -x configure ] || [ configure.ac -nt configure ]; then
		log "generating the build system (autogen.sh)"
		./autogen.sh
	fi
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ]; then
		log "configuring $dir $*"
		(cd "$dir" && "$SRC/configure" -q "$@")
	fi
	log "building $dir"
	make -C "$dir" -s -j"$JOBS"
}

# Sum the automake test-suite summaries of the given logs.
count() {
	local what=$1
	shift
	awk -v w="# $what:" '$1" "$2 == w { n += $3 } END { print n + 0 }' "$@"
}

run_suite() {
	local dir=$1 rc=0
	log "running the test suite in $dir"
	make -C "$dir" -s -j"$JOBS" check || rc=$?
	if [ $rc -ne 0 ] && [ -f "$dir/test-suite.log" ]; then
		cat "$dir/test-suite.log"
	fi
	return $rc
}

# The local cluster: what exists of it runs from dev-cluster/ on loopback.
DEV=$SRC/dev-cluster
MON_PORTS=(6789 6790 6791)
NOSDS=4
MDSS="a b"

cmd_up() {
	install_deps
	build build
	log "$(build/tools/tessera/tessera version)"
	mkdir -p "$DEV/run"
	# a configuration from before keys, OSDs or the cluster id existed is
	# written anew
	if [ -f "$DEV/tessera.conf" ] && ! grep -q fsid "$DEV/tessera.conf"; then
		rm -f "$DEV/tessera.conf"
	fi
	if [ ! -f "$DEV/tessera.conf" ]; then
		# Seven daemons and the clients share this machine: with fewer
		# than two cores an OSD, each daemon runs one thread of each
		# kind (the defaults suit one OSD on a few cores of its own;
		# here they wake more threads than there are cores to run them).
		local small="" commit=""
		if [ "$JOBS" -lt 8 ]; then
			small="
  osd_op_shards = 1;
  ms_workers = 1;
  ms_dispatchers = 1;"
			commit=",commit_threads=1"
		fi
		cat >"$DEV/tessera.conf" <<EOF
# The local development cluster (./dev.sh up); every daemon on loopback.
global = {
  fsid = "$(cat /proc/sys/kernel/random/uuid)";
  run_dir = "$DEV/run";
  log_file = "$DEV/run/\$name.log";
  plugin_dir = "$SRC/build/lib/plugins";
  mon_members = "a=127.0.0.1:${MON_PORTS[0]}, b=127.0.0.1:${MON_PORTS[1]}, c=127.0.0.1:${MON_PORTS[2]}";
  mon_data = "$DEV/\$name";
  osd_data = "$DEV/\$name";
  backend_options = "journal_size=64M$commit";
  keyring = "$DEV/keys/\$name.keyring";$small
};
EOF
	fi
	# keys: the cluster secret for each monitor, the admin's own key
	# (doc/operations.md, "Keys")
	local t=build/tools/tessera/tessera
	if [ ! -f "$DEV/keys/mon-a.keyring" ]; then
		log "making the cluster secret and keys in $DEV/keys"
		mkdir -p -m 700 "$DEV/keys"
		$t auth init -o "$DEV/keys/mon-a.keyring" >/dev/null
		cp -p "$DEV/keys/mon-a.keyring" "$DEV/keys/mon-b.keyring"
		cp -p "$DEV/keys/mon-a.keyring" "$DEV/keys/mon-c.keyring"
		$t auth key client.admin --secret "$DEV/keys/mon-a.keyring" \
			-o "$DEV/keys/client-admin.keyring" >/dev/null
	fi
	local m
	for m in a b c; do
		if [ -f "$DEV/run/mon-$m.pid" ] && kill -0 "$(cat "$DEV/run/mon-$m.pid")" 2>/dev/null; then
			echo "mon.$m: already running"
		else
			# returns once the monitor is serving, or fails saying why
			build/daemons/mon/tessera-mon --conf "$DEV/tessera.conf" --id "$m"
			echo "mon.$m: started"
		fi
	done
	# OSDs: each in the map (its own host name, so that the default
	# rule's copies on distinct hosts can be met), a store, running
	local i conf="$DEV/tessera.conf" tree
	tree=$($t osd tree --format json --conf "$conf" --timeout 20)
	for i in $(seq 0 $((NOSDS - 1))); do
		if ! grep -q "{\"id\": $i," <<<"$tree"; then
			$t osd add "$i" --host "dev$i" --conf "$conf" >/dev/null
		fi
		if [ ! -f "$DEV/keys/osd-$i.keyring" ]; then
			$t auth key "osd.$i" --secret "$DEV/keys/mon-a.keyring" \
				-o "$DEV/keys/osd-$i.keyring" >/dev/null
		fi
		if [ ! -e "$DEV/osd-$i" ]; then
			build/daemons/osd/tessera-osd --mkfs --conf "$conf" --id "$i"
		fi
		if [ -f "$DEV/run/osd-$i.pid" ] && kill -0 "$(cat "$DEV/run/osd-$i.pid")" 2>/dev/null; then
			echo "osd.$i: already running"
		else
			# returns once the OSD is serving, or fails saying why
			build/daemons/osd/tessera-osd --conf "$conf" --id "$i"
			echo "osd.$i: started"
		fi
	done
	if ! $t pool ls --conf "$conf" --timeout 20 | grep -q '^data '; then
		$t pool create data 64 --size 3 --conf "$conf" >/dev/null
		echo "pool data: created (64 PGs, 3 copies)"
	fi
	if ! $t pool ls --conf "$conf" --timeout 20 | grep -q '^metadata '; then
		$t pool create metadata 32 --size 3 --conf "$conf" >/dev/null
		echo "pool metadata: created (32 PGs, 3 copies)"
	fi
	# MDSs: the first takes rank 0 (and makes the file system on a new
	# cluster), the second stands by
	for m in $MDSS; do
		if [ ! -f "$DEV/keys/mds-$m.keyring" ]; then
			$t auth key "mds.$m" --secret "$DEV/keys/mon-a.keyring" \
				-o "$DEV/keys/mds-$m.keyring" >/dev/null
		fi
		if [ -f "$DEV/run/mds-$m.pid" ] && kill -0 "$(cat "$DEV/run/mds-$m.pid")" 2>/dev/null; then
			echo "mds.$m: already running"
		else
			build/daemons/mds/tessera-mds --conf "$conf" --id "$m"
			echo "mds.$m: started"
		fi
	done
	for i in $(seq 1 300); do
		$t mds stat --conf "$conf" --timeout 5 2>/dev/null | grep -q 'rank 0: active' && break
		sleep 0.1
	done
	# the file system, mounted through FUSE
	mkdir -p "$DEV/mnt"
	if grep -q " $DEV/mnt fuse.tessera " /proc/mounts; then
		echo "mount: already at $DEV/mnt"
	else
		# returns once mounted, or fails saying why
		build/tools/tessera-fuse/tessera-fuse "$DEV/mnt" -o "conf=$conf"
		echo "mount: $DEV/mnt"
	fi
	log "tessera status"
	$t status --conf "$conf" --timeout 20
	cat <<EOF

The file system is mounted at $DEV/mnt (cd into it).
Three monitors run on 127.0.0.1:${MON_PORTS[0]}-${MON_PORTS[2]}, $NOSDS OSDs (file backend)
and two MDSs (one active, one standing by) on 127.0.0.1, their stores and
logs in $DEV, the keys in $DEV/keys; the pools "data" (64 PGs) and
"metadata" (32 PGs) keep 3 copies.  Try:
  export TESSERA_CONF=$DEV/tessera.conf
  build/tools/tessera/tessera status
  build/tools/tessera/tessera osd tree
  build/tools/tessera/tessera object put data hello /etc/hostname
  build/tools/tessera/tessera object ls data
  build/tools/tessera/tessera bench data 10 write
  build/tools/tessera/tessera admin $DEV/run/osd-0.asok pg dump
  build/tools/tessera/tessera mds stat
  build/tools/tessera/tessera fs mkdir -p /projects/a
  build/tools/tessera/tessera fs put /etc/hostname /projects/a/hostname
  build/tools/tessera/tessera fs ls /projects/a
Stop them, and unmount, with ./dev.sh down.  Programs reach the file
system without a mount through the file client library (doc/client.md).
EOF
}

# the pid of the tessera-fuse serving $DEV/mnt (one of its arguments is
# exactly that path), or nothing
fuse_pid() {
	local pid
	for pid in $(pgrep -x tessera-fuse || true); do
		if tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -Fxq "$DEV/mnt"; then
			echo "$pid"
			return
		fi
	done
}

cmd_down() {
	local fuse i
	fuse=$(fuse_pid)
	if grep -q " $DEV/mnt fuse.tessera " /proc/mounts 2>/dev/null; then
		if fusermount3 -u "$DEV/mnt" 2>/dev/null; then
			echo "unmounted $DEV/mnt"
		else
			# in use: it serves its last users on (theirs to close)
			fusermount3 -u -z "$DEV/mnt"
			echo "unmounted $DEV/mnt (lazily: still in use)"
			fuse=
		fi
	fi
	# tessera-fuse sends what it held back, and tells the MDS the sizes,
	# after the unmount: the cluster stays up until it is done (bounded)
	for i in $(seq 1 600); do
		[ -n "$fuse" ] && kill -0 $fuse 2>/dev/null || break
		[ "$i" = 10 ] && echo "tessera-fuse (pid $fuse): writing back what it held"
		sleep 0.1
	done
	if [ -n "$fuse" ] && kill -0 $fuse 2>/dev/null; then
		echo "tessera-fuse (pid $fuse) still running after 60 s: killed" >&2
		kill -9 $fuse 2>/dev/null || true
	fi
	# the MDSs first, while the OSDs they write their last state to run;
	# then the OSDs, then the monitors
	local rc=0
	stop_daemons mds-a mds-b || rc=1
	stop_daemons $(seq -f "osd-%g" 0 $((NOSDS - 1))) || rc=1
	stop_daemons mon-a mon-b mon-c || rc=1
	return $rc
}

# SIGTERM the named daemons of ours and wait until they are gone (bounded)
stop_daemons() {
	local d pid pids=() i alive
	for d in "$@"; do
		pid=$(cat "$DEV/run/$d.pid" 2>/dev/null || true)
		# only a daemon of ours: a stale pid file may name another process
		if [ -n "$pid" ] && grep -q "tessera-" "/proc/$pid/cmdline" 2>/dev/null &&
			kill "$pid" 2>/dev/null; then
			echo "${d/-/.}: stopping (pid $pid)"
			pids+=("$pid")
		fi
	done
	# until they are gone, so that `up` right after starts anew
	for i in $(seq 1 150); do
		alive=0
		for pid in "${pids[@]}"; do
			if kill -0 "$pid" 2>/dev/null; then alive=1; break; fi
		done
		[ $alive -eq 0 ] && return 0
		sleep 0.1
	done
	echo "still running after 15 s: ${pids[*]}" >&2
	return 1
}

cmd_test() {
	local rc=0 logs=()
	install_deps
	# A failed build is reported in the summary line like a failed test,
	# so every run ends with that line.
	if build build; then
		run_suite build || rc=1
		logs+=(build/test-suite.log)
	else
		echo "build: FAILED"; rc=1
	fi
	if build build-asan --enable-sanitizers; then
		run_suite build-asan || rc=1
		logs+=(build-asan/test-suite.log)
	else
		echo "build-asan: FAILED"; rc=1
	fi
	log "make distcheck (tarball builds, tests, installs and uninstalls cleanly)"
	if [ ! -f build/Makefile ]; then
		echo "distcheck: not run (no build)"; rc=1
	# The tarball's build, install and uninstall are what distcheck is
	# for; the plain and ASan runs above ran every test in full.  So here
	# the cluster tests tagged long (tests/cluster/tc_check.h) are left
	# out and the randomized runs are shorter.
	elif CK_EXCLUDE_TAGS=long NEMESIS_SECONDS=8 PGSIM_SEEDS=300 \
		make -C build -s -j"$JOBS" distcheck >build/distcheck.log 2>&1; then
		echo "distcheck: passed"
	else
		tail -50 build/distcheck.log
		echo "distcheck: FAILED (full log: build/distcheck.log)"
		rc=1
	fi
	local pass=0 fail=0 skip=0
	[ ${#logs[@]} -eq 0 ] && logs=(/dev/null)
	pass=$(count PASS "${logs[@]}")
	fail=$(( $(count FAIL "${logs[@]}") + $(count ERROR "${logs[@]}") + $(count XPASS "${logs[@]}") ))
	skip=$(count SKIP "${logs[@]}")
	[ $rc -ne 0 ] && [ "$fail" -eq 0 ] && fail=1 # distcheck or a build failed
	echo
	# The failing checks again, last, where a reader of only the end of
	# this output (a CI page) still sees which case failed and where.
	if [ "$fail" -ne 0 ]; then
		local d
		# (build/tessera-*/_build/sub: distcheck's own build)
		for d in build build-asan build/tessera-*/_build/sub; do
			[ -d "$d/tests" ] || continue
			{ grep -hE '^[^ :]+:[0-9]+:[EF]:' "$d"/tests/*/*.log 2>/dev/null || true; } |
				head -20 | sed "s|^|$d: |"
		done
	fi
	echo "tests: $pass passed, $fail failed, $skip skipped ($((SECONDS / 60)) min $((SECONDS % 60)) s in all)"
	return $rc
}

usage() {
	sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
test) cmd_test ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
