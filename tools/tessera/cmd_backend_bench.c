/* cmd_backend_bench.c — `tessera backend bench`: a backend plugin measured
 * against the file system under it (see the help text and
 * bench/backend.sh).  Every write and read of the backend side goes through
 * the plugin's ops table, so what it measures is what an OSD gets from
 * that plugin with those options; the raw side is the same work with
 * plain system calls on the same file system. */
#include "cmd_backend.h"
#include "config/config.h"
#include "config/options.h"
#include "plugin/registry.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <tessera/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* ---- bench -------------------------------------------------------------- *
 *
 * Every backend figure counts durable writes only: a transaction counts
 * when its on_commit fired with 0, which the ABI defines as "survives a
 * crash".  The raw figures are the same promise made by hand: O_DIRECT
 * writes each followed by fdatasync (fsync of the file and its directory for
 * a new file).  Every phase stops at its time limit or its count limit,
 * whichever comes first; the count limits keep a fast disk from filling. */

#define MIB (1024u * 1024u)
#define OBJ_SIZE (4u * MIB)     /* the seq-write and prefill object */
#define BLK 4096u               /* small writes and reads, and alignment */
#define ATTR_LEN 128            /* create-small's SETATTR value: about an
				   OSD's object-info attribute */
#define SEQ_QD_HIGH 4           /* the second seq-write queue depth */
#define MAX_SMALL_OPS 1000000u  /* count limits, below the space limits */
#define MAX_IO_OPS 10000000u
#define PREFILL_NS (600ull * 1000000000ull)
/* The longest wait for one commit before the backend is declared stuck: a
 * checkpoint of a big journal on a slow disk takes seconds, not minutes. */
#define STUCK_NS (300ull * 1000000000ull)

enum { ROW_SEQ1, ROW_SEQ4, ROW_OVERWRITE, ROW_CREATE, ROW_RREAD, ROW_SREAD, NROWS };

struct row {
	const char *workload;
	const char *unit;
	uint32_t qd;              /* the backend's; raw is always 1 */
	bool per_mib;             /* unit is MiB/s of OBJ_SIZE operations */
	uint64_t ops[2];          /* [0] backend, [1] raw */
	double sec[2];
};

struct bench {
	struct be be;
	const char *cmd;
	double seconds;
	uint32_t nobj, qd;
	bool nobj_given;        /* --objects: kept whatever the store's size */
	bool drop, json;
	uint32_t wflags;          /* WRITE flags: held data unless --copy-data */
	char raw[PATH_MAX], rawdir[PATH_MAX];
	bool made_dir, made_raw, made_rawdir, mounted;
	char meta[PATH_MAX];      /* a metadata directory beside DIR, if any */
	bool meta_existed;
	int rawfd, rawdirfd;      /* DIR.raw, DIR.raw.d */
	bool direct;              /* O_DIRECT works on this file system */
	uint8_t *pat;             /* OBJ_SIZE random bytes, 4 KiB aligned */
	uint8_t *rbuf;            /* OBJ_SIZE, 4 KiB aligned */
	uint64_t rng;
	uint64_t seq_max, small_max;
	uint64_t raw_written;     /* bytes seq-write put at the start of raw */
	uint64_t base;            /* index of a phase's first op (slices go on
				     where the last one stopped) */
	struct tsr_coll_id cid;
	const char *prefix;       /* object names of the running phase */
	char fstype[32];
	char drop_note[160];
	bool drop_failed;

	/* transactions in flight; on_commit runs on a backend thread */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t inflight;
	uint64_t committed;
	int first_err;
	bool stuck;

	struct row rows[NROWS];
};

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static uint64_t
rnd(struct bench *b)
{
	/* xorshift64*: reproducible from run to run, and plenty for offsets */
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return b->rng * 2685821657736338717ull;
}

static void
on_commit(void *arg, int rc)
{
	struct bench *b = arg;

	pthread_mutex_lock(&b->mu);
	b->inflight--;
	if (rc == 0)
		b->committed++;
	else if (b->first_err == 0)
		b->first_err = rc;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* Wait (b->mu held) for a commit until the absolute monotonic time until;
 * false when that time has passed. */
static bool
wait_commit(struct bench *b, uint64_t until)
{
	return tsr_cond_wait_until(&b->cv, &b->mu, until) != ETIMEDOUT;
}

static TSR_PRINTF(2, 3) void
progress(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tessera backend %s: ", b->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* One transaction of a phase: ops (room for 2) and the object name. */
typedef void (*txn_fill)(struct bench *b, uint64_t i, struct tsr_txn_op *ops,
			 uint32_t *nops, char *oid, size_t *oid_len);

static void
fill_write_obj(struct bench *b, uint64_t i, struct tsr_txn_op *ops,
	       uint32_t *nops, char *oid, size_t *oid_len)
{
	*oid_len = (size_t)snprintf(oid, 64, "%s.%08" PRIu64, b->prefix, i);
	ops[0] = (struct tsr_txn_op){ .type = TSR_TXN_WRITE, .cid = b->cid,
		.oid = oid, .oid_len = *oid_len, .off = 0, .len = OBJ_SIZE,
		.data = b->pat, .flags = b->wflags };
	*nops = 1;
}

static void
fill_overwrite(struct bench *b, uint64_t i, struct tsr_txn_op *ops,
	       uint32_t *nops, char *oid, size_t *oid_len)
{
	uint64_t obj = rnd(b) % b->nobj, off = rnd(b) % (OBJ_SIZE / BLK) * BLK;

	(void)i;
	*oid_len = (size_t)snprintf(oid, 64, "fill.%08" PRIu64, obj);
	/* the bytes already there: the object keeps reading as pat, which
	 * the read phases check */
	ops[0] = (struct tsr_txn_op){ .type = TSR_TXN_WRITE, .cid = b->cid,
		.oid = oid, .oid_len = *oid_len, .off = off, .len = BLK,
		.data = b->pat + off, .flags = b->wflags };
	*nops = 1;
}

static void
fill_create(struct bench *b, uint64_t i, struct tsr_txn_op *ops,
	    uint32_t *nops, char *oid, size_t *oid_len)
{
	*oid_len = (size_t)snprintf(oid, 64, "small.%08" PRIu64, i);
	ops[0] = (struct tsr_txn_op){ .type = TSR_TXN_WRITE, .cid = b->cid,
		.oid = oid, .oid_len = *oid_len, .off = 0, .len = BLK,
		.data = b->pat, .flags = b->wflags };
	ops[1] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = b->cid,
		.oid = oid, .oid_len = *oid_len, .key = "_", .key_len = 1,
		.val = b->pat + BLK, .val_len = ATTR_LEN };
	*nops = 2;
}

/* Start counting commits afresh; nothing may be in flight. */
static void
count_reset(struct bench *b)
{
	pthread_mutex_lock(&b->mu);
	b->committed = 0;
	b->first_err = 0;
	pthread_mutex_unlock(&b->mu);
}

/* Wait for every transaction in flight, even after an error: on_commit
 * must not outlive b.  0, or -1 after a message naming what: stuck, or a
 * transaction failed. */
static int
drain(struct bench *b, const char *what, uint64_t *committed)
{
	pthread_mutex_lock(&b->mu);
	uint64_t until = tsr_mono_ns() + STUCK_NS;
	while (b->inflight > 0 && !b->stuck)
		if (!wait_commit(b, until))
			b->stuck = true;
	uint32_t left = b->inflight;
	int cerr = b->first_err;
	if (committed)
		*committed = b->committed;
	pthread_mutex_unlock(&b->mu);
	if (b->stuck) {
		fail(b->cmd, "%s: the backend has not committed %u transaction(s) in "
		     "%llu s; giving up", what, left, STUCK_NS / 1000000000ull);
		return -1;
	}
	if (cerr < 0) {
		fail(b->cmd, "%s: a transaction failed: %s (the backend's log above may "
		     "say more)", what, strerror(-cerr));
		return -1;
	}
	return 0;
}

/* Submit up to max transactions, qd in flight, for up to ns nanoseconds,
 * then wait for every one.  *ops gets those committed with 0, *sec the
 * time from the first submit to the last commit.  0, or -1 after a
 * message. */
static int
run_txns(struct bench *b, const char *what, uint32_t qd, uint64_t max,
	 uint64_t ns, txn_fill fill, uint64_t *ops, double *sec)
{
	struct tsr_txn_op txops[2];
	struct tsr_txn txn = { .ops = txops };
	char oid[64], msg[256] = "";
	size_t oid_len;
	uint64_t t0 = tsr_mono_ns(), end = t0 + ns, i;
	int rc = 0, drc;

	count_reset(b);
	for (i = 0; i < max && !interrupted; i++) {
		uint64_t now = tsr_mono_ns();
		if (now >= end)
			break;
		pthread_mutex_lock(&b->mu);
		uint64_t until = now + STUCK_NS;
		while (b->inflight >= qd && b->first_err == 0 && !b->stuck)
			if (!wait_commit(b, until))
				b->stuck = true;
		bool stop = b->first_err != 0 || b->stuck;
		if (!stop)
			b->inflight++;
		pthread_mutex_unlock(&b->mu);
		if (stop)
			break;
		fill(b, b->base + i, txops, &txn.nops, oid, &oid_len);
		rc = b->be.ops->submit(b->be.h, &txn, on_commit, b);
		if (rc < 0) {
			pthread_mutex_lock(&b->mu);
			b->inflight--;
			pthread_mutex_unlock(&b->mu);
			snprintf(msg, sizeof(msg), "submit() of %.*s refused it: %s",
				 (int)oid_len, oid, strerror(-rc));
			break;
		}
	}
	drc = drain(b, what, ops);
	*sec = (double)(tsr_mono_ns() - t0) / 1e9;
	if (drc < 0)
		return -1;
	if (rc < 0) {
		fail(b->cmd, "%s: %s", what, msg);
		return -1;
	}
	return 0;
}

/* One synchronous operation of a phase: 0, or -1 with msg filled. */
typedef int (*sync_op)(struct bench *b, uint64_t i, char *msg, size_t msglen);

static int
run_sync(struct bench *b, const char *what, uint64_t max, uint64_t ns,
	 sync_op op, uint64_t *ops, double *sec)
{
	char msg[512] = "";
	uint64_t t0 = tsr_mono_ns(), end = t0 + ns, i;

	for (i = 0; i < max && !interrupted && tsr_mono_ns() < end; i++)
		if (op(b, b->base + i, msg, sizeof(msg)) < 0)
			break;
	*ops = i;
	*sec = (double)(tsr_mono_ns() - t0) / 1e9;
	if (msg[0]) {
		fail(b->cmd, "%s: %s", what, msg);
		return -1;
	}
	return 0;
}

static int
pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf = (const uint8_t *)buf + w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int
pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t r = pread(fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		buf = (uint8_t *)buf + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* raw: 4 MiB appended to the raw file, then fdatasync */
static int
raw_seq_write(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	uint64_t off = i * OBJ_SIZE;
	int rc = pwrite_full(b->rawfd, b->pat, OBJ_SIZE, off);

	if (rc == 0 && fdatasync(b->rawfd) < 0)
		rc = -errno;
	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "%s: write at %" PRIu64 ": %s",
				b->raw, off, strerror(-rc));
	b->raw_written = off + OBJ_SIZE;
	return 0;
}

/* raw: 4 KiB over the prefilled file, then fdatasync */
static int
raw_overwrite(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	uint64_t off = rnd(b) % ((uint64_t)b->nobj * (OBJ_SIZE / BLK)) * BLK;
	int rc = pwrite_full(b->rawfd, b->pat + off % OBJ_SIZE, BLK, off);

	(void)i;
	if (rc == 0 && fdatasync(b->rawfd) < 0)
		rc = -errno;
	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "%s: write at %" PRIu64 ": %s",
				b->raw, off, strerror(-rc));
	return 0;
}

/* raw: a new 4 KiB file, synced with its directory entry */
static int
raw_create(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	char name[32];
	int fd, rc = 0;

	snprintf(name, sizeof(name), "f%08" PRIu64, i);
	fd = openat(b->rawdirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC |
		    (b->direct ? O_DIRECT : 0), 0600);
	if (fd < 0)
		return tsr_errf(msg, msglen, -1, "%s/%s: %s", b->rawdir, name,
				strerror(errno));
	rc = pwrite_full(fd, b->pat, BLK, 0);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && fsync(b->rawdirfd) < 0)
		rc = -errno;
	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "%s/%s: %s", b->rawdir, name,
				strerror(-rc));
	return 0;
}

static int
raw_rand_read(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	uint64_t off = rnd(b) % ((uint64_t)b->nobj * (OBJ_SIZE / BLK)) * BLK;
	int rc = pread_full(b->rawfd, b->rbuf, BLK, off);

	(void)i;
	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "%s: read at %" PRIu64 ": %s",
				b->raw, off, strerror(-rc));
	if (memcmp(b->rbuf, b->pat + off % OBJ_SIZE, BLK) != 0)
		return tsr_errf(msg, msglen, -1, "%s: read at %" PRIu64
				" returned other bytes than were written", b->raw,
				off);
	return 0;
}

static int
raw_seq_read(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	uint64_t off = i % b->nobj * OBJ_SIZE;
	int rc = pread_full(b->rawfd, b->rbuf, OBJ_SIZE, off);

	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "%s: read at %" PRIu64 ": %s",
				b->raw, off, strerror(-rc));
	if (memcmp(b->rbuf, b->pat, OBJ_SIZE) != 0)
		return tsr_errf(msg, msglen, -1, "%s: read at %" PRIu64
				" returned other bytes than were written", b->raw,
				off);
	return 0;
}

static int
be_read(struct bench *b, uint64_t obj, uint64_t off, uint64_t len, char *msg,
	size_t msglen)
{
	char oid[64];
	int n = snprintf(oid, sizeof(oid), "fill.%08" PRIu64, obj);
	uint64_t got = 0;
	int rc = b->be.ops->read(b->be.h, &b->cid, oid, (size_t)n, off, len, b->rbuf,
				 &got);

	if (rc < 0)
		return tsr_errf(msg, msglen, -1, "read of %s at %" PRIu64 ": %s",
				oid, off, strerror(-rc));
	if (got != len)
		return tsr_errf(msg, msglen, -1, "read of %" PRIu64 " bytes of %s "
				"at %" PRIu64 " returned %" PRIu64, len, oid, off,
				got);
	if (memcmp(b->rbuf, b->pat + off, len) != 0)
		return tsr_errf(msg, msglen, -1, "read of %s at %" PRIu64
				" returned other bytes than were written", oid, off);
	return 0;
}

static int
be_rand_read(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	uint64_t obj = rnd(b) % b->nobj, off = rnd(b) % (OBJ_SIZE / BLK) * BLK;

	(void)i;
	return be_read(b, obj, off, BLK, msg, msglen);
}

static int
be_seq_read(struct bench *b, uint64_t i, char *msg, size_t msglen)
{
	return be_read(b, i % b->nobj, 0, OBJ_SIZE, msg, msglen);
}

/* sync(), then ask the kernel to drop clean caches, so reads come from the
 * disk.  A container usually may not: say so once and go on. */
static void
drop_caches(struct bench *b)
{
	int fd, e = 0;

	if (!b->drop || b->drop_failed)
		return;
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "3\n", 2) != 2)
		e = errno;
	if (fd >= 0)
		close(fd);
	if (e) {
		b->drop_failed = true;
		snprintf(b->drop_note, sizeof(b->drop_note),
			 "could not drop (/proc/sys/vm/drop_caches: %s)", strerror(e));
		fprintf(stderr, "tessera backend %s: warning: %s; reads may be served "
			"from the page cache\n", b->cmd, b->drop_note);
	}
}

static const char *
fs_type_name(long type, char *buf, size_t buflen)
{
	/* statfs(2) magic numbers; ext2, ext3 and ext4 share theirs */
	static const struct { unsigned long magic; const char *name; } types[] = {
		{ 0xEF53, "ext4" }, { 0x58465342, "xfs" }, { 0x9123683E, "btrfs" },
		{ 0x01021994, "tmpfs" }, { 0x794c7630, "overlay" },
	};

	for (size_t i = 0; i < TSR_ARRAY_SIZE(types); i++)
		if ((unsigned long)type == types[i].magic)
			return types[i].name;
	snprintf(buf, buflen, "0x%lx", (unsigned long)type);
	return buf;
}

/* Options as text a user could give back: sizes with their suffix. */
static void
format_opt(const struct tsr_opt_val *v, char *buf, size_t buflen)
{
	static const char suffix[] = "KMGT";
	int64_t x = v->i;
	int k = -1;

	if (v->type != TSR_OPT_SIZE || x <= 0) {
		tsr_opt_format(v, buf, buflen);
		return;
	}
	while (k < 3 && x % 1024 == 0) {
		x /= 1024;
		k++;
	}
	if (k < 0)
		snprintf(buf, buflen, "%" PRId64, x);
	else
		snprintf(buf, buflen, "%" PRId64 "%c", x, suffix[k]);
}

/* nftw() callbacks take no argument: the first failure is kept here */
static char *nftw_err_path;
static int nftw_err;

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path) < 0 && nftw_err == 0) {
		nftw_err = errno;
		nftw_err_path = strdup(path);
	}
	return 0;
}

/* Remove path and what is under it, staying on its file system. */
static void
rm_tree(struct bench *b, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return;
	nftw_err = 0;
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && nftw_err == 0)
		nftw_err = errno;
	if (nftw_err)
		fprintf(stderr, "tessera backend %s: could not remove %s: %s\n", b->cmd,
			nftw_err_path ? nftw_err_path : path, strerror(nftw_err));
	free(nftw_err_path);
	nftw_err_path = NULL;
}

/* Announce one run of a workload: side 0 the backend, 1 raw. */
static struct row *
phase(struct bench *b, int row, int side, char *what, size_t len)
{
	struct row *w = &b->rows[row];

	snprintf(what, len, "%s qd%u %s", w->workload, side ? 1u : w->qd,
		 side ? "raw" : b->be.name);
	progress(b, "%s (up to %g s)", what, b->seconds);
	return w;
}

void
be_bench_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera backend bench --plugin NAME -o path=DIR [-o KEY=VALUE]...\n"
		"                             [--seconds S] [--objects N] [--qd N]\n"
		"                             [--drop-caches] [--plugin-dir DIR] [--format plain|json]\n"
		"Measure a backend plugin against the file system under it.  The bench makes\n"
		"a store at DIR (which must not exist) with mkfs, mounts it, runs the\n"
		"workloads below through the plugin's submit() and read(), unmounts it and\n"
		"removes it, and runs the same workloads with plain system calls on a scratch\n"
		"file DIR.raw and directory DIR.raw.d next to it.  Everything it made is\n"
		"removed at the end, also after a failure, Ctrl-C, SIGTERM, or a reader of\n"
		"its output that went away (`| head -1`: exit status 1).\n"
		"\n"
		"Workloads (each stops after S seconds or its count limit):\n"
		"  seq-write-4m       a new object of one 4 MiB WRITE per transaction, at\n"
		"                     queue depth 1 and %d                     -> MiB/s\n"
		"  rand-overwrite-4k  a 4 KiB aligned WRITE at a random offset of a\n"
		"                     prefilled object, queue depth 1         -> IOPS\n"
		"  create-small       a new object per transaction: a 4 KiB WRITE and a\n"
		"                     %d-byte SETATTR, queue depth --qd      -> creates/s\n"
		"  rand-read-4k       read() of 4 KiB at random in the prefilled objects\n"
		"                                                             -> IOPS\n"
		"  seq-read-4m        read() of whole prefilled objects       -> MiB/s\n"
		"A write counts only once its commit callback reported success, i.e. once\n"
		"it is durable; reads are checked against the bytes written.\n"
		"\n"
		"The raw baseline, on the same file system, at queue depth 1: O_DIRECT\n"
		"4 MiB writes appended to DIR.raw, each followed by fdatasync (measured\n"
		"in turns of 0.5 s with the backend's seq-write-4m at depth 1, each turn\n"
		"ending with a syncfs charged to it, so both meet the disk in the same\n"
		"state and each pays for its own write-back); 4 KiB\n"
		"overwrites of DIR.raw (as large as the prefill) each followed by fdatasync;\n"
		"new 4 KiB files in DIR.raw.d, each written, fsync'd, and its directory\n"
		"fsync'd; O_DIRECT reads of DIR.raw.  The ratio is backend / raw: 1.0 means\n"
		"the backend costs nothing over the disk.  Data that goes through a journal\n"
		"is written twice, so about 0.5 is good for journaled writes; data written\n"
		"in place (new objects, in some backends) can come near 1.0.  Backend rows\n"
		"at queue depth above 1 are set against raw at 1: batching commits can\n"
		"take a backend past 1.0 there.\n"
		"\n"
		"      --seconds S         time limit of each workload (default 5)\n"
		"      --objects N         objects of 4 MiB prefilled for the overwrite and\n"
		"                          read workloads (default 64)\n"
		"      --qd N              transactions in flight for create-small (default 16)\n"
		"      --drop-caches       sync and write 3 to /proc/sys/vm/drop_caches before\n"
		"                          each read workload (needs root outside a container);\n"
		"                          without it backend reads may come from the page\n"
		"                          cache, while raw reads never do (O_DIRECT)\n"
		"      --copy-data         submit WRITEs without TSR_TXN_F_DATA_HELD, so the\n"
		"                          backend copies their data before submit() returns\n"
		"                          (by default the data is held until the commit\n"
		"                          callback and may go to disk from where it is, as\n"
		"                          an OSD's received buffers do)\n",
		SEQ_QD_HIGH, ATTR_LEN);
	be_common_help(f);
	fprintf(f,
		"\n"
		"Example:\n"
		"  tessera backend bench --plugin file -o path=/var/tmp/tb -o journal_size=1G\n"
		"\n"
		"Exit status: 0 when every workload ran, 1 when one failed (or DIR exists),\n"
		"2 for a usage error.\n");
}

/* Print the results. */
static void
bench_report(struct bench *b, const struct utsname *un, long ncpu, uint64_t mem)
{
	const struct tsr_opts *opts = tsr_instance_opts(b->be.inst);
	const struct tsr_plugin_desc *d = tsr_plugin_desc(b->be.cp.plugin);
	const char *drop = !b->drop ? "not dropped" : b->drop_failed ? b->drop_note : "dropped";
	struct tsr_sbuf o;
	char v[256];

	tsr_sbuf_init(&o);
	if (b->json) {
		tsr_sbuf_printf(&o, "{\"plugin\": ");
		tsr_sbuf_json_str(&o, d->name);
		tsr_sbuf_printf(&o, ", \"version\": ");
		tsr_sbuf_json_str(&o, d->version);
		tsr_sbuf_printf(&o, ", \"path\": ");
		tsr_sbuf_json_str(&o, b->be.path);
		tsr_sbuf_printf(&o, ", \"fs_type\": ");
		tsr_sbuf_json_str(&o, b->fstype);
		tsr_sbuf_printf(&o, ", \"kernel\": ");
		tsr_sbuf_json_str(&o, un->release);
		tsr_sbuf_printf(&o, ", \"cpus\": %ld, \"memory_bytes\": %" PRIu64
				", \"options\": {", ncpu, mem);
		for (uint32_t i = 0; i < opts->count; i++) {
			format_opt(&opts->vals[i], v, sizeof(v));
			tsr_sbuf_printf(&o, "%s", i ? ", " : "");
			tsr_sbuf_json_str(&o, opts->defs[i].name);
			tsr_sbuf_printf(&o, ": ");
			tsr_sbuf_json_str(&o, v);
		}
		tsr_sbuf_printf(&o, "}, \"seconds\": %g, \"objects\": %u, \"qd\": %u, "
				"\"raw_o_direct\": %s, \"data_held\": %s, \"drop_caches\": ",
				b->seconds, b->nobj, b->qd, b->direct ? "true" : "false",
				b->wflags ? "true" : "false");
		tsr_sbuf_json_str(&o, drop);
		tsr_sbuf_printf(&o, ", \"results\": [");
		for (int r = 0; r < NROWS; r++) {
			const struct row *w = &b->rows[r];
			double val[2];
			for (int k = 0; k < 2; k++)
				val[k] = w->sec[k] > 0 ? w->ops[k] * (w->per_mib ? 4.0 : 1.0) /
							 w->sec[k] : 0;
			tsr_sbuf_printf(&o, "%s\n  {\"workload\": \"%s\", \"qd\": %u, "
					"\"unit\": \"%s\", \"backend\": %.6g, \"raw\": %.6g, "
					"\"ratio\": ", r ? "," : "", w->workload, w->qd, w->unit,
					val[0], val[1]);
			if (val[1] > 0)
				tsr_sbuf_printf(&o, "%.6g", val[0] / val[1]);
			else
				tsr_sbuf_printf(&o, "null");
			tsr_sbuf_printf(&o, ", \"backend_ops\": %" PRIu64 ", \"backend_seconds\": "
					"%.6f, \"raw_ops\": %" PRIu64 ", \"raw_seconds\": %.6f}",
					w->ops[0], w->sec[0], w->ops[1], w->sec[1]);
		}
		tsr_sbuf_printf(&o, "\n]}\n");
	} else {
		tsr_sbuf_printf(&o, "backend:    %s %s (%s)\n", d->name, d->version,
				tsr_plugin_path(b->be.cp.plugin));
		tsr_sbuf_printf(&o, "store:      %s on %s; raw scratch %s and %s\n",
				b->be.path, b->fstype, b->raw, b->rawdir);
		tsr_sbuf_printf(&o, "machine:    Linux %s, %ld CPUs, %.1f GiB RAM\n",
				un->release, ncpu, mem / (1024.0 * 1024 * 1024));
		tsr_sbuf_printf(&o, "options:   ");
		for (uint32_t i = 0; i < opts->count; i++) {
			format_opt(&opts->vals[i], v, sizeof(v));
			tsr_sbuf_printf(&o, " %s=%s%s", opts->defs[i].name, v,
					opts->vals[i].isset ? "" : "*");
		}
		tsr_sbuf_printf(&o, "  (* default)\n");
		tsr_sbuf_printf(&o, "run:        up to %g s per workload, %u objects of "
				"4 MiB prefilled, create-small at queue depth %u\n",
				b->seconds, b->nobj, b->qd);
		tsr_sbuf_printf(&o, "writes:     %s\n", b->wflags
				? "data held by the caller until commit (TSR_TXN_F_DATA_HELD)"
				: "data copied by submit() (--copy-data)");
		tsr_sbuf_printf(&o, "raw:        %s, a sync per write, queue depth 1\n",
				b->direct ? "O_DIRECT" : "buffered (no O_DIRECT on this file system)");
		if (b->drop && !b->drop_failed)
			tsr_sbuf_printf(&o, "page cache: dropped before each read workload\n");
		else
			tsr_sbuf_printf(&o, "page cache: %s%s: backend reads may come from "
					"memory, raw reads never do\n", drop,
					b->drop ? "" : " (no --drop-caches)");
		tsr_sbuf_printf(&o, "\n%-18s %4s %-10s %12s %12s %7s\n", "workload", "qd",
				"unit", "backend", "raw", "ratio");
		for (int r = 0; r < NROWS; r++) {
			const struct row *w = &b->rows[r];
			double val[2];
			for (int k = 0; k < 2; k++)
				val[k] = w->sec[k] > 0 ? w->ops[k] * (w->per_mib ? 4.0 : 1.0) /
							 w->sec[k] : 0;
			tsr_sbuf_printf(&o, "%-18s %4u %-10s %12.1f %12.1f", w->workload, w->qd,
					w->unit, val[0], val[1]);
			if (val[1] > 0)
				tsr_sbuf_printf(&o, " %7.2f\n", val[0] / val[1]);
			else
				tsr_sbuf_printf(&o, " %7s\n", "n/a");
		}
	}
	fputs(tsr_sbuf_str(&o), stdout);
	tsr_sbuf_release(&o);
}

int
be_bench_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		COMMON_LONGOPTS,
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "objects", required_argument, NULL, OPT_OBJECTS },
		{ "qd", required_argument, NULL, OPT_QD },
		{ "drop-caches", no_argument, NULL, OPT_DROP },
		{ "copy-data", no_argument, NULL, OPT_COPY },
		{ NULL, 0, NULL, 0 }
	};
	/* static: on_commit may still run after a stuck backend is given up
	 * on, so b must outlive this function */
	static struct bench b;
	struct sigaction sa, old_int, old_term, old_pipe;
	char err[2048] = "", msg[2560];
	bool sig_set = false;
	uint64_t n;
	int c, rc;

	memset(&b, 0, sizeof(b));
	b.cmd = "bench";
	b.seconds = 5;
	b.nobj = 64;
	b.qd = 16;
	b.wflags = TSR_TXN_F_DATA_HELD;
	b.rawfd = b.rawdirfd = -1;
	b.rng = 0x9e3779b97f4a7c15ull;
	b.cid = (struct tsr_coll_id){ .pool = 1, .pg = 0, .shard = TSR_SHARD_NONE };
	if (be_init(&b.be, "bench", argc) != 0)
		return CLI_FAIL;
	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		int k = be_common_option(&b.be, c, &b.json);
		if (k == 1)
			continue;
		rc = CLI_USAGE;
		if (k < 0)
			goto out_args;
		switch (c) {
		case OPT_SECONDS: {
			char *end;
			errno = 0;
			b.seconds = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(b.seconds > 0) ||
			    b.seconds > 86400) {
				usage_err(b.cmd, "--seconds takes a number in (0, 86400], not '%s'",
					  optarg);
				goto out_args;
			}
			break;
		}
		case OPT_OBJECTS:
			if (parse_uint(b.cmd, "--objects", optarg, 1, 65536, &n) < 0)
				goto out_args;
			b.nobj = (uint32_t)n;
			b.nobj_given = true;
			break;
		case OPT_QD:
			if (parse_uint(b.cmd, "--qd", optarg, 1, 4096, &n) < 0)
				goto out_args;
			b.qd = (uint32_t)n;
			break;
		case OPT_DROP: b.drop = true; break;
		case OPT_COPY: b.wflags = 0; break;
		default:
			bad_option(b.cmd, c, argv);
			goto out_args;
		}
	}
	rc = CLI_USAGE;
	if (optind < argc) {
		usage_err(b.cmd, "unexpected argument '%s'", argv[optind]);
		goto out_args;
	}
	if (be_check_common(&b.be) != 0)
		goto out_args;
	rc = CLI_FAIL;

	/* DIR and the scratch next to it must be new: they are removed at the
	 * end, and nobody's data may be */
	const char *dir = b.be.path;
	struct stat st;
	if ((size_t)snprintf(b.raw, sizeof(b.raw), "%s.raw", dir) >= sizeof(b.raw) ||
	    (size_t)snprintf(b.rawdir, sizeof(b.rawdir), "%s.raw.d", dir) >= sizeof(b.rawdir)) {
		fail(b.cmd, "%s: path too long", dir);
		goto out_args;
	}
	const char *fresh[] = { dir, b.raw, b.rawdir };
	for (size_t i = 0; i < TSR_ARRAY_SIZE(fresh); i++) {
		if (lstat(fresh[i], &st) == 0) {
			fail(b.cmd, "%s already exists: the bench makes it and removes it "
			     "at the end, so give a path that does not exist", fresh[i]);
			goto out_args;
		}
		if (errno != ENOENT) {
			fail(b.cmd, "%s: %s", fresh[i], strerror(errno));
			goto out_args;
		}
	}
	char parent[PATH_MAX];
	tsr_strlcpy(parent, dir, sizeof(parent));
	char *slash = strrchr(parent, '/');
	if (slash == NULL)
		tsr_strlcpy(parent, ".", sizeof(parent));
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	struct statfs sfs;
	if (statfs(parent, &sfs) < 0) {
		fail(b.cmd, "%s (the directory to hold %s): %s", parent, dir, strerror(errno));
		goto out_args;
	}
	tsr_strlcpy(b.fstype, fs_type_name((long)sfs.f_type, msg, sizeof(msg)),
		    sizeof(b.fstype));

	if (posix_memalign((void **)&b.pat, BLK, OBJ_SIZE) != 0 ||
	    posix_memalign((void **)&b.rbuf, BLK, OBJ_SIZE) != 0) {
		fail(b.cmd, "out of memory");
		goto out_args;
	}
	/* random bytes: nothing for a compressing or zero-detecting backend
	 * to save */
	for (size_t i = 0; i < OBJ_SIZE; i += 8) {
		uint64_t x = rnd(&b);
		memcpy(b.pat + i, &x, 8);
	}
	pthread_mutex_init(&b.mu, NULL);
	tsr_cond_init_mono(&b.cv);

	if (be_open(&b.be) < 0)
		goto out_args;

	/* from here on there is something to remove: Ctrl-C stops the
	 * workloads and lets the cleanup run (a second one kills) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* a reader that went away (`| head -1`) must not kill us before the
	 * cleanup: writes to it fail with EPIPE instead, the report's is
	 * caught below, and a progress line lost on stderr costs nothing */
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = 0;
	sigaction(SIGPIPE, &sa, &old_pipe);
	sig_set = true;

	/* Some backends keep metadata beside DIR (blockdev: meta_path, by
	 * default DIR.meta): take it back too if this run made it. */
	snprintf(b.meta, sizeof(b.meta), "%s.meta", dir);
	for (size_t i = 0; i < b.be.nsrc; i++)
		if (strcmp(b.be.srcs[i].name, "meta_path") == 0 && b.be.srcs[i].s &&
		    b.be.srcs[i].s[0])
			tsr_strlcpy(b.meta, b.be.srcs[i].s, sizeof(b.meta));
	b.meta_existed = lstat(b.meta, &st) == 0;
	progress(&b, "mkfs of a %s store at %s (%s)", b.be.name, dir, b.fstype);
	b.made_dir = true;
	int brc = b.be.ops->mkfs(b.be.h, err, sizeof(err));
	if (brc < 0) {
		be_reason_with_path(msg, sizeof(msg), dir, err, brc);
		fail(b.cmd, "mkfs: %s", msg);
		goto out;
	}
	err[0] = '\0';
	brc = b.be.ops->mount(b.be.h, err, sizeof(err));
	if (brc < 0) {
		be_reason_with_path(msg, sizeof(msg), dir, err, brc);
		fail(b.cmd, "mount: %s", msg);
		goto out;
	}
	b.mounted = true;

	/* Space: the journal is already allocated; keep half of what is free,
	 * after the prefill (store and raw), and share the rest among the
	 * three seq-write runs and the two create-small runs.  What is free
	 * is the least of the file system's (where the raw file goes, and a
	 * file backend's store) and the store's own (a blockdev image is as
	 * large as its size option, whatever the file system holds): a small
	 * store gets fewer prefilled objects, not ENOSPC. */
	struct statvfs sv;
	struct tsr_statfs bsf;
	if (statvfs(dir, &sv) < 0) {
		fail(b.cmd, "%s: statvfs: %s", dir, strerror(errno));
		goto out;
	}
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (b.be.ops->statfs && b.be.ops->statfs(b.be.h, &bsf) == 0 && bsf.available < avail)
		avail = bsf.available;
	if (!b.nobj_given && avail / 2 < 2 * (uint64_t)b.nobj * OBJ_SIZE + 16ull * OBJ_SIZE) {
		uint64_t fit = avail / 2 > 16ull * OBJ_SIZE
				       ? (avail / 2 - 16ull * OBJ_SIZE) / (2 * OBJ_SIZE) : 0;
		if (fit >= 2) {
			progress(&b, "a store of %" PRIu64 " MiB free: %" PRIu64 " objects "
				 "prefilled, not %u", avail / MIB, fit, b.nobj);
			b.nobj = (uint32_t)fit;
		}
	}
	uint64_t prefill = (uint64_t)b.nobj * OBJ_SIZE;
	uint64_t need = 2 * prefill + (uint64_t)16 * OBJ_SIZE;
	if (avail / 2 < need) {
		fail(b.cmd, "%s: %" PRIu64 " MiB free; the bench needs at least %" PRIu64
		     " MiB (twice the prefill of %u objects of 4 MiB, and room to write)",
		     dir, avail / MIB, 2 * need / MIB, b.nobj);
		goto out;
	}
	uint64_t budget = avail / 2 - 2 * prefill;
	b.seq_max = budget / 4 / 3 / OBJ_SIZE;
	/* a small create takes a block of data and some of metadata */
	b.small_max = budget / 4 / 2 / (4 * BLK);
	if (b.small_max > MAX_SMALL_OPS)
		b.small_max = MAX_SMALL_OPS;

	struct tsr_txn_op mk = { .type = TSR_TXN_MKCOLL, .cid = b.cid };
	struct tsr_txn mkt = { .nops = 1, .ops = &mk };
	double sec;
	uint64_t ops;
	count_reset(&b);
	pthread_mutex_lock(&b.mu);
	b.inflight++;
	pthread_mutex_unlock(&b.mu);
	brc = b.be.ops->submit(b.be.h, &mkt, on_commit, &b);
	if (brc < 0) {
		pthread_mutex_lock(&b.mu);
		b.inflight--;
		pthread_mutex_unlock(&b.mu);
		fail(b.cmd, "making a collection: submit() refused it: %s", strerror(-brc));
		goto out;
	}
	if (drain(&b, "making a collection", NULL) < 0)
		goto out;

	uint64_t ns = (uint64_t)(b.seconds * 1e9);
	static const struct row rows[NROWS] = {
		[ROW_SEQ1] = { .workload = "seq-write-4m", .unit = "MiB/s", .qd = 1,
			       .per_mib = true },
		[ROW_SEQ4] = { .workload = "seq-write-4m", .unit = "MiB/s",
			       .qd = SEQ_QD_HIGH, .per_mib = true },
		[ROW_OVERWRITE] = { .workload = "rand-overwrite-4k", .unit = "IOPS", .qd = 1 },
		[ROW_CREATE] = { .workload = "create-small", .unit = "creates/s" },
		[ROW_RREAD] = { .workload = "rand-read-4k", .unit = "IOPS", .qd = 1 },
		[ROW_SREAD] = { .workload = "seq-read-4m", .unit = "MiB/s", .qd = 1,
				.per_mib = true },
	};
	memcpy(b.rows, rows, sizeof(rows));
	b.rows[ROW_CREATE].qd = b.qd;
	struct row *w;
	char what[64];
#define PHASE(row, side) (w = phase(&b, row, side, what, sizeof(what)))
#define SLICE_NS 500000000ull

	/* Queue depth 1: the backend and raw in turns of SLICE_NS, so that
	 * both see the disk as it is at that moment: a virtual disk's speed
	 * drifts by 2x within minutes, and a ratio of two runs measured one
	 * after the other would measure the drift as much as the backend. */
	b.rawfd = open(b.raw, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (b.rawfd < 0) {
		fail(b.cmd, "%s: %s", b.raw, strerror(errno));
		goto out;
	}
	b.made_raw = true;
	/* tmpfs before Linux 6.6 has no O_DIRECT: measure buffered, and say so */
	int fl = fcntl(b.rawfd, F_GETFL);
	b.direct = fl >= 0 && fcntl(b.rawfd, F_SETFL, fl | O_DIRECT) == 0;
	w = &b.rows[ROW_SEQ1];
	snprintf(what, sizeof(what), "seq-write-4m qd1 %s and raw, in turns", b.be.name);
	progress(&b, "%s (up to %g s each)", what, b.seconds);
	b.prefix = "seq-qd1";
	while (w->sec[0] < b.seconds && w->sec[1] < b.seconds && !interrupted &&
	       w->ops[0] < b.seq_max && w->ops[1] < b.seq_max) {
		uint64_t o;
		double t;

		uint64_t left = (uint64_t)((b.seconds - w->sec[0]) * 1e9);

		b.base = w->ops[0];
		if (run_txns(&b, what, 1, b.seq_max - w->ops[0],
			     left < SLICE_NS ? left : SLICE_NS, fill_write_obj, &o, &t) < 0)
			goto out;
		w->ops[0] += o;
		/* after each turn, what it left for the file system to write
		 * back (a store's deferred work; raw leaves nothing) goes out
		 * and its time is charged to that turn: neither side pays for
		 * the other's */
		uint64_t t0 = tsr_mono_ns();
		syncfs(b.rawfd);
		w->sec[0] += t + (double)(tsr_mono_ns() - t0) / 1e9;
		left = (uint64_t)((b.seconds - w->sec[1]) * 1e9);
		b.base = w->ops[1];
		if (run_sync(&b, what, b.seq_max - w->ops[1],
			     left < SLICE_NS ? left : SLICE_NS, raw_seq_write, &o, &t) < 0)
			goto out;
		w->ops[1] += o;
		t0 = tsr_mono_ns();
		syncfs(b.rawfd);
		w->sec[1] += t + (double)(tsr_mono_ns() - t0) / 1e9;
	}
	b.base = 0;
	/* the raw rows of queue depth SEQ_QD_HIGH are the queue-depth-1 run's */
	b.rows[ROW_SEQ4].ops[1] = w->ops[1];
	b.rows[ROW_SEQ4].sec[1] = w->sec[1];

	PHASE(ROW_SEQ4, 0);
	b.prefix = "seq-qd4";
	if (interrupted || run_txns(&b, what, SEQ_QD_HIGH, b.seq_max, ns, fill_write_obj,
				    &w->ops[0], &w->sec[0]) < 0)
		goto out;

	progress(&b, "prefill: %u objects of 4 MiB (%s and raw)", b.nobj, b.be.name);
	b.prefix = "fill";
	if (run_txns(&b, "prefill", SEQ_QD_HIGH, b.nobj, PREFILL_NS, fill_write_obj,
		     &ops, &sec) < 0)
		goto out;
	if (ops < b.nobj && !interrupted) {
		fail(b.cmd, "prefill: only %" PRIu64 " of %u objects written in %llu s",
		     ops, b.nobj, PREFILL_NS / 1000000000ull);
		goto out;
	}
	for (uint64_t off = b.raw_written; off < prefill && !interrupted; off += OBJ_SIZE)
		if ((brc = pwrite_full(b.rawfd, b.pat, OBJ_SIZE, off)) < 0) {
			fail(b.cmd, "prefill: %s: %s", b.raw, strerror(-brc));
			goto out;
		}
	if (ftruncate(b.rawfd, (off_t)prefill) < 0 || fdatasync(b.rawfd) < 0) {
		fail(b.cmd, "prefill: %s: %s", b.raw, strerror(errno));
		goto out;
	}

	PHASE(ROW_OVERWRITE, 0);
	if (interrupted || run_txns(&b, what, 1, MAX_IO_OPS, ns, fill_overwrite,
				    &w->ops[0], &w->sec[0]) < 0)
		goto out;
	PHASE(ROW_OVERWRITE, 1);
	if (run_sync(&b, what, MAX_IO_OPS, ns, raw_overwrite, &w->ops[1], &w->sec[1]) < 0)
		goto out;

	PHASE(ROW_CREATE, 0);
	if (interrupted || run_txns(&b, what, b.qd, b.small_max, ns, fill_create,
				    &w->ops[0], &w->sec[0]) < 0)
		goto out;
	PHASE(ROW_CREATE, 1);
	if (mkdir(b.rawdir, 0700) < 0) {
		fail(b.cmd, "%s: %s", b.rawdir, strerror(errno));
		goto out;
	}
	b.made_rawdir = true;
	b.rawdirfd = open(b.rawdir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (b.rawdirfd < 0) {
		fail(b.cmd, "%s: %s", b.rawdir, strerror(errno));
		goto out;
	}
	brc = run_sync(&b, what, b.small_max, ns, raw_create, &w->ops[1], &w->sec[1]);
	close(b.rawdirfd);
	b.rawdirfd = -1;
	if (brc < 0)
		goto out;

	PHASE(ROW_RREAD, 0);
	drop_caches(&b);
	if (interrupted || run_sync(&b, what, MAX_IO_OPS, ns, be_rand_read, &w->ops[0],
				    &w->sec[0]) < 0)
		goto out;
	PHASE(ROW_RREAD, 1);
	drop_caches(&b);
	if (run_sync(&b, what, MAX_IO_OPS, ns, raw_rand_read, &w->ops[1], &w->sec[1]) < 0)
		goto out;

	PHASE(ROW_SREAD, 0);
	drop_caches(&b);
	if (interrupted || run_sync(&b, what, MAX_IO_OPS, ns, be_seq_read, &w->ops[0],
				    &w->sec[0]) < 0)
		goto out;
	PHASE(ROW_SREAD, 1);
	drop_caches(&b);
	if (run_sync(&b, what, MAX_IO_OPS, ns, raw_seq_read, &w->ops[1], &w->sec[1]) < 0)
		goto out;
#undef PHASE
	if (interrupted)
		goto out;

	b.mounted = false;
	progress(&b, "umount");
	if ((brc = b.be.ops->umount(b.be.h)) < 0) {
		fail(b.cmd, "umount of %s: %s", dir, strerror(-brc));
		goto out;
	}
	struct utsname un;
	if (uname(&un) < 0)
		memset(&un, 0, sizeof(un));
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	errno = 0;
	bench_report(&b, &un, ncpu, mem);
	/* fputs may have met the error already: ferror keeps it */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fail(b.cmd, "standard output: %s", strerror(errno ? errno : EIO));
		goto out;
	}
	rc = CLI_OK;
out:
	if (interrupted)
		fail(b.cmd, "interrupted");
	if (b.stuck) {
		/* the backend may still call on_commit or touch the store:
		 * leave the instance alone, take our files back all the same */
		b.be.inst = NULL;
	} else if (b.mounted && (brc = b.be.ops->umount(b.be.h)) < 0) {
		fail(b.cmd, "umount of %s: %s", dir, strerror(-brc));
	}
	if (b.be.inst)
		tsr_instance_destroy(b.be.inst);
	b.be.inst = NULL;
	if (b.rawfd >= 0)
		close(b.rawfd);
	if (b.made_dir || b.made_raw || b.made_rawdir)
		progress(&b, "removing%s%s%s%s%s%s", b.made_dir ? " " : "",
			 b.made_dir ? dir : "", b.made_raw ? " " : "",
			 b.made_raw ? b.raw : "", b.made_rawdir ? " " : "",
			 b.made_rawdir ? b.rawdir : "");
	if (b.made_dir)
		rm_tree(&b, dir);
	if (b.made_raw && unlink(b.raw) < 0)
		fprintf(stderr, "tessera backend %s: could not remove %s: %s\n", b.cmd,
			b.raw, strerror(errno));
	if (b.made_rawdir)
		rm_tree(&b, b.rawdir);
	if (b.made_dir && b.meta[0] && !b.meta_existed && lstat(b.meta, &st) == 0)
		rm_tree(&b, b.meta);
	if (sig_set) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGPIPE, &old_pipe, NULL);
	}
	if (interrupted)
		rc = CLI_FAIL;
out_args:
	if (!b.stuck)
		be_close(&b.be);
	/* submit() copied what it needed: the buffers may go even when the
	 * backend is stuck */
	free(b.pat);
	free(b.rbuf);
	return rc;
}
