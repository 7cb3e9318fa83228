/* cluster.h — the cluster test harness: real daemons in a temporary
 * directory, on free loopback ports, from a generated configuration.
 *
 *     struct tc_cluster c;
 *     tc_create(&c, 3, NULL);           // dir, ports, tessera.conf
 *     tc_start_all(&c);                 // tessera-mon -f for each monitor
 *     int l = tc_wait_leader(&c, 10000); // index of the leader, or -1
 *     tc_cli(&c, &out, "pool create p1"); // `tessera ... --conf` -> status
 *     tc_signal(&c, l, SIGKILL);        // kill, stop (SIGTERM), pause
 *     tc_start(&c, l);                  // (SIGSTOP), resume (SIGCONT)
 *     tc_isolate(&c, l, "b c");         // fault injection on and off
 *     tc_destroy(&c);                   // stop everything, remove dir
 *
 * Every daemon runs in the foreground as a child of the test, with
 * PR_SET_PDEATHSIG: when the test process dies — a failed assertion, a
 * timeout, Ctrl-C — its daemons die with it.  tc_destroy() (and the
 * atexit hook tc_create installs) removes the directory; nothing is left
 * in /tmp after a run, passed or failed.  Every wait is bounded by a
 * timeout in milliseconds.
 *
 * Programs: $TESSERA (the CLI) and $TESSERA_MON, set by `make check`.
 */
#ifndef TSR_TEST_CLUSTER_H
#define TSR_TEST_CLUSTER_H

#include "mon/mapsub.h"
#include "mon/monc.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TC_MAX_MONS 9
#define TC_MAX_OSDS 16
#define TC_MAX_MDSS 8

struct tc_daemon {
	char name[16];           /* "a" */
	char addr[32];           /* "127.0.0.1:PORT" */
	pid_t pid;               /* 0: not running */
	int paused;
};

struct tc_cluster {
	char dir[256];
	char conf[320];
	size_t nmon;
	struct tc_daemon mon[TC_MAX_MONS];
	size_t nosd;
	struct tc_daemon osd[TC_MAX_OSDS]; /* name: the id, "0" */
	size_t nmds;
	struct tc_daemon mds[TC_MAX_MDSS]; /* name: "m0", "m1", ... */
	char fsid[40];           /* the cluster's id: "" unless tc_fsid_new */
	char extra[1024];        /* more text for the global section */
	char sections[1024];     /* sections after it ("osd-1 = { ... };") */
	int real_osds;           /* tc_osd_start runs $TESSERA_OSD, not $TESTOSD */
	int real_mds;            /* tc_mds_start runs $TESSERA_MDS, not $TESTMDS */
	uint8_t secret[32];      /* the cluster secret (keys/) */
	struct tsr_auth *admin;  /* client.admin, for tc_client_open */
};

/* A test program's scratch root: a new /tmp/tsr-test-cluster.XXXXXX,
 * exported as TC_ROOT to the test processes; every cluster directory is
 * made inside it, and tc_root_remove() (main, after the tests) removes
 * it whatever the tests left — a failed test exits without cleaning. */
int tc_root_init(void);
void tc_root_remove(void);

/* A new cluster directory with nmon monitors (a, b, c, ...) and a
 * tessera.conf whose global section holds extra (may be NULL). */
int tc_create(struct tc_cluster *c, size_t nmon, const char *extra);
/* The keyring of TYPE-ID (keys/TYPE-ID.keyring, the file the
 * configuration's keyring names): a monitor's holds the cluster secret,
 * any other the key derived for TYPE.ID.  Written before every start,
 * if missing; tests write one themselves to make it wrong. */
int tc_key_write(struct tc_cluster *c, const char *type, const char *id);
/* Write tessera.conf again (after changing c->extra, or for one daemon
 * with a different file: path NULL means c->conf). */
int tc_write_conf(struct tc_cluster *c, const char *path, const char *extra);
/* Stop every daemon (SIGTERM, so sanitizers' exit checks run), remove
 * the directory; the number of sanitizer reports the daemons wrote on
 * stderr (each printed), which a test expects to be 0. */
int tc_destroy(struct tc_cluster *c);

/* Start monitor i (its pid recorded); -1 if it cannot be started.
 * tc_start_conf runs it with another configuration file. */
int tc_start(struct tc_cluster *c, size_t i);
int tc_start_conf(struct tc_cluster *c, size_t i, const char *conf);
/* ... running program prog_path (another build's tessera-mon). */
int tc_start_prog(struct tc_cluster *c, size_t i, const char *prog_path);
int tc_start_all(struct tc_cluster *c);
/* Send sig to monitor i: SIGKILL and SIGTERM wait (bounded) for it to
 * exit and return its wait status; SIGSTOP / SIGCONT pause and resume. */
int tc_signal(struct tc_cluster *c, size_t i, int sig);
/* OSDs: osd i (id i) runs $TESTOSD (boots and sends beacons, stores
 * nothing), or $TESSERA_OSD, the OSD daemon, when c->real_osds is set
 * (its store, osd_data = DIR/osd-ID, made first with tc_osd_mkfs).
 * tc_osd_start makes room for it (c->nosd). */
int tc_osd_start(struct tc_cluster *c, size_t i);
/* Give the cluster an id (fsid, a new UUID) and write tessera.conf
 * again: before any daemon starts (the OSD stamps its store with it; the
 * monitor tests' hand-made peers speak the empty id). */
int tc_fsid_new(struct tc_cluster *c);
/* Run argv (argv[0] the program's path, NULL-terminated) with stdout and
 * stderr into *out (malloc'd); its exit status (128 + signal when
 * killed), bounded by 60 s. */
int tc_run(char **argv, char **out);
/* `$TESSERA_OSD --mkfs --id i`, and a run in the foreground until it
 * exits (for start-up refusals), with conf (NULL: the cluster's): the
 * exit status, the output in *out (malloc'd). */
int tc_osd_mkfs(struct tc_cluster *c, size_t i, const char *conf, char **out);
int tc_osd_run(struct tc_cluster *c, size_t i, const char *conf, char **out);
int tc_osd_signal(struct tc_cluster *c, size_t i, int sig);
int tc_osd_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out);
/* MDSs: mds i (named "m<i>") runs $TESTMDS (beacons, follows the MDS map,
 * takes ranks; the MDS daemon when it exists). */
int tc_mds_start(struct tc_cluster *c, size_t i);
/* A file system on c (made with tc_create): a cluster id, the monitors,
 * four real OSDs on hosts h0..h3, pools data (32 PGs) and metadata (16),
 * three copies each, and nmds real MDSs; 0 once rank 0 is active, -1
 * (after a message on stderr) otherwise. */
int tc_fs_start(struct tc_cluster *c, int nmds);
/* The MDS index holding rank 0 as active (`mds stat`), or -1; wait for
 * one other than `not` (-1: any) for at most timeout_ms. */
int tc_mds_active(struct tc_cluster *c);
int tc_await_mds_active(struct tc_cluster *c, int not, int timeout_ms);
/* osd.id's "up" as `osd tree` says (-1: the monitors do not say); wait
 * until it is up (0), or -1 after timeout_ms. */
int tc_osd_up(struct tc_cluster *c, int id);
int tc_await_osd_up(struct tc_cluster *c, int id, int up, int timeout_ms);
int tc_mds_signal(struct tc_cluster *c, size_t i, int sig);
int tc_mds_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out);

/* Has monitor i exited (then *status gets its wait status)? */
int tc_exited(struct tc_cluster *c, size_t i, int *status);

/* Run `tessera WORDS --conf CONF`; the exit status, with stdout and
 * stderr (malloc'd, may be NULL) in *out.  Bounded by 60 s. */
int tc_cli(struct tc_cluster *c, char **out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An admin socket command to monitor i: 0 with the reply in *out. */
int tc_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out);
/* Fault injection: drop Raft messages between monitor i and names
 * ("b c"), or "none". */
int tc_isolate(struct tc_cluster *c, size_t i, const char *names);

/* From monitor i's admin status: role ("leader"...), term, and the
 * history (last applied index and CRC). 0, or -1 if it does not answer. */
struct tc_mon_view {
	char role[16];
	uint64_t term, applied_index;
	uint32_t history_crc;
	uint64_t osdmap_epoch;
	uint32_t maps_crc;         /* CRC32C of both maps' encodings */
	char version[64];          /* the monitor's software */
};
int tc_view(struct tc_cluster *c, size_t i, struct tc_mon_view *v);
/* Wait until exactly one running monitor calls itself leader and the
 * CLI's `mon stat` names it; its index, or -1 after timeout_ms. */
int tc_wait_leader(struct tc_cluster *c, int timeout_ms);
/* Print to stderr why a wait failed and, for each monitor, whether it
 * runs, its status and the last lines of its log and stderr (a failed
 * wait calls it, so the suite's log says what the cluster was doing). */
void tc_dump(struct tc_cluster *c, const char *why);
/* Wait until every running monitor has applied the same history and
 * holds the same maps, byte for byte (when they run one software version:
 * another may encode the same maps otherwise); 0, or -1 after
 * timeout_ms. */
int tc_wait_converged(struct tc_cluster *c, int timeout_ms);

/* A client in the test process, set up from the cluster's tessera.conf as
 * a client would be (client.admin's key), with a client's runtime: one
 * messenger, an event loop on a thread of its own, and on them the
 * monitor client (core/mon/monc.h: tsr_monc_command from the test's
 * thread) and, when want is not 0, a map subscriber renewing every
 * renew_ms (core/mon/mapsub.h; cb runs on the loop's thread).  0, or -1
 * with the reason printed.  tc_client_close stops and frees it all. */
struct tc_client {
	struct tsr_msgr *msgr;
	struct tsr_loop *loop;
	struct tsr_loop_thread *thr;
	struct tsr_monc *monc;
	struct tsr_mapsub *sub;  /* NULL when want is 0 */
};
int tc_client_open(struct tc_cluster *c, uint32_t want, uint32_t renew_ms,
		   tsr_mapsub_cb cb, void *arg, struct tc_client **out);
void tc_client_close(struct tc_client *k);
/* The index of the monitor listening on addr, or -1. */
int tc_mon_by_addr(struct tc_cluster *c, const char *addr);

uint64_t tc_now_ms(void);
void tc_sleep_ms(int ms);
/* The value after "key": in a JSON text (a number), or def. */
uint64_t tc_json_u64(const char *json, const char *key, uint64_t def);

#endif
