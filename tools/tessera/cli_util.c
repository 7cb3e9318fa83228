/* cli_util.c — messages and argument parsing the `tessera` subcommands
 * share (see cli.h). */
#include "cli.h"
#include "log/log.h"

#include <tessera/client.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int
cli_usage_err(const char *group, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tessera %s%s%s: ", group, cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see tessera %s%s%s --help)\n", group, cmd ? " " : "",
		cmd ? cmd : "");
	return CLI_USAGE;
}

int
cli_fail(const char *group, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tessera %s%s%s: ", group, cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_FAIL;
}

int
cli_bad_option(const char *group, const char *cmd, int c, char **argv)
{
	const char *word = argv[optind - 1];
	char shortopt[3] = { '-', (char)optopt, '\0' };

	/* optopt is the letter of a short option (which, in a cluster like
	 * "-xo", need not be argv[optind - 1]); for a long option it is 0 or
	 * the option's value */
	if (optopt > 0 && optopt < 256 && strncmp(word, "--", 2) != 0)
		word = shortopt;
	if (c == ':')
		return cli_usage_err(group, cmd, "option '%s' needs a value", word);
	return cli_usage_err(group, cmd, "unknown option '%s'", word);
}

int
cli_unknown(const char *group, const char *check, const char *why)
{
	fprintf(stderr, "tessera %s: the change may or may not have been applied: "
		"%s; check with `tessera %s`\n", group, why ? why : "no answer",
		check);
	return CLI_UNKNOWN;
}

int
cli_parse_uint(const char *group, const char *cmd, const char *opt,
	       const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *p = s;
	unsigned base = 10;
	uint64_t v = 0;
	bool ok = true;

	/* strtoull would take "-1", " 1" and "+1", and 010 as octal with
	 * base 0: the digits are read here */
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	ok = *p != '\0';
	for (; *p && ok; p++) {
		unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
			   : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10)
			   : *p >= 'A' && *p <= 'F' ? (unsigned)(*p - 'A' + 10) : 99;
		ok = d < base && v <= (UINT64_MAX - d) / base;
		v = v * base + d;
	}
	if (ok && v >= min && v <= max) {
		*out = v;
		return 0;
	}
	cli_usage_err(group, cmd, "%s takes an integer in [%" PRIu64 ", %" PRIu64
		      "], not '%s'", opt, min, max, s);
	return -1;
}

int
cli_client_pool(const char *group, const char *cmd, const char *conf, const char *who,
		uint64_t timeout_ms, const char *pool_name, struct tsr_client **c,
		int64_t *pool)
{
	char err[1024];

	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	if (tsr_client_connect(conf, who, timeout_ms, c, err, sizeof(err)) < 0) {
		*c = NULL;
		return cli_fail(group, cmd, "%s", err);
	}
	if (tsr_client_pool(*c, pool_name, pool) < 0) {
		cli_fail(group, cmd, "%s", tsr_client_why());
		tsr_client_shutdown(*c);
		*c = NULL;
		return CLI_FAIL;
	}
	return 0;
}
