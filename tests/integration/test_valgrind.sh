#!/bin/sh
# test_valgrind.sh — a daemon's clean start and stop leaks nothing and
# touches no invalid memory: tsr-testd, with a plugin configured, runs under
# valgrind, answers its admin socket, and stops on SIGTERM.  Skipped (77)
# in sanitizer builds, where valgrind cannot run, and when valgrind is not
# installed (dev.sh installs it).
set -u
: "${TESTD:?}" "${TESSERA:?}" "${TEST_PLUGIN_DIR:?}" "${LIBTOOL:?}"
if [ "${SANITIZERS:-no}" = yes ]; then
	echo "SKIP: sanitizer build; valgrind and ASan do not mix"; exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 77
fi
tmp=$(mktemp -d /tmp/tsr-valgrind-test-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cat > "$tmp/tessera.conf" <<CONF
global = { run_dir = "$tmp/run"; plugin_dir = "$TEST_PLUGIN_DIR"; log_file = "$tmp/\$name.log"; };
testd = { tick = "50ms"; partitioner = { plugin = "good"; salt = 3; }; };
CONF
"$LIBTOOL" --mode=execute valgrind --quiet --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	--error-exitcode=99 --log-file="$tmp/valgrind.out" \
	"$TESTD" -f -i 1 -c "$tmp/tessera.conf" &
pid=$!
up=no
for i in $(seq 1 300); do
	if "$TESSERA" admin -t 2 "$tmp/run/testd-1.asok" where 99 4 >/dev/null 2>&1; then
		up=yes; break
	fi
	sleep 0.1
done
if [ $up != yes ]; then
	echo "FAIL: daemon under valgrind did not answer within 30 s"
	cat "$tmp/valgrind.out" "$tmp/testd-1.log" 2>/dev/null
	echo "0 passed, 1 failed"; exit 1
fi
"$TESSERA" admin "$tmp/run/testd-1.asok" status >/dev/null
"$TESSERA" admin "$tmp/run/testd-1.asok" config show >/dev/null
kill -TERM "$pid"
status=
for i in $(seq 1 300); do
	if ! kill -0 "$pid" 2>/dev/null; then break; fi
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: daemon under valgrind did not stop within 30 s of SIGTERM"
	kill -9 "$pid"; wait "$pid"; pid=
	cat "$tmp/valgrind.out"
	echo "0 passed, 1 failed"; exit 1
fi
wait "$pid"; status=$?   # it has exited: returns at once
pid=
if [ "$status" -ne 0 ] || [ -s "$tmp/valgrind.out" ]; then
	echo "FAIL: exit status $status; valgrind says:"
	cat "$tmp/valgrind.out"
	echo "0 passed, 1 failed"; exit 1
fi
echo "valgrind: no errors and no leaks over start, admin commands and stop"
echo "1 passed, 0 failed"
