#!/bin/sh
# test_tool.sh — tessera-conformance as the author of an out-of-tree plugin
# runs it: usage errors (exit 2), --list, a placement plugin held to a
# golden digest given on the command line, a backend plugin with options
# from -o and its stores under --dir, a plugin of the wrong kind.  Needs
# PLACEMENT_PLUGINS and BACKEND_FILE_PLUGIN (set by `make check`); runs
# from the build directory, or TESSERA_CONFORMANCE names the program.
set -u
: "${PLACEMENT_PLUGINS:?}" "${BACKEND_FILE_PLUGIN:?}"
CF=${TESSERA_CONFORMANCE:-tests/conformance/tessera-conformance}
CRUSH=${PLACEMENT_PLUGINS%%:*}
pass=0 fail=0
tmp=$(mktemp -d /tmp/tsr-cf-tool-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# expect NAME STATUS PATTERN CMD...: run CMD (at most 300 s), check its exit
# status and that its combined output contains PATTERN (a fixed string).
expect() {
	name=$1 want=$2 pat=$3
	shift 3
	out=$(timeout 300 "$@" 2>&1)
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL $name: exit $got, expected $want; output:"
		echo "$out" | tail -20
		fail=$((fail + 1)); return
	fi
	case $out in
	*"$pat"*) pass=$((pass + 1)) ;;
	*) echo "FAIL $name: output lacks '$pat':"; echo "$out" | tail -20
	   fail=$((fail + 1)) ;;
	esac
}

expect help 0 "Usage: tessera-conformance backend PLUGIN.so" "$CF" --help
expect help-exit 0 "Exit status: 0 when every test passed" "$CF" placement --help
expect version 0 "plugin ABI 1.1" "$CF" --version
expect no-kind 2 "which kind of plugin: backend or placement?" "$CF"
expect bad-kind 2 "unknown plugin kind 'frobnicate'" "$CF" frobnicate x.so
expect no-plugin 2 "which plugin? Name its .so file after 'backend'" "$CF" backend
expect two-plugins 2 "one plugin at a time: 'b.so' is one too many" \
	"$CF" backend a.so b.so
expect o-placement 2 "-o is for backend plugins" "$CF" placement x.so -o a=b
expect o-not-kv 2 "-o novalue: not KEY=VALUE" "$CF" backend x.so -o novalue
expect o-semicolon 2 "a value may not hold ';'" "$CF" backend x.so -o 'a=b;c=d'
expect digest-backend 2 "--digest is for placement plugins" \
	"$CF" backend x.so --digest 12
expect digest-bad 2 "--digest 12zz: not a 64-bit hexadecimal number" \
	"$CF" placement x.so --digest 12zz
expect rounds-bad 2 "--crash-rounds 0: not a number of rounds" \
	"$CF" backend x.so --crash-rounds 0
expect unknown-test 2 "the backend suite has no test 'nosuch'; it has:" \
	"$CF" backend x.so --test nosuch
expect list-backend 0 "crash" "$CF" backend --list
expect list-placement 0 "determinism" "$CF" placement --list

# a placement plugin held to its digest: crush's (tests/conformance/
# test_placement.c), then a wrong one
expect placement-digest 0 "100%: Checks: 2, Failures: 0" \
	"$CF" placement "$CRUSH" --test determinism --digest a22d6a78902fad1c
expect placement-digest-wrong 1 \
	"placement changed: digest a22d6a78902fad1c, golden 0000000000000123 (--digest)" \
	"$CF" placement "$CRUSH" --test determinism --digest 123
# the wrong kind: refused by plugin_loads, which names the file
expect wrong-kind 1 "$BACKEND_FILE_PLUGIN: a backend plugin, not a placement plugin" \
	"$CF" placement "$BACKEND_FILE_PLUGIN" --test errors
expect missing-file 1 "$tmp/none.so: cannot load" \
	"$CF" placement "$tmp/none.so"

# a backend plugin: options from -o, stores under --dir, removed after
mkdir "$tmp/stores"
expect backend-lifecycle 0 "100%: Checks: 3, Failures: 0" \
	"$CF" backend "$BACKEND_FILE_PLUGIN" -o journal_size=8M --dir "$tmp/stores" \
	--test lifecycle --test ops_zero
if [ -n "$(ls -A "$tmp/stores")" ]; then
	echo "FAIL backend-scratch-removed: left in $tmp/stores:"; ls -A "$tmp/stores"
	fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
expect backend-bad-option 1 "unknown option 'bogus'" \
	"$CF" backend "$BACKEND_FILE_PLUGIN" -o bogus=1 --dir "$tmp/stores" \
	--test lifecycle
expect backend-bad-dir 1 "mkdtemp $tmp/none/tsr-test-backend." \
	"$CF" backend "$BACKEND_FILE_PLUGIN" --dir "$tmp/none"

echo "test_tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
