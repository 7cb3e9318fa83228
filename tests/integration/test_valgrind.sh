#!/bin/sh
# test_valgrind.sh — a daemon's clean start and stop leaks nothing and
# touches no invalid memory: tsr-testd (with a plugin configured), a
# one-monitor tessera-mon (which elects itself, answers `tessera status`
# and commits a change), tessera-osd (--mkfs, then a run that boots into
# the map and computes its PGs) and tessera-mds (takes rank 0 of a new file
# system, makes a directory and a file, writes back) run under valgrind,
# answer, and stop on SIGTERM.
# Skipped (77) in sanitizer builds, where valgrind cannot run, and when
# valgrind is not installed (dev.sh installs it).
set -u
: "${TESTD:?}" "${TESSERA:?}" "${TESSERA_MON:?}" "${TESSERA_OSD:?}" "${TESSERA_MDS:?}" "${TEST_PLUGIN_DIR:?}" "${LIBTOOL:?}"
if [ "${SANITIZERS:-no}" = yes ]; then
	echo "SKIP: sanitizer build; valgrind and ASan do not mix"; exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 77
fi
tmp=$(mktemp -d /tmp/tsr-valgrind-test-XXXXXX)
pid=
monpid=
osdpid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$monpid" ] && kill -9 "$monpid" 2>/dev/null
	[ -n "$osdpid" ] && kill -9 "$osdpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() {
	echo "FAIL: $*"
	cat "$tmp/valgrind.out" "$tmp"/*.log 2>/dev/null
	echo "0 passed, 1 failed"; exit 1
}

# A port nobody listens on: the first of a few that bash cannot connect to.
port=
for p in $(shuf -i 20000-60000 -n 20); do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || fail "no free port found"

cat > "$tmp/testd.conf" <<CONF
global = { run_dir = "$tmp/run"; plugin_dir = "$TEST_PLUGIN_DIR"; log_file = "$tmp/\$name.log"; };
testd = { tick = "50ms"; partitioner = { plugin = "good"; salt = 3; }; };
CONF
cat > "$tmp/mon.conf" <<CONF
global = { run_dir = "$tmp/run"; plugin_dir = "$PLUGIN_DIR"; log_file = "$tmp/\$name.log";
           fsid = "$(cat /proc/sys/kernel/random/uuid)";
           mon_members = "a=127.0.0.1:$port"; mon_data = "$tmp/\$name";
           osd_data = "$tmp/\$name"; backend_options = "journal_size=8M";
           osd_beacon_interval = "200ms"; keyring = "$tmp/\$name.keyring"; };
CONF
# the monitor's secret and the admin's key, as an operator makes them
"$TESSERA" auth init -o "$tmp/mon-a.keyring" >/dev/null ||
	fail "tessera auth init failed"
"$TESSERA" auth key client.admin --secret "$tmp/mon-a.keyring" \
	-o "$tmp/client-admin.keyring" >/dev/null || fail "tessera auth key failed"
"$TESSERA" auth key osd.0 --secret "$tmp/mon-a.keyring" \
	-o "$tmp/osd-0.keyring" >/dev/null || fail "tessera auth key failed"
"$TESSERA" auth key mds.a --secret "$tmp/mon-a.keyring" \
	-o "$tmp/mds-a.keyring" >/dev/null || fail "tessera auth key failed"

# run_daemon CONF PROGRAM ARGS...: start it under valgrind in the background
run_daemon() {
	conf=$1; shift
	rm -f "$tmp/valgrind.out"
	"$LIBTOOL" --mode=execute valgrind --quiet --leak-check=full \
		--show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect,possible \
		--error-exitcode=99 --log-file="$tmp/valgrind.out" \
		"$@" -f -c "$tmp/$conf" &
	pid=$!
}

# until_ok CMD...: retry for up to 30 s
until_ok() {
	for i in $(seq 1 300); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	return 1
}

# stop_daemon NAME: SIGTERM, wait, check the exit status and valgrind's report
stop_daemon() {
	kill -TERM "$pid"
	for i in $(seq 1 300); do
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid"; wait "$pid"; pid=
		fail "$1 under valgrind did not stop within 30 s of SIGTERM"
	fi
	wait "$pid"; status=$?   # it has exited: returns at once
	pid=
	if [ "$status" -ne 0 ] || [ -s "$tmp/valgrind.out" ]; then
		fail "$1: exit status $status; valgrind says the above"
	fi
}

run_daemon testd.conf "$TESTD" -i 1
until_ok "$TESSERA" admin -t 2 "$tmp/run/testd-1.asok" where 99 4 ||
	fail "tsr-testd under valgrind did not answer within 30 s"
"$TESSERA" admin "$tmp/run/testd-1.asok" status >/dev/null
"$TESSERA" admin "$tmp/run/testd-1.asok" config show >/dev/null
stop_daemon tsr-testd

run_daemon mon.conf "$TESSERA_MON" -i a
until_ok "$TESSERA" status --conf "$tmp/mon.conf" --timeout 2 ||
	fail "tessera-mon under valgrind did not answer tessera status within 30 s"
"$TESSERA" pool create vg --conf "$tmp/mon.conf" >/dev/null ||
	fail "tessera-mon under valgrind did not commit a change"
"$TESSERA" osd add --host h1 --conf "$tmp/mon.conf" >/dev/null ||
	fail "tessera-mon under valgrind did not add an OSD (the placement plugin makes its map)"
"$TESSERA" pool ls --conf "$tmp/mon.conf" | grep -q '^vg ' ||
	fail "tessera-mon under valgrind lost a change"
"$TESSERA" admin "$tmp/run/mon-a.asok" status >/dev/null
stop_daemon tessera-mon

# the OSD: its mkfs and a run, with the monitor running plainly
"$LIBTOOL" --mode=execute valgrind --quiet --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	--error-exitcode=99 --log-file="$tmp/valgrind.out" \
	"$TESSERA_OSD" --mkfs -i 0 -c "$tmp/mon.conf" >/dev/null ||
	fail "tessera-osd --mkfs under valgrind failed"
[ -s "$tmp/valgrind.out" ] && fail "tessera-osd --mkfs: valgrind says the above"
"$TESSERA_MON" -f -c "$tmp/mon.conf" -i a 2>/dev/null &
monpid=$!
until_ok "$TESSERA" status --conf "$tmp/mon.conf" --timeout 2 ||
	fail "tessera-mon did not come back"
run_daemon mon.conf "$TESSERA_OSD" -i 0
osd_ready() {
	"$TESSERA" admin -t 2 "$tmp/run/osd-0.asok" pg ls | grep -q '"count": [1-9]'
}
until_ok osd_ready ||
	fail "tessera-osd under valgrind did not boot and list its PGs within 30 s"
"$TESSERA" admin "$tmp/run/osd-0.asok" store | grep -q '"whoami": 0' ||
	fail "tessera-osd under valgrind: admin store failed"
"$TESSERA" admin "$tmp/run/osd-0.asok" status >/dev/null ||
	fail "tessera-osd under valgrind: admin status failed"
stop_daemon tessera-osd

# the MDS, with the monitor and the OSD running plainly: one copy of each
# object is enough here
"$TESSERA_OSD" -f -c "$tmp/mon.conf" -i 0 2>/dev/null &
osdpid=$!
for pool in data metadata; do
	"$TESSERA" pool create $pool 8 --size 1 --min-size 1 --conf "$tmp/mon.conf" \
		>/dev/null || fail "pool create $pool failed"
done
run_daemon mon.conf "$TESSERA_MDS" -i a
mds_active() {
	"$TESSERA" admin -t 2 "$tmp/run/mds-a.asok" mds status | grep -q '"active": true'
}
until_ok mds_active || fail "tessera-mds under valgrind did not take rank 0 within 30 s"
fs_works() {
	"$TESSERA" fs mkdir -p /vg/dir --conf "$tmp/mon.conf" --timeout 10 &&
		"$TESSERA" fs put "$tmp/mon.conf" /vg/dir/f --conf "$tmp/mon.conf" --timeout 10 &&
		"$TESSERA" fs ls /vg/dir --conf "$tmp/mon.conf" --timeout 10 | grep -q ' f$'
}
until_ok fs_works || fail "tessera-mds under valgrind did not serve mkdir, put and ls"
sleep 1.5 # a write-back
"$TESSERA" admin "$tmp/run/mds-a.asok" status >/dev/null ||
	fail "tessera-mds under valgrind: admin status failed"
stop_daemon tessera-mds
kill -TERM "$osdpid"; wait "$osdpid"; osdpid=
kill -TERM "$monpid"; wait "$monpid"; monpid=

echo "valgrind: no errors and no leaks over start, commands and stop (tsr-testd, tessera-mon, tessera-osd, tessera-mds)"
echo "4 passed, 0 failed"
