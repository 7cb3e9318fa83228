/* state.h — the monitors' replicated state: the cluster maps, and what
 * changes them.
 *
 * Every change is a command (words, as `tessera` sends them) that went
 * through the Raft log; state_apply() runs it against the state, the same
 * way on every monitor, so every monitor's maps are the same at the same
 * log index.  A command that is wrong for the state it meets (an OSD that
 * does not exist, a pool name taken) fails there, deterministically: its
 * result is part of the log's outcome, not of where it was first checked.
 *
 * Each change bumps the epoch of the map it changes by one, and the
 * difference between the two epochs is kept as the incremental that
 * subscribers are sent (state_inc).  The result of each
 * client's latest change is kept (by client id), so a change sent again
 * after a failover is answered with its first result and applied once.
 */
#ifndef TSR_MON_STATE_H
#define TSR_MON_STATE_H

#include "map/mdsmap.h"
#include "map/osdmap.h"
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
	struct mon_incs osd_incs, mds_incs;
	struct mon_placer placer;  /* kept across state_decode */
	int fatal;                 /* this monitor cannot apply the log on */
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

/* The OSD ids of an `osd beacon ... --failed LIST`: "1,2,osd.3".  Each
 * element must be an OSD id (decimal or 0x); the first that is not is
 * named in out (-EINVAL), as is a list of more than max. */
#define MON_MAX_FAILED 64
int state_osd_list(const char *list, int32_t *ids, size_t max, size_t *n,
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

/* Apply the change (client, tid, argv) from log entry data; its status,
 * with the JSON result or the error line in out.  A (client, tid) seen
 * before gets its first result again. */
int state_apply(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
		char **argv, struct tsr_sbuf *out);

/* Serve a read; its status, with the JSON result or the error in out. */
int state_read(const struct mon_state *s, int argc, char **argv,
	       struct tsr_sbuf *out);

/* The encoded incremental that made epoch e of the OSD map (which = 0) or
 * the MDS map (1), or NULL when this monitor does not have it. */
const uint8_t *state_inc(const struct mon_state *s, int which, uint64_t e,
			 size_t *len);

/* The health: 0 OK, 1 WARN, 2 ERR, with the reasons as a JSON array of
 * strings appended to out. */
int state_health(const struct mon_state *s, struct tsr_sbuf *out);

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
