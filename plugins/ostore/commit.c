/* commit.c — the engine's commit pipeline: per-collection queues of the
 * transactions submitted (deep copies), commit threads that prepare and
 * stage batches of them side by side, the seal that makes staged batches
 * durable together, and submit and flush.
 *
 * Order.  The ABI promises order per collection (tessera/backend.h): the
 * transactions of one collection commit in submission order and their
 * callbacks come in that order; those of different collections do not
 * wait for each other, so one placement group's large write does not
 * hold back another's small one.  Each collection with queued work has a
 * queue (struct os_seq).  A commit thread takes a batch: the queues of
 * collections no other thread holds, the longest-ready first, up to
 * BATCH_MAX transactions or batch_limit bytes.  The collections stay the
 * thread's until the batch's callbacks have returned, so a collection's
 * next batch starts after its previous one has finished.  A transaction
 * naming several collections is queued on each and taken only when it
 * heads all of them and no other thread holds any: it commits after
 * everything submitted before it on any of them, and before everything
 * submitted after it on any of them.  flush waits for everything
 * submitted before it.
 *
 * Group commit.  A batch is prepared into one overlay (each transaction
 * sees the ones before it; one that fails is left out and the overlay
 * rebuilt without it) and staged by the backend: the part of its commit
 * that concerns only its own objects (compressing, placing data, writing
 * new data in place), which commit threads do side by side.  Staged
 * overlays then wait for the seal.  The first thread to get there seals
 * every overlay waiting — one journal record, one flush — while the
 * others wait for it; overlays staged meanwhile gather for the next seal.
 * So a flush is shared by whatever is ready, within one collection and
 * across collections, and a slow stage (a large write) holds back only its
 * own collections: the others are sealed without it.
 */
#include "ostore_int.h"
#include "errf.h"

#include <tessera/txn.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MAX 64   /* transactions per batch */
#define SEAL_MAX 64    /* overlays per seal */
#define NBUCKETS 1024  /* the collection table's */

/* One collection's queue; exists while it has queued or busy work. */
struct os_seq {
	struct tsr_coll_id cid;
	struct os_seq *hnext;          /* in its hash bucket */
	struct os_link *head, *tail;   /* queued, by submission */
	struct os_seq *rprev, *rnext;  /* on the ready list */
	int on_ready;
	void *owner;                   /* the commit thread holding it */
	struct os_seq *cnext;          /* in its owner's list */
};

/* A commit thread's own. */
struct os_worker {
	struct os *os;
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	struct os_seq *claimed;        /* collections its batch holds */
	pthread_cond_t cv;             /* it waits here when idle */
	int woken;
	struct os_worker *inext;       /* on the idle stack */
};

/* Idle commit threads wait on a stack (qlock held): work wakes the one
 * that went idle last, whose caches are warm and which the scheduler
 * keeps near the submitter.  With a condition variable's order (the one
 * idle longest) work wandered over every thread under light load, and
 * the migrations cost a third of a busy collection's rate. */
static void
wake_one(struct os *os)
{
	struct os_worker *w = os->idle;

	if (w == NULL)
		return;
	os->idle = w->inext;
	w->woken = 1;
	pthread_cond_signal(&w->cv);
}

static void
wake_all(struct os *os)
{
	while (os->idle != NULL)
		wake_one(os);
}

static void
wait_idle(struct os *os, struct os_worker *w)
{
	w->woken = 0;
	w->inext = os->idle;
	os->idle = w;
	while (!w->woken)
		pthread_cond_wait(&w->cv, &os->qlock);
}

/* ---- Collections' queues (qlock held) --------------------------------------*/

/* Keep a committed transaction's allocation for a later one, or free it
 * (qlock held).  When the spares are full, a larger one replaces the
 * smallest. */
static void
pending_recycle(struct os *os, struct os_pending *pd)
{
	size_t small = 0;

	for (size_t i = 1; i < os->nspare; i++)
		if (os->spare[i]->cap < os->spare[small]->cap)
			small = i;
	if (os->nspare == OS_SPARE ||
	    os->spare_bytes + pd->cap > OS_SPARE_BYTES) {
		struct os_pending *out = os->nspare ? os->spare[small] : NULL;

		if (out == NULL || out->cap >= pd->cap ||
		    os->spare_bytes - out->cap + pd->cap > OS_SPARE_BYTES) {
			free(pd);
			return;
		}
		os->spare_bytes -= out->cap;
		os->spare[small] = os->spare[--os->nspare];
		free(out);
	}
	os->spare[os->nspare++] = pd;
	os->spare_bytes += pd->cap;
}

static size_t
cid_hash(const struct tsr_coll_id *c)
{
	uint64_t h = c->pool * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)c->pg << 32 | (uint32_t)c->shard) * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h >> 40) % NBUCKETS;
}

static int
cid_eq(const struct tsr_coll_id *a, const struct tsr_coll_id *b)
{
	return a->pool == b->pool && a->pg == b->pg && a->shard == b->shard;
}

static int
cid_cmp(const void *x, const void *y)
{
	const struct tsr_coll_id *a = x, *b = y;

	if (a->pool != b->pool)
		return a->pool < b->pool ? -1 : 1;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	return a->shard < b->shard ? -1 : a->shard > b->shard;
}

/* The queue of cid, made when missing (NULL: out of memory). */
static struct os_seq *
seq_get(struct os *os, const struct tsr_coll_id *cid)
{
	size_t b = cid_hash(cid);
	struct os_seq *s;

	for (s = os->seqs[b]; s != NULL; s = s->hnext)
		if (cid_eq(&s->cid, cid))
			return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->cid = *cid;
	s->hnext = os->seqs[b];
	os->seqs[b] = s;
	return s;
}

static void
seq_free(struct os *os, struct os_seq *s)
{
	struct os_seq **pp = &os->seqs[cid_hash(&s->cid)];

	while (*pp != s)
		pp = &(*pp)->hnext;
	*pp = s->hnext;
	free(s);
}

static void
ready_add(struct os *os, struct os_seq *s)
{
	if (s->on_ready)
		return;
	s->on_ready = 1;
	s->rnext = NULL;
	s->rprev = os->ready_tail;
	if (os->ready_tail)
		os->ready_tail->rnext = s;
	else
		os->ready_head = s;
	os->ready_tail = s;
}

static void
ready_remove(struct os *os, struct os_seq *s)
{
	if (!s->on_ready)
		return;
	if (s->rprev)
		s->rprev->rnext = s->rnext;
	else
		os->ready_head = s->rnext;
	if (s->rnext)
		s->rnext->rprev = s->rprev;
	else
		os->ready_tail = s->rprev;
	s->on_ready = 0;
	s->rprev = s->rnext = NULL;
}

/* Can w take pd now: does it head every queue it is on, none of them
 * held by another thread? */
static int
takeable(const struct os_pending *pd, const struct os_worker *w)
{
	for (uint32_t i = 0; i < pd->nlinks; i++) {
		const struct os_seq *s = pd->links[i].seq;
		if (s->head != &pd->links[i] || (s->owner != NULL && s->owner != w))
			return 0;
	}
	return 1;
}

/* Take pd off the heads of its queues; its collections become w's. */
static void
take(struct os *os, struct os_worker *w, struct os_pending *pd)
{
	for (uint32_t i = 0; i < pd->nlinks; i++) {
		struct os_seq *s = pd->links[i].seq;

		s->head = pd->links[i].next;
		if (s->head == NULL)
			s->tail = NULL;
		if (s->owner == NULL) {
			s->owner = w;
			ready_remove(os, s);
			s->cnext = w->claimed;
			w->claimed = s;
		}
	}
}

static int
pending_cmp(const void *x, const void *y)
{
	const struct os_pending *a = *(struct os_pending *const *)x;
	const struct os_pending *b = *(struct os_pending *const *)y;

	return a->no < b->no ? -1 : a->no > b->no;
}

/* Take a batch for w: whole queues of ready collections, oldest ready
 * first, then put in submission order (which keeps each collection's
 * order).  How many (0: nothing w may take now). */
static size_t
take_batch(struct os *os, struct os_worker *w, struct os_pending **batch)
{
	size_t n = 0, bytes = 0;
	struct os_seq *s = os->ready_head;

	while (s != NULL && n < BATCH_MAX) {
		struct os_seq *next = s->rnext;
		int restart = 0;

		while (s->head != NULL && n < BATCH_MAX) {
			struct os_pending *pd = s->head->pd;

			if (n > 0 && bytes + pd->len > os->batch_limit)
				goto full;
			if (!takeable(pd, w))
				break; /* waits for another collection */
			take(os, w, pd);
			batch[n++] = pd;
			bytes += pd->len;
			/* other collections left the ready list */
			restart |= pd->nlinks > 1;
		}
		s = restart ? os->ready_head : next;
	}
full:
	qsort(batch, n, sizeof(*batch), pending_cmp);
	return n;
}

/* The batch is done (its callbacks returned): its collections are free
 * again, and its transactions leave the books. */
static void
batch_done(struct os *os, struct os_worker *w, struct os_pending **batch, size_t n)
{
	while (w->claimed != NULL) {
		struct os_seq *s = w->claimed;

		w->claimed = s->cnext;
		s->owner = NULL;
		if (s->head != NULL)
			ready_add(os, s);
		else
			seq_free(os, s);
	}
	for (size_t i = 0; i < n; i++) {
		struct os_pending *pd = batch[i];

		if (pd->older)
			pd->older->newer = pd->newer;
		else
			os->oldest = pd->newer;
		if (pd->newer)
			pd->newer->older = pd->older;
		else
			os->newest = pd->older;
		os->qbytes -= pd->len;
		if (pd->links != &pd->link0)
			free(pd->links);
		pending_recycle(os, pd);
	}
	/* flush and submit (queue room) wait on qcond.  Work this made
	 * ready is the caller's: it takes a batch next (and wakes another
	 * thread for what it leaves); idle threads wake to stop at the end. */
	pthread_cond_broadcast(&os->qcond);
	if (os->stop && os->oldest == NULL)
		wake_all(os);
}

/* ---- The seal ----------------------------------------------------------------*/

/* Seal p with whatever else is staged: the first thread here seals every
 * overlay waiting, up to SEAL_MAX or batch_limit bytes of record, and the
 * others wait for it.  p's result. */
static int
seal(struct os *os, struct os_prep *p)
{
	struct os_prep *ps[SEAL_MAX];
	int rcs[SEAL_MAX], rc;

	pthread_mutex_lock(&os->slock);
	p->sealed = 0;
	p->snext = NULL;
	if (os->seal_tail)
		os->seal_tail->snext = p;
	else
		os->seal_head = p;
	os->seal_tail = p;
	while (!p->sealed) {
		size_t n = 0, bytes = 0;

		if (os->sealing) {
			pthread_cond_wait(&os->scond, &os->slock);
			continue;
		}
		os->sealing = 1;
		while (os->seal_head != NULL && n < SEAL_MAX &&
		       (n == 0 || bytes + os->seal_head->rec_bytes <= os->batch_limit)) {
			ps[n] = os->seal_head;
			bytes += ps[n++]->rec_bytes;
			os->seal_head = os->seal_head->snext;
		}
		if (os->seal_head == NULL)
			os->seal_tail = NULL;
		pthread_mutex_unlock(&os->slock);
		if (os->failed) {
			for (size_t i = 0; i < n; i++)
				rcs[i] = -EIO;
		} else {
			os->hooks->seal(os, ps, n, rcs);
		}
		pthread_mutex_lock(&os->slock);
		for (size_t i = 0; i < n; i++) {
			ps[i]->seal_rc = rcs[i];
			ps[i]->sealed = 1;
		}
		os->sealing = 0;
		pthread_cond_broadcast(&os->scond);
	}
	rc = p->seal_rc;
	pthread_mutex_unlock(&os->slock);
	return rc;
}

int
os_exclusive(struct os *os, int (*fn)(struct os *os, void *arg), void *arg)
{
	int rc;

	pthread_mutex_lock(&os->slock);
	while (os->sealing)
		pthread_cond_wait(&os->scond, &os->slock);
	os->sealing = 1;
	pthread_mutex_unlock(&os->slock);
	rc = fn(os, arg);
	pthread_mutex_lock(&os->slock);
	os->sealing = 0;
	pthread_cond_broadcast(&os->scond);
	pthread_mutex_unlock(&os->slock);
	return rc;
}

int
os_seal_super(struct os *os, struct os_prep *const *ps, size_t n,
	      struct os_super *sb)
{
	uint64_t next = __atomic_load_n(&os->next_id, __ATOMIC_RELAXED);

	*sb = os->sb;
	for (size_t i = 0; i < n; i++) {
		sb->objects += (uint64_t)ps[i]->dobjects;
		sb->bytes += (uint64_t)ps[i]->dbytes;
	}
	/* every id handed out so far, committed or not, stays below it: an
	 * id is never handed out twice, even across a crash */
	if (next > sb->next_objid)
		sb->next_objid = next;
	return memcmp(sb, &os->sb, sizeof(*sb)) != 0;
}

/* ---- Committing a batch ----------------------------------------------------*/

/* Prepare, stage and seal a batch: the transactions of a batch are
 * prepared one after the other into one overlay (each sees the ones
 * before it).  A transaction that fails leaves part of itself in the
 * overlay, so the overlay is rebuilt from the batch without it; failures
 * are rare, and a batch is small. */
static void
commit_batch(struct os_worker *w, struct os_pending **batch, int *rcs, size_t n)
{
	struct os *os = w->os;
	uint64_t now = os->host->now_ns(os->host->ctx);
	struct os_prep p;
	size_t ok;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		rcs[i] = os->failed ? -EIO : 1; /* 1: not decided yet */
	for (;;) {
		size_t i;

		os_prep_init(&p, os, now, w->cctx, w->dctx);
		ok = 0;
		for (i = 0; i < n; i++) {
			if (rcs[i] < 0)
				continue;
			rc = os_prep_txn(&p, batch[i]);
			if (rc < 0)
				break;
			rcs[i] = 0;
			ok++;
		}
		if (i == n)
			break;
		rcs[i] = rc;
		os_prep_release(&p);
	}
	/* Before anything is written, the overlay's worst case must fit, so
	 * a full store fails a transaction with ENOSPC instead of
	 * half-applying it. */
	if (ok == 0) {
		rc = 0;
	} else if (!os_room_for(os, &p)) {
		rc = -ENOSPC;
	} else {
		rc = os->hooks->stage(os, &p);
		if (rc == 0)
			rc = seal(os, &p);
		os->hooks->unstage(os, &p, rc == 0);
	}
	os_prep_release(&p);
	if (rc == -EFBIG && ok > 1) {
		/* the batch outgrew what the backend commits at once (a
		 * journal record): one at a time */
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == 0)
				commit_batch(w, &batch[i], &rcs[i], 1);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			rcs[i] = rc;
}

static void *
commit_main(void *arg)
{
	struct os_worker *w = arg;
	struct os *os = w->os;
	struct os_pending *batch[BATCH_MAX];
	int rcs[BATCH_MAX];

	pthread_mutex_lock(&os->qlock);
	for (;;) {
		size_t n = take_batch(os, w, batch);

		if (n == 0) {
			/* stop once everything submitted has committed */
			if (os->stop && os->oldest == NULL)
				break;
			wait_idle(os, w);
			continue;
		}
		/* what is left ready is another thread's to take */
		if (os->ready_head != NULL)
			wake_one(os);
		pthread_mutex_unlock(&os->qlock);

		commit_batch(w, batch, rcs, n);
		/* in submission order; the collections are still ours, so
		 * nothing later of them runs before these return */
		for (size_t i = 0; i < n; i++)
			batch[i]->cb(batch[i]->arg, rcs[i]);

		pthread_mutex_lock(&os->qlock);
		batch_done(os, w, batch, n);
	}
	pthread_mutex_unlock(&os->qlock);
	return NULL;
}

/* A WRITE whose data the caller holds until the commit callback
 * (TSR_TXN_F_DATA_HELD) and whose object blocks already fall on memory
 * blocks is not copied: the overlay borrows its whole chunks in place, as
 * it does a copy's, and they go to disk straight from the caller's
 * buffer.  Held data laid out otherwise is copied like any other. */
static int
data_borrowable(const struct tsr_txn_op *op)
{
	return (op->flags & TSR_TXN_F_DATA_HELD) &&
	       (uintptr_t)op->data % OS_BLOCK == op->off % OS_BLOCK;
}

/* Bytes the copy of a transaction takes: the header, the ops, the names,
 * keys and values, then each WRITE's data placed so that its object-block
 * boundaries fall on memory-block boundaries (see pending_copy). */
static size_t
pending_size(const struct tsr_txn *txn)
{
	size_t n = sizeof(struct os_pending) + txn->nops * sizeof(struct tsr_txn_op);

	for (uint32_t i = 0; i < txn->nops; i++) {
		const struct tsr_txn_op *op = &txn->ops[i];
		n += op->oid_len + op->key_len + op->val_len + op->oid2_len;
	}
	for (uint32_t i = 0; i < txn->nops; i++)
		if (txn->ops[i].type == TSR_TXN_WRITE && !data_borrowable(&txn->ops[i]))
			n += 2 * OS_BLOCK + txn->ops[i].len;
	return n;
}

static const void *
copy_field(uint8_t **at, const void *src, size_t n)
{
	uint8_t *dst = *at;

	if (n == 0)
		return src != NULL ? dst : NULL; /* never the caller's pointer */
	memcpy(dst, src, n);
	*at += n;
	return dst;
}

/* A deep copy of a validated transaction.  A WRITE's data lands at an
 * address congruent to its object offset modulo the block size, so every
 * whole chunk of it is block-aligned in memory: the overlay borrows such
 * chunks instead of copying them again, and they go to disk with O_DIRECT
 * straight from here. */
static struct os_pending *
pending_copy(struct os *os, const struct tsr_txn *txn)
{
	size_t size = pending_size(txn), best = SIZE_MAX;
	struct os_pending *pd = NULL;
	struct tsr_txn_op *ops;
	uint8_t *at;

	/* the smallest spare that fits */
	pthread_mutex_lock(&os->qlock);
	for (size_t i = 0; i < os->nspare; i++)
		if (os->spare[i]->cap >= size &&
		    (best == SIZE_MAX || os->spare[i]->cap < os->spare[best]->cap))
			best = i;
	if (best != SIZE_MAX) {
		pd = os->spare[best];
		os->spare[best] = os->spare[--os->nspare];
		os->spare_bytes -= pd->cap;
	}
	pthread_mutex_unlock(&os->qlock);
	if (pd == NULL) {
		if (posix_memalign((void **)&pd, OS_BLOCK, size) != 0)
			return NULL;
		pd->cap = size;
	}
	size_t cap = pd->cap;
	memset(pd, 0, sizeof(*pd));
	pd->cap = cap;
	pd->len = size;
	ops = (struct tsr_txn_op *)(pd + 1);
	if (txn->nops)
		memcpy(ops, txn->ops, txn->nops * sizeof(*ops));
	pd->txn.nops = txn->nops;
	pd->txn.ops = ops;
	at = (uint8_t *)(ops + txn->nops);
	for (uint32_t i = 0; i < txn->nops; i++) {
		ops[i].oid = copy_field(&at, ops[i].oid, ops[i].oid_len);
		ops[i].key = copy_field(&at, ops[i].key, ops[i].key_len);
		ops[i].val = copy_field(&at, ops[i].val, ops[i].val_len);
		ops[i].oid2 = copy_field(&at, ops[i].oid2, ops[i].oid2_len);
	}
	for (uint32_t i = 0; i < txn->nops; i++) {
		uintptr_t a;

		if (ops[i].type != TSR_TXN_WRITE || data_borrowable(&ops[i]))
			continue;
		a = ((uintptr_t)at + OS_BLOCK - 1) & ~(uintptr_t)(OS_BLOCK - 1);
		at = (uint8_t *)a + ops[i].off % OS_BLOCK;
		ops[i].data = copy_field(&at, ops[i].data, ops[i].len);
	}
	return pd;
}

/* The collections txn names, each once, into *out (cids[0] when there is
 * one, which is the rule): how many, or -ENOMEM.  A transaction without
 * operations names none, and is put with the collection no id names
 * (pool UINT64_MAX, shard INT32_MIN): ordered with others like it. */
static int
txn_colls(const struct tsr_txn *txn, struct tsr_coll_id *one,
	  struct tsr_coll_id **out)
{
	static const struct tsr_coll_id none = { UINT64_MAX, UINT32_MAX, INT32_MIN };
	struct tsr_coll_id *v;
	size_t n = 0;
	uint32_t i;

	*out = one;
	*one = txn->nops ? txn->ops[0].cid : none;
	for (i = 1; i < txn->nops && cid_eq(&txn->ops[i].cid, one); i++)
		;
	if (i >= txn->nops)
		return 1;
	if ((v = malloc(txn->nops * sizeof(*v))) == NULL)
		return -ENOMEM;
	for (i = 0; i < txn->nops; i++)
		v[i] = txn->ops[i].cid;
	qsort(v, txn->nops, sizeof(*v), cid_cmp);
	for (i = 0; i < txn->nops; i++)
		if (n == 0 || !cid_eq(&v[n - 1], &v[i]))
			v[n++] = v[i];
	*out = v;
	return (int)n;
}

int
os_submit(void *inst, const struct tsr_txn *txn, tsr_commit_cb on_commit,
	  void *arg)
{
	struct os *os = inst;
	struct tsr_coll_id one, *cids;
	struct os_pending *pd;
	char err[256];
	int rc, n, ready = 0;

	if (!os->mounted)
		return -EINVAL;
	if (os->failed)
		return -EIO;
	if ((rc = tsr_txn_validate(txn, err, sizeof(err))) < 0)
		return rc;
	if ((n = txn_colls(txn, &one, &cids)) < 0)
		return n;
	if ((pd = pending_copy(os, txn)) == NULL) {
		if (cids != &one)
			free(cids);
		return -ENOMEM;
	}
	pd->cb = on_commit;
	pd->arg = arg;
	pd->nlinks = (uint32_t)n;
	pd->links = n == 1 ? &pd->link0 : calloc((size_t)n, sizeof(*pd->links));
	pthread_mutex_lock(&os->qlock);
	/* wait first: an empty queue of another's may go while we wait */
	while (os->qbytes > 0 && os->qbytes + pd->len > os->queue_max)
		pthread_cond_wait(&os->qcond, &os->qlock);
	for (int i = 0; pd->links != NULL && i < n; i++) {
		pd->links[i].pd = pd;
		if ((pd->links[i].seq = seq_get(os, &cids[i])) == NULL)
			rc = -ENOMEM;
	}
	if (pd->links == NULL || rc < 0) {
		/* queues made for it stay empty: free them again */
		for (int i = 0; pd->links != NULL && i < n; i++) {
			struct os_seq *s = pd->links[i].seq;
			if (s != NULL && s->head == NULL && s->owner == NULL)
				seq_free(os, s);
		}
		if (pd->links != &pd->link0)
			free(pd->links);
		pending_recycle(os, pd);
		pthread_mutex_unlock(&os->qlock);
		if (cids != &one)
			free(cids);
		return -ENOMEM;
	}
	pd->no = ++os->submitted;
	pd->newer = NULL;
	pd->older = os->newest;
	if (os->newest)
		os->newest->newer = pd;
	else
		os->oldest = pd;
	os->newest = pd;
	for (int i = 0; i < n; i++) {
		struct os_link *l = &pd->links[i];
		struct os_seq *s = l->seq;

		l->next = NULL;
		if (s->tail)
			s->tail->next = l;
		else
			s->head = l;
		s->tail = l;
		if (s->owner == NULL && !s->on_ready) {
			ready_add(os, s);
			ready = 1;
		}
	}
	os->qbytes += pd->len;
	/* a thread holding the collection takes it after its batch, and
	 * one already woken for the collection will: wake one only for a
	 * collection that just became ready (futile wake-ups of idle
	 * threads cost a busy collection a third of its rate) */
	if (ready)
		wake_one(os);
	pthread_mutex_unlock(&os->qlock);
	if (cids != &one)
		free(cids);
	return 0;
}

int
os_flush(void *inst)
{
	struct os *os = inst;
	uint64_t upto;

	if (!os->mounted)
		return -EINVAL;
	/* everything submitted so far: collections commit independently,
	 * so wait until the oldest not committed is younger than that */
	pthread_mutex_lock(&os->qlock);
	upto = os->submitted;
	while (os->oldest != NULL && os->oldest->no <= upto)
		pthread_cond_wait(&os->qcond, &os->qlock);
	pthread_mutex_unlock(&os->qlock);
	return 0;
}

/* ---- Starting and stopping the commit threads ------------------------------*/

static void
workers_free(struct os *os, struct os_worker *ws)
{
	for (unsigned i = 0; ws != NULL && i < os->nthreads; i++) {
		ZSTD_freeCCtx(ws[i].cctx);
		ZSTD_freeDCtx(ws[i].dctx);
		pthread_cond_destroy(&ws[i].cv);
	}
	free(ws);
}

int
os_start(struct os *os, char *err, size_t errlen)
{
	struct os_worker *ws;
	int rc;

	os->failed = 0;
	os->stop = 0;
	os->ready_head = os->ready_tail = NULL;
	os->oldest = os->newest = NULL;
	os->seal_head = os->seal_tail = NULL;
	os->sealing = 0;
	os->idle = NULL;
	os->qbytes = 0;
	os->submitted = 0;
	os->next_id = os->sb.next_objid;
	os->nstarted = 0;
	os->nbuckets = NBUCKETS;
	os->seqs = calloc(NBUCKETS, sizeof(*os->seqs));
	os->thr = calloc(os->nthreads, sizeof(*os->thr));
	ws = calloc(os->nthreads, sizeof(*ws));
	for (unsigned i = 0; ws != NULL && i < os->nthreads; i++)
		pthread_cond_init(&ws[i].cv, NULL);
	for (unsigned i = 0; ws != NULL && i < os->nthreads; i++) {
		ws[i].os = os;
		ws[i].cctx = ZSTD_createCCtx();
		ws[i].dctx = ZSTD_createDCtx();
		if (ws[i].cctx == NULL || ws[i].dctx == NULL) {
			workers_free(os, ws);
			ws = NULL;
		}
	}
	if (os->seqs == NULL || os->thr == NULL || ws == NULL) {
		workers_free(os, ws);
		free(os->seqs);
		free(os->thr);
		os->seqs = NULL;
		os->thr = NULL;
		return errf(err, errlen, -ENOMEM, "%s: out of memory", os->path);
	}
	os->workers = ws;
	for (unsigned i = 0; i < os->nthreads; i++) {
		if ((rc = pthread_create(&os->thr[i], NULL, commit_main, &ws[i])) != 0) {
			errf(err, errlen, -rc, "%s: commit thread: %s", os->path,
			     strerror(rc));
			os->mounted = 1; /* so that os_stop drains and joins */
			os_stop(os);
			return -rc;
		}
		os->nstarted++;
	}
	os->mounted = 1;
	return 0;
}

void
os_stop(struct os *os)
{
	pthread_mutex_lock(&os->qlock);
	os->stop = 1;
	wake_all(os);
	pthread_mutex_unlock(&os->qlock);
	for (unsigned i = 0; i < os->nstarted; i++)
		pthread_join(os->thr[i], NULL);
	os->nstarted = 0;
	os->mounted = 0;
	while (os->nspare > 0)
		free(os->spare[--os->nspare]);
	os->spare_bytes = 0;
	workers_free(os, os->workers);
	os->workers = NULL;
	free(os->thr);
	os->thr = NULL;
	/* every queue went with its last transaction */
	free(os->seqs);
	os->seqs = NULL;
}
