#!/usr/bin/env bash
# dev.sh — build, try and test Tessera from a source tree.
#
#   ./dev.sh up     install what is missing, build, and run Tessera locally
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
	libconfig-dev libzstd-dev libleveldb-dev check libfuse3-dev fuse3
	valgrind procps clang libclang-rt-14-dev
)

log() { printf '\n==> %s\n' "$*"; }

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

cmd_up() {
	install_deps
	build build
	log "$(build/tools/tessera/tessera version)"
	build/tools/tessera/tessera plugins list --plugin-dir build/lib/plugins
	cat <<EOF

Built in $SRC/build.  The daemons (monitors, OSDs, MDSs) and the FUSE
mount are not written yet: this command will start a local cluster on
loopback and mount it once they are (see doc/operations.md).
EOF
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
	elif make -C build -s distcheck >build/distcheck.log 2>&1; then
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
	echo "tests: $pass passed, $fail failed, $skip skipped"
	return $rc
}

usage() {
	sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
}

case "${1:-}" in
up) cmd_up ;;
test) cmd_test ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
