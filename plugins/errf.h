/* errf.h — the plugins' one error-message helper, shared by the placement
 * base (plugins/placebase) and the object-store engine (plugins/ostore).
 *
 * Plugins do not call the core's tsr_errf: it is not part of the plugin
 * ABI (the headers under tessera/), and a plugin sees nothing else of
 * the core. */
#ifndef TSR_PLUGIN_ERRF_H
#define TSR_PLUGIN_ERRF_H

#include <stdarg.h>
#include <stdio.h>

/* Format a reason into err (when given) and return rc, so a failure reads
 * "return errf(err, errlen, -EIO, "%s: ...", path);".  verrf is the same
 * for a caller that has a va_list (one that adds a prefix of its own). */
static inline __attribute__((format(printf, 4, 0))) int
verrf(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
{
	if (err != NULL && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	return rc;
}

static inline __attribute__((format(printf, 4, 5))) int
errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verrf(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

#endif
