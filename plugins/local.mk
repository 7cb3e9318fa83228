# Plugins: one folder per plugin, each building one shared object into
# $(pluginsdir).  Placement plugins share plugins/common (topology model,
# text and binary forms, per-rule tables), compiled into each of them.
PLUGIN_LDFLAGS = -module -avoid-version -shared $(AM_LDFLAGS)
# Placement must give the same answer on every host: no fused multiply-add
# may change the rounding of a draw (see plugins/common/placebase.h).
PLACEMENT_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
PLACEMENT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/common

noinst_LTLIBRARIES += plugins/common/libplacebase.la
plugins_common_libplacebase_la_SOURCES = \
	plugins/common/topo.c plugins/common/topo.h \
	plugins/common/topo_bin.c plugins/common/topo_text.c \
	plugins/common/topo_int.h \
	plugins/common/placebase.c plugins/common/placebase.h \
	plugins/common/topn.h
plugins_common_libplacebase_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_common_libplacebase_la_CFLAGS = $(PLACEMENT_CFLAGS)
EXTRA_DIST += plugins/common/log2_table.inc

plugins_LTLIBRARIES += plugins/placement-crush/crush.la
plugins_placement_crush_crush_la_SOURCES = plugins/placement-crush/crush.c
plugins_placement_crush_crush_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_placement_crush_crush_la_CFLAGS = $(PLACEMENT_CFLAGS)
plugins_placement_crush_crush_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_placement_crush_crush_la_LIBADD = plugins/common/libplacebase.la core/libtessera-core.la

# The default redundancy of a pool: the monitors need it (they check a
# pool's redundancy plugin and its options before they accept the pool).
plugins_LTLIBRARIES += plugins/redundancy-replica/replica.la
plugins_redundancy_replica_replica_la_SOURCES = plugins/redundancy-replica/replica.c
plugins_redundancy_replica_replica_la_LDFLAGS = $(PLUGIN_LDFLAGS)

plugins_LTLIBRARIES += plugins/placement-hrw/hrw.la
plugins_placement_hrw_hrw_la_SOURCES = plugins/placement-hrw/hrw.c
plugins_placement_hrw_hrw_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_placement_hrw_hrw_la_CFLAGS = $(PLACEMENT_CFLAGS)
plugins_placement_hrw_hrw_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_placement_hrw_hrw_la_LIBADD = plugins/common/libplacebase.la core/libtessera-core.la

# Object backends share the object-store engine in plugins/common
# (transaction overlay, group commit, reads), compiled into each.
noinst_LTLIBRARIES += plugins/common/libostore.la
plugins_common_libostore_la_SOURCES = \
	plugins/common/ostore.c plugins/common/ostore.h \
	plugins/common/kvov.c plugins/common/kvov.h \
	plugins/common/journal.c plugins/common/journal.h \
	plugins/common/fileio.c plugins/common/fileio.h \
	plugins/common/errf.h
plugins_common_libostore_la_CPPFLAGS = $(AM_CPPFLAGS) $(ZSTD_CFLAGS)
OSTORE_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/common $(ZSTD_CFLAGS)

plugins_LTLIBRARIES += plugins/backend-file/file.la
plugins_backend_file_file_la_SOURCES = plugins/backend-file/fstore.c
plugins_backend_file_file_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_backend_file_file_la_CPPFLAGS = $(OSTORE_CPPFLAGS)
plugins_backend_file_file_la_LIBADD = plugins/common/libostore.la \
	core/libtessera-core.la $(ZSTD_LIBS) $(PTHREAD_LIBS)

plugins_LTLIBRARIES += plugins/backend-blockdev/blockdev.la
plugins_backend_blockdev_blockdev_la_SOURCES = \
	plugins/backend-blockdev/blockdev.c \
	plugins/backend-blockdev/alloc.c plugins/backend-blockdev/alloc.h \
	plugins/backend-blockdev/super.c plugins/backend-blockdev/super.h \
	plugins/backend-blockdev/mkfs.c plugins/backend-blockdev/mkfs.h
plugins_backend_blockdev_blockdev_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_backend_blockdev_blockdev_la_CPPFLAGS = $(OSTORE_CPPFLAGS)
plugins_backend_blockdev_blockdev_la_LIBADD = plugins/common/libostore.la \
	core/libtessera-core.la $(ZSTD_LIBS) $(PTHREAD_LIBS)
