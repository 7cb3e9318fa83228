/* test_config.c — cluster config files: loading, section resolution, errors with file:line, $variables, plugin groups, check_all. */
#include "config/config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
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
		   "  fsid = \"${name}x $namex $unknown ${type} $ $$id end$\";\n"
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
	expect(conf, path, "fsid", "osd-3x $namex $unknown osd $ $3 end$", 4);
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
	for (; core[ncore].def.name != NULL && ncore < 64; ncore++)
		if (core[ncore].sections & TSR_SEC_OSD) {
			seen_find(&s, core[ncore].def.name);
			nosd++;
		}
	/* general, the messenger's ms_*, the monitors' mon_* */
	ck_assert_uint_eq(ncore, 7 + 13 + 11);
	ck_assert_uint_eq(nosd, 7 + 13 + 2); /* mon_members, osd_beacon_interval */
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
		   "  bad = \"$bad\"; n = 3; }; };\n",
		   path);
	conf = load_ok(path);
	resolve_ok(conf, "testd", "4", testd_opts);
	ck_assert_int_eq(tsr_conf_plugin(conf, "partitioner", &plugin, &srcs, &nsrc,
					 err, sizeof(err)), 0);
	ck_assert_uint_eq(nsrc, 3);
	ck_assert_str_eq(srcs[0].s, "/r/testd-4");
	/* an unknown variable stays as written */
	ck_assert_str_eq(srcs[1].s, "$bad");
	ck_assert_int_eq(srcs[2].i, 3);
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
	ck_assert_uint_eq(s.n, 7 + 13 + 1 + 4 + 1); /* core, testd, the group */
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
	ck_assert_msg(tsr_conf_check_all(conf, err, sizeof(err)) == 0, "%s", err);
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
		ck_assert_int_eq(tsr_conf_check_all(conf, err, sizeof(err)), -EINVAL);
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
