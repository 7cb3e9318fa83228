/* ostore.c — the object-store engine shared by the backend plugins (see
 * ostore.h): set-up, logging, and object names for messages.
 *
 * Preparing.  A transaction as given cannot be made durable by logging it
 * and replaying it after a crash: a replayed clone would copy data that a
 * later write already changed.  So a commit thread first prepares each
 * transaction against an overlay of the store (overlay.c) — key/value
 * changes in a kvov, data changes as whole 64 KiB chunks in memory — where
 * every operation sees the ones before it and a failing one fails the
 * whole transaction with nothing written.  The backend's hooks then make
 * the overlay's end state durable in whatever way suits its storage: as a
 * journal of operations that read nothing (backend-file), or as new
 * extents plus one metadata batch (backend-blockdev).
 *
 * Order and group commit (commit.c).  Each collection's transactions
 * commit in submission order, different collections' side by side: a
 * batch of queued transactions is prepared into one overlay (one that
 * fails is left out and the overlay rebuilt without it), staged by the
 * backend beside other batches, and sealed with every other batch staged
 * meanwhile: one journal record, one flush.
 *
 * The other files: keys.c (the key layout), records.c (what the keys hold),
 * reads.c (the ABI's reads), fsck.c (the engine's checks); ostore_int.h
 * is what they share.
 */
#include "ostore_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const os_compression_choices[] = { "none", "zstd", NULL };
const char *const os_meta_compression_choices[] = { "none", "snappy", NULL };

void
os_log(struct os *os, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	os->host->logv(os->host->ctx, level, fmt, ap);
	va_end(ap);
}

/* An object name for messages: printable bytes as is, others as \xNN, cut
 * at 80 characters. */
const char *
os_oid_str(const void *oid, size_t n, char *buf, size_t buflen)
{
	const uint8_t *p = oid;
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < buflen; i++) {
		if (o > 80) {
			o += (size_t)snprintf(buf + o, buflen - o, "...");
			break;
		}
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			buf[o++] = (char)p[i];
		else
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", p[i]);
	}
	buf[o < buflen ? o : buflen - 1] = '\0';
	return buf;
}

/* ---- Set-up -----------------------------------------------------------------*/

void
os_init(struct os *os, const struct tsr_host *host, const struct os_hooks *hooks,
	const char *path, int compress, int level, uint64_t max_object,
	uint64_t min_free, uint64_t queue_max, unsigned nthreads)
{
	os->host = host;
	os->hooks = hooks;
	snprintf(os->path, sizeof(os->path), "%s", path);
	os->compress = compress;
	os->level = level;
	os->max_object = max_object;
	os->min_free = min_free;
	os->queue_max = queue_max;
	os->nthreads = nthreads ? nthreads : 1;
	os->batch_limit = 64u << 20;
	os->direct_min = 512u << 10;
	pthread_rwlock_init(&os->lock, NULL);
	pthread_mutex_init(&os->qlock, NULL);
	pthread_cond_init(&os->qcond, NULL);
	pthread_mutex_init(&os->slock, NULL);
	pthread_cond_init(&os->scond, NULL);
}

void
os_init_opts(struct os *os, const struct tsr_host *host,
	     const struct os_hooks *hooks, const char *path,
	     const struct tsr_opt_val *v)
{
	os_init(os, host, hooks, path, strcmp(v[0].s, "zstd") == 0, (int)v[1].i,
		(uint64_t)v[2].i, (uint64_t)v[3].i, (uint64_t)v[4].i,
		(unsigned)v[5].i);
	os->direct_min = (uint64_t)v[6].i;
	os->reread_cache = v[7].i != 0;
	os->inline_max = (uint64_t)v[8].i;
	os->kv_tuning.write_buffer = (size_t)v[9].i;
	os->kv_tuning.uncompressed = strcmp(v[10].s, "none") == 0;
}

void
os_fini(struct os *os)
{
	pthread_rwlock_destroy(&os->lock);
	pthread_mutex_destroy(&os->qlock);
	pthread_cond_destroy(&os->qcond);
	pthread_mutex_destroy(&os->slock);
	pthread_cond_destroy(&os->scond);
}
