/* test_options.c — option schemas, typed parsing from every source kind, option sets, formatting. */
#include "config/options.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define SIZE_EXPECT "a size (an integer number of bytes, or text such as \"64M\")"
#define DUR_EXPECT \
	"a duration (an integer number of milliseconds, or text such as \"30s\")"
#define BOOL_EXPECT "a boolean (true or false)"

/* ---- Schema checks --------------------------------------------------------*/

static const char *const two_choices[] = { "p", "q", NULL };

/* Each schema is a valid first entry followed by one bad entry (so the
 * index in "option #1" is checked too), then the terminator. */
static const struct {
	struct tsr_opt_def defs[3];
	const char *msg;
} bad_schemas[] = {
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "Bad", .type = TSR_OPT_INT, .def = "1" } },
	  "option #1: name \"Bad\" is not of the form [a-z][a-z0-9_]* (at most 63 characters)" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "9lives", .type = TSR_OPT_INT, .def = "1" } },
	  "option #1: name \"9lives\" is not of the form [a-z][a-z0-9_]* (at most 63 characters)" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "cache-size", .type = TSR_OPT_INT, .def = "1" } },
	  "option #1: name \"cache-size\" is not of the form [a-z][a-z0-9_]* (at most 63 characters)" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "", .type = TSR_OPT_INT, .def = "1" } },
	  "option #1: name \"\" is not of the form [a-z][a-z0-9_]* (at most 63 characters)" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "a234567890123456789012345678901234567890123456789012345678901234",
	      .type = TSR_OPT_INT, .def = "1" } },
	  "option #1: name \"a234567890123456789012345678901234567890123456789012345678901234\" is not of the form [a-z][a-z0-9_]* (at most 63 characters)" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "ok", .type = TSR_OPT_STRING, .def = "x" } },
	  "option 'ok' is declared twice" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "t", .type = TSR_OPT_NONE, .def = "1" } },
	  "option 't': unknown type 0" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "t", .type = 7, .def = "1" } },
	  "option 't': unknown type 7" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "f", .type = TSR_OPT_INT, .flags = 0x6, .def = "1" } },
	  "option 'f': unknown flags 0x6" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_INT, .def = "abc" } },
	  "option 'd': default \"abc\" is invalid: expected an integer, got text \"abc\"" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_SIZE, .def = "4X" } },
	  "option 'd': default \"4X\" is invalid: expected " SIZE_EXPECT ", got text \"4X\"" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_BOOL, .def = "maybe" } },
	  "option 'd': default \"maybe\" is invalid: expected " BOOL_EXPECT ", got text \"maybe\"" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_INT, .def = "0", .min = "1", .max = "10" } },
	  "option 'd': default \"0\" is invalid: 0 is out of range [1, 10]" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_SIZE, .def = "128G", .max = "64G" } },
	  "option 'd': default \"128G\" is invalid: 137438953472 is out of range [-inf, 64G]" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "d", .type = TSR_OPT_STRING, .def = "x", .choices = two_choices } },
	  "option 'd': default \"x\" is invalid: \"x\" is not one of: p, q" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "r", .type = TSR_OPT_INT, .def = "5", .min = "10", .max = "1" } },
	  "option 'r': lower bound 10 is above upper bound 1" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "r", .type = TSR_OPT_SIZE, .def = "1M", .min = "1G", .max = "1M" } },
	  "option 'r': lower bound 1G is above upper bound 1M" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "r", .type = TSR_OPT_DOUBLE, .def = "1", .min = "1.5", .max = "1.25" } },
	  "option 'r': lower bound 1.5 is above upper bound 1.25" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "b", .type = TSR_OPT_INT, .def = "1", .min = "x" } },
	  "option 'b': lower bound \"x\" is not an integer" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "b", .type = TSR_OPT_DURATION, .def = "1s", .max = "soon" } },
	  "option 'b': upper bound \"soon\" is not " DUR_EXPECT },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "b", .type = TSR_OPT_STRING, .def = "x", .max = "y" } },
	  "option 'b': a upper bound on a string option" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "b", .type = TSR_OPT_BOOL, .def = "true", .min = "0" } },
	  "option 'b': a lower bound on a bool option" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "c", .type = TSR_OPT_INT, .def = "1", .choices = two_choices } },
	  "option 'c': choices on a int option" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "c", .type = TSR_OPT_SIZE, .def = "1", .choices = two_choices } },
	  "option 'c': choices on a size option" },
	{ { { .name = "ok", .type = TSR_OPT_INT, .def = "1" },
	    { .name = "m", .type = TSR_OPT_INT } },
	  "option 'm': no default and not marked required" },
};

START_TEST(test_schema_refused)
{
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_opt_schema_check(bad_schemas[_i].defs, err,
					      sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, bad_schemas[_i].msg);
	/* The error buffer is optional. */
	ck_assert_int_eq(tsr_opt_schema_check(bad_schemas[_i].defs, NULL, 0),
			 -EINVAL);
}
END_TEST

static const char *const modes[] = { "fast", "safe", NULL };

static const struct tsr_opt_def good_schema[] = {
	{ .name = "enabled", .type = TSR_OPT_BOOL, .def = "yes" },
	{ .name = "count", .type = TSR_OPT_INT, .def = "-3", .min = "-10",
	  .max = "10" },
	{ .name = "ratio", .type = TSR_OPT_DOUBLE, .def = "0.5", .min = "0",
	  .max = "1" },
	{ .name = "mode", .type = TSR_OPT_STRING, .def = "safe",
	  .choices = modes },
	{ .name = "path", .type = TSR_OPT_STRING, .flags = TSR_OPT_REQUIRED,
	  .help = "directory holding the objects" },
	{ .name = "cache_size", .type = TSR_OPT_SIZE, .def = "64M", .min = "1M",
	  .max = "64G" },
	{ .name = "timeout", .type = TSR_OPT_DURATION, .def = "30s",
	  .min = "250ms", .max = "1h" },
	{ .name = "a23456789012345678901234567890123456789012345678901234567890123",
	  .type = TSR_OPT_INT, .def = "0" },
	{ .name = "eq", .type = TSR_OPT_INT, .def = "5", .min = "5", .max = "5" },
	{ .name = NULL },
};

START_TEST(test_schema_good)
{
	static const struct tsr_opt_def empty[] = { { .name = NULL } };
	char err[ERRLEN] = "untouched";

	ck_assert_int_eq(tsr_opt_schema_check(good_schema, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_opt_schema_check(empty, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_opt_schema_check(NULL, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "untouched");
}
END_TEST

START_TEST(test_type_names)
{
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_BOOL), "bool");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_INT), "int");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_DOUBLE), "double");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_STRING), "string");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_SIZE), "size");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_DURATION), "duration");
	ck_assert_str_eq(tsr_opt_type_name(TSR_OPT_NONE), "unknown type");
	ck_assert_str_eq(tsr_opt_type_name(99), "unknown type");
}
END_TEST

/* ---- Parsing one value ----------------------------------------------------*/

/* One source value parsed for an option named "opt" of the given type and
 * bounds.  rc 0: the result must equal want_i / want_d / want_s (by type);
 * otherwise err must equal msg exactly. */
struct pcase {
	uint32_t type;
	const char *min, *max;
	int kind;
	const char *s;
	int64_t i;
	double d;
	int rc;
	int64_t want_i;
	double want_d;
	const char *want_s;
	const char *msg;
};

#define T(type_, s_, wi) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_TEXT, s_, 0, 0, 0, wi, 0, NULL, NULL }
#define TD(s_, wd) { TSR_OPT_DOUBLE, NULL, NULL, TSR_SRC_TEXT, s_, 0, 0, 0, 0, wd, NULL, NULL }
#define TBAD(type_, s_, rc_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_TEXT, s_, 0, 0, rc_, 0, 0, NULL, msg_ }
#define S(type_, s_, wi) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_STRING, s_, 0, 0, 0, wi, 0, NULL, NULL }
#define SBAD(type_, s_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_STRING, s_, 0, 0, -EINVAL, 0, 0, NULL, msg_ }
#define I(type_, i_, wi, wd) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_INT, NULL, i_, 0, 0, wi, wd, NULL, NULL }
#define IBAD(type_, i_, rc_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_INT, NULL, i_, 0, rc_, 0, 0, NULL, msg_ }
#define D(type_, d_, wd) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_DOUBLE, NULL, 0, d_, 0, 0, wd, NULL, NULL }
#define DBAD(type_, d_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_DOUBLE, NULL, 0, d_, -EINVAL, 0, 0, NULL, msg_ }
#define B(type_, i_, wi) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_BOOL, NULL, i_, 0, 0, wi, 0, NULL, NULL }
#define BBAD(type_, i_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_BOOL, NULL, i_, 0, -EINVAL, 0, 0, NULL, msg_ }
#define OBAD(type_, msg_) { TSR_OPT_##type_, NULL, NULL, TSR_SRC_OTHER, NULL, 0, 0, -EINVAL, 0, 0, NULL, msg_ }
#define RT(type_, mn, mx, s_, wi) { TSR_OPT_##type_, mn, mx, TSR_SRC_TEXT, s_, 0, 0, 0, wi, 0, NULL, NULL }
#define RTBAD(type_, mn, mx, s_, msg_) { TSR_OPT_##type_, mn, mx, TSR_SRC_TEXT, s_, 0, 0, -ERANGE, 0, 0, NULL, msg_ }
#define RD(mn, mx, d_, wd) { TSR_OPT_DOUBLE, mn, mx, TSR_SRC_DOUBLE, NULL, 0, d_, 0, 0, wd, NULL, NULL }
#define RDBAD(mn, mx, d_, msg_) { TSR_OPT_DOUBLE, mn, mx, TSR_SRC_DOUBLE, NULL, 0, d_, -ERANGE, 0, 0, NULL, msg_ }
#define RI(type_, mn, mx, i_, wi) { TSR_OPT_##type_, mn, mx, TSR_SRC_INT, NULL, i_, 0, 0, wi, 0, NULL, NULL }
#define RIBAD(type_, mn, mx, i_, msg_) { TSR_OPT_##type_, mn, mx, TSR_SRC_INT, NULL, i_, 0, -ERANGE, 0, 0, NULL, msg_ }

static const struct pcase pcases[] = {
	/* Text (command line): booleans. */
	T(BOOL, "true", 1), T(BOOL, "TRUE", 1), T(BOOL, "yes", 1),
	T(BOOL, "Yes", 1), T(BOOL, "on", 1), T(BOOL, "1", 1),
	T(BOOL, "false", 0), T(BOOL, "False", 0), T(BOOL, "no", 0),
	T(BOOL, "off", 0), T(BOOL, "OFF", 0), T(BOOL, "0", 0),
	TBAD(BOOL, "maybe", -EINVAL,
	     "option 'opt': expected " BOOL_EXPECT ", got text \"maybe\""),
	TBAD(BOOL, "2", -EINVAL,
	     "option 'opt': expected " BOOL_EXPECT ", got text \"2\""),
	TBAD(BOOL, "truee", -EINVAL,
	     "option 'opt': expected " BOOL_EXPECT ", got text \"truee\""),
	TBAD(BOOL, "", -EINVAL,
	     "option 'opt': expected " BOOL_EXPECT ", got text \"\""),
	/* Text: integers. */
	T(INT, "42", 42), T(INT, "-7", -7), T(INT, "0", 0), T(INT, "0x10", 16), T(INT, "010", 10), T(INT, "-0x10", -16),
	T(INT, "9223372036854775807", INT64_MAX),
	T(INT, "-9223372036854775808", INT64_MIN),
	TBAD(INT, "9223372036854775808", -ERANGE,
	     "option 'opt': value does not fit an integer"),
	TBAD(INT, "-9223372036854775809", -ERANGE,
	     "option 'opt': value does not fit an integer"),
	TBAD(INT, "12abc", -EINVAL,
	     "option 'opt': expected an integer, got text \"12abc\""),
	TBAD(INT, "4M", -EINVAL,
	     "option 'opt': expected an integer, got text \"4M\""),
	TBAD(INT, "1.0", -EINVAL,
	     "option 'opt': expected an integer, got text \"1.0\""),
	TBAD(INT, "", -EINVAL, "option 'opt': expected an integer, got text \"\""),
	/* Text: floating point. */
	TD("2.5", 2.5), TD("-1e3", -1000.0), TD("1", 1.0), TD("0", 0.0),
	TBAD(DOUBLE, "nan", -EINVAL,
	     "option 'opt': expected a number, got text \"nan\""),
	TBAD(DOUBLE, "inf", -EINVAL,
	     "option 'opt': expected a number, got text \"inf\""),
	TBAD(DOUBLE, "1.5x", -EINVAL,
	     "option 'opt': expected a number, got text \"1.5x\""),
	TBAD(DOUBLE, "", -EINVAL, "option 'opt': expected a number, got text \"\""),
	/* Text: sizes (powers of 1024, suffix case-insensitive). */
	T(SIZE, "10", 10), T(SIZE, "0", 0), T(SIZE, "512B", 512),
	T(SIZE, "4k", 4096), T(SIZE, "2KB", 2048), T(SIZE, "3KiB", 3072),
	T(SIZE, "4M", 4194304), T(SIZE, "4MiB", 4194304),
	T(SIZE, "1G", 1073741824), T(SIZE, "1GiB", 1073741824),
	T(SIZE, "2GB", 2147483648), T(SIZE, "1T", 1099511627776),
	T(SIZE, "1TiB", 1099511627776),
	T(SIZE, "9223372036854775807", INT64_MAX),
	T(SIZE, "8388607T", 8388607ll << 40),
	TBAD(SIZE, "99999999999T", -ERANGE,
	     "option 'opt': value does not fit " SIZE_EXPECT),
	TBAD(SIZE, "8388608T", -ERANGE,
	     "option 'opt': value does not fit " SIZE_EXPECT),
	TBAD(SIZE, "9223372036854775808", -ERANGE,
	     "option 'opt': value does not fit " SIZE_EXPECT),
	TBAD(SIZE, "99999999999999999999", -ERANGE,
	     "option 'opt': value does not fit " SIZE_EXPECT),
	TBAD(SIZE, "-1", -EINVAL,
	     "option 'opt': expected " SIZE_EXPECT ", got text \"-1\""),
	TBAD(SIZE, "1.5G", -EINVAL,
	     "option 'opt': expected " SIZE_EXPECT ", got text \"1.5G\""),
	TBAD(SIZE, "4X", -EINVAL,
	     "option 'opt': expected " SIZE_EXPECT ", got text \"4X\""),
	TBAD(SIZE, "M", -EINVAL,
	     "option 'opt': expected " SIZE_EXPECT ", got text \"M\""),
	TBAD(SIZE, "4 M", -EINVAL,
	     "option 'opt': expected " SIZE_EXPECT ", got text \"4 M\""),
	TBAD(SIZE, "", -EINVAL, "option 'opt': expected " SIZE_EXPECT ", got text \"\""),
	/* Text: durations in milliseconds. */
	T(DURATION, "30s", 30000), T(DURATION, "5m", 300000),
	T(DURATION, "250ms", 250), T(DURATION, "1h", 3600000),
	T(DURATION, "100", 100), T(DURATION, "2d", 172800000),
	T(DURATION, "0s", 0),
	TBAD(DURATION, "5x", -EINVAL,
	     "option 'opt': expected " DUR_EXPECT ", got text \"5x\""),
	TBAD(DURATION, "-5s", -EINVAL,
	     "option 'opt': expected " DUR_EXPECT ", got text \"-5s\""),
	TBAD(DURATION, "1.5s", -EINVAL,
	     "option 'opt': expected " DUR_EXPECT ", got text \"1.5s\""),
	TBAD(DURATION, "s", -EINVAL,
	     "option 'opt': expected " DUR_EXPECT ", got text \"s\""),
	TBAD(DURATION, "99999999999999h", -ERANGE,
	     "option 'opt': value does not fit " DUR_EXPECT),
	/* Quoted strings in a file: a string, or the text of a size or
	 * duration; never silently a boolean or a number. */
	S(SIZE, "4M", 4194304), S(SIZE, "1GiB", 1073741824), S(SIZE, "10", 10),
	S(DURATION, "30s", 30000), S(DURATION, "250ms", 250),
	SBAD(BOOL, "false",
	     "option 'opt': expected " BOOL_EXPECT ", got a string \"false\""),
	SBAD(BOOL, "true",
	     "option 'opt': expected " BOOL_EXPECT ", got a string \"true\""),
	SBAD(INT, "5", "option 'opt': expected an integer, got a string \"5\""),
	SBAD(DOUBLE, "1.5",
	     "option 'opt': expected a number, got a string \"1.5\""),
	SBAD(SIZE, "lots",
	     "option 'opt': expected " SIZE_EXPECT ", got a string \"lots\""),
	SBAD(DURATION, "",
	     "option 'opt': expected " DUR_EXPECT ", got a string \"\""),
	/* Integers in a file. */
	I(INT, 5, 5, 0), I(INT, -5, -5, 0), I(INT, INT64_MIN, INT64_MIN, 0),
	I(DOUBLE, 3, 0, 3.0), I(DOUBLE, -2, 0, -2.0),
	I(SIZE, 4096, 4096, 0), I(SIZE, 0, 0, 0),
	I(DURATION, 1500, 1500, 0), I(DURATION, 0, 0, 0),
	IBAD(SIZE, -1, -ERANGE, "option 'opt': value does not fit " SIZE_EXPECT),
	IBAD(SIZE, INT64_MIN, -ERANGE,
	     "option 'opt': value does not fit " SIZE_EXPECT),
	IBAD(DURATION, -1, -ERANGE,
	     "option 'opt': value does not fit " DUR_EXPECT),
	IBAD(BOOL, 1, -EINVAL,
	     "option 'opt': expected " BOOL_EXPECT ", got an integer"),
	IBAD(STRING, 7, -EINVAL, "option 'opt': expected a string, got an integer"),
	/* Floating point in a file. */
	D(DOUBLE, 2.5, 2.5), D(DOUBLE, -0.125, -0.125),
	DBAD(DOUBLE, INFINITY,
	     "option 'opt': expected a number, got a floating-point number"),
	DBAD(DOUBLE, NAN,
	     "option 'opt': expected a number, got a floating-point number"),
	DBAD(INT, 2.0,
	     "option 'opt': expected an integer, got a floating-point number"),
	DBAD(SIZE, 1.0,
	     "option 'opt': expected " SIZE_EXPECT ", got a floating-point number"),
	DBAD(DURATION, 1.0,
	     "option 'opt': expected " DUR_EXPECT ", got a floating-point number"),
	DBAD(BOOL, 1.0,
	     "option 'opt': expected " BOOL_EXPECT ", got a floating-point number"),
	DBAD(STRING, 1.0,
	     "option 'opt': expected a string, got a floating-point number"),
	/* Booleans in a file. */
	B(BOOL, 1, 1), B(BOOL, 0, 0), B(BOOL, 7, 1),
	BBAD(INT, 1, "option 'opt': expected an integer, got a boolean"),
	BBAD(DOUBLE, 1, "option 'opt': expected a number, got a boolean"),
	BBAD(STRING, 1, "option 'opt': expected a string, got a boolean"),
	BBAD(SIZE, 1, "option 'opt': expected " SIZE_EXPECT ", got a boolean"),
	BBAD(DURATION, 0, "option 'opt': expected " DUR_EXPECT ", got a boolean"),
	/* Groups and lists are never scalars. */
	OBAD(BOOL, "option 'opt': expected " BOOL_EXPECT ", got a group or list"),
	OBAD(INT, "option 'opt': expected an integer, got a group or list"),
	OBAD(DOUBLE, "option 'opt': expected a number, got a group or list"),
	OBAD(STRING, "option 'opt': expected a string, got a group or list"),
	OBAD(SIZE, "option 'opt': expected " SIZE_EXPECT ", got a group or list"),
	OBAD(DURATION,
	     "option 'opt': expected " DUR_EXPECT ", got a group or list"),
	/* Bounds are inclusive at both ends. */
	RT(INT, "1", "10", "1", 1), RT(INT, "1", "10", "10", 10),
	RTBAD(INT, "1", "10", "0", "option 'opt': 0 is out of range [1, 10]"),
	RTBAD(INT, "1", "10", "11", "option 'opt': 11 is out of range [1, 10]"),
	RT(INT, "-5", NULL, "-5", -5),
	RTBAD(INT, "-5", NULL, "-6", "option 'opt': -6 is out of range [-5, +inf]"),
	RT(INT, NULL, "3", "3", 3),
	RTBAD(INT, NULL, "3", "4", "option 'opt': 4 is out of range [-inf, 3]"),
	RI(INT, "1", "10", 10, 10),
	RIBAD(INT, "1", "10", 11, "option 'opt': 11 is out of range [1, 10]"),
	RT(SIZE, "1M", "64G", "1M", 1048576),
	RT(SIZE, "1M", "64G", "1048576", 1048576),
	RT(SIZE, "1M", "64G", "64G", 68719476736),
	RTBAD(SIZE, "1M", "64G", "1048575",
	      "option 'opt': 1048575 is out of range [1M, 64G]"),
	RTBAD(SIZE, "1M", "64G", "68719476737",
	      "option 'opt': 68719476737 is out of range [1M, 64G]"),
	RI(SIZE, "1M", "64G", 1048576, 1048576),
	RIBAD(SIZE, "1M", "64G", 1048575,
	      "option 'opt': 1048575 is out of range [1M, 64G]"),
	RT(DURATION, "1s", "1h", "1s", 1000), RT(DURATION, "1s", "1h", "1000", 1000),
	RT(DURATION, "1s", "1h", "60m", 3600000),
	RTBAD(DURATION, "1s", "1h", "999ms",
	      "option 'opt': 999ms is out of range [1s, 1h]"),
	RTBAD(DURATION, "1s", "1h", "3600001",
	      "option 'opt': 3600001ms is out of range [1s, 1h]"),
	RD("0.5", "1.5", 0.5, 0.5), RD("0.5", "1.5", 1.5, 1.5),
	RDBAD("0.5", "1.5", 0.25, "option 'opt': 0.25 is out of range [0.5, 1.5]"),
	RDBAD("0.5", "1.5", 1.75, "option 'opt': 1.75 is out of range [0.5, 1.5]"),
};

static void
check_pcase(const struct pcase *c, size_t n)
{
	struct tsr_opt_def def = { .name = "opt", .type = c->type, .min = c->min,
				   .max = c->max };
	struct tsr_srcval src = { .name = "opt", .kind = c->kind, .s = c->s,
				  .i = c->i, .d = c->d, .where = "here:1" };
	struct tsr_opt_val out, sentinel;
	char err[ERRLEN] = "";
	int rc;

	memset(&sentinel, 0xA5, sizeof(sentinel));
	out = sentinel;
	rc = tsr_opt_parse(&def, &src, &out, err, sizeof(err));
	ck_assert_msg(rc == c->rc, "case %zu (%s): rc %d, want %d; err \"%s\"", n,
		      c->s ? c->s : "-", rc, c->rc, err);
	if (rc < 0) {
		ck_assert_msg(strcmp(err, c->msg) == 0,
			      "case %zu: message\n  \"%s\"\nwant\n  \"%s\"", n,
			      err, c->msg);
		/* A refused value leaves the output alone. */
		ck_assert_msg(memcmp(&out, &sentinel, sizeof(out)) == 0,
			      "case %zu: output written on failure", n);
		return;
	}
	ck_assert_uint_eq(out.type, c->type);
	ck_assert_uint_eq(out.isset, 1);
	switch (c->type) {
	case TSR_OPT_DOUBLE:
		ck_assert_msg(out.d == c->want_d, "case %zu: %.17g, want %.17g", n,
			      out.d, c->want_d);
		break;
	case TSR_OPT_STRING:
		break;
	default:
		ck_assert_msg(out.i == c->want_i,
			      "case %zu (%s): %lld, want %lld", n,
			      c->s ? c->s : "-", (long long)out.i,
			      (long long)c->want_i);
		break;
	}
}

START_TEST(test_parse_cases)
{
	check_pcase(&pcases[_i], (size_t)_i);
}
END_TEST

START_TEST(test_parse_strings)
{
	struct tsr_opt_def def = { .name = "label", .type = TSR_OPT_STRING };
	struct tsr_srcval text = { .name = "label", .kind = TSR_SRC_TEXT,
				   .s = "hello world" };
	struct tsr_srcval quoted = { .name = "label", .kind = TSR_SRC_STRING,
				     .s = "" };
	struct tsr_opt_val out;
	char err[ERRLEN];

	ck_assert_int_eq(tsr_opt_parse(&def, &text, &out, err, sizeof(err)), 0);
	ck_assert_uint_eq(out.type, TSR_OPT_STRING);
	ck_assert_uint_eq(out.isset, 1);
	/* Documented: the result points into the source; the caller copies. */
	ck_assert_ptr_eq(out.s, text.s);
	ck_assert_int_eq(tsr_opt_parse(&def, &quoted, &out, err, sizeof(err)), 0);
	ck_assert_ptr_eq(out.s, quoted.s);
	ck_assert_str_eq(out.s, "");
}
END_TEST

START_TEST(test_parse_choices)
{
	struct tsr_opt_def def = { .name = "mode", .type = TSR_OPT_STRING,
				   .choices = modes };
	static const char *const good[] = { "fast", "safe" };
	static const char *const bad[] = { "Fast", "", "fas", "safer" };
	struct tsr_opt_val out;
	char err[ERRLEN], want[ERRLEN];

	for (size_t k = 0; k < ARRAY_SIZE(good); k++) {
		struct tsr_srcval src = { .name = "mode", .kind = TSR_SRC_STRING,
					  .s = good[k] };
		ck_assert_int_eq(tsr_opt_parse(&def, &src, &out, err, sizeof(err)), 0);
		ck_assert_str_eq(out.s, good[k]);
		src.kind = TSR_SRC_TEXT;
		ck_assert_int_eq(tsr_opt_parse(&def, &src, &out, err, sizeof(err)), 0);
		ck_assert_str_eq(out.s, good[k]);
	}
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
		struct tsr_srcval src = { .name = "mode", .kind = TSR_SRC_STRING,
					  .s = bad[k] };
		ck_assert_int_eq(tsr_opt_parse(&def, &src, &out, err, sizeof(err)),
				 -EINVAL);
		snprintf(want, sizeof(want),
			 "option 'mode': \"%s\" is not one of: fast, safe", bad[k]);
		ck_assert_str_eq(err, want);
	}
}
END_TEST

/* ---- Option sets ------------------------------------------------------------*/

static const struct tsr_opt_def set_schema[] = {
	{ .name = "enabled", .type = TSR_OPT_BOOL, .def = "yes" },
	{ .name = "count", .type = TSR_OPT_INT, .def = "-3", .min = "-10",
	  .max = "10" },
	{ .name = "ratio", .type = TSR_OPT_DOUBLE, .def = "0.5" },
	{ .name = "mode", .type = TSR_OPT_STRING, .def = "safe",
	  .choices = modes },
	{ .name = "cache_size", .type = TSR_OPT_SIZE, .def = "64M" },
	{ .name = "timeout", .type = TSR_OPT_DURATION, .def = "30s" },
	{ .name = NULL },
};

START_TEST(test_optset_defaults)
{
	struct tsr_optset *set = NULL;
	const struct tsr_opts *opts;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_optset_build(set_schema, NULL, 0, "plugin t/x",
					  &set, err, sizeof(err)),
			 0);
	ck_assert_ptr_nonnull(set);
	opts = tsr_optset_opts(set);
	ck_assert_uint_eq(opts->count, 6);
	ck_assert_ptr_eq(opts->defs, set_schema);
	for (uint32_t k = 0; k < opts->count; k++) {
		ck_assert_uint_eq(opts->vals[k].type, set_schema[k].type);
		ck_assert_uint_eq(opts->vals[k].isset, 0);
		ck_assert_str_eq(tsr_optset_where(set, (int)k), "default");
		ck_assert_int_eq(tsr_optset_find(set, set_schema[k].name), (int)k);
		ck_assert_ptr_eq(tsr_optset_get(set, set_schema[k].name),
				 &opts->vals[k]);
	}
	ck_assert_int_eq(tsr_optset_get(set, "enabled")->i, 1);
	ck_assert_int_eq(tsr_optset_get(set, "count")->i, -3);
	ck_assert(tsr_optset_get(set, "ratio")->d == 0.5);
	ck_assert_str_eq(tsr_optset_get(set, "mode")->s, "safe");
	ck_assert_int_eq(tsr_optset_get(set, "cache_size")->i, 64 << 20);
	ck_assert_int_eq(tsr_optset_get(set, "timeout")->i, 30000);
	ck_assert_int_eq(tsr_optset_find(set, "nope"), -1);
	ck_assert_ptr_null(tsr_optset_get(set, "nope"));
	ck_assert_str_eq(tsr_optset_where(set, -1), "default");
	ck_assert_str_eq(tsr_optset_where(set, 6), "default");
	tsr_optset_destroy(set);
	tsr_optset_destroy(NULL);
}
END_TEST

START_TEST(test_optset_override_and_where)
{
	const struct tsr_srcval srcs[] = {
		{ .name = "count", .kind = TSR_SRC_INT, .i = 1, .where = "t.conf:1" },
		{ .name = "mode", .kind = TSR_SRC_STRING, .s = "fast",
		  .where = "t.conf:2" },
		{ .name = "count", .kind = TSR_SRC_INT, .i = 2, .where = "t.conf:5" },
		{ .name = "timeout", .kind = TSR_SRC_STRING, .s = "5m",
		  .where = "t.conf:6" },
		{ .name = "mode", .kind = TSR_SRC_TEXT, .s = "safe",
		  .where = "command line" },
		{ .name = "count", .kind = TSR_SRC_TEXT, .s = "7",
		  .where = "t.conf:9" },
		{ .name = "enabled", .kind = TSR_SRC_BOOL, .i = 0 },
	};
	struct tsr_optset *set = NULL;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_optset_build(set_schema, srcs, ARRAY_SIZE(srcs),
					  "plugin t/x", &set, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tsr_optset_get(set, "count")->i, 7);
	ck_assert_uint_eq(tsr_optset_get(set, "count")->isset, 1);
	ck_assert_str_eq(tsr_optset_where(set, tsr_optset_find(set, "count")),
			 "t.conf:9");
	ck_assert_str_eq(tsr_optset_get(set, "mode")->s, "safe");
	ck_assert_str_eq(tsr_optset_where(set, tsr_optset_find(set, "mode")),
			 "command line");
	ck_assert_int_eq(tsr_optset_get(set, "timeout")->i, 300000);
	ck_assert_str_eq(tsr_optset_where(set, tsr_optset_find(set, "timeout")),
			 "t.conf:6");
	/* A source without a location is reported as "?", not as a default. */
	ck_assert_int_eq(tsr_optset_get(set, "enabled")->i, 0);
	ck_assert_uint_eq(tsr_optset_get(set, "enabled")->isset, 1);
	ck_assert_str_eq(tsr_optset_where(set, tsr_optset_find(set, "enabled")),
			 "?");
	/* Untouched options keep their defaults. */
	ck_assert_uint_eq(tsr_optset_get(set, "ratio")->isset, 0);
	ck_assert_str_eq(tsr_optset_where(set, tsr_optset_find(set, "ratio")),
			 "default");
	ck_assert_int_eq(tsr_optset_get(set, "cache_size")->i, 64 << 20);
	tsr_optset_destroy(set);
}
END_TEST

START_TEST(test_optset_unknown_option)
{
	const struct tsr_srcval srcs[] = {
		{ .name = "count", .kind = TSR_SRC_INT, .i = 1, .where = "t.conf:1" },
		{ .name = "colour", .kind = TSR_SRC_STRING, .s = "red",
		  .where = "t.conf:4" },
	};
	const struct tsr_srcval one = { .name = "x", .kind = TSR_SRC_INT, .i = 1,
					.where = "command line" };
	struct tsr_optset *set = NULL;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_optset_build(set_schema, srcs, ARRAY_SIZE(srcs),
					  "plugin t/x", &set, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "t.conf:4: plugin t/x: unknown option 'colour' (known options: enabled, count, ratio, mode, cache_size, timeout)");
	/* A plugin without options. */
	ck_assert_int_eq(tsr_optset_build(NULL, &one, 1, "plugin t/none", &set,
					  err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "command line: plugin t/none: unknown option 'x' (known options: none)");
	/* ... which builds fine with no values. */
	ck_assert_int_eq(tsr_optset_build(NULL, NULL, 0, "plugin t/none", &set,
					  err, sizeof(err)),
			 0);
	ck_assert_uint_eq(tsr_optset_opts(set)->count, 0);
	ck_assert_int_eq(tsr_optset_find(set, "x"), -1);
	tsr_optset_destroy(set);
}
END_TEST

START_TEST(test_optset_bad_value)
{
	const struct tsr_srcval range[] = {
		{ .name = "count", .kind = TSR_SRC_INT, .i = 11, .where = "t.conf:2" },
	};
	const struct tsr_srcval type[] = {
		{ .name = "mode", .kind = TSR_SRC_STRING, .s = "fast",
		  .where = "t.conf:1" },
		{ .name = "enabled", .kind = TSR_SRC_STRING, .s = "false",
		  .where = "t.conf:3" },
	};
	struct tsr_optset *set = NULL;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_optset_build(set_schema, range, 1, "osd-3", &set,
					  err, sizeof(err)),
			 -ERANGE);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "t.conf:2: osd-3: option 'count': 11 is out of range [-10, 10]");
	ck_assert_int_eq(tsr_optset_build(set_schema, type, 2, "osd-3", &set, err,
					  sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "t.conf:3: osd-3: option 'enabled': expected " BOOL_EXPECT
			 ", got a string \"false\"");
}
END_TEST

START_TEST(test_optset_required)
{
	static const struct tsr_opt_def req[] = {
		{ .name = "size", .type = TSR_OPT_SIZE, .def = "1M" },
		{ .name = "path", .type = TSR_OPT_STRING, .flags = TSR_OPT_REQUIRED,
		  .help = "directory holding the objects" },
		{ .name = "salt", .type = TSR_OPT_INT, .flags = TSR_OPT_REQUIRED },
		{ .name = NULL },
	};
	const struct tsr_srcval only_size = { .name = "size", .kind = TSR_SRC_TEXT,
					      .s = "2M", .where = "cmd" };
	const struct tsr_srcval both[] = {
		{ .name = "path", .kind = TSR_SRC_TEXT, .s = "/srv", .where = "cmd" },
		{ .name = "salt", .kind = TSR_SRC_INT, .i = 9, .where = "f:1" },
	};
	struct tsr_optset *set = NULL;
	char err[ERRLEN] = "";

	ck_assert_int_eq(tsr_opt_schema_check(req, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_optset_build(req, &only_size, 1, "backend plugin 'file'",
					  &set, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "backend plugin 'file': required option 'path' is not set (directory holding the objects)");
	ck_assert_int_eq(tsr_optset_build(req, both, 1, "backend plugin 'file'",
					  &set, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(set);
	ck_assert_str_eq(err,
			 "backend plugin 'file': required option 'salt' is not set (no help)");
	ck_assert_int_eq(tsr_optset_build(req, both, 2, "backend plugin 'file'",
					  &set, err, sizeof(err)),
			 0);
	ck_assert_str_eq(tsr_optset_get(set, "path")->s, "/srv");
	ck_assert_int_eq(tsr_optset_get(set, "salt")->i, 9);
	ck_assert_int_eq(tsr_optset_get(set, "size")->i, 1 << 20);
	tsr_optset_destroy(set);

	/* a check of the values given does not ask for the required ones,
	 * and refuses a bad value as build does */
	const struct tsr_srcval bad_size = { .name = "size", .kind = TSR_SRC_TEXT,
					     .s = "lots", .where = "cmd" };
	ck_assert_int_eq(tsr_optset_check(req, NULL, 0, "backend plugin 'file'", err,
					  sizeof(err)), 0);
	ck_assert_int_eq(tsr_optset_check(req, &only_size, 1, "backend plugin 'file'", err,
					  sizeof(err)), 0);
	ck_assert_int_eq(tsr_optset_check(req, &bad_size, 1, "backend plugin 'file'", err,
					  sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "option 'size'") != NULL, "%s", err);
	/* a required option given a bad value is refused all the same */
	const struct tsr_srcval bad_salt = { .name = "salt", .kind = TSR_SRC_TEXT,
					     .s = "abc", .where = "cmd" };
	ck_assert_int_eq(tsr_optset_check(req, &bad_salt, 1, "backend plugin 'file'", err,
					  sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "option 'salt'") != NULL, "%s", err);
}
END_TEST

/* The set must own its strings: the caller's buffers (value and origin)
 * may be overwritten or freed as soon as build returns. */
START_TEST(test_optset_copies_strings)
{
	static const struct tsr_opt_def defs[] = {
		{ .name = "path", .type = TSR_OPT_STRING, .def = "/default" },
		{ .name = "label", .type = TSR_OPT_STRING, .def = "" },
		{ .name = NULL },
	};
	struct tsr_srcval srcs[3];
	char *v1 = strdup("/first"), *v2 = strdup("/srv/data");
	char *v3 = strdup("tag"), *where = strdup("conf.d/x.conf:12");
	struct tsr_optset *set = NULL;
	char err[ERRLEN] = "";

	ck_assert(v1 && v2 && v3 && where);
	srcs[0] = (struct tsr_srcval){ .name = "path", .kind = TSR_SRC_STRING,
				       .s = v1, .where = where };
	srcs[1] = (struct tsr_srcval){ .name = "path", .kind = TSR_SRC_TEXT,
				       .s = v2, .where = where };
	srcs[2] = (struct tsr_srcval){ .name = "label", .kind = TSR_SRC_STRING,
				       .s = v3, .where = where };
	ck_assert_int_eq(tsr_optset_build(defs, srcs, 3, "t", &set, err,
					  sizeof(err)),
			 0);
	memset(v1, 'X', strlen(v1));
	memset(v2, 'X', strlen(v2));
	memset(v3, 'X', strlen(v3));
	memset(where, 'X', strlen(where));
	free(v1);
	free(v2);
	free(v3);
	free(where);
	ck_assert_str_eq(tsr_optset_get(set, "path")->s, "/srv/data");
	ck_assert_str_eq(tsr_optset_get(set, "label")->s, "tag");
	ck_assert_str_eq(tsr_optset_where(set, 0), "conf.d/x.conf:12");
	ck_assert_str_eq(tsr_optset_where(set, 1), "conf.d/x.conf:12");
	ck_assert_str_eq(tsr_optset_opts(set)->vals[0].s, "/srv/data");
	tsr_optset_destroy(set);
}
END_TEST

/* ---- Formatting -------------------------------------------------------------*/

static const struct {
	uint32_t type;
	const char *in;
	const char *out; /* what tsr_opt_format prints */
} fmt_cases[] = {
	{ TSR_OPT_BOOL, "yes", "true" },
	{ TSR_OPT_BOOL, "off", "false" },
	{ TSR_OPT_INT, "0", "0" },
	{ TSR_OPT_INT, "0x10", "16" },
	{ TSR_OPT_INT, "-9223372036854775808", "-9223372036854775808" },
	{ TSR_OPT_INT, "9223372036854775807", "9223372036854775807" },
	{ TSR_OPT_DOUBLE, "0.5", "0.5" },
	{ TSR_OPT_DOUBLE, "0.1", "0.10000000000000001" },
	{ TSR_OPT_DOUBLE, "-2.5e-300", "-2.5e-300" },
	{ TSR_OPT_DOUBLE, "1e300", "1.0000000000000001e+300" },
	{ TSR_OPT_DOUBLE, "3", "3" },
	{ TSR_OPT_STRING, "hello world", "hello world" },
	{ TSR_OPT_STRING, "", "" },
	{ TSR_OPT_SIZE, "4M", "4194304" },
	{ TSR_OPT_SIZE, "0", "0" },
	{ TSR_OPT_SIZE, "8388607T", "9223370937343148032" },
	{ TSR_OPT_DURATION, "30s", "30000ms" },
	{ TSR_OPT_DURATION, "0", "0ms" },
	{ TSR_OPT_DURATION, "2d", "172800000ms" },
};

START_TEST(test_format_round_trip)
{
	struct tsr_opt_def def = { .name = "v", .type = fmt_cases[_i].type };
	struct tsr_srcval src = { .name = "v", .kind = TSR_SRC_TEXT,
				  .s = fmt_cases[_i].in };
	struct tsr_opt_val a, b;
	char err[ERRLEN], text[128], again[128];

	ck_assert_int_eq(tsr_opt_parse(&def, &src, &a, err, sizeof(err)), 0);
	tsr_opt_format(&a, text, sizeof(text));
	ck_assert_str_eq(text, fmt_cases[_i].out);
	src.s = text;
	ck_assert_msg(tsr_opt_parse(&def, &src, &b, err, sizeof(err)) == 0,
		      "\"%s\" does not parse back: %s", text, err);
	if (def.type == TSR_OPT_DOUBLE)
		ck_assert(memcmp(&a.d, &b.d, sizeof(a.d)) == 0);
	else if (def.type == TSR_OPT_STRING)
		ck_assert_str_eq(b.s, a.s);
	else
		ck_assert_int_eq(a.i, b.i);
	tsr_opt_format(&b, again, sizeof(again));
	ck_assert_str_eq(again, text);
}
END_TEST

START_TEST(test_format_truncates)
{
	struct tsr_opt_val v = { .type = TSR_OPT_SIZE, .i = 123456789 };
	char buf[5];

	memset(buf, 'Z', sizeof(buf));
	tsr_opt_format(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1234");
}
END_TEST

static Suite *
options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("schema");

	tcase_add_loop_test(tc, test_schema_refused, 0, (int)ARRAY_SIZE(bad_schemas));
	tcase_add_test(tc, test_schema_good);
	tcase_add_test(tc, test_type_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_parse_cases, 0, (int)ARRAY_SIZE(pcases));
	tcase_add_test(tc, test_parse_strings);
	tcase_add_test(tc, test_parse_choices);
	suite_add_tcase(s, tc);

	tc = tcase_create("optset");
	tcase_add_test(tc, test_optset_defaults);
	tcase_add_test(tc, test_optset_override_and_where);
	tcase_add_test(tc, test_optset_unknown_option);
	tcase_add_test(tc, test_optset_bad_value);
	tcase_add_test(tc, test_optset_required);
	tcase_add_test(tc, test_optset_copies_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_loop_test(tc, test_format_round_trip, 0, (int)ARRAY_SIZE(fmt_cases));
	tcase_add_test(tc, test_format_truncates);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(options_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
