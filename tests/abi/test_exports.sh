#!/bin/sh
# test_exports.sh — libtessera-core.so exports its public API and nothing
# else: exactly the functions declared TSR_API in the installed headers
# (core/include/tessera/*.h), each under a version node of
# core/libtessera-core.sym.  An internal function of the core that shows up
# in the dynamic symbol table is a leak: plugins could bind to it, and it
# would then be part of the ABI.
#
#   test_exports.sh [LIBRARY [CLIENT_LIBRARY]]
#
# LIBRARY defaults to the build tree's core/.libs/libtessera-core.so and
# CLIENT_LIBRARY to client/.libs/libtessera-client.so, whose exports are
# checked the same way against tessera/client.h (make check runs it so);
# `make installcheck` passes the installed ones.  Needs
# TOP_SRCDIR, nm ($NM) and, for the self-test, a C compiler ($CC, default
# cc) and the convenience archive core/.libs/libtsrcore.a.
#
# The self-test links two leaky libraries from the core's own objects —
# one without the version script (what dropping it from core/local.mk
# would ship), one whose script also lists the internal tsr_log_open — and
# checks that the check refuses both, naming the leaked symbols.
set -u
: "${TOP_SRCDIR:?}"
NM=${NM:-nm}
CC=${CC:-cc}
lib=${1:-core/.libs/libtessera-core.so}
sym=$TOP_SRCDIR/core/libtessera-core.sym
pass=0 fail=0
tmp=$(mktemp -d /tmp/tsr-exports-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The public functions: TSR_API declarations of the installed headers.
sed -n 's/^TSR_API[^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' \
	"$TOP_SRCDIR"/core/include/tessera/*.h | sort -u > "$tmp/public"
# The version nodes: lines "NAME {" of the version script.
sed -n 's/^\([A-Z][A-Z0-9_.]*\)[ 	]*{.*/\1/p' "$sym" | sort -u > "$tmp/nodes"

# check LIB: 0 when LIB exports exactly the public functions, each with a
# version node; else 1, with one line per problem on stdout.
check() {
	if ! "$NM" -D --defined-only "$1" > "$tmp/nm" 2> "$tmp/nm.err"; then
		echo "$1: nm failed: $(cat "$tmp/nm.err")"
		return 1
	fi
	# "ADDR TYPE NAME[@[@]VERSION]"; absolute (A) symbols are the nodes
	awk '$2 != "A" { split($3, p, "@"); v = $3; sub(/^[^@]*@+/, "", v);
			 if (v == $3) v = "";
			 print p[1], (v == "" ? "-" : v) }' "$tmp/nm" \
		| sort > "$tmp/exported"
	awk '$2 == "A" { print $3 }' "$tmp/nm" | sort > "$tmp/absolute"
	cut -d' ' -f1 "$tmp/exported" | sort -u > "$tmp/names"
	bad=0
	for s in $(comm -23 "$tmp/names" "$tmp/public"); do
		echo "$1: leaks $s: exported, but no installed header declares it TSR_API"
		bad=1
	done
	for s in $(comm -13 "$tmp/names" "$tmp/public"); do
		echo "$1: lacks $s: declared TSR_API in an installed header, not exported (add it to $sym)"
		bad=1
	done
	while read -r s v; do
		if ! grep -qx -- "$v" "$tmp/nodes"; then
			echo "$1: $s has version '$v', not a node of $sym"
			bad=1
		fi
	done < "$tmp/exported"
	for s in $(comm -23 "$tmp/absolute" "$tmp/nodes"); do
		echo "$1: exports absolute symbol $s, not a version node"
		bad=1
	done
	return $bad
}

# expect_leak NAME LIB SYMBOL: check must refuse LIB and name SYMBOL.
expect_leak() {
	out=$(check "$2")
	if [ $? -eq 0 ]; then
		echo "FAIL $1: the check passed $2, which leaks $3"
		fail=$((fail + 1))
		return
	fi
	case $out in
	*"leaks $3:"*) pass=$((pass + 1)) ;;
	*) echo "FAIL $1: the check refused $2 without naming $3:"
	   echo "$out" | head -5
	   fail=$((fail + 1)) ;;
	esac
}

if [ ! -s "$tmp/public" ]; then
	echo "FAIL: no TSR_API declaration found under $TOP_SRCDIR/core/include/tessera"
	exit 1
fi
if [ ! -s "$tmp/nodes" ]; then
	echo "FAIL: no version node in $sym"
	exit 1
fi

# The library itself.
if out=$(check "$lib"); then
	pass=$((pass + 1))
	echo "ok: $lib exports the $(wc -l < "$tmp/public") public functions" \
		"($(paste -sd' ' "$tmp/nodes")) and nothing else"
else
	echo "FAIL exports:"
	echo "$out"
	fail=$((fail + 1))
fi

# The self-test: the check must see a leak.
core_a=core/.libs/libtsrcore.a
if [ -n "${1:-}" ]; then
	: # an installed library: the build tree may not be here
elif ! command -v "$CC" > /dev/null 2>&1 || [ ! -f "$core_a" ]; then
	echo "self-test skipped: no C compiler ($CC) or no $core_a"
else
	if "$CC" -shared -o "$tmp/noscript.so" -Wl,--whole-archive "$core_a" \
		-Wl,--no-whole-archive 2> "$tmp/cc.err"; then
		expect_leak no-version-script "$tmp/noscript.so" tsr_log_open
	else
		echo "FAIL self-test: linking without the version script:"
		cat "$tmp/cc.err"
		fail=$((fail + 1))
	fi
	sed 's/^\(	tsr_crc32c;\)$/\1\n	tsr_log_open;/' "$sym" > "$tmp/leak.sym"
	if ! grep -q tsr_log_open "$tmp/leak.sym"; then
		echo "FAIL self-test: could not add tsr_log_open to a copy of $sym"
		fail=$((fail + 1))
	elif "$CC" -shared -o "$tmp/onemore.so" -Wl,--whole-archive "$core_a" \
		-Wl,--no-whole-archive -Wl,--version-script="$tmp/leak.sym" \
		2> "$tmp/cc.err"; then
		expect_leak one-internal-symbol "$tmp/onemore.so" tsr_log_open
		if [ "$(check "$tmp/onemore.so" | wc -l)" -ne 1 ]; then
			echo "FAIL one-internal-symbol: more than the one leak reported:"
			check "$tmp/onemore.so" | head -5
			fail=$((fail + 1))
		fi
	else
		echo "FAIL self-test: linking with $tmp/leak.sym:"
		cat "$tmp/cc.err"
		fail=$((fail + 1))
	fi
fi

# The client library the same way: the functions of tessera/client.h and
# tessera/fs.h, each under a node of client/libtessera-client.sym (the
# core it carries stays hidden).
clib=${2:-client/.libs/libtessera-client.so}
sym=$TOP_SRCDIR/client/libtessera-client.sym
sed -n 's/^TSR_API[^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' \
	"$TOP_SRCDIR"/client/include/tessera/client.h \
	"$TOP_SRCDIR"/client/include/tessera/fs.h | sort -u > "$tmp/public"
sed -n 's/^\([A-Z][A-Z0-9_.]*\)[ 	]*{.*/\1/p' "$sym" | sort -u > "$tmp/nodes"
if [ ! -s "$tmp/public" ] || [ ! -s "$tmp/nodes" ]; then
	echo "FAIL: no TSR_API declaration in client.h, fs.h or no node in $sym"
	fail=$((fail + 1))
elif out=$(check "$clib"); then
	pass=$((pass + 1))
	echo "ok: $clib exports the $(wc -l < "$tmp/public") functions of" \
		"tessera/client.h and fs.h ($(paste -sd' ' "$tmp/nodes")) and nothing else"
else
	echo "FAIL client exports:"
	echo "$out"
	fail=$((fail + 1))
fi

echo "test_exports: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
