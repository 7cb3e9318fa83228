/* loop.c — the epoll event loop. */
#include "event/loop.h"
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct fd_slot {
	tsr_fd_cb cb;
	void *arg;
	uint32_t gen;     /* bumped on every add/del: stale events are dropped */
	bool used;
};

struct timer {
	uint64_t deadline; /* monotonic ns */
	void (*cb)(void *arg);
	void *arg;
	uint32_t slot;     /* index in tslots */
};

/* A timer id is (gen << 32 | slot + 1): cancel finds the slot directly, the
 * slot knows the timer's heap index (kept current on every heap move), and
 * gen tells a live timer from an earlier one that used the same slot. */
struct tslot {
	uint32_t gen;  /* bumped each time the slot is taken */
	uint32_t pos;  /* heap index while live, else next free slot + 1 */
	bool live;
};

struct post {
	struct post *next;
	void (*fn)(void *arg);
	void *arg;
};

struct tsr_loop {
	int epfd;
	int wakefd;
	atomic_bool stop;
	struct fd_slot *fds;
	size_t nfds;

	pthread_mutex_t tlock; /* timers may be added from any thread */
	struct timer *heap;
	size_t nheap, capheap;
	struct tslot *tslots;
	size_t ntslots;
	uint32_t free_slot; /* first free slot + 1, 0 if none */

	pthread_mutex_t plock; /* posts come from any thread */
	struct post *phead, **ptail;
};

/* The loop whose callbacks this thread runs (tsr_loop_current). */
static __thread struct tsr_loop *cur_loop;

/* ---- Timer heap (caller holds tlock) --------------------------------------*/

static void
heap_set(struct tsr_loop *l, size_t i, struct timer t)
{
	l->heap[i] = t;
	l->tslots[t.slot].pos = (uint32_t)i;
}

static void
heap_swap(struct tsr_loop *l, size_t a, size_t b)
{
	struct timer t = l->heap[a];
	heap_set(l, a, l->heap[b]);
	heap_set(l, b, t);
}

static void
heap_up(struct tsr_loop *l, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (l->heap[p].deadline <= l->heap[i].deadline)
			break;
		heap_swap(l, p, i);
		i = p;
	}
}

static void
heap_down(struct tsr_loop *l, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1, m = i;
		if (c < l->nheap && l->heap[c].deadline < l->heap[m].deadline)
			m = c;
		if (c + 1 < l->nheap && l->heap[c + 1].deadline < l->heap[m].deadline)
			m = c + 1;
		if (m == i)
			return;
		heap_swap(l, i, m);
		i = m;
	}
}

/* Removes heap[i] and frees its slot. */
static void
heap_remove(struct tsr_loop *l, size_t i)
{
	uint32_t slot = l->heap[i].slot;

	l->tslots[slot].live = false;
	l->tslots[slot].pos = l->free_slot;
	l->free_slot = slot + 1;
	--l->nheap;
	if (i < l->nheap) {
		heap_set(l, i, l->heap[l->nheap]);
		heap_down(l, i);
		heap_up(l, i);
	}
}

/* ---- Loop -------------------------------------------------------------------*/

int
tsr_loop_create(struct tsr_loop **out)
{
	struct tsr_loop *l = calloc(1, sizeof(*l));
	struct epoll_event ev = { .events = EPOLLIN };

	if (l == NULL)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->epfd < 0 || l->wakefd < 0) {
		int e = -errno;
		if (l->epfd >= 0)
			close(l->epfd);
		if (l->wakefd >= 0)
			close(l->wakefd);
		free(l);
		return e;
	}
	ev.data.u64 = UINT64_MAX; /* the wake-up fd */
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0) {
		int e = -errno;
		close(l->epfd);
		close(l->wakefd);
		free(l);
		return e;
	}
	pthread_mutex_init(&l->tlock, NULL);
	pthread_mutex_init(&l->plock, NULL);
	l->ptail = &l->phead;
	*out = l;
	return 0;
}

/* Runs the posts queued so far, in order.  Those they post run on the next
 * pass (so a self-re-posting callback cannot starve fds and timers), or, with
 * drain (destroy), before this returns. */
static void
run_posts(struct tsr_loop *l, bool drain)
{
	for (;;) {
		pthread_mutex_lock(&l->plock);
		struct post *p = l->phead;
		l->phead = NULL;
		l->ptail = &l->phead;
		pthread_mutex_unlock(&l->plock);
		if (p == NULL)
			return;
		while (p != NULL) {
			struct post *next = p->next;
			p->fn(p->arg);
			free(p);
			p = next;
		}
		if (!drain)
			return;
	}
}

void
tsr_loop_destroy(struct tsr_loop *l)
{
	if (l == NULL)
		return;
	/* Pending posts run here, in order, so each post runs exactly once;
	 * posts they make run too.  The destroying thread is the loop's
	 * thread meanwhile (tsr_loop_current). */
	struct tsr_loop *prev = cur_loop;
	cur_loop = l;
	run_posts(l, true);
	cur_loop = prev;
	close(l->epfd);
	close(l->wakefd);
	pthread_mutex_destroy(&l->tlock);
	pthread_mutex_destroy(&l->plock);
	free(l->fds);
	free(l->heap);
	free(l->tslots);
	free(l);
}

static uint32_t
to_epoll(uint32_t ev)
{
	return (ev & TSR_EV_READ ? EPOLLIN | EPOLLRDHUP : 0) |
	       (ev & TSR_EV_WRITE ? EPOLLOUT : 0);
}

static int
ctl(struct tsr_loop *l, int op, int fd, uint32_t events)
{
	struct epoll_event ev = {
		.events = to_epoll(events),
		.data.u64 = (uint64_t)(uint32_t)fd | ((uint64_t)l->fds[fd].gen << 32),
	};

	return epoll_ctl(l->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int
tsr_loop_fd_add(struct tsr_loop *l, int fd, uint32_t events, tsr_fd_cb cb,
		void *arg)
{
	int rc;

	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= l->nfds) {
		size_t n = (size_t)fd + 64;
		struct fd_slot *s = realloc(l->fds, n * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		memset(s + l->nfds, 0, (n - l->nfds) * sizeof(*s));
		l->fds = s;
		l->nfds = n;
	}
	if (l->fds[fd].used)
		return -EEXIST;
	l->fds[fd].gen++;
	rc = ctl(l, EPOLL_CTL_ADD, fd, events);
	if (rc < 0)
		return rc;
	l->fds[fd].cb = cb;
	l->fds[fd].arg = arg;
	l->fds[fd].used = true;
	return 0;
}

int
tsr_loop_fd_mod(struct tsr_loop *l, int fd, uint32_t events)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
		return -ENOENT;
	return ctl(l, EPOLL_CTL_MOD, fd, events);
}

int
tsr_loop_fd_del(struct tsr_loop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
		return -ENOENT;
	l->fds[fd].used = false;
	l->fds[fd].gen++;
	return epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
}

static void
wake(struct tsr_loop *l)
{
	uint64_t one = 1;
	ssize_t r = write(l->wakefd, &one, sizeof(one));
	(void)r; /* EAGAIN: the counter is already non-zero, the loop wakes */
}

int
tsr_loop_timer_add(struct tsr_loop *l, uint64_t delay_ns, void (*cb)(void *),
		   void *arg, uint64_t *id)
{
	pthread_mutex_lock(&l->tlock);
	if (l->nheap == l->capheap) {
		size_t n = l->capheap ? l->capheap * 2 : 16;
		struct timer *h = realloc(l->heap, n * sizeof(*h));
		if (h == NULL) {
			pthread_mutex_unlock(&l->tlock);
			return -ENOMEM;
		}
		l->heap = h;
		l->capheap = n;
	}
	if (l->free_slot == 0) {
		size_t n = l->ntslots ? l->ntslots * 2 : 16;
		struct tslot *s;
		if (n > UINT32_MAX - 1 ||
		    (s = realloc(l->tslots, n * sizeof(*s))) == NULL) {
			pthread_mutex_unlock(&l->tlock);
			return -ENOMEM;
		}
		/* chain the new slots into the free list, lowest first */
		for (size_t i = l->ntslots; i < n; i++) {
			s[i].gen = 0;
			s[i].live = false;
			s[i].pos = i + 1 < n ? (uint32_t)(i + 2) : 0;
		}
		l->free_slot = (uint32_t)l->ntslots + 1;
		l->tslots = s;
		l->ntslots = n;
	}
	uint32_t slot = l->free_slot - 1;
	struct tslot *ts = &l->tslots[slot];
	l->free_slot = ts->pos;
	if (++ts->gen == 0)
		ts->gen = 1;
	ts->live = true;
	struct timer t = {
		.deadline = tsr_mono_ns() + delay_ns,
		.cb = cb,
		.arg = arg,
		.slot = slot,
	};
	if (id)
		*id = (uint64_t)ts->gen << 32 | ((uint64_t)slot + 1);
	heap_set(l, l->nheap, t);
	heap_up(l, l->nheap++);
	pthread_mutex_unlock(&l->tlock);
	wake(l);
	return 0;
}

int
tsr_loop_timer_cancel(struct tsr_loop *l, uint64_t id)
{
	int rc = -ENOENT;
	uint64_t low = id & UINT32_MAX;

	pthread_mutex_lock(&l->tlock);
	if (low != 0 && low <= l->ntslots) {
		struct tslot *ts = &l->tslots[low - 1];
		if (ts->live && ts->gen == (uint32_t)(id >> 32)) {
			heap_remove(l, ts->pos);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&l->tlock);
	return rc;
}

int
tsr_loop_post(struct tsr_loop *l, void (*fn)(void *arg), void *arg)
{
	struct post *p;

	if (fn == NULL)
		return -EINVAL;
	p = malloc(sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->next = NULL;
	p->fn = fn;
	p->arg = arg;
	pthread_mutex_lock(&l->plock);
	*l->ptail = p;
	l->ptail = &p->next;
	pthread_mutex_unlock(&l->plock);
	wake(l);
	return 0;
}

void
tsr_loop_stop(struct tsr_loop *l)
{
	atomic_store(&l->stop, true);
	wake(l);
}

/* Fire the timers due at entry, one at a time, re-checking the heap after
 * each callback, which may add or cancel timers.  `now` is read once: a
 * callback that re-arms itself with no delay runs again on the next pass,
 * after fds and signals have had their turn, instead of starving them.
 * Returns the epoll timeout in ms. */
static int
run_timers(struct tsr_loop *l)
{
	uint64_t now = tsr_mono_ns();

	for (;;) {
		pthread_mutex_lock(&l->tlock);
		if (l->nheap == 0) {
			pthread_mutex_unlock(&l->tlock);
			return -1;
		}
		if (l->heap[0].deadline > now) {
			uint64_t t = tsr_mono_ns();
			uint64_t d = l->heap[0].deadline;
			uint64_t ms = d > t ? (d - t + 999999) / 1000000 : 0;
			pthread_mutex_unlock(&l->tlock);
			return ms > 60000 ? 60000 : (int)ms;
		}
		struct timer t = l->heap[0];
		heap_remove(l, 0);
		pthread_mutex_unlock(&l->tlock);
		t.cb(t.arg);
		if (atomic_load(&l->stop))
			return 0;
	}
}

int
tsr_loop_run(struct tsr_loop *l)
{
	struct epoll_event evs[64];
	struct tsr_loop *prev = cur_loop;
	int rc = 0;

	cur_loop = l;
	while (!atomic_load(&l->stop)) {
		run_posts(l, false);
		if (atomic_load(&l->stop))
			break;
		int timeout = run_timers(l);
		if (atomic_load(&l->stop))
			break;
		int n = epoll_wait(l->epfd, evs, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;
			if (d == UINT64_MAX) {
				uint64_t v;
				ssize_t r = read(l->wakefd, &v, sizeof(v));
				(void)r;
				continue;
			}
			int fd = (int)(uint32_t)d;
			uint32_t gen = (uint32_t)(d >> 32);
			if ((size_t)fd >= l->nfds || !l->fds[fd].used ||
			    l->fds[fd].gen != gen)
				continue; /* removed by an earlier callback */
			uint32_t e = evs[i].events, ev = 0;
			if (e & (EPOLLIN | EPOLLRDHUP))
				ev |= TSR_EV_READ;
			if (e & EPOLLOUT)
				ev |= TSR_EV_WRITE;
			if (e & (EPOLLERR | EPOLLHUP))
				ev |= TSR_EV_ERROR;
			l->fds[fd].cb(l, fd, ev, l->fds[fd].arg);
		}
	}
	cur_loop = prev;
	if (rc < 0)
		return rc;
	atomic_store(&l->stop, false);
	return 0;
}

struct tsr_loop *
tsr_loop_current(void)
{
	return cur_loop;
}

/* ---- A loop on a thread of its own ----------------------------------------*/

struct tsr_loop_thread {
	struct tsr_loop *loop;
	pthread_t thr;
};

static void *
loop_thread_main(void *arg)
{
	struct tsr_loop_thread *t = arg;
	int rc;

	pthread_setname_np(pthread_self(), "tsr-loop");
	rc = tsr_loop_run(t->loop);

	if (rc < 0)
		tsr_log(TSR_SUB_EVENT, TSR_LOG_ERROR, "event loop thread: %s",
			strerror(-rc));
	return NULL;
}

int
tsr_loop_thread_start(struct tsr_loop *loop, struct tsr_loop_thread **out)
{
	struct tsr_loop_thread *t = calloc(1, sizeof(*t));
	int rc;

	if (t == NULL)
		return -ENOMEM;
	t->loop = loop;
	if ((rc = pthread_create(&t->thr, NULL, loop_thread_main, t)) != 0) {
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

void
tsr_loop_thread_stop(struct tsr_loop_thread *t)
{
	if (t == NULL)
		return;
	tsr_loop_stop(t->loop);
	pthread_join(t->thr, NULL);
	free(t);
}
