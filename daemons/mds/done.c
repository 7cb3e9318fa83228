/* done.c — the changes made per client request (mds.h), so that a request
 * sent again (its reply lost in a failover, or a session that broke) is
 * answered as it was, not done twice: a create sent again must not fail
 * with EEXIST, nor an unlink with ENOENT.
 *
 * The journal's events carry the request (client, tid) and the inode it
 * made or changed; replay records them as the live MDS did.  A client's
 * records go once it says it waits for no older request (the request's
 * `oldest`, which counts the changes it keeps until their SAFE), and at
 * most DONE_MAX are kept per client whatever it says (a client keeps
 * fewer than half as many requests open).  What lives in trimmed segments
 * only is not replayed: a client forgets a change at its SAFE, long
 * before write-back lets the segment go. */
#include "mds.h"

#include "util/util.h"

#include <stdlib.h>

#define DONE_MAX 4096

struct dreq {
	struct dreq *next;
	uint64_t tid, ino;
};

struct dclient {
	struct dreq *head, *tail;    /* in tid order */
	size_t n;
};

void
mds_done_add(struct mds *m, uint64_t client, uint64_t tid, uint64_t ino)
{
	struct dclient *c;
	struct dreq *r;

	if (client == 0 || tid == 0)
		return;
	if ((c = tsr_u64map_get(&m->done, client)) == NULL) {
		c = tsr_xcalloc(1, sizeof(*c));
		if (tsr_u64map_put(&m->done, client, c) < 0) {
			free(c);
			return;
		}
	}
	r = tsr_xcalloc(1, sizeof(*r));
	r->tid = tid;
	r->ino = ino;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	if (++c->n > DONE_MAX) {
		r = c->head;
		c->head = r->next;
		c->n--;
		free(r);
	}
}

int
mds_done_find(struct mds *m, uint64_t client, uint64_t tid, uint64_t *ino)
{
	struct dclient *c = tsr_u64map_get(&m->done, client);

	for (struct dreq *r = c ? c->head : NULL; r; r = r->next)
		if (r->tid == tid) {
			*ino = r->ino;
			return 1;
		}
	return 0;
}

void
mds_done_prune(struct mds *m, uint64_t client, uint64_t oldest)
{
	struct dclient *c = tsr_u64map_get(&m->done, client);

	while (c && c->head && c->head->tid < oldest) {
		struct dreq *r = c->head;
		c->head = r->next;
		if (c->head == NULL)
			c->tail = NULL;
		c->n--;
		free(r);
	}
	if (c && c->n == 0) {
		tsr_u64map_del(&m->done, client);
		free(c);
	}
}

static int
free_client(void *arg, uint64_t key, void *val)
{
	struct dclient *c = val;

	(void)arg;
	(void)key;
	while (c->head) {
		struct dreq *r = c->head;
		c->head = r->next;
		free(r);
	}
	free(c);
	return 0;
}

void
mds_done_free(struct mds *m)
{
	tsr_u64map_each(&m->done, free_client, NULL);
	tsr_u64map_free(&m->done);
}
