/* util.c — error formatting, clocks and string helpers. */
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int
tsr_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

size_t
tsr_strlcpy(char *dst, const char *src, size_t dstlen)
{
	size_t n = strlen(src);

	if (dstlen > 0) {
		size_t c = n < dstlen - 1 ? n : dstlen - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
tsr_now_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t
tsr_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void
out_of_memory(size_t n)
{
	fprintf(stderr, "tessera: out of memory allocating %zu bytes\n", n);
	abort();
}

char *
tsr_xstrdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		out_of_memory(strlen(s) + 1);
	return d;
}

void *
tsr_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (p == NULL && n != 0 && size != 0)
		out_of_memory(n * size);
	return p;
}

void *
tsr_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		out_of_memory(n);
	return q;
}

void
tsr_cond_init_mono(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

int
tsr_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, uint64_t until)
{
	struct timespec ts = { (time_t)(until / 1000000000u),
			       (long)(until % 1000000000u) };

	return pthread_cond_timedwait(cond, mu, &ts);
}

void
tsr_uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
		 u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}
