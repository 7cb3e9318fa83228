/* options.c — parsing and checking typed option values against a schema. */
#include "config/options.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 63

const char *
tsr_opt_type_name(uint32_t type)
{
	switch (type) {
#define X(up, low, val) case TSR_OPT_##up: return #low;
	TSR_OPT_TYPE_MAP(X)
#undef X
	}
	return "unknown type";
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 if there is
 * none: overlong forms, surrogates and code points above U+10FFFF are not
 * valid. */
static size_t
utf8_len(const unsigned char *s)
{
	uint32_t cp, min;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, cp = s[0] & 0x1fu, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3, cp = s[0] & 0x0fu, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, cp = s[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The text that stands for the character at p: itself, or its bytes as
 * \xNN when it is not valid UTF-8 (one byte at a time) or a control
 * character.  Returns its length; *adv is how many bytes of p it covers. */
static size_t
quote_piece(const unsigned char *p, char esc[5], const char **piece,
	    size_t *adv)
{
	size_t l = utf8_len(p);

	if (l == 0 || (l == 1 && (*p < 0x20 || *p == 0x7f))) {
		snprintf(esc, 5, "\\x%02x", *p);
		*piece = esc;
		*adv = 1;
		return 4;
	}
	*piece = (const char *)p;
	*adv = l;
	return l;
}

const char *
tsr_opt_quote(const char *s, char *buf, size_t buflen)
{
	const unsigned char *p;
	const char *piece;
	size_t n = 0, total = 0, adv;
	char esc[5];
	bool fits;

	if (buflen < 4) {
		if (buflen)
			buf[0] = '\0';
		return buf;
	}
	for (p = (const unsigned char *)s; *p && total < buflen; p += adv)
		total += quote_piece(p, esc, &piece, &adv);
	fits = total < buflen;
	for (p = (const unsigned char *)s; *p; p += adv) {
		size_t plen = quote_piece(p, esc, &piece, &adv);
		/* when the whole does not fit, leave room for "..." */
		if (!fits && n + plen + 4 > buflen) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		memcpy(buf + n, piece, plen);
		n += plen;
	}
	buf[n] = '\0';
	return buf;
}

static const char *
src_kind_name(int kind)
{
	switch (kind) {
	case TSR_SRC_TEXT: return "text";
	case TSR_SRC_BOOL: return "a boolean";
	case TSR_SRC_INT: return "an integer";
	case TSR_SRC_DOUBLE: return "a floating-point number";
	case TSR_SRC_STRING: return "a string";
	default: return "a group or list";
	}
}

static const char *
type_expectation(uint32_t type)
{
	switch (type) {
	case TSR_OPT_BOOL: return "a boolean (true or false)";
	case TSR_OPT_INT: return "an integer";
	case TSR_OPT_DOUBLE: return "a number";
	case TSR_OPT_STRING: return "a string";
	case TSR_OPT_SIZE: return "a size (an integer number of bytes, or text such as \"64M\")";
	case TSR_OPT_DURATION: return "a duration (an integer number of milliseconds, or text such as \"30s\")";
	}
	return "?";
}

static bool
name_ok(const char *s)
{
	size_t n = 0;

	if (s == NULL || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (; s[n] != '\0'; n++)
		if (!(islower((unsigned char)s[n]) || isdigit((unsigned char)s[n]) ||
		      s[n] == '_'))
			return false;
	return n <= NAME_MAX_LEN;
}

/* ---- Text parsers: each accepts the whole string or fails. -----------*/

static int
parse_bool_text(const char *s, int64_t *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < TSR_ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int
parse_int_text(const char *s, int64_t *out)
{
	char *end;
	long long v;

	/* decimal, or hexadecimal with 0x as in libconfig files; never octal,
	 * so "010" means ten on a command line as in a file */
	int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ||
		   ((s[0] == '-' || s[0] == '+') && s[1] == '0' &&
		    (s[2] == 'x' || s[2] == 'X')) ? 16 : 10;
	errno = 0;
	v = strtoll(s, &end, base);
	if (end == s || *end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

static int
parse_double_text(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || !isfinite(v))
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A non-negative integer followed by a unit from table; a bare number gets
 * the unit whose multiplier is bare_mult. */
struct unit {
	const char *suffix;
	uint64_t mult;
};

static int
parse_scaled(const char *s, const struct unit *units, size_t nunits,
	     int64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	for (size_t i = 0; i < nunits; i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		if (v > (unsigned long long)INT64_MAX / units[i].mult)
			return -ERANGE;
		*out = (int64_t)(v * units[i].mult);
		return 0;
	}
	return -EINVAL;
}

static const struct unit size_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "K", 1ull << 10 }, { "KB", 1ull << 10 }, { "KiB", 1ull << 10 },
	{ "M", 1ull << 20 }, { "MB", 1ull << 20 }, { "MiB", 1ull << 20 },
	{ "G", 1ull << 30 }, { "GB", 1ull << 30 }, { "GiB", 1ull << 30 },
	{ "T", 1ull << 40 }, { "TB", 1ull << 40 }, { "TiB", 1ull << 40 },
};

static const struct unit duration_units[] = {
	{ "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
	{ "h", 3600000 }, { "d", 86400000 },
};

/* Parse text for a numeric/bool type into v. */
static int
parse_text(uint32_t type, const char *s, struct tsr_opt_val *v)
{
	switch (type) {
	case TSR_OPT_BOOL:
		return parse_bool_text(s, &v->i);
	case TSR_OPT_INT:
		return parse_int_text(s, &v->i);
	case TSR_OPT_DOUBLE:
		return parse_double_text(s, &v->d);
	case TSR_OPT_SIZE:
		return parse_scaled(s, size_units, TSR_ARRAY_SIZE(size_units),
				    &v->i);
	case TSR_OPT_DURATION:
		return parse_scaled(s, duration_units,
				    TSR_ARRAY_SIZE(duration_units), &v->i);
	case TSR_OPT_STRING:
		v->s = s;
		return 0;
	}
	return -EINVAL;
}

static bool
is_numeric(uint32_t type)
{
	return type == TSR_OPT_INT || type == TSR_OPT_DOUBLE ||
	       type == TSR_OPT_SIZE || type == TSR_OPT_DURATION;
}

/* Compare v with a bound written as text (already checked to parse). */
static int
cmp_bound(uint32_t type, const struct tsr_opt_val *v, const char *bound)
{
	struct tsr_opt_val b = { .type = type };

	if (parse_text(type, bound, &b) < 0)
		return 0;
	if (type == TSR_OPT_DOUBLE)
		return v->d < b.d ? -1 : v->d > b.d;
	return v->i < b.i ? -1 : v->i > b.i;
}

static int
check_bounds(const struct tsr_opt_def *def, const struct tsr_opt_val *v,
	     char *err, size_t errlen)
{
	char got[64];

	if (is_numeric(def->type)) {
		bool low = def->min && cmp_bound(def->type, v, def->min) < 0;
		bool high = def->max && cmp_bound(def->type, v, def->max) > 0;
		if (low || high) {
			tsr_opt_format(v, got, sizeof(got));
			return tsr_errf(err, errlen, -ERANGE,
					"option '%s': %s is out of range [%s, %s]",
					def->name, got, def->min ? def->min : "-inf",
					def->max ? def->max : "+inf");
		}
	}
	if (def->type == TSR_OPT_STRING && def->choices != NULL) {
		char list[256] = "";
		size_t n = 0;
		for (size_t i = 0; def->choices[i] != NULL; i++) {
			if (strcmp(def->choices[i], v->s) == 0)
				return 0;
			int w = snprintf(list + n, sizeof(list) - n, "%s%s",
					 i ? ", " : "", def->choices[i]);
			if (w > 0 && (size_t)w < sizeof(list) - n)
				n += (size_t)w;
		}
		char q[256];
		return tsr_errf(err, errlen, -EINVAL,
				"option '%s': \"%s\" is not one of: %s",
				def->name, tsr_opt_quote(v->s, q, sizeof(q)), list);
	}
	return 0;
}

int
tsr_opt_parse(const struct tsr_opt_def *def, const struct tsr_srcval *src,
	      struct tsr_opt_val *out, char *err, size_t errlen)
{
	struct tsr_opt_val v = { .type = def->type, .isset = 1 };
	int rc = -EINVAL;

	switch (src->kind) {
	case TSR_SRC_TEXT:
		rc = parse_text(def->type, src->s, &v);
		break;
	case TSR_SRC_STRING:
		/* A quoted string is a string, or the text form of a size or
		 * duration ("64M", "30s"); it is never silently a number or a
		 * boolean, so a quoted "false" is caught as a type error. */
		if (def->type == TSR_OPT_STRING || def->type == TSR_OPT_SIZE ||
		    def->type == TSR_OPT_DURATION)
			rc = parse_text(def->type, src->s, &v);
		break;
	case TSR_SRC_BOOL:
		if (def->type == TSR_OPT_BOOL) {
			v.i = src->i ? 1 : 0;
			rc = 0;
		}
		break;
	case TSR_SRC_INT:
		if (def->type == TSR_OPT_INT || def->type == TSR_OPT_SIZE ||
		    def->type == TSR_OPT_DURATION) {
			v.i = src->i;
			rc = 0;
			if (def->type != TSR_OPT_INT && v.i < 0)
				rc = -ERANGE;
		} else if (def->type == TSR_OPT_DOUBLE) {
			v.d = (double)src->i;
			rc = 0;
		}
		break;
	case TSR_SRC_DOUBLE:
		if (def->type == TSR_OPT_DOUBLE && isfinite(src->d)) {
			v.d = src->d;
			rc = 0;
		}
		break;
	default:
		break;
	}
	if (rc == -ERANGE)
		return tsr_errf(err, errlen, rc,
				"option '%s': value does not fit %s",
				def->name, type_expectation(def->type));
	if (rc < 0) {
		char q[256];
		if (src->kind == TSR_SRC_TEXT || src->kind == TSR_SRC_STRING)
			return tsr_errf(err, errlen, -EINVAL,
					"option '%s': expected %s, got %s \"%s\"",
					def->name, type_expectation(def->type),
					src_kind_name(src->kind),
					tsr_opt_quote(src->s, q, sizeof(q)));
		return tsr_errf(err, errlen, -EINVAL,
				"option '%s': expected %s, got %s", def->name,
				type_expectation(def->type),
				src_kind_name(src->kind));
	}
	rc = check_bounds(def, &v, err, errlen);
	if (rc < 0)
		return rc;
	*out = v;
	return 0;
}

void
tsr_opt_format(const struct tsr_opt_val *v, char *buf, size_t buflen)
{
	switch (v->type) {
	case TSR_OPT_BOOL:
		snprintf(buf, buflen, "%s", v->i ? "true" : "false");
		break;
	case TSR_OPT_DOUBLE:
		snprintf(buf, buflen, "%.17g", v->d);
		break;
	case TSR_OPT_STRING:
		snprintf(buf, buflen, "%s", v->s ? v->s : "");
		break;
	case TSR_OPT_DURATION:
		snprintf(buf, buflen, "%" PRId64 "ms", v->i);
		break;
	default:
		snprintf(buf, buflen, "%" PRId64, v->i);
		break;
	}
}

static int
check_bound_text(const struct tsr_opt_def *d, const char *which,
		 const char *text, char *err, size_t errlen)
{
	struct tsr_opt_val tmp = { .type = d->type };

	if (text == NULL)
		return 0;
	if (!is_numeric(d->type))
		return tsr_errf(err, errlen, -EINVAL,
				"option '%s': a %s bound on a %s option",
				d->name, which, tsr_opt_type_name(d->type));
	if (parse_text(d->type, text, &tmp) < 0)
		return tsr_errf(err, errlen, -EINVAL,
				"option '%s': %s bound \"%s\" is not %s",
				d->name, which, text,
				type_expectation(d->type));
	return 0;
}

int
tsr_opt_schema_check(const struct tsr_opt_def *defs, char *err, size_t errlen)
{
	char why[256];
	int rc;

	if (defs == NULL)
		return 0;
	for (size_t i = 0; defs[i].name != NULL; i++) {
		const struct tsr_opt_def *d = &defs[i];

		if (!name_ok(d->name))
			return tsr_errf(err, errlen, -EINVAL,
					"option #%zu: name \"%s\" is not of the form [a-z][a-z0-9_]* (at most %d characters)",
					i, d->name, NAME_MAX_LEN);
		for (size_t j = 0; j < i; j++)
			if (strcmp(defs[j].name, d->name) == 0)
				return tsr_errf(err, errlen, -EINVAL,
						"option '%s' is declared twice",
						d->name);
		if (d->type < TSR_OPT_BOOL || d->type > TSR_OPT_DURATION)
			return tsr_errf(err, errlen, -EINVAL,
					"option '%s': unknown type %u", d->name,
					d->type);
		if ((d->flags & ~TSR_OPT_REQUIRED) != 0)
			return tsr_errf(err, errlen, -EINVAL,
					"option '%s': unknown flags 0x%x",
					d->name, d->flags);
		if ((rc = check_bound_text(d, "lower", d->min, err, errlen)) < 0 ||
		    (rc = check_bound_text(d, "upper", d->max, err, errlen)) < 0)
			return rc;
		if (d->min && d->max) {
			struct tsr_opt_val lo = { .type = d->type };
			parse_text(d->type, d->min, &lo);
			if (cmp_bound(d->type, &lo, d->max) > 0)
				return tsr_errf(err, errlen, -EINVAL,
						"option '%s': lower bound %s is above upper bound %s",
						d->name, d->min, d->max);
		}
		if (d->choices != NULL && d->type != TSR_OPT_STRING)
			return tsr_errf(err, errlen, -EINVAL,
					"option '%s': choices on a %s option",
					d->name, tsr_opt_type_name(d->type));
		if (d->def == NULL) {
			if (!(d->flags & TSR_OPT_REQUIRED))
				return tsr_errf(err, errlen, -EINVAL,
						"option '%s': no default and not marked required",
						d->name);
			continue;
		}
		struct tsr_srcval src = { .name = d->name, .kind = TSR_SRC_TEXT,
					  .s = d->def };
		struct tsr_opt_val v;
		if (tsr_opt_parse(d, &src, &v, why, sizeof(why)) < 0) {
			/* why starts "option 'NAME': "; say it once */
			const char *reason = strstr(why, "': ");
			return tsr_errf(err, errlen, -EINVAL,
					"option '%s': default \"%s\" is invalid: %s",
					d->name, d->def, reason ? reason + 3 : why);
		}
	}
	return 0;
}

/* ---- Option sets --------------------------------------------------------*/

struct tsr_optset {
	struct tsr_opts opts;
	struct tsr_opt_val *vals;
	char **strings;      /* owned copies of string values */
	char **wheres;       /* owned copies of where each value came from */
};

void
tsr_optset_destroy(struct tsr_optset *set)
{
	if (set == NULL)
		return;
	for (uint32_t i = 0; i < set->opts.count; i++) {
		free(set->strings[i]);
		free(set->wheres[i]);
	}
	free(set->strings);
	free(set->wheres);
	free(set->vals);
	free(set);
}

static int
find_def(const struct tsr_opt_def *defs, uint32_t count, const char *name)
{
	for (uint32_t i = 0; i < count; i++)
		if (strcmp(defs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void
list_names(const struct tsr_opt_def *defs, uint32_t count, char *buf,
	   size_t buflen)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < count && n < buflen; i++) {
		int w = snprintf(buf + n, buflen - n, "%s%s", i ? ", " : "",
				 defs[i].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (count == 0)
		snprintf(buf, buflen, "none");
}

/* tsr_optset_build, which with need_required 0 leaves a required option
 * that no source sets unset instead of failing (tsr_optset_check). */
static int
build(const struct tsr_opt_def *defs, const struct tsr_srcval *srcs, size_t nsrc,
      const char *what, int need_required, struct tsr_optset **out, char *err,
      size_t errlen)
{
	struct tsr_optset *set;
	uint32_t count = 0;
	char why[512];
	int rc;

	while (defs != NULL && defs[count].name != NULL)
		count++;
	set = calloc(1, sizeof(*set));
	if (set == NULL)
		return -ENOMEM;
	set->opts.count = count;
	set->opts.defs = defs;
	set->vals = calloc(count ? count : 1, sizeof(*set->vals));
	set->strings = calloc(count ? count : 1, sizeof(char *));
	set->wheres = calloc(count ? count : 1, sizeof(char *));
	if (!set->vals || !set->strings || !set->wheres) {
		tsr_optset_destroy(set);
		return -ENOMEM;
	}
	set->opts.vals = set->vals;

	for (size_t k = 0; k < nsrc; k++) {
		const struct tsr_srcval *src = &srcs[k];
		const char *where = src->where ? src->where : "?";
		int idx = find_def(defs, count, src->name);

		if (idx < 0) {
			char known[1024], q[128];
			list_names(defs, count, known, sizeof(known));
			/* a command line's -o KEY may hold any bytes */
			rc = tsr_errf(err, errlen, -EINVAL,
				      "%s: %s: unknown option '%s' (known options: %s)",
				      where, what, tsr_opt_quote(src->name, q, sizeof(q)),
				      known);
			goto fail;
		}
		rc = tsr_opt_parse(&defs[idx], src, &set->vals[idx], why,
				   sizeof(why));
		if (rc < 0) {
			tsr_errf(err, errlen, rc, "%s: %s: %s", where, what, why);
			goto fail;
		}
		free(set->strings[idx]);
		set->strings[idx] = NULL;
		if (defs[idx].type == TSR_OPT_STRING) {
			set->strings[idx] = strdup(set->vals[idx].s);
			if (set->strings[idx] == NULL) {
				rc = -ENOMEM;
				goto fail;
			}
			set->vals[idx].s = set->strings[idx];
		}
		free(set->wheres[idx]);
		set->wheres[idx] = strdup(where);
		if (set->wheres[idx] == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	for (uint32_t i = 0; i < count; i++) {
		struct tsr_srcval dsrc = { .name = defs[i].name,
					   .kind = TSR_SRC_TEXT,
					   .s = defs[i].def };
		if (set->vals[i].isset || (defs[i].def == NULL && !need_required))
			continue;
		if (defs[i].def == NULL) {
			rc = tsr_errf(err, errlen, -EINVAL,
				      "%s: required option '%s' is not set (%s)",
				      what, defs[i].name,
				      defs[i].help ? defs[i].help : "no help");
			goto fail;
		}
		rc = tsr_opt_parse(&defs[i], &dsrc, &set->vals[i], why,
				   sizeof(why));
		if (rc < 0) {
			tsr_errf(err, errlen, rc, "%s: default of %s", what, why);
			goto fail;
		}
		set->vals[i].isset = 0;
		if (defs[i].type == TSR_OPT_STRING)
			set->vals[i].s = defs[i].def; /* static in the schema */
	}
	*out = set;
	return 0;
fail:
	tsr_optset_destroy(set);
	return rc;
}

int
tsr_optset_build(const struct tsr_opt_def *defs, const struct tsr_srcval *srcs,
		 size_t nsrc, const char *what, struct tsr_optset **out,
		 char *err, size_t errlen)
{
	return build(defs, srcs, nsrc, what, 1, out, err, errlen);
}

int
tsr_optset_check(const struct tsr_opt_def *defs, const struct tsr_srcval *srcs,
		 size_t nsrc, const char *what, char *err, size_t errlen)
{
	struct tsr_optset *set = NULL;
	int rc = build(defs, srcs, nsrc, what, 0, &set, err, errlen);

	if (rc == 0)
		tsr_optset_destroy(set);
	return rc;
}

const struct tsr_opts *
tsr_optset_opts(const struct tsr_optset *set)
{
	return &set->opts;
}

int
tsr_optset_find(const struct tsr_optset *set, const char *name)
{
	return find_def(set->opts.defs, set->opts.count, name);
}

const struct tsr_opt_val *
tsr_optset_get(const struct tsr_optset *set, const char *name)
{
	int i = tsr_optset_find(set, name);

	return i < 0 ? NULL : &set->vals[i];
}

const char *
tsr_optset_where(const struct tsr_optset *set, int idx)
{
	if (idx < 0 || (uint32_t)idx >= set->opts.count || !set->wheres[idx])
		return "default";
	return set->wheres[idx];
}
