#!/bin/sh
# run.sh — the PG simulation (tests/sim/pgsim.c) over a range of seeds.
# Environment: PGSIM_SEEDS (default 1500; 300 under the sanitizers, where
# a seed costs about eight times as much), PGSIM_FIRST (default 1): run
# more, or others, on demand:
#   PGSIM_SEEDS=100000 PGSIM_FIRST=5000 make check TESTS=tests/sim/run.sh
# A failing seed is printed with the command that replays it.
set -eu
if [ "${SANITIZERS:-no}" = yes ]; then
	seeds=${PGSIM_SEEDS:-300}
else
	seeds=${PGSIM_SEEDS:-1500}
fi
exec tests/sim/pgsim --seeds "$seeds" --first "${PGSIM_FIRST:-1}"
