/* locks.c — byte-range (POSIX) and whole-file (flock) locks, held by
 * (client, owner) pairs, coordinated by the MDS that serves the inode
 * (mds.h).  In memory only: after a failover clients re-assert them
 * (reconnect.c), and a client's go when its session closes.  Waiting for a lock is the client's (it asks
 * again): the MDS answers at once, -EAGAIN on a conflict.
 *
 * POSIX locks of one owner merge and split as fcntl(2) says: setting a
 * range replaces what the owner held over it (an unlock cuts a hole).
 * flock locks are the same with the whole file as the range, apart from
 * POSIX ones (Linux keeps the two kinds apart). */
#include "mds.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

struct mlock {
	struct mlock *next;
	uint64_t client;
	struct tsr_mds_lock lk;
};

static int
same_kind(const struct tsr_mds_lock *a, const struct tsr_mds_lock *b)
{
	return (a->type & TSR_LOCK_FLOCK) == (b->type & TSR_LOCK_FLOCK);
}

static uint32_t
base(uint32_t type)
{
	return type & ~TSR_LOCK_FLOCK;
}

static int
overlaps(const struct tsr_mds_lock *a, const struct tsr_mds_lock *b)
{
	return a->start <= b->end && b->start <= a->end;
}

/* A lock of another holder that lk cannot be taken beside, or NULL. */
static struct mlock *
conflict(struct mlock *head, uint64_t client, const struct tsr_mds_lock *lk)
{
	for (struct mlock *l = head; l; l = l->next) {
		if (l->client == client && l->lk.owner == lk->owner)
			continue;
		if (!same_kind(&l->lk, lk) || !overlaps(&l->lk, lk))
			continue;
		if (base(l->lk.type) == F_WRLCK || base(lk->type) == F_WRLCK)
			return l;
	}
	return NULL;
}

int
mds_lock_get(struct mds *m, uint64_t ino, uint64_t client, struct tsr_mds_lock *lk)
{
	struct mlock *c = conflict(tsr_u64map_get(&m->locks, ino), client, lk);

	if (c == NULL) {
		lk->type = (lk->type & TSR_LOCK_FLOCK) | F_UNLCK;
		return 0;
	}
	*lk = c->lk;
	return 1;
}

static struct mlock *
add(struct mlock **pp, uint64_t client, const struct tsr_mds_lock *lk)
{
	struct mlock *n = tsr_xcalloc(1, sizeof(*n));

	n->client = client;
	n->lk = *lk;
	n->next = *pp;
	*pp = n;
	return n;
}

int
mds_lock_set(struct mds *m, uint64_t ino, uint64_t client, const struct tsr_mds_lock *lk)
{
	struct mlock *head = tsr_u64map_get(&m->locks, ino), **pp;

	if (base(lk->type) != F_UNLCK && conflict(head, client, lk))
		return -EAGAIN;
	/* what this owner held over the range goes (the ends outside stay) */
	for (pp = &head; *pp;) {
		struct mlock *l = *pp;
		if (l->client != client || l->lk.owner != lk->owner || !same_kind(&l->lk, lk) ||
		    !overlaps(&l->lk, lk)) {
			pp = &l->next;
			continue;
		}
		if (l->lk.end > lk->end) {
			struct tsr_mds_lock right = l->lk;
			right.start = lk->end + 1;
			add(&l->next, client, &right);
		}
		if (l->lk.start < lk->start) {
			l->lk.end = lk->start - 1;
			pp = &l->next;
		} else {
			*pp = l->next;
			free(l);
		}
	}
	if (base(lk->type) != F_UNLCK)
		add(&head, client, lk);
	if (head)
		return tsr_u64map_put(&m->locks, ino, head);
	tsr_u64map_del(&m->locks, ino);
	return 0;
}

struct drop_walk {
	uint64_t client;
	uint64_t *emptied;
	size_t n, cap;
	struct tsr_u64map *map;
};

static int
drop_one(void *arg, uint64_t key, void *val)
{
	struct drop_walk *w = arg;
	struct mlock *head = val, **pp = &head;

	while (*pp) {
		struct mlock *l = *pp;
		if (w->client == 0 || l->client == w->client) {
			*pp = l->next;
			free(l);
		} else {
			pp = &l->next;
		}
	}
	if (head != val) {
		/* the head changed: remember to fix the map after the walk */
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 16;
			w->emptied = realloc(w->emptied, w->cap * 2 * sizeof(*w->emptied));
			if (w->emptied == NULL)
				abort();
		}
		w->emptied[2 * w->n] = key;
		w->emptied[2 * w->n + 1] = (uint64_t)(uintptr_t)head;
		w->n++;
	}
	return 0;
}

void
mds_locks_drop(struct mds *m, uint64_t client)
{
	struct drop_walk w = { .client = client, .map = &m->locks };

	tsr_u64map_each(&m->locks, drop_one, &w);
	for (size_t i = 0; i < w.n; i++) {
		struct mlock *head = (struct mlock *)(uintptr_t)w.emptied[2 * i + 1];
		if (head)
			tsr_u64map_put(&m->locks, w.emptied[2 * i], head);
		else
			tsr_u64map_del(&m->locks, w.emptied[2 * i]);
	}
	free(w.emptied);
	if (client == 0)
		tsr_u64map_free(&m->locks);
}
