/* cmd_bench.c — `tessera bench`: a load of whole-object writes or reads on
 * a pool through the object client library, with ops in flight together,
 * measured (the rados bench of this system). */
#include "cli.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/client.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INFLIGHT 1024u
#define MAX_SIZE (64u << 20)

static void
bench_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera bench POOL SECONDS write|seq|rand [options]\n"
		"       tessera bench POOL 0 cleanup [--run-name NAME]\n"
		"\n"
		"Measure the cluster with whole objects, several operations in flight\n"
		"at once, through the object client library.\n"
		"\n"
		"  write    write new objects of --block-size bytes for SECONDS; they\n"
		"           are removed at the end unless --no-cleanup\n"
		"  seq      read back, in order, the objects a write run left\n"
		"           (--no-cleanup), for SECONDS or until each was read once\n"
		"  rand     read those objects in random order for SECONDS\n"
		"  cleanup  remove what a write run left\n"
		"\n"
		"It prints a line a second (operations started and finished, MiB/s\n"
		"now and on average, the mean latency), then the totals: MiB/s, IOPS\n"
		"and latency p50, p99 and max.  A read that returns other bytes than\n"
		"were written is counted as an error and fails the run.\n"
		"\n"
		"Options:\n"
		"  -b, --block-size N   bytes per object (default 4194304, at most 64 MiB)\n"
		"  -t, --concurrent N   operations in flight (default 16, at most 1024)\n"
		"      --no-cleanup     keep what a write run wrote (for seq and rand)\n"
		"      --run-name NAME  the objects' prefix (default bench_<host>_<pid>\n"
		"                       for write; seq, rand and cleanup find the last\n"
		"                       write run's name in the pool)\n"
		"      --format FMT     plain (default) or json for the totals\n"
		"  -c, --conf FILE      the cluster's configuration ($TESSERA_CONF)\n"
		"  -n, --name NAME      the client to act as (default client.admin)\n"
		"\n"
		"Exit status: 0 done, 1 failed (an operation failed or a read returned\n"
		"the wrong bytes), 2 usage error.\n");
}

enum { M_WRITE, M_SEQ, M_RAND, M_CLEANUP };

struct bench;

struct slot {
	struct bench *b;
	struct tsr_op *op;
	uint64_t obj;
	uint64_t start_ns;
	uint64_t got;
	uint8_t *buf;
};

struct bench {
	struct tsr_client *c;
	int64_t pool;
	int mode;
	char run[128];
	uint64_t size, inflight_max;
	uint64_t deadline_ns;
	uint64_t nobjs;              /* seq, rand: objects there are */
	uint64_t next;               /* the next object to start */
	uint64_t started, finished, errors, bad_data;
	uint64_t inflight;
	uint64_t *lat;               /* ns, one per operation finished */
	size_t nlat, caplat;
	uint64_t sec_finished;       /* finished at the last progress line */
	uint8_t *pattern;            /* what an object holds (its number in it) */
	unsigned rnd;
	char why[512];
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void
obj_name(const struct bench *b, uint64_t i, char *out, size_t len)
{
	snprintf(out, len, "%s_%" PRIu64, b->run, i);
}

/* Object i's bytes: the pattern with its number in the first 8 bytes. */
static void
content(const struct bench *b, uint64_t i, uint8_t *out)
{
	memcpy(out, b->pattern, b->size);
	if (b->size >= 8)
		memcpy(out, &i, 8);
}

static void start_one(struct bench *b, struct slot *s);

static void
finished(void *arg, int result, const struct tsr_objver *ver)
{
	struct slot *s = arg;
	struct bench *b = s->b;
	uint64_t now = tsr_now_ns();
	int wrong = 0;

	(void)ver;
	if (result == 0 && b->mode != M_WRITE) {
		uint64_t i;
		memcpy(&i, s->buf, 8);
		wrong = s->got != b->size || i != s->obj ||
			(b->size > 8 && memcmp(s->buf + 8, b->pattern + 8, b->size - 8) != 0);
	}
	pthread_mutex_lock(&b->mu);
	b->finished++;
	b->inflight--;
	if (result < 0 || wrong) {
		b->errors++;
		b->bad_data += wrong;
		if (b->why[0] == '\0') {
			char name[200];
			obj_name(b, s->obj, name, sizeof(name));
			snprintf(b->why, sizeof(b->why), "%s: %s", name,
				 wrong ? "read other bytes than were written" : tsr_op_why(s->op));
		}
	}
	if (b->nlat == b->caplat) {
		size_t cap = b->caplat ? 2 * b->caplat : 4096;
		uint64_t *v = realloc(b->lat, cap * sizeof(*v));
		if (v) {
			b->lat = v;
			b->caplat = cap;
		}
	}
	if (b->nlat < b->caplat)
		b->lat[b->nlat++] = now - s->start_ns;
	tsr_op_destroy(s->op);
	s->op = NULL;
	start_one(b, s);
	/* the main thread wakes at its own pace to report; waking it for
	 * every operation cost the machine under test a wake-up each */
	if (b->inflight == 0)
		pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* Start the next operation in slot s, if the run goes on (under b->mu). */
static void
start_one(struct bench *b, struct slot *s)
{
	char name[200];

	if (tsr_now_ns() >= b->deadline_ns || b->errors)
		return;
	if (b->mode == M_SEQ && b->next >= b->nobjs)
		return;
	if (b->mode == M_RAND)
		s->obj = (uint64_t)rand_r(&b->rnd) % b->nobjs;
	else
		s->obj = b->next++;
	if ((s->op = tsr_op_create()) == NULL) {
		b->errors++;
		snprintf(b->why, sizeof(b->why), "out of memory");
		return;
	}
	obj_name(b, s->obj, name, sizeof(name));
	if (b->mode == M_WRITE) {
		content(b, s->obj, s->buf);
		tsr_op_write_full(s->op, s->buf, b->size);
	} else {
		s->got = 0;
		tsr_op_read(s->op, 0, b->size, s->buf, &s->got, NULL);
	}
	s->start_ns = tsr_now_ns();
	b->started++;
	b->inflight++;
	/* (the library answers on its own thread: not under b->mu there) */
	pthread_mutex_unlock(&b->mu);
	int rc = tsr_op_submit(b->c, b->pool, name, strlen(name), s->op, finished, s);
	pthread_mutex_lock(&b->mu);
	if (rc < 0) {
		b->inflight--;
		b->errors++;
		snprintf(b->why, sizeof(b->why), "%s: %s", name, tsr_op_why(s->op));
		tsr_op_destroy(s->op);
		s->op = NULL;
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The metadata object a write run leaves: "RUN SIZE COUNT". */
#define META "bench_last_run"

static int
run_op(struct tsr_client *c, int64_t pool, const char *name, struct tsr_op *op, char *why,
       size_t whylen)
{
	int rc = tsr_op_run(c, pool, name, strlen(name), op, NULL);

	if (rc < 0)
		snprintf(why, whylen, "%s: %s", name, tsr_op_why(op));
	tsr_op_destroy(op);
	return rc;
}

static int
remove_run(struct bench *b, uint64_t n)
{
	char name[200];
	int rc = 0;

	for (uint64_t i = 0; i < n && rc == 0; i++) {
		struct tsr_op *op = tsr_op_create();
		obj_name(b, i, name, sizeof(name));
		tsr_op_remove(op);
		rc = run_op(b->c, b->pool, name, op, b->why, sizeof(b->why));
		if (rc == -ENOENT)
			rc = 0;
	}
	if (rc == 0) {
		struct tsr_op *op = tsr_op_create();
		tsr_op_remove(op);
		rc = run_op(b->c, b->pool, META, op, b->why, sizeof(b->why));
		if (rc == -ENOENT)
			rc = 0;
	}
	return rc;
}

static int
read_meta(struct bench *b, const char *want_run)
{
	char buf[256];
	uint64_t got = 0, size = 0, n = 0;
	struct tsr_op *op = tsr_op_create();
	char run[128];
	int rc;

	tsr_op_read(op, 0, sizeof(buf) - 1, buf, &got, NULL);
	if ((rc = run_op(b->c, b->pool, META, op, b->why, sizeof(b->why))) < 0) {
		if (rc == -ENOENT)
			snprintf(b->why, sizeof(b->why), "no write run left objects in this pool "
				 "(run `tessera bench POOL SECONDS write --no-cleanup` first)");
		return rc;
	}
	buf[got] = '\0';
	if (sscanf(buf, "%127s %" SCNu64 " %" SCNu64, run, &size, &n) != 3 || size == 0 ||
	    size > MAX_SIZE) {
		snprintf(b->why, sizeof(b->why), "%s holds \"%s\", not a run", META, buf);
		return -EINVAL;
	}
	if (want_run && strcmp(want_run, run) != 0) {
		snprintf(b->why, sizeof(b->why), "the last write run here is %s, not %s", run,
			 want_run);
		return -ENOENT;
	}
	snprintf(b->run, sizeof(b->run), "%s", run);
	b->size = size;
	b->nobjs = n;
	return 0;
}

static const char *const modes[] = { "write", "seq", "rand", "cleanup" };

static int
bench_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "block-size", required_argument, NULL, 'b' },
		{ "concurrent", required_argument, NULL, 't' },
		{ "no-cleanup", no_argument, NULL, 'N' },
		{ "run-name", required_argument, NULL, 'r' },
		{ "format", required_argument, NULL, 'f' },
		{ "conf", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *conf = getenv("TESSERA_CONF");
	const char *who = getenv("TESSERA_NAME") ? getenv("TESSERA_NAME") : "client.admin";
	const char *run_name = NULL;
	uint64_t size = 4u << 20, conc = 16, secs = 0;
	bool json = false, cleanup = true;
	struct bench b;
	struct slot *slots;
	int opt, rc = CLI_OK;
	char *args[3];
	int nargs = 0;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "b:t:c:n:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (cli_parse_uint("bench", NULL, "--block-size", optarg, 8, MAX_SIZE,
					   &size) < 0)
				return CLI_USAGE;
			break;
		case 't':
			if (cli_parse_uint("bench", NULL, "--concurrent", optarg, 1, MAX_INFLIGHT,
					   &conc) < 0)
				return CLI_USAGE;
			break;
		case 'N': cleanup = false; break;
		case 'r': run_name = optarg; break;
		case 'f':
			if (cli_parse_format(optarg, &json) < 0)
				return CLI_USAGE;
			break;
		case 'c': conf = optarg; break;
		case 'n': who = optarg; break;
		case 'h': bench_help(stdout); return CLI_OK;
		default: return cli_bad_option("bench", NULL, opt, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (nargs == 3)
			return cli_usage_err("bench", NULL, "too many arguments (\"%s\")", argv[i]);
		args[nargs++] = argv[i];
	}
	if (nargs != 3)
		return cli_usage_err("bench", NULL, "needs POOL SECONDS MODE");
	if (cli_parse_uint("bench", NULL, "SECONDS", args[1], 0, 86400, &secs) < 0)
		return CLI_USAGE;
	memset(&b, 0, sizeof(b));
	for (b.mode = 0; b.mode < 4 && strcmp(args[2], modes[b.mode]) != 0; b.mode++)
		;
	if (b.mode == 4)
		return cli_usage_err("bench", NULL, "\"%s\" is not write, seq, rand or cleanup",
				     args[2]);
	if (b.mode != M_CLEANUP && secs == 0)
		return cli_usage_err("bench", NULL, "SECONDS must be at least 1");
	if (run_name && (strlen(run_name) > 100 || run_name[0] == '\0'))
		return cli_usage_err("bench", NULL, "--run-name: 1 to 100 characters");

	if ((rc = cli_client_pool("bench", NULL, conf, who, 15000, args[0], &b.c, &b.pool)) != 0)
		return rc;
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	b.rnd = (unsigned)getpid();
	if (b.mode == M_WRITE) {
		char host[64] = "host";
		gethostname(host, sizeof(host) - 1);
		if (run_name)
			snprintf(b.run, sizeof(b.run), "%s", run_name);
		else
			snprintf(b.run, sizeof(b.run), "bench_%.40s_%d", host, (int)getpid());
		b.size = size;
	} else if (read_meta(&b, run_name) < 0) {
		rc = cli_fail("bench", modes[b.mode], "%s", b.why);
		tsr_client_shutdown(b.c);
		return rc;
	}
	if (b.mode == M_CLEANUP) {
		if (remove_run(&b, b.nobjs) < 0)
			rc = cli_fail("bench", "cleanup", "%s", b.why);
		else
			printf("removed %" PRIu64 " objects of run %s\n", b.nobjs, b.run);
		tsr_client_shutdown(b.c);
		return rc;
	}
	if (b.mode != M_WRITE && b.nobjs == 0) {
		tsr_client_shutdown(b.c);
		return cli_fail("bench", modes[b.mode], "run %s wrote no object", b.run);
	}
	b.inflight_max = conc;
	b.pattern = malloc(b.size);
	slots = calloc(conc, sizeof(*slots));
	for (uint64_t k = 0; b.pattern && k < b.size; k++)
		b.pattern[k] = (uint8_t)(k * 2654435761u >> 13);
	for (uint64_t i = 0; slots && i < conc; i++) {
		slots[i].b = &b;
		if ((slots[i].buf = malloc(b.size)) == NULL)
			break;
	}
	if (b.pattern == NULL || slots == NULL || slots[conc - 1].buf == NULL) {
		tsr_client_shutdown(b.c);
		return cli_fail("bench", NULL, "out of memory for %" PRIu64 " buffers of %"
				PRIu64 " bytes", conc, b.size);
	}
	if (!json)
		printf("%s %" PRIu64 " s: %" PRIu64 " bytes per object, %" PRIu64 " in flight, "
		       "objects %s_N\n%5s %8s %8s %10s %10s %10s\n", modes[b.mode], secs, b.size,
		       conc, b.run, "sec", "started", "done", "MiB/s", "avg MiB/s", "lat ms");

	uint64_t t0 = tsr_now_ns();
	b.deadline_ns = t0 + secs * 1000000000u;
	pthread_mutex_lock(&b.mu);
	for (uint64_t i = 0; i < conc; i++)
		start_one(&b, &slots[i]);
	for (uint64_t sec = 1; b.inflight > 0; sec++) {
		uint64_t at = t0 + sec * 1000000000u;
		/* to the next second mark of the monotonic clock, in waits of
		 * 100 ms on the condition */
		while (b.inflight > 0 && tsr_now_ns() < at) {
			struct timespec rt;
			clock_gettime(CLOCK_REALTIME, &rt);
			rt.tv_nsec += 100 * 1000000;
			if (rt.tv_nsec >= 1000000000) {
				rt.tv_sec++;
				rt.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&b.cv, &b.mu, &rt);
		}
		if (!json && sec <= secs + 60) {
			double el = (double)(tsr_now_ns() - t0) / 1e9;
			double avg_lat = 0;
			size_t from = b.nlat - (b.finished - b.sec_finished) < b.nlat
					      ? b.nlat - (b.finished - b.sec_finished) : 0;
			for (size_t i = from; i < b.nlat; i++)
				avg_lat += (double)b.lat[i];
			if (b.nlat > from)
				avg_lat /= (double)(b.nlat - from) * 1e6;
			printf("%5" PRIu64 " %8" PRIu64 " %8" PRIu64 " %10.1f %10.1f %10.2f\n", sec,
			       b.started, b.finished,
			       (double)(b.finished - b.sec_finished) * (double)b.size / 1048576.0,
			       (double)b.finished * (double)b.size / 1048576.0 / el, avg_lat);
			fflush(stdout);
		}
		b.sec_finished = b.finished;
		if (sec > secs + 600)
			break; /* the client's own timeout ended them long since */
	}
	pthread_mutex_unlock(&b.mu);
	double el = (double)(tsr_now_ns() - t0) / 1e9;
	qsort(b.lat, b.nlat, sizeof(b.lat[0]), cmp_u64);
	double p50 = b.nlat ? (double)b.lat[b.nlat / 2] / 1e6 : 0;
	double p99 = b.nlat ? (double)b.lat[(b.nlat * 99) / 100 < b.nlat ? (b.nlat * 99) / 100
									: b.nlat - 1] / 1e6 : 0;
	double mx = b.nlat ? (double)b.lat[b.nlat - 1] / 1e6 : 0;
	double mibs = (double)(b.finished - b.errors) * (double)b.size / 1048576.0 / el;
	double iops = (double)(b.finished - b.errors) / el;
	if (json)
		printf("{\"mode\": \"%s\", \"run\": \"%s\", \"seconds\": %.3f, \"block_size\": %"
		       PRIu64 ", \"concurrent\": %" PRIu64 ", \"ops\": %" PRIu64 ", \"errors\": %"
		       PRIu64 ", \"mib_per_s\": %.2f, \"iops\": %.1f, \"lat_p50_ms\": %.3f, "
		       "\"lat_p99_ms\": %.3f, \"lat_max_ms\": %.3f}\n", modes[b.mode], b.run, el,
		       b.size, conc, b.finished, b.errors, mibs, iops, p50, p99, mx);
	else
		printf("total: %" PRIu64 " ops in %.2f s, %" PRIu64 " errors\n"
		       "bandwidth: %.2f MiB/s\niops: %.1f\nlatency ms: p50 %.3f, p99 %.3f, max "
		       "%.3f\n", b.finished, el, b.errors, mibs, iops, p50, p99, mx);
	if (b.errors)
		rc = cli_fail("bench", modes[b.mode], "%" PRIu64 " operations failed; the first: "
			      "%s", b.errors, b.why);
	if (b.mode == M_WRITE && rc == CLI_OK) {
		if (cleanup) {
			if (remove_run(&b, b.next) < 0)
				rc = cli_fail("bench", "write", "cleaning up: %s", b.why);
		} else {
			char meta[256];
			int n = snprintf(meta, sizeof(meta), "%s %" PRIu64 " %" PRIu64 "\n", b.run,
					 b.size, b.next);
			struct tsr_op *op = tsr_op_create();
			tsr_op_write_full(op, meta, (size_t)n);
			if (run_op(b.c, b.pool, META, op, b.why, sizeof(b.why)) < 0)
				rc = cli_fail("bench", "write", "%s", b.why);
			else if (!json)
				printf("left %" PRIu64 " objects (run %s) for seq and rand\n", b.next,
				       b.run);
		}
	}
	tsr_client_shutdown(b.c);
	for (uint64_t i = 0; i < conc; i++)
		free(slots[i].buf);
	free(slots);
	free(b.pattern);
	free(b.lat);
	pthread_mutex_destroy(&b.mu);
	pthread_cond_destroy(&b.cv);
	return rc;
}

const struct cli_cmd cli_bench_cmds[] = {
	{ "bench", "POOL SECONDS write|seq|rand|cleanup [options]",
	  "measure the cluster: whole-object writes and reads, many in flight", bench_run,
	  bench_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
