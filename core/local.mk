# libtessera-core: everything daemons, tools and plugins share.
#
# The code is built once into a convenience library (libtsrcore.la) that
# the shared library wraps; the daemons, the CLI and the tests link the
# convenience library, so they can reach functions that are hidden from the
# shared library's ABI.
noinst_LTLIBRARIES += core/libtsrcore.la
core_libtsrcore_la_SOURCES = \
	core/util/util.c core/util/util.h \
	core/util/sbuf.c core/util/sbuf.h \
	core/util/u64map.c core/util/u64map.h \
	core/crc/crc32c.c core/crc/crc32c_impl.h \
	core/encoding/encoding.c \
	core/encoding/txn.c \
	core/kv/kv.c \
	core/log/log.c core/log/log.h \
	core/config/options.c core/config/options.h \
	core/config/config.c core/config/config.h \
	core/plugin/registry.c core/plugin/registry.h \
	core/plugin/elfcheck.c core/plugin/elfcheck.h \
	core/plugin/host.c core/plugin/host.h \
	core/event/loop.c core/event/loop.h \
	core/event/workq.c core/event/workq.h \
	core/auth/auth.c core/auth/auth.h core/auth/authconf.c \
	core/msg/frame.c core/msg/frame.h \
	core/msg/msgr.c core/msg/msgr.h core/msg/msgr_int.h \
	core/msg/msg.c core/msg/opts.c core/msg/addr.c core/msg/conn.c \
	core/msg/send.c core/msg/handshake.c core/msg/recv.c core/msg/dispatch.c \
	core/raft/raft.c core/raft/raft.h \
	core/raft/raftstore.c core/raft/raftstore.h \
	core/map/maputil.c core/map/maputil.h \
	core/map/osdmap.c core/map/osdmap.h \
	core/map/osdmap_epoch.c core/map/osdmap_epoch.h \
	core/map/mdsmap.c core/map/mdsmap.h \
	core/mon/members.c core/mon/members.h \
	core/mon/monmsg.c core/mon/monmsg.h \
	core/osd/osdmsg.c core/osd/osdmsg.h \
	core/osd/pglog.c core/osd/pglog.h \
	core/osd/pgsm.c core/osd/pgsm.h core/osd/pgmsg.c \
	core/osd/pgstore.c core/osd/pgstore.h \
	core/osd/scrub.c core/osd/scrub.h \
	core/osd/pgpush.c core/osd/pgpush.h \
	core/osd/objop.c core/osd/objop.h \
	core/mds/fsmeta.c core/mds/fsmeta.h \
	core/mds/mdsmsg.c core/mds/mdsmsg.h \
	core/mon/monc.c core/mon/monc.h \
	core/mon/mapsub.c core/mon/mapsub.h \
	core/beacon/osdbeacon.c core/beacon/osdbeacon.h \
	core/beacon/mdsbeacon.c core/beacon/mdsbeacon.h \
	core/daemon/asok.c core/daemon/asok.h \
	core/daemon/pidfile.c core/daemon/pidfile.h \
	core/daemon/daemon.c core/daemon/daemon.h \
	core/placement/objhash.c
core_libtsrcore_la_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS) $(ZSTD_CFLAGS) $(SODIUM_CFLAGS)
core_libtsrcore_la_LIBADD = $(LIBCONFIG_LIBS) $(LEVELDB_LIBS) $(ZSTD_LIBS) $(SODIUM_LIBS) $(PTHREAD_LIBS) $(LIBS)

# The shared library exports its public API only: the TSR_API functions of
# the installed headers, listed with their symbol version in
# core/libtessera-core.sym.  Programs built here that call internal
# functions (the daemons, the CLI, tessera-conformance, the tests) link
# core/libtsrcore.la instead (doc/architecture.md says why).
#
# -version-info CURRENT:REVISION:AGE follows libtool's rule, once per
# release that changes the library (doc/development.md): code changed but
# no interface: REVISION+1; interfaces added: CURRENT+1, REVISION=0,
# AGE+1; interfaces removed or changed: CURRENT+1, REVISION=0, AGE=0.
# 1:0:0 is the first ABI with hidden internals (0:0:0 exported them all).
# --gc-sections then drops the code no exported function reaches (the
# messenger, Raft, the maps...): the library shrinks to about a seventh.
lib_LTLIBRARIES += core/libtessera-core.la
core_libtessera_core_la_SOURCES =
core_libtessera_core_la_LIBADD = core/libtsrcore.la
core_libtessera_core_la_LDFLAGS = $(AM_LDFLAGS) -version-info 1:0:0 -no-undefined \
	-Wl,--version-script=$(srcdir)/core/libtessera-core.sym -Wl,--gc-sections
EXTRA_core_libtessera_core_la_DEPENDENCIES = core/libtessera-core.sym
EXTRA_DIST += core/libtessera-core.sym

# The plugin ABI and the utilities plugins may call.
tesseraincludedir = $(includedir)/tessera
tesserainclude_HEADERS = \
	core/include/tessera/common.h \
	core/include/tessera/plugin.h \
	core/include/tessera/backend.h \
	core/include/tessera/placement.h \
	core/include/tessera/redundancy.h \
	core/include/tessera/partitioner.h \
	core/include/tessera/mount.h \
	core/include/tessera/encoding.h \
	core/include/tessera/crc32c.h \
	core/include/tessera/hash.h \
	core/include/tessera/txn.h \
	core/include/tessera/kv.h
