/* cmd_msgr.c — `tessera msgr bench`: the messenger on loopback against a
 * plain TCP socket measured in the same run. */
#include "cli.h"
#include "log/log.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define T_PING (TSR_MSG_USER + 1)
#define T_PONG (TSR_MSG_USER + 2)
#define T_BLOB (TSR_MSG_USER + 3)
#define BLOB (4u << 20)
#define STREAM_INFLIGHT 4

static const char *const G = "msgr";

static void
msgr_bench_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera msgr bench [--seconds S] [--inline] [--format plain|json]\n"
		"Measure the messenger on loopback (127.0.0.1) against plain TCP, in one\n"
		"process and one run.  Two messengers (an \"osd\" listening, a client\n"
		"connecting, lossless) exchange:\n"
		"  rtt-64B      64-byte messages bounced back, 1 and 16 in flight -> round trips/s\n"
		"  rtt-4KiB     4 KiB data payloads bounced back, 1 and 16 in flight\n"
		"  stream-4MiB  4 MiB data payloads one way, %u in flight    -> MiB/s\n"
		"Each is set against a raw-TCP baseline written for the benchmark: a\n"
		"blocking socket ping-pong (write N bytes, read N back) at 1 in flight,\n"
		"and a blocking stream of 4 MiB writes.  The 16-in-flight rows are also\n"
		"given as a multiple of the messenger's own 1-in-flight rate.\n"
		"\n"
		"      --seconds S     time per workload (default 3)\n"
		"      --inline        run the benchmark's handlers on the I/O threads\n"
		"                      (default: the dispatch threads, as daemons do)\n"
		"      --format F      plain (default) or json\n",
		STREAM_INFLIGHT);
}

/* ---- The messenger side -------------------------------------------------------*/

struct mb {
	atomic_uint_fast64_t rts;      /* round trips done */
	atomic_uint_fast64_t bytes;    /* stream bytes received */
	atomic_int stop;
	size_t payload;                /* rtt: data bytes per ping (0: front) */
	uint8_t *buf;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int inflight;                  /* stream messages not yet released */
	int err;
};

static void
pong_back(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct tsr_msg *r = tsr_msg_new(T_PONG, m->front, m->front_len);

	(void)arg;
	if (r && m->data_len) {
		/* hand the received buffer over to the reply */
		struct iovec iov = m->data_iov[0];
		m->owns_data = 0;
		tsr_msg_give_data(r, iov.iov_base, iov.iov_len,
				  m->data_cap ? m->data_cap : iov.iov_len);
	}
	tsr_msg_free(m, 0);
	if (r)
		tsr_conn_send(c, r, TSR_SEND_NOWAIT);
}

static int
send_ping(struct tsr_conn *c, struct mb *b)
{
	static const uint8_t front[64];
	struct tsr_msg *m = tsr_msg_new(T_PING, front, b->payload ? 8 : sizeof(front));

	if (m == NULL)
		return -ENOMEM;
	if (b->payload) {
		struct iovec iov = { b->buf, b->payload };
		tsr_msg_set_data(m, &iov, 1, NULL, NULL);
	}
	return tsr_conn_send(c, m, TSR_SEND_NOWAIT);
}

/* A pong: count it and send the next ping (closed loop). */
static void
on_pong(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct mb *b = arg;

	tsr_msg_free(m, 0);
	atomic_fetch_add(&b->rts, 1);
	if (!atomic_load(&b->stop) && send_ping(c, b) < 0)
		b->err = 1;
}

static void
on_blob(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct mb *b = arg;

	(void)c;
	atomic_fetch_add(&b->bytes, m->data_len);
	tsr_msg_free(m, 0);
}

static void
blob_released(void *arg, int result)
{
	struct mb *b = arg;

	pthread_mutex_lock(&b->mu);
	b->inflight--;
	if (result < 0)
		b->err = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Round trips per second with `inflight` pings bouncing. */
static double
msgr_rtt(struct tsr_conn *c, struct mb *b, size_t payload, int inflight,
	 double secs)
{
	uint64_t t0, n0, n1;

	b->payload = payload;
	atomic_store(&b->stop, 0);
	/* warm up, then measure */
	for (int i = 0; i < inflight; i++)
		if (send_ping(c, b) < 0)
			return -1;
	sleep_s(0.2);
	n0 = atomic_load(&b->rts);
	t0 = tsr_mono_ns();
	sleep_s(secs);
	n1 = atomic_load(&b->rts);
	double el = (double)(tsr_mono_ns() - t0) / 1e9;
	atomic_store(&b->stop, 1);
	sleep_s(0.2); /* the last ones drain */
	return b->err ? -1 : (double)(n1 - n0) / el;
}

static double
msgr_stream(struct tsr_conn *c, struct mb *b, double secs)
{
	uint64_t t0, b0, b1, end;

	b->inflight = 0;
	t0 = tsr_mono_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	b0 = atomic_load(&b->bytes);
	while (tsr_mono_ns() < end && !b->err) {
		struct tsr_msg *m = tsr_msg_new(T_BLOB, "s", 1);
		struct iovec iov = { b->buf, BLOB };

		pthread_mutex_lock(&b->mu);
		while (b->inflight >= STREAM_INFLIGHT)
			pthread_cond_wait(&b->cv, &b->mu);
		b->inflight++;
		pthread_mutex_unlock(&b->mu);
		if (m == NULL)
			return -1;
		tsr_msg_set_data(m, &iov, 1, blob_released, b);
		if (tsr_conn_send(c, m, 0) < 0)
			return -1;
	}
	b1 = atomic_load(&b->bytes);
	double el = (double)(tsr_mono_ns() - t0) / 1e9;
	pthread_mutex_lock(&b->mu);
	while (b->inflight > 0)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
	return b->err ? -1 : (double)(b1 - b0) / el / (1 << 20);
}

/* ---- Raw TCP -----------------------------------------------------------------*/

struct raw {
	int lfd, fd;
	size_t n;          /* ping-pong size, or 0: stream sink */
	uint8_t *buf;
	atomic_uint_fast64_t bytes;
};

static int
full(int fd, void *p, size_t n, int wr)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = wr ? write(fd, b, n) : read(fd, b, n);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void *
raw_server(void *arg)
{
	struct raw *r = arg;
	int one = 1;

	r->fd = accept(r->lfd, NULL, NULL);
	if (r->fd < 0)
		return NULL;
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (;;) {
		if (r->n) {
			if (full(r->fd, r->buf, r->n, 0) < 0 || full(r->fd, r->buf, r->n, 1) < 0)
				break;
		} else {
			ssize_t k = read(r->fd, r->buf, BLOB);
			if (k <= 0)
				break;
			atomic_fetch_add(&r->bytes, (uint64_t)k);
		}
	}
	close(r->fd);
	return NULL;
}

/* Raw round trips/s (n > 0) or stream MiB/s (n == 0). */
static double
raw_run(size_t n, double secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct raw r = { .n = n };
	pthread_t thr;
	uint8_t *buf = malloc(BLOB);
	int fd, one = 1;
	uint64_t count = 0, t0, end;
	double el;

	r.buf = malloc(BLOB);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (buf == NULL || r.buf == NULL || r.lfd < 0 ||
	    bind(r.lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(r.lfd, 1) < 0 ||
	    getsockname(r.lfd, (struct sockaddr *)&a, &al) < 0 ||
	    pthread_create(&thr, NULL, raw_server, &r) != 0) {
		free(buf);
		free(r.buf);
		if (r.lfd >= 0)
			close(r.lfd);
		return -1;
	}
	memset(buf, 0x5a, BLOB);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t0 = tsr_mono_ns();
		end = t0 + (uint64_t)(secs * 1e9);
		while (tsr_mono_ns() < end) {
			if (n) {
				if (full(fd, buf, n, 1) < 0 || full(fd, buf, n, 0) < 0)
					break;
				count++;
			} else if (full(fd, buf, BLOB, 1) < 0) {
				break;
			}
		}
		el = (double)(tsr_mono_ns() - t0) / 1e9;
		shutdown(fd, SHUT_WR);
	} else {
		el = 0;
	}
	if (fd >= 0)
		close(fd);
	pthread_join(thr, NULL);
	close(r.lfd);
	free(buf);
	free(r.buf);
	if (el <= 0)
		return -1;
	return n ? (double)count / el
		 : (double)atomic_load(&r.bytes) / el / (1 << 20);
}

/* ---- The command ---------------------------------------------------------------*/

struct row {
	const char *workload, *unit;
	int inflight;
	double ours, raw; /* raw < 0: none (set against our qd1) */
	double base;      /* our qd1 figure for the 16-in-flight rows */
};

static int
msgr_bench_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "inline", no_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double secs = 3;
	bool json = false, inl = false;
	struct tsr_msgr_opts o;
	struct tsr_msgr *srv = NULL, *cli = NULL;
	struct tsr_conn *c = NULL;
	struct mb b;
	struct row rows[5];
	char err[256];
	int ch, rc = CLI_FAIL;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': {
			char *end;
			errno = 0;
			secs = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(secs > 0) || secs > 3600)
				return cli_usage_err(G, "bench", "--seconds takes a number "
						     "in (0, 3600], not '%s'", optarg);
			break;
		}
		case 'i': inl = true; break;
		case 'f':
			if (cli_parse_format(optarg, &json) < 0)
				return CLI_USAGE;
			break;
		case 'h':
			msgr_bench_help(stdout);
			return CLI_OK;
		default:
			return cli_bad_option(G, "bench", ch, argv);
		}
	}
	if (optind < argc)
		return cli_usage_err(G, "bench", "unexpected argument '%s'", argv[optind]);
	signal(SIGPIPE, SIG_IGN);

	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	b.buf = malloc(BLOB);
	if (b.buf == NULL)
		return cli_fail(G, "bench", "out of memory");
	for (size_t i = 0; i < BLOB; i++)
		b.buf[i] = (uint8_t)(i * 2654435761u >> 11);

	memset(&o, 0, sizeof(o));
	memcpy(o.fsid, "msgr-bench-fsid", 16);
	o.entity_type = TSR_ENTITY_OSD;
	o.entity_id = 0;
	o.bind = "127.0.0.1:0";
	tsr_msgr_opts_default(&o);
	if (tsr_msgr_create(&o, NULL, &srv, err, sizeof(err)) < 0) {
		cli_fail(G, "bench", "server messenger: %s", err);
		goto out;
	}
	o.bind = NULL;
	o.entity_id = 1;
	if (tsr_msgr_create(&o, NULL, &cli, err, sizeof(err)) < 0) {
		cli_fail(G, "bench", "client messenger: %s", err);
		goto out;
	}
	unsigned fl = inl ? TSR_MSGR_INLINE : 0;
	tsr_msgr_register(srv, T_PING, pong_back, NULL, fl);
	tsr_msgr_register(srv, T_BLOB, on_blob, &b, fl);
	tsr_msgr_register(cli, T_PONG, on_pong, &b, fl);
	tsr_msgr_start(srv);
	if (tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c) < 0) {
		cli_fail(G, "bench", "connect to %s failed", tsr_msgr_addr(srv));
		goto out;
	}

	struct { const char *name; size_t payload; } rt[2] = {
		{ "rtt-64B", 0 }, { "rtt-4KiB", 4096 } };
	int nr = 0;
	for (int k = 0; k < 2; k++) {
		if (!json)
			fprintf(stderr, "tessera msgr bench: %s ...\n", rt[k].name);
		double q1 = msgr_rtt(c, &b, rt[k].payload, 1, secs);
		double q16 = msgr_rtt(c, &b, rt[k].payload, 16, secs);
		double raw = raw_run(rt[k].payload ? rt[k].payload + 8 : 64, secs);
		if (q1 < 0 || q16 < 0 || raw < 0) {
			cli_fail(G, "bench", "%s: a run failed", rt[k].name);
			goto out;
		}
		rows[nr++] = (struct row){ rt[k].name, "rt/s", 1, q1, raw, 0 };
		rows[nr++] = (struct row){ rt[k].name, "rt/s", 16, q16, -1, q1 };
	}
	if (!json)
		fprintf(stderr, "tessera msgr bench: stream-4MiB ...\n");
	{
		double s = msgr_stream(c, &b, secs);
		double raw = raw_run(0, secs);
		if (s < 0 || raw < 0) {
			cli_fail(G, "bench", "stream: a run failed");
			goto out;
		}
		rows[nr++] = (struct row){ "stream-4MiB", "MiB/s", STREAM_INFLIGHT, s, raw, 0 };
	}

	if (json) {
		printf("{\"seconds\": %g, \"inline\": %s, \"rows\": [", secs,
		       inl ? "true" : "false");
		for (int i = 0; i < nr; i++) {
			printf("%s{\"workload\": \"%s\", \"inflight\": %d, \"unit\": "
			       "\"%s\", \"tessera\": %.1f, ", i ? ", " : "",
			       rows[i].workload, rows[i].inflight, rows[i].unit,
			       rows[i].ours);
			if (rows[i].raw < 0)
				printf("\"raw_tcp\": null, \"of_1_in_flight\": %.3f}",
				       rows[i].ours / rows[i].base);
			else
				printf("\"raw_tcp\": %.1f, \"ratio\": %.3f}", rows[i].raw,
				       rows[i].ours / rows[i].raw);
		}
		printf("]}\n");
	} else {
		printf("messenger: 127.0.0.1, lossless, handlers on %s threads, "
		       "%g s per run\n", inl ? "I/O" : "dispatch", secs);
		printf("raw TCP:   blocking socket, TCP_NODELAY, 1 in flight\n\n");
		printf("%-12s %8s %-6s %12s %12s %8s\n", "workload", "inflight", "unit",
		       "tessera", "raw-tcp", "ratio");
		for (int i = 0; i < nr; i++) {
			if (rows[i].raw < 0)
				printf("%-12s %8d %-6s %12.1f %12s %7.2fx (of 1 in flight)\n",
				       rows[i].workload, rows[i].inflight, rows[i].unit,
				       rows[i].ours, "-", rows[i].ours / rows[i].base);
			else
				printf("%-12s %8d %-6s %12.1f %12.1f %8.2f\n", rows[i].workload,
				       rows[i].inflight, rows[i].unit, rows[i].ours,
				       rows[i].raw, rows[i].ours / rows[i].raw);
		}
	}
	rc = CLI_OK;
out:
	if (c)
		tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	free(b.buf);
	pthread_mutex_destroy(&b.mu);
	pthread_cond_destroy(&b.cv);
	return rc;
}

const struct cli_cmd cli_msgr_cmds[] = {
	{ "msgr bench", "[--seconds S] [--inline] [--format F]",
	  "measure the messenger on loopback against raw TCP", msgr_bench_run,
	  msgr_bench_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
