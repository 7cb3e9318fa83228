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
 * Each change bumps the epoch of the map it changes.  The result of each
 * client's latest change is kept (by client id), so a change sent again
 * after a failover is answered with its first result and applied once.
 */
#ifndef TSR_MON_STATE_H
#define TSR_MON_STATE_H

#include "util/sbuf.h"

#include <stdint.h>

#define MON_MAX_OSDS 4096
#define MON_MAX_POOLS 1024
#define MON_SESSIONS 1024

#define MON_FLAG_NOOUT 0x1u

struct mon_osd {
	int32_t id;
	char host[64];
	char addr[64];     /* where it listens, from its last boot */
	double weight;     /* capacity weight (TiB by convention) */
	double reweight;   /* 0..1 */
	int in, up;
	int auto_out;      /* marked out by the monitors (in again at boot) */
	uint64_t up_from;  /* the epoch of its last boot */
};

struct mon_pool {
	int64_t id;
	char name[64];
	uint32_t pg_num, size, min_size;
};

struct mon_session {
	uint64_t client, tid;
	int status;
	char *text;
};

struct mon_state {
	uint64_t osd_epoch, mds_epoch;
	uint32_t flags;
	struct mon_osd *osds;      /* sorted by id */
	size_t nosds;
	struct mon_pool *pools;    /* sorted by id */
	size_t npools;
	int64_t next_pool_id;
	struct mon_session sessions[MON_SESSIONS];
	size_t nsessions, next_session;
	uint64_t applied;          /* commands applied (log entries) */
};

void state_init(struct mon_state *s);
void state_free(struct mon_state *s);

/* Is argv a change (1), a read (0), an OSD's beacon (2: the leader
 * answers it from its own state and clock), or unknown (-EINVAL, reason
 * in out)?
 * A change's words are checked too (numbers are numbers...). */
int state_classify(int argc, char **argv, struct tsr_sbuf *out);

/* Apply the change (client, tid, argv) from log entry data; its status,
 * with the JSON result or the error line in out.  A (client, tid) seen
 * before gets its first result again. */
int state_apply(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
		char **argv, struct tsr_sbuf *out);

/* Serve a read; its status, with the JSON result or the error in out. */
int state_read(const struct mon_state *s, int argc, char **argv,
	       struct tsr_sbuf *out);

/* An OSD by id, or NULL. */
struct mon_osd *state_osd(const struct mon_state *s, int64_t id);

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
