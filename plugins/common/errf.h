/* errf.h — the object-store plugins' one error-message helper. */
#ifndef TSR_OSTORE_ERRF_H
#define TSR_OSTORE_ERRF_H

#include <stdarg.h>
#include <stdio.h>

/* Format a reason into err (when given) and return rc, so a failure reads
 * "return errf(err, errlen, -EIO, "%s: ...", path);". */
static inline __attribute__((format(printf, 4, 5))) int
errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#endif
