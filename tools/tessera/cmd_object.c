/* cmd_object.c — `tessera object put|get|stat|rm|ls`: objects of a pool,
 * through the object client library (tessera/client.h). */
#include "cli.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/client.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (4u << 20)             /* what one operation moves */

static void
object_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera object put POOL NAME [FILE]\n"
		"       tessera object get POOL NAME [FILE]\n"
		"       tessera object stat POOL NAME [--format plain|json]\n"
		"       tessera object rm POOL NAME\n"
		"       tessera object ls POOL [--format plain|json]\n"
		"\n"
		"The objects of a pool, read and written through the object client\n"
		"library as any program would (the rados put/get/ls of this system).\n"
		"\n"
		"  put    store FILE (standard input when FILE is - or absent) as the\n"
		"         object NAME, replacing what it held.  Up to 4 MiB it is one\n"
		"         atomic write; a larger file goes 4 MiB at a time, and a reader\n"
		"         may see it half written until put returns.\n"
		"  get    write the object to FILE (standard output when - or absent)\n"
		"  stat   its size, modification time and version\n"
		"  rm     remove it\n"
		"  ls     the names of the pool's objects, one a line\n"
		"\n"
		"Options:\n"
		"  -c, --conf FILE     the cluster's configuration ($TESSERA_CONF,\n"
		"                      default /etc/tessera/tessera.conf)\n"
		"  -n, --name NAME     the client to act as ($TESSERA_NAME, default\n"
		"                      client.admin): its key comes from the keyring the\n"
		"                      configuration names\n"
		"      --timeout MS    how long to wait for the monitors at connect\n"
		"                      (default 15000); operations wait client_op_timeout\n"
		"      --format FMT    plain (default) or json, for stat and ls\n"
		"\n"
		"Exit status: 0 done, 1 failed (the message says why: ENOENT when the\n"
		"object or pool does not exist), 2 usage error.\n");
}

struct oopts {
	const char *conf, *who;
	uint64_t timeout_ms;
	bool json;
	int nargs;
	char *args[4];
};

static int
parse(int argc, char **argv, struct oopts *o)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->conf = getenv("TESSERA_CONF");
	o->who = getenv("TESSERA_NAME") ? getenv("TESSERA_NAME") : "client.admin";
	o->timeout_ms = 15000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->conf = optarg;
			break;
		case 'n':
			o->who = optarg;
			break;
		case 't':
			if (cli_parse_uint("object", NULL, "--timeout", optarg, 1, 3600000,
					   &o->timeout_ms) < 0)
				return CLI_USAGE;
			break;
		case 'f':
			if (cli_parse_format(optarg, &o->json) < 0)
				return CLI_USAGE;
			break;
		case 'h':
			object_help(stdout);
			return -1;
		default:
			return cli_bad_option("object", NULL, c, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (o->nargs == 4)
			return cli_usage_err("object", NULL, "too many arguments (\"%s\")",
					     argv[i]);
		o->args[o->nargs++] = argv[i];
	}
	return 0;
}

static int
do_put(struct tsr_client *c, int64_t pool, const char *name, const char *path)
{
	int fd = path == NULL || strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = malloc(CHUNK);
	uint64_t off = 0;
	int rc = 0, first = 1;

	if (fd < 0 || buf == NULL) {
		rc = cli_fail("object", "put", "%s: %s", path, strerror(buf ? errno : ENOMEM));
		free(buf);
		return rc;
	}
	for (;;) {
		size_t n = 0;
		ssize_t r = 0;
		struct tsr_op *op;
		while (n < CHUNK && (r = read(fd, buf + n, CHUNK - n)) > 0)
			n += (size_t)r;
		if (r < 0) {
			rc = cli_fail("object", "put", "reading %s: %s", path ? path : "stdin",
				      strerror(errno));
			break;
		}
		if (n == 0 && !first)
			break;
		if ((op = tsr_op_create()) == NULL) {
			rc = cli_fail("object", "put", "out of memory");
			break;
		}
		if (first)
			tsr_op_write_full(op, buf, n);
		else
			tsr_op_write(op, off, buf, n);
		int orc = tsr_op_run(c, pool, name, strlen(name), op, NULL);
		if (orc < 0)
			rc = cli_fail("object", "put", "%s: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
		if (rc)
			break;
		off += n;
		first = 0;
		if (n < CHUNK)
			break;
	}
	if (fd > 0)
		close(fd);
	free(buf);
	return rc;
}

static int
write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
do_get(struct tsr_client *c, int64_t pool, const char *name, const char *path)
{
	int to_stdout = path == NULL || strcmp(path, "-") == 0;
	int fd = to_stdout ? 1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t *buf = malloc(CHUNK);
	uint64_t off = 0, size = 0;
	struct tsr_op *op;
	int rc = 0;

	if (fd < 0 || buf == NULL) {
		rc = cli_fail("object", "get", "%s: %s", path, strerror(buf ? errno : ENOMEM));
		free(buf);
		return rc;
	}
	if ((op = tsr_op_create()) == NULL) {
		rc = cli_fail("object", "get", "out of memory");
		goto out;
	}
	tsr_op_stat(op, &size, NULL, NULL);
	if (tsr_op_run(c, pool, name, strlen(name), op, NULL) < 0)
		rc = cli_fail("object", "get", "%s: %s", name, tsr_op_why(op));
	tsr_op_destroy(op);
	while (rc == 0 && off < size) {
		uint64_t got = 0;
		if ((op = tsr_op_create()) == NULL) {
			rc = cli_fail("object", "get", "out of memory");
			break;
		}
		tsr_op_read(op, off, CHUNK, buf, &got, NULL);
		if (tsr_op_run(c, pool, name, strlen(name), op, NULL) < 0)
			rc = cli_fail("object", "get", "%s at %" PRIu64 ": %s", name, off,
				      tsr_op_why(op));
		tsr_op_destroy(op);
		if (rc)
			break;
		if (got == 0)
			break; /* it shrank meanwhile */
		if (write_all(fd, buf, got) < 0) {
			rc = cli_fail("object", "get", "writing %s: %s", to_stdout ? "stdout" : path,
				      strerror(errno));
			break;
		}
		off += got;
	}
out:
	if (!to_stdout && close(fd) < 0 && rc == 0)
		rc = cli_fail("object", "get", "%s: %s", path, strerror(errno));
	free(buf);
	return rc;
}

static int
do_stat(struct tsr_client *c, int64_t pool, const char *name, bool json)
{
	struct tsr_op *op = tsr_op_create();
	struct tsr_objver ver;
	uint64_t size = 0, mtime = 0;
	int rc;

	if (op == NULL)
		return cli_fail("object", "stat", "out of memory");
	tsr_op_stat(op, &size, &mtime, NULL);
	if ((rc = tsr_op_run(c, pool, name, strlen(name), op, &ver)) < 0) {
		rc = cli_fail("object", "stat", "%s: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
		return rc;
	}
	tsr_op_destroy(op);
	if (json)
		printf("{\"name\": \"%s\", \"size\": %" PRIu64 ", \"mtime_ns\": %" PRIu64
		       ", \"version\": \"%" PRIu64 "'%" PRIu64 "\"}\n", name, size, mtime,
		       ver.epoch, ver.ver);
	else
		printf("%s size %" PRIu64 " mtime %" PRIu64 ".%09" PRIu64 " version %" PRIu64
		       "'%" PRIu64 "\n", name, size, mtime / 1000000000u, mtime % 1000000000u,
		       ver.epoch, ver.ver);
	return 0;
}

static int
do_rm(struct tsr_client *c, int64_t pool, const char *name)
{
	struct tsr_op *op = tsr_op_create();
	int rc = 0;

	if (op == NULL)
		return cli_fail("object", "rm", "out of memory");
	tsr_op_remove(op);
	if (tsr_op_run(c, pool, name, strlen(name), op, NULL) < 0)
		rc = cli_fail("object", "rm", "%s: %s", name, tsr_op_why(op));
	tsr_op_destroy(op);
	return rc;
}

struct ls_ctx {
	bool json;
	uint64_t n;
};

/* A JSON string of bytes (as they are, control characters escaped). */
static void
json_bytes(const void *p, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = ((const unsigned char *)p)[i];
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static int
print_name(void *arg, const void *name, size_t len)
{
	struct ls_ctx *l = arg;

	if (l->json) {
		printf("%s", l->n ? ", " : "");
		json_bytes(name, len);
	} else {
		fwrite(name, 1, len, stdout);
		putchar('\n');
	}
	l->n++;
	return 0;
}

static int
do_ls(struct tsr_client *c, int64_t pool, bool json)
{
	struct tsr_list_cursor *cur = calloc(1, sizeof(*cur));
	struct ls_ctx l = { json, 0 };
	int rc;

	if (cur == NULL)
		return cli_fail("object", "ls", "out of memory");
	if (json)
		printf("[");
	rc = tsr_client_list(c, pool, cur, 0, print_name, &l);
	if (json)
		printf("]\n");
	free(cur);
	if (rc < 0)
		return cli_fail("object", "ls", "%s", tsr_client_why());
	return 0;
}

static int
object_run(int argc, char **argv)
{
	static const char *const subs[] = { "put", "get", "stat", "rm", "ls" };
	static const int need[] = { 2, 2, 2, 2, 1 }, most[] = { 3, 3, 2, 2, 1 };
	struct tsr_client *c = NULL;
	struct oopts o;
	int64_t pool;
	int rc, k;

	if ((rc = parse(argc, argv, &o)) != 0)
		return rc < 0 ? CLI_OK : rc;
	if (o.nargs == 0)
		return cli_usage_err("object", NULL, "which: put, get, stat, rm or ls?");
	for (k = 0; k < 5 && strcmp(o.args[0], subs[k]) != 0; k++)
		;
	if (k == 5)
		return cli_usage_err("object", NULL, "\"%s\" is not one of put, get, stat, "
				     "rm, ls", o.args[0]);
	if (o.nargs - 1 < need[k] || o.nargs - 1 > most[k])
		return cli_usage_err("object", subs[k], "needs %s", need[k] == 1 ? "POOL"
				     : most[k] == 3 ? "POOL NAME [FILE]" : "POOL NAME");
	if (need[k] == 2 && o.args[2][0] == '\0')
		return cli_usage_err("object", subs[k], "an empty object name");
	if ((rc = cli_client_pool("object", subs[k], o.conf, o.who, o.timeout_ms, o.args[1],
				  &c, &pool)) != 0)
		return rc;
	switch (k) {
	case 0: rc = do_put(c, pool, o.args[2], o.nargs > 3 ? o.args[3] : NULL); break;
	case 1: rc = do_get(c, pool, o.args[2], o.nargs > 3 ? o.args[3] : NULL); break;
	case 2: rc = do_stat(c, pool, o.args[2], o.json); break;
	case 3: rc = do_rm(c, pool, o.args[2]); break;
	default: rc = do_ls(c, pool, o.json); break;
	}
	fflush(stdout);
	tsr_client_shutdown(c);
	return rc;
}

/* ---- tessera pg scrub|deep-scrub|repair ---------------------------------------- */

static void
scrub_help_text(FILE *f, const char *which)
{
	fprintf(f,
		"Usage: tessera pg %s POOL.PG [--max-wait SECONDS] [--format plain|json]\n"
		"\n", which);
	fprintf(f,
		"  pg scrub       compare the copies of every object of the PG:\n"
		"                 versions, sizes, attributes and omaps\n"
		"  pg deep-scrub  the same, and their data, read whole (CRC32C)\n"
		"  pg repair      a deep scrub that rebuilds each bad copy from the\n"
		"                 authoritative one (the newest version, then the copies\n"
		"                 that agree most, the primary's on a tie)\n"
		"\n"
		"POOL is the pool's name or number, PG the PG number in hexadecimal\n"
		"(as pg dump shows it: 1.1f).  The PG's primary runs the scrub; the\n"
		"command waits for it and prints the objects compared and each\n"
		"inconsistent object with what differs on which OSD.  The PG must be\n"
		"active+clean.  What the last scrub found shows in pg query and, while\n"
		"objects are inconsistent, in health (PG_DAMAGED).\n"
		"\n"
		"Options:\n"
		"  -c, --conf FILE       the cluster's configuration ($TESSERA_CONF)\n"
		"  -n, --name NAME       the client to act as (default client.admin)\n"
		"      --timeout MS      how long to wait for the monitors at connect\n"
		"                        (default 15000)\n"
		"      --max-wait SECONDS  how long to wait for the scrub (default 3600)\n"
		"      --format FMT      plain (default) or json\n"
		"\n"
		"Exit status: 0 the scrub is done and no object is left inconsistent, 1\n"
		"inconsistent objects remain (repair them with tessera pg repair) or\n"
		"the scrub could not run (the message says why: EBUSY when the PG is\n"
		"not active+clean), 2 usage error.\n");
}

static void
scrub_help(FILE *f)
{
	scrub_help_text(f, "scrub");
}

static void
deep_scrub_help(FILE *f)
{
	scrub_help_text(f, "deep-scrub");
}

static void
repair_help(FILE *f)
{
	scrub_help_text(f, "repair");
}

static int
scrub_run(int argc, char **argv, const char *which, unsigned flags)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-wait", required_argument, NULL, 'w' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *conf = getenv("TESSERA_CONF"), *pgid = NULL, *dot;
	const char *who = getenv("TESSERA_NAME") ? getenv("TESSERA_NAME") : "client.admin";
	uint64_t timeout_ms = 15000, wait_s = 3600, pgnum;
	struct tsr_scrub_report r;
	struct tsr_client *c = NULL;
	char poolname[256], *end;
	bool json = false;
	int64_t pool;
	int ch, rc;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "c:n:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'n': who = optarg; break;
		case 't':
			if (cli_parse_uint("pg", which, "--timeout", optarg, 1, 3600000,
					   &timeout_ms) < 0)
				return CLI_USAGE;
			break;
		case 'w':
			if (cli_parse_uint("pg", which, "--max-wait", optarg, 1, 7 * 86400,
					   &wait_s) < 0)
				return CLI_USAGE;
			break;
		case 'f':
			if (cli_parse_format(optarg, &json) < 0)
				return CLI_USAGE;
			break;
		case 'h':
			scrub_help_text(stdout, which);
			return CLI_OK;
		default:
			return cli_bad_option("pg", which, ch, argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage_err("pg", which, "needs one PG, as POOL.PG (1.1f)");
	pgid = argv[optind];
	dot = strrchr(pgid, '.');
	if (dot == NULL || dot == pgid || (size_t)(dot - pgid) >= sizeof(poolname) ||
	    dot[1] == '\0')
		return cli_usage_err("pg", which, "\"%s\" is no PG: POOL.PG, the PG in "
				     "hexadecimal (1.1f)", pgid);
	errno = 0;
	pgnum = strtoull(dot + 1, &end, 16);
	if (errno || *end || pgnum > UINT32_MAX)
		return cli_usage_err("pg", which, "\"%s\" is no PG number (hexadecimal)",
				     dot + 1);
	memcpy(poolname, pgid, (size_t)(dot - pgid));
	poolname[dot - pgid] = '\0';
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	{
		char err[1024];
		if (tsr_client_connect(conf, who, timeout_ms, &c, err, sizeof(err)) < 0)
			return cli_fail("pg", which, "%s", err);
	}
	pool = strtoll(poolname, &end, 10);
	if (*end != '\0' || pool <= 0) {
		if (tsr_client_pool(c, poolname, &pool) < 0) {
			rc = cli_fail("pg", which, "%s", tsr_client_why());
			tsr_client_shutdown(c);
			return rc;
		}
	}
	rc = tsr_pg_scrub(c, pool, (uint32_t)pgnum, flags, wait_s * 1000, &r);
	tsr_client_shutdown(c);
	if (rc < 0)
		return cli_fail("pg", which, "%s", tsr_client_why());
	if (json) {
		printf("{\"pg\": \"%" PRId64 ".%" PRIx64 "\", \"scrub\": \"%s\", \"objects\": %"
		       PRIu64 ", \"inconsistent\": %u, \"repaired\": %u, \"named_all\": %s, "
		       "\"objects_inconsistent\": [", pool, pgnum, which, r.objects, r.errors,
		       r.repaired, r.bad.more ? "false" : "true");
		for (size_t i = 0; i < r.bad.n; i++) {
			printf("%s{\"name\": ", i ? ", " : "");
			json_bytes(r.bad.kv[i].key, r.bad.kv[i].key_len);
			printf(", \"what\": ");
			json_bytes(r.bad.kv[i].val, r.bad.kv[i].val_len);
			printf("}");
		}
		printf("]}\n");
	} else {
		printf("pg %" PRId64 ".%" PRIx64 ": %s done: %" PRIu64 " objects, %u inconsistent, "
		       "%u repaired\n", pool, pgnum, which, r.objects, r.errors, r.repaired);
		for (size_t i = 0; i < r.bad.n; i++) {
			const uint8_t *k = r.bad.kv[i].key;
			printf("  ");
			for (size_t j = 0; j < r.bad.kv[i].key_len; j++)
				printf(k[j] >= 0x20 && k[j] < 0x7f && k[j] != '\\' ? "%c"
				       : "\\x%02x", k[j]);
			printf(": %.*s\n", (int)r.bad.kv[i].val_len,
			       (const char *)r.bad.kv[i].val);
		}
		if (r.bad.more)
			printf("  (and more: pg query and the primary's log name them all)\n");
	}
	fflush(stdout);
	rc = r.errors ? cli_fail("pg", which, "%u objects are inconsistent: tessera pg "
				 "repair %s repairs them", r.errors, pgid) : CLI_OK;
	tsr_kvs_free(&r.bad);
	return rc;
}

static int
scrub_cmd(int argc, char **argv)
{
	return scrub_run(argc, argv, "scrub", 0);
}

static int
deep_scrub_cmd(int argc, char **argv)
{
	return scrub_run(argc, argv, "deep-scrub", TSR_SCRUB_DEEP);
}

static int
repair_cmd(int argc, char **argv)
{
	return scrub_run(argc, argv, "repair", TSR_SCRUB_DEEP | TSR_SCRUB_REPAIR);
}

const struct cli_cmd cli_object_cmds[] = {
	{ "object", "put|get|stat|rm|ls POOL [NAME [FILE]]",
	  "store, fetch, list and remove the objects of a pool", object_run, object_help },
	{ "pg scrub", "POOL.PG", "compare a PG's copies (versions, sizes, attributes)",
	  scrub_cmd, scrub_help },
	{ "pg deep-scrub", "POOL.PG", "compare a PG's copies, their data too",
	  deep_scrub_cmd, deep_scrub_help },
	{ "pg repair", "POOL.PG", "deep-scrub a PG and rebuild its bad copies",
	  repair_cmd, repair_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
