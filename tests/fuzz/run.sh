#!/bin/sh
# run.sh — a short libFuzzer run of each fuzz target on its seed corpus
# (a copy: the tree stays as it is).  Skipped (77) when configure found no
# clang with libFuzzer; ./dev.sh installs it.
# Environment: FUZZ_SECONDS (default 15) per target.
set -eu
here=tests/fuzz # built here, below the build directory (the cwd)
srcdir=${srcdir:-.}
targets="fuzz_frame fuzz_mon fuzz_osd fuzz_mds"
for t in $targets; do
	if [ ! -x "$here/$t" ]; then
		echo "SKIP: $t not built (no clang with -fsanitize=fuzzer at configure time)"
		exit 77
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsr-test-fuzz-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
for t in $targets; do
	corpus="$srcdir/tests/fuzz/corpus/${t#fuzz_}"
	mkdir -p "$tmp/$t"
	cp "$corpus"/* "$tmp/$t/"
	echo "== $t: ${FUZZ_SECONDS:-15} s from $(ls "$corpus" | wc -l) seeds"
	# -error_exitcode: any crash, leak or sanitizer report fails the test
	status=0
	"$here/$t" -max_total_time="${FUZZ_SECONDS:-15}" -timeout=10 \
		-rss_limit_mb=1024 -print_final_stats=1 -error_exitcode=1 \
		-artifact_prefix="$tmp/" "$tmp/$t" >"$tmp/$t.log" 2>&1 || status=$?
	tail -20 "$tmp/$t.log"
	if ls "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* >/dev/null 2>&1; then
		echo "FAIL: $t found an input that breaks the decoder:"
		for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
			[ -e "$f" ] && od -A d -t x1 "$f" | head -20
		done
		exit 1
	fi
	[ "$status" -eq 0 ] || exit 1
done
