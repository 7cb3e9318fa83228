/* test_log.c — logger names, levels, line format, truncation, rotation, threads. */
#include "log/log.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* One scratch directory for the whole run, made and removed by main() so
 * that it goes away even when a forked test dies half way. */
static char tmpdir[256];

static void
tmp_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", tmpdir, name);

	ck_assert(n > 0 && (size_t)n < len);
}

/* The whole file, NUL-terminated; *len gets its size.  "" if missing. */
static char *
slurp(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_ptr_nonnull(buf);
	if (fd >= 0) {
		for (;;) {
			if (n == cap) {
				cap *= 2;
				buf = realloc(buf, cap + 1);
				ck_assert_ptr_nonnull(buf);
			}
			ssize_t r = read(fd, buf + n, cap - n);
			ck_assert_int_ge(r, 0);
			if (r == 0)
				break;
			n += (size_t)r;
		}
		close(fd);
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static size_t
count_char(const char *s, size_t len, char c)
{
	size_t k = 0;

	for (size_t i = 0; i < len; i++)
		k += s[i] == c;
	return k;
}

/* ---- Line parsing ------------------------------------------------------- */

struct line {
	time_t when;
	long usec;
	char ident[64];
	long pid;
	char tag[8];     /* padded to five, as written */
	char subsys[16];
	char msg[4096];
};

static regex_t line_re;
static bool line_re_ok;

static void
compile_line_re(void)
{
	/* time, ident, pid, level tag (padded to 5), subsystem, message */
	static const char pat[] =
		"^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
		"\\.([0-9]{6})Z ([^ ]+) ([0-9]+) (ERROR|WARN |INFO |DEBUG|TRACE) "
		"([a-z]+): (.*)$";

	if (!line_re_ok) {
		ck_assert_int_eq(regcomp(&line_re, pat, REG_EXTENDED), 0);
		line_re_ok = true;
	}
}

static void
copy_match(char *dst, size_t dstlen, const char *s, regmatch_t m)
{
	size_t n = (size_t)(m.rm_eo - m.rm_so);

	ck_assert_uint_lt(n, dstlen);
	memcpy(dst, s + m.rm_so, n);
	dst[n] = '\0';
}

/* Parse one line (without its '\n'); false if it does not match. */
static bool
parse_line(const char *s, struct line *out)
{
	regmatch_t m[13];
	struct tm tm;
	char num[16];
	int f[7];

	compile_line_re();
	if (regexec(&line_re, s, 13, m, 0) != 0)
		return false;
	for (int i = 0; i < 7; i++) {
		copy_match(num, sizeof(num), s, m[i + 1]);
		f[i] = atoi(num);
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = f[0] - 1900;
	tm.tm_mon = f[1] - 1;
	tm.tm_mday = f[2];
	tm.tm_hour = f[3];
	tm.tm_min = f[4];
	tm.tm_sec = f[5];
	out->when = timegm(&tm);
	out->usec = f[6];
	copy_match(out->ident, sizeof(out->ident), s, m[8]);
	copy_match(num, sizeof(num), s, m[9]);
	out->pid = atol(num);
	copy_match(out->tag, sizeof(out->tag), s, m[10]);
	copy_match(out->subsys, sizeof(out->subsys), s, m[11]);
	copy_match(out->msg, sizeof(out->msg), s, m[12]);
	return true;
}

/* The file must hold exactly one line; parse it. */
static void
read_one_line(const char *path, struct line *out)
{
	size_t len;
	char *text = slurp(path, &len);

	ck_assert_msg(len > 0 && text[len - 1] == '\n',
		      "%s: want one line ending in a newline, got \"%s\"", path, text);
	ck_assert_msg(count_char(text, len, '\n') == 1,
		      "%s: want one line, got \"%s\"", path, text);
	text[len - 1] = '\0';
	ck_assert_msg(parse_line(text, out), "bad log line \"%s\"", text);
	free(text);
}

/* ---- Fixture: every test starts from stderr, INFO, "tessera" ------------ */

static void
log_reset(void)
{
	tsr_log_close();
	tsr_log_set_level(-1, TSR_LOG_INFO);
	tsr_log_set_ident("tessera");
}

/* ---- Names and levels --------------------------------------------------- */

/* Runs first and without the fixture, so with CK_FORK=no too it sees the
 * levels as the process started with them. */
START_TEST(test_level_defaults)
{
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		ck_assert_int_eq(tsr_log_get_level(i), TSR_LOG_INFO);
	ck_assert_ptr_null(tsr_log_path());
}
END_TEST

START_TEST(test_level_names)
{
	static const char *const names[] = { "error", "warn", "info", "debug",
					     "trace" };

	ck_assert_int_eq(TSR_LOG_ERROR, 0);
	ck_assert_int_eq(TSR_LOG_TRACE, 4);
	for (int i = 0; i < 5; i++) {
		ck_assert_str_eq(tsr_log_level_name(i), names[i]);
		ck_assert_int_eq(tsr_log_level_parse(names[i]), i);
	}
	ck_assert_str_eq(tsr_log_level_name(-1), "?");
	ck_assert_str_eq(tsr_log_level_name(5), "?");
	ck_assert_int_eq(tsr_log_level_parse("ERROR"), -1);
	ck_assert_int_eq(tsr_log_level_parse("warning"), -1);
	ck_assert_int_eq(tsr_log_level_parse("info "), -1);
	ck_assert_int_eq(tsr_log_level_parse(""), -1);
	ck_assert_int_eq(tsr_log_level_parse("?"), -1);
}
END_TEST

START_TEST(test_subsys_names)
{
	static const char *const names[] = { "core", "conf", "plugin", "daemon",
					     "asok", "event", "msg", "mon",
					     "osd", "mds", "client", "tool" };

	ck_assert_int_eq(TSR_SUB__COUNT, 12);
	for (int i = 0; i < TSR_SUB__COUNT; i++) {
		ck_assert_str_eq(tsr_log_subsys_name(i), names[i]);
		ck_assert_int_eq(tsr_log_subsys_parse(names[i]), i);
	}
	ck_assert_int_eq(tsr_log_subsys_parse("osd"), TSR_SUB_OSD);
	ck_assert_int_eq(tsr_log_subsys_parse("OSD"), -1);
	ck_assert_int_eq(tsr_log_subsys_parse("all"), -1);
	ck_assert_int_eq(tsr_log_subsys_parse(""), -1);
	ck_assert_str_eq(tsr_log_subsys_name(-1), "?");
	ck_assert_str_eq(tsr_log_subsys_name(TSR_SUB__COUNT), "?");
}
END_TEST

START_TEST(test_set_get_level)
{
	tsr_log_set_level(TSR_SUB_OSD, TSR_LOG_DEBUG);
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		ck_assert_int_eq(tsr_log_get_level(i),
				 i == TSR_SUB_OSD ? TSR_LOG_DEBUG : TSR_LOG_INFO);

	tsr_log_set_level(-1, TSR_LOG_ERROR);
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		ck_assert_int_eq(tsr_log_get_level(i), TSR_LOG_ERROR);

	/* clamped into [error, trace] */
	tsr_log_set_level(TSR_SUB_MSG, 99);
	ck_assert_int_eq(tsr_log_get_level(TSR_SUB_MSG), TSR_LOG_TRACE);
	tsr_log_set_level(TSR_SUB_MSG, -7);
	ck_assert_int_eq(tsr_log_get_level(TSR_SUB_MSG), TSR_LOG_ERROR);
	tsr_log_set_level(-1, 1000);
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		ck_assert_int_eq(tsr_log_get_level(i), TSR_LOG_TRACE);

	/* an unknown subsystem changes nothing */
	tsr_log_set_level(-1, TSR_LOG_WARN);
	tsr_log_set_level(TSR_SUB__COUNT, TSR_LOG_DEBUG);
	tsr_log_set_level(1000, TSR_LOG_DEBUG);
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		ck_assert_int_eq(tsr_log_get_level(i), TSR_LOG_WARN);
	ck_assert_int_eq(tsr_log_get_level(-1), -1);
	ck_assert_int_eq(tsr_log_get_level(TSR_SUB__COUNT), -1);
}
END_TEST

START_TEST(test_enabled)
{
	tsr_log_set_level(TSR_SUB_OSD, TSR_LOG_INFO);
	ck_assert(tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_ERROR));
	ck_assert(tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_WARN));
	ck_assert(tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_INFO));
	ck_assert(!tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_DEBUG));
	ck_assert(!tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_TRACE));

	tsr_log_set_level(TSR_SUB_MON, TSR_LOG_TRACE);
	ck_assert(tsr_log_enabled(TSR_SUB_MON, TSR_LOG_TRACE));
	ck_assert(!tsr_log_enabled(TSR_SUB_OSD, TSR_LOG_TRACE));

	tsr_log_set_level(TSR_SUB_MDS, TSR_LOG_ERROR);
	ck_assert(tsr_log_enabled(TSR_SUB_MDS, TSR_LOG_ERROR));
	ck_assert(!tsr_log_enabled(TSR_SUB_MDS, TSR_LOG_WARN));

	/* an out-of-range subsystem falls back to core's level */
	tsr_log_set_level(TSR_SUB_CORE, TSR_LOG_DEBUG);
	ck_assert(tsr_log_enabled(99, TSR_LOG_DEBUG));
	ck_assert(tsr_log_enabled(-5, TSR_LOG_DEBUG));
	ck_assert(!tsr_log_enabled(99, TSR_LOG_TRACE));
	tsr_log_set_level(TSR_SUB_CORE, TSR_LOG_ERROR);
	ck_assert(!tsr_log_enabled(-5, TSR_LOG_WARN));
}
END_TEST

/* ---- Output ------------------------------------------------------------- */

START_TEST(test_line_format)
{
	char path[512];
	struct line ln;
	struct timespec before, after;

	tmp_path(path, sizeof(path), "format.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	ck_assert_str_eq(tsr_log_path(), path);
	tsr_log_set_ident("osd-3");
	/* the clock the logger reads (time() may lag it by a tick) */
	clock_gettime(CLOCK_REALTIME, &before);
	tsr_logf(TSR_SUB_MSG, TSR_LOG_WARN, "peer %s:%d down", "127.0.0.1", 6801);
	clock_gettime(CLOCK_REALTIME, &after);
	read_one_line(path, &ln);
	ck_assert_int_ge(ln.when, before.tv_sec);
	ck_assert_int_le(ln.when, after.tv_sec);
	if (ln.when == before.tv_sec)
		ck_assert_int_ge(ln.usec, before.tv_nsec / 1000);
	if (ln.when == after.tv_sec)
		ck_assert_int_le(ln.usec, after.tv_nsec / 1000);
	ck_assert_int_ge(ln.usec, 0);
	ck_assert_int_le(ln.usec, 999999);
	ck_assert_str_eq(ln.ident, "osd-3");
	ck_assert_int_eq(ln.pid, getpid());
	ck_assert_str_eq(ln.tag, "WARN ");
	ck_assert_str_eq(ln.subsys, "msg");
	ck_assert_str_eq(ln.msg, "peer 127.0.0.1:6801 down");
	tsr_log_close();
	ck_assert_ptr_null(tsr_log_path());
	unlink(path);
}
END_TEST

static int
count_of(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* A line a peer can cause at will goes out at most burst times per
 * interval; the first line of a later interval says how many were
 * suppressed (issue 16: 2.1 million lines in 13 s). */
START_TEST(test_rated_lines)
{
	static struct tsr_log_rate r = TSR_LOG_RATE_INIT(3, 200);
	char path[512], *text;

	tmp_path(path, sizeof(path), "rated.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_log_set_level(-1, TSR_LOG_INFO);
	for (int i = 0; i < 1000; i++)
		tsr_log_rated(&r, TSR_SUB_MSG, TSR_LOG_WARN, "peer %d misbehaves", i);
	text = slurp(path, NULL);
	ck_assert_int_eq(count_of(text, "misbehaves"), 3);
	ck_assert_int_eq(count_of(text, "suppressed"), 0);
	free(text);
	usleep(250 * 1000);
	tsr_log_rated(&r, TSR_SUB_MSG, TSR_LOG_WARN, "peer %d misbehaves", 1000);
	text = slurp(path, NULL);
	ck_assert_int_eq(count_of(text, "misbehaves"), 4);
	ck_assert_int_eq(count_of(text, "(997 similar lines suppressed)"), 1);
	free(text);
	/* a level that is off costs nothing and counts nothing */
	tsr_log_set_level(-1, TSR_LOG_ERROR);
	for (int i = 0; i < 10; i++)
		tsr_log_rated(&r, TSR_SUB_MSG, TSR_LOG_WARN, "quiet %d", i);
	ck_assert_uint_eq(r.suppressed, 0);
	tsr_log_close();
	unlink(path);
}
END_TEST

/* The ident is copied, and cut to what the logger keeps (63 bytes). */
START_TEST(test_ident)
{
	char path[512], ident[100];
	struct line ln;

	tmp_path(path, sizeof(path), "ident.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	memset(ident, 'i', sizeof(ident) - 1);
	ident[sizeof(ident) - 1] = '\0';
	tsr_log_set_ident(ident);
	memset(ident, 'X', sizeof(ident) - 1); /* the logger kept a copy */
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "who");
	read_one_line(path, &ln);
	ck_assert_uint_eq(strlen(ln.ident), 63);
	ck_assert_uint_eq(strspn(ln.ident, "i"), 63);
	ck_assert_str_eq(ln.msg, "who");
	tsr_log_close();
	unlink(path);
}
END_TEST

/* Each level's tag, padded to five columns, as the header shows. */
START_TEST(test_level_tags)
{
	static const char *const want[] = {
		" ERROR core: e\n", " WARN  core: w\n", " INFO  core: i\n",
		" DEBUG core: d\n", " TRACE core: t\n",
	};
	static const char *const msgs[] = { "e", "w", "i", "d", "t" };
	char path[512];

	tmp_path(path, sizeof(path), "tags.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_log_set_level(TSR_SUB_CORE, TSR_LOG_TRACE);
	for (int i = 0; i < 5; i++)
		tsr_logf(TSR_SUB_CORE, i, "%s", msgs[i]);
	tsr_log_close();

	char *text = slurp(path, NULL), *p = text;
	for (int i = 0; i < 5; i++) {
		char *nl = strchr(p, '\n');
		ck_assert_ptr_nonnull(nl);
		size_t wl = strlen(want[i]);
		ck_assert_uint_ge((size_t)(nl + 1 - p), wl);
		ck_assert_msg(memcmp(nl + 1 - wl, want[i], wl) == 0,
			      "line %d: want suffix \"%s\" in \"%.*s\"", i, want[i],
			      (int)(nl + 1 - p), p);
		p = nl + 1;
	}
	ck_assert_str_eq(p, "");
	free(text);
	unlink(path);
}
END_TEST

static void
logv_wrap(int subsys, int level, const char *prefix, const char *fmt, ...)
	TSR_PRINTF(4, 5);

static void
logv_wrap(int subsys, int level, const char *prefix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tsr_logv(subsys, level, prefix, fmt, ap);
	va_end(ap);
}

START_TEST(test_prefix_and_clamping)
{
	char path[512];
	struct line ln;

	tmp_path(path, sizeof(path), "prefix.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	logv_wrap(TSR_SUB_OSD, TSR_LOG_INFO, "osd-3/backend: ", "hello %d", 7);
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.tag, "INFO ");
	ck_assert_str_eq(ln.subsys, "osd");
	ck_assert_str_eq(ln.msg, "osd-3/backend: hello 7");

	/* bad numbers are clamped; tsr_logf filters like the macros */
	ck_assert_int_eq(truncate(path, 0), 0);
	tsr_log_set_level(TSR_SUB_CORE, TSR_LOG_INFO);
	tsr_logf(99, 17, "filtered");
	tsr_logf(TSR_SUB_CORE, TSR_LOG_DEBUG, "filtered too");
	char *empty = slurp(path, NULL);
	ck_assert_str_eq(empty, "");
	free(empty);
	tsr_log_set_level(TSR_SUB_CORE, TSR_LOG_TRACE);
	tsr_logf(99, 17, "x");
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.tag, "TRACE");
	ck_assert_str_eq(ln.subsys, "core");
	ck_assert_int_eq(truncate(path, 0), 0);
	tsr_logf(-1, -3, "y");
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.tag, "ERROR");
	ck_assert_str_eq(ln.subsys, "core");
	tsr_log_close();
	unlink(path);
}
END_TEST

static int side_effects;

static int
bump(void)
{
	return ++side_effects;
}

/* The macros filter by level, and a filtered line's arguments are not even
 * evaluated. */
START_TEST(test_disabled_writes_nothing)
{
	char path[512];
	size_t len;
	struct line ln;

	tmp_path(path, sizeof(path), "disabled.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_log_set_level(TSR_SUB_OSD, TSR_LOG_WARN);
	side_effects = 0;
	TSR_LOG_INFO(OSD, "not shown %d", bump());
	TSR_LOG_DEBUG(OSD, "not shown %d", bump());
	tsr_log(TSR_SUB_OSD, TSR_LOG_TRACE, "not shown %d", bump());
	ck_assert_int_eq(side_effects, 0);
	free(slurp(path, &len));
	ck_assert_uint_eq(len, 0);

	/* another subsystem's level is its own */
	TSR_LOG_INFO(MON, "shown %d", bump());
	ck_assert_int_eq(side_effects, 1);
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.subsys, "mon");
	ck_assert_str_eq(ln.msg, "shown 1");
	ck_assert_int_eq(truncate(path, 0), 0);
	TSR_LOG_WARN(OSD, "shown %d", bump());
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.tag, "WARN ");
	ck_assert_str_eq(ln.msg, "shown 2");
	ck_assert_int_eq(truncate(path, 0), 0);
	TSR_LOG_ERR(OSD, "err");
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.tag, "ERROR");
	tsr_log_close();
	unlink(path);
}
END_TEST

/* The length of everything before the message, measured from a real line
 * (ident, pid and time have fixed widths within one test). */
static size_t
header_len(const char *path)
{
	size_t len;
	char *text;

	ck_assert_int_eq(truncate(path, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "%s", "");
	text = slurp(path, &len);
	free(text);
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_uint_gt(len, 30);
	return len - 1;
}

static char *
repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

START_TEST(test_truncation)
{
	char path[512];
	size_t len, hdr;
	char *msg = repeat('x', 10000), *text;

	tmp_path(path, sizeof(path), "long.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	hdr = header_len(path);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "%s", msg);
	text = slurp(path, &len);
	/* one line, cut to the 4 KiB line buffer, marked with "..." */
	ck_assert_uint_eq(count_char(text, len, '\n'), 1);
	ck_assert_uint_le(len, 4096);
	ck_assert_uint_gt(len, 4000);
	ck_assert_int_eq(text[len - 1], '\n');
	ck_assert_int_eq(memcmp(text + len - 4, "...\n", 4), 0);
	for (size_t i = hdr; i < len - 4; i++)
		ck_assert_msg(text[i] == 'x', "byte %zu is 0x%02x", i,
			      (unsigned char)text[i]);
	free(text);

	/* the next line is whole and separate */
	ck_assert_int_eq(truncate(path, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "short");
	text = slurp(path, &len);
	ck_assert_uint_eq(len, hdr + 6);
	ck_assert_str_eq(text + hdr, "short\n");
	free(text);
	free(msg);
	tsr_log_close();
	unlink(path);
}
END_TEST

/* Regression: a line that fits the buffer exactly (4095 bytes plus its
 * newline) was cut and given "..." although nothing was lost. */
START_TEST(test_exact_fit_not_truncated)
{
	char path[512];
	size_t len, hdr, m;
	char *msg, *text;

	tmp_path(path, sizeof(path), "fit.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	hdr = header_len(path);
	ck_assert_uint_lt(hdr, 4000);
	m = 4095 - hdr;

	msg = repeat('y', m);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "%s", msg);
	text = slurp(path, &len);
	ck_assert_uint_eq(len, 4096);
	ck_assert_int_eq(text[len - 1], '\n');
	ck_assert_int_eq(memcmp(text + hdr, msg, m), 0);
	free(text);
	free(msg);

	/* one byte more does not fit: cut, marked, still one newline */
	ck_assert_int_eq(truncate(path, 0), 0);
	msg = repeat('y', m + 1);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "%s", msg);
	text = slurp(path, &len);
	ck_assert_uint_le(len, 4096);
	ck_assert_uint_eq(count_char(text, len, '\n'), 1);
	ck_assert_int_eq(memcmp(text + len - 4, "...\n", 4), 0);
	free(text);
	free(msg);
	tsr_log_close();
	unlink(path);
}
END_TEST

/* With no file, lines go to fd 2. */
START_TEST(test_stderr_destination)
{
	char path[512];
	struct line ln;
	int saved, fd;

	tmp_path(path, sizeof(path), "stderr.capture");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(2);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);

	ck_assert_ptr_null(tsr_log_path());
	ck_assert_int_eq(tsr_log_reopen(), 0); /* no-op for stderr */
	tsr_logf(TSR_SUB_DAEMON, TSR_LOG_ERROR, "to stderr");
	ck_assert_int_eq(tsr_log_open(NULL, NULL, 0), 0);
	ck_assert_int_eq(tsr_log_open("", NULL, 0), 0);
	tsr_logf(TSR_SUB_DAEMON, TSR_LOG_ERROR, "still stderr");

	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	size_t len;
	char *text = slurp(path, &len);
	ck_assert_uint_eq(count_char(text, len, '\n'), 2);
	char *nl = strchr(text, '\n');
	*nl = '\0';
	text[len - 1] = '\0';
	ck_assert(parse_line(text, &ln));
	ck_assert_str_eq(ln.tag, "ERROR");
	ck_assert_str_eq(ln.subsys, "daemon");
	ck_assert_str_eq(ln.msg, "to stderr");
	ck_assert(parse_line(nl + 1, &ln));
	ck_assert_str_eq(ln.msg, "still stderr");
	free(text);
	unlink(path);
}
END_TEST

/* Opening another file moves the destination; the old one gets nothing
 * more; an empty path goes back to stderr. */
START_TEST(test_switch_files)
{
	char a[512], b[512];
	struct line ln;

	tmp_path(a, sizeof(a), "switch-a.log");
	tmp_path(b, sizeof(b), "switch-b.log");
	ck_assert_int_eq(tsr_log_open(a, NULL, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "one");
	ck_assert_int_eq(tsr_log_open(b, NULL, 0), 0);
	ck_assert_str_eq(tsr_log_path(), b);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "two");
	ck_assert_int_eq(tsr_log_open("", NULL, 0), 0);
	ck_assert_ptr_null(tsr_log_path());
	read_one_line(a, &ln);
	ck_assert_str_eq(ln.msg, "one");
	read_one_line(b, &ln);
	ck_assert_str_eq(ln.msg, "two");
	/* appending: reopening a file keeps what it had */
	ck_assert_int_eq(tsr_log_open(a, NULL, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "three");
	tsr_log_close();
	char *text = slurp(a, NULL);
	ck_assert_ptr_nonnull(strstr(text, "core: one\n"));
	ck_assert_ptr_nonnull(strstr(text, "core: three\n"));
	ck_assert_uint_eq(count_char(text, strlen(text), '\n'), 2);
	free(text);
	unlink(a);
	unlink(b);
}
END_TEST

START_TEST(test_rotation)
{
	char path[512], old[512];
	struct line ln;
	char *text;

	tmp_path(path, sizeof(path), "rotate.log");
	tmp_path(old, sizeof(old), "rotate.log.1");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "before rotation");
	ck_assert_int_eq(rename(path, old), 0);
	/* until the reopen, lines follow the open file */
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "after rename");
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(tsr_log_reopen(), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "after reopen");
	ck_assert_str_eq(tsr_log_path(), path);

	read_one_line(path, &ln);
	ck_assert_str_eq(ln.msg, "after reopen");
	text = slurp(old, NULL);
	ck_assert_uint_eq(count_char(text, strlen(text), '\n'), 2);
	char *second = strchr(text, '\n') + 1;
	second[-1] = '\0';
	ck_assert(parse_line(text, &ln));
	ck_assert_str_eq(ln.msg, "before rotation");
	second[strlen(second) - 1] = '\0';
	ck_assert(parse_line(second, &ln));
	ck_assert_str_eq(ln.msg, "after rename");
	free(text);

	/* a created log file is not world-writable */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0002, 0);
	tsr_log_close();
	unlink(path);
	unlink(old);
}
END_TEST

/* A reopen that cannot open the file keeps the old destination and says
 * why there. */
START_TEST(test_reopen_failure)
{
	char dir[512], moved[512], path[512], want[1200];
	size_t len;
	char *text;

	tmp_path(dir, sizeof(dir), "reopen-dir");
	tmp_path(moved, sizeof(moved), "reopen-dir.moved");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	tmp_path(path, sizeof(path), "reopen-dir/a.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "first");
	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(tsr_log_reopen(), -ENOENT);
	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "last");
	tsr_log_close();

	tmp_path(path, sizeof(path), "reopen-dir.moved/a.log");
	text = slurp(path, &len);
	ck_assert_uint_eq(count_char(text, len, '\n'), 3);
	snprintf(want, sizeof(want),
		 " ERROR core: log reopen: cannot open log file %s/a.log: %s\n",
		 dir, strerror(ENOENT));
	ck_assert_msg(strstr(text, want) != NULL, "want \"%s\" in \"%s\"", want,
		      text);
	ck_assert_ptr_nonnull(strstr(text, "core: first\n"));
	ck_assert_int_eq(memcmp(text + len - 11, "core: last\n", 11), 0);
	free(text);
	unlink(path);
	rmdir(moved);
}
END_TEST

START_TEST(test_open_failure_keeps_destination)
{
	char path[512], bad[512], want[1200], err[1024];
	struct line ln;

	tmp_path(path, sizeof(path), "keep.log");
	tmp_path(bad, sizeof(bad), "no-such-dir/x.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);

	err[0] = '\0';
	ck_assert_int_eq(tsr_log_open(bad, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "cannot open log file %s: %s", bad,
		 strerror(ENOENT));
	ck_assert_str_eq(err, want);
	ck_assert_str_eq(tsr_log_path(), path);
	/* a directory cannot be a log file either; err may be NULL */
	ck_assert_int_eq(tsr_log_open(tmpdir, NULL, 0), -EISDIR);
	ck_assert_str_eq(tsr_log_path(), path);

	tsr_logf(TSR_SUB_CORE, TSR_LOG_INFO, "still here");
	read_one_line(path, &ln);
	ck_assert_str_eq(ln.msg, "still here");
	ck_assert_int_eq(access(bad, F_OK), -1);

	/* and from stderr, a failed open stays on stderr */
	tsr_log_close();
	ck_assert_int_eq(tsr_log_open(bad, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(tsr_log_path());
	unlink(path);
}
END_TEST

/* ---- Threads ------------------------------------------------------------ */

enum { NTHREADS = 4, NLINES = 500 };

static void *
writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	char pad[301];

	/* long lines make a torn write more likely to show */
	memset(pad, 'a' + t, sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < NLINES; i++)
		tsr_logf(TSR_SUB_OSD, TSR_LOG_INFO, "t%d n%d %s", t, i, pad);
	return NULL;
}

START_TEST(test_threads_never_interleave)
{
	pthread_t th[NTHREADS];
	int next[NTHREADS] = { 0 };
	char path[512];
	size_t len, lines = 0;
	char *text, *p;

	tmp_path(path, sizeof(path), "threads.log");
	ck_assert_int_eq(tsr_log_open(path, NULL, 0), 0);
	tsr_log_set_ident("mt");
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, writer,
						(void *)(intptr_t)t), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	tsr_log_close();

	text = slurp(path, &len);
	ck_assert_uint_eq(count_char(text, len, '\n'), NTHREADS * NLINES);
	p = text;
	while (*p) {
		struct line ln;
		char *nl = strchr(p, '\n');
		int t, n, off = 0;

		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		ck_assert_msg(parse_line(p, &ln), "line %zu torn: \"%.80s\"", lines, p);
		ck_assert_str_eq(ln.ident, "mt");
		ck_assert_int_eq(sscanf(ln.msg, "t%d n%d %n", &t, &n, &off), 2);
		ck_assert(t >= 0 && t < NTHREADS);
		/* each thread's lines arrive whole and in its order */
		ck_assert_int_eq(n, next[t]);
		next[t]++;
		ck_assert_uint_eq(strlen(ln.msg + off), 300);
		ck_assert_uint_eq(strspn(ln.msg + off, (char[]){ (char)('a' + t), 0 }),
				  300);
		lines++;
		p = nl + 1;
	}
	ck_assert_uint_eq(lines, NTHREADS * NLINES);
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(next[t], NLINES);
	free(text);
	unlink(path);
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *first = tcase_create("defaults");
	TCase *names = tcase_create("names");
	TCase *out = tcase_create("output");

	tcase_add_test(first, test_level_defaults);
	suite_add_tcase(s, first);

	tcase_add_checked_fixture(names, log_reset, log_reset);
	tcase_add_test(names, test_level_names);
	tcase_add_test(names, test_subsys_names);
	tcase_add_test(names, test_set_get_level);
	tcase_add_test(names, test_enabled);
	suite_add_tcase(s, names);

	tcase_add_checked_fixture(out, log_reset, log_reset);
	tcase_add_test(out, test_line_format);
	tcase_add_test(out, test_ident);
	tcase_add_test(out, test_level_tags);
	tcase_add_test(out, test_prefix_and_clamping);
	tcase_add_test(out, test_disabled_writes_nothing);
	tcase_add_test(out, test_truncation);
	tcase_add_test(out, test_exact_fit_not_truncated);
	tcase_add_test(out, test_stderr_destination);
	tcase_add_test(out, test_switch_files);
	tcase_add_test(out, test_rotation);
	tcase_add_test(out, test_reopen_failure);
	tcase_add_test(out, test_open_failure_keeps_destination);
	tcase_add_test(out, test_threads_never_interleave);
	tcase_add_test(out, test_rated_lines);
	suite_add_tcase(s, out);
	return s;
}

int
main(void)
{
	const char *base = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	snprintf(tmpdir, sizeof(tmpdir), "%s/tsr-test-log.XXXXXX",
		 base && *base ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(log_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tsr_log_close();
	tu_rm_rf(tmpdir);
	if (line_re_ok)
		regfree(&line_re);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
