/* options.h — typed option values checked against a schema.
 *
 * Both the core's own settings and every plugin's options are declared as
 * struct tsr_opt_def tables (tessera/plugin.h).  Values come from a source —
 * a libconfig file, `-o key=value` on a command line — as struct
 * tsr_srcval, carrying where they came from ("tessera.conf:12") so that
 * every error names the place to fix.
 */
#ifndef TSR_OPTIONS_H
#define TSR_OPTIONS_H

#include <tessera/plugin.h>

/* What a source holds before the schema gives it a type. */
enum tsr_src_kind {
	TSR_SRC_TEXT = 1,   /* untyped text from a command line: parsed by type */
	TSR_SRC_BOOL,
	TSR_SRC_INT,
	TSR_SRC_DOUBLE,
	TSR_SRC_STRING,     /* a quoted string in a file */
	TSR_SRC_OTHER       /* a group, list or array: never a scalar option */
};

struct tsr_srcval {
	const char *name;
	int kind;           /* enum tsr_src_kind */
	int64_t i;
	double d;
	const char *s;      /* TEXT, STRING */
	const char *where;  /* "file:line", "command line", ... */
};

/* Copy text from a file or a command line into buf[buflen] for a message:
 * bytes that are not valid UTF-8 and control characters become \xNN, so a
 * message never carries raw bytes to a terminal or a log; text longer than
 * buf ends in "...".  Returns buf. */
TSR_API const char *tsr_opt_quote(const char *s, char *buf, size_t buflen);

/* Human name of a type ("size"), and of a source kind ("a string"). */
TSR_API const char *tsr_opt_type_name(uint32_t type);

/* Check a schema: names well formed and unique, known types, defaults that
 * parse and lie within the bounds, min <= max, choices only on strings.
 * The reason names the offending option. */
TSR_API int tsr_opt_schema_check(const struct tsr_opt_def *defs, char *err,
				 size_t errlen);

/* Convert one source value to def's type, checking bounds and choices.
 * out->s, for strings, points into src (the caller copies it). */
TSR_API int tsr_opt_parse(const struct tsr_opt_def *def,
			  const struct tsr_srcval *src, struct tsr_opt_val *out,
			  char *err, size_t errlen);

/* Format a value as text that tsr_opt_parse accepts back. */
TSR_API void tsr_opt_format(const struct tsr_opt_val *v, char *buf,
			    size_t buflen);

/* A full set of values for a schema: user's values, then defaults. */
struct tsr_optset;

/* Build from nsrc source values; a later source of the same name overrides
 * an earlier one (global, then type, then type-id section).  what names the
 * owner in messages ("plugin backend/file", "osd-3").  Fails on an unknown
 * name, a value that does not parse or is out of bounds, or a required
 * option left unset. */
TSR_API int tsr_optset_build(const struct tsr_opt_def *defs,
			     const struct tsr_srcval *srcs, size_t nsrc,
			     const char *what, struct tsr_optset **out,
			     char *err, size_t errlen);
/* Check the values srcs give as tsr_optset_build would, but without
 * requiring the required options (what a schema check of a few values
 * asks): 0, or the error tsr_optset_build would give for them. */
TSR_API int tsr_optset_check(const struct tsr_opt_def *defs,
			     const struct tsr_srcval *srcs, size_t nsrc,
			     const char *what, char *err, size_t errlen);
TSR_API void tsr_optset_destroy(struct tsr_optset *set);
TSR_API const struct tsr_opts *tsr_optset_opts(const struct tsr_optset *set);
/* Index of name in the schema, or -1. */
TSR_API int tsr_optset_find(const struct tsr_optset *set, const char *name);
TSR_API const struct tsr_opt_val *tsr_optset_get(const struct tsr_optset *set,
						 const char *name);
/* Where the value in effect came from, or "default". */
TSR_API const char *tsr_optset_where(const struct tsr_optset *set, int idx);

#endif
