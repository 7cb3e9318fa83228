#!/bin/sh
# Regenerate the build system (configure, Makefile.in) from configure.ac and
# Makefile.am.  Run once after a fresh clone; needs autoconf, automake, libtool.
set -e
cd "$(dirname "$0")"
autoreconf --force --install
echo "autogen.sh: now run ./configure && make"
