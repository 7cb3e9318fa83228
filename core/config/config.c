/* config.c — the cluster configuration file and a daemon's view of it. */
#include "config/config.h"
#include "log/log.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TSR_PLUGIN_DIR
#define TSR_PLUGIN_DIR "/usr/local/lib/tessera/plugins"
#endif

static const char *const log_levels[] = {
#define X(up, low, val) #low,
	TSR_LOG_LEVEL_MAP(X)
#undef X
	NULL
};

/* The core's options: every daemon and tool understands these.  Daemon
 * types append their own rows as they are written.  Keep doc/configuration.md
 * in step (`tessera config options --format md` prints it). */
static const struct tsr_conf_opt core_options[] = {
	{ { .name = "fsid", .type = TSR_OPT_STRING, .def = "",
	    .help = "cluster id (a UUID); the messenger refuses peers of another cluster" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "plugin_dir", .type = TSR_OPT_STRING, .def = TSR_PLUGIN_DIR,
	    .help = "directory scanned for plugin shared objects (*.so)" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "run_dir", .type = TSR_OPT_STRING, .def = "/run/tessera",
	    .help = "directory for admin sockets and pid files" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "admin_socket", .type = TSR_OPT_STRING,
	    .def = "$run_dir/$name.asok",
	    .help = "unix socket answering admin commands; empty disables it" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "pid_file", .type = TSR_OPT_STRING,
	    .def = "$run_dir/$name.pid",
	    .help = "pid file, locked while the daemon runs; empty disables it" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "log_file", .type = TSR_OPT_STRING, .def = "",
	    .help = "log file (reopened on SIGHUP); empty: stderr in the foreground, $run_dir/$name.log when detached" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "log_level", .type = TSR_OPT_STRING, .def = "info",
	    .choices = log_levels,
	    .help = "level of every log subsystem at start-up" },
	  TSR_SEC_ALL, 0 },
	/* the messenger (core/msg/msgr.h); read by tsr_msgr_opts_from_conf */
	{ { .name = "ms_workers", .type = TSR_OPT_INT, .def = "2", .min = "1", .max = "64",
	    .help = "messenger I/O threads (epoll loops)" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_dispatchers", .type = TSR_OPT_INT, .def = "2", .min = "1", .max = "256",
	    .help = "messenger threads running message handlers" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_max_front", .type = TSR_OPT_SIZE, .def = "1M", .min = "4K", .max = "64M",
	    .help = "largest message front (encoded fields) accepted; a larger frame closes the connection" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_max_data", .type = TSR_OPT_SIZE, .def = "64M", .min = "4K", .max = "1G",
	    .help = "largest message data accepted; a larger frame closes the connection" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_send_queue", .type = TSR_OPT_SIZE, .def = "128M", .min = "1M", .max = "16G",
	    .help = "bytes a connection may hold unsent or unacknowledged; senders wait above it" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_recv_queue", .type = TSR_OPT_SIZE, .def = "128M", .min = "1M", .max = "16G",
	    .help = "bytes of received messages a connection may hold unhandled; reading pauses above it" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_recv_budget", .type = TSR_OPT_SIZE, .def = "512M", .min = "1M", .max = "64G",
	    .help = "bytes of received messages all connections together may hold unhandled; reading pauses above it until handlers catch up" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_keepalive", .type = TSR_OPT_DURATION, .def = "5s", .min = "10", .max = "1h",
	    .help = "send a keepalive after this much silence from the peer" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_idle_timeout", .type = TSR_OPT_DURATION, .def = "30s", .min = "100", .max = "1h",
	    .help = "a connection silent this long is a fault" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_session_timeout", .type = TSR_OPT_DURATION, .def = "5m", .min = "1s", .max = "24h",
	    .help = "how long an accepted lossless session waits for its peer to reconnect" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_compress_min", .type = TSR_OPT_SIZE, .def = "0", .min = "0", .max = "1G",
	    .help = "compress message data of at least this many bytes with zstd when the peer agrees; 0: never" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_inject_drop_every", .type = TSR_OPT_INT, .def = "0", .min = "0", .max = "1000000000",
	    .help = "tests: cut a connection after a message sent, at random 1 in N; 0: off" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_inject_delay", .type = TSR_OPT_DURATION, .def = "0", .min = "0", .max = "1h",
	    .help = "tests: hold every received message this long before its handler; 0: off" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "ms_inject_refuse_every", .type = TSR_OPT_INT, .def = "0", .min = "0", .max = "1000000000",
	    .help = "tests: refuse every Nth incoming connection; 0: off" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "keyring", .type = TSR_OPT_STRING, .def = "/etc/tessera/$name.keyring",
	    .help = "this daemon's or client's key (a monitor's: the cluster secret), a file readable only by its owner; see `tessera auth`" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "mon_members", .type = TSR_OPT_STRING, .def = "",
	    .help = "the monitors, as \"NAME=IP:PORT, ...\" (every daemon and tool reads it)" },
	  TSR_SEC_ALL, 0 },
	{ { .name = "mon_data", .type = TSR_OPT_STRING, .def = "/var/lib/tessera/$name",
	    .help = "directory of a monitor's store (LevelDB: the Raft log and state)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_tick", .type = TSR_OPT_DURATION, .def = "100ms", .min = "10ms", .max = "10s",
	    .help = "a monitor's Raft clock tick; heartbeats go out every tick" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_election_ticks", .type = TSR_OPT_INT, .def = "10", .min = "4", .max = "1000",
	    .help = "election timeout in ticks (random in [N, 2N)); a leader's lease lasts N - 2" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_osd_beacon_grace", .type = TSR_OPT_DURATION, .def = "20s", .min = "100ms", .max = "1h",
	    .help = "an OSD whose beacons stop this long is marked down (doubled for each recent flap, up to 8x)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_osd_min_down_reporters", .type = TSR_OPT_INT, .def = "2", .min = "1", .max = "100",
	    .help = "OSDs that must report a peer silent, within the grace, to mark it down before its beacons stop" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_osd_down_out_interval", .type = TSR_OPT_DURATION, .def = "10m", .min = "100ms", .max = "30d",
	    .help = "an OSD down this long is marked out, so its data is re-replicated (not while noout is set)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_warn_versions_differ", .type = TSR_OPT_DURATION, .def = "1d", .min = "1s", .max = "365d",
	    .help = "health warns (VERSIONS_DIFFER) when the daemons have run different software versions this long: an upgrade left half done" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "osd_data", .type = TSR_OPT_STRING, .def = "/var/lib/tessera/$name",
	    .help = "where an OSD's store lives: the backend's path (a directory for file, a device or image file for blockdev) unless backend_options names one" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "backend", .type = TSR_OPT_STRING, .def = "file",
	    .help = "the backend plugin an OSD stores objects with (file, blockdev); one cluster may mix them" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "backend_options", .type = TSR_OPT_STRING, .def = "",
	    .help = "the backend plugin's options, KEY=VALUE separated by commas (\"journal_size=1G,compression=zstd\"); `tessera backend mkfs --help` lists each backend's" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_addr", .type = TSR_OPT_STRING, .def = "127.0.0.1:0",
	    .help = "IP:PORT an OSD listens on and announces in the OSD map (port 0: any free port); give each host its own address" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_heartbeat_interval", .type = TSR_OPT_DURATION, .def = "1s", .min = "10ms", .max = "1m",
	    .help = "how often an OSD pings each OSD it shares placement groups with" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_heartbeat_grace", .type = TSR_OPT_DURATION, .def = "6s", .min = "50ms", .max = "1h",
	    .help = "a peer that answers no ping this long is reported silent in the OSD's beacons (keep it below mon_osd_beacon_grace)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "mon_osd_nearfull_ratio", .type = TSR_OPT_DOUBLE, .def = "0.85", .min = "0",
	    .max = "1",
	    .help = "an OSD whose store is used past this share raises OSD_NEARFULL" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_osd_full_ratio", .type = TSR_OPT_DOUBLE, .def = "0.95", .min = "0",
	    .max = "1",
	    .help = "an OSD whose store is used past this share raises OSD_FULL (set it as "
		    "osd_full_ratio, at which the OSDs refuse writes)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "client_op_timeout", .type = TSR_OPT_DURATION, .def = "30s", .min = "100ms",
	    .max = "1h",
	    .help = "a client's operation that no OSD answers this long fails with "
		    "ETIMEDOUT (it is sent again meanwhile whenever the map or its session "
		    "changes; a write that timed out may have been applied, and applies "
		    "once if run again)" },
	  TSR_SEC_GLOBAL | TSR_SEC_CLIENT | TSR_SEC_MDS, 0 },
	{ { .name = "client_mds_timeout", .type = TSR_OPT_DURATION, .def = "60s", .min = "1s",
	    .max = "1h",
	    .help = "how long the file client waits before it fails a call: for an "
		    "MDS's answer (ETIMEDOUT) or its journal (EIO), for an OSD map, and "
		    "for held-back writes to reach the OSDs (an fsync, a read or truncate "
		    "that meets them); an unmount gives up on an MDS that does not answer "
		    "after one to three times this.  Keep it above an MDS takeover "
		    "(mon_mds_beacon_grace plus mds_reconnect_timeout) and an OSD's "
		    "failure (mon_osd_beacon_grace), or calls fail meanwhile" },
	  TSR_SEC_GLOBAL | TSR_SEC_CLIENT, 0 },
	{ { .name = "client_dirty_max", .type = TSR_OPT_SIZE, .def = "64M", .min = "0",
	    .max = "16G",
	    .help = "the file client holds back up to this many bytes of writes, in files "
		    "no other client has open, and sends them to the OSDs at fsync, after "
		    "5 s, when another client opens the file, or (every file's at once) at "
		    "a close that finds a quarter of this (at most 32 MiB) held and not yet "
		    "sent (0: every write reaches the OSDs before it returns)" },
	  TSR_SEC_GLOBAL | TSR_SEC_CLIENT, 0 },
	{ { .name = "client_readahead_max", .type = TSR_OPT_SIZE, .def = "8M", .min = "0",
	    .max = "1G",
	    .help = "the file client reads a file read in order up to this many bytes "
		    "ahead of its reader, in pieces of up to 1 MiB, while no other client "
		    "writes the file; all files together at most 8 times this (0: no "
		    "read-ahead)" },
	  TSR_SEC_GLOBAL | TSR_SEC_CLIENT, 0 },
	{ { .name = "client_inject_dup", .type = TSR_OPT_BOOL, .def = "false",
	    .help = "for tests: a client sends every operation twice, as a network that "
		    "duplicates would (the OSDs must apply it once)" },
	  TSR_SEC_GLOBAL | TSR_SEC_CLIENT, 0 },
	{ { .name = "osd_pg_stats_interval", .type = TSR_OPT_DURATION, .def = "2s",
	    .min = "100ms", .max = "1m",
	    .help = "how often an OSD tells the monitors where the PGs it is the "
		    "primary of stand (tessera status, pg stat, health); a change of a "
		    "PG's state is told within half a second" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_full_ratio", .type = TSR_OPT_DOUBLE, .def = "0.95", .min = "0",
	    .max = "1",
	    .help = "past this share of its store used, an OSD refuses, as a primary, client "
		    "writes that may grow what it holds (ENOSPC); removals still go (0: "
		    "never)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_recovery_max_active", .type = TSR_OPT_INT, .def = "1", .min = "1",
	    .max = "1024",
	    .help = "objects a PG's primary recovers at once (pulls and pushes in flight "
		    "per PG; an OSD leading many PGs runs that many times more): higher "
		    "recovers a few PGs faster, and queues more before clients' writes" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_recovery_max_bytes", .type = TSR_OPT_SIZE, .def = "0", .min = "0",
	    .max = "64G",
	    .help = "bytes a second of objects an OSD pushes to others to recover or "
		    "backfill them (0: no limit): lower leaves more of the disks and the "
		    "network to clients, and recovers slower" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_max_backfills", .type = TSR_OPT_INT, .def = "1", .min = "1",
	    .max = "64",
	    .help = "backfills an OSD takes part in at once, as a primary and, counted "
		    "apart, as the copy being filled: more finish sooner and leave less of "
		    "the disks to clients (PGs waiting show backfill_wait)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_backfill_window", .type = TSR_OPT_INT, .def = "64", .min = "1",
	    .max = "4096",
	    .help = "objects a backfill compares and copies per round, per PG" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_pg_log_max", .type = TSR_OPT_INT, .def = "3000", .min = "10",
	    .max = "1000000",
	    .help = "entries a PG's log keeps: a copy that missed fewer changes than this "
		    "recovers from the log, one that missed more is backfilled; a write sent "
		    "again after its entry was trimmed is not recognised as a resend" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_pg_queue_max", .type = TSR_OPT_INT, .def = "1024", .min = "1",
	    .max = "1000000",
	    .help = "client operations a PG holds while it peers or recovers an object "
		    "they wait for; more are answered EAGAIN (the client sends them again)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_scrub_interval", .type = TSR_OPT_DURATION, .def = "1d", .min = "0s",
	    .max = "365d",
	    .help = "a PG is scrubbed (its copies' versions, sizes, attributes and omaps "
		    "compared) this long after its last scrub, when active+clean (0: only "
		    "when asked, tessera pg scrub)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_deep_scrub_interval", .type = TSR_OPT_DURATION, .def = "7d",
	    .min = "0s", .max = "365d",
	    .help = "a PG is deep-scrubbed (its copies' data read whole and compared too) "
		    "this long after its last deep scrub (0: only when asked, tessera pg "
		    "deep-scrub)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_scrub_chunk_max", .type = TSR_OPT_INT, .def = "64", .min = "1",
	    .max = "512",
	    .help = "objects a scrub compares at a time: the PG's shard reads them on each "
		    "copy while its other work waits" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_max_scrubs", .type = TSR_OPT_INT, .def = "1", .min = "0",
	    .max = "64",
	    .help = "scheduled scrubs an OSD runs at once as a primary (0: none on a "
		    "schedule; those asked for with tessera pg scrub always run)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_scrub_auto_repair", .type = TSR_OPT_BOOL, .def = "false",
	    .help = "scheduled scrubs repair what they find (as tessera pg repair does: "
		    "each bad copy is rebuilt from the authoritative one) instead of only "
		    "reporting it" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_op_shards", .type = TSR_OPT_INT, .def = "2", .min = "1", .max = "64",
	    .help = "worker threads an OSD runs its placement groups on (each PG on one, "
		    "its events in order)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_sched_batch", .type = TSR_OPT_BOOL, .def = "true",
	    .help = "the OSD's threads run under SCHED_BATCH: a thread that wakes another "
		    "goes on until it waits instead of being preempted at once, so "
		    "hand-offs between threads cost fewer context switches (4 KiB writes "
		    "on two cores: about a third fewer switches and a sixth more IOPS)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_map_keep", .type = TSR_OPT_INT, .def = "2000", .min = "64", .max = "10000000",
	    .help = "an OSD keeps the last N OSD map epochs it took in its store (a full map "
		    "every 64 epochs, incrementals between), so that it restarts where it "
		    "stopped and takes only the epochs after from the monitors" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "osd_beacon_interval", .type = TSR_OPT_DURATION, .def = "2s", .min = "10ms", .max = "10m",
	    .help = "how often an OSD tells the monitors it is alive (keep it well below mon_osd_beacon_grace)" },
	  TSR_SEC_GLOBAL | TSR_SEC_OSD, 0 },
	{ { .name = "mon_mds_beacon_grace", .type = TSR_OPT_DURATION, .def = "15s", .min = "100ms", .max = "1h",
	    .help = "an MDS whose beacons stop this long is failed: its rank goes to a standby; "
		    "an MDS stops answering clients half of it after its last beacon the "
		    "monitors answered (set it in global: both sides read it)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON | TSR_SEC_MDS, 0 },
	{ { .name = "mds_beacon_interval", .type = TSR_OPT_DURATION, .def = "2s", .min = "10ms", .max = "10m",
	    .help = "how often an MDS tells the monitors it is alive and in which state (keep it well below mon_mds_beacon_grace)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_addr", .type = TSR_OPT_STRING, .def = "127.0.0.1:0",
	    .help = "IP:PORT an MDS listens on for clients and announces in the MDS map (port 0: any free port); give each host its own address" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_metadata_pool", .type = TSR_OPT_STRING, .def = "metadata",
	    .help = "the pool the MDSs keep the namespace and their journals in (replicated); every MDS of a cluster must name the same one" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_data_pool", .type = TSR_OPT_STRING, .def = "data",
	    .help = "the pool a new file system's root gives its files' data (a directory's layout may name another)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_journal_segment_size", .type = TSR_OPT_SIZE, .def = "4M", .min = "64K", .max = "32M",
	    .help = "how much journal one segment object holds before the next is begun; a segment is trimmed once every change in it is written back" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_cache_max_entries", .type = TSR_OPT_INT, .def = "1000000", .min = "100", .max = "1000000000",
	    .help = "about how many directory entries (with their inodes) an MDS keeps in memory; past it, clean directories used least recently go (about 400 bytes an entry)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_session_timeout", .type = TSR_OPT_DURATION, .def = "60s", .min = "1s", .max = "1h",
	    .help = "a client session without renewal or request this long is closed and its locks released (clients renew every 5 s); one holding capabilities is evicted (blocklisted) instead" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_cap_revoke_timeout", .type = TSR_OPT_DURATION, .def = "30s", .min = "1s", .max = "1h",
	    .help = "a client that has not given back a revoked capability this long is evicted: its session closes and the OSDs refuse it (osd blocklist), so others may go on" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_reconnect_timeout", .type = TSR_OPT_DURATION, .def = "10s", .min = "0s", .max = "10m",
	    .help = "after a takeover, how long an MDS waits for the clients of the last holder to replay the changes it answered early and re-assert their capabilities and locks before it serves others (0: it does not wait, and answers changes only once its journal holds them)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_blocklist_duration", .type = TSR_OPT_DURATION, .def = "1h", .min = "1m", .max = "365d",
	    .help = "how long the OSDs refuse a client an MDS evicted (the entry leaves the OSD map after that)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mds_writeback_interval", .type = TSR_OPT_DURATION, .def = "1s", .min = "10ms", .max = "1m",
	    .help = "how often an MDS writes changed directories back to their objects (the journal holds the changes meanwhile)" },
	  TSR_SEC_GLOBAL | TSR_SEC_MDS, 0 },
	{ { .name = "mon_osdmap_history", .type = TSR_OPT_INT, .def = "2000", .min = "256", .max = "10000000",
	    .help = "a monitor keeps the incrementals of the last N OSD map epochs, in its "
		    "snapshots too (at most 256 MiB of them): an OSD that missed up to N "
		    "epochs gets each of them, which its placement groups need to peer" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = "mon_snapshot_every", .type = TSR_OPT_INT, .def = "1000", .min = "2", .max = "100000000",
	    .help = "a monitor snapshots its maps and compacts its log every N changes applied" },
	  TSR_SEC_GLOBAL | TSR_SEC_MON, 0 },
	{ { .name = NULL }, 0, 0 }
};

static const struct {
	const char *name;
	uint32_t sec;
} section_types[] = {
	{ "mon", TSR_SEC_MON },
	{ "osd", TSR_SEC_OSD },
	{ "mds", TSR_SEC_MDS },
	{ "client", TSR_SEC_CLIENT },
};

struct plugin_group {
	const char *key;
	const char *where;  /* "file:line" of the group, kept in conf->strs */
	const char *plugin;
	struct tsr_srcval *srcs;
	size_t nsrc;
	bool expanded;      /* $variables in string members done */
};

struct tsr_conf {
	config_t cfg;
	char *path;

	/* Resolved view; reset by every tsr_conf_resolve. */
	char type[32], id[32], name[64];
	struct tsr_conf_opt *schema; /* options applying to this daemon */
	size_t nschema;
	struct tsr_opt_def *defs;    /* scalar options, NULL-terminated */
	size_t ndefs;
	struct tsr_optset *set;
	char **expanded;             /* per defs index: $-expanded strings */
	struct plugin_group *groups;
	size_t ngroups;
	char **strs;                 /* owned strings (origins) */
	size_t nstrs;
};

const struct tsr_conf_opt *
tsr_conf_core_options(void)
{
	return core_options;
}

const char *
tsr_conf_default_plugin_dir(void)
{
	return TSR_PLUGIN_DIR;
}

const char *
tsr_conf_section_names(uint32_t sections, char *buf, size_t buflen)
{
	size_t n = 0;

	buf[0] = '\0';
	if ((sections & TSR_SEC_ALL) == TSR_SEC_ALL) {
		snprintf(buf, buflen, "all");
		return buf;
	}
	for (size_t i = 0; i < TSR_ARRAY_SIZE(section_types); i++) {
		if (!(sections & section_types[i].sec))
			continue;
		int w = snprintf(buf + n, buflen - n, "%s%s", n ? ", " : "",
				 section_types[i].name);
		if (w > 0 && (size_t)w < buflen - n)
			n += (size_t)w;
	}
	return buf;
}

static void
reset_view(struct tsr_conf *conf)
{
	for (size_t i = 0; i < conf->ndefs; i++)
		free(conf->expanded ? conf->expanded[i] : NULL);
	free(conf->expanded);
	conf->expanded = NULL;
	tsr_optset_destroy(conf->set);
	conf->set = NULL;
	for (size_t i = 0; i < conf->ngroups; i++)
		free(conf->groups[i].srcs);
	free(conf->groups);
	conf->groups = NULL;
	conf->ngroups = 0;
	for (size_t i = 0; i < conf->nstrs; i++)
		free(conf->strs[i]);
	free(conf->strs);
	conf->strs = NULL;
	conf->nstrs = 0;
	free(conf->defs);
	conf->defs = NULL;
	conf->ndefs = 0;
	free(conf->schema);
	conf->schema = NULL;
	conf->nschema = 0;
	conf->type[0] = conf->id[0] = conf->name[0] = '\0';
}

void
tsr_conf_destroy(struct tsr_conf *conf)
{
	if (conf == NULL)
		return;
	reset_view(conf);
	config_destroy(&conf->cfg);
	free(conf->path);
	free(conf);
}

const char *
tsr_conf_path(const struct tsr_conf *conf)
{
	return conf->path;
}

static int
finish_load(struct tsr_conf *conf, int ok, const char *name,
	    struct tsr_conf **out, char *err, size_t errlen)
{
	if (!ok) {
		const char *f = config_error_file(&conf->cfg);
		int rc;
		if (config_error_type(&conf->cfg) == CONFIG_ERR_FILE_IO)
			rc = tsr_errf(err, errlen, -ENOENT,
				      "%s: cannot read configuration file: %s",
				      name, strerror(errno ? errno : ENOENT));
		else
			rc = tsr_errf(err, errlen, -EINVAL, "%s:%d: %s",
				      f ? f : name,
				      config_error_line(&conf->cfg),
				      config_error_text(&conf->cfg));
		tsr_conf_destroy(conf);
		return rc;
	}
	*out = conf;
	return 0;
}

static struct tsr_conf *
conf_new(const char *name)
{
	struct tsr_conf *conf = tsr_xcalloc(1, sizeof(*conf));

	config_init(&conf->cfg);
	conf->path = tsr_xstrdup(name);
	return conf;
}

static int
too_big(const char *name, const char *what, size_t size, char *err,
	size_t errlen)
{
	return tsr_errf(err, errlen, -EFBIG,
			"%s: cannot read configuration file: it is %s%zu bytes, more than the %d bytes (%d KiB) a configuration file may hold",
			name, what, size, TSR_CONF_MAX_SIZE, TSR_CONF_MAX_SIZE / 1024);
}

/* Refuse what libconfig must not be given: a NUL byte (it would stop
 * there, silently), @include (a second file, read without any of these
 * checks: a FIFO would block), and more than TSR_CONF_MAX_SETTINGS
 * settings (libconfig checks each new one against every other in its
 * group: a 1 MiB group of short settings took 37 s).  Settings are
 * counted by their '=' or ':' outside strings and comments, following
 * libconfig's lexical rules. */
static int
scan_text(const char *name, const char *text, size_t len, char *err,
	  size_t errlen)
{
	const char *nul = memchr(text, '\0', len);
	unsigned line = 1, settings = 0;

	if (nul != NULL) {
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		return tsr_errf(err, errlen, -EINVAL,
				"%s:%u: a NUL byte: this is not a configuration file",
				name, line);
	}
	for (size_t i = 0; i < len; i++) {
		char c = text[i], next = i + 1 < len ? text[i + 1] : '\0';

		if (c == '\n') {
			line++;
		} else if (c == '"') {
			for (i++; i < len && text[i] != '"'; i++) {
				if (text[i] == '\\' && i + 1 < len)
					i++;
				line += text[i] == '\n';
			}
		} else if (c == '#' || (c == '/' && next == '/')) {
			while (i + 1 < len && text[i + 1] != '\n')
				i++;
		} else if (c == '/' && next == '*') {
			for (i += 2; i < len && !(text[i] == '*' && i + 1 < len &&
						  text[i + 1] == '/'); i++)
				line += text[i] == '\n';
			i++;
		} else if (c == '@' && len - i >= 8 && memcmp(text + i, "@include", 8) == 0) {
			return tsr_errf(err, errlen, -EINVAL,
					"%s:%u: @include is not supported: a cluster's configuration is one file",
					name, line);
		} else if ((c == '=' || c == ':') && ++settings > TSR_CONF_MAX_SETTINGS) {
			return tsr_errf(err, errlen, -EFBIG,
					"%s:%u: more than %d settings: a configuration file may hold at most %d",
					name, line, TSR_CONF_MAX_SETTINGS,
					TSR_CONF_MAX_SETTINGS);
		}
	}
	return 0;
}

static const char *
file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* Read the whole of a regular file of at most TSR_CONF_MAX_SIZE bytes into
 * *text (NUL-terminated; the caller frees it). */
static int
read_file(const char *path, char **text, size_t *lenp, char *err,
	  size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; anything
	 * but a regular file is refused before the first read */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t len = 0, cap;
	char *buf = NULL;
	int rc = 0;

	if (fd < 0) {
		int e = errno;
		return tsr_errf(err, errlen, -e,
				"%s: cannot read configuration file: %s", path,
				strerror(e));
	}
	if (fstat(fd, &st) < 0)
		rc = tsr_errf(err, errlen, -errno,
			      "%s: cannot read configuration file: %s", path,
			      strerror(errno));
	else if (S_ISDIR(st.st_mode))
		rc = tsr_errf(err, errlen, -EISDIR,
			      "%s: cannot read configuration file: it is a directory",
			      path);
	else if (!S_ISREG(st.st_mode))
		rc = tsr_errf(err, errlen, -EINVAL,
			      "%s: cannot read configuration file: it is %s, not a regular file",
			      path, file_kind(st.st_mode));
	else if (st.st_size > TSR_CONF_MAX_SIZE)
		rc = too_big(path, "", (size_t)st.st_size, err, errlen);
	/* read to the end, not st_size bytes: the file may change meanwhile */
	cap = rc == 0 ? (size_t)st.st_size + 1 : 0;
	if (rc == 0 && (buf = malloc(cap + 1)) == NULL)
		rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
	while (rc == 0) {
		if (len == cap) {
			if (len > TSR_CONF_MAX_SIZE) {
				rc = too_big(path, "now at least ", len, err, errlen);
				break;
			}
			size_t ncap = cap * 2 > TSR_CONF_MAX_SIZE + 1
					      ? TSR_CONF_MAX_SIZE + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);
			if (nb == NULL) {
				rc = tsr_errf(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = tsr_errf(err, errlen, -errno,
				      "%s: cannot read configuration file: %s",
				      path, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*text = buf;
	*lenp = len;
	return 0;
}

static int
load_text(const char *text, size_t len, const char *name,
	  struct tsr_conf **out, char *err, size_t errlen)
{
	struct tsr_conf *conf;
	int rc = scan_text(name, text, len, err, errlen);

	if (rc < 0)
		return rc;
	conf = conf_new(name);
	/* libconfig reads the text we checked, not the file again; messages
	 * and origins name the file all the same (conf->path) */
	return finish_load(conf, config_read_string(&conf->cfg, text), name,
			   out, err, errlen);
}

int
tsr_conf_load(const char *path, struct tsr_conf **out, char *err,
	      size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(path, &text, &len, err, errlen);

	if (rc < 0)
		return rc;
	rc = load_text(text, len, path, out, err, errlen);
	free(text);
	return rc;
}

int
tsr_conf_load_string(const char *text, const char *name,
		     struct tsr_conf **out, char *err, size_t errlen)
{
	size_t len = strlen(text);

	if (len > TSR_CONF_MAX_SIZE)
		return too_big(name, "", len, err, errlen);
	return load_text(text, len, name, out, err, errlen);
}

/* ---- Resolution ---------------------------------------------------------*/

static const char *
keep(struct tsr_conf *conf, char *s)
{
	char **n = realloc(conf->strs, (conf->nstrs + 1) * sizeof(*n));

	if (n == NULL) {
		free(s);
		return "?";
	}
	conf->strs = n;
	conf->strs[conf->nstrs++] = s;
	return s;
}

static const char *
origin(struct tsr_conf *conf, const config_setting_t *s)
{
	const char *f = config_setting_source_file(s);
	char buf[4200];

	snprintf(buf, sizeof(buf), "%s:%u", f ? f : conf->path,
		 config_setting_source_line(s));
	return keep(conf, tsr_xstrdup(buf));
}

static uint32_t
type_section(const char *type)
{
	for (size_t i = 0; i < TSR_ARRAY_SIZE(section_types); i++)
		if (strcmp(section_types[i].name, type) == 0)
			return section_types[i].sec;
	return 0;
}

/* Split a section name into type and id ("osd-3" -> "osd", "3"). */
static int
split_section(const char *name, char *type, size_t tlen, const char **id)
{
	const char *dash = strchr(name, '-');
	size_t n = dash ? (size_t)(dash - name) : strlen(name);

	if (n == 0 || n >= tlen)
		return -EINVAL;
	memcpy(type, name, n);
	type[n] = '\0';
	*id = dash ? dash + 1 : NULL;
	if (dash != NULL) {
		if (**id == '\0')
			return -EINVAL;
		for (const char *p = *id; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '_')
				return -EINVAL;
	}
	return 0;
}

static const struct tsr_conf_opt *
find_opt(const struct tsr_conf_opt *tab, size_t n, const char *key)
{
	/* tab is NULL when a daemon registered no extra options */
	for (size_t i = 0; tab != NULL && i < n && tab[i].def.name; i++)
		if (strcmp(tab[i].def.name, key) == 0)
			return &tab[i];
	return NULL;
}

static int
to_srcval(struct tsr_conf *conf, const config_setting_t *m,
	  struct tsr_srcval *sv)
{
	memset(sv, 0, sizeof(*sv));
	sv->name = config_setting_name(m);
	sv->where = origin(conf, m);
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		sv->kind = TSR_SRC_INT;
		sv->i = config_setting_get_int64(m);
		break;
	case CONFIG_TYPE_FLOAT:
		sv->kind = TSR_SRC_DOUBLE;
		sv->d = config_setting_get_float(m);
		break;
	case CONFIG_TYPE_BOOL:
		sv->kind = TSR_SRC_BOOL;
		sv->i = config_setting_get_bool(m);
		break;
	case CONFIG_TYPE_STRING:
		sv->kind = TSR_SRC_STRING;
		sv->s = config_setting_get_string(m);
		break;
	default:
		sv->kind = TSR_SRC_OTHER;
		break;
	}
	return 0;
}

static int
add_srcval(struct tsr_srcval **v, size_t *n, size_t *cap,
	   const struct tsr_srcval *sv)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct tsr_srcval *nv = realloc(*v, nc * sizeof(*nv));
		if (nv == NULL)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = *sv;
	return 0;
}

static int
take_plugin_group(struct tsr_conf *conf, const config_setting_t *m,
		  const char *secname, char *err, size_t errlen)
{
	struct plugin_group g = { .key = config_setting_name(m) };
	config_setting_t *grp = (config_setting_t *)m;
	const config_setting_t *p;
	size_t cap = 0;

	if (!config_setting_is_group(m))
		return tsr_errf(err, errlen, -EINVAL,
				"%s: section '%s': '%s' must be a group naming a plugin, e.g. %s = { plugin = \"NAME\"; ... };",
				origin(conf, m), secname, g.key, g.key);
	p = config_setting_get_member(grp, "plugin");
	if (p == NULL || config_setting_type(p) != CONFIG_TYPE_STRING)
		return tsr_errf(err, errlen, -EINVAL,
				"%s: section '%s': group '%s' needs a string member 'plugin' naming the plugin",
				origin(conf, m), secname, g.key);
	g.where = origin(conf, m);
	g.plugin = config_setting_get_string(p);
	for (int i = 0; i < config_setting_length(grp); i++) {
		const config_setting_t *o = config_setting_get_elem(grp, (unsigned)i);
		struct tsr_srcval sv;
		if (o == p)
			continue;
		to_srcval(conf, o, &sv);
		if (add_srcval(&g.srcs, &g.nsrc, &cap, &sv) < 0) {
			free(g.srcs);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < conf->ngroups; i++) {
		if (strcmp(conf->groups[i].key, g.key) == 0) {
			/* a more specific section replaces the whole group */
			free(conf->groups[i].srcs);
			conf->groups[i] = g;
			return 0;
		}
	}
	struct plugin_group *ng = realloc(conf->groups,
					  (conf->ngroups + 1) * sizeof(*ng));
	if (ng == NULL) {
		free(g.srcs);
		return -ENOMEM;
	}
	conf->groups = ng;
	conf->groups[conf->ngroups++] = g;
	return 0;
}

/* Build the merged schema of the daemon's type and the table of scalar
 * definitions handed to the option-set builder. */
static int
build_schema(struct tsr_conf *conf, uint32_t sec,
	     const struct tsr_conf_opt *extra)
{
	size_t n = 0, cap = 0;

	for (size_t i = 0; core_options[i].def.name; i++)
		cap++;
	for (size_t i = 0; extra && extra[i].def.name; i++)
		cap++;
	conf->schema = tsr_xcalloc(cap + 1, sizeof(*conf->schema));
	conf->defs = tsr_xcalloc(cap + 1, sizeof(*conf->defs));
	for (int pass = 0; pass < 2; pass++) {
		const struct tsr_conf_opt *tab = pass ? extra : core_options;
		for (size_t i = 0; tab && tab[i].def.name; i++) {
			if (!(tab[i].sections & sec))
				continue;
			conf->schema[n++] = tab[i];
			if (tab[i].plugin_kind == 0)
				conf->defs[conf->ndefs++] = tab[i].def;
		}
	}
	conf->nschema = n;
	return 0;
}

static int expand_all(struct tsr_conf *conf, char *err, size_t errlen);

/* The sections that apply to conf's daemon, least specific first: global,
 * TYPE and TYPE-ID (NULL where absent); and a check that every top-level
 * setting is a section of a known type or of the daemon's own. */
static int
find_sections(struct tsr_conf *conf, config_setting_t *secs[3], char *err,
	      size_t errlen)
{
	config_setting_t *root = config_root_setting(&conf->cfg);

	secs[0] = secs[1] = secs[2] = NULL;
	for (int i = 0; i < config_setting_length(root); i++) {
		config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		const char *sname = config_setting_name(s);
		char stype[32];
		const char *sid;

		if (!config_setting_is_group(s))
			return tsr_errf(err, errlen, -EINVAL,
					"%s: top-level setting '%s' is not a section; sections are groups named global, mon, osd, mds, client or TYPE-ID (e.g. osd-3 = { ... };)",
					origin(conf, s), sname);
		if (split_section(sname, stype, sizeof(stype), &sid) < 0 ||
		    (strcmp(sname, "global") != 0 && type_section(stype) == 0 &&
		     strcmp(stype, conf->type) != 0))
			return tsr_errf(err, errlen, -EINVAL,
					"%s: unknown section '%s'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)",
					origin(conf, s), sname);
		if (strcmp(sname, "global") == 0)
			secs[0] = s;
		else if (strcmp(stype, conf->type) != 0)
			continue;
		else if (sid == NULL)
			secs[1] = s;
		else if (conf->id[0] && strcmp(sid, conf->id) == 0)
			secs[2] = s;
	}
	return 0;
}

/* Resolve the view of type-id from the sections given (global, TYPE,
 * TYPE-ID), or, when given is NULL, from those find_sections finds. */
static int
resolve(struct tsr_conf *conf, const char *type, const char *id,
	const struct tsr_conf_opt *extra, config_setting_t *const given[3],
	char *err, size_t errlen)
{
	config_setting_t *secs[3] = { NULL, NULL, NULL };
	struct tsr_srcval *srcs = NULL;
	size_t nsrc = 0, cap = 0;
	uint32_t sec;
	int rc;

	reset_view(conf);
	sec = type_section(type);
	if (sec == 0)
		sec = TSR_SEC_EXTRA;
	tsr_strlcpy(conf->type, type, sizeof(conf->type));
	tsr_strlcpy(conf->id, id ? id : "", sizeof(conf->id));
	if (id && id[0])
		snprintf(conf->name, sizeof(conf->name), "%s-%s", type, id);
	else
		tsr_strlcpy(conf->name, type, sizeof(conf->name));
	build_schema(conf, sec, extra);
	if (given != NULL)
		memcpy(secs, given, sizeof(secs));
	rc = given ? 0 : find_sections(conf, secs, err, errlen);

	/* least specific first, so later values override */
	for (int k = 0; k < 3 && rc == 0; k++) {
		config_setting_t *s = secs[k];
		bool is_global = k == 0;

		for (int j = 0; s != NULL && j < config_setting_length(s); j++) {
			config_setting_t *m = config_setting_get_elem(s, (unsigned)j);
			const char *key = config_setting_name(m);
			const struct tsr_conf_opt *o =
				find_opt(conf->schema, conf->nschema, key);
			if (o == NULL && is_global &&
			    (find_opt(core_options, SIZE_MAX, key) ||
			     find_opt(extra, SIZE_MAX, key)))
				continue; /* another daemon type's key */
			if (o == NULL) {
				rc = tsr_errf(err, errlen, -EINVAL,
					      "%s: section '%s': unknown key '%s' for a %s daemon",
					      origin(conf, m), config_setting_name(s),
					      key, conf->type);
				break;
			}
			if (o->plugin_kind) {
				rc = take_plugin_group(conf, m, config_setting_name(s),
						       err, errlen);
				if (rc < 0)
					break;
				continue;
			}
			struct tsr_srcval sv;
			to_srcval(conf, m, &sv);
			if ((rc = add_srcval(&srcs, &nsrc, &cap, &sv)) < 0)
				break;
		}
	}
	if (rc == 0) {
		char what[96];
		snprintf(what, sizeof(what), "%s", conf->name);
		rc = tsr_optset_build(conf->defs, srcs, nsrc, what, &conf->set,
				      err, errlen);
	}
	free(srcs);
	if (rc == 0) {
		conf->expanded = tsr_xcalloc(conf->ndefs + 1, sizeof(char *));
		rc = expand_all(conf, err, errlen);
	}
	return rc;
}

int
tsr_conf_resolve(struct tsr_conf *conf, const char *type, const char *id,
		 const struct tsr_conf_opt *extra, char *err, size_t errlen)
{
	return resolve(conf, type, id, extra, NULL, err, errlen);
}

/* One round of tsr_conf_check_all: every view resolved, and check (when
 * not NULL) run on each. */
static int
check_views(struct tsr_conf *conf, tsr_conf_check_fn check, void *arg,
	    char *err, size_t errlen)
{
	config_setting_t *root = config_root_setting(&conf->cfg);
	config_setting_t *global = NULL, *typesec[TSR_ARRAY_SIZE(section_types)] = { 0 };
	int rc;

	/* Every type's view with no id covers global and the type sections,
	 * and checks every section's name. */
	for (size_t t = 0; t < TSR_ARRAY_SIZE(section_types); t++) {
		const char *type = section_types[t].name;
		rc = resolve(conf, type, NULL, NULL, NULL, err, errlen);
		if (rc == 0 && check != NULL)
			rc = check(arg, conf, type, NULL, err, errlen);
		if (rc < 0)
			return rc;
	}
	/* Then each TYPE-ID section is checked as that daemon.  Its three
	 * sections are known here: finding them for each view would take
	 * time in the square of the number of sections. */
	for (int i = 0; i < config_setting_length(root); i++) {
		config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		for (size_t t = 0; t < TSR_ARRAY_SIZE(section_types); t++)
			if (strcmp(config_setting_name(s), section_types[t].name) == 0)
				typesec[t] = s;
		if (strcmp(config_setting_name(s), "global") == 0)
			global = s;
	}
	for (int i = 0; i < config_setting_length(root); i++) {
		config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		char stype[32];
		const char *sid;
		if (split_section(config_setting_name(s), stype, sizeof(stype),
				  &sid) < 0 || sid == NULL)
			continue;
		for (size_t t = 0; t < TSR_ARRAY_SIZE(section_types); t++) {
			if (strcmp(stype, section_types[t].name) != 0)
				continue;
			config_setting_t *secs[3] = { global, typesec[t], s };
			rc = resolve(conf, stype, sid, NULL, secs, err, errlen);
			if (rc == 0 && check != NULL)
				rc = check(arg, conf, stype, sid, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int
tsr_conf_check_all(struct tsr_conf *conf, tsr_conf_check_fn check, void *arg,
		   char *err, size_t errlen)
{
	/* every section's keys, types and ranges first: a misspelt key is
	 * reported as such, not as what a daemon makes of the rest */
	int rc = check_views(conf, NULL, NULL, err, errlen);

	if (rc == 0 && check != NULL)
		rc = check_views(conf, check, arg, err, errlen);
	return rc;
}

/* ---- Accessors ------------------------------------------------------------*/

static const struct tsr_opt_val *
lookup(const struct tsr_conf *conf, const char *key, uint32_t type)
{
	const struct tsr_opt_val *v = conf->set ? tsr_optset_get(conf->set, key)
						: NULL;

	if (v == NULL || (type && v->type != type)) {
		tsr_logf(TSR_SUB_CONF, TSR_LOG_ERROR,
			 "internal: option '%s' asked as %s is not in the %s schema",
			 key, tsr_opt_type_name(type), conf->type);
		return NULL;
	}
	return v;
}

int64_t
tsr_conf_int(const struct tsr_conf *conf, const char *key)
{
	const struct tsr_opt_val *v = lookup(conf, key, 0);

	return v && v->type != TSR_OPT_DOUBLE && v->type != TSR_OPT_STRING
		       ? v->i : 0;
}

bool
tsr_conf_bool(const struct tsr_conf *conf, const char *key)
{
	const struct tsr_opt_val *v = lookup(conf, key, TSR_OPT_BOOL);

	return v ? v->i != 0 : false;
}

double
tsr_conf_double(const struct tsr_conf *conf, const char *key)
{
	const struct tsr_opt_val *v = lookup(conf, key, TSR_OPT_DOUBLE);

	return v ? v->d : 0.0;
}

#define EXPAND_MAX 4096
#define EXPAND_DEPTH 8
#define VAR_MAX 64

static int expand(struct tsr_conf *conf, const char *in, char *out,
		  size_t *n, int depth, char bad[VAR_MAX]);

/* -ENOENT (var copied to bad) for a name that is no variable. */
static int
expand_var(struct tsr_conf *conf, const char *var, char *out, size_t *n,
	   int depth, char bad[VAR_MAX])
{
	const char *val = NULL;

	if (strcmp(var, "name") == 0)
		val = conf->name;
	else if (strcmp(var, "type") == 0)
		val = conf->type;
	else if (strcmp(var, "id") == 0)
		val = conf->id;
	if (val == NULL) {
		const struct tsr_opt_val *v = tsr_optset_get(conf->set, var);
		if (v == NULL || v->type != TSR_OPT_STRING) {
			tsr_strlcpy(bad, var, VAR_MAX);
			return -ENOENT;
		}
		return expand(conf, v->s, out, n, depth + 1, bad);
	}
	size_t l = strlen(val);
	if (*n + l >= EXPAND_MAX)
		return -ERANGE;
	memcpy(out + *n, val, l);
	*n += l;
	return 0;
}

static bool
var_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' ||
	       (!first && isdigit((unsigned char)c));
}

/* $word and ${word} are variables, $$ is a '$', and a '$' followed by
 * anything else is itself.  A word that names no variable is an error:
 * left as text, "$nokey/x.asok" made a directory named "$nokey". */
static int
expand(struct tsr_conf *conf, const char *in, char *out, size_t *n, int depth,
       char bad[VAR_MAX])
{
	if (depth > EXPAND_DEPTH)
		return -ELOOP;
	for (const char *p = in; *p;) {
		if (p[0] == '$' && p[1] == '$') {
			p++; /* the second '$' is copied below */
		} else if (p[0] == '$' && (p[1] == '{' || var_char(p[1], true))) {
			char var[VAR_MAX];
			size_t l = 0;
			bool brace = p[1] == '{';
			const char *q = p + 1 + brace;
			for (; var_char(*q, l == 0); q++)
				if (l < sizeof(var) - 1)
					var[l++] = *q;
			var[l] = '\0';
			if (brace && (l == 0 || *q != '}'))
				return -EBADMSG;
			q += brace;
			int rc = expand_var(conf, var, out, n, depth, bad);
			if (rc < 0)
				return rc;
			p = q;
			continue;
		}
		if (*n + 1 >= EXPAND_MAX)
			return -ERANGE;
		out[(*n)++] = *p++;
	}
	out[*n] = '\0';
	return 0;
}

/* "$name, $type, $id, $fsid, ...": what a string may refer to. */
static void
list_vars(const struct tsr_conf *conf, char *buf, size_t buflen)
{
	size_t n = (size_t)snprintf(buf, buflen, "$name, $type, $id");

	for (size_t i = 0; i < conf->ndefs && n < buflen; i++) {
		if (conf->defs[i].type != TSR_OPT_STRING)
			continue;
		int w = snprintf(buf + n, buflen - n, ", $%s", conf->defs[i].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* Expand text into a new string; on failure the reason goes to err. */
static char *
expand_text(struct tsr_conf *conf, const char *text, const char *where,
	    const char *key, char *err, size_t errlen)
{
	char buf[EXPAND_MAX], bad[VAR_MAX] = "", q[256], qb[VAR_MAX * 4];
	size_t n = 0;
	int rc = expand(conf, text, buf, &n, 0, bad);

	if (rc == -ENOENT) {
		char vars[1024];
		list_vars(conf, vars, sizeof(vars));
		tsr_errf(err, errlen, rc,
			 "%s: option '%s': unknown variable $%s in \"%s\" (a %s daemon's variables: %s; write $$ for a '$')",
			 where, key, tsr_opt_quote(bad, qb, sizeof(qb)),
			 tsr_opt_quote(text, q, sizeof(q)), conf->type, vars);
		return NULL;
	}
	if (rc < 0) {
		tsr_errf(err, errlen, rc, "%s: option '%s': cannot expand \"%s\": %s",
			 where, key, tsr_opt_quote(text, q, sizeof(q)),
			 rc == -ELOOP ? "variables refer to each other"
			 : rc == -EBADMSG ? "'${' must be followed by a name and '}'"
					  : "the result is too long");
		return NULL;
	}
	buf[n] = '\0';
	return tsr_xstrdup(buf);
}

/* Expand every string option once, at resolve time, so a loop between
 * variables is a configuration error naming file and line, not a surprise
 * later. */
static int
expand_all(struct tsr_conf *conf, char *err, size_t errlen)
{
	for (size_t i = 0; i < conf->ndefs; i++) {
		const struct tsr_opt_val *v = tsr_optset_get(conf->set, conf->defs[i].name);
		if (v->type != TSR_OPT_STRING)
			continue;
		int idx = tsr_optset_find(conf->set, conf->defs[i].name);
		conf->expanded[idx] = expand_text(conf, v->s,
						  tsr_optset_where(conf->set, idx),
						  conf->defs[i].name, err, errlen);
		if (conf->expanded[idx] == NULL)
			return -EINVAL;
	}
	return 0;
}

const char *
tsr_conf_str(struct tsr_conf *conf, const char *key)
{
	const struct tsr_opt_val *v = lookup(conf, key, TSR_OPT_STRING);
	int idx;

	if (v == NULL)
		return "";
	idx = tsr_optset_find(conf->set, key);
	return conf->expanded[idx] ? conf->expanded[idx] : v->s;
}

int
tsr_conf_get_text(struct tsr_conf *conf, const char *key, char *buf,
		  size_t buflen)
{
	const struct tsr_opt_val *v = conf->set ? tsr_optset_get(conf->set, key)
						: NULL;
	char tmp[EXPAND_MAX];

	if (v == NULL)
		return -ENOENT;
	if (v->type == TSR_OPT_STRING)
		tsr_strlcpy(tmp, tsr_conf_str(conf, key), sizeof(tmp));
	else
		tsr_opt_format(v, tmp, sizeof(tmp));
	if (strlen(tmp) >= buflen)
		return -ERANGE;
	memcpy(buf, tmp, strlen(tmp) + 1);
	return 0;
}

const char *
tsr_conf_where(const struct tsr_conf *conf, const char *key)
{
	if (conf->set == NULL)
		return "default";
	return tsr_optset_where(conf->set, tsr_optset_find(conf->set, key));
}

void
tsr_conf_foreach(struct tsr_conf *conf,
		 void (*cb)(void *arg, const char *key, const char *value,
			    const char *where),
		 void *arg)
{
	char buf[EXPAND_MAX];

	for (size_t i = 0; i < conf->ndefs; i++) {
		const char *key = conf->defs[i].name;
		if (tsr_conf_get_text(conf, key, buf, sizeof(buf)) == 0)
			cb(arg, key, buf, tsr_conf_where(conf, key));
	}
	for (size_t i = 0; i < conf->ngroups; i++) {
		snprintf(buf, sizeof(buf), "{ plugin = \"%s\"; ... }",
			 conf->groups[i].plugin);
		cb(arg, conf->groups[i].key, buf, conf->groups[i].where);
	}
}

int
tsr_conf_plugin(struct tsr_conf *conf, const char *key, const char **plugin,
		const struct tsr_srcval **srcs, size_t *nsrc, char *err,
		size_t errlen)
{
	for (size_t i = 0; i < conf->ngroups; i++) {
		if (strcmp(conf->groups[i].key, key) != 0)
			continue;
		struct plugin_group *g = &conf->groups[i];
		/* plugin options may use $variables too ("/srv/osd-$id");
		 * expand them once, on first use */
		for (size_t k = 0; !g->expanded && k < g->nsrc; k++) {
			struct tsr_srcval *sv = &g->srcs[k];
			if (sv->kind != TSR_SRC_STRING)
				continue;
			char *x = expand_text(conf, sv->s, sv->where, sv->name, err,
					      errlen);
			if (x == NULL)
				return -EINVAL;
			sv->s = keep(conf, x);
		}
		g->expanded = true;
		*plugin = g->plugin;
		*srcs = g->srcs;
		*nsrc = g->nsrc;
		return 0;
	}
	return tsr_errf(err, errlen, -ENOENT,
			"%s: %s: no '%s' plugin group is configured",
			conf->path, conf->name, key);
}
