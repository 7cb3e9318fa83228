/* log.h — the core logger: levels, subsystems, stderr or a file.
 *
 * One logger per process.  Each line is written with a single write(2), so
 * lines from several threads never interleave, and a file opened O_APPEND
 * can be rotated: move it away, send SIGHUP (the daemon calls
 * tsr_log_reopen()), and the next line goes to a fresh file.
 *
 * Line format:
 *   2026-12-03T06:31:46.123456Z osd-3 1234 WARN  msg: peer 127.0.0.1:6801 ...
 *   (UTC time, process identity, pid, level, subsystem, message)
 *
 * Levels are per subsystem and may be changed at any time from any thread
 * (the admin socket's `log level` does so).  Every entry point filters by
 * level; through the tsr_log() macros a disabled line costs one relaxed
 * atomic load and no argument evaluation.
 */
#ifndef TSR_LOG_H
#define TSR_LOG_H

#include <stdarg.h>
#include <tessera/common.h>

#include <pthread.h>

#define TSR_LOG_SUBSYS_MAP(X)  \
	X(CORE, core)          \
	X(CONF, conf)          \
	X(PLUGIN, plugin)      \
	X(DAEMON, daemon)      \
	X(ASOK, asok)          \
	X(EVENT, event)        \
	X(MSG, msg)            \
	X(MON, mon)            \
	X(OSD, osd)            \
	X(MDS, mds)            \
	X(CLIENT, client)      \
	X(TOOL, tool)

enum tsr_subsys {
#define X(up, low) TSR_SUB_##up,
	TSR_LOG_SUBSYS_MAP(X)
#undef X
	TSR_SUB__COUNT
};

/* Name this process in every line ("osd-3", "tessera"); copied. */
TSR_API void tsr_log_set_ident(const char *ident);
/* Log to path (appending, created 0640), or to stderr when path is NULL or
 * empty.  On failure the previous destination stays. */
TSR_API int tsr_log_open(const char *path, char *err, size_t errlen);
/* Reopen the current file (after rotation); no-op for stderr. */
TSR_API int tsr_log_reopen(void);
/* Back to stderr, closing any file. */
TSR_API void tsr_log_close(void);
TSR_API const char *tsr_log_path(void);

/* subsys < 0 sets every subsystem. */
TSR_API void tsr_log_set_level(int subsys, int level);
TSR_API int tsr_log_get_level(int subsys);
TSR_API bool tsr_log_enabled(int subsys, int level);

/* Names <-> numbers; the parse functions return -1 for an unknown name. */
TSR_API int tsr_log_level_parse(const char *name);
TSR_API const char *tsr_log_level_name(int level);
TSR_API int tsr_log_subsys_parse(const char *name);
TSR_API const char *tsr_log_subsys_name(int subsys);

/* prefix, when not NULL, is put before the message ("osd-3/backend: "). */
TSR_API void tsr_logv(int subsys, int level, const char *prefix,
		      const char *fmt, va_list ap);
TSR_API void tsr_logf(int subsys, int level, const char *fmt, ...)
	TSR_PRINTF(3, 4);

#define tsr_log(sub, lvl, ...)                                  \
	do {                                                    \
		if (tsr_log_enabled((sub), (lvl)))              \
			tsr_logf((sub), (lvl), __VA_ARGS__);    \
	} while (0)

/* A log line a peer can cause at will is logged at a rate: at most burst
 * lines per interval; the rest are counted, and the first line of a later
 * interval says how many were suppressed.  Thread-safe; a static limiter
 * is initialized with TSR_LOG_RATE_INIT. */
struct tsr_log_rate {
	pthread_mutex_t lock;
	uint64_t interval_ns;
	unsigned burst;
	uint64_t start_ns;         /* the current interval's start */
	unsigned n;                /* lines logged in it */
	uint64_t suppressed;       /* lines not logged since the last one */
};
#define TSR_LOG_RATE_INIT(burst_, interval_ms_)                              \
	{ PTHREAD_MUTEX_INITIALIZER, (uint64_t)(interval_ms_) * 1000000u,    \
	  (burst_), 0, 0, 0 }
/* A limiter made at run time (one per peer, say). */
TSR_API void tsr_log_rate_init(struct tsr_log_rate *r, unsigned burst,
			       unsigned interval_ms);
TSR_API void tsr_log_rated(struct tsr_log_rate *r, int subsys, int level,
			   const char *fmt, ...) TSR_PRINTF(4, 5);

#define TSR_LOG_ERR(sub, ...) tsr_log(TSR_SUB_##sub, TSR_LOG_ERROR, __VA_ARGS__)
#define TSR_LOG_WARN(sub, ...) tsr_log(TSR_SUB_##sub, TSR_LOG_WARN, __VA_ARGS__)
#define TSR_LOG_INFO(sub, ...) tsr_log(TSR_SUB_##sub, TSR_LOG_INFO, __VA_ARGS__)
#define TSR_LOG_DEBUG(sub, ...) tsr_log(TSR_SUB_##sub, TSR_LOG_DEBUG, __VA_ARGS__)

#endif
