/* testd.c — tsr-testd, a small daemon built on the shared life cycle, for
 * the integration tests of everything every real daemon inherits: options,
 * configuration sections, detaching, pid file, admin socket, signals,
 * logging, and a plugin chosen and configured in the cluster file.
 *
 * Its own section type is "testd":
 *
 *     testd = { greeting = "hi"; tick = "100ms";
 *               partitioner = { plugin = "good"; salt = 7; }; };
 *
 * Admin commands beyond the shared ones:
 *   ping                 {"pong": GREETING}
 *   where INO NRANKS     the configured partitioner's rank for a directory
 */
#include "daemon/daemon.h"
#include "event/loop.h"
#include "log/log.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/partitioner.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct tsr_conf_opt testd_options[] = {
	{ { .name = "greeting", .type = TSR_OPT_STRING, .def = "hello",
	    .help = "what ping answers" }, TSR_SEC_EXTRA, 0 },
	{ { .name = "tick", .type = TSR_OPT_DURATION, .def = "1s", .min = "10ms",
	    .max = "1h", .help = "interval of the status tick counter" },
	  TSR_SEC_EXTRA, 0 },
	{ { .name = "partitioner", .help = "partitioner plugin to consult" },
	  TSR_SEC_EXTRA, TSR_KIND_PARTITIONER },
	{ { .name = NULL }, 0, 0 }
};

struct testd {
	struct tsr_daemon *d;
	struct tsr_core_host host;
	struct tsr_instance *part;
	uint64_t tick_ns;
	uint64_t timer;
	uint64_t ticks;
};

static void
tick(void *arg)
{
	struct testd *t = arg;

	t->ticks++;
	tsr_loop_timer_add(tsr_daemon_loop(t->d), t->tick_ns, tick, t, &t->timer);
}

static int
cmd_ping(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct testd *t = arg;

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{\"pong\": ");
	tsr_sbuf_json_str(out, tsr_conf_str(tsr_daemon_conf(t->d), "greeting"));
	tsr_sbuf_printf(out, "}\n");
	return 0;
}

static int
cmd_where(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct testd *t = arg;
	char *e1, *e2;

	if (t->part == NULL) {
		tsr_sbuf_printf(out, "no partitioner is configured\n");
		return -ENOENT;
	}
	if (argc != 2) {
		tsr_sbuf_printf(out, "usage: where INO NRANKS\n");
		return -EINVAL;
	}
	unsigned long long ino = strtoull(argv[0], &e1, 10);
	unsigned long nranks = strtoul(argv[1], &e2, 10);
	if (*e1 || *e2 || nranks == 0 || nranks > 1024) {
		tsr_sbuf_printf(out, "INO and NRANKS must be numbers, NRANKS in 1..1024\n");
		return -EINVAL;
	}
	const struct tsr_partitioner_ops *ops = tsr_instance_ops(t->part);
	struct tsr_part_dir dir = { .df = { .ino = ino }, .pin = -1, .parent_rank = -1 };
	int32_t r = -1;
	int rc = ops->where(tsr_instance_handle(t->part), &dir, (uint32_t)nranks, &r);
	if (rc < 0) {
		tsr_sbuf_printf(out, "partitioner: %s\n", strerror(-rc));
		return rc;
	}
	tsr_sbuf_printf(out, "{\"ino\": %llu, \"rank\": %d}\n", ino, r);
	return 0;
}

static void
testd_status(struct tsr_daemon *d, struct tsr_sbuf *out)
{
	struct testd *t = tsr_daemon_priv(d);

	tsr_sbuf_printf(out, ",\n  \"ticks\": %llu,\n  \"partitioner\": ",
			(unsigned long long)t->ticks);
	if (t->part)
		tsr_sbuf_json_str(out, tsr_plugin_desc(tsr_instance_plugin(t->part))->name);
	else
		tsr_sbuf_printf(out, "null");
}

static int
testd_start(struct tsr_daemon *d, char *err, size_t errlen)
{
	struct tsr_conf *conf = tsr_daemon_conf(d);
	struct testd *t = tsr_xcalloc(1, sizeof(*t));
	const struct tsr_srcval *srcs;
	const char *plugin;
	size_t nsrc;
	char instance[96];
	int rc;

	t->d = d;
	tsr_daemon_set_priv(d, t);
	snprintf(instance, sizeof(instance), "%s/partitioner", tsr_daemon_name(d));
	tsr_core_host_init(&t->host, instance, conf, tsr_daemon_loop(d));
	if (tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc, NULL, 0) == 0) {
		const struct tsr_plugin *p =
			tsr_registry_find(tsr_daemon_registry(d), TSR_KIND_PARTITIONER, plugin);
		if (p == NULL)
			return tsr_errf(err, errlen, -ENOENT,
					"%s: partitioner plugin '%s' was not found in %s",
					tsr_conf_path(conf), plugin,
					tsr_conf_str(conf, "plugin_dir"));
		rc = tsr_instance_create(p, &t->host.host, srcs, nsrc, &t->part, err,
					 errlen);
		if (rc < 0)
			return rc;
	}
	t->tick_ns = (uint64_t)tsr_conf_int(conf, "tick") * 1000000;
	tsr_loop_timer_add(tsr_daemon_loop(d), t->tick_ns, tick, t, &t->timer);
	if (tsr_daemon_asok(d)) {
		tsr_asok_register(tsr_daemon_asok(d), "ping", "answer with the greeting",
				  cmd_ping, t);
		tsr_asok_register(tsr_daemon_asok(d), "where",
				  "where INO NRANKS: the partitioner's rank for a directory",
				  cmd_where, t);
	}
	return 0;
}

static void
testd_stop(struct tsr_daemon *d)
{
	struct testd *t = tsr_daemon_priv(d);

	if (t == NULL)
		return;
	tsr_loop_timer_cancel(tsr_daemon_loop(d), t->timer);
	tsr_instance_destroy(t->part);
	free(t);
	tsr_daemon_set_priv(d, NULL);
}

static const struct tsr_daemon_def testd_def = {
	.type = "testd",
	.summary = "Tessera test daemon: exercises the shared daemon life cycle.",
	.options = testd_options,
	.start = testd_start,
	.stop = testd_stop,
	.status = testd_status,
};

int
main(int argc, char **argv)
{
	return tsr_daemon_main(argc, argv, &testd_def);
}
