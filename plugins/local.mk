# Plugins: one folder per plugin, each building one shared object into
# $(pluginsdir).  Two libraries of code the plugins share are compiled into
# the plugins that use them, each in a folder named for what it holds:
#   plugins/placebase/  the placement base: topology model, its text and
#                       binary forms, per-rule tables (crush, hrw);
#   plugins/ostore/     the object-store engine: transaction overlay,
#                       commit, reads, fsck, journal (file, blockdev).
# plugins/errf.h is the one error-message helper both use.  Plugins include
# these as "placebase/topo.h", "ostore/ostore.h", "errf.h".
PLUGIN_LDFLAGS = -module -avoid-version -shared $(AM_LDFLAGS)
PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins
# Placement must give the same answer on every host: no fused multiply-add
# may change the rounding of a draw (see plugins/placebase/placebase.h).
PLACEMENT_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
PLACEMENT_CPPFLAGS = $(PLUGIN_CPPFLAGS)
EXTRA_DIST += plugins/errf.h

noinst_LTLIBRARIES += plugins/placebase/libplacebase.la
plugins_placebase_libplacebase_la_SOURCES = \
	plugins/placebase/topo.c plugins/placebase/topo.h \
	plugins/placebase/topo_bin.c plugins/placebase/topo_text.c \
	plugins/placebase/topo_int.h \
	plugins/placebase/placebase.c plugins/placebase/placebase.h \
	plugins/placebase/topn.h
plugins_placebase_libplacebase_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_placebase_libplacebase_la_CFLAGS = $(PLACEMENT_CFLAGS)
EXTRA_DIST += plugins/placebase/log2_table.inc

plugins_LTLIBRARIES += plugins/placement-crush/crush.la
plugins_placement_crush_crush_la_SOURCES = plugins/placement-crush/crush.c
plugins_placement_crush_crush_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_placement_crush_crush_la_CFLAGS = $(PLACEMENT_CFLAGS)
plugins_placement_crush_crush_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_placement_crush_crush_la_LIBADD = plugins/placebase/libplacebase.la core/libtessera-core.la

# The default redundancy of a pool: the monitors need it (they check a
# pool's redundancy plugin and its options before they accept the pool).
plugins_LTLIBRARIES += plugins/redundancy-replica/replica.la
plugins_redundancy_replica_replica_la_SOURCES = plugins/redundancy-replica/replica.c
plugins_redundancy_replica_replica_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
plugins_redundancy_replica_replica_la_LDFLAGS = $(PLUGIN_LDFLAGS)

plugins_LTLIBRARIES += plugins/placement-hrw/hrw.la
plugins_placement_hrw_hrw_la_SOURCES = plugins/placement-hrw/hrw.c
plugins_placement_hrw_hrw_la_CPPFLAGS = $(PLACEMENT_CPPFLAGS)
plugins_placement_hrw_hrw_la_CFLAGS = $(PLACEMENT_CFLAGS)
plugins_placement_hrw_hrw_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_placement_hrw_hrw_la_LIBADD = plugins/placebase/libplacebase.la core/libtessera-core.la

# Object backends share the object-store engine in plugins/ostore
# (transaction overlay, commit, reads, fsck, journal), compiled into each.
noinst_LTLIBRARIES += plugins/ostore/libostore.la
plugins_ostore_libostore_la_SOURCES = \
	plugins/ostore/ostore.c plugins/ostore/ostore.h \
	plugins/ostore/ostore_int.h plugins/ostore/keys.c \
	plugins/ostore/records.c plugins/ostore/overlay.c \
	plugins/ostore/reads.c plugins/ostore/fsck.c \
	plugins/ostore/commit.c \
	plugins/ostore/kvov.c plugins/ostore/kvov.h \
	plugins/ostore/journal.c plugins/ostore/journal.h \
	plugins/ostore/fileio.c plugins/ostore/fileio.h
plugins_ostore_libostore_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(ZSTD_CFLAGS)
OSTORE_CPPFLAGS = $(PLUGIN_CPPFLAGS) $(ZSTD_CFLAGS)

plugins_LTLIBRARIES += plugins/backend-file/file.la
plugins_backend_file_file_la_SOURCES = plugins/backend-file/fstore.c
plugins_backend_file_file_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_backend_file_file_la_CPPFLAGS = $(OSTORE_CPPFLAGS)
plugins_backend_file_file_la_LIBADD = plugins/ostore/libostore.la \
	core/libtessera-core.la $(ZSTD_LIBS) $(PTHREAD_LIBS)

plugins_LTLIBRARIES += plugins/backend-blockdev/blockdev.la
plugins_backend_blockdev_blockdev_la_SOURCES = \
	plugins/backend-blockdev/blockdev.c \
	plugins/backend-blockdev/alloc.c plugins/backend-blockdev/alloc.h \
	plugins/backend-blockdev/super.c plugins/backend-blockdev/super.h \
	plugins/backend-blockdev/mkfs.c plugins/backend-blockdev/mkfs.h
plugins_backend_blockdev_blockdev_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_backend_blockdev_blockdev_la_CPPFLAGS = $(OSTORE_CPPFLAGS)
plugins_backend_blockdev_blockdev_la_LIBADD = plugins/ostore/libostore.la \
	core/libtessera-core.la $(ZSTD_LIBS) $(PTHREAD_LIBS)

# The FUSE mount (tessera/mount.h), loaded by tessera-fuse: libfuse3's
# low-level API over the file client table the program hands it.
plugins_LTLIBRARIES += plugins/mount-fuse/fuse.la
plugins_mount_fuse_fuse_la_SOURCES = plugins/mount-fuse/fuse.c
plugins_mount_fuse_fuse_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/client/include
plugins_mount_fuse_fuse_la_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
plugins_mount_fuse_fuse_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_mount_fuse_fuse_la_LIBADD = $(FUSE3_LIBS) $(PTHREAD_LIBS)
