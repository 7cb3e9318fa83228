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
expect check-good 0 "valid partitioner plugin 'good' version 1.0.0 (plugin ABI 1.1)" \
	"$TESSERA" plugins check "$P/good.so"
# a provisional kind says so, with the version of its ops table
expect check-provisional 0 "partitioner ABI version 1: provisional, it changes until a daemon uses the partitioner kind" \
	"$TESSERA" plugins check "$P/good.so"
expect check-good-json 0 '"valid": true, "kind": "partitioner", "name": "good"' \
	"$TESSERA" plugins check --format json "$P/good.so"
expect check-bad-abi 1 "invalid plugin: $P/bad_abi.so: built for plugin ABI 2.1, this core speaks 1.1" \
	"$TESSERA" plugins check "$P/bad_abi.so"
expect check-newer-minor 1 "built for plugin ABI 1.8, newer than this core's 1.1" \
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
# a half-copied plugin: refused with the reason on stderr (exit 1), where
# dlopen used to kill the tool with SIGBUS (exit 135, no message)
mkdir "$tmp/half"
head -c 4096 "$P/good.so" > "$tmp/half/a-half.so"
cp "$P/good.so" "$tmp/half/good.so"
expect plugin-truncated-check 1 "invalid plugin: $tmp/half/a-half.so: cannot load: truncated: segment" \
	sh -c '"$0" plugins check "$1" 2>&1 >/dev/null' "$TESSERA" "$tmp/half/a-half.so"
expect plugin-truncated-list 0 "$tmp/half/a-half.so: cannot load: truncated: " \
	"$TESSERA" plugins list --plugin-dir "$tmp/half"
expect plugin-truncated-list-good 0 "partitioner  good             1.0.0      $tmp/half/good.so" \
	"$TESSERA" plugins list --plugin-dir "$tmp/half"

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
global = { run_dir = "$tmp/run"; mon_members = "a=127.0.0.1:6789, b=127.0.0.1:6790"; };
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
# config check runs what the daemons check at start, where it used to say
# "valid" of a file every daemon refuses (one case per refusal)
conf_case() { # NAME PATTERN TEXT: a one-line global section must be refused
	printf 'global = { %s };\n' "$3" > "$tmp/$1.conf"
	expect "config-check-$1" 1 "$2" "$TESSERA" config check "$tmp/$1.conf"
}
conf_case members-garbage "$tmp/members-garbage.conf:1: mon: mon_members: 'garbage' is not NAME=IP:PORT" \
	'mon_members = "garbage";'
conf_case members-port "mon a: '127.0.0.1:65536' is not an IPv4 address and port" \
	'mon_members = "a=127.0.0.1:65536";'
conf_case members-twice "mon_members: mon a is listed twice" \
	'mon_members = "a=127.0.0.1:6789, a=127.0.0.1:6790";'
conf_case members-empty "$tmp/members-empty.conf: mon: mon_members is empty" 'run_dir = "/r";'
conf_case fsid "$tmp/fsid.conf:1: option 'fsid': expected a UUID (32 hex digits, e.g. 1f0e...-...), got 'not-a-uuid'" \
	'mon_members = "a=127.0.0.1:6789"; fsid = "not-a-uuid";'
conf_case unknown-variable "$tmp/unknown-variable.conf:1: option 'admin_socket': unknown variable \$nokey in \"\$nokey/x.asok\"" \
	'mon_members = "a=127.0.0.1:6789"; admin_socket = "$nokey/x.asok";'
conf_case asok-too-long "admin socket path /$(printf '%0120d' 0)/mon.asok is longer than 107 bytes" \
	"mon_members = \"a=127.0.0.1:6789\"; run_dir = \"/$(printf '%0120d' 0)\";"
printf 'global = { mon_members = "a=127.0.0.1:6789"; fsid = "0123456789abcdef0123456789abcdef"; };\nosd-3 = { fsid = "xyz"; };\n' \
	> "$tmp/osd3-fsid.conf"
expect config-check-section-fsid 1 "$tmp/osd3-fsid.conf:2: option 'fsid': expected a UUID" \
	"$TESSERA" config check "$tmp/osd3-fsid.conf"
printf 'global = { mon_members = "a=127.0.0.1:6789"; };\nmon-b = { log_level = "debug"; };\n' \
	> "$tmp/not-member.conf"
expect config-check-not-member 1 "$tmp/not-member.conf:1: mon-b: mon_members has no monitor 'b' (it lists a=127.0.0.1:6789)" \
	"$TESSERA" config check "$tmp/not-member.conf"
# bytes from the file are escaped in messages, never echoed raw
printf 'global = { mon_members = "a=127.0.0.1:6789"; log_level = "\377\033[31m"; };\n' > "$tmp/raw.conf"
expect config-check-escaped 1 'option '"'"'log_level'"'"': "\xff\x1b[31m" is not one of' \
	"$TESSERA" config check "$tmp/raw.conf"
printf 'global = { mon_members = "a=\377127.0.0.1:6789"; };\n' > "$tmp/raw-members.conf"
expect config-check-escaped-members 1 "mon a: '\\xff127.0.0.1:6789' is not an IPv4" \
	"$TESSERA" config check "$tmp/raw-members.conf"
# what is not a regular file is refused at once; a huge file too
expect config-check-directory 1 "$tmp: cannot read configuration file: it is a directory" \
	"$TESSERA" config check "$tmp"
mkfifo "$tmp/fifo.conf"
expect config-check-fifo 1 "$tmp/fifo.conf: cannot read configuration file: it is a FIFO, not a regular file" \
	timeout 10 "$TESSERA" config check "$tmp/fifo.conf"
{ printf 'global = { fsid = "'; head -c 2097152 /dev/zero | tr '\0' a; printf '"; };\n'; } > "$tmp/huge.conf"
expect config-check-huge 1 "$tmp/huge.conf: cannot read configuration file: it is 2097177 bytes, more than the 1048576 bytes (1024 KiB)" \
	timeout 10 "$TESSERA" config check "$tmp/huge.conf"
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
expect version 0 "(plugin ABI 1.1)" "$TESSERA" version
expect unknown 2 "unknown command 'frob'" "$TESSERA" frob
expect group-only 2 "tessera plugins: which one?" "$TESSERA" plugins
expect check-two-files 2 "give exactly one FILE.so" "$TESSERA" plugins check a.so b.so
expect msgr-help 0 "Usage: tessera msgr bench" "$TESSERA" msgr bench --help
expect msgr-bad-seconds 2 "--seconds takes a number in (0, 3600], not 'x'" \
	"$TESSERA" msgr bench --seconds x
expect msgr-bench-json 0 '"workload": "stream-4MiB"' \
	"$TESSERA" msgr bench --seconds 0.2 --inline --format json
# a plugin's required options (file's path) are needed only to create an
# instance: a schema check lists them
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/file.so" ]; then
	expect check-required-unset 0 "meta_compression     string   default none" \
		"$TESSERA" plugins check "$PLUGIN_DIR/file.so"
	expect check-required-value 1 "\"lz4\" is not one of: none, snappy" \
		"$TESSERA" plugins check "$PLUGIN_DIR/file.so" -o meta_compression=lz4
	expect create-required-unset 1 "required option 'path' is not set" \
		"$TESSERA" plugins check "$PLUGIN_DIR/file.so" --create
fi

# the backend bench end to end, briefly: both seq-write phases (the depth-1
# one runs the backend and raw in turns), the reads of what was written
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/file.so" ]; then
	expect backend-bench-json 0 '"workload": "seq-read-4m"' \
		"$TESSERA" backend bench --plugin-dir "$PLUGIN_DIR" --plugin file \
		-o path="$tmp/bench" -o journal_size=8M --seconds 0.3 --objects 2 \
		--format json
	# fsck's exit status: 0 clean, 1 problems left, 3 all repaired (a
	# store fsck changed is not reported clean: see doc/operations.md)
	B="$TESSERA backend fsck --plugin-dir $PLUGIN_DIR --plugin file -o path=$tmp/fsck"
	expect fsck-mkfs 0 "" "$TESSERA" backend mkfs --plugin-dir "$PLUGIN_DIR" \
		--plugin file -o path="$tmp/fsck" -o journal_size=4M
	expect fsck-clean 0 "0 problems, 0 left unrepaired" $B
	mkdir -p "$tmp/fsck/data/00/00" && echo x > "$tmp/fsck/data/00/00/00000000000fffff"
	expect fsck-problem 1 "1 problem, 1 left unrepaired" $B
	expect fsck-repaired 3 "file of no object (repaired)" $B --repair
	expect fsck-clean-again 0 "0 problems, 0 left unrepaired" $B
fi
# Bug: on a small store (a blockdev image of 2 GiB) the bench failed with
# ENOSPC in its prefill: it sized itself by the file system under the
# image.  It sizes itself by the store now: fewer objects prefilled.
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/blockdev.so" ]; then
	expect backend-bench-small-store 0 "objects prefilled, not 64" \
		"$TESSERA" backend bench --plugin-dir "$PLUGIN_DIR" --plugin blockdev \
		-o path="$tmp/small.img" -o size=256M -o journal_size=16M --seconds 0.1
fi
expect admin-missing 1 "cannot connect to admin socket $tmp/none.asok" \
	"$TESSERA" admin "$tmp/none.asok" status

# Bug: a command word of 1024 bytes or more was sent, dropped by the
# monitors, and the CLI waited out --timeout.  It is a usage error now,
# found before the configuration is even read.
expect cluster-long-word 2 "is 1024 bytes long; a word may have at most 1023" \
	"$TESSERA" pool create "$(printf '%01024d' 0)" --conf "$tmp/none.conf"
expect cluster-longest-word 1 "$tmp/none.conf" \
	"$TESSERA" pool create "$(printf '%01023d' 0)" --conf "$tmp/none.conf"

# Bug: numbers in 0x, which the docs allow, were refused.  Decimal or 0x
# hexadecimal, never octal; no sign, blank or trailing text.
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/crush.so" ]; then
	expect number-hex 0 "device 5 osd.5" "$TESSERA" placement generate \
		--plugin-dir "$PLUGIN_DIR" --plugin crush --hosts 0x2 --per-host 0X3
	expect number-not-octal 0 "device 9 osd.9" "$TESSERA" placement generate \
		--plugin-dir "$PLUGIN_DIR" --plugin crush --hosts 010 --per-host 1
fi
for bad in 0x10z 0x +5 " 5" 5x -1; do
	expect "number-bad-'$bad'" 2 "--objects takes an integer in [1, 65536], not '$bad'" \
		"$TESSERA" backend bench --objects "$bad"
done

# Bug: `tessera backend bench ... | head -1` left its directories behind:
# SIGPIPE killed it before its cleanup.  With the reader of its results
# gone it fails (exit 1); with the reader of its progress lines gone it
# goes on (exit 0); either way it removes all it made.
if [ -n "${PLUGIN_DIR:-}" ] && [ -e "$PLUGIN_DIR/file.so" ]; then
	for out in stdout stderr; do
		rm -f "$tmp/pipe-status"
		want=0
		if [ "$out" = stdout ]; then
			want=1
			( "$TESSERA" backend bench --plugin-dir "$PLUGIN_DIR" --plugin file \
				-o path="$tmp/bench-pipe" -o journal_size=8M --seconds 0.2 \
				--objects 2 2>/dev/null
			  echo $? > "$tmp/pipe-status" ) | true
		else
			( "$TESSERA" backend bench --plugin-dir "$PLUGIN_DIR" --plugin file \
				-o path="$tmp/bench-pipe" -o journal_size=8M --seconds 0.2 \
				--objects 2 2>&1 >/dev/null
			  echo $? > "$tmp/pipe-status" ) | true
		fi
		left=$(ls -d "$tmp"/bench-pipe* 2>/dev/null)
		st=$(cat "$tmp/pipe-status" 2>/dev/null)
		if [ -z "$left" ] && [ "$st" = "$want" ]; then
			pass=$((pass + 1))
		else
			echo "FAIL bench-sigpipe-$out: exit '$st' (expected $want), left: $left"
			fail=$((fail + 1))
			rm -rf "$tmp"/bench-pipe*
		fi
	done
fi

# tessera auth: the cluster secret, entity keys, rotation (auth/auth.h)
K=$tmp/keys
mkdir -p "$K"
expect auth-init 0 "$K/mon.keyring: written" "$TESSERA" auth init -o "$K/mon.keyring"
expect auth-init-no-overwrite 1 "refusing to overwrite a key" \
	"$TESSERA" auth init -o "$K/mon.keyring"
case $(stat -c %a "$K/mon.keyring") in
600) pass=$((pass + 1)) ;;
*) echo "FAIL auth-mode: $(stat -c %a "$K/mon.keyring")"; fail=$((fail + 1)) ;;
esac
expect auth-key 0 "written" \
	"$TESSERA" auth key osd.3 --secret "$K/mon.keyring" -o "$K/osd.keyring"
expect auth-key-is-not-secret 1 "holds no cluster secret" \
	"$TESSERA" auth key osd.4 --secret "$K/osd.keyring" -o "$K/x.keyring"
expect auth-key-bad-name 2 '"osd3": an entity name is TYPE.ID' \
	"$TESSERA" auth key osd3 --secret "$K/mon.keyring" -o "$K/x.keyring"
expect auth-no-out 2 "-o FILE is required" "$TESSERA" auth init
expect auth-unknown 2 "unknown command 'frob'" "$TESSERA" auth frob -o "$K/x"
chmod 644 "$K/mon.keyring"
expect auth-open-keyring 1 "chmod 600" \
	"$TESSERA" auth key osd.4 --secret "$K/mon.keyring" -o "$K/x.keyring"
chmod 600 "$K/mon.keyring"
# rotation: stage, promote, retire; each step refuses the wrong order
expect auth-promote-unstaged 1 "no staged secret" \
	"$TESSERA" auth promote --secret "$K/mon.keyring" -o "$K/p.keyring"
expect auth-rotate 0 "written" \
	"$TESSERA" auth rotate --secret "$K/mon.keyring" -o "$K/r.keyring"
expect auth-rotate-twice 1 "already holds a staged secret" \
	"$TESSERA" auth rotate --secret "$K/r.keyring" -o "$K/r2.keyring"
expect auth-promote 0 "written" \
	"$TESSERA" auth promote --secret "$K/r.keyring" -o "$K/p.keyring"
expect auth-retire 0 "written" \
	"$TESSERA" auth retire --secret "$K/p.keyring" -o "$K/final.keyring"
old=$(awk '$1 == "secret" { print $2; exit }' "$K/mon.keyring")
staged=$(awk '$1 == "secret" { n++ } n == 2 { print $2; exit }' "$K/r.keyring")
first=$(awk '$1 == "secret" { print $2; exit }' "$K/p.keyring")
final=$(awk '$1 == "secret" { print $2 }' "$K/final.keyring")
if [ -n "$old" ] && [ "$staged" != "$old" ] && [ "$first" = "$staged" ] &&
   [ "$final" = "$staged" ] &&
   [ "$(awk '$1 == "secret" { print $2; exit }' "$K/r.keyring")" = "$old" ]; then
	pass=$((pass + 1))
else
	echo "FAIL auth-rotation-order: old $old staged $staged promoted $first final $final"
	fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
