# Tests: Check unit tests per module, test plugins, a test daemon, and
# integration tests that run real processes.
CHECK_CFLAGS_ALL = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBCONFIG_CFLAGS) -I$(top_srcdir)/tests
CHECK_LDADD_ALL = core/libtsrcore.la $(CHECK_LIBS) $(LIBCONFIG_LIBS)

unit_tests = \
	tests/unit/test_crc32c \
	tests/unit/test_auth \
	tests/unit/test_encoding \
	tests/unit/test_registry \
	tests/unit/test_options \
	tests/unit/test_config \
	tests/unit/test_util \
	tests/unit/test_log \
	tests/unit/test_loop \
	tests/unit/test_frame \
	tests/unit/test_msgr \
	tests/unit/test_raft \
	tests/unit/test_mon tests/unit/test_monstate tests/unit/test_osdmsg \
	tests/unit/test_pglog \
	tests/unit/test_objop \
	tests/unit/test_fsmeta \
	tests/unit/test_wbuf \
	tests/unit/test_pgstore \
	tests/unit/test_scrub \
	tests/unit/test_monc \
	tests/unit/test_map \
	tests/unit/test_osdmap_epoch \
	tests/unit/test_asok \
	tests/unit/test_pidfile \
	tests/unit/test_hash \
	tests/unit/test_topo \
	tests/unit/test_replica \
	tests/unit/test_placebase \
	tests/unit/test_txn \
	tests/unit/test_kv \
	tests/unit/test_bd_alloc \
	tests/unit/test_bd_super \
	tests/unit/test_bd_mkfs \
	tests/unit/test_bf_journal \
	tests/unit/test_bf_kvov \
	tests/unit/test_backend_file \
	tests/unit/test_backend_blockdev
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_crc32c_SOURCES = tests/unit/test_crc32c.c
tests_unit_test_crc32c_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_crc32c_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_auth_SOURCES = tests/unit/test_auth.c
tests_unit_test_auth_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_auth_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_frame_SOURCES = tests/unit/test_frame.c
tests_unit_test_frame_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_frame_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_raft_SOURCES = tests/unit/test_raft.c
tests_unit_test_raft_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_raft_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_mon_SOURCES = tests/unit/test_mon.c
tests_unit_test_mon_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_mon_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_pglog_SOURCES = tests/unit/test_pglog.c
tests_unit_test_pglog_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_pglog_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_objop_SOURCES = tests/unit/test_objop.c
tests_unit_test_objop_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_objop_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_pgstore_SOURCES = tests/unit/test_pgstore.c tests/unit/store_rig.h
tests_unit_test_pgstore_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_pgstore_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_scrub_SOURCES = tests/unit/test_scrub.c tests/unit/store_rig.h
tests_unit_test_scrub_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_scrub_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_fsmeta_SOURCES = tests/unit/test_fsmeta.c
tests_unit_test_fsmeta_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_fsmeta_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_wbuf_SOURCES = tests/unit/test_wbuf.c client/wbuf.c client/wbuf.h
tests_unit_test_wbuf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client
tests_unit_test_wbuf_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_wbuf_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_osdmsg_SOURCES = tests/unit/test_osdmsg.c
tests_unit_test_osdmsg_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_osdmsg_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_monc_SOURCES = tests/unit/test_monc.c
tests_unit_test_monc_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_monc_LDADD = $(CHECK_LDADD_ALL)
# the monitor's replicated state, built from the daemon's source
tests_unit_test_monstate_SOURCES = tests/unit/test_monstate.c daemons/mon/state.c \
	daemons/mon/pgstats.c
tests_unit_test_monstate_CFLAGS = $(CHECK_CFLAGS_ALL) -I$(top_srcdir)/daemons/mon
tests_unit_test_monstate_LDADD = $(CHECK_LDADD_ALL)
# the redundancy-replica plugin, loaded from $PLUGIN_DIR as daemons do
tests_unit_test_replica_SOURCES = tests/unit/test_replica.c
tests_unit_test_replica_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_replica_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_map_SOURCES = tests/unit/test_map.c
tests_unit_test_map_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_map_LDADD = $(CHECK_LDADD_ALL)
# PG placement under map epochs, with the crush plugin from $PLUGIN_DIR
tests_unit_test_osdmap_epoch_SOURCES = tests/unit/test_osdmap_epoch.c
tests_unit_test_osdmap_epoch_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_osdmap_epoch_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_msgr_SOURCES = tests/unit/test_msgr.c
tests_unit_test_msgr_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_msgr_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_encoding_SOURCES = tests/unit/test_encoding.c
tests_unit_test_encoding_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_encoding_LDADD = $(CHECK_LDADD_ALL)

# The object-store journal and overlay are tested as modules, compiled in.
tests_unit_test_bf_journal_SOURCES = tests/unit/test_bf_journal.c \
	plugins/ostore/journal.c plugins/ostore/fileio.c
tests_unit_test_bf_journal_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins
tests_unit_test_bf_journal_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_bf_journal_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_bf_kvov_SOURCES = tests/unit/test_bf_kvov.c \
	plugins/ostore/kvov.c
tests_unit_test_bf_kvov_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins
tests_unit_test_bf_kvov_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_bf_kvov_LDADD = $(CHECK_LDADD_ALL)
# Each backend's own failure cases, through the built plugin, and the
# cases they share (damaged LevelDB, commit order) from the harness in
# tests/backend, a test library linked into both.
check_LTLIBRARIES += tests/backend/libbackendtest.la
tests_backend_libbackendtest_la_SOURCES = tests/backend/harness.c \
	tests/backend/harness.h
tests_backend_libbackendtest_la_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_backend_file_SOURCES = tests/unit/test_backend_file.c
tests_unit_test_backend_file_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_backend_file_LDADD = tests/backend/libbackendtest.la \
	$(CHECK_LDADD_ALL)
tests_unit_test_backend_blockdev_SOURCES = tests/unit/test_backend_blockdev.c
tests_unit_test_backend_blockdev_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_backend_blockdev_LDADD = tests/backend/libbackendtest.la \
	$(CHECK_LDADD_ALL)

# Test plugins: one source, one variant per refusal reason (see the comment
# at the top of testplug.c).  -rpath makes libtool build real shared objects
# although they are never installed.
TESTPLUG_LDFLAGS = -module -avoid-version -shared -rpath /nowhere $(AM_LDFLAGS)
check_LTLIBRARIES += \
	tests/plugins/good.la tests/plugins/good_twin.la \
	tests/plugins/bad_abi.la tests/plugins/newer_minor.la \
	tests/plugins/bad_kind.la tests/plugins/no_desc.la \
	tests/plugins/bad_opt_type.la tests/plugins/bad_opt_range.la \
	tests/plugins/bad_ops.la tests/plugins/bad_name.la
tests_plugins_good_la_SOURCES = tests/plugins/testplug.c
tests_plugins_good_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_good_twin_la_SOURCES = tests/plugins/testplug.c
tests_plugins_good_twin_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_TWIN
tests_plugins_good_twin_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_abi_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_abi_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_ABI
tests_plugins_bad_abi_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_newer_minor_la_SOURCES = tests/plugins/testplug.c
tests_plugins_newer_minor_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_NEWER_MINOR
tests_plugins_newer_minor_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_kind_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_kind_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_KIND
tests_plugins_bad_kind_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_no_desc_la_SOURCES = tests/plugins/testplug.c
tests_plugins_no_desc_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_NO_DESC
tests_plugins_no_desc_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_opt_type_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_opt_type_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_OPT_TYPE
tests_plugins_bad_opt_type_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_opt_range_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_opt_range_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_OPT_RANGE
tests_plugins_bad_opt_range_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_ops_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_ops_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_OPS
tests_plugins_bad_ops_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
tests_plugins_bad_name_la_SOURCES = tests/plugins/testplug.c
tests_plugins_bad_name_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_NAME
tests_plugins_bad_name_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
TEST_PLUGIN_DIR = $(abs_top_builddir)/tests/plugins/.libs
# A placement plugin named "crush" that builds other maps, alone in its
# directory: the plugin_dir of one monitor in test_mon's mixed_builds.
check_LTLIBRARIES += tests/plugins/alt/crush.la
tests_plugins_alt_crush_la_SOURCES = tests/plugins/altcrush.c
tests_plugins_alt_crush_la_LDFLAGS = $(TESTPLUG_LDFLAGS)
ALT_PLUGIN_DIR = $(abs_top_builddir)/tests/plugins/alt/.libs

tests_unit_test_options_SOURCES = tests/unit/test_options.c
tests_unit_test_options_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_options_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_config_SOURCES = tests/unit/test_config.c
tests_unit_test_config_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_config_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_util_SOURCES = tests/unit/test_util.c
tests_unit_test_util_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_util_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_log_SOURCES = tests/unit/test_log.c
tests_unit_test_log_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_log_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_loop_SOURCES = tests/unit/test_loop.c
tests_unit_test_loop_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_loop_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_asok_SOURCES = tests/unit/test_asok.c
tests_unit_test_asok_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_asok_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_pidfile_SOURCES = tests/unit/test_pidfile.c
tests_unit_test_pidfile_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_pidfile_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_hash_SOURCES = tests/unit/test_hash.c
tests_unit_test_hash_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_hash_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_topo_SOURCES = tests/unit/test_topo.c
tests_unit_test_topo_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins
tests_unit_test_topo_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_topo_LDADD = plugins/placebase/libplacebase.la $(CHECK_LDADD_ALL)
tests_unit_test_placebase_SOURCES = tests/unit/test_placebase.c
tests_unit_test_placebase_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins
tests_unit_test_placebase_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_placebase_LDADD = plugins/placebase/libplacebase.la $(CHECK_LDADD_ALL)
tests_unit_test_txn_SOURCES = tests/unit/test_txn.c
tests_unit_test_txn_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_txn_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_kv_SOURCES = tests/unit/test_kv.c
tests_unit_test_kv_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_kv_LDADD = $(CHECK_LDADD_ALL)
# backend-blockdev's pieces, tested on their own
tests_unit_test_bd_super_SOURCES = tests/unit/test_bd_super.c \
	plugins/backend-blockdev/super.c plugins/backend-blockdev/super.h
tests_unit_test_bd_super_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/backend-blockdev \
	-I$(top_srcdir)/plugins
tests_unit_test_bd_super_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_bd_super_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_bd_mkfs_SOURCES = tests/unit/test_bd_mkfs.c \
	plugins/backend-blockdev/mkfs.c plugins/backend-blockdev/mkfs.h \
	plugins/backend-blockdev/super.c plugins/backend-blockdev/super.h
tests_unit_test_bd_mkfs_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/backend-blockdev \
	-I$(top_srcdir)/plugins
tests_unit_test_bd_mkfs_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_bd_mkfs_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_bd_alloc_SOURCES = tests/unit/test_bd_alloc.c \
	plugins/backend-blockdev/alloc.c plugins/backend-blockdev/alloc.h
tests_unit_test_bd_alloc_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/backend-blockdev
tests_unit_test_bd_alloc_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_bd_alloc_LDADD = $(CHECK_LDADD_ALL)
tests_unit_test_registry_SOURCES = tests/unit/test_registry.c
tests_unit_test_registry_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_PLUGIN_DIR=\"$(TEST_PLUGIN_DIR)\"
tests_unit_test_registry_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_unit_test_registry_LDADD = $(CHECK_LDADD_ALL)

# The test daemons link the core as real daemons do: statically, from the
# convenience library (libtessera-core.so exports the public API only).
check_PROGRAMS += tests/daemon/tsr-testosd tests/daemon/tsr-osdswarm
tests_daemon_tsr_osdswarm_SOURCES = tests/daemon/osdswarm.c
tests_daemon_tsr_osdswarm_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
tests_daemon_tsr_osdswarm_LDADD = core/libtsrcore.la $(PTHREAD_LIBS)
tests_daemon_tsr_testosd_SOURCES = tests/daemon/testosd.c
tests_daemon_tsr_testosd_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
tests_daemon_tsr_testosd_LDADD = core/libtsrcore.la $(PTHREAD_LIBS)
check_PROGRAMS += tests/daemon/tsr-testmds
tests_daemon_tsr_testmds_SOURCES = tests/daemon/testmds.c
tests_daemon_tsr_testmds_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
tests_daemon_tsr_testmds_LDADD = core/libtsrcore.la $(PTHREAD_LIBS)
check_PROGRAMS += tests/daemon/tsr-testd
tests_daemon_tsr_testd_SOURCES = tests/daemon/testd.c
tests_daemon_tsr_testd_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
tests_daemon_tsr_testd_LDADD = core/libtsrcore.la

integration_tests = tests/integration/test_daemon
check_PROGRAMS += $(integration_tests)
TESTS += $(integration_tests)
tests_integration_test_daemon_SOURCES = tests/integration/test_daemon.c
tests_integration_test_daemon_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTEST_PLUGIN_DIR=\"$(TEST_PLUGIN_DIR)\" \
	-DTESTD=\"$(abs_top_builddir)/tests/daemon/tsr-testd\"
tests_integration_test_daemon_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_integration_test_daemon_LDADD = $(CHECK_LDADD_ALL)

# Shell tests get the programs under test from the environment.  (The
# backend conformance suite runs blockdev with inline_max=64K and file
# with the default 8K, so both ends of the inline sizes are covered.)
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	TESSERA='$(abs_top_builddir)/tools/tessera/tessera'; \
	TESTD='$(abs_top_builddir)/tests/daemon/tsr-testd'; \
	TEST_PLUGIN_DIR='$(TEST_PLUGIN_DIR)'; \
	ALT_PLUGIN_DIR='$(ALT_PLUGIN_DIR)'; \
	LIBTOOL='$(abs_top_builddir)/libtool'; \
	SANITIZERS='$(enable_sanitizers)'; \
	TOP_SRCDIR='$(abs_top_srcdir)'; \
	PLUGIN_DIR='$(abs_top_builddir)/lib/plugins'; \
	PLACEMENT_PLUGINS='$(abs_top_builddir)/plugins/placement-crush/.libs/crush.so:$(abs_top_builddir)/plugins/placement-hrw/.libs/hrw.so'; \
	BACKEND_FILE_PLUGIN='$(abs_top_builddir)/plugins/backend-file/.libs/file.so'; \
	BACKEND_BLOCKDEV_PLUGIN='$(abs_top_builddir)/plugins/backend-blockdev/.libs/blockdev.so'; \
	BACKEND_PLUGINS="$$BACKEND_FILE_PLUGIN:$(abs_top_builddir)/plugins/backend-blockdev/.libs/blockdev.so"; \
	BACKEND_OPTIONS_file='journal_size=8M'; \
	BACKEND_OPTIONS_blockdev='size=256M;inline_max=64K'; \
	TESSERA_MON='$(abs_top_builddir)/daemons/mon/tessera-mon'; \
	TESSERA_OSD='$(abs_top_builddir)/daemons/osd/tessera-osd'; \
	TESTOSD='$(abs_top_builddir)/tests/daemon/tsr-testosd'; \
	OSDSWARM='$(abs_top_builddir)/tests/daemon/tsr-osdswarm'; \
	TESTMDS='$(abs_top_builddir)/tests/daemon/tsr-testmds'; \
	TESSERA_MDS='$(abs_top_builddir)/daemons/mds/tessera-mds'; \
	TESSERA_FUSE='$(abs_top_builddir)/tools/tessera-fuse/tessera-fuse'; \
	export TESSERA_MON TESSERA_OSD TESTOSD OSDSWARM TESTMDS TESSERA_MDS TESSERA_FUSE TESSERA TESTD TEST_PLUGIN_DIR ALT_PLUGIN_DIR LIBTOOL SANITIZERS TOP_SRCDIR PLUGIN_DIR \
		PLACEMENT_PLUGINS BACKEND_FILE_PLUGIN BACKEND_BLOCKDEV_PLUGIN \
		BACKEND_PLUGINS BACKEND_OPTIONS_file \
		BACKEND_OPTIONS_blockdev;
TESTS += tests/cli/test_cli.sh tests/cli/test_placement_cli.sh \
	tests/integration/test_valgrind.sh
EXTRA_DIST += tests/cli/test_cli.sh tests/cli/test_placement_cli.sh \
	tests/integration/test_valgrind.sh

# libtessera-core.so exports the public API and nothing else (also run
# on the installed library by `make installcheck`).
TESTS += tests/abi/test_exports.sh
EXTRA_DIST += tests/abi/test_exports.sh

# Conformance: every backend and placement plugin passes its kind's suite.
# The suites are compiled once, into a convenience library linked by the
# suite's own programs (plugins from the environment: make check) and by
# the installed tessera-conformance (one plugin from its command line, for
# plugins built outside this tree).
noinst_LTLIBRARIES += tests/conformance/libconformance.la
tests_conformance_libconformance_la_SOURCES = tests/conformance/conformance.h \
	tests/conformance/runner.c tests/conformance/runner.h \
	tests/conformance/test_backend.c tests/conformance/test_placement.c
tests_conformance_libconformance_la_CFLAGS = $(CHECK_CFLAGS_ALL)
CONFORMANCE_LDADD = tests/conformance/libconformance.la $(CHECK_LDADD_ALL) -lm

conformance_tests = tests/conformance/test_placement \
	tests/conformance/test_backend
check_PROGRAMS += $(conformance_tests)
TESTS += $(conformance_tests)
tests_conformance_test_placement_SOURCES = tests/conformance/main_placement.c
tests_conformance_test_placement_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_conformance_test_placement_LDADD = $(CONFORMANCE_LDADD)
tests_conformance_test_backend_SOURCES = tests/conformance/main_backend.c
tests_conformance_test_backend_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_conformance_test_backend_LDADD = $(CONFORMANCE_LDADD)

bin_PROGRAMS += tests/conformance/tessera-conformance
tests_conformance_tessera_conformance_SOURCES = \
	tests/conformance/tessera-conformance.c
tests_conformance_tessera_conformance_CFLAGS = $(CHECK_CFLAGS_ALL)
tests_conformance_tessera_conformance_LDADD = $(CONFORMANCE_LDADD)
# the program as a plugin author runs it: usage, --list, both kinds
TESTS += tests/conformance/test_tool.sh
EXTRA_DIST += tests/conformance/test_tool.sh

# Run by hand, not by make check (needs a cross compiler and qemu-user).
EXTRA_DIST += tests/cross/check-arch.sh tests/cross/placement_digest.c
EXTRA_DIST += tests/testutil.h

# The fuzz target is built by clang, not libtool: libFuzzer brings its own
# main and must instrument the code under test, so the decoders' sources
# are compiled in.  tests/fuzz/run.sh gives it a short run on the seed
# corpus (and is skipped when configure found no libFuzzer).
FUZZ_FRAME_SRC = tests/fuzz/fuzz_frame.c core/msg/frame.c core/crc/crc32c.c \
	core/encoding/encoding.c core/auth/auth.c core/util/util.c
if HAVE_FUZZER
check_DATA += tests/fuzz/fuzz_frame
CLEANFILES += tests/fuzz/fuzz_frame
tests/fuzz/fuzz_frame: $(FUZZ_FRAME_SRC:%=$(top_srcdir)/%) $(top_srcdir)/core/msg/frame.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(top_srcdir)/core/include -I$(top_srcdir)/core \
		-o $@ $(FUZZ_FRAME_SRC:%=$(top_srcdir)/%) $(SODIUM_LIBS) -lpthread
endif
# The monitor's decoders: Raft messages, commands, replies, snapshots.
FUZZ_MON_SRC = tests/fuzz/fuzz_mon.c core/mon/monmsg.c daemons/mon/state.c \
	core/osd/osdmsg.c core/osd/pgmsg.c core/osd/pglog.c core/osd/objop.c \
	core/map/osdmap.c core/map/mdsmap.c core/map/maputil.c \
	core/encoding/encoding.c core/util/util.c core/util/sbuf.c
if HAVE_FUZZER
check_DATA += tests/fuzz/fuzz_mon
CLEANFILES += tests/fuzz/fuzz_mon
tests/fuzz/fuzz_mon: $(FUZZ_MON_SRC:%=$(top_srcdir)/%) $(top_srcdir)/core/mon/monmsg.h \
		$(top_srcdir)/core/osd/osdmsg.h $(top_srcdir)/core/osd/objop.h \
		$(top_srcdir)/daemons/mon/state.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(top_srcdir)/core/include -I$(top_srcdir)/core \
		-I$(top_srcdir)/daemons/mon \
		-o $@ $(FUZZ_MON_SRC:%=$(top_srcdir)/%) -lpthread -lm
endif
# The PG machines (core/osd/pgsm.h) under a seeded, deterministic
# simulation of OSDs, network, stores, monitor and client with faults.
check_PROGRAMS += tests/sim/pgsim
tests_sim_pgsim_SOURCES = tests/sim/pgsim.c
tests_sim_pgsim_LDADD = core/libtsrcore.la
TESTS += tests/sim/run.sh
EXTRA_DIST += tests/sim/run.sh

# What OSDs send each other about PGs, and a client's operations on objects.
FUZZ_OSD_SRC = tests/fuzz/fuzz_osd.c core/osd/pgmsg.c core/osd/pglog.c \
	core/osd/pgpush.c core/osd/objop.c core/encoding/encoding.c core/util/util.c \
	core/msg/msg.c
if HAVE_FUZZER
check_DATA += tests/fuzz/fuzz_osd
CLEANFILES += tests/fuzz/fuzz_osd
tests/fuzz/fuzz_osd: $(FUZZ_OSD_SRC:%=$(top_srcdir)/%) $(top_srcdir)/core/osd/pgsm.h \
		$(top_srcdir)/core/osd/pglog.h $(top_srcdir)/core/osd/pgpush.h \
		$(top_srcdir)/core/osd/objop.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(top_srcdir)/core/include -I$(top_srcdir)/core \
		-o $@ $(FUZZ_OSD_SRC:%=$(top_srcdir)/%) -lpthread -lm
endif
# The MDS's decoders: sessions, requests, replies, journal events, entries.
FUZZ_MDS_SRC = tests/fuzz/fuzz_mds.c core/mds/fsmeta.c core/mds/mdsmsg.c \
	core/encoding/encoding.c core/util/util.c core/crc/crc32c.c \
	core/placement/objhash.c
if HAVE_FUZZER
check_DATA += tests/fuzz/fuzz_mds
CLEANFILES += tests/fuzz/fuzz_mds
tests/fuzz/fuzz_mds: $(FUZZ_MDS_SRC:%=$(top_srcdir)/%) $(top_srcdir)/core/mds/fsmeta.h \
		$(top_srcdir)/core/mds/mdsmsg.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(top_srcdir)/core/include -I$(top_srcdir)/core \
		-o $@ $(FUZZ_MDS_SRC:%=$(top_srcdir)/%) -lpthread -lm
endif
TESTS += tests/fuzz/run.sh
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/fuzz_frame.c tests/fuzz/fuzz_mon.c \
	tests/fuzz/fuzz_osd.c tests/fuzz/fuzz_mds.c \
	tests/fuzz/corpus

# The monitors end to end, on the cluster harness (tests/cluster).
check_PROGRAMS += tests/integration/test_mon
TESTS += tests/integration/test_mon
tests_integration_test_mon_SOURCES = tests/integration/test_mon.c \
	tests/cluster/cluster.c tests/cluster/cluster.h tests/cluster/tc_check.h
tests_integration_test_mon_CFLAGS = $(CHECK_CFLAGS_ALL) -I$(top_srcdir)/tests
tests_integration_test_mon_LDADD = $(CHECK_LDADD_ALL)

# The OSD daemon end to end, on the cluster harness.
# The FUSE mount end to end: tessera-fuse and programs on the mount.
check_PROGRAMS += tests/integration/test_fuse
TESTS += tests/integration/test_fuse
tests_integration_test_fuse_SOURCES = tests/integration/test_fuse.c \
	tests/cluster/cluster.c tests/cluster/cluster.h tests/cluster/tc_check.h
tests_integration_test_fuse_CFLAGS = $(CHECK_CFLAGS_ALL) -I$(top_srcdir)/tests
tests_integration_test_fuse_LDADD = $(CHECK_LDADD_ALL)

# The file system end to end: MDS daemons and the file client.
check_PROGRAMS += tests/integration/test_fs
TESTS += tests/integration/test_fs
tests_integration_test_fs_SOURCES = tests/integration/test_fs.c \
	tests/cluster/cluster.c tests/cluster/cluster.h tests/cluster/tc_check.h
tests_integration_test_fs_CFLAGS = $(CHECK_CFLAGS_ALL) -I$(top_srcdir)/tests \
	-I$(top_srcdir)/client/include
tests_integration_test_fs_LDADD = client/libtsrclient.la $(CHECK_LDADD_ALL)

check_PROGRAMS += tests/integration/test_osd
TESTS += tests/integration/test_osd
tests_integration_test_osd_SOURCES = tests/integration/test_osd.c \
	tests/cluster/cluster.c tests/cluster/cluster.h tests/cluster/tc_check.h
tests_integration_test_osd_CFLAGS = $(CHECK_CFLAGS_ALL) -I$(top_srcdir)/tests \
	-I$(top_srcdir)/client/include
tests_integration_test_osd_LDADD = client/libtsrclient.la $(CHECK_LDADD_ALL)
