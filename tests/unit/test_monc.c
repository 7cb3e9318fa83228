/* test_monc.c — the monitor client (core/mon/monc.h) as a module on a
 * messenger and a loop, against fake monitors: messengers in this process
 * that answer MON_CMD as told (an answer, "ask the leader", silence).
 *
 *   follows_leader_then_starts_there  a "not the leader" answer is followed
 *                    at once, and the next command starts at the monitor
 *                    that answered, on the session kept from before;
 *   async_done_once_on_loop  commands in flight together share a session;
 *                    each done runs once, on the loop, never inside
 *                    tsr_monc_send; a cancelled one's never;
 *   silent_monitor_outcome_unknown  a monitor that had the command and went
 *                    silent: -EINPROGRESS at the deadline, saying so;
 *   no_monitor_listening  -ETIMEDOUT at the deadline (pausing between
 *                    rounds), naming each monitor's refusal;
 *   blocking_form_refused_on_loop  tsr_monc_command on the loop's own
 *                    thread: -EDEADLK, not a hang;
 *   destroy_with_commands_pending  their done never runs, nothing leaks.
 */
#include "event/loop.h"
#include "log/log.h"
#include "mon/monc.h"
#include "mon/monmsg.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 10000

static const uint8_t FSID[16] = "tessera-monc-fs";

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- A fake monitor ----------------------------------------------------------*/

struct fakemon {
	struct tsr_msgr *m;
	char name[8];
	pthread_mutex_t mu;
	int cmds, accepts;
	int status;             /* the answer's */
	char leader[64];        /* the answer's "ask the leader at" */
	int silent;             /* no answer at all */
};

static void
fm_accept(struct tsr_conn *c, void *arg)
{
	struct fakemon *f = arg;

	(void)c;
	pthread_mutex_lock(&f->mu);
	f->accepts++;
	pthread_mutex_unlock(&f->mu);
}

static void
fm_cmd(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct fakemon *f = arg;
	struct tsr_mon_cmd cmd;
	struct tsr_mon_reply r = { 0 };
	struct tsr_enc e;
	char err[128], text[64];
	int silent;

	ck_assert_int_eq(tsr_monmsg_cmd_decode(m->front, m->front_len, &cmd, err,
					       sizeof(err)), 0);
	tsr_msg_free(m, 0);
	pthread_mutex_lock(&f->mu);
	f->cmds++;
	silent = f->silent;
	r.tid = cmd.tid;
	r.status = f->status;
	snprintf(r.leader, sizeof(r.leader), "%s", f->leader);
	pthread_mutex_unlock(&f->mu);
	snprintf(text, sizeof(text), "{\"from\": \"%s\", \"word\": \"%s\"}", f->name,
		 cmd.argv[0]);
	r.text = text;
	tsr_monmsg_cmd_free(&cmd);
	if (silent)
		return;
	tsr_enc_init(&e);
	tsr_monmsg_reply_encode(&e, &r);
	tsr_conn_send(c, tsr_msg_from_enc(TSR_MSG_MON_CMD_REPLY, &e), TSR_SEND_NOWAIT);
}

static void
fm_start(struct fakemon *f, const char *name, int status)
{
	struct tsr_msgr_opts o;
	struct tsr_msgr_events ev = { .accept = fm_accept, .arg = f };
	char err[256];

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->status = status;
	memset(&o, 0, sizeof(o));
	memcpy(o.fsid, FSID, 16);
	o.entity_type = TSR_ENTITY_MON;
	o.bind = "127.0.0.1:0";
	tsr_msgr_opts_default(&o);
	o.workers = 1;
	o.dispatchers = 1;
	ck_assert_msg(tsr_msgr_create(&o, &ev, &f->m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tsr_msgr_register(f->m, TSR_MSG_MON_CMD, fm_cmd, f, 0), 0);
	tsr_msgr_start(f->m);
}

static int
fm_count(struct fakemon *f, int *v)
{
	int n;

	pthread_mutex_lock(&f->mu);
	n = *v;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void
fm_stop(struct fakemon *f)
{
	tsr_msgr_destroy(f->m);
	pthread_mutex_destroy(&f->mu);
}

/* ---- The client's runtime ---------------------------------------------------*/

struct client {
	struct tsr_msgr *m;
	struct tsr_loop *loop;
	struct tsr_loop_thread *thr;
	struct tsr_monc *monc;
};

/* A client of the monitors in members ("a=ADDR,b=ADDR"), its loop running. */
static void
client_open(struct client *k, const char *members)
{
	struct tsr_mon_members mem;
	struct tsr_msgr_opts o;
	char err[512];

	ck_assert_msg(tsr_mon_members_parse(members, "test", &mem, err, sizeof(err)) == 0,
		      "%s", err);
	memset(&o, 0, sizeof(o));
	memcpy(o.fsid, FSID, 16);
	o.entity_type = TSR_ENTITY_TOOL;
	o.entity_id = 7;
	tsr_msgr_opts_default(&o);
	o.workers = 1;
	o.dispatchers = 1;
	ck_assert_msg(tsr_msgr_create(&o, NULL, &k->m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tsr_loop_create(&k->loop), 0);
	ck_assert_msg(tsr_monc_create(k->m, k->loop, &mem, &k->monc, err,
				      sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tsr_loop_thread_start(k->loop, &k->thr), 0);
}

static void
client_close(struct client *k)
{
	tsr_loop_thread_stop(k->thr);
	tsr_monc_destroy(k->monc);
	tsr_msgr_destroy(k->m);
	tsr_loop_destroy(k->loop);
}

/* Run fn(arg) on k's loop and wait until it ran. */
struct on_loop {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void (*fn)(void *);
	void *arg;
	int ran;
};

static void
on_loop_cb(void *arg)
{
	struct on_loop *l = arg;

	l->fn(l->arg);
	pthread_mutex_lock(&l->mu);
	l->ran = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static void
run_on_loop(struct client *k, void (*fn)(void *), void *arg)
{
	struct on_loop l = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			     fn, arg, 0 };
	uint64_t end = tsr_mono_ns() + WAIT_MS * 1000000ull;

	ck_assert_int_eq(tsr_loop_post(k->loop, on_loop_cb, &l), 0);
	pthread_mutex_lock(&l.mu);
	while (!l.ran && tsr_mono_ns() < end) {
		pthread_mutex_unlock(&l.mu);
		sleep_ms(5);
		pthread_mutex_lock(&l.mu);
	}
	pthread_mutex_unlock(&l.mu);
	ck_assert_msg(l.ran, "the loop did not run the call");
}

/* ---- Tests ---------------------------------------------------------------------*/

START_TEST(follows_leader_then_starts_there)
{
	struct fakemon a, b;
	struct client k;
	char members[200], *argv[] = { "osd", "stat" }, *text = NULL;

	fm_start(&a, "a", -EAGAIN);
	fm_start(&b, "b", 0);
	snprintf(a.leader, sizeof(a.leader), "%s", tsr_msgr_addr(b.m));
	snprintf(members, sizeof(members), "a=%s, b=%s", tsr_msgr_addr(a.m),
		 tsr_msgr_addr(b.m));
	client_open(&k, members);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(tsr_monc_command(k.monc, 2, argv, 5000, &text), 0);
		ck_assert_str_eq(text, "{\"from\": \"b\", \"word\": \"osd\"}");
		free(text);
	}
	/* a was asked at most once (the first command, if it began there),
	 * b answered all three, on one session */
	ck_assert_int_le(fm_count(&a, &a.cmds), 1);
	ck_assert_int_eq(fm_count(&b, &b.cmds), 3);
	ck_assert_int_eq(fm_count(&b, &b.accepts), 1);
	client_close(&k);
	fm_stop(&a);
	fm_stop(&b);
}
END_TEST

struct async {
	struct client *k;
	pthread_mutex_t mu;
	int in_send;             /* set around tsr_monc_send */
	int done, wrong_thread, inside_send, status_sum;
	uint64_t cancelled;
};

static void
async_done(void *arg, int status, const char *text)
{
	struct async *a = arg;

	ck_assert_ptr_nonnull(text);
	pthread_mutex_lock(&a->mu);
	a->done++;
	a->status_sum += status;
	a->wrong_thread += tsr_loop_current() != a->k->loop;
	a->inside_send += a->in_send;
	pthread_mutex_unlock(&a->mu);
}

static void
async_send(void *arg)
{
	struct async *a = arg;
	char *argv[] = { "pool", "ls" };

	pthread_mutex_lock(&a->mu);
	a->in_send = 1;
	pthread_mutex_unlock(&a->mu);
	for (int i = 0; i < 4; i++) {
		uint64_t id = 0;
		ck_assert_int_eq(tsr_monc_send(a->k->monc, 2, argv, 5000, async_done, a,
					       &id), 0);
		ck_assert_uint_ne(id, 0);
		if (i == 3) {
			ck_assert_int_eq(tsr_monc_cancel(a->k->monc, id), 0);
			ck_assert_int_eq(tsr_monc_cancel(a->k->monc, id), -ENOENT);
		}
	}
	ck_assert_int_eq(tsr_monc_send(a->k->monc, 0, argv, 5000, async_done, a, NULL),
			 -EINVAL);
	pthread_mutex_lock(&a->mu);
	a->in_send = 0;
	pthread_mutex_unlock(&a->mu);
}

START_TEST(async_done_once_on_loop)
{
	struct fakemon b;
	struct client k;
	struct async a = { .k = &k, .mu = PTHREAD_MUTEX_INITIALIZER };
	char members[100];
	int done = 0;

	fm_start(&b, "b", 0);
	snprintf(members, sizeof(members), "b=%s", tsr_msgr_addr(b.m));
	client_open(&k, members);
	run_on_loop(&k, async_send, &a);
	for (int i = 0; i < WAIT_MS / 10 && done < 3; i++) {
		sleep_ms(10);
		pthread_mutex_lock(&a.mu);
		done = a.done;
		pthread_mutex_unlock(&a.mu);
	}
	sleep_ms(300); /* the cancelled one has had its chance */
	pthread_mutex_lock(&a.mu);
	ck_assert_int_eq(a.done, 3);
	ck_assert_int_eq(a.status_sum, 0);
	ck_assert_int_eq(a.wrong_thread, 0);
	ck_assert_int_eq(a.inside_send, 0);
	pthread_mutex_unlock(&a.mu);
	ck_assert_int_eq(fm_count(&b, &b.accepts), 1);
	client_close(&k);
	fm_stop(&b);
}
END_TEST

START_TEST(silent_monitor_outcome_unknown)
{
	struct fakemon a;
	struct client k;
	char members[100], *argv[] = { "osd", "out", "3" }, *text = NULL;
	uint64_t t0;
	int rc;

	fm_start(&a, "a", 0);
	a.silent = 1;
	snprintf(members, sizeof(members), "a=%s", tsr_msgr_addr(a.m));
	client_open(&k, members);
	t0 = tsr_mono_ns();
	rc = tsr_monc_command(k.monc, 3, argv, 1500, &text);
	t0 = (tsr_mono_ns() - t0) / 1000000;
	ck_assert_msg(rc == -EINPROGRESS, "%d %s", rc, text);
	ck_assert_msg(strstr(text, "no monitor quorum answered within 1.5 s, after a "
			     "monitor had the command") &&
		      strstr(text, "no answer (after it had the command)"), "%s", text);
	ck_assert_msg(t0 >= 1400 && t0 < 4000, "took %llu ms", (unsigned long long)t0);
	free(text);
	client_close(&k);
	fm_stop(&a);
}
END_TEST

/* A loopback port nobody listens on. */
static int
dead_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

START_TEST(no_monitor_listening)
{
	struct client k;
	char members[100], *argv[] = { "health" }, *text = NULL;
	uint64_t t0;
	int rc;

	snprintf(members, sizeof(members), "a=127.0.0.1:%d, b=127.0.0.1:%d",
		 dead_port(), dead_port());
	client_open(&k, members);
	t0 = tsr_mono_ns();
	rc = tsr_monc_command(k.monc, 1, argv, 1000, &text);
	t0 = (tsr_mono_ns() - t0) / 1000000;
	ck_assert_msg(rc == -ETIMEDOUT, "%d %s", rc, text);
	ck_assert_msg(strstr(text, "mon.a (127.0.0.1:") && strstr(text, "mon.b (") &&
		      strstr(text, "Connection refused") && !strstr(text, "not tried") &&
		      !strstr(text, "after a monitor had"), "%s", text);
	ck_assert_msg(t0 >= 900 && t0 < 3000, "took %llu ms", (unsigned long long)t0);
	free(text);
	client_close(&k);
}
END_TEST

struct blocking {
	struct client *k;
	int rc;
	char *text;
};

static void
blocking_call(void *arg)
{
	struct blocking *b = arg;
	char *argv[] = { "health" };

	b->rc = tsr_monc_command(b->k->monc, 1, argv, 1000, &b->text);
}

START_TEST(blocking_form_refused_on_loop)
{
	struct client k;
	struct blocking b = { &k, 0, NULL };

	client_open(&k, "a=127.0.0.1:1");
	run_on_loop(&k, blocking_call, &b);
	ck_assert_int_eq(b.rc, -EDEADLK);
	ck_assert_ptr_nonnull(strstr(b.text, "own loop thread"));
	free(b.text);
	client_close(&k);
}
END_TEST

static void
destroy_monc(void *arg)
{
	struct client *k = arg;

	tsr_monc_destroy(k->monc);
	k->monc = NULL;
}

START_TEST(destroy_with_commands_pending)
{
	struct fakemon a;
	struct client k;
	struct async as = { .k = &k, .mu = PTHREAD_MUTEX_INITIALIZER };
	char members[100];

	fm_start(&a, "a", 0);
	a.silent = 1;
	snprintf(members, sizeof(members), "a=%s", tsr_msgr_addr(a.m));
	client_open(&k, members);
	run_on_loop(&k, async_send, &as);
	for (int i = 0; i < WAIT_MS / 10 && fm_count(&a, &a.cmds) < 3; i++)
		sleep_ms(10);
	ck_assert_int_eq(fm_count(&a, &a.cmds), 3);
	run_on_loop(&k, destroy_monc, &k);
	sleep_ms(200);
	pthread_mutex_lock(&as.mu);
	ck_assert_int_eq(as.done, 0);
	pthread_mutex_unlock(&as.mu);
	client_close(&k); /* destroy(NULL) there: the loop frees the rest */
	fm_stop(&a);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("monc");
	TCase *tc = tcase_create("monc");
	SRunner *sr;
	int failed;

	/* refusals and closed sessions are what these tests are about */
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, follows_leader_then_starts_there);
	tcase_add_test(tc, async_done_once_on_loop);
	tcase_add_test(tc, silent_monitor_outcome_unknown);
	tcase_add_test(tc, no_monitor_listening);
	tcase_add_test(tc, blocking_form_refused_on_loop);
	tcase_add_test(tc, destroy_with_commands_pending);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
