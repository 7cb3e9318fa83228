#!/bin/sh
# test_placement_cli.sh — `tessera placement` as a user runs it, against every
# placement plugin built: generate -> compile -> decompile gives the same
# text, validate accepts good maps and names what is wrong with bad ones,
# test prints its figures (plain and JSON) and measures movement with
# --compare, usage errors exit 2.  Needs TESSERA (the tool) and PLUGIN_DIR
# (the built plugins: build/lib/plugins).
set -u
: "${TESSERA:?}" "${PLUGIN_DIR:?}"
pass=0 fail=0
tmp=$(mktemp -d /tmp/tsr-placement-test-XXXXXX)
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

# check NAME CONDITION-CMD...: a pass when the command succeeds.
check() {
	name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
	else
		echo "FAIL $name"; fail=$((fail + 1))
	fi
}

# json_field FILE KEY: the first number (or null) after "KEY": in FILE.
json_field() {
	sed -n "s/.*\"$2\": \\(null\\|[-0-9.e+][-0-9.e+]*\\).*/\\1/p" "$1" | head -n 1
}

# positive NUMBER: true when NUMBER > 0.
positive() {
	awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }'
}

T=$TESSERA
D="--plugin-dir $PLUGIN_DIR"
for plug in crush hrw; do
	if [ ! -e "$PLUGIN_DIR/$plug.so" ]; then
		echo "FAIL $plug: $PLUGIN_DIR/$plug.so is missing"
		fail=$((fail + 1))
		continue
	fi
	P="--plugin $plug"
	m=$tmp/$plug

	# generate -> compile -> decompile: the text comes back byte for byte
	expect "$plug-generate" 0 "" $T placement generate $D $P --hosts 4 --per-host 3 \
		--racks 2 -o "$m.txt"
	expect "$plug-generate-content" 0 "osd.11" cat "$m.txt"
	expect "$plug-compile" 0 "" $T placement compile $D $P "$m.txt" -o "$m.bin"
	expect "$plug-decompile" 0 "" $T placement decompile $D $P "$m.bin" -o "$m.2.txt"
	check "$plug-round-trip" cmp -s "$m.txt" "$m.2.txt"
	$T placement decompile $D $P "$m.bin" > "$m.3.txt" 2>&1
	check "$plug-decompile-stdout" cmp -s "$m.txt" "$m.3.txt"
	$T placement generate $D $P --hosts 4 --per-host 3 --racks 2 > "$m.4.txt" 2>&1
	check "$plug-generate-stdout" cmp -s "$m.txt" "$m.4.txt"
	$T placement compile $D $P "$m.2.txt" -o "$m.2.bin" 2>&1
	check "$plug-compile-stable" cmp -s "$m.bin" "$m.2.bin"
	expect "$plug-compile-stdin" 0 "" sh -c \
		"$T placement compile $D $P - -o '$m.5.bin' < '$m.txt'"
	check "$plug-compile-stdin-same" cmp -s "$m.bin" "$m.5.bin"

	# validate: text and binary, rule widths, both reasons when neither
	expect "$plug-validate-text" 0 "$m.txt: valid $plug map (text), device ids below 12" \
		$T placement validate $D $P "$m.txt"
	expect "$plug-validate-bin" 0 "$m.bin: valid $plug map (binary)" \
		$T placement validate $D $P "$m.bin"
	expect "$plug-validate-rules" 0 "rule 1: at most 12 distinct items" \
		$T placement validate $D $P "$m.bin"
	expect "$plug-validate-width-ok" 0 "rule 0: at most 2 distinct items; 2 replicas fit" \
		$T placement validate $D $P "$m.bin" --rule 0 --num-rep 2
	expect "$plug-validate-too-wide" 1 \
		"rule 0 can place at most 2 distinct items; 3 replicas can never be placed" \
		$T placement validate $D $P "$m.txt" --rule 0 --num-rep 3
	expect "$plug-validate-no-rule" 1 "rule 9 is not in the map" \
		$T placement validate $D $P "$m.bin" --rule 9
	printf 'this is { not a map\n' > "$tmp/garbage"
	expect "$plug-validate-bad" 1 "$tmp/garbage is not a valid $plug map: as binary: " \
		$T placement validate $D $P "$tmp/garbage"
	expect "$plug-validate-bad-text" 1 "; as text: " \
		$T placement validate $D $P "$tmp/garbage"
	expect "$plug-compile-bad" 1 "$tmp/garbage: not a valid $plug text map" \
		$T placement compile $D $P "$tmp/garbage" -o "$tmp/garbage.bin"
	expect "$plug-decompile-bad" 1 "$m.txt: not a valid $plug binary map" \
		$T placement decompile $D $P "$m.txt"
	# a map whose rule names an unknown bucket: the plugin's reason
	sed 's/take default/take nowhere/' "$m.txt" > "$tmp/badtake.txt"
	expect "$plug-validate-bad-take" 1 "as text: " \
		$T placement validate $D $P "$tmp/badtake.txt"

	# test: the figures, plain and JSON
	expect "$plug-test-speed" 0 "placements/s" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 2
	expect "$plug-test-inputs" 0 "inputs:       1024 (x from 0 to 1023)" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 2
	expect "$plug-test-short" 0 "short inputs: 0 got fewer than 2 devices" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 2
	expect "$plug-test-util" 0 "stddev/mean" \
		$T placement test $D $P "$m.txt" --rule 1 --num-rep 3
	expect "$plug-test-util-devices" 0 "placements on 12 devices" \
		$T placement test $D $P "$m.txt" --rule 1 --num-rep 3 --min-x 5000 --max-x 9000
	expect "$plug-test-too-wide" 0 "short inputs: 100 got fewer than 3 devices" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 3 --max-x 100
	expect "$plug-test-out" 0 "placements on 11 devices" \
		$T placement test $D $P "$m.bin" --rule 1 --num-rep 3 --weight osd.4=0
	expect "$plug-test-no-rule" 1 "rule 7 is not in the map" \
		$T placement test $D $P "$m.bin" --rule 7 --num-rep 2
	expect "$plug-test-no-device" 1 "device 99 is not in $m.bin" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 2 --weight 99=0

	$T placement test $D $P "$m.bin" --rule 0 --num-rep 2 --format json \
		> "$m.json" 2>&1
	check "$plug-json-exit" test $? -eq 0
	for key in plugin rule num_rep inputs seconds inputs_per_sec placements_per_sec \
		short_inputs utilization max_over_mean min_over_mean stddev_over_mean devices; do
		expect "$plug-json-$key" 0 "\"$key\": " cat "$m.json"
	done
	check "$plug-json-inputs" test "$(json_field "$m.json" inputs)" = 1024
	check "$plug-json-one-line" test "$(wc -l < "$m.json")" -eq 1

	# compare: marking osd.0 out moves something, and about what it must
	$T placement test $D $P "$m.bin" --rule 1 --num-rep 3 --compare "$m.bin" \
		--weight2 0=0 --format json > "$m.cmp.json" 2>&1
	check "$plug-compare-exit" test $? -eq 0
	for key in changed_fraction optimal_fraction ratio; do
		expect "$plug-compare-json-$key" 0 "\"$key\": " cat "$m.cmp.json"
	done
	check "$plug-compare-changed" positive "$(json_field "$m.cmp.json" changed_fraction)"
	check "$plug-compare-optimal" positive "$(json_field "$m.cmp.json" optimal_fraction)"
	expect "$plug-compare-plain" 0 "ratio:" \
		$T placement test $D $P "$m.bin" --rule 0 --num-rep 2 --compare "$m.txt" \
		--weight2 osd.3=0.5
	# the same map and weights: nothing moves, and there is no ratio
	$T placement test $D $P "$m.bin" --rule 0 --num-rep 2 --compare "$m.txt" \
		--format json > "$m.same.json" 2>&1
	check "$plug-compare-same" test "$(json_field "$m.same.json" changed_fraction)" = 0
	check "$plug-compare-same-ratio" test "$(json_field "$m.same.json" ratio)" = null
done

# crush stratifies each device's draws over blocks of 256 inputs, so its
# per-device counts spread less than independent draws' (binomial: stddev/
# mean 0.0183 for 3000 placements per device, the sample's estimate within
# about 0.0013 of that); stratified they measure 0.0097-0.0111 here.
$T placement generate $D --plugin crush --hosts 20 --per-host 5 -o "$tmp/strat.txt"
for a in 0 100000 7000013; do
	$T placement test $D --plugin crush "$tmp/strat.txt" --rule 0 --num-rep 3 \
		--min-x $a --max-x $((a + 100000)) --format json > "$tmp/strat.json" 2>&1
	sd=$(json_field "$tmp/strat.json" stddev_over_mean)
	check "crush-stratified-$a (stddev/mean $sd < 0.013)" \
		awk -v v="$sd" 'BEGIN { exit !(v != "" && v + 0 > 0 && v + 0 < 0.013) }'
done

# with many devices and one replica a device wins about once per 8 blocks,
# so only the second level (superblocks of 65536 inputs) evens the counts:
# 2000 devices, 131072 inputs, 65 placements each: independent draws give
# 0.122-0.123, level 1 alone 0.113-0.115, both levels 0.086-0.089
$T placement generate $D --plugin crush --hosts 200 --per-host 10 -o "$tmp/strat2k.txt"
$T placement test $D --plugin crush "$tmp/strat2k.txt" --rule 0 --num-rep 1 \
	--min-x 131072 --max-x 262144 --format json > "$tmp/strat.json" 2>&1
sd=$(json_field "$tmp/strat.json" stddev_over_mean)
check "crush-stratified-level2 (stddev/mean $sd < 0.10)" \
	awk -v v="$sd" 'BEGIN { exit !(v != "" && v + 0 > 0 && v + 0 < 0.10) }'

# the same through a pool's groups as the cluster places them (--pool): a
# pool's groups fill whole blocks, so its OSDs' group counts are as even
# (983 placements per device here: independent draws give 0.0319, stratified
# measure 0.016-0.018)
for pool in 1 2; do
	$T placement test $D --plugin crush "$tmp/strat.txt" --rule 0 --num-rep 3 \
		--pool $pool --pg-num 32768 --format json > "$tmp/strat.json" 2>&1
	sd=$(json_field "$tmp/strat.json" stddev_over_mean)
	check "crush-stratified-pool-$pool (stddev/mean $sd < 0.025)" \
		awk -v v="$sd" 'BEGIN { exit !(v != "" && v + 0 > 0 && v + 0 < 0.025) }'
	check "crush-pool-json-$pool" test "$(json_field "$tmp/strat.json" pool)" = $pool
done
expect pool-plain 0 "inputs:       300 (groups 0 to 299 of pool 7)" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pool 7 --pg-num 300
expect pool-needs-pg-num 2 "--pool and --pg-num go together" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pool 7
expect pg-num-needs-pool 2 "--pool and --pg-num go together" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pg-num 64
expect pg-num-zero 2 "--pg-num takes an integer in [1, 65536], not '0'" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pool 7 --pg-num 0
expect pg-num-too-big 2 "--pg-num takes an integer in [1, 65536], not '65537'" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pool 7 --pg-num 65537
expect pool-no-range 2 "no --min-x or --max-x with it" \
	$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --pool 7 --pg-num 8 --min-x 1
$T placement test $D "$tmp/strat.txt" --rule 0 --num-rep 3 --format json > "$tmp/nopool.json" 2>&1
check "json-pool-null" test "$(json_field "$tmp/nopool.json" pool)" = null

# the plugin directory from the environment; a plugin that is not there
expect env-dir 0 "valid crush map" env TESSERA_PLUGIN_DIR="$PLUGIN_DIR" \
	$T placement validate "$tmp/crush.txt"
expect no-plugin 1 "no placement plugin 'nope' in $PLUGIN_DIR (found: " \
	$T placement generate $D --plugin nope --hosts 2 --per-host 2
expect no-dir 1 "plugin directory /nonexistent-dir: No such file or directory" \
	$T placement generate --plugin-dir /nonexistent-dir --hosts 2 --per-host 2
expect missing-file 1 "$tmp/none.bin: No such file or directory" \
	$T placement validate $D "$tmp/none.bin"
expect out-unwritable 1 "/nonexistent-dir/x.txt: No such file or directory" \
	$T placement generate $D --hosts 2 --per-host 2 -o /nonexistent-dir/x.txt

# help and usage errors
for sub in generate compile decompile validate test; do
	expect "help-$sub" 0 "Usage: tessera placement $sub" $T placement $sub --help
done
expect help-list 0 "placement test" $T --help
expect group-only 2 "tessera placement: which one?" $T placement
expect gen-no-hosts 2 "--hosts and --per-host are required" \
	$T placement generate $D --per-host 3
expect gen-bad-count 2 "--hosts takes an integer in [1, 1048576], not 'x'" \
	$T placement generate $D --hosts x --per-host 3
expect gen-empty-rack 2 "--racks 5 is more than --hosts 4" \
	$T placement generate $D --hosts 4 --per-host 3 --racks 5
expect gen-bad-weight 2 "--weight takes a number in (0, 65535], not '-1'" \
	$T placement generate $D --hosts 4 --per-host 3 --weight -1
expect gen-unknown-opt 2 "unknown option '--frob'" \
	$T placement generate $D --hosts 4 --per-host 3 --frob
expect gen-no-value 2 "option '--hosts' needs a value" $T placement generate $D --hosts
expect compile-no-out 2 "-o BIN is required" $T placement compile $D "$tmp/crush.txt"
expect decompile-two 2 "give exactly one input map" $T placement decompile $D a b
expect validate-none 2 "give exactly one MAP" $T placement validate $D
expect validate-big-rep 2 "--num-rep takes an integer in [1, 64], not '65'" \
	$T placement validate $D "$tmp/crush.txt" --num-rep 65
expect test-no-rep 2 "--rule and --num-rep are required" \
	$T placement test $D "$tmp/crush.bin" --rule 0
expect test-bad-weight 2 "--weight takes DEV=W, not '3'" \
	$T placement test $D "$tmp/crush.bin" --rule 0 --num-rep 2 --weight 3
expect test-weight-range 2 "the weight of device 3 must be in [0, 1], not '2'" \
	$T placement test $D "$tmp/crush.bin" --rule 0 --num-rep 2 --weight 3=2
expect test-weight2-alone 2 "--weight2 needs --compare" \
	$T placement test $D "$tmp/crush.bin" --rule 0 --num-rep 2 --weight2 3=0
expect test-empty-range 2 "--min-x 10 is not below --max-x 10: no inputs" \
	$T placement test $D "$tmp/crush.bin" --rule 0 --num-rep 2 --min-x 10 --max-x 10
expect test-bad-format 2 "--format takes plain or json, not 'xml'" \
	$T placement test $D "$tmp/crush.bin" --rule 0 --num-rep 2 --format xml

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
