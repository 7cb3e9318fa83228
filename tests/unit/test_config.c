/* test_config.c — cluster config files: loading, section resolution, errors with file:line, $variables, plugin groups, check_all; and what a file must not do to a daemon: be a directory or a FIFO, be too large to parse in time, echo raw bytes into messages, or leave an unknown $variable as text. */
#include "config/config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 2048
#define PATHLEN 512

/* One directory per run, made by main(); every test writes its files here
 * and unlinks them when it ends.  main() sweeps whatever a failed test left
 * behind and removes the directory. */
static char tmpdir[64];

/* Write text to tmpdir/name and return the full path in path. */
static void
write_conf(const char *name, const char *text, char path[PATHLEN])
{
	FILE *f;

	snprintf(path, PATHLEN, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot create %s", path);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

static struct tsr_conf *
load_ok(const char *path)
{
	struct tsr_conf *conf = NULL;
	char err[ERRLEN] = "";

	ck_assert_msg(tsr_conf_load(path, &conf, err, sizeof(err)) == 0,
		      "load %s: %s", path, err);
	ck_assert_ptr_nonnull(conf);
	ck_assert_str_eq(tsr_conf_path(conf), path);
	return conf;
}

static void
resolve_ok(struct tsr_conf *conf, const char *type, const char *id,
	   const struct tsr_conf_opt *extra)
{
	char err[ERRLEN] = "";

	ck_assert_msg(tsr_conf_resolve(conf, type, id, extra, err,
				       sizeof(err)) == 0,
		      "resolve %s-%s: %s", type, id ? id : "", err);
}

/* Assert that resolving type-id fails with rc and exactly the message
 * path followed by rest (rest begins ":LINE: ..."). */
static void
resolve_fails(struct tsr_conf *conf, const char *type, const char *id,
	      const struct tsr_conf_opt *extra, int rc, const char *path,
	      const char *rest)
{
	char err[ERRLEN] = "", want[ERRLEN];
	int got;

	snprintf(want, sizeof(want), "%s%s", path, rest);
	got = tsr_conf_resolve(conf, type, id, extra, err, sizeof(err));
	ck_assert_msg(got == rc, "resolve %s-%s: rc %d, want %d (%s)", type,
		      id ? id : "", got, rc, err);
	ck_assert_str_eq(err, want);
}

/* Expect key to resolve to value (after $-expansion) from where; where
 * "default" is literal, otherwise a line number in path. */
static void
expect(struct tsr_conf *conf, const char *path, const char *key,
       const char *value, int line)
{
	char where[PATHLEN + 16], text[256];

	if (line == 0)
		snprintf(where, sizeof(where), "default");
	else
		snprintf(where, sizeof(where), "%s:%d", path, line);
	ck_assert_msg(strcmp(tsr_conf_str(conf, key), value) == 0,
		      "%s = \"%s\", want \"%s\"", key, tsr_conf_str(conf, key),
		      value);
	ck_assert_msg(strcmp(tsr_conf_where(conf, key), where) == 0,
		      "%s from %s, want %s", key, tsr_conf_where(conf, key),
		      where);
	ck_assert_int_eq(tsr_conf_get_text(conf, key, text, sizeof(text)), 0);
	ck_assert_str_eq(text, value);
}

/* A made-up daemon type with its own scalar options and a plugin group. */
static const struct tsr_conf_opt testd_opts[] = {
	{ { .name = "partitioner", .type = TSR_OPT_STRING,
	    .help = "how testd splits its namespace" },
	  TSR_SEC_EXTRA, TSR_KIND_PARTITIONER },
	{ { .name = "workers", .type = TSR_OPT_INT, .def = "4", .min = "1",
	    .max = "64", .help = "worker threads" },
	  TSR_SEC_EXTRA, 0 },
	{ { .name = "tick", .type = TSR_OPT_DURATION, .def = "1s" },
	  TSR_SEC_EXTRA, 0 },
	{ { .name = "verbose", .type = TSR_OPT_BOOL, .def = "false" },
	  TSR_SEC_EXTRA, 0 },
	{ { .name = "ratio", .type = TSR_OPT_DOUBLE, .def = "0.25" },
	  TSR_SEC_EXTRA, 0 },
	{ { .name = NULL }, 0, 0 },
};

/* ---- Loading --------------------------------------------------------------*/

START_TEST(test_load_syntax_error)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;

	write_conf("syntax.conf",
		   "global = {\n"
		   "  log_level = \"info\";\n"
		   "  run_dir = ;\n"
		   "};\n",
		   path);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want), "%s:3: syntax error", path);
	ck_assert_str_eq(err, want);
	unlink(path);

	write_conf("dup.conf",
		   "osd = {\n"
		   "  log_level = \"info\";\n"
		   "  fsid = \"a\";\n"
		   "  log_level = \"debug\";\n"
		   "};\n",
		   path);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want), "%s:4: duplicate setting name", path);
	ck_assert_str_eq(err, want);
	unlink(path);
}
END_TEST

START_TEST(test_load_missing_file)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;

	snprintf(path, sizeof(path), "%s/does-not-exist.conf", tmpdir);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want),
		 "%s: cannot read configuration file: No such file or directory",
		 path);
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_load_string)
{
	struct tsr_conf *conf = NULL;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_conf_load_string("osd = {\n"
					      "  log_level = \"debug\";\n"
					      "};\n",
					      "inline.conf", &conf, err,
					      sizeof(err)),
			 0);
	ck_assert_str_eq(tsr_conf_path(conf), "inline.conf");
	resolve_ok(conf, "osd", "1", NULL);
	expect(conf, "inline.conf", "log_level", "debug", 2);
	tsr_conf_destroy(conf);

	conf = NULL;
	ck_assert_int_eq(tsr_conf_load_string("osd = {\n\n  = 3;\n};\n",
					      "inline.conf", &conf, err,
					      sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(conf);
	ck_assert_str_eq(err, "inline.conf:3: syntax error");
}
END_TEST

/* ---- Resolution -------------------------------------------------------------*/

static const char resolution_text[] =
	"global = {\n"                   /*  1 */
	"  log_level = \"warn\";\n"      /*  2 */
	"  run_dir = \"/g\";\n"          /*  3 */
	"  log_file = \"/g.log\";\n"     /*  4 */
	"  pid_file = \"/g.pid\";\n"     /*  5 */
	"};\n"                           /*  6 */
	"osd = {\n"                      /*  7 */
	"  log_level = \"debug\";\n"     /*  8 */
	"  run_dir = \"/t\";\n"          /*  9 */
	"  log_file = \"/t.log\";\n"     /* 10 */
	"};\n"                           /* 11 */
	"osd-3 = {\n"                    /* 12 */
	"  log_level = \"trace\";\n"     /* 13 */
	"  run_dir = \"/x\";\n"          /* 14 */
	"};\n"                           /* 15 */
	"osd-4 = {\n"                    /* 16 */
	"  log_level = \"error\";\n"     /* 17 */
	"  fsid = \"other\";\n"          /* 18 */
	"  admin_socket = \"/o.asok\";\n" /* 19 */
	"};\n"                           /* 20 */
	"mon = {\n"                      /* 21 */
	"  log_file = \"/mon.log\";\n"   /* 22 */
	"};\n";                          /* 23 */

/* The same settings with the sections in the opposite order: specificity,
 * not position in the file, decides. */
static const char resolution_reversed[] =
	"mon = {\n"                      /*  1 */
	"  log_file = \"/mon.log\";\n"   /*  2 */
	"};\n"                           /*  3 */
	"osd-4 = {\n"                    /*  4 */
	"  log_level = \"error\";\n"     /*  5 */
	"  fsid = \"other\";\n"          /*  6 */
	"  admin_socket = \"/o.asok\";\n" /*  7 */
	"};\n"                           /*  8 */
	"osd-3 = {\n"                    /*  9 */
	"  log_level = \"trace\";\n"     /* 10 */
	"  run_dir = \"/x\";\n"          /* 11 */
	"};\n"                           /* 12 */
	"osd = {\n"                      /* 13 */
	"  log_level = \"debug\";\n"     /* 14 */
	"  run_dir = \"/t\";\n"          /* 15 */
	"  log_file = \"/t.log\";\n"     /* 16 */
	"};\n"                           /* 17 */
	"global = {\n"                   /* 18 */
	"  log_level = \"warn\";\n"      /* 19 */
	"  run_dir = \"/g\";\n"          /* 20 */
	"  log_file = \"/g.log\";\n"     /* 21 */
	"  pid_file = \"/g.pid\";\n"     /* 22 */
	"};\n";                          /* 23 */

/* Line numbers of each setting in the two files above. */
static const struct layout {
	const char *text;
	int g_level, g_run, g_log, g_pid;
	int t_level, t_run, t_log;
	int i3_level, i3_run;
	int i4_level, i4_fsid, i4_asok;
	int mon_log;
} layouts[] = {
	{ resolution_text, 2, 3, 4, 5, 8, 9, 10, 13, 14, 17, 18, 19, 22 },
	{ resolution_reversed, 19, 20, 21, 22, 14, 15, 16, 10, 11, 5, 6, 7, 2 },
};

START_TEST(test_resolution_order)
{
	const char *pd = tsr_conf_default_plugin_dir();
	char path[PATHLEN];
	struct tsr_conf *conf;
	const struct layout L = layouts[_i];

	write_conf(_i ? "order-rev.conf" : "order.conf", L.text, path);
	conf = load_ok(path);

	/* osd-3: TYPE-ID, then TYPE, then global, then the default. */
	resolve_ok(conf, "osd", "3", NULL);
	expect(conf, path, "log_level", "trace", L.i3_level);
	expect(conf, path, "run_dir", "/x", L.i3_run);
	expect(conf, path, "log_file", "/t.log", L.t_log);
	expect(conf, path, "pid_file", "/g.pid", L.g_pid);
	expect(conf, path, "fsid", "", 0);
	expect(conf, path, "plugin_dir", pd, 0);
	/* osd-4's section must not leak into osd-3. */
	expect(conf, path, "admin_socket", "/x/osd-3.asok", 0);

	resolve_ok(conf, "osd", "4", NULL);
	expect(conf, path, "log_level", "error", L.i4_level);
	expect(conf, path, "fsid", "other", L.i4_fsid);
	expect(conf, path, "admin_socket", "/o.asok", L.i4_asok);
	expect(conf, path, "run_dir", "/t", L.t_run);
	expect(conf, path, "log_file", "/t.log", L.t_log);
	expect(conf, path, "pid_file", "/g.pid", L.g_pid);

	/* An OSD whose id has no section of its own. */
	resolve_ok(conf, "osd", "5", NULL);
	expect(conf, path, "log_level", "debug", L.t_level);
	expect(conf, path, "run_dir", "/t", L.t_run);
	expect(conf, path, "admin_socket", "/t/osd-5.asok", 0);
	expect(conf, path, "fsid", "", 0);

	/* A view without an id reads global and the type section only. */
	resolve_ok(conf, "osd", NULL, NULL);
	expect(conf, path, "log_level", "debug", L.t_level);
	expect(conf, path, "admin_socket", "/t/osd.asok", 0);

	resolve_ok(conf, "mon", "1", NULL);
	expect(conf, path, "log_level", "warn", L.g_level);
	expect(conf, path, "log_file", "/mon.log", L.mon_log);
	expect(conf, path, "run_dir", "/g", L.g_run);
	expect(conf, path, "pid_file", "/g.pid", L.g_pid);
	expect(conf, path, "admin_socket", "/g/mon-1.asok", 0);

	resolve_ok(conf, "client", NULL, NULL);
	expect(conf, path, "log_file", "/g.log", L.g_log);
	expect(conf, path, "log_level", "warn", L.g_level);

	/* Resolving again gives the same view (nothing left over). */
	resolve_ok(conf, "osd", "3", NULL);
	expect(conf, path, "log_level", "trace", L.i3_level);
	expect(conf, path, "fsid", "", 0);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_defaults_only)
{
	char path[PATHLEN];
	struct tsr_conf *conf;

	write_conf("empty.conf", "# nothing but a comment\n", path);
	conf = load_ok(path);
	resolve_ok(conf, "mds", "a", NULL);
	expect(conf, path, "log_level", "info", 0);
	expect(conf, path, "run_dir", "/run/tessera", 0);
	expect(conf, path, "admin_socket", "/run/tessera/mds-a.asok", 0);
	expect(conf, path, "pid_file", "/run/tessera/mds-a.pid", 0);
	expect(conf, path, "log_file", "", 0);
	expect(conf, path, "fsid", "", 0);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* ---- Errors in sections ---------------------------------------------------*/

START_TEST(test_unknown_key_own_section)
{
	char path[PATHLEN];
	struct tsr_conf *conf;

	write_conf("unknown-id.conf",
		   "osd-3 = {\n"
		   "  log_level = \"info\";\n"
		   "  log_levle = \"debug\";\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path,
		      ":3: section 'osd-3': unknown key 'log_levle' for a osd daemon");
	/* Another daemon's TYPE-ID section is not this daemon's business. */
	resolve_ok(conf, "osd", "4", NULL);
	resolve_ok(conf, "mon", "3", NULL);
	tsr_conf_destroy(conf);
	unlink(path);

	write_conf("unknown-type.conf",
		   "osd = {\n"
		   "  bogus = 1;\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path,
		      ":2: section 'osd': unknown key 'bogus' for a osd daemon");
	resolve_fails(conf, "osd", NULL, NULL, -EINVAL, path,
		      ":2: section 'osd': unknown key 'bogus' for a osd daemon");
	resolve_ok(conf, "mds", "0", NULL);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_unknown_key_global)
{
	char path[PATHLEN], buf[64];
	struct tsr_conf *conf;

	write_conf("unknown-global.conf",
		   "global = {\n"
		   "  run_dir = \"/x\";\n"
		   "  bogus = \"y\";\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	/* Without an extra table (the common case: mon, osd, tools). */
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path,
		      ":3: section 'global': unknown key 'bogus' for a osd daemon");
	resolve_fails(conf, "client", NULL, NULL, -EINVAL, path,
		      ":3: section 'global': unknown key 'bogus' for a client daemon");
	/* ... and with one: bogus is nobody's key. */
	resolve_fails(conf, "osd", "3", testd_opts, -EINVAL, path,
		      ":3: section 'global': unknown key 'bogus' for a osd daemon");
	tsr_conf_destroy(conf);
	unlink(path);

	/* A key of another daemon type in global is skipped by the daemons
	 * that know of it, and unknown to those that do not. */
	write_conf("global-testd.conf",
		   "global = {\n"
		   "  workers = 2;\n"
		   "  partitioner = { plugin = \"p\"; };\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "osd", "3", testd_opts);
	ck_assert_int_eq(tsr_conf_get_text(conf, "workers", buf, sizeof(buf)),
			 -ENOENT);
	resolve_ok(conf, "testd", "3", testd_opts);
	ck_assert_int_eq(tsr_conf_int(conf, "workers"), 2);
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path,
		      ":2: section 'global': unknown key 'workers' for a osd daemon");
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_unknown_section)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "global = {\n  log_level = \"info\";\n};\nosdd = {\n  log_level = \"debug\";\n};\n",
		  ":4: unknown section 'osdd'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)" },
		{ "osdd-3 = {\n};\n",
		  ":1: unknown section 'osdd-3'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)" },
		{ "\nosd- = {\n};\n",
		  ":2: unknown section 'osd-'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)" },
		{ "global-1 = {\n};\n",
		  ":1: unknown section 'global-1'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)" },
	};
	char path[PATHLEN];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct tsr_conf *conf;

		write_conf("section.conf", cases[k].text, path);
		conf = load_ok(path);
		/* Misspelt sections are errors for every daemon type. */
		resolve_fails(conf, "osd", "3", NULL, -EINVAL, path, cases[k].msg);
		resolve_fails(conf, "mon", NULL, NULL, -EINVAL, path, cases[k].msg);
		tsr_conf_destroy(conf);
		unlink(path);
	}
}
END_TEST

START_TEST(test_top_level_scalar)
{
	char path[PATHLEN];
	struct tsr_conf *conf;

	write_conf("scalar.conf",
		   "global = {\n"
		   "  log_level = \"info\";\n"
		   "};\n"
		   "log_level = \"debug\";\n",
		   path);
	conf = load_ok(path);
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path,
		      ":4: top-level setting 'log_level' is not a section; sections are groups named global, mon, osd, mds, client or TYPE-ID (e.g. osd-3 = { ... };)");
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_wrong_type_and_choices)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "osd = {\n  log_level = 5;\n};\n",
		  ":2: osd-3: option 'log_level': expected a string, got an integer" },
		{ "osd = {\n  fsid = \"x\";\n  log_level = \"loud\";\n};\n",
		  ":3: osd-3: option 'log_level': \"loud\" is not one of: error, warn, info, debug, trace" },
		{ "osd-3 = {\n  run_dir = true;\n};\n",
		  ":2: osd-3: option 'run_dir': expected a string, got a boolean" },
		{ "global = {\n  log_file = 1.5;\n};\n",
		  ":2: osd-3: option 'log_file': expected a string, got a floating-point number" },
		{ "global = {\n  pid_file = { a = 1; };\n};\n",
		  ":2: osd-3: option 'pid_file': expected a string, got a group or list" },
		{ "osd = {\n  log_level = [\"debug\"];\n};\n",
		  ":2: osd-3: option 'log_level': expected a string, got a group or list" },
	};
	char path[PATHLEN];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct tsr_conf *conf;

		write_conf("type.conf", cases[k].text, path);
		conf = load_ok(path);
		resolve_fails(conf, "osd", "3", NULL, -EINVAL, path, cases[k].msg);
		tsr_conf_destroy(conf);
		unlink(path);
	}
}
END_TEST

/* ---- $variables -------------------------------------------------------------*/

START_TEST(test_expansion)
{
	const char *pd = tsr_conf_default_plugin_dir();
	char path[PATHLEN], want[PATHLEN];
	struct tsr_conf *conf;
	const char *first;

	write_conf("expand.conf",
		   "global = {\n"
		   "  run_dir = \"/x\";\n"
		   "  log_file = \"${run_dir}/log-$type-$id\";\n"
		   "  fsid = \"${name}x ${type} $ $$id $5 end$\";\n"
		   "};\n"
		   "mon = {\n"
		   "  run_dir = \"$plugin_dir/run\";\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "osd", "3", NULL);
	expect(conf, path, "admin_socket", "/x/osd-3.asok", 0);
	expect(conf, path, "pid_file", "/x/osd-3.pid", 0);
	expect(conf, path, "log_file", "/x/log-osd-3", 3);
	expect(conf, path, "fsid", "osd-3x osd $ $id $5 end$", 4);
	/* The expansion is made once and kept. */
	first = tsr_conf_str(conf, "admin_socket");
	ck_assert_ptr_eq(tsr_conf_str(conf, "admin_socket"), first);

	resolve_ok(conf, "client", NULL, NULL);
	expect(conf, path, "admin_socket", "/x/client.asok", 0);
	expect(conf, path, "log_file", "/x/log-client-", 3);

	/* Two levels: admin_socket -> run_dir -> plugin_dir. */
	resolve_ok(conf, "mon", "b", NULL);
	snprintf(want, sizeof(want), "%s/run", pd);
	expect(conf, path, "run_dir", want, 7);
	snprintf(want, sizeof(want), "%s/run/mon-b.asok", pd);
	expect(conf, path, "admin_socket", want, 0);
	snprintf(want, sizeof(want), "%s/run/log-mon-b", pd);
	expect(conf, path, "log_file", want, 3);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* Variables that refer to themselves must neither hang nor crash: the
 * daemon refuses the file, naming the line and the option. */
static const struct {
	const char *text;
	const char *reason;
} loops[] = {
	{ "global = {\n  run_dir = \"$run_dir/a\";\n};\n",
	  ":2: option 'run_dir': cannot expand \"$run_dir/a\": variables refer to each other" },
	{ "global = {\n  log_file = \"$pid_file\";\n  pid_file = \"${log_file}.pid\";\n};\n",
	  ":3: option 'pid_file': cannot expand \"${log_file}.pid\": variables refer to each other" },
	{ "global = {\n  fsid = \"$fsid$fsid$fsid$fsid$fsid$fsid$fsid$fsid\";\n};\n",
	  ":2: option 'fsid': cannot expand \"$fsid$fsid$fsid$fsid$fsid$fsid$fsid$fsid\": variables refer to each other" },
};

START_TEST(test_expansion_loops)
{
	char path[PATHLEN];
	struct tsr_conf *conf;

	write_conf("loop.conf", loops[_i].text, path);
	conf = load_ok(path);
	resolve_fails(conf, "osd", "3", NULL, -EINVAL, path, loops[_i].reason);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* ---- Accessors ----------------------------------------------------------------*/

START_TEST(test_get_text_and_where)
{
	char path[PATHLEN], buf[64];
	struct tsr_conf *conf;

	write_conf("text.conf",
		   "osd-3 = {\n"
		   "  log_level = \"trace\";\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	/* Nothing resolved yet. */
	ck_assert_int_eq(tsr_conf_get_text(conf, "log_level", buf, sizeof(buf)),
			 -ENOENT);
	ck_assert_str_eq(tsr_conf_where(conf, "log_level"), "default");

	resolve_ok(conf, "osd", "3", NULL);
	ck_assert_int_eq(tsr_conf_get_text(conf, "no_such_key", buf, sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(tsr_conf_get_text(conf, "log_level", buf, 5), -ERANGE);
	ck_assert_int_eq(tsr_conf_get_text(conf, "log_level", buf, 1), -ERANGE);
	ck_assert_int_eq(tsr_conf_get_text(conf, "log_level", buf, 0), -ERANGE);
	memset(buf, 'Z', sizeof(buf));
	ck_assert_int_eq(tsr_conf_get_text(conf, "log_level", buf, 6), 0);
	ck_assert_str_eq(buf, "trace");
	/* An empty value fits a one-byte buffer. */
	ck_assert_int_eq(tsr_conf_get_text(conf, "fsid", buf, 1), 0);
	ck_assert_str_eq(buf, "");
	/* The length that counts is the expanded one. */
	ck_assert_int_eq(tsr_conf_get_text(conf, "admin_socket", buf,
					   sizeof("/run/tessera/osd-3.asok") - 1),
			 -ERANGE);
	ck_assert_int_eq(tsr_conf_get_text(conf, "admin_socket", buf,
					   sizeof("/run/tessera/osd-3.asok")),
			 0);
	ck_assert_str_eq(buf, "/run/tessera/osd-3.asok");
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* What tsr_conf_foreach reported, in order. */
#define SEEN_MAX 64
struct seen {
	size_t n;
	char key[SEEN_MAX][64];
	char value[SEEN_MAX][256];
	char where[SEEN_MAX][PATHLEN + 16];
};

static void
collect(void *arg, const char *key, const char *value, const char *where)
{
	struct seen *s = arg;

	ck_assert_uint_lt(s->n, SEEN_MAX);
	snprintf(s->key[s->n], sizeof(s->key[0]), "%s", key);
	snprintf(s->value[s->n], sizeof(s->value[0]), "%s", value);
	snprintf(s->where[s->n], sizeof(s->where[0]), "%s", where);
	s->n++;
}

static size_t
seen_find(const struct seen *s, const char *key)
{
	size_t found = SIZE_MAX;

	for (size_t k = 0; k < s->n; k++) {
		if (strcmp(s->key[k], key) != 0)
			continue;
		ck_assert_msg(found == SIZE_MAX, "%s visited twice", key);
		found = k;
	}
	ck_assert_msg(found != SIZE_MAX, "%s not visited", key);
	return found;
}

START_TEST(test_foreach)
{
	static struct seen s; /* large: keep it off the stack */
	const struct tsr_conf_opt *core = tsr_conf_core_options();
	char path[PATHLEN], where[PATHLEN + 16];
	struct tsr_conf *conf;
	size_t ncore = 0, nosd = 0, k;

	write_conf("foreach.conf",
		   "global = {\n"
		   "  run_dir = \"/x\";\n"
		   "};\n"
		   "osd-3 = {\n"
		   "  log_level = \"debug\";\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "osd", "3", NULL);
	memset(&s, 0, sizeof(s));
	tsr_conf_foreach(conf, collect, &s);
	for (; core[ncore].def.name != NULL && ncore < 128; ncore++)
		if (core[ncore].sections & TSR_SEC_OSD) {
			seen_find(&s, core[ncore].def.name);
			nosd++;
		}
	/* general (keyring among them), the messenger's ms_*, the monitors'
	 * mon_* (mon_osdmap_history, mon_osd_nearfull_ratio and
	 * mon_osd_full_ratio among them), the OSDs' own (osd_data, backend,
	 * backend_options, osd_addr, osd_heartbeat_interval and _grace,
	 * osd_beacon_interval, osd_map_keep, osd_op_shards,
	 * osd_pg_stats_interval, osd_full_ratio, osd_recovery_max_active,
	 * osd_recovery_max_bytes, osd_max_backfills, osd_backfill_window, osd_pg_log_max, osd_pg_queue_max,
	 * osd_scrub_interval, osd_deep_scrub_interval, osd_scrub_chunk_max,
	 * osd_max_scrubs, osd_scrub_auto_repair, osd_sched_batch), the
	 * clients' (client_op_timeout, client_mds_timeout, client_dirty_max,
	 * client_readahead_max, client_inject_dup: not an OSD's), the
	 * MDSs' (mds_addr, mds_metadata_pool, mds_data_pool,
	 * mds_journal_segment_size, mds_cache_max_entries,
	 * mds_session_timeout, mds_cap_revoke_timeout, mds_reconnect_timeout,
	 * mds_blocklist_duration, mds_writeback_interval) */
	ck_assert_uint_eq(ncore, 8 + 14 + 13 + 23 + 5 + 11);
	ck_assert_uint_eq(nosd, 8 + 14 + 1 + 23); /* mon_members, the OSDs' */
	ck_assert_uint_eq(s.n, nosd);

	k = seen_find(&s, "log_level");
	ck_assert_str_eq(s.value[k], "debug");
	snprintf(where, sizeof(where), "%s:5", path);
	ck_assert_str_eq(s.where[k], where);
	k = seen_find(&s, "run_dir");
	ck_assert_str_eq(s.value[k], "/x");
	snprintf(where, sizeof(where), "%s:2", path);
	ck_assert_str_eq(s.where[k], where);
	k = seen_find(&s, "admin_socket");
	ck_assert_str_eq(s.value[k], "/x/osd-3.asok");
	ck_assert_str_eq(s.where[k], "default");
	k = seen_find(&s, "fsid");
	ck_assert_str_eq(s.value[k], "");
	ck_assert_str_eq(s.where[k], "default");
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* ---- Plugin groups ------------------------------------------------------------*/

static const char plugin_text[] =
	"global = {\n"                        /*  1 */
	"  run_dir = \"/x\";\n"               /*  2 */
	"};\n"                                /*  3 */
	"testd = {\n"                         /*  4 */
	"  workers = 8;\n"                    /*  5 */
	"  partitioner = {\n"                 /*  6 */
	"    plugin = \"hash\";\n"            /*  7 */
	"    buckets = 16;\n"                 /*  8 */
	"    spread = 0.5;\n"                 /*  9 */
	"    strict = true;\n"                /* 10 */
	"    label = \"p1\";\n"               /* 11 */
	"    list = [1, 2];\n"                /* 12 */
	"    big = 5000000000L;\n"            /* 13 */
	"    sub = { a = 1; };\n"             /* 14 */
	"  };\n"                              /* 15 */
	"  tick = \"250ms\";\n"               /* 16 */
	"};\n"                                /* 17 */
	"testd-1 = {\n"                       /* 18 */
	"  partitioner = {\n"                 /* 19 */
	"    plugin = \"range\";\n"           /* 20 */
	"    split = \"4M\";\n"               /* 21 */
	"  };\n"                              /* 22 */
	"  verbose = true;\n"                 /* 23 */
	"  ratio = 2;\n"                      /* 24 */
	"};\n";                               /* 25 */

static void
expect_src(const struct tsr_srcval *sv, const char *path, const char *name,
	   int kind, int line)
{
	char where[PATHLEN + 16];

	snprintf(where, sizeof(where), "%s:%d", path, line);
	ck_assert_str_eq(sv->name, name);
	ck_assert_int_eq(sv->kind, kind);
	ck_assert_str_eq(sv->where, where);
}

/* String options of a plugin group expand $variables like the core's. */
START_TEST(test_plugin_group_expansion)
{
	char path[PATHLEN], err[ERRLEN] = "";
	const struct tsr_srcval *srcs = NULL;
	const char *plugin = NULL;
	struct tsr_conf *conf;
	size_t nsrc = 0;

	write_conf("pexp.conf",
		   "global = { run_dir = \"/r\"; };\n"
		   "testd = { partitioner = { plugin = \"p\"; label = \"$run_dir/$name\";\n"
		   "  dollar = \"$$bad\"; n = 3; }; };\n"
		   "testd-5 = { partitioner = { plugin = \"p\";\n"
		   "  bad = \"$bad\"; }; };\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "testd", "4", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)), 0);
	ck_assert_uint_eq(nsrc, 3);
	ck_assert_str_eq(srcs[0].s, "/r/testd-4");
	ck_assert_str_eq(srcs[1].s, "$bad");
	ck_assert_int_eq(srcs[2].i, 3);
	/* an unknown variable is an error, not text */
	resolve_ok(conf, "testd", "5", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, ":5: option 'bad': unknown variable $bad in \"$bad\"") != NULL,
		      "%s", err);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_plugin_groups)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN], buf[64];
	const struct tsr_srcval *srcs = NULL;
	const char *plugin = NULL;
	struct tsr_conf *conf;
	size_t nsrc = 0;

	write_conf("plugin.conf", plugin_text, path);
	conf = load_ok(path);

	resolve_ok(conf, "testd", "2", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)),
			 0);
	ck_assert_str_eq(plugin, "hash");
	ck_assert_uint_eq(nsrc, 7);
	expect_src(&srcs[0], path, "buckets", TSR_SRC_INT, 8);
	ck_assert_int_eq(srcs[0].i, 16);
	expect_src(&srcs[1], path, "spread", TSR_SRC_DOUBLE, 9);
	ck_assert(srcs[1].d == 0.5);
	expect_src(&srcs[2], path, "strict", TSR_SRC_BOOL, 10);
	ck_assert_int_eq(srcs[2].i, 1);
	expect_src(&srcs[3], path, "label", TSR_SRC_STRING, 11);
	ck_assert_str_eq(srcs[3].s, "p1");
	expect_src(&srcs[4], path, "list", TSR_SRC_OTHER, 12);
	expect_src(&srcs[5], path, "big", TSR_SRC_INT, 13);
	ck_assert_int_eq(srcs[5].i, 5000000000ll);
	expect_src(&srcs[6], path, "sub", TSR_SRC_OTHER, 14);
	/* The daemon type's scalars resolve alongside. */
	ck_assert_int_eq(tsr_conf_int(conf, "workers"), 8);
	ck_assert_int_eq(tsr_conf_int(conf, "tick"), 250);
	ck_assert(!tsr_conf_bool(conf, "verbose"));
	ck_assert(tsr_conf_double(conf, "ratio") == 0.25);
	expect(conf, path, "admin_socket", "/x/testd-2.asok", 0);
	ck_assert_int_eq(tsr_conf_get_text(conf, "tick", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "250ms");
	ck_assert_int_eq(tsr_conf_get_text(conf, "verbose", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "false");

	/* A group that is not configured. */
	ck_assert_int_eq(tsr_conf_plugin(conf, "mount", &plugin, &srcs, &nsrc, err,
					 sizeof(err)),
			 -ENOENT);
	snprintf(want, sizeof(want),
		 "%s: testd-2: no 'mount' plugin group is configured", path);
	ck_assert_str_eq(err, want);

	/* testd-1's group replaces testd's whole: no member is inherited. */
	resolve_ok(conf, "testd", "1", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)),
			 0);
	ck_assert_str_eq(plugin, "range");
	ck_assert_uint_eq(nsrc, 1);
	expect_src(&srcs[0], path, "split", TSR_SRC_STRING, 21);
	ck_assert_str_eq(srcs[0].s, "4M");
	ck_assert_int_eq(tsr_conf_int(conf, "workers"), 8);
	ck_assert(tsr_conf_bool(conf, "verbose"));
	ck_assert(tsr_conf_double(conf, "ratio") == 2.0);
	ck_assert_int_eq(tsr_conf_get_text(conf, "ratio", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2");
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_plugin_group_chain)
{
	char path[PATHLEN], err[ERRLEN] = "", where[PATHLEN + 16];
	const struct tsr_srcval *srcs = NULL;
	const char *plugin = NULL;
	struct tsr_conf *conf;
	static struct seen s;
	size_t nsrc = 0, k;

	write_conf("chain.conf",
		   "global = {\n"
		   "  partitioner = {\n"
		   "    plugin = \"general\";\n"
		   "    seed = 1;\n"
		   "  };\n"
		   "  workers = 2;\n"
		   "};\n"
		   "testd-1 = {\n"
		   "  partitioner = { plugin = \"special\"; };\n"
		   "};\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "testd", "2", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)),
			 0);
	ck_assert_str_eq(plugin, "general");
	ck_assert_uint_eq(nsrc, 1);
	expect_src(&srcs[0], path, "seed", TSR_SRC_INT, 4);
	ck_assert_int_eq(tsr_conf_int(conf, "workers"), 2);

	/* foreach shows the group with where it was written. */
	memset(&s, 0, sizeof(s));
	tsr_conf_foreach(conf, collect, &s);
	ck_assert_uint_eq(s.n, 8 + 14 + 1 + 4 + 1); /* core, testd, the group */
	k = seen_find(&s, "partitioner");
	ck_assert_str_eq(s.value[k], "{ plugin = \"general\"; ... }");
	snprintf(where, sizeof(where), "%s:2", path);
	ck_assert_str_eq(s.where[k], where);
	k = seen_find(&s, "workers");
	ck_assert_str_eq(s.value[k], "2");
	snprintf(where, sizeof(where), "%s:6", path);
	ck_assert_str_eq(s.where[k], where);
	k = seen_find(&s, "tick");
	ck_assert_str_eq(s.value[k], "1000ms");
	ck_assert_str_eq(s.where[k], "default");

	resolve_ok(conf, "testd", "1", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)),
			 0);
	ck_assert_str_eq(plugin, "special");
	ck_assert_uint_eq(nsrc, 0);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

START_TEST(test_plugin_group_errors)
{
	static const struct {
		const char *text;
		const char *msg;
		int rc;
	} cases[] = {
		{ "testd = {\n  partitioner = {\n    buckets = 1;\n  };\n};\n",
		  ":2: section 'testd': group 'partitioner' needs a string member 'plugin' naming the plugin", -EINVAL },
		{ "testd-1 = {\n  workers = 3;\n  partitioner = {\n    plugin = 5;\n  };\n};\n",
		  ":3: section 'testd-1': group 'partitioner' needs a string member 'plugin' naming the plugin", -EINVAL },
		{ "global = {\n  partitioner = {};\n};\n",
		  ":2: section 'global': group 'partitioner' needs a string member 'plugin' naming the plugin", -EINVAL },
		{ "testd = {\n  partitioner = \"hash\";\n};\n",
		  ":2: section 'testd': 'partitioner' must be a group naming a plugin, e.g. partitioner = { plugin = \"NAME\"; ... };", -EINVAL },
		{ "testd = {\n\n  partitioner = (\"hash\");\n};\n",
		  ":3: section 'testd': 'partitioner' must be a group naming a plugin, e.g. partitioner = { plugin = \"NAME\"; ... };", -EINVAL },
		{ "testd = {\n  workers = 65;\n};\n",
		  ":2: testd-1: option 'workers': 65 is out of range [1, 64]", -ERANGE },
		{ "testd = {\n  wrokers = 6;\n};\n",
		  ":2: section 'testd': unknown key 'wrokers' for a testd daemon", -EINVAL },
	};
	char path[PATHLEN];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct tsr_conf *conf;

		write_conf("group.conf", cases[k].text, path);
		conf = load_ok(path);
		resolve_fails(conf, "testd", "1", testd_opts, cases[k].rc, path,
			      cases[k].msg);
		tsr_conf_destroy(conf);
		unlink(path);
	}
}
END_TEST

/* ---- Whole-file check -------------------------------------------------------*/

static const char good_cluster[] =
	"global = {\n"
	"  run_dir = \"/x\";\n"
	"  log_level = \"info\";\n"
	"};\n"
	"mon = {\n"
	"  log_level = \"debug\";\n"
	"};\n"
	"osd = {\n"
	"  log_file = \"/var/log/osd-$id\";\n"
	"};\n"
	"osd-1 = {\n"
	"  fsid = \"abc\";\n"
	"};\n"
	"mds-a = {\n"
	"  log_level = \"warn\";\n"
	"};\n"
	"client = {\n"
	"  admin_socket = \"\";\n"
	"};\n";

START_TEST(test_check_all)
{
	static const struct {
		const char *tail; /* appended to good_cluster (19 lines) */
		const char *msg;
	} cases[] = {
		{ "osd-7 = {\n  log_level = \"loud\";\n};\n",
		  ":21: osd-7: option 'log_level': \"loud\" is not one of: error, warn, info, debug, trace" },
		{ "osd-7 = {\n  fsid = \"f\";\n  bogus = 1;\n};\n",
		  ":22: section 'osd-7': unknown key 'bogus' for a osd daemon" },
		{ "mds = {\n  logfile = \"x\";\n};\n",
		  ":21: section 'mds': unknown key 'logfile' for a mds daemon" },
		{ "client-admin = {\n  pid_file = false;\n};\n",
		  ":21: client-admin: option 'pid_file': expected a string, got a boolean" },
		{ "odd-1 = {\n};\n",
		  ":20: unknown section 'odd-1'; expected global, mon, osd, mds, client or TYPE-ID (e.g. osd-3)" },
	};
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	char text[sizeof(good_cluster) + 256];
	struct tsr_conf *conf;

	write_conf("cluster.conf", good_cluster, path);
	conf = load_ok(path);
	ck_assert_msg(tsr_conf_check_all(conf, NULL, NULL, err, sizeof(err)) == 0,
		      "%s", err);
	/* The conf is still usable for a daemon afterwards. */
	resolve_ok(conf, "osd", "1", NULL);
	expect(conf, path, "fsid", "abc", 12);
	expect(conf, path, "log_file", "/var/log/osd-1", 9);
	tsr_conf_destroy(conf);
	unlink(path);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		snprintf(text, sizeof(text), "%s%s", good_cluster, cases[k].tail);
		write_conf("cluster-bad.conf", text, path);
		conf = load_ok(path);
		err[0] = '\0';
		ck_assert_int_eq(tsr_conf_check_all(conf, NULL, NULL, err, sizeof(err)),
				 -EINVAL);
		snprintf(want, sizeof(want), "%s%s", path, cases[k].msg);
		ck_assert_str_eq(err, want);
		tsr_conf_destroy(conf);
		unlink(path);
	}

	/* An error confined to osd-7 does not stop osd-1 or osd-3 from
	 * starting; only the whole-file check sees it. */
	snprintf(text, sizeof(text), "%s%s", good_cluster, cases[0].tail);
	write_conf("cluster-osd7.conf", text, path);
	conf = load_ok(path);
	resolve_ok(conf, "osd", "1", NULL);
	resolve_ok(conf, "osd", "3", NULL);
	resolve_ok(conf, "mon", "a", NULL);
	resolve_fails(conf, "osd", "7", NULL, -EINVAL, path, cases[0].msg);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* ---- What a file must not do to a daemon ----------------------------------*/

/* A directory was reported as "No such file or directory". */
START_TEST(test_load_directory_says_directory)
{
	char err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;

	ck_assert_int_eq(tsr_conf_load(tmpdir, &conf, err, sizeof(err)), -EISDIR);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want),
		 "%s: cannot read configuration file: it is a directory", tmpdir);
	ck_assert_str_eq(err, want);
}
END_TEST

/* A FIFO blocked the daemon forever (here: until Check's timeout). */
START_TEST(test_load_fifo_refused_without_blocking)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;

	snprintf(path, sizeof(path), "%s/fifo.conf", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want),
		 "%s: cannot read configuration file: it is a FIFO, not a regular file",
		 path);
	ck_assert_str_eq(err, want);
	unlink(path);
}
END_TEST

/* Parsing took time in the square of the size (a 4 MiB string 7 s, a
 * 1 MiB group of short settings 37 s): the file's size and its number of
 * settings are capped, with an error naming the file, the size and the
 * cap. */
START_TEST(test_load_size_capped)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;
	size_t max = TSR_CONF_MAX_SIZE;
	char *text = malloc(max + 2);

	ck_assert_ptr_nonnull(text);
	/* exactly the cap: a section and a long comment */
	int head = snprintf(text, max, "global = { };\n#");
	memset(text + head, 'x', max - (size_t)head - 1);
	text[max - 1] = '\n';
	text[max] = '\0';
	write_conf("max.conf", text, path);
	conf = load_ok(path);
	tsr_conf_destroy(conf);
	conf = NULL;
	/* one byte more */
	text[max] = '\n';
	text[max + 1] = '\0';
	write_conf("big.conf", text, path);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -EFBIG);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want),
		 "%s: cannot read configuration file: it is %zu bytes, more than the %zu bytes (%zu KiB) a configuration file may hold",
		 path, max + 1, max, max / 1024);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(tsr_conf_load_string(text, "text", &conf, err, sizeof(err)),
			 -EFBIG);
	ck_assert_ptr_null(conf);
	free(text);
	unlink(path);
	snprintf(path, sizeof(path), "%s/max.conf", tmpdir);
	unlink(path);
}
END_TEST

START_TEST(test_load_settings_capped)
{
	size_t cap = TSR_CONF_MAX_SETTINGS + 64;
	char *text = malloc(cap * 24);
	char err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;
	size_t n = 0;

	ck_assert_ptr_nonnull(text);
	/* the cap exactly, in one group: "global = {" is one */
	n += (size_t)sprintf(text + n, "global = {\n");
	for (int i = 1; i < TSR_CONF_MAX_SETTINGS; i++)
		n += (size_t)sprintf(text + n, "  k%d %s 1;\n", i, i % 2 ? "=" : ":");
	/* '=' and ':' in strings and comments are not settings */
	n += (size_t)sprintf(text + n, "  # a = b: c\n  /* d = e\n f: g */ // h = i\n");
	sprintf(text + n, "};\n");
	ck_assert_msg(tsr_conf_load_string(text, "many", &conf, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_conf_destroy(conf);
	conf = NULL;
	/* and one more setting */
	sprintf(text + n, "  last = 1;\n};\n");
	ck_assert_int_eq(tsr_conf_load_string(text, "many", &conf, err, sizeof(err)),
			 -EFBIG);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof(want),
		 "many:%d: more than %d settings: a configuration file may hold at most %d",
		 TSR_CONF_MAX_SETTINGS + 4, TSR_CONF_MAX_SETTINGS, TSR_CONF_MAX_SETTINGS);
	ck_assert_str_eq(err, want);
	free(text);
}
END_TEST

/* @include would read a second file past every check above; a NUL byte
 * would end the text silently. */
START_TEST(test_load_include_and_nul_refused)
{
	char path[PATHLEN], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf = NULL;
	FILE *f;

	ck_assert_int_eq(tsr_conf_load_string("global = { };\n  @include \"/dev/stdin\"\n",
					      "inc", &conf, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "inc:2: @include is not supported: a cluster's configuration is one file");
	/* the word in a string or a comment is just text */
	ck_assert_msg(tsr_conf_load_string("global = { log_file = \"@include\"; };\n"
					   "# @include \"x\"\n", "inc", &conf, err,
					   sizeof(err)) == 0, "%s", err);
	tsr_conf_destroy(conf);
	conf = NULL;

	snprintf(path, sizeof(path), "%s/nul.conf", tmpdir);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite("global = {\n};\0osd = { };\n", 1, 26, f), 26);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(tsr_conf_load(path, &conf, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: a NUL byte: this is not a configuration file",
		 path);
	ck_assert_str_eq(err, want);
	unlink(path);
}
END_TEST

/* An unknown $variable was left as text: admin_socket = "$nokey/x.asok"
 * made a directory named "$nokey".  Now the daemon does not start, and is
 * told the file, line, key, variable and the variables there are. */
static const struct {
	const char *line;   /* line 2 of a global section */
	const char *reason; /* after "PATH:2: " */
} bad_vars[] = {
	{ "admin_socket = \"$nokey/x.asok\";",
	  "option 'admin_socket': unknown variable $nokey in \"$nokey/x.asok\" (a osd daemon's variables: $name, $type, $id, $fsid, $plugin_dir, $run_dir, $admin_socket, " },
	{ "log_file = \"/l/${nokey}.log\";",
	  "option 'log_file': unknown variable $nokey in \"/l/${nokey}.log\"" },
	{ "log_file = \"$HOME/x\";", "option 'log_file': unknown variable $HOME in \"$HOME/x\"" },
	{ "log_file = \"/$ms_workers\";",
	  "option 'log_file': unknown variable $ms_workers in \"/$ms_workers\"" },
	{ "run_dir = \"$nope\";", "option 'run_dir': unknown variable $nope in \"$nope\"" },
	{ "log_file = \"${run_dir\";",
	  "option 'log_file': cannot expand \"${run_dir\": '${' must be followed by a name and '}'" },
	{ "log_file = \"${}\";",
	  "option 'log_file': cannot expand \"${}\": '${' must be followed by a name and '}'" },
	{ "log_file = \"$nokey\xff\";",
	  "option 'log_file': unknown variable $nokey in \"$nokey\\xff\"" },
};

START_TEST(test_unknown_variable_refused)
{
	char path[PATHLEN], text[256], err[ERRLEN] = "", want[ERRLEN];
	struct tsr_conf *conf;

	snprintf(text, sizeof(text), "global = {\n  %s\n};\n", bad_vars[_i].line);
	write_conf("var.conf", text, path);
	conf = load_ok(path);
	ck_assert_int_eq(tsr_conf_resolve(conf, "osd", "3", NULL, err, sizeof(err)),
			 -EINVAL);
	snprintf(want, sizeof(want), "%s:2: %s", path, bad_vars[_i].reason);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got  %s\nwant %s...", err,
		      want);
	if (strstr(want, "unknown variable"))
		ck_assert_msg(strstr(err, "; write $$ for a '$')") != NULL, "%s", err);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

/* Non-UTF-8 bytes (and control characters) from the file were echoed raw
 * in messages. */
static const struct {
	const char *in;
	size_t buflen;
	const char *out;
} quotes[] = {
	{ "plain", 64, "plain" },
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 64, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
	{ "\xff\xfe", 64, "\\xff\\xfe" },
	{ "\xc0\xaf", 64, "\\xc0\\xaf" },                 /* overlong '/' */
	{ "\xed\xa0\x80", 64, "\\xed\\xa0\\x80" },         /* a surrogate */
	{ "\xf4\x90\x80\x80", 64, "\\xf4\\x90\\x80\\x80" }, /* above U+10FFFF */
	{ "ab\xe2\x82", 64, "ab\\xe2\\x82" },              /* cut short */
	{ "\x1b[31mred\tx\x7f", 64, "\\x1b[31mred\\x09x\\x7f" },
	{ "abcdefg", 8, "abcdefg" },                       /* just fits */
	{ "abcdefgh", 8, "abcd..." },
	{ "\xff\xff\xff", 8, "\\xff..." },
	{ "abc", 3, "" },
};

START_TEST(test_quote)
{
	char buf[64];

	ck_assert_ptr_eq(tsr_opt_quote(quotes[_i].in, buf, quotes[_i].buflen), buf);
	ck_assert_str_eq(buf, quotes[_i].out);
}
END_TEST

static bool
all_printable_utf8(const char *s)
{
	char q[ERRLEN * 4];

	/* quoting changes nothing in text that is clean already */
	return strcmp(tsr_opt_quote(s, q, sizeof(q)), s) == 0;
}

START_TEST(test_messages_escape_non_utf8)
{
	static const struct {
		const char *line;
		const char *msg; /* after "PATH:2: osd-3: " */
	} cases[] = {
		{ "log_level = \"\xff\xfe\x1b[31mred\";",
		  "option 'log_level': \"\\xff\\xfe\\x1b[31mred\" is not one of: error, warn, info, debug, trace" },
		{ "ms_workers = \"\xe9t\xe9\";",
		  "option 'ms_workers': expected an integer, got a string \"\\xe9t\\xe9\"" },
		{ "log_level = \"caf\xc3\xa9\";",
		  "option 'log_level': \"caf\xc3\xa9\" is not one of: error, warn, info, debug, trace" },
	};
	char path[PATHLEN], text[256], err[ERRLEN] = "", want[ERRLEN];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct tsr_conf *conf;
		snprintf(text, sizeof(text), "global = {\n  %s\n};\n", cases[k].line);
		write_conf("utf8.conf", text, path);
		conf = load_ok(path);
		ck_assert_int_lt(tsr_conf_resolve(conf, "osd", "3", NULL, err,
						  sizeof(err)), 0);
		snprintf(want, sizeof(want), "%s:2: osd-3: %s", path, cases[k].msg);
		ck_assert_str_eq(err, want);
		ck_assert_msg(all_printable_utf8(err), "raw bytes in: %s", err);
		tsr_conf_destroy(conf);
		unlink(path);
	}
}
END_TEST

/* check_all runs the caller's daemon checks on every view, in order, and
 * stops at the first error. */
struct views {
	char seen[16][32];
	int n;
	const char *fail_at;
};

static int
record_view(void *arg, struct tsr_conf *conf, const char *type, const char *id,
	    char *err, size_t errlen)
{
	struct views *v = arg;
	char name[32];

	snprintf(name, sizeof(name), "%s%s%s", type, id ? "-" : "", id ? id : "");
	/* the conf is resolved as that view */
	ck_assert_str_eq(tsr_conf_str(conf, "admin_socket"),
			 strcmp(type, "client") == 0 ? "" : (snprintf(err, errlen, "/x/%s.asok", name), err));
	if (v->n < 16)
		snprintf(v->seen[v->n++], sizeof(v->seen[0]), "%s", name);
	if (v->fail_at && strcmp(name, v->fail_at) == 0) {
		snprintf(err, errlen, "refused %s", name);
		return -EPERM;
	}
	return 0;
}

START_TEST(test_check_all_runs_daemon_checks)
{
	static const char *const order[] = { "mon", "osd", "mds", "client", "osd-1", "mds-a" };
	char path[PATHLEN], err[ERRLEN] = "";
	struct views v = { .n = 0 };
	struct tsr_conf *conf;

	write_conf("views.conf", good_cluster, path);
	conf = load_ok(path);
	ck_assert_msg(tsr_conf_check_all(conf, record_view, &v, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(v.n, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(v.seen[i], order[i]);

	memset(&v, 0, sizeof(v));
	v.fail_at = "osd-1";
	ck_assert_int_eq(tsr_conf_check_all(conf, record_view, &v, err, sizeof(err)),
			 -EPERM);
	ck_assert_str_eq(err, "refused osd-1");
	ck_assert_int_eq(v.n, 5);
	tsr_conf_destroy(conf);
	unlink(path);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, test_load_syntax_error);
	tcase_add_test(tc, test_load_missing_file);
	tcase_add_test(tc, test_load_string);
	suite_add_tcase(s, tc);

	tc = tcase_create("resolve");
	tcase_add_loop_test(tc, test_resolution_order, 0,
			    (int)(sizeof(layouts) / sizeof(layouts[0])));
	tcase_add_test(tc, test_defaults_only);
	tcase_add_test(tc, test_unknown_key_own_section);
	tcase_add_test(tc, test_unknown_key_global);
	tcase_add_test(tc, test_unknown_section);
	tcase_add_test(tc, test_top_level_scalar);
	tcase_add_test(tc, test_wrong_type_and_choices);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_test(tc, test_expansion);
	tcase_add_loop_test(tc, test_expansion_loops, 0,
			    (int)(sizeof(loops) / sizeof(loops[0])));
	tcase_add_test(tc, test_get_text_and_where);
	tcase_add_test(tc, test_foreach);
	suite_add_tcase(s, tc);

	tc = tcase_create("plugins");
	tcase_add_test(tc, test_plugin_groups);
	tcase_add_test(tc, test_plugin_group_expansion);
	tcase_add_test(tc, test_plugin_group_chain);
	tcase_add_test(tc, test_plugin_group_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("check_all");
	tcase_add_test(tc, test_check_all);
	tcase_add_test(tc, test_check_all_runs_daemon_checks);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	/* a 1 MiB file and 10,000 settings, parsed under the sanitizers */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_load_directory_says_directory);
	tcase_add_test(tc, test_load_fifo_refused_without_blocking);
	tcase_add_test(tc, test_load_size_capped);
	tcase_add_test(tc, test_load_settings_capped);
	tcase_add_test(tc, test_load_include_and_nul_refused);
	tcase_add_loop_test(tc, test_unknown_variable_refused, 0,
			    (int)(sizeof(bad_vars) / sizeof(bad_vars[0])));
	tcase_add_loop_test(tc, test_quote, 0,
			    (int)(sizeof(quotes) / sizeof(quotes[0])));
	tcase_add_test(tc, test_messages_escape_non_utf8);
	suite_add_tcase(s, tc);
	return s;
}

/* Remove whatever a failed test left in tmpdir, then tmpdir itself. */
static void
remove_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[PATHLEN + 256];

	for (int guard = 0; d != NULL && guard < 10000; guard++) {
		if ((e = readdir(d)) == NULL)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
		unlink(p);
	}
	if (d != NULL)
		closedir(d);
	rmdir(tmpdir);
}

int
main(void)
{
	SRunner *sr;
	int failed;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tsr-test-config-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_tmpdir();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
