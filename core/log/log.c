/* log.c — the core logger. */
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const subsys_names[] = {
#define X(up, low) #low,
	TSR_LOG_SUBSYS_MAP(X)
#undef X
};

static const char *const level_names[] = {
#define X(up, low, val) [val] = #low,
	TSR_LOG_LEVEL_MAP(X)
#undef X
};

static const char *const level_tags[] = {
#define X(up, low, val) [val] = #up,
	TSR_LOG_LEVEL_MAP(X)
#undef X
};

#define LEVEL_MAX TSR_LOG_TRACE

static _Atomic int levels[TSR_SUB__COUNT] = {
#define X(up, low) [TSR_SUB_##up] = TSR_LOG_INFO,
	TSR_LOG_SUBSYS_MAP(X)
#undef X
};

/* The destination.  fd 2 means stderr.  A reopen dup2()s the new file over
 * the same descriptor number, so writers never see a closed fd. */
static _Atomic int log_fd = 2;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER; /* path, ident */
static char log_file[4096];
static char log_ident[64] = "tessera";

void
tsr_log_set_ident(const char *ident)
{
	pthread_mutex_lock(&log_lock);
	tsr_strlcpy(log_ident, ident, sizeof(log_ident));
	pthread_mutex_unlock(&log_lock);
}

static int
open_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	if (fd < 0)
		return tsr_errf(err, errlen, -errno, "cannot open log file %s: %s",
				path, strerror(errno));
	return fd;
}

int
tsr_log_open(const char *path, char *err, size_t errlen)
{
	int fd, old;

	if (path == NULL || path[0] == '\0') {
		tsr_log_close();
		return 0;
	}
	fd = open_file(path, err, errlen);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&log_lock);
	old = atomic_load(&log_fd);
	if (old != 2) {
		/* keep the descriptor number stable for concurrent writers */
		dup2(fd, old);
		close(fd);
	} else {
		atomic_store(&log_fd, fd);
	}
	tsr_strlcpy(log_file, path, sizeof(log_file));
	pthread_mutex_unlock(&log_lock);
	return 0;
}

int
tsr_log_reopen(void)
{
	int fd, rc = 0;
	char err[256];

	pthread_mutex_lock(&log_lock);
	if (log_file[0] != '\0') {
		fd = open_file(log_file, err, sizeof(err));
		if (fd < 0) {
			rc = fd;
		} else {
			dup2(fd, atomic_load(&log_fd));
			close(fd);
		}
	}
	pthread_mutex_unlock(&log_lock);
	if (rc < 0)
		tsr_logf(TSR_SUB_CORE, TSR_LOG_ERROR, "log reopen: %s", err);
	return rc;
}

void
tsr_log_close(void)
{
	pthread_mutex_lock(&log_lock);
	int old = atomic_exchange(&log_fd, 2);
	if (old != 2)
		close(old);
	log_file[0] = '\0';
	pthread_mutex_unlock(&log_lock);
}

const char *
tsr_log_path(void)
{
	return log_file[0] != '\0' ? log_file : NULL;
}

void
tsr_log_set_level(int subsys, int level)
{
	if (level < 0)
		level = 0;
	if (level > LEVEL_MAX)
		level = LEVEL_MAX;
	if (subsys < 0) {
		for (int i = 0; i < TSR_SUB__COUNT; i++)
			atomic_store_explicit(&levels[i], level,
					      memory_order_relaxed);
	} else if (subsys < TSR_SUB__COUNT) {
		atomic_store_explicit(&levels[subsys], level,
				      memory_order_relaxed);
	}
}

int
tsr_log_get_level(int subsys)
{
	if (subsys < 0 || subsys >= TSR_SUB__COUNT)
		return -1;
	return atomic_load_explicit(&levels[subsys], memory_order_relaxed);
}

bool
tsr_log_enabled(int subsys, int level)
{
	if (subsys < 0 || subsys >= TSR_SUB__COUNT)
		subsys = TSR_SUB_CORE;
	return level <= atomic_load_explicit(&levels[subsys],
					     memory_order_relaxed);
}

int
tsr_log_level_parse(const char *name)
{
	for (int i = 0; i <= LEVEL_MAX; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

const char *
tsr_log_level_name(int level)
{
	return level >= 0 && level <= LEVEL_MAX ? level_names[level] : "?";
}

int
tsr_log_subsys_parse(const char *name)
{
	for (int i = 0; i < TSR_SUB__COUNT; i++)
		if (strcmp(name, subsys_names[i]) == 0)
			return i;
	return -1;
}

const char *
tsr_log_subsys_name(int subsys)
{
	return subsys >= 0 && subsys < TSR_SUB__COUNT ? subsys_names[subsys]
						       : "?";
}

void
tsr_logv(int subsys, int level, const char *prefix, const char *fmt,
	 va_list ap)
{
	char line[4096];
	char ident[64];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int w;

	if (subsys < 0 || subsys >= TSR_SUB__COUNT)
		subsys = TSR_SUB_CORE;
	if (level < 0)
		level = 0;
	if (level > LEVEL_MAX)
		level = LEVEL_MAX;
	if (!tsr_log_enabled(subsys, level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	pthread_mutex_lock(&log_lock);
	memcpy(ident, log_ident, sizeof(ident));
	pthread_mutex_unlock(&log_lock);

	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	w = snprintf(line + n, sizeof(line) - n, ".%06ldZ %s %d %-5s %s: %s",
		     ts.tv_nsec / 1000, ident, (int)getpid(), level_tags[level],
		     subsys_names[subsys], prefix ? prefix : "");
	n += w > 0 ? (size_t)w : 0;
	if (n < sizeof(line)) {
		w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		n += w > 0 ? (size_t)w : 0;
	}
	if (n >= sizeof(line)) {
		/* truncated: say so rather than cut silently.  n == 4095 is a
		 * line that fits exactly; its '\n' takes the NUL's place. */
		n = sizeof(line) - 5;
		memcpy(line + n, "...", 3);
		n += 3;
	}
	line[n++] = '\n';
	/* One write per line; a short write to a full disk is not retried
	 * (logging must never block the daemon indefinitely). */
	ssize_t r = write(atomic_load(&log_fd), line, n);
	(void)r;
}

void
tsr_logf(int subsys, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tsr_logv(subsys, level, NULL, fmt, ap);
	va_end(ap);
}

void
tsr_log_rate_init(struct tsr_log_rate *r, unsigned burst, unsigned interval_ms)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->burst = burst;
	r->interval_ns = (uint64_t)interval_ms * 1000000u;
}

void
tsr_log_rated(struct tsr_log_rate *r, int subsys, int level, const char *fmt, ...)
{
	uint64_t now = tsr_mono_ns(), suppressed = 0;
	va_list ap;
	int log;

	if (!tsr_log_enabled(subsys, level))
		return;
	pthread_mutex_lock(&r->lock);
	if (r->start_ns == 0 || now - r->start_ns >= r->interval_ns) {
		r->start_ns = now;
		r->n = 0;
	}
	log = r->n < r->burst;
	if (log) {
		r->n++;
		suppressed = r->suppressed;
		r->suppressed = 0;
	} else {
		r->suppressed++;
	}
	pthread_mutex_unlock(&r->lock);
	if (!log)
		return;
	if (suppressed)
		tsr_logf(subsys, level, "(%" PRIu64 " similar lines suppressed)",
			 suppressed);
	va_start(ap, fmt);
	tsr_logv(subsys, level, NULL, fmt, ap);
	va_end(ap);
}
