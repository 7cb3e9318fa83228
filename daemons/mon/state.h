/* state.h — the monitors' replicated state: the cluster maps, and what
 * changes them.
 *
 * The Raft log carries decisions, not commands.  The leader decides each
 * change (words, as `tessera` sends them, or the leader's own marks)
 * against its projected state — the committed maps with every change it
 * has proposed since applied (state_decide) — and proposes the map
 * incrementals the change makes, with its result.  Every monitor applies
 * those incrementals (state_apply_entry) and never decides again: a
 * monitor with another build, or another placement plugin, holds the
 * same maps as the leader, byte for byte.  The leader checks the
 * incrementals before it proposes them by applying them to its projected
 * state, with the same code every holder of the maps runs; an entry whose
 * incrementals do not apply on a follower means its maps are not the
 * leader's, and that monitor stops (fatal) rather than serve them.
 *
 * A change costs what it changes: it is decided on a draft (the OSD map's
 * incremental itself; a copy of the small MDS map), and the placement map
 * is rebuilt only when the topology (OSDs, hosts, racks, weights) moved or
 * the plugin changed.
 *
 * Log entries of version 1 are commands: logs written by monitors before
 * decisions, and by a leader while some member has not shown that it
 * applies decisions (a rolling upgrade, mon.c).  They are applied as
 * before: decided on each monitor (state_apply).
 *
 * A change that is wrong for the state it meets (an OSD that does not
 * exist, a pool name taken) fails, and its result is logged too: a
 * client's (client, tid) and its result are kept, so a change sent again
 * after a failover is answered with its first result and applied once.
 * Each change that moves a map's epoch moves it by one, and the
 * incremental is kept for subscribers a few epochs behind (state_inc).
 */
#ifndef TSR_MON_STATE_H
#define TSR_MON_STATE_H

#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "mon/monmsg.h"
#include "util/sbuf.h"

#include <tessera/placement.h>

#include <stdint.h>

#define MON_MAX_OSDS TSR_OSDMAP_MAX_OSDS
#define MON_SESSIONS 1024
/* incrementals kept per map, for subscribers a few epochs behind */
#define MON_INC_KEEP 256

struct mon_session {
	uint64_t client, tid;
	int status;
	char *text;
};

/* The encoded incrementals that made the last epochs, in a ring: inc[e %
 * MON_INC_KEEP] made epoch e when its epoch matches.  Not replicated: a
 * monitor fills it as it applies the log; after a restart or a snapshot it
 * has none of the earlier ones, and a subscriber that far behind gets the
 * full map. */
struct mon_incs {
	uint64_t epoch[MON_INC_KEEP];
	uint8_t *data[MON_INC_KEEP];
	size_t len[MON_INC_KEEP];
};

/* The OSD map's history: the encoded incrementals that made epochs
 * [first, first + n), at most keep of them and MON_HIST_MAX_BYTES (the
 * oldest go first).  It is part of the monitors' snapshots (state_encode,
 * version 3), so a monitor restarted or brought up to date by a snapshot
 * holds it as the others do, and an OSD that comes back after missing up
 * to keep epochs gets every one of them: its PGs must see each epoch
 * since their interval began (core/osd/pgsm.h). */
#define MON_HIST_MAX_BYTES (256u << 20)
#define MON_HIST_DEFAULT 2000
struct mon_hist {
	uint64_t first;
	size_t head, n, cap;         /* entries data[head .. head + n) */
	uint8_t **data;
	size_t *len;
	size_t bytes;
	size_t keep;
};

/* How the monitor turns the OSDs' hosts and racks into the placement
 * plugin's binary map (mon.c loads the plugin; state.c knows no plugins).
 * encode returns 0 with a malloc'd blob; -EINVAL with the reason in err
 * when the plugin refuses the topology, which every monitor does alike,
 * so the change fails; any other error when this monitor cannot compute
 * it at all (no such plugin here): applying the log on would make this
 * monitor's maps differ from the others', so the monitor must stop
 * (state_apply sets fatal).  Without an encoder (tools, tests) the blob
 * stays empty. */
struct mon_placer {
	int (*encode)(void *arg, const char *plugin, const struct tsr_topology *t,
		      void **blob, size_t *len, char *err, size_t errlen);
	void *arg;
};

/* The placement rules every generated map has: rule 1 only once some OSD
 * is in a rack. */
enum { MON_RULE_HOST = 0, MON_RULE_RACK = 1, MON_RULE_OSD = 2, MON_RULES = 3 };

struct mon_state {
	struct tsr_osdmap osdmap;
	struct tsr_mdsmap mdsmap;
	struct mon_session sessions[MON_SESSIONS];
	size_t nsessions, next_session;
	uint64_t applied;          /* commands applied (log entries) */
	struct mon_incs mds_incs;
	struct mon_hist osd_hist;
	struct mon_placer placer;  /* kept across state_decode */
	int fatal;                 /* this monitor cannot apply the log on */
	int keep_incs;             /* keep incrementals for subscribers (not
	                            * in a leader's projected state) */
};

void state_init(struct mon_state *s);
void state_free(struct mon_state *s);

/* Is argv a change (1), a read (0), an OSD's beacon (2) or an MDS's (3)
 * (the leader answers those from its own state and clock)?  Or are its
 * words wrong: -EINVAL with the reason (and usage) in out.
 *
 * -EINVAL means a usage error, and only that: everything about a
 * command's words that does not depend on the maps (an unknown command
 * or option, an option the command does not take, a missing one, a
 * malformed number, name, address or list) is checked here, where the
 * command is accepted, so such a command never enters the log; a change
 * refused by the maps it meets (state_apply) gets another status
 * (-ENOENT, -EEXIST, -EPERM, -ERANGE, -EBUSY, ...).  Clients show the two
 * apart (the CLI exits 2 and 1).
 *
 * Integers may be written in decimal or as 0x hexadecimal, as in
 * configuration files; the words of a change are rewritten with its
 * integers in decimal (argv's strings are malloc'd and may be replaced),
 * which is what the log holds and what state_apply reads. */
int state_classify(int argc, char **argv, struct tsr_sbuf *out);

/* The redundancy plugin a pool gets when `pool create` names none. */
#define MON_DEFAULT_REDUNDANCY "replica"

/* For `pool create ...`: 1 with the redundancy plugin it names (or the
 * default) and its options text ("" for none), pointing into argv; 0 for
 * any other command.  The leader checks them against its plugins before
 * it proposes the change (mon.c). */
int state_pool_redundancy(int argc, char **argv, const char **plugin,
			  const char **opts);

/* For `osd placement set PLUGIN [--yes-i-really-mean-it]`: 1 with the
 * plugin it names (pointing into argv) and whether it has the flag; 0 for
 * any other command.  The leader checks the plugin before it proposes
 * the change, and answers one without the flag on a map with OSDs with
 * what it would move (mon.c, placemove.c). */
int state_placement_set(int argc, char **argv, const char **plugin, int *yes);

/* The placement map of the OSDs of m, with m->placement's plugin through
 * pl: the OSDs' hosts and racks as buckets under a root, and the rules
 * MON_RULE_* (state.c says how).  0 with the blob (malloc'd; NULL, 0 for a
 * map without OSDs), or a negative errno with the reason in out:
 * -EOPNOTSUPP or -EEXIST when the plugin or the bucket names refuse the
 * topology (every monitor alike), -EIO with *cannot set when this
 * monitor cannot make it at all (no such plugin here). */
int state_placement_map(const struct mon_placer *pl, const struct tsr_osdmap *m,
			void **blob, size_t *len, int *cannot, struct tsr_sbuf *out);

/* The OSD ids of an `osd beacon ... --failed LIST`: "1,2,osd.3".  Each
 * element must be an OSD id (decimal or 0x); the first that is not is
 * named in out (-EINVAL), as is a list of more than max. */
#define MON_MAX_FAILED TSR_MONMSG_MAX_FAILED
/* OSDs one `osd down LIST` or `osd out LIST` may mark (the leader batches
 * the marks of one check into one change) */
#define MON_MAX_MARKS 256
/* OSDs one `osd add FIRST-LAST` may add (its incremental stays well
 * inside a log entry's 1 MiB) */
#define MON_MAX_ADD 2000
/* Does this change use a form monitors of the version before decisions
 * do not know (`osd add FIRST-LAST`, `osd down LIST`, `osd out LIST`,
 * `osd boots`, `osd placement set` with --yes-i-really-mean-it)?  A
 * leader logging commands for them (a rolling upgrade) must refuse it:
 * they would refuse it where it is applied. */
int state_needs_decisions(int argc, char **argv);
int state_osd_list(const char *list, int32_t *ids, size_t max, size_t *n,
		   struct tsr_sbuf *out);

/* What OSDs ask of the map for their PGs (MON_OSD_ALIVE) goes into the
 * log as the leader's batch `osd alives`: state_alive_word() writes one
 * OSD's part of it.  state_alive_holds() says whether map m already holds
 * all that a asks: 1 (nothing to propose), 0, or -ESTALE when a comes
 * from an incarnation the map does not have up (why in out). */
void state_alive_word(const struct tsr_mon_osd_alive *a, struct tsr_sbuf *out);
int state_alive_holds(const struct tsr_osdmap *m, const struct tsr_mon_osd_alive *a,
		      struct tsr_sbuf *out);

/* An MDS's beacon: `mds beacon NAME GID IP:PORT STATE`. */
struct mds_beacon {
	char name[TSR_MDSMAP_NAME];
	uint64_t gid;
	char addr[TSR_MDSMAP_NAME];
	int state;                 /* enum tsr_mds_state: what the MDS says */
};
/* Parse one (0), or -EINVAL with the usage in out. */
int state_mds_beacon(int argc, char **argv, struct mds_beacon *b,
		     struct tsr_sbuf *out);

/* Decide and apply the change (client, tid, argv) on s (a version 1
 * log entry; tools and tests): its status, with the JSON result or the
 * error line in out.  A (client, tid) seen before gets its first result
 * again. */
int state_apply(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
		char **argv, struct tsr_sbuf *out);

/* The leader: decide the change (client, tid, argv) against its
 * projected state s and apply it there.  Returns the log entry to propose
 * (malloc'd; NULL on no memory) — a version 2 entry with the change's
 * status (*status) and result (out) and the incrementals it makes — which
 * every monitor applies with state_apply_entry. */
uint8_t *state_decide(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
		      char **argv, int *status, struct tsr_sbuf *out, size_t *len);
/* What a log entry was. */
struct mon_entry {
	uint64_t client, tid;
	int version;               /* 1: a command, 2: a decision */
	char what[96];             /* its first words, for logs */
	int status;                /* a decision's, as the leader decided */
	const char *text;          /* its result (borrowed from the entry) */
	size_t text_len;
};
/* Apply a committed log entry: its status, with the result or the error
 * line in out.  -EBADMSG: it does not decode; -EIO with s->fatal: a
 * decision's incrementals do not apply to s (its maps are not the
 * leader's).  Either way this monitor must not apply the log on. */
int state_apply_entry(struct mon_state *s, const void *p, size_t len,
		      struct mon_entry *en, struct tsr_sbuf *out);
/* A copy of the maps and sessions (the leader's projected state):
 * -ENOMEM, or 0 with dst overwritten (not freed). */
int state_copy(struct mon_state *dst, const struct mon_state *src);
/* Serve a read; its status, with the JSON result or the error in out. */
int state_read(const struct mon_state *s, int argc, char **argv,
	       struct tsr_sbuf *out);

/* How many epochs of the OSD map's history to keep (mon_osdmap_history). */
void state_hist_keep(struct mon_state *s, size_t keep);
/* The first epoch of the history (0: none). */
uint64_t state_hist_first(const struct mon_state *s);
/* The encoded incremental that made epoch e of the OSD map (which = 0) or
 * the MDS map (1), or NULL when this monitor does not have it. */
const uint8_t *state_inc(const struct mon_state *s, int which, uint64_t e,
			 size_t *len);

/* Health checks.  Each has a stable code, which scripts match, a
 * severity, and a sentence saying what it means, which people read (as
 * `ceph health detail` gives them); doc/operations.md lists them.  One
 * table: MON_HEALTH_CHECKS(X) calls X(CODE, SEVERITY, MEANING). */
#define MON_HEALTH_CHECKS(X)                                                   \
	X(MON_DOWN, WARN, "monitors are out of the quorum; a majority must "   \
	  "stay in it for the maps to change")                                 \
	X(OSD_NONE, WARN, "the cluster has no OSDs: nothing can be stored")    \
	X(OSD_DOWN, WARN, "OSDs are down: their placement groups run with "    \
	  "fewer copies until they return or are marked out")                  \
	X(OSD_OUT, WARN, "OSDs are out: their data moves to the other OSDs")   \
	X(OSDMAP_NOOUT, WARN, "the noout flag is set: down OSDs are not "       \
	  "marked out, so their data is not re-replicated")                    \
	X(MDS_RANK_VACANT, WARN, "a rank of the file system has no MDS: its "   \
	  "share of the namespace does not answer")                            \
	X(POOL_MIN_SIZE, ERR, "a pool needs more OSDs in than there are "       \
	  "(min_size): writes to it stop")                                     \
	X(POOL_RULE, WARN, "a pool's placement rule cannot place all its "     \
	  "copies (fewer hosts, racks or OSDs with OSDs in than its size): its " \
	  "PGs run undersized")                                                \
	X(OSD_NEARFULL, WARN, "OSDs' stores are nearly full "                    \
	  "(mon_osd_nearfull_ratio): add OSDs or remove data before writes "  \
	  "stop")                                                              \
	X(OSD_FULL, ERR, "OSDs' stores are full (mon_osd_full_ratio): writes "   \
	  "to their PGs that may grow them get ENOSPC; removals still go")    \
	X(PG_AVAILABILITY, WARN, "placement groups are not active (peering, "    \
	  "down, incomplete, or not reported by a primary): operations on "   \
	  "their objects wait")                                                \
	X(PG_DEGRADED, WARN, "object copies are missing from placement groups' " \
	  "acting sets: fewer copies than the pool's size until recovery "    \
	  "ends")                                                              \
	X(PG_DAMAGED, ERR, "a scrub found objects whose copies differ "          \
	  "(inconsistent PGs, scrub errors): data may be damaged until the "  \
	  "PGs are repaired")                                                  \
	X(VERSIONS_DIFFER, WARN, "the daemons have run different software "     \
	  "versions for longer than an upgrade takes "                         \
	  "(mon_warn_versions_differ)")

enum mon_health_code {
#define MON_HEALTH_ENUM(code, sev, meaning) MON_HEALTH_##code,
	MON_HEALTH_CHECKS(MON_HEALTH_ENUM)
#undef MON_HEALTH_ENUM
	MON_HEALTH_COUNT
};

/* The checks raised: level 0 OK, 1 WARN, 2 ERR; checks holds JSON
 * objects {"code", "severity", "summary", "meaning", "detail": [...]}
 * and reasons the summaries as JSON strings, both comma-separated. */
struct mon_health {
	int level;
	struct tsr_sbuf checks, reasons;
};
void state_health_init(struct mon_health *h);
void state_health_release(struct mon_health *h);
/* Raise check code: its summary (printf), with detail (JSON strings,
 * comma-separated; "" for none). */
void state_health_raise(struct mon_health *h, enum mon_health_code code,
			const char *detail, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The maps' checks. */
void state_health(const struct mon_state *s, struct mon_health *h);
/* HEALTH_OK, HEALTH_WARN, HEALTH_ERR */
const char *state_health_name(int level);
/* The code's name ("OSD_DOWN"), or NULL. */
const char *state_health_code(int code);
/* A snapshot of the whole state (malloc'd), and back: out is replaced
 * only when p decodes whole and sane (-EBADMSG otherwise). */
uint8_t *state_encode(const struct mon_state *s, size_t *len);
int state_decode(struct mon_state *out, const void *p, size_t len);

/* Log entries: (client, tid, argv) in the versioned encoding. */
uint8_t *state_entry_encode(uint64_t client, uint64_t tid, int argc,
			    char **argv, size_t *len);
/* -EBADMSG for an entry that does not decode (argv: tsr_monmsg_cmd_free). */
struct tsr_mon_cmd;
int state_entry_decode(const void *p, size_t len, struct tsr_mon_cmd *cmd);

#endif
