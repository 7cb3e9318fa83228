/* propose.c — what the leader proposes: decisions on its projected state
 * (mon.h). */
#include "mon.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Decisions (the leader) -------------------------------------------------
 *
 * The log carries mon_decisions (state.h): the leader decides each change
 * against its projected state and proposes the incrementals.  Until
 * every member has shown, in its Raft messages, that it applies them
 * (TSR_MON_FEAT_DECISIONS), the leader proposes commands instead, which
 * every monitor decides itself: in a rolling upgrade the monitors of the
 * older version keep applying the log until the last one is upgraded. */

int
mon_decisions(const struct mon *mon)
{
	for (size_t i = 0; i < mon->mem.n; i++)
		if (&mon->mem.m[i] != mon->self &&
		    !(mon->peers[mon->mem.m[i].id - 1].features & TSR_MON_FEAT_DECISIONS))
			return 0;
	return 1;
}

void
proj_drop(struct mon *mon)
{
	if (mon->proj_valid)
		state_free(&mon->proj);
	mon->proj_valid = 0;
}

/* Keep the projected state: dropped when we stop leading (or the term
 * moves, or a member shows it cannot apply mon_decisions); made anew when we
 * lead and have applied every entry of our log, so that nothing proposed
 * before is missing from it.  Changes held meanwhile go out then. */
void
proj_update(struct mon *mon)
{
	int leader = tsr_raft_role(mon->raft) == TSR_RAFT_LEADER && !mon->failed;

	if (mon->proj_valid && (!leader || tsr_raft_term(mon->raft) != mon->proj_term ||
				!mon_decisions(mon)))
		proj_drop(mon);
	if (mon->proj_valid || !leader || !mon_decisions(mon) ||
	    mon->hist_index != tsr_raft_last_index(mon->raft))
		return;
	if (state_copy(&mon->proj, &mon->st) < 0) {
		LOGW("no memory for the projected state; changes wait");
		return;
	}
	mon->proj_valid = 1;
	mon->proj_term = tsr_raft_term(mon->raft);
	while (mon->held) {
		struct waiter *w = mon->held;
		mon->held = w->next;
		propose_change(mon, w);
	}
}

/* Propose a change: a decision on the projected state, or (before every
 * member applies mon_decisions) the command.  0, or a negative errno. */
static int
propose(struct mon *mon, uint64_t client, uint64_t tid, int argc, char **argv,
	uint64_t *index)
{
	struct tsr_sbuf out;
	uint64_t at = 0, t0 = tsr_mono_ns();
	size_t len;
	uint8_t *e;
	int rc, status;

	if (!mon->proj_valid) {
		e = state_entry_encode(client, tid, argc, argv, &len);
	} else {
		tsr_sbuf_init(&out);
		e = state_decide(&mon->proj, client, tid, argc, argv, &status, &out, &len);
		LOGD("decided %s %s: %d %s", argv[0], argc > 1 ? argv[1] : "", status,
		     tsr_sbuf_str(&out));
		tsr_sbuf_release(&out);
		mon->perf.decided++;
		mon->perf.decide_ns += tsr_mono_ns() - t0;
	}
	rc = e ? tsr_raft_propose(mon->raft, e, len, &at) : -ENOMEM;
	free(e);
	if (rc == 0) {
		/* when it was proposed, for the time to commit (apply_entry) */
		mon->perf.prop_index[at % MON_PERF_RING] = at;
		mon->perf.prop_ns[at % MON_PERF_RING] = t0;
		if (index)
			*index = at;
	}
	if (rc < 0 && mon->proj_valid) {
		/* the projected state has a change the log will not: made
		 * anew once the log is applied */
		proj_drop(mon);
	}
	return rc;
}

void
propose_internal(struct mon *mon, int argc, char **argv)
{
	uint64_t client = 1ull << 63 | tsr_raft_term(mon->raft) << 8 | mon->self->id;

	if (mon_decisions(mon) && !mon->proj_valid)
		return; /* the next check proposes it */
	if (propose(mon, client, ++mon->internal_tid, argc, argv, NULL) < 0)
		LOGW("could not propose %s %s %s", argv[0], argv[1], argc > 2 ? argv[2] : "");
}

void
propose_change(struct mon *mon, struct waiter *w)
{
	int rc = propose(mon, w->cmd.client, w->cmd.tid, (int)w->cmd.argc, w->cmd.argv,
			 &w->index);

	if (rc < 0) {
		mon_reply(w->conn, w->cmd.tid, rc == -EAGAIN ? -EAGAIN : rc,
		      rc == -EAGAIN ? "the leadership is changing; retry" : strerror(-rc),
		      NULL);
		mon_waiter_free(w);
		return;
	}
	w->term = tsr_raft_term(mon->raft);
	w->next = mon->changes;
	mon->changes = w;
}

void
propose_batched(struct mon *mon, int kind, struct waiter *w)
{
	struct mon_batch *b = &mon->batch[kind];

	if (b->head == NULL)
		b->tail = &b->head;
	w->next = NULL;
	*b->tail = w;
	b->tail = &w->next;
	b->n++;
}

static void
propose_batch(struct mon *mon, int kind)
{
	uint64_t client = 1ull << 63 | tsr_raft_term(mon->raft) << 8 | mon->self->id;
	static const char *const verbs[MON_BATCH_KINDS] = { "boots", "alives" };
	static const char seps[MON_BATCH_KINDS] = { ',', '|' };
	struct mon_batch *b = &mon->batch[kind];
	char *argv[3] = { "osd", (char *)verbs[kind], NULL };
	struct tsr_sbuf list;
	struct waiter *batch, **tail;
	uint64_t index = 0;
	size_t n = 0;
	int rc;

	if (b->head == NULL)
		return;
	if (b->index > mon->hist_index && b->n < MON_MAX_MARKS)
		return;
	tsr_sbuf_init(&list);
	batch = b->head;
	for (tail = &b->head; *tail && n < MON_MAX_MARKS; tail = &(*tail)->next, n++) {
		char **w = (*tail)->cmd.argv;
		if (n)
			tsr_sbuf_printf(&list, "%c", seps[kind]);
		if (kind == MON_BATCH_BOOT)
			tsr_sbuf_printf(&list, "%s@%s", w[2], w[3]);
		else
			tsr_sbuf_printf(&list, "%s", w[2]);
	}
	b->head = *tail;
	*tail = NULL;
	b->n -= n;
	if (b->head == NULL)
		b->tail = &b->head;
	argv[2] = (char *)tsr_sbuf_str(&list);
	rc = propose(mon, client, ++mon->internal_tid, 3, argv, &index);
	tsr_sbuf_release(&list);
	if (rc == 0)
		b->index = index;
	else
		LOGW("could not propose the %s of %zu OSDs: %s", verbs[kind], n,
		     strerror(-rc));
	while (batch) {
		struct waiter *w = batch;
		batch = w->next;
		if (rc < 0) {
			mon_reply(w->conn, w->cmd.tid, -EAGAIN, "the leadership is "
				  "changing; retry", NULL);
			mon_waiter_free(w);
			continue;
		}
		w->index = index;
		w->term = tsr_raft_term(mon->raft);
		w->batched = 1 + kind;
		w->next = mon->changes;
		mon->changes = w;
	}
}

void
propose_batches(struct mon *mon)
{
	if (!mon->proj_valid || tsr_raft_role(mon->raft) != TSR_RAFT_LEADER)
		return;
	for (int k = 0; k < MON_BATCH_KINDS; k++)
		propose_batch(mon, k);
}
