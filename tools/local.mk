# The `tessera` command-line tool.
bin_PROGRAMS += tools/tessera/tessera
tools_tessera_tessera_SOURCES = \
	tools/tessera/main.c tools/tessera/cli.h \
	tools/tessera/cmd_plugins.c \
	tools/tessera/cmd_admin.c \
	tools/tessera/cmd_config.c \
	tools/tessera/cli_plugin.c \
	tools/tessera/cli_util.c \
	tools/tessera/cmd_placement.c \
	tools/tessera/cmd_backend.c tools/tessera/cmd_backend.h \
	tools/tessera/cmd_backend_bench.c \
	tools/tessera/cmd_msgr.c \
	tools/tessera/cmd_cluster.c \
	tools/tessera/cmd_auth.c \
	tools/tessera/cmd_object.c \
	tools/tessera/cmd_fs.c \
	tools/tessera/cmd_bench.c
tools_tessera_tessera_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client/include
# The core's internal API (config, registry, messenger, maps) is not in
# libtessera-core.so: programs of this tree link the core statically.
tools_tessera_tessera_LDADD = client/libtsrclient.la core/libtsrcore.la

# The daemons.
bin_PROGRAMS += daemons/mon/tessera-mon
daemons_mon_tessera_mon_SOURCES = daemons/mon/mon.c daemons/mon/mon.h \
	daemons/mon/propose.c daemons/mon/subs.c daemons/mon/watch.c \
	daemons/mon/state.c daemons/mon/state.h daemons/mon/pgstats.c \
	daemons/mon/placemove.c
daemons_mon_tessera_mon_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
daemons_mon_tessera_mon_LDADD = core/libtsrcore.la $(PTHREAD_LIBS) -lm

bin_PROGRAMS += daemons/osd/tessera-osd
daemons_osd_tessera_osd_SOURCES = daemons/osd/osd.c daemons/osd/osd.h \
	daemons/osd/store.c daemons/osd/pgs.c daemons/osd/heartbeat.c \
	daemons/osd/mapstore.c daemons/osd/pgrt.c daemons/osd/pgrt.h daemons/osd/ops.c \
	daemons/osd/scrub.c daemons/osd/reserve.c daemons/osd/pace.c
daemons_osd_tessera_osd_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
daemons_osd_tessera_osd_LDADD = core/libtsrcore.la $(PTHREAD_LIBS) -lm

bin_PROGRAMS += daemons/mds/tessera-mds
daemons_mds_tessera_mds_SOURCES = daemons/mds/mds.c daemons/mds/mds.h \
	daemons/mds/cache.c daemons/mds/journal.c daemons/mds/ops.c \
	daemons/mds/done.c daemons/mds/locks.c daemons/mds/caps.c \
	daemons/mds/reconnect.c
daemons_mds_tessera_mds_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client/include \
	-I$(top_srcdir)/client
daemons_mds_tessera_mds_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
daemons_mds_tessera_mds_LDADD = client/libtsrclient.la core/libtsrcore.la $(PTHREAD_LIBS) -lm

# The FUSE mount: tessera-fuse, and mount.fuse.tessera (a link to it) for
# mount(8) and /etc/fstab (`mount -t fuse.tessera none DIR -o conf=...`;
# mount(8) finds helpers in /sbin: doc/operations.md says how when the
# prefix is another).
bin_PROGRAMS += tools/tessera-fuse/tessera-fuse
tools_tessera_fuse_tessera_fuse_SOURCES = tools/tessera-fuse/main.c
tools_tessera_fuse_tessera_fuse_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
tools_tessera_fuse_tessera_fuse_LDADD = client/libtsrclient.la core/libtsrcore.la $(PTHREAD_LIBS)

install-exec-hook:
	$(MKDIR_P) $(DESTDIR)$(sbindir)
	cd $(DESTDIR)$(sbindir) && rm -f mount.fuse.tessera && \
		$(LN_S) $(bindir)/tessera-fuse mount.fuse.tessera
uninstall-hook:
	rm -f $(DESTDIR)$(sbindir)/mount.fuse.tessera
