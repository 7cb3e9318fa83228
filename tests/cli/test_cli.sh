#!/bin/sh
# test_cli.sh — the `tessera` tool as a user runs it: plugins check on every
# broken test plugin (exact reason, exit 1), plugins list, option checks,
# config check, usage errors.  Needs TESSERA and TEST_PLUGIN_DIR (set by
# `make check`).
set -u
: "${TESSERA:?}" "${TEST_PLUGIN_DIR:?}" "${TOP_SRCDIR:?}"
pass=0 fail=0
tmp=$(mktemp -d /tmp/tsr-cli-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# expect NAME STATUS PATTERN CMD...: run CMD, check its exit status and that
# its combined output contains PATTERN (a fixed string).
expect() {
	name=$1 want=$2 pat=$3
	shift 3
	out=$("$@" 2>&1)
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL $name: exit $got, expected $want; output:"; echo "$out"
		fail=$((fail + 1)); return
	fi
	case $out in
	*"$pat"*) pass=$((pass + 1)) ;;
	*) echo "FAIL $name: output lacks '$pat':"; echo "$out"; fail=$((fail + 1)) ;;
	esac
}

P=$TEST_PLUGIN_DIR
expect check-good 0 "valid partitioner plugin 'good' version 1.0.0 (plugin ABI 1.0)" \
	"$TESSERA" plugins check "$P/good.so"
expect check-good-json 0 '"valid": true, "kind": "partitioner", "name": "good"' \
	"$TESSERA" plugins check --format json "$P/good.so"
expect check-bad-abi 1 "invalid plugin: $P/bad_abi.so: built for plugin ABI 2.0, this core speaks 1.0" \
	"$TESSERA" plugins check "$P/bad_abi.so"
expect check-newer-minor 1 "built for plugin ABI 1.7, newer than this core's 1.0" \
	"$TESSERA" plugins check "$P/newer_minor.so"
expect check-bad-kind 1 "$P/bad_kind.so: unknown plugin kind 99" \
	"$TESSERA" plugins check "$P/bad_kind.so"
expect check-no-desc 1 "$P/no_desc.so: not a Tessera plugin: it exports no 'tessera_plugin' descriptor symbol" \
	"$TESSERA" plugins check "$P/no_desc.so"
expect check-opt-type 1 "$P/bad_opt_type.so: partitioner plugin 'good': bad option schema: option 'label': unknown type 42" \
	"$TESSERA" plugins check "$P/bad_opt_type.so"
expect check-opt-range 1 "option 'split_size': default \"5000000\" is invalid: 5000000 is out of range [16, 1000000]" \
	"$TESSERA" plugins check "$P/bad_opt_range.so"
expect check-bad-ops 1 "mandatory operation 'balance' is NULL" \
	"$TESSERA" plugins check "$P/bad_ops.so"
expect check-bad-name 1 'plugin name "Bad Name" is not of the form' \
	"$TESSERA" plugins check "$P/bad_name.so"
expect check-bad-json 1 '"valid": false, "reason": ' \
	"$TESSERA" plugins check --format json "$P/bad_abi.so"
expect check-missing 1 "/nonexistent/x.so: cannot load" \
	"$TESSERA" plugins check /nonexistent/x.so
expect check-not-elf 1 "cannot load" \
	"$TESSERA" plugins check "$0"

# option values against the schema
expect opt-ok 0 "the 2 option value(s) given are valid" \
	"$TESSERA" plugins check "$P/good.so" -o salt=5 -o label=beta
expect opt-wrong-type 1 "option 'salt': expected an integer, got text \"abc\"" \
	"$TESSERA" plugins check "$P/good.so" -o salt=abc
expect opt-out-of-range 1 "option 'threshold': 99 is out of range [0, 10]" \
	"$TESSERA" plugins check "$P/good.so" -o threshold=99
expect opt-unknown 1 "unknown option 'nope'" \
	"$TESSERA" plugins check "$P/good.so" -o nope=1
expect opt-malformed 2 "-o takes KEY=VALUE" \
	"$TESSERA" plugins check "$P/good.so" -o salt
expect create 0 "an instance was created and destroyed" \
	"$TESSERA" plugins check "$P/good.so" --create -o salt=3

# listing: the good plugin, and every refused file named with its reason
expect list 0 "partitioner  good             1.0.0      $P/good.so" \
	"$TESSERA" plugins list --plugin-dir "$P"
expect list-refused 0 "9 file(s) in $P are not valid plugins" \
	"$TESSERA" plugins list --plugin-dir "$P"
expect list-dup 0 "$P/good_twin.so: duplicate plugin: partitioner plugin 'good' is already provided by $P/good.so" \
	"$TESSERA" plugins list --plugin-dir "$P"
expect list-json 0 '"kind": "partitioner", "name": "good", "version": "1.0.0"' \
	"$TESSERA" plugins list --plugin-dir "$P" --format json
expect list-env 0 "$P/good.so" env TESSERA_PLUGIN_DIR="$P" "$TESSERA" plugins list
expect list-missing-dir 1 "plugin directory /nonexistent-dir: No such file or directory" \
	"$TESSERA" plugins list --plugin-dir /nonexistent-dir

# configuration files
cat > "$tmp/ok.conf" <<CONF
global = { run_dir = "$tmp/run"; };
osd = { log_level = "debug"; };
osd-3 = { log_file = "$tmp/osd-3.log"; };
CONF
expect config-ok 0 "$tmp/ok.conf: valid" "$TESSERA" config check "$tmp/ok.conf"
printf 'global = { };\nosd-7 = {\n  log_levle = "debug";\n};\n' > "$tmp/typo.conf"
expect config-typo 1 "$tmp/typo.conf:3: section 'osd-7': unknown key 'log_levle' for a osd daemon" \
	"$TESSERA" config check "$tmp/typo.conf"
printf 'osd = { log_level = 3; };\n' > "$tmp/type.conf"
expect config-type 1 "$tmp/type.conf:1: osd: option 'log_level': expected a string, got an integer" \
	"$TESSERA" config check "$tmp/type.conf"
printf 'osd = { log_level = ; };\n' > "$tmp/syntax.conf"
expect config-syntax 1 "$tmp/syntax.conf:1: syntax error" \
	"$TESSERA" config check "$tmp/syntax.conf"
expect config-options 0 '| `admin_socket` | string | `$run_dir/$name.asok` |' \
	"$TESSERA" config options --format md

# doc/configuration.md carries the generated reference: keep it true
if [ -n "${TOP_SRCDIR:-}" ]; then
	doc="$TOP_SRCDIR/doc/configuration.md"
	sed -n '/^<!-- BEGIN OPTIONS/,/^<!-- END OPTIONS/p' "$doc" | sed '1d;$d' > "$tmp/doc.md"
	"$TESSERA" config options --format md > "$tmp/gen.md"
	if cmp -s "$tmp/doc.md" "$tmp/gen.md"; then
		pass=$((pass + 1))
	else
		echo "FAIL doc-reference: doc/configuration.md differs from 'tessera config options --format md':"
		diff "$tmp/doc.md" "$tmp/gen.md"
		fail=$((fail + 1))
	fi
fi

# usage
expect help 0 "Usage: tessera COMMAND" "$TESSERA" --help
expect sub-help 0 "Usage: tessera plugins check FILE.so" "$TESSERA" plugins check --help
expect version 0 "(plugin ABI 1.0)" "$TESSERA" version
expect unknown 2 "unknown command 'frob'" "$TESSERA" frob
expect group-only 2 "tessera plugins: which one?" "$TESSERA" plugins
expect check-two-files 2 "give exactly one FILE.so" "$TESSERA" plugins check a.so b.so
expect msgr-help 0 "Usage: tessera msgr bench" "$TESSERA" msgr bench --help
expect msgr-bad-seconds 2 "--seconds takes a number in (0, 3600], not 'x'" \
	"$TESSERA" msgr bench --seconds x
expect msgr-bench-json 0 '"workload": "stream-4MiB"' \
	"$TESSERA" msgr bench --seconds 0.2 --inline --format json
# the backend bench end to end, briefly: both seq-write phases (the depth-1
# one runs the backend and raw in turns), the reads of what was written
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/file.so" ]; then
	expect backend-bench-json 0 '"workload": "seq-read-4m"' \
		"$TESSERA" backend bench --plugin-dir "$PLUGIN_DIR" --plugin file \
		-o path="$tmp/bench" -o journal_size=8M --seconds 0.3 --objects 2 \
		--format json
fi
expect admin-missing 1 "cannot connect to admin socket $tmp/none.asok" \
	"$TESSERA" admin "$tmp/none.asok" status

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
