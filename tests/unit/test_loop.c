/* test_loop.c — event loop timers, cross-thread wake/stop, fd events, removal. */
#include "event/loop.h"
#include "event/workq.h"
#include "util/util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MS (1000ull * 1000)

/* Every test that runs a loop arms this first: should the code under test
 * never stop, the loop still ends, and the test fails instead of hanging
 * (with CK_FORK=no there is no Check timeout to save it). */
#define SAFETY_NS (2000 * MS)

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

struct safety {
	struct tsr_loop *loop;
	bool fired;
};

static void
safety_cb(void *arg)
{
	struct safety *s = arg;

	s->fired = true;
	tsr_loop_stop(s->loop);
}

static void
stop_cb(void *arg)
{
	tsr_loop_stop(arg);
}

/* Run loop on this thread, bounded by the safety timer; fail if it fired. */
static void
run_bounded(struct tsr_loop *loop)
{
	struct safety s = { loop, false };
	uint64_t id;

	ck_assert_int_eq(tsr_loop_timer_add(loop, SAFETY_NS, safety_cb, &s, &id), 0);
	ck_assert_int_eq(tsr_loop_run(loop), 0);
	ck_assert_msg(!s.fired, "loop did not stop by itself within 2 s");
	tsr_loop_timer_cancel(loop, id);
}

/* ---- A loop on its own thread ------------------------------------------- */

struct runner {
	struct tsr_loop *loop;
	pthread_t th;
	atomic_int rc;
	atomic_bool done;
};

static void *
runner_main(void *arg)
{
	struct runner *r = arg;

	atomic_store(&r->rc, tsr_loop_run(r->loop));
	atomic_store(&r->done, true);
	return NULL;
}

static void
runner_start(struct runner *r, struct tsr_loop *loop)
{
	r->loop = loop;
	atomic_store(&r->rc, 1);
	atomic_store(&r->done, false);
	ck_assert_int_eq(pthread_create(&r->th, NULL, runner_main, r), 0);
}

/* Join within ms; false (thread left running) if it did not end. */
static bool
runner_join(struct runner *r, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(r->th, NULL, &ts) == 0;
}

/* Poll flag for up to ms. */
static bool
wait_flag(atomic_bool *flag, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		if (atomic_load(flag))
			return true;
		sleep_ms(1);
	}
	return atomic_load(flag);
}

/* ---- Timers ------------------------------------------------------------- */

struct order {
	struct tsr_loop *loop;
	int fired[64];
	uint64_t at[64];
	int n;
};

struct order_timer {
	struct order *o;
	int idx;
	bool stop;
};

static void
order_cb(void *arg)
{
	struct order_timer *t = arg;

	ck_assert_int_lt(t->o->n, 64);
	t->o->at[t->o->n] = tsr_mono_ns();
	t->o->fired[t->o->n++] = t->idx;
	if (t->stop)
		tsr_loop_stop(t->o->loop);
}

START_TEST(test_timer_order)
{
	/* added out of order; the last one stops the loop */
	static const unsigned delay_ms[] = { 80, 20, 50, 0, 60, 10, 120 };
	static const int want[] = { 3, 5, 1, 2, 4, 0, 6 };
	enum { N = 7 };
	struct tsr_loop *loop;
	struct order o = { 0 };
	struct order_timer t[N];
	uint64_t start;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	o.loop = loop;
	start = tsr_mono_ns();
	for (int i = 0; i < N; i++) {
		t[i] = (struct order_timer){ &o, i, i == N - 1 };
		ck_assert_int_eq(tsr_loop_timer_add(loop, delay_ms[i] * MS, order_cb,
						    &t[i], NULL), 0);
	}
	run_bounded(loop);
	ck_assert_int_eq(o.n, N);
	for (int i = 0; i < N; i++) {
		ck_assert_msg(o.fired[i] == want[i], "firing %d: timer %d, want %d",
			      i, o.fired[i], want[i]);
		/* never early */
		ck_assert_uint_ge(o.at[i] - start, delay_ms[o.fired[i]] * MS);
	}
	tsr_loop_destroy(loop);
}
END_TEST

/* Timer ids are distinct; cancel works once; unknown ids are -ENOENT. */
START_TEST(test_timer_cancel)
{
	struct tsr_loop *loop;
	struct order o = { 0 };
	struct order_timer a, b, c;
	uint64_t ia, ib, ic;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	o.loop = loop;
	a = (struct order_timer){ &o, 0, false };
	b = (struct order_timer){ &o, 1, false };
	c = (struct order_timer){ &o, 2, true };
	ck_assert_int_eq(tsr_loop_timer_add(loop, 10 * MS, order_cb, &a, &ia), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 20 * MS, order_cb, &b, &ib), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 30 * MS, order_cb, &c, &ic), 0);
	ck_assert_uint_ne(ia, ib);
	ck_assert_uint_ne(ib, ic);
	ck_assert_uint_ne(ia, ic);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, ib), 0);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, ib), -ENOENT);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, 0), -ENOENT);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, 999999), -ENOENT);
	run_bounded(loop);
	ck_assert_int_eq(o.n, 2);
	ck_assert_int_eq(o.fired[0], 0);
	ck_assert_int_eq(o.fired[1], 2);
	/* fired timers can no longer be cancelled */
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, ia), -ENOENT);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, ic), -ENOENT);
	tsr_loop_destroy(loop);
}
END_TEST

/* Two timers due in the same iteration, each cancelling the other: the
 * first to run must keep the second from running. */
struct rival {
	struct tsr_loop *loop;
	uint64_t other;
	int *fired;
	int cancel_rc;
};

static void
rival_cb(void *arg)
{
	struct rival *r = arg;

	(*r->fired)++;
	r->cancel_rc = tsr_loop_timer_cancel(r->loop, r->other);
}

START_TEST(test_cancel_due_timer_from_callback)
{
	struct tsr_loop *loop;
	struct rival r1, r2;
	uint64_t id1, id2;
	int fired = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	r1 = (struct rival){ loop, 0, &fired, 1 };
	r2 = (struct rival){ loop, 0, &fired, 1 };
	ck_assert_int_eq(tsr_loop_timer_add(loop, 0, rival_cb, &r1, &id1), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 0, rival_cb, &r2, &id2), 0);
	r1.other = id2;
	r2.other = id1;
	ck_assert_int_eq(tsr_loop_timer_add(loop, 30 * MS, stop_cb, loop, NULL), 0);
	sleep_ms(5); /* both are now due before the loop even starts */
	run_bounded(loop);
	/* exactly one ran (cancel_rc is still 1 for the other), and its
	 * cancel found the other still queued */
	bool ran1 = r1.cancel_rc != 1, ran2 = r2.cancel_rc != 1;
	ck_assert_int_eq(fired, 1);
	ck_assert(ran1 != ran2);
	ck_assert_int_eq(ran1 ? r1.cancel_rc : r2.cancel_rc, 0);
	tsr_loop_destroy(loop);
}
END_TEST

/* A callback may add timers, including one already due. */
struct chain {
	struct tsr_loop *loop;
	int left;
	int ran;
};

static void
chain_cb(void *arg)
{
	struct chain *c = arg;

	c->ran++;
	if (--c->left > 0)
		ck_assert_int_eq(tsr_loop_timer_add(c->loop, 0, chain_cb, c, NULL), 0);
	else
		tsr_loop_stop(c->loop);
}

START_TEST(test_timer_added_from_callback)
{
	struct tsr_loop *loop;
	struct chain c;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	c = (struct chain){ loop, 100, 0 };
	ck_assert_int_eq(tsr_loop_timer_add(loop, 0, chain_cb, &c, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(c.ran, 100);
	tsr_loop_destroy(loop);
}
END_TEST

/* Many timers with mixed delays, a third of them cancelled: the rest fire
 * once each, in deadline order (exercises the heap's sift up and down). */
struct many {
	uint64_t lo, hi; /* the loop's deadline for it lies in [lo, hi] */
	int fired;
	bool cancelled;
};

static struct many many[300];
static uint64_t max_lo;
static int many_fired;

static void
many_cb(void *arg)
{
	struct many *m = arg;

	ck_assert(!m->cancelled);
	/* everything fired so far was due no later than this one */
	ck_assert_uint_ge(m->hi, max_lo);
	if (m->lo > max_lo)
		max_lo = m->lo;
	m->fired++;
	many_fired++;
}

START_TEST(test_timer_heap)
{
	struct tsr_loop *loop;
	uint64_t ids[300], seed = 0x9E3779B97F4A7C15ull;
	int want = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	memset(many, 0, sizeof(many));
	max_lo = 0;
	many_fired = 0;
	for (int i = 0; i < 300; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint64_t delay = (seed % 40) * MS;
		many[i].lo = tsr_mono_ns() + delay;
		ck_assert_int_eq(tsr_loop_timer_add(loop, delay, many_cb, &many[i],
						    &ids[i]), 0);
		many[i].hi = tsr_mono_ns() + delay;
	}
	for (int i = 0; i < 300; i += 3) {
		many[i].cancelled = true;
		ck_assert_int_eq(tsr_loop_timer_cancel(loop, ids[i]), 0);
	}
	for (int i = 0; i < 300; i++)
		want += !many[i].cancelled;
	ck_assert_int_eq(tsr_loop_timer_add(loop, 60 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(many_fired, want);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(many[i].fired, many[i].cancelled ? 0 : 1);
	tsr_loop_destroy(loop);
}
END_TEST

/* Destroying a loop with timers and fds still registered frees all. */
START_TEST(test_destroy_with_pending)
{
	struct tsr_loop *loop;
	int sv[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(tsr_loop_timer_add(loop, (uint64_t)(i + 1) * 1000 * MS,
						    stop_cb, loop, NULL), 0);
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, NULL, NULL), 0);
	tsr_loop_destroy(loop);
	tsr_loop_destroy(NULL);
	/* destroy does not close registered fds */
	ck_assert_int_eq(fcntl(sv[0], F_GETFD), FD_CLOEXEC);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* ---- Cross-thread wake-ups ---------------------------------------------- */

struct wake {
	atomic_bool fired;
	_Atomic uint64_t at;
};

static void
wake_cb(void *arg)
{
	struct wake *w = arg;

	atomic_store(&w->at, tsr_mono_ns());
	atomic_store(&w->fired, true);
}

/* The loop sleeps with no timers at all (epoll_wait without a timeout);
 * a timer added from another thread must wake it. */
START_TEST(test_timer_add_wakes_loop)
{
	struct tsr_loop *loop;
	struct runner r;
	struct wake w;
	uint64_t added;

	atomic_store(&w.fired, false);
	atomic_store(&w.at, 0);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	runner_start(&r, loop);
	sleep_ms(50); /* let it fall asleep */
	ck_assert(!atomic_load(&r.done));
	added = tsr_mono_ns();
	ck_assert_int_eq(tsr_loop_timer_add(loop, 0, wake_cb, &w, NULL), 0);
	bool fired = wait_flag(&w.fired, 1000);
	tsr_loop_stop(loop);
	ck_assert_msg(runner_join(&r, 1000), "loop did not stop");
	ck_assert_msg(fired, "timer added from another thread never fired");
	uint64_t at = atomic_load(&w.at);
	int rc = atomic_load(&r.rc);
	ck_assert_uint_lt(at - added, 500 * MS);
	ck_assert_int_eq(rc, 0);
	tsr_loop_destroy(loop);
}
END_TEST

/* Also when the loop sleeps towards a far-off timer. */
START_TEST(test_earlier_timer_from_thread)
{
	struct tsr_loop *loop;
	struct runner r;
	struct wake w;
	uint64_t far;

	atomic_store(&w.fired, false);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 30000 * MS, stop_cb, loop, &far), 0);
	runner_start(&r, loop);
	sleep_ms(30);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 10 * MS, wake_cb, &w, NULL), 0);
	bool fired = wait_flag(&w.fired, 1000);
	tsr_loop_stop(loop);
	ck_assert_msg(runner_join(&r, 1000), "loop did not stop");
	ck_assert(fired);
	/* the far timer is still pending, so cancelling it succeeds */
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, far), 0);
	tsr_loop_destroy(loop);
}
END_TEST

START_TEST(test_stop_from_thread)
{
	struct tsr_loop *loop;
	struct runner r;
	struct wake w;
	uint64_t t0;

	atomic_store(&w.fired, false);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	/* asleep for 10 s unless woken */
	ck_assert_int_eq(tsr_loop_timer_add(loop, 10000 * MS, wake_cb, &w, NULL), 0);
	runner_start(&r, loop);
	sleep_ms(30);
	ck_assert(!atomic_load(&r.done));
	t0 = tsr_mono_ns();
	tsr_loop_stop(loop);
	ck_assert_msg(runner_join(&r, 1000), "loop still running 1 s after stop");
	ck_assert_uint_lt(tsr_mono_ns() - t0, 500 * MS);
	int rc = atomic_load(&r.rc);
	bool fired = atomic_load(&w.fired);
	ck_assert_int_eq(rc, 0);
	ck_assert(!fired);

	/* the loop can run again after a stop */
	ck_assert_int_eq(tsr_loop_timer_add(loop, 5 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	tsr_loop_destroy(loop);
}
END_TEST

/* ---- File descriptors --------------------------------------------------- */

/* May run on a runner thread, so it records rather than asserts. */
struct fdrec {
	struct tsr_loop *loop;
	bool wrong_loop;
	int calls;
	uint32_t events;
	char data[16];
	ssize_t nread;
	bool stop;
};

static void
fd_record_cb(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct fdrec *r = arg;

	r->wrong_loop |= loop != r->loop;
	r->calls++;
	r->events = events;
	if (events & TSR_EV_READ)
		r->nread = read(fd, r->data, sizeof(r->data) - 1);
	if (r->stop)
		tsr_loop_stop(loop);
}

START_TEST(test_fd_read)
{
	struct tsr_loop *loop;
	struct fdrec rec = { 0 };
	int sv[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	rec.loop = loop;
	rec.stop = true;
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, fd_record_cb,
					 &rec), 0);
	ck_assert_int_eq(write(sv[1], "ping", 4), 4);
	run_bounded(loop);
	ck_assert(!rec.wrong_loop);
	ck_assert_int_eq(rec.calls, 1);
	ck_assert_uint_eq(rec.events, TSR_EV_READ);
	ck_assert_int_eq(rec.nread, 4);
	rec.data[4] = '\0';
	ck_assert_str_eq(rec.data, "ping");

	/* a pipe, written from another thread while the loop sleeps */
	int p[2];
	struct runner r;
	struct fdrec prec = { 0 };

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	prec.loop = loop;
	prec.stop = true;
	ck_assert_int_eq(tsr_loop_fd_add(loop, p[0], TSR_EV_READ, fd_record_cb,
					 &prec), 0);
	ck_assert_int_eq(tsr_loop_fd_del(loop, sv[0]), 0);
	runner_start(&r, loop);
	sleep_ms(20);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	bool joined = runner_join(&r, 1000);
	if (!joined) {
		tsr_loop_stop(loop);
		runner_join(&r, 1000);
	}
	ck_assert_msg(joined, "pipe written from another thread never delivered");
	ck_assert(!prec.wrong_loop);
	ck_assert_int_eq(prec.calls, 1);
	ck_assert_uint_eq(prec.events, TSR_EV_READ);
	ck_assert_int_eq(prec.nread, 1);
	tsr_loop_destroy(loop);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A timer that re-arms itself with no delay must not starve fds: each
 * pass of the loop fires only the timers due when it began. */
struct rearm {
	struct tsr_loop *loop;
	int fired;
};

static void
rearm_cb(void *arg)
{
	struct rearm *r = arg;

	r->fired++;
	tsr_loop_timer_add(r->loop, 0, rearm_cb, r, NULL);
}

START_TEST(test_zero_delay_rearm_does_not_starve)
{
	struct tsr_loop *loop;
	struct fdrec rec = { 0 };
	struct rearm ra = { 0 };
	int sv[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	rec.loop = loop;
	rec.stop = true;
	ra.loop = loop;
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, fd_record_cb,
					 &rec), 0);
	ck_assert_int_eq(write(sv[1], "go", 2), 2);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 0, rearm_cb, &ra, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(rec.calls, 1);
	ck_assert_int_ge(ra.fired, 1);
	tsr_loop_destroy(loop);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_fd_write_and_mod)
{
	struct tsr_loop *loop;
	struct fdrec rec = { 0 };
	int sv[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	rec.loop = loop;
	rec.stop = true;
	/* writable at once, and nothing to read */
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_WRITE, fd_record_cb,
					 &rec), 0);
	run_bounded(loop);
	ck_assert_int_eq(rec.calls, 1);
	ck_assert_uint_eq(rec.events, TSR_EV_WRITE);

	/* switched to read: no event until the peer writes */
	memset(&rec, 0, sizeof(rec));
	rec.loop = loop;
	rec.stop = true;
	ck_assert_int_eq(tsr_loop_fd_mod(loop, sv[0], TSR_EV_READ), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 20 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(rec.calls, 0);
	ck_assert_int_eq(write(sv[1], "z", 1), 1);
	run_bounded(loop);
	ck_assert_int_eq(rec.calls, 1);
	ck_assert_uint_eq(rec.events, TSR_EV_READ);

	/* the peer hanging up is reported as readable (read returns 0) */
	memset(&rec, 0, sizeof(rec));
	rec.loop = loop;
	rec.stop = true;
	rec.nread = -2;
	close(sv[1]);
	run_bounded(loop);
	ck_assert_int_eq(rec.calls, 1);
	ck_assert(rec.events & TSR_EV_READ);
	ck_assert_int_eq(rec.nread, 0);
	tsr_loop_destroy(loop);
	close(sv[0]);
}
END_TEST

/* A callback that removes its own fd is never called again, although the
 * fd stays readable. */
struct selfdel {
	int calls;
	int del_rc;
};

static void
selfdel_cb(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct selfdel *s = arg;

	(void)events;
	s->calls++;
	s->del_rc = tsr_loop_fd_del(loop, fd);
}

START_TEST(test_fd_del_self)
{
	struct tsr_loop *loop;
	struct selfdel s = { 0, 1 };
	int sv[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(write(sv[1], "data", 4), 4);
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, selfdel_cb, &s), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 50 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(s.calls, 1);
	ck_assert_int_eq(s.del_rc, 0);
	ck_assert_int_eq(tsr_loop_fd_del(loop, sv[0]), -ENOENT);
	/* and it can be added back */
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, selfdel_cb, &s), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 20 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(s.calls, 2);
	tsr_loop_destroy(loop);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* Two fds ready in the same epoll batch.  Whichever callback runs first
 * removes the other fd — and re-adds that same fd number, for writing
 * only, with a new callback.  The batch's pending read event belongs to
 * the removed registration and must be dropped: neither callback sees it;
 * the new one runs on a later iteration, for writing. */
struct pair {
	struct tsr_loop *loop;
	int fd[2];
	int old_calls[2];
	int new_calls[2];
	uint32_t new_events;
	int del_rc, add_rc;
};

static int
pair_index(struct pair *p, int fd)
{
	ck_assert(fd == p->fd[0] || fd == p->fd[1]);
	return fd == p->fd[1];
}

static void
pair_new_cb(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct pair *p = arg;

	p->new_calls[pair_index(p, fd)]++;
	p->new_events |= events;
	tsr_loop_fd_del(loop, fd);
}

static void
pair_old_cb(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct pair *p = arg;
	int i = pair_index(p, fd);
	char buf[8];

	(void)events;
	p->old_calls[i]++;
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 1);
	tsr_loop_fd_del(loop, fd);
	if (p->old_calls[1 - i] == 0 && p->new_calls[1 - i] == 0 && p->del_rc == 1) {
		p->del_rc = tsr_loop_fd_del(loop, p->fd[1 - i]);
		p->add_rc = tsr_loop_fd_add(loop, p->fd[1 - i], TSR_EV_WRITE,
					    pair_new_cb, p);
	}
}

START_TEST(test_fd_del_other_pending)
{
	struct tsr_loop *loop;
	struct pair p = { 0 };
	int a[2], b[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
	p.loop = loop;
	p.fd[0] = a[0];
	p.fd[1] = b[0];
	p.del_rc = p.add_rc = 1;
	/* both readable before the loop's first epoll_wait: one batch */
	ck_assert_int_eq(write(a[1], "a", 1), 1);
	ck_assert_int_eq(write(b[1], "b", 1), 1);
	ck_assert_int_eq(tsr_loop_fd_add(loop, a[0], TSR_EV_READ, pair_old_cb, &p), 0);
	ck_assert_int_eq(tsr_loop_fd_add(loop, b[0], TSR_EV_READ, pair_old_cb, &p), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 50 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(p.del_rc, 0);
	ck_assert_int_eq(p.add_rc, 0);
	ck_assert_int_eq(p.old_calls[0] + p.old_calls[1], 1);
	ck_assert_int_eq(p.new_calls[0] + p.new_calls[1], 1);
	ck_assert_uint_eq(p.new_events, TSR_EV_WRITE);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(p.old_calls[i] + p.new_calls[i], 1);
	tsr_loop_destroy(loop);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}
END_TEST

/* Plain deletion of a pending peer, without re-adding: no callback at all. */
struct killer {
	int calls[2];
	int fd[2];
	int del_rc;
};

static void
killer_cb(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct killer *k = arg;
	int i = fd == k->fd[1];
	char buf[8];

	(void)events;
	k->calls[i]++;
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 1);
	if (k->del_rc == 1)
		k->del_rc = tsr_loop_fd_del(loop, k->fd[1 - i]);
}

START_TEST(test_fd_del_other_no_callback)
{
	struct tsr_loop *loop;
	struct killer k = { { 0, 0 }, { -1, -1 }, 1 };
	int a[2], b[2];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
	k.fd[0] = a[0];
	k.fd[1] = b[0];
	ck_assert_int_eq(write(a[1], "a", 1), 1);
	ck_assert_int_eq(write(b[1], "b", 1), 1);
	ck_assert_int_eq(tsr_loop_fd_add(loop, a[0], TSR_EV_READ, killer_cb, &k), 0);
	ck_assert_int_eq(tsr_loop_fd_add(loop, b[0], TSR_EV_READ, killer_cb, &k), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 50 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(k.del_rc, 0);
	ck_assert_int_eq(k.calls[0] + k.calls[1], 1);
	tsr_loop_destroy(loop);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}
END_TEST

START_TEST(test_fd_errors)
{
	struct tsr_loop *loop;
	struct fdrec rec = { 0 };
	int sv[2], closed;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	/* unknown fds, below and beyond anything registered */
	ck_assert_int_eq(tsr_loop_fd_mod(loop, sv[0], TSR_EV_READ), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_del(loop, sv[0]), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_mod(loop, -1, TSR_EV_READ), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_del(loop, -1), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_del(loop, 100000), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_add(loop, -1, TSR_EV_READ, fd_record_cb, &rec),
			 -EBADF);

	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_READ, fd_record_cb,
					 &rec), 0);
	ck_assert_int_eq(tsr_loop_fd_add(loop, sv[0], TSR_EV_WRITE, fd_record_cb,
					 &rec), -EEXIST);
	ck_assert_int_eq(tsr_loop_fd_mod(loop, sv[0], TSR_EV_READ | TSR_EV_WRITE), 0);
	ck_assert_int_eq(tsr_loop_fd_del(loop, sv[0]), 0);
	ck_assert_int_eq(tsr_loop_fd_mod(loop, sv[0], TSR_EV_READ), -ENOENT);
	ck_assert_int_eq(tsr_loop_fd_del(loop, sv[0]), -ENOENT);

	/* a closed descriptor: epoll's error, and nothing registered */
	closed = sv[1];
	close(closed);
	ck_assert_int_eq(tsr_loop_fd_add(loop, closed, TSR_EV_READ, fd_record_cb,
					 &rec), -EBADF);
	ck_assert_int_eq(tsr_loop_fd_del(loop, closed), -ENOENT);
	/* far beyond the table: grows it, then epoll refuses */
	ck_assert_int_eq(tsr_loop_fd_add(loop, 5000, TSR_EV_READ, fd_record_cb, &rec),
			 -EBADF);
	ck_assert_int_eq(tsr_loop_fd_mod(loop, 5000, TSR_EV_READ), -ENOENT);
	tsr_loop_destroy(loop);
	close(sv[0]);
}
END_TEST

/* ---- O(log n) cancel (issue 17) ----------------------------------------- */

/* 100,000 timers, every other one cancelled: the rest fire once each, in
 * deadline order.  With the old scanning cancel this took seconds.  Check
 * marks every passing ck_assert with a write, so the hot loops count
 * mismatches in `bad` and assert once. */
#define BIG 100000

static struct many big[BIG];
static uint64_t big_ids[BIG];
static int bad;

static void
big_cb(void *arg)
{
	struct many *m = arg;

	bad += m->cancelled || m->hi < max_lo;
	if (m->lo > max_lo)
		max_lo = m->lo;
	m->fired++;
	many_fired++;
}

START_TEST(test_cancel_many_timers)
{
	struct tsr_loop *loop;
	uint64_t seed = 0x2545F4914F6CDD1Dull;
	int want = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	memset(big, 0, sizeof(big));
	max_lo = 0;
	many_fired = 0;
	bad = 0;
	for (int i = 0; i < BIG; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint64_t delay = (seed % 50) * MS;
		big[i].lo = tsr_mono_ns() + delay;
		bad += tsr_loop_timer_add(loop, delay, big_cb, &big[i],
					  &big_ids[i]) != 0;
		big[i].hi = tsr_mono_ns() + delay;
		bad += big_ids[i] == 0;
	}
	ck_assert_int_eq(bad, 0);
	for (int i = 0; i < BIG; i += 2) {
		big[i].cancelled = true;
		bad += tsr_loop_timer_cancel(loop, big_ids[i]) != 0;
	}
	ck_assert_int_eq(bad, 0);
	/* a second cancel of the same id, and of ids never issued */
	for (int i = 0; i < BIG; i += 2)
		bad += tsr_loop_timer_cancel(loop, big_ids[i]) != -ENOENT;
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, 0), -ENOENT);
	ck_assert_int_eq(tsr_loop_timer_cancel(loop, UINT64_MAX), -ENOENT);
	for (int i = 0; i < BIG; i++)
		want += !big[i].cancelled;
	ck_assert_int_eq(tsr_loop_timer_add(loop, 60 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(many_fired, want);
	for (int i = 0; i < BIG; i++)
		bad += big[i].fired != (big[i].cancelled ? 0 : 1);
	ck_assert_int_eq(bad, 0);
	/* fired timers cannot be cancelled */
	for (int i = 1; i < BIG; i += 2)
		bad += tsr_loop_timer_cancel(loop, big_ids[i]) != -ENOENT;
	ck_assert_int_eq(bad, 0);
	tsr_loop_destroy(loop);
}
END_TEST

/* 10,000 random adds and cancels (of live, cancelled, fired and forged ids),
 * with loop passes in between, checked against a plain array model: cancel
 * returns 0 exactly for live timers, a cancelled timer never fires, every
 * live timer fires once, in deadline order.  Slots are reused, so this pins
 * the heap-index bookkeeping that makes cancel O(log n). */
#define MODEL_OPS 10000

enum mstate { M_LIVE, M_CANCELLED, M_FIRED };

struct mtimer {
	enum mstate st;
	uint64_t id, lo, hi;
};

static struct mtimer model[MODEL_OPS];
static int model_bad;

static void
model_cb(void *arg)
{
	struct mtimer *m = arg;

	if (m->st != M_LIVE || m->hi < max_lo)
		model_bad++;
	if (m->lo > max_lo)
		max_lo = m->lo;
	m->st = M_FIRED;
}

START_TEST(test_cancel_random_model)
{
	struct tsr_loop *loop;
	uint64_t seed = 0x9E3779B97F4A7C15ull;
	int n = 0, cancels = 0, live_cancels = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	memset(model, 0, sizeof(model));
	model_bad = 0;
	max_lo = 0;
	for (int op = 0; op < MODEL_OPS; op++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		unsigned r = (unsigned)(seed % 100);
		if (r < 50 || n == 0) {
			struct mtimer *m = &model[n++];
			uint64_t delay = ((seed >> 8) % 8) * 250000; /* < 2 ms */
			m->lo = tsr_mono_ns() + delay;
			model_bad += tsr_loop_timer_add(loop, delay, model_cb, m,
							&m->id) != 0;
			m->hi = tsr_mono_ns() + delay;
			m->st = M_LIVE;
			for (int j = 0; j < n - 1; j++)
				model_bad += model[j].id == m->id;
		} else if (r < 95) {
			struct mtimer *m = &model[(seed >> 8) % (uint64_t)n];
			int want = m->st == M_LIVE ? 0 : -ENOENT;
			model_bad += tsr_loop_timer_cancel(loop, m->id) != want;
			cancels++;
			live_cancels += want == 0;
			if (m->st == M_LIVE)
				m->st = M_CANCELLED;
		} else if (r < 97) {
			/* forged: an issued id's slot with a generation that slot
			 * has not reached (gens here stay far below 2^31) */
			uint64_t id = model[(seed >> 8) % (uint64_t)n].id;
			model_bad += tsr_loop_timer_cancel(loop,
							   id ^ 0xFFFFFFFF00000000ull) !=
				     -ENOENT;
		} else if (r == 97) {
			/* one loop pass: whatever is due fires */
			ck_assert_int_eq(tsr_loop_timer_add(loop, 1 * MS, stop_cb, loop,
							    NULL), 0);
			run_bounded(loop);
			max_lo = 0; /* the order check is per pass */
		}
	}
	ck_assert_int_eq(model_bad, 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 10 * MS, stop_cb, loop, NULL), 0);
	max_lo = 0;
	run_bounded(loop);
	ck_assert_int_eq(model_bad, 0);
	for (int j = 0; j < n; j++)
		model_bad += model[j].st == M_LIVE;
	ck_assert_int_eq(model_bad, 0);
	/* the model really exercised both paths */
	ck_assert_int_gt(live_cancels, 100);
	ck_assert_int_gt(cancels - live_cancels, 100);
	tsr_loop_destroy(loop);
}
END_TEST

/* ---- tsr_loop_post (issue 17) ------------------------------------------- */

#define POSTERS 4
#define POSTS_EACH 5000

struct post_rec {
	pthread_t loop_thread;
	atomic_int last[POSTERS]; /* last seq run, per poster */
	atomic_int ran;
	atomic_int bad;           /* wrong thread or out of order */
};

struct post_item {
	struct post_rec *rec;
	int poster, seq;
};

static struct post_item post_items[POSTERS][POSTS_EACH];

static void
post_cb(void *arg)
{
	struct post_item *it = arg;
	struct post_rec *rec = it->rec;

	if (!pthread_equal(pthread_self(), rec->loop_thread) ||
	    atomic_load(&rec->last[it->poster]) != it->seq - 1)
		atomic_fetch_add(&rec->bad, 1);
	atomic_store(&rec->last[it->poster], it->seq);
	atomic_fetch_add(&rec->ran, 1);
}

struct poster {
	struct tsr_loop *loop;
	int idx;
	atomic_int failed;
};

static void *
poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < POSTS_EACH; i++)
		if (tsr_loop_post(p->loop, post_cb, &post_items[p->idx][i]) != 0)
			atomic_fetch_add(&p->failed, 1);
	return NULL;
}

/* Several threads post at once: each post runs exactly once, on the loop
 * thread, in its poster's order. */
START_TEST(test_post_from_threads)
{
	struct tsr_loop *loop;
	struct runner r;
	struct post_rec rec;
	struct poster p[POSTERS];
	pthread_t th[POSTERS];

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	atomic_store(&rec.ran, 0);
	atomic_store(&rec.bad, 0);
	for (int t = 0; t < POSTERS; t++) {
		atomic_store(&rec.last[t], -1);
		for (int i = 0; i < POSTS_EACH; i++)
			post_items[t][i] = (struct post_item){ &rec, t, i };
	}
	runner_start(&r, loop);
	rec.loop_thread = r.th;
	sleep_ms(20); /* let it fall asleep: the posts must wake it */
	for (int t = 0; t < POSTERS; t++) {
		p[t].loop = loop;
		p[t].idx = t;
		atomic_store(&p[t].failed, 0);
		ck_assert_int_eq(pthread_create(&th[t], NULL, poster_main, &p[t]), 0);
	}
	for (int t = 0; t < POSTERS; t++)
		pthread_join(th[t], NULL);
	/* FIFO: the stop runs after every earlier post */
	ck_assert_int_eq(tsr_loop_post(loop, stop_cb, loop), 0);
	bool stopped = runner_join(&r, 5000);
	ck_assert_msg(stopped, "loop did not stop");
	ck_assert_int_eq(atomic_load(&r.rc), 0);
	for (int t = 0; t < POSTERS; t++) {
		ck_assert_int_eq(atomic_load(&p[t].failed), 0);
		ck_assert_int_eq(atomic_load(&rec.last[t]), POSTS_EACH - 1);
	}
	ck_assert_int_eq(atomic_load(&rec.ran), POSTERS * POSTS_EACH);
	ck_assert_int_eq(atomic_load(&rec.bad), 0);
	ck_assert_int_eq(tsr_loop_post(loop, NULL, NULL), -EINVAL);
	tsr_loop_destroy(loop);
}
END_TEST

/* Posts still pending at destroy are run by destroy, in order, together
 * with what they post; their heap-allocated args are freed (ASan checks). */
struct owned {
	int *log, *n;
	int v;
	struct tsr_loop *loop;
};

static void
owned_cb(void *arg)
{
	struct owned *o = arg;

	o->log[(*o->n)++] = o->v;
	if (o->v == 3) {
		/* a post made while destroy drains also runs */
		struct owned *more = malloc(sizeof(*more));
		ck_assert_ptr_nonnull(more);
		*more = *o;
		more->v = 100;
		ck_assert_int_eq(tsr_loop_post(o->loop, owned_cb, more), 0);
	}
	free(o);
}

START_TEST(test_post_pending_at_destroy)
{
	struct tsr_loop *loop;
	int log[16], n = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	for (int i = 0; i < 10; i++) {
		struct owned *o = malloc(sizeof(*o));
		ck_assert_ptr_nonnull(o);
		*o = (struct owned){ log, &n, i, loop };
		ck_assert_int_eq(tsr_loop_post(loop, owned_cb, o), 0);
	}
	tsr_loop_destroy(loop);
	ck_assert_int_eq(n, 11);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(log[i], i);
	ck_assert_int_eq(log[10], 100);
}
END_TEST

/* A post that re-posts itself runs once per pass: timers still fire. */
static atomic_int repost_n;

static void
repost_cb(void *arg)
{
	if (atomic_fetch_add(&repost_n, 1) < 1000000)
		tsr_loop_post(arg, repost_cb, arg);
}

START_TEST(test_post_repost_does_not_starve)
{
	struct tsr_loop *loop;

	atomic_store(&repost_n, 0);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(tsr_loop_post(loop, repost_cb, loop), 0);
	ck_assert_int_eq(tsr_loop_timer_add(loop, 5 * MS, stop_cb, loop, NULL), 0);
	run_bounded(loop);
	ck_assert_int_lt(atomic_load(&repost_n), 1000000);
	/* destroy drains the one still pending; it re-posts until the cap */
	atomic_store(&repost_n, 1000000);
	tsr_loop_destroy(loop);
	ck_assert_int_eq(atomic_load(&repost_n), 1000001);
}
END_TEST

/* tsr_loop_current names the loop whose callback runs: in a post on the
 * loop's own thread (tsr_loop_thread_start), in a post run by destroy, and
 * nowhere else; a loop thread runs posts until stopped. */
struct current_seen {
	pthread_mutex_t mu;
	struct tsr_loop *seen;
	int runs;
};

static void
current_cb(void *arg)
{
	struct current_seen *c = arg;

	pthread_mutex_lock(&c->mu);
	c->seen = tsr_loop_current();
	c->runs++;
	pthread_mutex_unlock(&c->mu);
}

START_TEST(test_current_loop_and_loop_thread)
{
	struct current_seen c = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };
	struct tsr_loop *loop;
	struct tsr_loop_thread *t;
	int runs = 0;

	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_ptr_null(tsr_loop_current());
	ck_assert_int_eq(tsr_loop_thread_start(loop, &t), 0);
	ck_assert_int_eq(tsr_loop_post(loop, current_cb, &c), 0);
	for (int i = 0; i < 1000 && runs == 0; i++) {
		struct timespec ts = { 0, MS };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&c.mu);
		runs = c.runs;
		pthread_mutex_unlock(&c.mu);
	}
	ck_assert_int_eq(runs, 1);
	ck_assert_ptr_eq(c.seen, loop);
	ck_assert_ptr_null(tsr_loop_current()); /* not this thread's */
	tsr_loop_thread_stop(t);
	c.seen = NULL;
	ck_assert_int_eq(tsr_loop_post(loop, current_cb, &c), 0);
	tsr_loop_destroy(loop);   /* runs it, on this thread, as the loop's */
	ck_assert_int_eq(c.runs, 2);
	ck_assert_ptr_eq(c.seen, loop);
	ck_assert_ptr_null(tsr_loop_current());
}
END_TEST

/* ---- The work queue ------------------------------------------------------------*/

struct wq_ctx {
	pthread_mutex_t mu;
	int seq[2][2000];            /* what each poster's items saw, in order */
	int n[2];
	pthread_t ran_on;
	int on_one_thread;
	int follow_ups;
	struct tsr_workq *q;
};

struct wq_item {
	struct wq_ctx *c;
	int poster, k;
};

static void
wq_run(void *arg)
{
	struct wq_item *it = arg;
	struct wq_ctx *c = it->c;

	/* no lock needed against other items: one thread runs them */
	if (c->n[0] + c->n[1] == 0)
		c->ran_on = pthread_self();
	else if (!pthread_equal(c->ran_on, pthread_self()))
		c->on_one_thread = 0;
	c->seq[it->poster][c->n[it->poster]++] = it->k;
	free(it);
}

struct wq_poster {
	struct wq_ctx *c;
	int poster;
};

static void *
wq_post_many(void *arg)
{
	struct wq_poster *p = arg;

	for (int k = 0; k < 2000; k++) {
		struct wq_item *it = malloc(sizeof(*it));
		*it = (struct wq_item){ p->c, p->poster, k };
		ck_assert_int_eq(tsr_workq_post(p->c->q, wq_run, it), 0);
	}
	return NULL;
}

/* Items from two posters run on one thread, each poster's in the order
 * it posted them; destroy runs what is still queued. */
START_TEST(test_workq_order)
{
	static struct wq_ctx c;
	struct wq_poster p[2] = { { &c, 0 }, { &c, 1 } };
	pthread_t t[2];

	memset(&c, 0, sizeof(c));
	c.on_one_thread = 1;
	ck_assert_int_eq(tsr_workq_create("tsr-test-wq", &c.q), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, wq_post_many, &p[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	tsr_workq_destroy(c.q);
	ck_assert(c.on_one_thread);
	ck_assert(!pthread_equal(c.ran_on, pthread_self()));
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(c.n[i], 2000);
		for (int k = 0; k < 2000; k++)
			ck_assert_int_eq(c.seq[i][k], k);
	}
}
END_TEST

static void
wq_follow(void *arg)
{
	struct wq_ctx *c = arg;

	if (++c->follow_ups < 100)
		ck_assert_int_eq(tsr_workq_post(c->q, wq_follow, c), 0);
}

static void
wq_noop(void *arg)
{
	(void)arg;
}

static void
wq_post_until_refused(void *arg)
{
	struct wq_ctx *c = arg;
	int rc = 0;

	/* posts go in until destroy begins (the test calls it meanwhile);
	 * then they are refused */
	for (int t = 0; t < 5000 && rc == 0; t++) {
		struct timespec ts = { 0, 1000000 };
		if ((rc = tsr_workq_post(c->q, wq_noop, NULL)) == 0)
			nanosleep(&ts, NULL);
	}
	c->follow_ups = rc;
}

static void
wq_count(void *arg)
{
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_RELEASE);
}

/* Each item is posted to a worker that has gone to sleep (or is going):
 * it runs within a second every time, so no wake-up is lost; and
 * pending counts it until it has run. */
START_TEST(test_workq_wakes_sleeping_worker)
{
	static struct tsr_workq *q;
	static int ran;

	ran = 0;
	ck_assert_int_eq(tsr_workq_create(NULL, &q), 0);
	for (int i = 1; i <= 300; i++) {
		int t = 0;
		struct timespec ts = { 0, (i % 3) * 100000 };

		nanosleep(&ts, NULL); /* 0, 0.1 or 0.2 ms: asleep or dozing off */
		ck_assert_int_eq(tsr_workq_post(q, wq_count, &ran), 0);
		for (; t < 20000 && __atomic_load_n(&ran, __ATOMIC_ACQUIRE) < i; t++) {
			struct timespec w = { 0, 50000 };
			nanosleep(&w, NULL);
		}
		ck_assert_msg(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == i,
			      "item %d did not run within a second", i);
	}
	for (int t = 0; t < 1000 && tsr_workq_pending(q) > 0; t++) {
		struct timespec w = { 0, 1000000 };
		nanosleep(&w, NULL);
	}
	ck_assert_uint_eq(tsr_workq_pending(q), 0);
	tsr_workq_destroy(q);
}
END_TEST

/* An item may post to its own queue (it runs after); once destroy has
 * begun, posting is refused. */
START_TEST(test_workq_follow_ups_and_shutdown)
{
	static struct wq_ctx c;

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(tsr_workq_create(NULL, &c.q), 0);
	ck_assert_int_eq(tsr_workq_post(c.q, wq_follow, &c), 0);
	for (int t = 0; t < 500 && tsr_workq_pending(c.q) > 0; t++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(c.follow_ups, 100);
	ck_assert_uint_eq(tsr_workq_pending(c.q), 0);
	ck_assert_int_eq(tsr_workq_post(c.q, wq_post_until_refused, &c), 0);
	tsr_workq_destroy(c.q);
	ck_assert_int_eq(c.follow_ups, -ESHUTDOWN);
}
END_TEST

/* Running in place: enter says yes only on an idle queue, and while one
 * runs in place the worker starts nothing (what was posted meanwhile runs
 * after the leave). */
static void
wq_slow(void *arg)
{
	struct timespec ts = { 0, 50000000 };

	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
	nanosleep(&ts, NULL);
	__atomic_store_n((int *)arg, 2, __ATOMIC_RELEASE);
}

static int
wait_int(const int *p, int want)
{
	for (int t = 0; t < 1000 && __atomic_load_n(p, __ATOMIC_ACQUIRE) != want; t++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return __atomic_load_n(p, __ATOMIC_ACQUIRE) == want;
}

START_TEST(test_workq_enter_idle_only)
{
	static struct tsr_workq *q;
	static int ran, slow;
	struct timespec ts = { 0, 20000000 };

	ran = slow = 0;
	ck_assert_int_eq(tsr_workq_create(NULL, &q), 0);
	ck_assert_int_eq(tsr_workq_enter(q), 1);
	ck_assert_int_eq(tsr_workq_enter(q), 0); /* one at a time */
	ck_assert_uint_eq(tsr_workq_pending(q), 1);
	ck_assert_int_eq(tsr_workq_post(q, wq_count, &ran), 0);
	nanosleep(&ts, NULL);
	ck_assert_int_eq(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 0);
	tsr_workq_leave(q);
	ck_assert(wait_int(&ran, 1));
	/* the worker running an item: no entering */
	ck_assert_int_eq(tsr_workq_post(q, wq_slow, &slow), 0);
	ck_assert(wait_int(&slow, 1));
	ck_assert_int_eq(tsr_workq_enter(q), 0);
	ck_assert(wait_int(&slow, 2));
	for (int t = 0; t < 1000 && tsr_workq_pending(q) > 0; t++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	ck_assert_int_eq(tsr_workq_enter(q), 1);
	tsr_workq_leave(q);
	ck_assert_uint_eq(tsr_workq_pending(q), 0);
	tsr_workq_destroy(q);
}
END_TEST

/* An item's record of the order items ran in. */
struct wq_order {
	int *log, *n;
	int id;
};

static void
wq_note(void *arg)
{
	struct wq_order *o = arg;

	o->log[(*o->n)++] = o->id;
}

/* Leaving with an item to run first: it runs before what was posted while
 * the caller was in place (two items, in their order), and the queue is
 * left (enter works again once they ran).  After destroy began, the item
 * is refused and the queue left all the same. */
START_TEST(test_workq_leave_first)
{
	static int log[8], n;
	static struct wq_order a = { log, &n, 1 }, b = { log, &n, 2 }, f = { log, &n, 3 };
	struct tsr_workq *q;

	n = 0;
	ck_assert_int_eq(tsr_workq_create(NULL, &q), 0);
	ck_assert_int_eq(tsr_workq_enter(q), 1);
	ck_assert_int_eq(tsr_workq_post(q, wq_note, &a), 0);
	ck_assert_int_eq(tsr_workq_post(q, wq_note, &b), 0);
	ck_assert_int_eq(tsr_workq_leave_first(q, wq_note, &f), 0);
	for (int t = 0; t < 1000 && tsr_workq_pending(q) > 0; t++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	ck_assert_uint_eq(tsr_workq_pending(q), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(log[0], 3);
	ck_assert_int_eq(log[1], 1);
	ck_assert_int_eq(log[2], 2);
	/* nothing posted meanwhile: it runs, and the queue is idle again */
	ck_assert_int_eq(tsr_workq_enter(q), 1);
	ck_assert_int_eq(tsr_workq_leave_first(q, wq_note, &f), 0);
	for (int t = 0; t < 1000 && tsr_workq_pending(q) > 0; t++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(log[3], 3);
	ck_assert_int_eq(tsr_workq_enter(q), 1);
	tsr_workq_leave(q);
	tsr_workq_destroy(q);
}
END_TEST

struct wq_destroyer {
	struct tsr_workq *q;
	int done;
};

static void *
wq_destroy_thread(void *arg)
{
	struct wq_destroyer *d = arg;

	tsr_workq_destroy(d->q);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Destroy waits for an item running in place: the queue is not freed
 * under it, and the worker does not stop before it ends.  An item to run
 * first, given at that leave, is refused (destroy began). */
START_TEST(test_workq_destroy_waits_in_place)
{
	static struct wq_destroyer d;
	static int log[2], n;
	static struct wq_order f = { log, &n, 3 };
	pthread_t t;
	struct timespec ts = { 0, 50000000 };

	d.done = 0;
	n = 0;
	ck_assert_int_eq(tsr_workq_create(NULL, &d.q), 0);
	ck_assert_int_eq(tsr_workq_enter(d.q), 1);
	ck_assert_int_eq(pthread_create(&t, NULL, wq_destroy_thread, &d), 0);
	nanosleep(&ts, NULL);
	ck_assert_int_eq(__atomic_load_n(&d.done, __ATOMIC_ACQUIRE), 0);
	ck_assert_int_eq(tsr_workq_leave_first(d.q, wq_note, &f), -ESHUTDOWN);
	ck_assert(wait_int(&d.done, 1));
	pthread_join(t, NULL);
	ck_assert_int_eq(n, 0);
}
END_TEST

struct wq_mix {
	struct tsr_workq *q;
	int inside, overlap, inplace;
	int seq[2][3000], n[2];
};

struct wq_mix_item {
	struct wq_mix *x;
	int poster, k;
};

static void
wq_mix_run(void *arg)
{
	struct wq_mix_item *it = arg;
	struct wq_mix *x = it->x;

	if (__atomic_add_fetch(&x->inside, 1, __ATOMIC_ACQ_REL) != 1)
		__atomic_store_n(&x->overlap, 1, __ATOMIC_RELEASE);
	x->seq[it->poster][x->n[it->poster]++] = it->k; /* (one at a time) */
	__atomic_sub_fetch(&x->inside, 1, __ATOMIC_ACQ_REL);
	free(it);
}

struct wq_mix_poster {
	struct wq_mix *x;
	int poster;
};

static void *
wq_mix_post(void *arg)
{
	struct wq_mix_poster *p = arg;

	for (int k = 0; k < 3000; k++) {
		struct wq_mix_item *it = malloc(sizeof(*it));
		*it = (struct wq_mix_item){ p->x, p->poster, k };
		if (k % 3 != 2 && tsr_workq_enter(p->x->q)) {
			wq_mix_run(it);
			__atomic_add_fetch(&p->x->inplace, 1, __ATOMIC_RELAXED);
			tsr_workq_leave(p->x->q);
		} else {
			ck_assert_int_eq(tsr_workq_post(p->x->q, wq_mix_run, it), 0);
		}
	}
	return NULL;
}

/* Two threads, each running its items in place when it may and posting
 * the others: never two at once, each thread's items in its order. */
START_TEST(test_workq_in_place_and_posted)
{
	static struct wq_mix x;
	struct wq_mix_poster p[2] = { { &x, 0 }, { &x, 1 } };
	pthread_t t[2];

	memset(&x, 0, sizeof(x));
	ck_assert_int_eq(tsr_workq_create(NULL, &x.q), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, wq_mix_post, &p[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	tsr_workq_destroy(x.q);
	ck_assert_int_eq(x.overlap, 0);
	ck_assert_int_gt(x.inplace, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(x.n[i], 3000);
		for (int k = 0; k < 3000; k++)
			ck_assert_int_eq(x.seq[i][k], k);
	}
}
END_TEST

static Suite *
loop_suite(void)
{
	Suite *s = suite_create("loop");
	TCase *tm = tcase_create("timers");
	TCase *th = tcase_create("threads");
	TCase *fd = tcase_create("fds");

	tcase_add_test(tm, test_timer_order);
	tcase_add_test(tm, test_timer_cancel);
	tcase_add_test(tm, test_cancel_due_timer_from_callback);
	tcase_add_test(tm, test_timer_added_from_callback);
	tcase_add_test(tm, test_timer_heap);
	tcase_add_test(tm, test_destroy_with_pending);
	tcase_add_test(tm, test_cancel_many_timers);
	tcase_add_test(tm, test_cancel_random_model);
	tcase_add_test(tm, test_post_pending_at_destroy);
	tcase_add_test(tm, test_post_repost_does_not_starve);
	suite_add_tcase(s, tm);

	tcase_add_test(th, test_timer_add_wakes_loop);
	tcase_add_test(th, test_earlier_timer_from_thread);
	tcase_add_test(th, test_stop_from_thread);
	tcase_add_test(th, test_post_from_threads);
	tcase_add_test(th, test_current_loop_and_loop_thread);
	tcase_add_test(th, test_workq_order);
	tcase_add_test(th, test_workq_follow_ups_and_shutdown);
	tcase_add_test(th, test_workq_wakes_sleeping_worker);
	tcase_add_test(th, test_workq_enter_idle_only);
	tcase_add_test(th, test_workq_in_place_and_posted);
	tcase_add_test(th, test_workq_destroy_waits_in_place);
	tcase_add_test(th, test_workq_leave_first);
	suite_add_tcase(s, th);

	tcase_add_test(fd, test_fd_read);
	tcase_add_test(fd, test_zero_delay_rearm_does_not_starve);
	tcase_add_test(fd, test_fd_write_and_mod);
	tcase_add_test(fd, test_fd_del_self);
	tcase_add_test(fd, test_fd_del_other_pending);
	tcase_add_test(fd, test_fd_del_other_no_callback);
	tcase_add_test(fd, test_fd_errors);
	suite_add_tcase(s, fd);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(loop_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
