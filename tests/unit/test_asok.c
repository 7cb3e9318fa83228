/* test_asok.c — admin socket: commands, prefix match, errors, limits, socket file life. */
#include "daemon/asok.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define REQ_TIMEOUT_MS 2000

/* Scratch directory for the whole run (sockets and the log), made and
 * removed by main() so it goes even when a forked test dies. */
static char tmpdir[128];
static char logpath[256];

static void
tmp_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", tmpdir, name);

	ck_assert(n > 0 && (size_t)n < len);
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static char *
slurp(const char *path)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_ptr_nonnull(buf);
	while (fd >= 0) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			ck_assert_ptr_nonnull(buf);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	buf[n] = '\0';
	return buf;
}

/* The server's log must hold a line ending in "<path>: <what>". */
static void
assert_logged(const char *path, const char *what)
{
	char want[512];
	char *text = slurp(logpath);

	snprintf(want, sizeof(want), "%s: %s\n", path, what);
	ck_assert_msg(strstr(text, want) != NULL, "log lacks \"%s\"", want);
	free(text);
}

/* ---- Handlers (run on the loop thread) ---------------------------------- */

/* The last call, read by the test thread after the reply came back. */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char name[32];
	int argc;
	char argv[8][64];
	int count;
} last;

static void
calls_reset(void)
{
	pthread_mutex_lock(&calls_lock);
	memset(&last, 0, sizeof(last));
	pthread_mutex_unlock(&calls_lock);
}

/* Replies {"cmd": NAME, "args": [...]}. */
static int
fn_echo(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	const char *name = arg;

	pthread_mutex_lock(&calls_lock);
	tsr_strlcpy(last.name, name, sizeof(last.name));
	last.argc = argc;
	for (int i = 0; i < argc && i < 8; i++)
		tsr_strlcpy(last.argv[i], argv[i], sizeof(last.argv[i]));
	last.count++;
	pthread_mutex_unlock(&calls_lock);

	tsr_sbuf_printf(out, "{\"cmd\": ");
	tsr_sbuf_json_str(out, name);
	tsr_sbuf_printf(out, ", \"args\": [");
	for (int i = 0; i < argc; i++) {
		tsr_sbuf_printf(out, "%s", i ? ", " : "");
		tsr_sbuf_json_str(out, argv[i]);
	}
	tsr_sbuf_printf(out, "]}\n");
	return 0;
}

static int
fn_fail(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	(void)arg;
	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "not allowed here\n");
	return -EPERM;
}

#define BIG_REPLY (300 * 1000)

/* Filled by server_init, before any loop thread reads it. */
static char big_pattern[BIG_REPLY];

/* A reply far larger than any socket buffer, so the server must write it
 * in pieces as the client reads. */
static int
fn_big(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	(void)arg;
	(void)argc;
	(void)argv;
	tsr_sbuf_add(out, big_pattern, BIG_REPLY);
	return 0;
}

/* ---- A server on its own loop thread ------------------------------------ */

struct server {
	struct tsr_loop *loop;
	struct tsr_asok *asok;
	char path[256];
	pthread_t th;
	bool running;
};

static void *
server_main(void *arg)
{
	struct server *s = arg;

	tsr_loop_run(s->loop);
	return NULL;
}

/* Create the loop and the socket and register the test commands; the loop
 * is not running yet. */
static void
server_init(struct server *s, const char *name)
{
	char err[512] = "";

	memset(s, 0, sizeof(*s));
	calls_reset();
	for (size_t i = 0; i < BIG_REPLY; i++)
		big_pattern[i] = (char)('a' + i % 26);
	tmp_path(s->path, sizeof(s->path), name);
	ck_assert_int_eq(tsr_loop_create(&s->loop), 0);
	ck_assert_msg(tsr_asok_create(s->loop, s->path, &s->asok, err, sizeof(err)) == 0,
		      "asok create: %s", err);
	ck_assert_int_eq(tsr_asok_register(s->asok, "log", "logging: log reopen",
					   fn_echo, "log"), 0);
	ck_assert_int_eq(tsr_asok_register(s->asok, "log level",
					   "set a level: log level SUBSYS LEVEL",
					   fn_echo, "log level"), 0);
	ck_assert_int_eq(tsr_asok_register(s->asok, "deny", "always \"no\"",
					   fn_fail, NULL), 0);
	ck_assert_int_eq(tsr_asok_register(s->asok, "big", "a large reply", fn_big,
					   NULL), 0);
}

static void
server_run(struct server *s)
{
	ck_assert_int_eq(pthread_create(&s->th, NULL, server_main, s), 0);
	s->running = true;
}

static void
server_start(struct server *s, const char *name)
{
	server_init(s, name);
	server_run(s);
}

static void
server_stop(struct server *s)
{
	if (s->running) {
		struct timespec ts;

		tsr_loop_stop(s->loop);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		ck_assert_msg(pthread_timedjoin_np(s->th, NULL, &ts) == 0,
			      "server loop did not stop");
		s->running = false;
	}
	tsr_asok_destroy(s->asok);
	tsr_loop_destroy(s->loop);
	s->asok = NULL;
	s->loop = NULL;
}

/* A request that must succeed at the transport level. */
static int
request(const char *path, const char *cmd, struct tsr_sbuf *reply)
{
	char err[512] = "";
	int status = 12345;
	int rc;

	tsr_sbuf_reset(reply);
	rc = tsr_asok_request(path, cmd, REQ_TIMEOUT_MS, &status, reply, err,
			      sizeof(err));
	ck_assert_msg(rc == 0, "request \"%.40s\": rc %d: %s", cmd, rc, err);
	ck_assert_int_ne(status, 12345);
	return status;
}

/* ---- Raw clients -------------------------------------------------------- */

static int
raw_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(strlen(path), sizeof(sun.sun_path));
	memcpy(sun.sun_path, path, strlen(path));
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

/* Send all of buf (MSG_NOSIGNAL: the server may already have hung up). */
static void
raw_send(int fd, const void *buf, size_t len)
{
	size_t off = 0;

	for (int tries = 0; off < len && tries < 1000; tries++) {
		ssize_t w = send(fd, (const char *)buf + off, len - off, MSG_NOSIGNAL);
		ck_assert_msg(w > 0, "send: %s", strerror(errno));
		off += (size_t)w;
	}
	ck_assert_uint_eq(off, len);
}

/* Read until EOF or an error, for at most ms; returns the bytes read, or -1
 * if the connection was not closed in time. */
static ssize_t
raw_read_all(int fd, struct tsr_sbuf *out, unsigned ms)
{
	uint64_t deadline = tsr_mono_ns() + (uint64_t)ms * 1000000;
	ssize_t total = 0;
	char buf[4096];

	for (;;) {
		uint64_t now = tsr_mono_ns();
		if (now >= deadline)
			return -1;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return total; /* EOF, or reset by the server */
		if (out)
			tsr_sbuf_add(out, buf, (size_t)r);
		total += r;
	}
}

static int32_t
reply_status(const struct tsr_sbuf *raw)
{
	const uint8_t *h = (const uint8_t *)raw->buf;

	ck_assert_uint_ge(raw->len, 4);
	return (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 8 |
			 (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24);
}

/* ---- Commands ----------------------------------------------------------- */

START_TEST(test_help)
{
	static const char want[] =
		"{\"commands\": [\n"
		"  {\"command\": \"help\", \"help\": \"list the commands this daemon answers\"},\n"
		"  {\"command\": \"log\", \"help\": \"logging: log reopen\"},\n"
		"  {\"command\": \"log level\", \"help\": \"set a level: log level SUBSYS LEVEL\"},\n"
		"  {\"command\": \"deny\", \"help\": \"always \\\"no\\\"\"},\n"
		"  {\"command\": \"big\", \"help\": \"a large reply\"}\n"
		"]}\n";
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_start(&s, "help.asok");
	ck_assert_int_eq(request(s.path, "help", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply), want);
	/* words after a command's prefix are its arguments: help ignores them */
	ck_assert_int_eq(request(s.path, "help me", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply), want);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_longest_prefix)
{
	static const struct {
		const char *cmd;
		const char *name;
		int argc;
		const char *argv[3];
		const char *reply;
	} cases[] = {
		{ "log level osd debug", "log level", 2, { "osd", "debug" },
		  "{\"cmd\": \"log level\", \"args\": [\"osd\", \"debug\"]}\n" },
		{ "log level", "log level", 0, { NULL },
		  "{\"cmd\": \"log level\", \"args\": []}\n" },
		{ "log reopen", "log", 1, { "reopen" },
		  "{\"cmd\": \"log\", \"args\": [\"reopen\"]}\n" },
		{ "log", "log", 0, { NULL }, "{\"cmd\": \"log\", \"args\": []}\n" },
		/* words, not characters: "levels" is not "level" */
		{ "log levels x", "log", 2, { "levels", "x" },
		  "{\"cmd\": \"log\", \"args\": [\"levels\", \"x\"]}\n" },
		/* runs of spaces and tabs separate words */
		{ "  log   level\tmsg  ", "log level", 1, { "msg" },
		  "{\"cmd\": \"log level\", \"args\": [\"msg\"]}\n" },
		{ "log \"quoted\" a\\b", "log", 2, { "\"quoted\"", "a\\b" },
		  "{\"cmd\": \"log\", \"args\": [\"\\\"quoted\\\"\", \"a\\\\b\"]}\n" },
	};
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_start(&s, "prefix.asok");
	for (size_t i = 0; i < TSR_ARRAY_SIZE(cases); i++) {
		calls_reset();
		ck_assert_int_eq(request(s.path, cases[i].cmd, &reply), 0);
		ck_assert_str_eq(tsr_sbuf_str(&reply), cases[i].reply);
		pthread_mutex_lock(&calls_lock);
		ck_assert_int_eq(last.count, 1);
		ck_assert_str_eq(last.name, cases[i].name);
		ck_assert_int_eq(last.argc, cases[i].argc);
		for (int k = 0; k < cases[i].argc; k++)
			ck_assert_str_eq(last.argv[k], cases[i].argv[k]);
		pthread_mutex_unlock(&calls_lock);
	}
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_register_duplicate)
{
	struct server s;

	server_init(&s, "dup.asok");
	ck_assert_int_eq(tsr_asok_register(s.asok, "help", "again", fn_echo, "x"),
			 -EEXIST);
	ck_assert_int_eq(tsr_asok_register(s.asok, "log level", "again", fn_echo,
					   "x"), -EEXIST);
	ck_assert_int_eq(tsr_asok_register(s.asok, "log level osd", "deeper",
					   fn_echo, "log level osd"), 0);
	server_run(&s);
	struct tsr_sbuf reply;
	tsr_sbuf_init(&reply);
	ck_assert_int_eq(request(s.path, "log level osd trace", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply),
			 "{\"cmd\": \"log level osd\", \"args\": [\"trace\"]}\n");
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

/* Regression: a prefix's words were counted at spaces only but matched at
 * spaces and tabs, so "peer\tdump" counted one word: the handler got the
 * second word as an argument (and a one-word request read past argv). */
START_TEST(test_prefix_with_tab)
{
	struct server s;
	struct tsr_sbuf reply;

	server_init(&s, "tab.asok");
	ck_assert_int_eq(tsr_asok_register(s.asok, "peer\tdump", "tabbed", fn_echo,
					   "peer dump"), 0);
	server_run(&s);
	tsr_sbuf_init(&reply);
	ck_assert_int_eq(request(s.path, "peer dump osd.1", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply),
			 "{\"cmd\": \"peer dump\", \"args\": [\"osd.1\"]}\n");
	ck_assert_int_eq(request(s.path, "peer", &reply), -EINVAL);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_unknown_command)
{
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_start(&s, "unknown.asok");
	ck_assert_int_eq(request(s.path, "bogus thing", &reply), -EINVAL);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "unknown command \"bogus\"; try \"help\"\n");
	/* a registered command's later word alone is not that command */
	ck_assert_int_eq(request(s.path, "level osd", &reply), -EINVAL);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "unknown command \"level\"; try \"help\"\n");
	ck_assert_int_eq(request(s.path, "", &reply), -EINVAL);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "unknown command \"\"; try \"help\"\n");
	ck_assert_int_eq(request(s.path, "   ", &reply), -EINVAL);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "unknown command \"\"; try \"help\"\n");
	pthread_mutex_lock(&calls_lock);
	ck_assert_int_eq(last.count, 0);
	pthread_mutex_unlock(&calls_lock);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_handler_error)
{
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_start(&s, "deny.asok");
	ck_assert_int_eq(request(s.path, "deny", &reply), -EPERM);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "not allowed here\n");
	/* the server goes on answering */
	ck_assert_int_eq(request(s.path, "log", &reply), 0);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_big_reply)
{
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_start(&s, "big.asok");
	ck_assert_int_eq(request(s.path, "big", &reply), 0);
	ck_assert_uint_eq(reply.len, BIG_REPLY);
	ck_assert_int_eq(memcmp(reply.buf, big_pattern, BIG_REPLY), 0);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

/* ---- Limits and misbehaving clients ------------------------------------- */

/* A request that reaches the limit without a newline gets the connection
 * closed, with no reply, while other clients are served — including one
 * whose request arrives in pieces. */
START_TEST(test_request_too_long)
{
	struct server s;
	struct tsr_sbuf reply, raw;
	char *junk = malloc(TSR_ASOK_MAX_REQUEST);
	int hog, slow;

	ck_assert_ptr_nonnull(junk);
	memset(junk, 'a', TSR_ASOK_MAX_REQUEST);
	tsr_sbuf_init(&reply);
	tsr_sbuf_init(&raw);
	server_start(&s, "long.asok");

	slow = raw_connect(s.path);
	raw_send(slow, "hel", 3);
	hog = raw_connect(s.path);
	raw_send(hog, junk, TSR_ASOK_MAX_REQUEST - 1);
	/* one byte short of the limit: still waiting for the rest */
	ck_assert_int_eq(request(s.path, "log", &reply), 0);
	raw_send(hog, "a", 1);
	ck_assert_int_eq(raw_read_all(hog, &raw, 2000), 0);
	ck_assert_uint_eq(raw.len, 0);
	assert_logged(s.path, "request longer than 4096 bytes; disconnecting");

	/* served meanwhile */
	ck_assert_int_eq(request(s.path, "log", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "{\"cmd\": \"log\", \"args\": []}\n");

	/* the slow client finishes its request and gets its reply */
	raw_send(slow, "p\n", 2);
	ck_assert_int_gt(raw_read_all(slow, &raw, 2000), 4);
	ck_assert_int_eq(reply_status(&raw), 0);
	ck_assert_int_eq(strncmp(raw.buf + 4, "{\"commands\": [", 14), 0);

	close(hog);
	close(slow);
	server_stop(&s);
	free(junk);
	tsr_sbuf_release(&reply);
	tsr_sbuf_release(&raw);
}
END_TEST

/* The longest request the protocol allows (4095 bytes and '\n') is served;
 * the client refuses anything longer before connecting. */
START_TEST(test_request_at_limit)
{
	struct server s;
	struct tsr_sbuf reply;
	char *cmd = malloc(TSR_ASOK_MAX_REQUEST + 1);
	char err[256] = "";
	int status = 7;

	ck_assert_ptr_nonnull(cmd);
	tsr_sbuf_init(&reply);
	server_start(&s, "limit.asok");
	memcpy(cmd, "log ", 4);
	memset(cmd + 4, 'z', TSR_ASOK_MAX_REQUEST - 1 - 4);
	cmd[TSR_ASOK_MAX_REQUEST - 1] = '\0';
	ck_assert_int_eq(request(s.path, cmd, &reply), 0);
	pthread_mutex_lock(&calls_lock);
	ck_assert_str_eq(last.name, "log");
	ck_assert_int_eq(last.argc, 1);
	pthread_mutex_unlock(&calls_lock);
	ck_assert_uint_eq(reply.len, strlen("{\"cmd\": \"log\", \"args\": [\"\"]}\n") +
					     TSR_ASOK_MAX_REQUEST - 1 - 4);

	cmd[TSR_ASOK_MAX_REQUEST - 1] = 'z';
	cmd[TSR_ASOK_MAX_REQUEST] = '\0';
	ck_assert_int_eq(tsr_asok_request(s.path, cmd, REQ_TIMEOUT_MS, &status,
					  &reply, err, sizeof(err)), -E2BIG);
	ck_assert_str_eq(err, "command longer than 4095 bytes");
	ck_assert_int_eq(status, 7);
	server_stop(&s);
	free(cmd);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_nul_in_request)
{
	struct server s;
	struct tsr_sbuf raw;
	int fd;

	tsr_sbuf_init(&raw);
	server_start(&s, "nul.asok");
	fd = raw_connect(s.path);
	raw_send(fd, "he\0lp\n", 6);
	ck_assert_int_eq(raw_read_all(fd, &raw, 2000), 0);
	close(fd);
	assert_logged(s.path, "request holds a NUL byte; disconnecting");
	server_stop(&s);
	tsr_sbuf_release(&raw);
}
END_TEST

/* Regression: the server wrote its reply with write(2), so a client that
 * hung up before reading it raised SIGPIPE in the serving process (fatal
 * unless the embedding program happened to ignore it). */
START_TEST(test_client_hangs_up_before_reply)
{
	struct server s;
	struct tsr_sbuf reply;

	tsr_sbuf_init(&reply);
	server_init(&s, "hangup.asok");
	/* queued before the loop runs, so the server surely writes to a
	 * connection whose peer is gone */
	for (int i = 0; i < 3; i++) {
		int fd = raw_connect(s.path);
		raw_send(fd, "big\n", 4);
		close(fd);
	}
	server_run(&s);
	ck_assert_int_eq(request(s.path, "log", &reply), 0);
	ck_assert_str_eq(tsr_sbuf_str(&reply), "{\"cmd\": \"log\", \"args\": []}\n");
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

/* With every client slot taken, another connection is refused (closed at
 * once); a freed slot is reused. */
START_TEST(test_max_clients)
{
	struct server s;
	struct tsr_sbuf reply;
	int fds[TSR_ASOK_MAX_CLIENTS];
	char err[512];
	int status, rc;

	tsr_sbuf_init(&reply);
	server_start(&s, "max.asok");
	for (int i = 0; i < TSR_ASOK_MAX_CLIENTS; i++)
		fds[i] = raw_connect(s.path);
	/* a blocking connect waits for room in the listen backlog, and the
	 * server accepts in order: this one is the 65th, and is refused */
	int extra = raw_connect(s.path);
	ck_assert_int_eq(raw_read_all(extra, NULL, 2000), 0);
	close(extra);
	rc = tsr_asok_request(s.path, "log", REQ_TIMEOUT_MS, &status, &reply, err,
			      sizeof(err));
	ck_assert_msg(rc < 0 && rc != -ETIMEDOUT, "rc %d: %s", rc, err);
	assert_logged(s.path, "64 clients already connected; refusing another");
	close(fds[0]);
	/* the server notices the close on its next turn; retry briefly */
	rc = -1;
	for (int i = 0; i < 100 && rc != 0; i++) {
		tsr_sbuf_reset(&reply);
		rc = tsr_asok_request(s.path, "log", REQ_TIMEOUT_MS, &status, &reply,
				      err, sizeof(err));
		if (rc != 0)
			sleep_ms(10);
	}
	ck_assert_msg(rc == 0, "freed slot not reused: %s", err);
	ck_assert_int_eq(status, 0);
	for (int i = 1; i < TSR_ASOK_MAX_CLIENTS; i++)
		close(fds[i]);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

/* Several clients at once, each getting its own answer. */
struct hammer {
	const char *path;
	int id;
	atomic_int ok;
};

static void *
hammer_main(void *arg)
{
	struct hammer *h = arg;
	struct tsr_sbuf reply;
	char cmd[64], want[128];
	int status;

	tsr_sbuf_init(&reply);
	for (int i = 0; i < 25; i++) {
		snprintf(cmd, sizeof(cmd), "log level t%d n%d", h->id, i);
		snprintf(want, sizeof(want),
			 "{\"cmd\": \"log level\", \"args\": [\"t%d\", \"n%d\"]}\n",
			 h->id, i);
		tsr_sbuf_reset(&reply);
		if (tsr_asok_request(h->path, cmd, REQ_TIMEOUT_MS, &status, &reply,
				     NULL, 0) == 0 &&
		    status == 0 && strcmp(tsr_sbuf_str(&reply), want) == 0)
			atomic_fetch_add(&h->ok, 1);
	}
	tsr_sbuf_release(&reply);
	return NULL;
}

START_TEST(test_concurrent_clients)
{
	struct server s;
	struct hammer h[4];
	pthread_t th[4];

	server_start(&s, "many.asok");
	for (int i = 0; i < 4; i++) {
		h[i].path = s.path;
		h[i].id = i;
		atomic_store(&h[i].ok, 0);
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer_main, &h[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		int ok = atomic_load(&h[i].ok);

		ck_assert_msg(ok == 25, "client %d: %d of 25 replies right", i, ok);
	}
	server_stop(&s);
}
END_TEST

/* ---- The socket file ---------------------------------------------------- */

/* A socket file nobody listens on (what a crash leaves) is replaced. */
START_TEST(test_stale_socket_replaced)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct server s;
	struct tsr_sbuf reply;
	struct stat st;
	char path[256];
	int fd;

	tmp_path(path, sizeof(path), "stale.asok");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	memcpy(sun.sun_path, path, strlen(path));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));

	tsr_sbuf_init(&reply);
	server_start(&s, "stale.asok");
	ck_assert_int_eq(request(s.path, "help", &reply), 0);
	/* only its owner may talk to it */
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_live_socket_refused)
{
	struct server s;
	struct tsr_loop *loop2;
	struct tsr_asok *a2 = NULL;
	struct tsr_sbuf reply;
	char err[512] = "", want[512];

	tsr_sbuf_init(&reply);
	server_start(&s, "live.asok");
	ck_assert_int_eq(tsr_loop_create(&loop2), 0);
	ck_assert_int_eq(tsr_asok_create(loop2, s.path, &a2, err, sizeof(err)),
			 -EADDRINUSE);
	ck_assert_ptr_null(a2);
	snprintf(want, sizeof(want),
		 "admin socket %s is in use by a running process", s.path);
	ck_assert_str_eq(err, want);
	tsr_loop_destroy(loop2);
	/* the running server keeps its socket */
	ck_assert_int_eq(request(s.path, "log", &reply), 0);
	server_stop(&s);
	tsr_sbuf_release(&reply);
}
END_TEST

/* Regression: any file at the path that was not answering — a regular file
 * from a mistyped admin_socket, say — was unlinked and replaced. */
START_TEST(test_non_socket_file_kept)
{
	struct tsr_loop *loop;
	struct tsr_asok *a = NULL;
	char path[256], err[512] = "", want[512];
	char *text;
	int fd;

	tmp_path(path, sizeof(path), "precious.txt");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "keep me\n", 8), 8);
	close(fd);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(tsr_asok_create(loop, path, &a, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_null(a);
	snprintf(want, sizeof(want),
		 "cannot bind admin socket %s: it exists and is not a socket", path);
	ck_assert_str_eq(err, want);
	text = slurp(path);
	ck_assert_str_eq(text, "keep me\n");
	free(text);
	tsr_loop_destroy(loop);
	unlink(path);
}
END_TEST

START_TEST(test_path_too_long)
{
	struct tsr_loop *loop;
	struct tsr_asok *a = NULL;
	struct tsr_sbuf reply;
	char path[200], err[512] = "", want[512];
	int status;

	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	snprintf(want, sizeof(want), "admin socket path %s is longer than 107 bytes",
		 path);
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(tsr_asok_create(loop, path, &a, err, sizeof(err)),
			 -ENAMETOOLONG);
	ck_assert_ptr_null(a);
	ck_assert_str_eq(err, want);
	/* 108 bytes is refused too: sun_path (108) needs room for the NUL */
	path[108] = '\0';
	ck_assert_int_eq(tsr_asok_create(loop, path, &a, NULL, 0), -ENAMETOOLONG);
	tsr_loop_destroy(loop);

	tsr_sbuf_init(&reply);
	err[0] = '\0';
	ck_assert_int_eq(tsr_asok_request(path, "help", 100, &status, &reply, err,
					  sizeof(err)), -ENAMETOOLONG);
	ck_assert_ptr_nonnull(strstr(err, "is longer than 107 bytes"));
	tsr_sbuf_release(&reply);
}
END_TEST

START_TEST(test_destroy_removes_socket)
{
	struct server s;
	struct tsr_sbuf raw;
	char path[256];
	int fd;

	tsr_sbuf_init(&raw);
	server_start(&s, "gone.asok");
	tsr_strlcpy(path, s.path, sizeof(path));
	ck_assert_int_eq(access(path, F_OK), 0);
	/* a connected client with half a request is dropped too */
	fd = raw_connect(path);
	raw_send(fd, "hel", 3);
	server_stop(&s);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(raw_read_all(fd, &raw, 1000), 0);
	close(fd);
	tsr_sbuf_release(&raw);
}
END_TEST

START_TEST(test_client_missing_socket)
{
	struct tsr_sbuf reply;
	char path[256], err[512] = "", want[768];
	int status = 3;

	tmp_path(path, sizeof(path), "nobody.asok");
	tsr_sbuf_init(&reply);
	ck_assert_int_eq(tsr_asok_request(path, "help", 500, &status, &reply, err,
					  sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want),
		 "cannot connect to admin socket %s: %s (is the daemon running?)",
		 path, strerror(ENOENT));
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(status, 3);
	ck_assert_uint_eq(reply.len, 0);
	/* err may be NULL */
	ck_assert_int_eq(tsr_asok_request(path, "help", 500, &status, &reply, NULL,
					  0), -ENOENT);
	tsr_sbuf_release(&reply);
}
END_TEST

/* A listener that never answers: the client gives up at its deadline. */
START_TEST(test_client_timeout)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct tsr_sbuf reply;
	char path[256], err[512] = "", want[512];
	uint64_t t0, ms;
	int lfd, status;

	tmp_path(path, sizeof(path), "mute.asok");
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	memcpy(sun.sun_path, path, strlen(path));
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);

	tsr_sbuf_init(&reply);
	t0 = tsr_mono_ns();
	ck_assert_int_eq(tsr_asok_request(path, "help", 200, &status, &reply, err,
					  sizeof(err)), -ETIMEDOUT);
	ms = (tsr_mono_ns() - t0) / 1000000;
	ck_assert_uint_ge(ms, 190);
	ck_assert_uint_lt(ms, 1500);
	snprintf(want, sizeof(want), "admin socket %s: no reply in time", path);
	ck_assert_str_eq(err, want);
	close(lfd);
	unlink(path);
	tsr_sbuf_release(&reply);
}
END_TEST

/* A peer that closes after fewer than the 4 status bytes. */
struct shorty {
	int lfd;
	atomic_bool done;
};

static void *
shorty_main(void *arg)
{
	struct shorty *sh = arg;
	struct pollfd p = { .fd = sh->lfd, .events = POLLIN };
	char buf[64];

	if (poll(&p, 1, 2000) == 1) {
		int fd = accept(sh->lfd, NULL, NULL);
		if (fd >= 0) {
			p = (struct pollfd){ .fd = fd, .events = POLLIN };
			if (poll(&p, 1, 2000) == 1 && read(fd, buf, sizeof(buf)) > 0 &&
			    send(fd, "\0\0", 2, MSG_NOSIGNAL) == 2)
				atomic_store(&sh->done, true);
			close(fd);
		}
	}
	return NULL;
}

START_TEST(test_client_short_reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct shorty sh;
	struct tsr_sbuf reply;
	pthread_t th;
	char path[256], err[512] = "", want[512];
	int status;

	tmp_path(path, sizeof(path), "short.asok");
	sh.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	atomic_store(&sh.done, false);
	ck_assert_int_ge(sh.lfd, 0);
	memcpy(sun.sun_path, path, strlen(path));
	ck_assert_int_eq(bind(sh.lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(sh.lfd, 4), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, shorty_main, &sh), 0);

	tsr_sbuf_init(&reply);
	ck_assert_int_eq(tsr_asok_request(path, "help", REQ_TIMEOUT_MS, &status,
					  &reply, err, sizeof(err)), -EBADMSG);
	pthread_join(th, NULL);
	ck_assert(atomic_load(&sh.done));
	snprintf(want, sizeof(want),
		 "admin socket %s: reply is shorter than its 4-byte status", path);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(reply.len, 0);
	close(sh.lfd);
	unlink(path);
	tsr_sbuf_release(&reply);
}
END_TEST

static Suite *
asok_suite(void)
{
	Suite *s = suite_create("asok");
	TCase *cmd = tcase_create("commands");
	TCase *lim = tcase_create("limits");
	TCase *file = tcase_create("socket file");

	tcase_add_test(cmd, test_help);
	tcase_add_test(cmd, test_longest_prefix);
	tcase_add_test(cmd, test_register_duplicate);
	tcase_add_test(cmd, test_prefix_with_tab);
	tcase_add_test(cmd, test_unknown_command);
	tcase_add_test(cmd, test_handler_error);
	tcase_add_test(cmd, test_big_reply);
	suite_add_tcase(s, cmd);

	tcase_add_test(lim, test_request_too_long);
	tcase_add_test(lim, test_request_at_limit);
	tcase_add_test(lim, test_nul_in_request);
	tcase_add_test(lim, test_client_hangs_up_before_reply);
	tcase_add_test(lim, test_max_clients);
	tcase_add_test(lim, test_concurrent_clients);
	suite_add_tcase(s, lim);

	tcase_add_test(file, test_stale_socket_replaced);
	tcase_add_test(file, test_live_socket_refused);
	tcase_add_test(file, test_non_socket_file_kept);
	tcase_add_test(file, test_path_too_long);
	tcase_add_test(file, test_destroy_removes_socket);
	tcase_add_test(file, test_client_missing_socket);
	tcase_add_test(file, test_client_timeout);
	tcase_add_test(file, test_client_short_reply);
	suite_add_tcase(s, file);
	return s;
}

int
main(void)
{
	const char *base = getenv("TMPDIR");
	char err[512];
	SRunner *sr;
	int failed;

	/* socket paths must fit in sun_path: fall back to /tmp */
	if (base == NULL || *base == '\0' || strlen(base) > 40)
		base = "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/tsr-test-asok.XXXXXX", base);
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	/* the server's warnings go to a file the tests can read */
	snprintf(logpath, sizeof(logpath), "%s/asok.log", tmpdir);
	if (tsr_log_open(logpath, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return EXIT_FAILURE;
	}
	sr = srunner_create(asok_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tsr_log_close();
	tu_rm_rf(tmpdir);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
