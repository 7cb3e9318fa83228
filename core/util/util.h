/* util.h — small helpers every core module uses: error messages, clocks,
 * string copies.  Internal to the core and its programs; not plugin ABI. */
#ifndef TSR_UTIL_H
#define TSR_UTIL_H

#include <tessera/common.h>

#include <pthread.h>

/* Format a reason into a caller-supplied buffer; err may be NULL.  Returns
 * rc so that `return tsr_errf(err, errlen, -EINVAL, "...")` reads well. */
TSR_API int tsr_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	TSR_PRINTF(4, 5);

/* Copy src into dst[dstlen] with a NUL, truncating; returns strlen(src). */
TSR_API size_t tsr_strlcpy(char *dst, const char *src, size_t dstlen);

/* Nanoseconds: wall clock (CLOCK_REALTIME) and monotonic clock. */
TSR_API uint64_t tsr_now_ns(void);
TSR_API uint64_t tsr_mono_ns(void);
/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines
 * (tsr_mono_ns()-based), so a clock step cannot stretch a wait. */
TSR_API void tsr_cond_init_mono(pthread_cond_t *cond);
/* pthread_cond_timedwait on such a variable (mu held) until the monotonic
 * time until (tsr_mono_ns() scale): 0, or ETIMEDOUT once it has passed. */
TSR_API int tsr_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu,
				uint64_t until);

/* strdup that aborts with a message on allocation failure: for start-up
 * paths where running out of memory leaves nothing sensible to do. */
/* u as a UUID's text, 8-4-4-4-12 lower-case hex digits (core only). */
void tsr_uuid_str(const uint8_t u[16], char out[37]);
TSR_API char *tsr_xstrdup(const char *s);
TSR_API void *tsr_xcalloc(size_t n, size_t size);
/* realloc that aborts with a message on allocation failure (n 0: a
 * one-byte block, never NULL). */
TSR_API void *tsr_xrealloc(void *p, size_t n);

#define TSR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
