/* test_backend.c — the conformance suite every backend plugin must pass.
 *
 * The plugins to test come from BACKEND_PLUGINS, a colon-separated list of
 * shared objects (make check, through main_backend.c), or from the command
 * line of the installed tessera-conformance program (conformance.h);
 * every one of them runs the same tests, in a Check test case named after
 * the plugin.  With none given the suite fails: a conformance run that
 * tested nothing must not look like a pass.
 *
 * Every store lives under a scratch directory ($TMPDIR/tsr-test-backend.*,
 * or --dir's; removed at the end), at a path that does not exist yet: mkfs
 * creates it.  Options beyond "path" come from tessera-conformance's -o,
 * or from BACKEND_OPTIONS_<name> ("k=v;k=v", e.g.
 * BACKEND_OPTIONS_file="journal_size=8M").
 *
 * What a backend promises (tessera/backend.h) and where it is checked:
 *   lifecycle        mkfs, mount, umount, mount again; mkfs over a store or
 *                    other data (-EEXIST) and mount of nothing (-ENOENT),
 *                    each with a message naming the path; statfs is sane;
 *   ops_colls        MKCOLL/RMCOLL and their errors; every operation and
 *                    every read in a missing collection: -ENOENT;
 *   ops_write .. ops_omap (ops_write_held: data borrowed until on_commit)
 *                    each operation's semantics and errors as written in
 *                    backend.h, one test per group of operations;
 *   ops_reads        reads at, past and across the end; stat;
 *   ops_refused      what tsr_txn_validate refuses, submit() refuses up
 *                    front with its error, with no callback, applying
 *                    nothing;
 *   ops_names        names holding NUL, '/', 0xff, and of 4096 bytes;
 *   atomicity        a failing op leaves nothing of its transaction; each
 *                    op sees the ones before it;
 *   enumeration      list_colls; list_objects order and paging, cursors;
 *   enumeration_changes
 *                    a walk resumed across creates and removes (of the
 *                    cursor's own object too) sees every object that
 *                    existed throughout exactly once, in order;
 *   persistence      state survives umount+mount and destroy+create;
 *                    pipelined submits commit in order, flush waits;
 *   checksum         a bit flipped behind the backend's back reads -EIO;
 *   random_ops       the crash test's random transactions without crashes,
 *                    the store compared with an in-memory model as it goes;
 *   threads          the thread rules: reads from four threads while two
 *                    others submit and flush, every answer right;
 *   crash            the same transactions, the child submitting them
 *                    killed with SIGKILL at random points: after each kill
 *                    the store is the model after j transactions with
 *                    acked <= j <= submitted.
 *
 * Inputs come from fixed seeds, so a failure reproduces (in the crash test,
 * up to where in its work the child was killed).  Hot loops check with
 * REQUIRE rather than ck_assert: Check's passing assertions record their
 * location through a file on every call.
 */
#include "runner.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "testutil.h"

#include <tessera/backend.h>
#include <tessera/crc32c.h>
#include <tessera/txn.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUIRE(cond, ...)                                                   \
	do {                                                                 \
		if (!(cond))                                                 \
			ck_abort_msg(__VA_ARGS__);                           \
	} while (0)

#define KiB 1024u
#define MiB (1024u * 1024u)

/* How long a transaction may take to commit before the test gives up. */
#define COMMIT_WAIT_S 30

/* ---- The plugins under test --------------------------------------------*/

#define MAX_PLUGINS 16
#define MAX_OPTS 32

struct plugin_entry {
	char path[4096];
	char label[64];                    /* test case name */
	const struct tsr_plugin *plugin;   /* NULL: refused, see err */
	char err[1024];
	char opts[4096];                   /* "k=v;k=v" beyond path */
	char opts_from[128];               /* where opts came from */
	int no_raw_scan;
};

static struct plugin_entry plugins[MAX_PLUGINS];
static size_t nplugins;
static struct tsr_registry *registry;
static struct tsr_core_host core_host;
static char scratch[PATH_MAX - 512];
static unsigned long crash_rounds_n;    /* the crash test's rounds */

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: fixed seeds make every run the same run. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- A backend instance ---------------------------------------------------
 *
 * struct be is one instance of the plugin under test with the store it was
 * created for.  Tests go create -> mkfs -> mount -> ... -> umount ->
 * destroy, through be_new() and be_close().
 */
struct be {
	int idx;                          /* plugins[] index */
	const char *name;                 /* plugin name */
	char path[PATH_MAX];              /* the store */
	struct tsr_instance *inst;
	void *h;
	const struct tsr_backend_ops *ops;
	int mounted;
};

/* A plugin's options (plugins[idx].opts) split into srcvals; text points
 * into buf. */
struct opts_text {
	char buf[4096];
	struct tsr_srcval src[MAX_OPTS];
	size_t n;
};

static void
opts_parse(int idx, const char *path, struct opts_text *o)
{
	const char *var = plugins[idx].opts_from;
	char *s, *save = NULL;

	o->n = 0;
	o->src[o->n++] = (struct tsr_srcval){ "path", TSR_SRC_TEXT, 0, 0, path,
					      "test" };
	snprintf(o->buf, sizeof(o->buf), "%s", plugins[idx].opts);
	for (s = strtok_r(o->buf, ";", &save); s != NULL;
	     s = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(s, '=');

		if (*s == '\0')
			continue;
		ck_assert_msg(eq != NULL, "%s: \"%s\" is not key=value", var, s);
		ck_assert_msg(o->n < MAX_OPTS, "%s: more than %d options", var,
			      MAX_OPTS - 1);
		*eq = '\0';
		o->src[o->n++] = (struct tsr_srcval){ s, TSR_SRC_TEXT, 0, 0,
						      eq + 1, var };
	}
}

/* Create an instance for b->path (set by the caller). */
static void
be_create(struct be *b)
{
	struct opts_text o;
	char err[1024] = "";
	int rc;

	opts_parse(b->idx, b->path, &o);
	rc = tsr_instance_create(plugins[b->idx].plugin, &core_host.host, o.src,
				 o.n, &b->inst, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: instance for %s: %s (%d)", b->name,
		      b->path, err, rc);
	b->h = tsr_instance_handle(b->inst);
	b->ops = tsr_instance_ops(b->inst);
	b->mounted = 0;
}

static void
be_destroy(struct be *b)
{
	if (b->mounted)
		ck_assert_msg(b->ops->umount(b->h) == 0, "%s: umount of %s",
			      b->name, b->path);
	tsr_instance_destroy(b->inst);
	b->inst = NULL;
	b->h = NULL;
	b->ops = NULL;
	b->mounted = 0;
}

/* A fresh store location: <scratch>/<tag>-<n>/store, the parent made. */
static void
be_fresh_path(struct be *b, int idx, const char *tag)
{
	static unsigned counter;
	char dir[PATH_MAX - 16];

	ck_assert_msg(plugins[idx].plugin != NULL, "%s", plugins[idx].err);
	memset(b, 0, sizeof(*b));
	b->idx = idx;
	b->name = tsr_plugin_desc(plugins[idx].plugin)->name;
	snprintf(dir, sizeof(dir), "%s/%s-%s-%u", scratch, b->name, tag,
		 counter++);
	ck_assert_msg(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir,
		      strerror(errno));
	snprintf(b->path, sizeof(b->path), "%s/store", dir);
}

static void
be_mkfs(struct be *b)
{
	char err[1024] = "";
	int rc = b->ops->mkfs(b->h, err, sizeof(err));

	ck_assert_msg(rc == 0, "%s: mkfs %s: %s (%d)", b->name, b->path, err,
		      rc);
}

static void
be_mount(struct be *b)
{
	char err[1024] = "";
	int rc = b->ops->mount(b->h, err, sizeof(err));

	ck_assert_msg(rc == 0, "%s: mount %s: %s (%d)", b->name, b->path, err,
		      rc);
	b->mounted = 1;
}

static void
be_umount(struct be *b)
{
	int rc = b->ops->umount(b->h);

	b->mounted = 0;
	ck_assert_msg(rc == 0, "%s: umount %s: %d", b->name, b->path, rc);
}

/* A new, mounted, empty store. */
static void
be_new(struct be *b, int idx, const char *tag)
{
	be_fresh_path(b, idx, tag);
	be_create(b);
	be_mkfs(b);
	be_mount(b);
}

static void
be_close(struct be *b)
{
	if (b->mounted)
		be_umount(b);
	be_destroy(b);
}

/* umount + mount on the same instance. */
static void
be_remount(struct be *b)
{
	be_umount(b);
	be_mount(b);
}

/* umount, destroy, create and mount: nothing survives but the store. */
static void
be_reopen(struct be *b)
{
	be_close(b);
	be_create(b);
	be_mount(b);
}

/* ---- Submitting and waiting ---------------------------------------------
 *
 * on_commit runs on a backend thread; a waiter is what it signals.  It
 * counts its calls, so "exactly once" and "never" can be checked too.
 */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls;
	int rc;
};

static void
waiter_init(struct waiter *w)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->calls = 0;
	w->rc = 0;
}

static void
waiter_fini(struct waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

static void
waiter_cb(void *arg, int rc)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->calls++;
	w->rc = rc;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Wait up to COMMIT_WAIT_S for the first call; 0 on time, -ETIMEDOUT. */
static int
waiter_wait(struct waiter *w)
{
	struct timespec dl;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += COMMIT_WAIT_S;
	pthread_mutex_lock(&w->mu);
	while (w->calls == 0 && rc == 0)
		rc = pthread_cond_timedwait(&w->cv, &w->mu, &dl);
	if (w->calls > 0)
		rc = 0;
	pthread_mutex_unlock(&w->mu);
	return rc ? -ETIMEDOUT : 0;
}

/* Submit ops and wait for the commit: the transaction's result, whether
 * refused up front or reported to on_commit.  *refused (may be NULL) says
 * which.  The waiter is static: a timeout ends the test, and a late
 * callback must not write into a dead stack frame. */
static int
be_txn_ex(struct be *b, const struct tsr_txn_op *ops, size_t nops,
	  int *refused, const char *file, int line)
{
	static struct waiter w;
	struct tsr_txn txn = { (uint32_t)nops, ops };
	int rc;

	waiter_init(&w);
	rc = b->ops->submit(b->h, &txn, waiter_cb, &w);
	if (refused)
		*refused = rc < 0;
	if (rc < 0) {
		REQUIRE(rc > -4096, "%s:%d: %s: submit returned %d", file,
			line, b->name, rc);
		/* a refused transaction never reaches on_commit */
		REQUIRE(b->ops->flush(b->h) == 0, "%s:%d: %s: flush failed",
			file, line, b->name);
		pthread_mutex_lock(&w.mu);
		REQUIRE(w.calls == 0, "%s:%d: %s: submit refused a "
			"transaction (%d) and called on_commit too", file,
			line, b->name, rc);
		pthread_mutex_unlock(&w.mu);
		waiter_fini(&w);
		return rc;
	}
	REQUIRE(waiter_wait(&w) == 0, "%s:%d: %s: on_commit not called "
		"within %d s", file, line, b->name, COMMIT_WAIT_S);
	REQUIRE(b->ops->flush(b->h) == 0, "%s:%d: %s: flush failed", file,
		line, b->name);
	pthread_mutex_lock(&w.mu);
	REQUIRE(w.calls == 1, "%s:%d: %s: on_commit called %d times", file,
		line, b->name, w.calls);
	rc = w.rc;
	pthread_mutex_unlock(&w.mu);
	REQUIRE(rc <= 0 && rc > -4096, "%s:%d: %s: on_commit got %d", file,
		line, b->name, rc);
	waiter_fini(&w);
	return rc;
}

#define OPS(...) ((const struct tsr_txn_op[]){ __VA_ARGS__ })
#define NOPS(...) (sizeof(OPS(__VA_ARGS__)) / sizeof(struct tsr_txn_op))
/* Submit a transaction of the ops given; its result. */
#define TXN(b, ...)                                                          \
	be_txn_ex((b), OPS(__VA_ARGS__), NOPS(__VA_ARGS__), NULL, __FILE__,  \
		  __LINE__)
/* ... which must succeed. */
#define TXN_OK(b, ...)                                                       \
	do {                                                                 \
		int txn_rc_ = TXN((b), __VA_ARGS__);                         \
		ck_assert_msg(txn_rc_ == 0, "%s: transaction at line %d "    \
			      "failed: %d (%s)", (b)->name, __LINE__,        \
			      txn_rc_, strerror(-txn_rc_));                  \
	} while (0)
/* ... which must fail with err, reported by on_commit. */
#define TXN_FAILS(b, err, ...)                                               \
	do {                                                                 \
		int txn_ref_;                                                \
		int txn_rc_ = be_txn_ex((b), OPS(__VA_ARGS__),               \
					NOPS(__VA_ARGS__), &txn_ref_,        \
					__FILE__, __LINE__);                 \
		ck_assert_msg(txn_rc_ == (err), "%s: transaction at line "   \
			      "%d: expected %d (%s), got %d (%s)",           \
			      (b)->name, __LINE__, (err), strerror(-(err)),  \
			      txn_rc_, strerror(-txn_rc_));                  \
	} while (0)

/* ---- Building operations ------------------------------------------------
 *
 * Names, keys and values are (pointer, length) so they may hold any byte;
 * B("lit") takes a literal's length from sizeof, embedded NULs included.
 */
struct bytes {
	const void *p;
	size_t n;
};
#define B(lit) ((struct bytes){ (lit), sizeof(lit) - 1 })
#define NOBYTES ((struct bytes){ NULL, 0 })

static const struct tsr_coll_id C1 = { 1, 0, TSR_SHARD_NONE };
static const struct tsr_coll_id C2 = { 1, 7, 2 };
static const struct tsr_coll_id C3 = { 0xfffffffffull, 0xffffffffu, 0 };
static const struct tsr_coll_id CNONE = { 42, 42, TSR_SHARD_NONE };

static struct tsr_txn_op
op_obj(uint32_t type, struct tsr_coll_id cid, struct bytes oid)
{
	struct tsr_txn_op op;

	memset(&op, 0, sizeof(op));
	op.type = type;
	op.cid = cid;
	op.oid = oid.p;
	op.oid_len = oid.n;
	return op;
}

static struct tsr_txn_op
op_mkcoll(struct tsr_coll_id cid)
{
	return op_obj(TSR_TXN_MKCOLL, cid, NOBYTES);
}

static struct tsr_txn_op
op_rmcoll(struct tsr_coll_id cid)
{
	return op_obj(TSR_TXN_RMCOLL, cid, NOBYTES);
}

static struct tsr_txn_op
op_touch(struct tsr_coll_id cid, struct bytes oid)
{
	return op_obj(TSR_TXN_TOUCH, cid, oid);
}

static struct tsr_txn_op
op_write(struct tsr_coll_id cid, struct bytes oid, uint64_t off, uint64_t len,
	 const void *data)
{
	struct tsr_txn_op op = op_obj(TSR_TXN_WRITE, cid, oid);

	op.off = off;
	op.len = len;
	op.data = data;
	return op;
}

static struct tsr_txn_op
op_zero(struct tsr_coll_id cid, struct bytes oid, uint64_t off, uint64_t len)
{
	struct tsr_txn_op op = op_obj(TSR_TXN_ZERO, cid, oid);

	op.off = off;
	op.len = len;
	return op;
}

static struct tsr_txn_op
op_truncate(struct tsr_coll_id cid, struct bytes oid, uint64_t size)
{
	struct tsr_txn_op op = op_obj(TSR_TXN_TRUNCATE, cid, oid);

	op.off = size;
	return op;
}

static struct tsr_txn_op
op_remove(struct tsr_coll_id cid, struct bytes oid)
{
	return op_obj(TSR_TXN_REMOVE, cid, oid);
}

static struct tsr_txn_op
op_clone(struct tsr_coll_id cid, struct bytes oid, struct bytes oid2)
{
	struct tsr_txn_op op = op_obj(TSR_TXN_CLONE, cid, oid);

	op.oid2 = oid2.p;
	op.oid2_len = oid2.n;
	return op;
}

static struct tsr_txn_op
op_clone_range(struct tsr_coll_id cid, struct bytes oid, uint64_t off,
	       uint64_t len, struct bytes oid2, uint64_t off2)
{
	struct tsr_txn_op op = op_clone(cid, oid, oid2);

	op.type = TSR_TXN_CLONE_RANGE;
	op.off = off;
	op.len = len;
	op.off2 = off2;
	return op;
}

static struct tsr_txn_op
op_kv(uint32_t type, struct tsr_coll_id cid, struct bytes oid, struct bytes key,
      struct bytes val)
{
	struct tsr_txn_op op = op_obj(type, cid, oid);

	op.key = key.p;
	op.key_len = key.n;
	op.val = val.p;
	op.val_len = val.n;
	return op;
}

#define op_setattr(c, o, k, v) op_kv(TSR_TXN_SETATTR, (c), (o), (k), (v))
#define op_rmattr(c, o, k) op_kv(TSR_TXN_RMATTR, (c), (o), (k), NOBYTES)
#define op_omap_set(c, o, k, v) op_kv(TSR_TXN_OMAP_SET, (c), (o), (k), (v))
#define op_omap_rm(c, o, k) op_kv(TSR_TXN_OMAP_RM, (c), (o), (k), NOBYTES)
#define op_omap_clear(c, o) op_kv(TSR_TXN_OMAP_CLEAR, (c), (o), NOBYTES, NOBYTES)
#define op_omap_rmrange(c, o, k, end)                                        \
	op_kv(TSR_TXN_OMAP_RMRANGE, (c), (o), (k), (end))

/* ---- Reading and checking -----------------------------------------------*/

/* Printable form of a name for messages: non-printing bytes as \xNN, long
 * names cut with their length. */
static const char *
nm(struct bytes b, char *buf, size_t buflen)
{
	const uint8_t *p = b.p;
	size_t o = 0, i;

	for (i = 0; i < b.n && o + 8 < buflen && i < 48; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			buf[o++] = (char)p[i];
		else
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x",
					      p[i]);
	}
	buf[o] = '\0';
	if (i < b.n)
		snprintf(buf + o, buflen - o, "...(%zu bytes)", b.n);
	return buf;
}

#define NM(b) nm((b), (char[256]){ 0 }, 256)

/* Large buffers are page-aligned, as the OSD's are, so that reads into
 * them take a backend's direct path where it has one (backend.h); ops_reads
 * reads into unaligned ones too. */
static void *
xmalloc(size_t n)
{
	void *p = NULL;

	if (n >= 64 * 1024) {
		if (posix_memalign(&p, 4096, n) != 0)
			p = NULL;
	} else {
		p = malloc(n ? n : 1);
	}
	if (p == NULL)
		abort();
	return p;
}

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

static uint64_t
obj_size(struct be *b, struct tsr_coll_id cid, struct bytes oid)
{
	struct tsr_obj_stat st;
	int rc = b->ops->stat(b->h, &cid, oid.p, oid.n, &st);

	ck_assert_msg(rc == 0, "%s: stat %s: %d (%s)", b->name, NM(oid), rc,
		      strerror(-rc));
	return st.size;
}

static void
expect_size(struct be *b, struct tsr_coll_id cid, struct bytes oid,
	    uint64_t size)
{
	uint64_t got = obj_size(b, cid, oid);

	ck_assert_msg(got == size, "%s: %s: size %" PRIu64 ", expected %"
		      PRIu64, b->name, NM(oid), got, size);
}

static void
expect_missing(struct be *b, struct tsr_coll_id cid, struct bytes oid)
{
	struct tsr_obj_stat st;
	int rc = b->ops->stat(b->h, &cid, oid.p, oid.n, &st);

	ck_assert_msg(rc == -ENOENT, "%s: stat of %s, which should not exist: "
		      "%d, expected -ENOENT", b->name, NM(oid), rc);
}

/* A backend with read_crc (ABI 1.1) reads [off, off+len) with it too,
 * into a page-aligned buffer (which a backend may fill with O_DIRECT) at
 * offset mis: the same got bytes as read's (data[0..got)), and the CRC32C
 * of exactly those. */
static void
expect_read_crc(struct be *b, struct tsr_coll_id cid, struct bytes oid,
		uint64_t off, uint64_t len, const uint8_t *data, uint64_t got,
		size_t mis)
{
	const struct tsr_backend_ops *o = b->ops;
	uint64_t n = ~0ull;
	uint32_t crc = 0xdeadbeef;
	void *mem = NULL;
	int rc;

	if (o->size < offsetof(struct tsr_backend_ops, read_crc) + sizeof(o->read_crc) ||
	    o->read_crc == NULL)
		return;
	ck_assert_int_eq(posix_memalign(&mem, 4096, len + mis + 1), 0);
	rc = o->read_crc(b->h, &cid, oid.p, oid.n, off, len, (uint8_t *)mem + mis, &n, &crc);
	ck_assert_msg(rc == 0 && n == got && memcmp((uint8_t *)mem + mis, data, got) == 0,
		      "%s: read_crc %s [%" PRIu64 ", +%" PRIu64 ") at buffer offset %zu: "
		      "%d, %" PRIu64 " bytes (read gave %" PRIu64 ")%s", b->name, NM(oid),
		      off, len, mis, rc, n, got,
		      rc == 0 && n == got ? ", other bytes than read's" : "");
	ck_assert_msg(crc == tsr_crc32c(0, data, got), "%s: read_crc %s [%" PRIu64
		      ", +%" PRIu64 ") at buffer offset %zu: CRC 0x%08x, the bytes' is 0x%08x",
		      b->name, NM(oid), off, len, mis, (unsigned)crc,
		      (unsigned)tsr_crc32c(0, data, got));
	free(mem);
}

/* Read [off, off+len) and compare with want (NULL: zeros); the read must
 * return exactly len bytes. */
static void
expect_range(struct be *b, struct tsr_coll_id cid, struct bytes oid,
	     uint64_t off, uint64_t len, const void *want)
{
	uint8_t *buf = xmalloc(len + 1);
	uint64_t got = ~0ull;
	int rc;

	rc = b->ops->read(b->h, &cid, oid.p, oid.n, off, len, buf, &got);
	ck_assert_msg(rc == 0, "%s: read %s [%" PRIu64 ", +%" PRIu64 "): %d "
		      "(%s)", b->name, NM(oid), off, len, rc, strerror(-rc));
	ck_assert_msg(got == len, "%s: read %s [%" PRIu64 ", +%" PRIu64 "): "
		      "%" PRIu64 " bytes, expected %" PRIu64, b->name, NM(oid),
		      off, len, got, len);
	for (uint64_t i = 0; i < len; i++) {
		uint8_t w = want ? ((const uint8_t *)want)[i] : 0;

		REQUIRE(buf[i] == w, "%s: %s: byte at offset %" PRIu64 " is "
			"0x%02x, expected 0x%02x", b->name, NM(oid), off + i,
			buf[i], w);
	}
	expect_read_crc(b, cid, oid, off, len, buf, got, 0);
	expect_read_crc(b, cid, oid, off, len, buf, got, 1);
	free(buf);
}

/* The whole object: size and every byte. */
static void
expect_data(struct be *b, struct tsr_coll_id cid, struct bytes oid,
	    const void *want, uint64_t len)
{
	expect_size(b, cid, oid, len);
	expect_range(b, cid, oid, 0, len, want);
}

/* A read of len at off returns exactly n bytes (short at the end). */
static void
expect_read_len(struct be *b, struct tsr_coll_id cid, struct bytes oid,
		uint64_t off, uint64_t len, uint64_t n)
{
	uint8_t *buf = xmalloc(len);
	uint64_t got = ~0ull;
	int rc = b->ops->read(b->h, &cid, oid.p, oid.n, off, len, buf, &got);

	ck_assert_msg(rc == 0, "%s: read %s [%" PRIu64 ", +%" PRIu64 "): %d",
		      b->name, NM(oid), off, len, rc);
	ck_assert_msg(got == n, "%s: read %s [%" PRIu64 ", +%" PRIu64 "): %"
		      PRIu64 " bytes, expected %" PRIu64, b->name, NM(oid),
		      off, len, got, n);
	free(buf);
}

static void
expect_kv(struct be *b, int omap, struct tsr_coll_id cid, struct bytes oid,
	  struct bytes key, struct bytes val)
{
	size_t buflen = val.n + 64, vl = ~(size_t)0;
	uint8_t *buf = xmalloc(buflen);
	int rc = (omap ? b->ops->omap_get : b->ops->getattr)(
		b->h, &cid, oid.p, oid.n, key.p, key.n, buf, buflen, &vl);

	ck_assert_msg(rc == 0, "%s: %s %s of %s: %d (%s), value length %zu",
		      b->name, omap ? "omap_get" : "getattr", NM(key), NM(oid),
		      rc, strerror(-rc), vl);
	ck_assert_msg(vl == val.n && (val.n == 0 || !memcmp(buf, val.p, val.n)),
		      "%s: %s %s of %s: %zu bytes \"%s\", expected %zu bytes "
		      "\"%s\"", b->name, omap ? "omap_get" : "getattr", NM(key),
		      NM(oid), vl,
		      NM(((struct bytes){ buf, vl <= buflen ? vl : 0 })),
		      val.n, NM(val));
	free(buf);
}

static void
expect_no_kv(struct be *b, int omap, struct tsr_coll_id cid, struct bytes oid,
	     struct bytes key, int err)
{
	uint8_t buf[64];
	size_t vl = 0;
	int rc = (omap ? b->ops->omap_get : b->ops->getattr)(
		b->h, &cid, oid.p, oid.n, key.p, key.n, buf, sizeof(buf), &vl);

	ck_assert_msg(rc == err, "%s: %s %s of %s: %d, expected %d (%s)",
		      b->name, omap ? "omap_get" : "getattr", NM(key), NM(oid),
		      rc, err, strerror(-err));
}

#define expect_attr(b, c, o, k, v) expect_kv((b), 0, (c), (o), (k), (v))
#define expect_omap(b, c, o, k, v) expect_kv((b), 1, (c), (o), (k), (v))
#define expect_no_attr(b, c, o, k) expect_no_kv((b), 0, (c), (o), (k), -ENODATA)
#define expect_no_omap(b, c, o, k) expect_no_kv((b), 1, (c), (o), (k), -ENODATA)

/* Deterministic, non-repeating bytes: the same (seed, n) always gives the
 * same buffer, and no two 8-byte words of it are alike in practice. */
static uint8_t *
pattern(uint64_t seed, size_t n)
{
	uint8_t *p = xmalloc(n);
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t r = rng_next(&s);

		memcpy(p + i, &r, n - i < 8 ? n - i : 8);
	}
	return p;
}

/* ---- The model ----------------------------------------------------------
 *
 * What a store should hold, kept the simplest way: collections sorted by
 * id, objects sorted by name, data as one dense buffer, attributes and omap
 * as sorted arrays.  model_apply() is backend.h's "Operation semantics"
 * read literally, returning the errno the backend must return.
 * model_load() reads a store into a model, so a store is checked by
 * comparing two models (model_diff).
 */

/* Unsigned bytes, a prefix before its extensions: the order of keys and
 * of object names. */
static int
bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = an && bn ? memcmp(a, b, an < bn ? an : bn) : 0;

	if (c != 0 || an == bn)
		return c;
	return an < bn ? -1 : 1;
}

struct kv {
	uint8_t *k;
	size_t kl;
	uint8_t *v;
	size_t vl;
};

struct kvset {
	struct kv *e;
	size_t n, cap;
};

static uint8_t *
dup_bytes(const void *p, size_t n)
{
	uint8_t *d = xmalloc(n);

	if (n)
		memcpy(d, p, n);
	return d;
}

/* Append (no ordering): for listings taken in the order returned. */
static void
kv_push(struct kvset *s, const void *k, size_t kl, const void *v, size_t vl)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->e = xrealloc(s->e, s->cap * sizeof(*s->e));
	}
	s->e[s->n].k = dup_bytes(k, kl);
	s->e[s->n].kl = kl;
	s->e[s->n].v = dup_bytes(v, vl);
	s->e[s->n].vl = vl;
	s->n++;
}

/* Index of k, or where it would go. */
static size_t
kv_find(const struct kvset *s, const void *k, size_t kl, int *found)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = bytes_cmp(s->e[mid].k, s->e[mid].kl, k, kl);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static void
kv_put(struct kvset *s, const void *k, size_t kl, const void *v, size_t vl)
{
	int found;
	size_t i = kv_find(s, k, kl, &found);

	if (found) {
		free(s->e[i].v);
		s->e[i].v = dup_bytes(v, vl);
		s->e[i].vl = vl;
		return;
	}
	kv_push(s, k, kl, v, vl);
	{
		struct kv last = s->e[s->n - 1];

		memmove(&s->e[i + 1], &s->e[i], (s->n - 1 - i) * sizeof(*s->e));
		s->e[i] = last;
	}
}

static void
kv_del_at(struct kvset *s, size_t i, size_t n)
{
	for (size_t j = i; j < i + n; j++) {
		free(s->e[j].k);
		free(s->e[j].v);
	}
	if (n != 0)
		memmove(&s->e[i], &s->e[i + n], (s->n - i - n) * sizeof(*s->e));
	s->n -= n;
}

static void
kv_del(struct kvset *s, const void *k, size_t kl)
{
	int found;
	size_t i = kv_find(s, k, kl, &found);

	if (found)
		kv_del_at(s, i, 1);
}

/* [k, end); an empty end means to the last key. */
static void
kv_rmrange(struct kvset *s, const void *k, size_t kl, const void *end,
	   size_t endl)
{
	int found;
	size_t i = kv_find(s, k, kl, &found), j = i;

	if (endl != 0 && bytes_cmp(end, endl, k, kl) <= 0)
		return;
	while (j < s->n && (endl == 0 ||
			    bytes_cmp(s->e[j].k, s->e[j].kl, end, endl) < 0))
		j++;
	kv_del_at(s, i, j - i);
}

static void
kv_clear(struct kvset *s)
{
	kv_del_at(s, 0, s->n);
}

static void
kv_free(struct kvset *s)
{
	kv_clear(s);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

static void
kv_copy(struct kvset *dst, const struct kvset *src)
{
	kv_clear(dst);
	for (size_t i = 0; i < src->n; i++)
		kv_push(dst, src->e[i].k, src->e[i].kl, src->e[i].v,
			src->e[i].vl);
}

static int
kv_has(const struct kvset *s, struct bytes k)
{
	int found;

	kv_find(s, k.p, k.n, &found);
	return found;
}

struct mobj {
	uint8_t *name;
	size_t nl;
	uint8_t *data;
	uint64_t size, cap;
	struct kvset attrs, omap;
};

struct mcoll {
	struct tsr_coll_id cid;
	struct mobj *o;
	size_t n, cap;
};

struct model {
	struct mcoll *c;
	size_t n, cap;
};

static int
cid_cmp(const struct tsr_coll_id *a, const struct tsr_coll_id *b)
{
	if (a->pool != b->pool)
		return a->pool < b->pool ? -1 : 1;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	if (a->shard != b->shard)
		return a->shard < b->shard ? -1 : 1;
	return 0;
}

static struct mcoll *
model_coll(struct model *m, const struct tsr_coll_id *cid, size_t *pos)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		int c = cid_cmp(&m->c[i].cid, cid);

		if (c == 0)
			return &m->c[i];
		if (c > 0)
			break;
	}
	if (pos)
		*pos = i;
	return NULL;
}

static size_t
mcoll_find(const struct mcoll *c, const void *name, size_t nl, int *found)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = bytes_cmp(c->o[mid].name, c->o[mid].nl, name, nl);

		if (r == 0) {
			*found = 1;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

/* The object, created empty when create is set; NULL when missing.  A
 * create may move the other objects of c. */
static struct mobj *
mobj_get(struct mcoll *c, const void *name, size_t nl, int create)
{
	int found;
	size_t i = mcoll_find(c, name, nl, &found);

	if (found)
		return &c->o[i];
	if (!create)
		return NULL;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->o = xrealloc(c->o, c->cap * sizeof(*c->o));
	}
	memmove(&c->o[i + 1], &c->o[i], (c->n - i) * sizeof(*c->o));
	memset(&c->o[i], 0, sizeof(c->o[i]));
	c->o[i].name = dup_bytes(name, nl);
	c->o[i].nl = nl;
	c->n++;
	return &c->o[i];
}

static void
mobj_free(struct mobj *o)
{
	free(o->name);
	free(o->data);
	kv_free(&o->attrs);
	kv_free(&o->omap);
}

/* Set the size; bytes that come into being read as zeros. */
static void
mobj_resize(struct mobj *o, uint64_t size)
{
	if (size > o->cap) {
		uint64_t cap = o->cap ? o->cap : 4096;

		while (cap < size)
			cap *= 2;
		o->data = xrealloc(o->data, (size_t)cap);
		o->cap = cap;
	}
	if (size > o->size)
		memset(o->data + o->size, 0, (size_t)(size - o->size));
	o->size = size;
}

/* Write len bytes of data (NULL: zeros) at off, extending. */
static void
mobj_write(struct mobj *o, uint64_t off, const void *data, uint64_t len)
{
	if (len == 0)
		return;
	if (off + len > o->size)
		mobj_resize(o, off + len);
	if (data)
		memcpy(o->data + off, data, (size_t)len);
	else
		memset(o->data + off, 0, (size_t)len);
}

static void
model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		for (size_t j = 0; j < m->c[i].n; j++)
			mobj_free(&m->c[i].o[j]);
		free(m->c[i].o);
	}
	free(m->c);
	memset(m, 0, sizeof(*m));
}

static void
mobj_copy(struct mobj *dst, const struct mobj *src)
{
	mobj_resize(dst, 0);
	mobj_write(dst, 0, src->data, src->size);
	mobj_resize(dst, src->size);
	kv_copy(&dst->attrs, &src->attrs);
	kv_copy(&dst->omap, &src->omap);
}

static void
model_copy(struct model *dst, const struct model *src)
{
	model_free(dst);
	dst->n = dst->cap = src->n;
	dst->c = xmalloc(src->n * sizeof(*dst->c));
	for (size_t i = 0; i < src->n; i++) {
		const struct mcoll *sc = &src->c[i];
		struct mcoll *dc = &dst->c[i];

		memset(dc, 0, sizeof(*dc));
		dc->cid = sc->cid;
		for (size_t j = 0; j < sc->n; j++)
			mobj_copy(mobj_get(dc, sc->o[j].name, sc->o[j].nl, 1),
				  &sc->o[j]);
	}
}

static int
ranges_overlap(uint64_t a, uint64_t b, uint64_t len)
{
	return len != 0 && a < b + len && b < a + len;
}

/* Apply one operation; 0 or the errno the backend must return. */
static int
model_apply(struct model *m, const struct tsr_txn_op *op)
{
	struct mcoll *c;
	struct mobj *o, *d;
	size_t pos = 0;
	int found;

	c = model_coll(m, &op->cid, &pos);
	if (op->type == TSR_TXN_MKCOLL) {
		if (c != NULL)
			return -EEXIST;
		if (m->n == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 4;
			m->c = xrealloc(m->c, m->cap * sizeof(*m->c));
		}
		memmove(&m->c[pos + 1], &m->c[pos],
			(m->n - pos) * sizeof(*m->c));
		memset(&m->c[pos], 0, sizeof(m->c[pos]));
		m->c[pos].cid = op->cid;
		m->n++;
		return 0;
	}
	if (c == NULL)
		return -ENOENT;
	if (op->type == TSR_TXN_RMCOLL) {
		if (c->n != 0)
			return -ENOTEMPTY;
		free(c->o);
		pos = (size_t)(c - m->c);
		memmove(&m->c[pos], &m->c[pos + 1],
			(m->n - pos - 1) * sizeof(*m->c));
		m->n--;
		return 0;
	}
	switch (op->type) {
	case TSR_TXN_TOUCH:
		mobj_get(c, op->oid, op->oid_len, 1);
		return 0;
	case TSR_TXN_WRITE:
		o = mobj_get(c, op->oid, op->oid_len, 1);
		mobj_write(o, op->off, op->data, op->len);
		return 0;
	case TSR_TXN_ZERO:
		o = mobj_get(c, op->oid, op->oid_len, 1);
		mobj_write(o, op->off, NULL, op->len);
		return 0;
	case TSR_TXN_TRUNCATE:
		o = mobj_get(c, op->oid, op->oid_len, 1);
		mobj_resize(o, op->off);
		return 0;
	case TSR_TXN_SETATTR:
		o = mobj_get(c, op->oid, op->oid_len, 1);
		kv_put(&o->attrs, op->key, op->key_len, op->val, op->val_len);
		return 0;
	case TSR_TXN_OMAP_SET:
		o = mobj_get(c, op->oid, op->oid_len, 1);
		kv_put(&o->omap, op->key, op->key_len, op->val, op->val_len);
		return 0;
	default:
		break;
	}
	o = mobj_get(c, op->oid, op->oid_len, 0);
	if (o == NULL)
		return -ENOENT;
	switch (op->type) {
	case TSR_TXN_REMOVE:
		pos = mcoll_find(c, op->oid, op->oid_len, &found);
		mobj_free(&c->o[pos]);
		memmove(&c->o[pos], &c->o[pos + 1],
			(c->n - pos - 1) * sizeof(*c->o));
		c->n--;
		return 0;
	case TSR_TXN_RMATTR:
		kv_del(&o->attrs, op->key, op->key_len);
		return 0;
	case TSR_TXN_OMAP_RM:
		kv_del(&o->omap, op->key, op->key_len);
		return 0;
	case TSR_TXN_OMAP_CLEAR:
		kv_clear(&o->omap);
		return 0;
	case TSR_TXN_OMAP_RMRANGE:
		kv_rmrange(&o->omap, op->key, op->key_len, op->val,
			   op->val_len);
		return 0;
	case TSR_TXN_CLONE: {
		struct mobj tmp;

		if (bytes_cmp(op->oid, op->oid_len, op->oid2,
			      op->oid2_len) == 0)
			return 0;
		/* through a copy: creating the destination may move o */
		memset(&tmp, 0, sizeof(tmp));
		mobj_copy(&tmp, o);
		d = mobj_get(c, op->oid2, op->oid2_len, 1);
		mobj_copy(d, &tmp);
		mobj_free(&tmp);
		return 0;
	}
	case TSR_TXN_CLONE_RANGE: {
		uint8_t *buf;
		uint64_t n = 0;

		if (bytes_cmp(op->oid, op->oid_len, op->oid2,
			      op->oid2_len) == 0 &&
		    ranges_overlap(op->off, op->off2, op->len))
			return -EINVAL;
		buf = xmalloc((size_t)op->len);
		memset(buf, 0, (size_t)op->len);
		if (op->off < o->size)
			n = o->size - op->off < op->len ? o->size - op->off
							: op->len;
		if (n)
			memcpy(buf, o->data + op->off, (size_t)n);
		d = mobj_get(c, op->oid2, op->oid2_len, 1);
		mobj_write(d, op->off2, buf, op->len);
		free(buf);
		return 0;
	}
	default:
		return -EOPNOTSUPP;
	}
}

/* Read everything the store holds into m (empty on entry). */
struct load_ctx {
	struct be *b;
	struct model *m;
	struct mcoll *c;
	struct kvset *kv;
	int rc;
};

static int
load_coll_cb(void *arg, const struct tsr_coll_id *cid)
{
	struct load_ctx *x = arg;
	struct tsr_txn_op op;

	memset(&op, 0, sizeof(op));
	op.type = TSR_TXN_MKCOLL;
	op.cid = *cid;
	if (model_apply(x->m, &op) != 0)
		x->rc = -EEXIST; /* listed twice */
	return 0;
}

static int
load_kv_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct load_ctx *x = arg;

	if (kv_has(x->kv, (struct bytes){ k, kl }))
		x->rc = -EEXIST; /* visited twice */
	kv_put(x->kv, k, kl, v, vl);
	return 0;
}

static int
load_name_cb(void *arg, const void *oid, size_t oid_len)
{
	struct load_ctx *x = arg;
	int found;

	mcoll_find(x->c, oid, oid_len, &found);
	if (found)
		x->rc = -EEXIST; /* listed twice */
	mobj_get(x->c, oid, oid_len, 1);
	return 0;
}

/* Fails the test, naming the plugin and what failed, on any error. */
static void
model_load(struct be *b, struct model *m)
{
	struct load_ctx x = { b, m, NULL, NULL, 0 };
	int rc;

	rc = b->ops->list_colls(b->h, load_coll_cb, &x);
	REQUIRE(rc == 0 && x.rc == 0, "%s: list_colls: %d%s", b->name, rc,
		x.rc ? " (a collection listed twice)" : "");
	for (size_t i = 0; i < m->n; i++) {
		struct tsr_cursor *cur = xmalloc(sizeof(*cur));
		struct mcoll *c = &m->c[i];

		x.c = c;
		cur->len = 0;
		for (int pages = 0; pages < 1000000; pages++) {
			rc = b->ops->list_objects(b->h, &c->cid, cur, 64,
						  load_name_cb, &x);
			REQUIRE(rc == 0 && x.rc == 0, "%s: list_objects of "
				"collection %" PRIu64 ".%u.%d: %d%s", b->name,
				c->cid.pool, c->cid.pg, (int)c->cid.shard, rc,
				x.rc ? " (an object listed twice)" : "");
			if (cur->len == 0)
				break;
		}
		free(cur);
		for (size_t j = 0; j < c->n; j++) {
			struct mobj *o = &c->o[j];
			struct bytes oid = { o->name, o->nl };
			uint64_t size = obj_size(b, c->cid, oid), got = 0;
			uint8_t none;

			mobj_resize(o, size);
			rc = b->ops->read(b->h, &c->cid, o->name, o->nl, 0, size,
					  size ? o->data : &none, &got);
			REQUIRE(rc == 0 && got == size, "%s: read of %s, %"
				PRIu64 " bytes: %d, got %" PRIu64, b->name,
				NM(oid), size, rc, got);
			x.kv = &o->attrs;
			rc = b->ops->getattrs(b->h, &c->cid, o->name, o->nl,
					      load_kv_cb, &x);
			REQUIRE(rc == 0 && x.rc == 0, "%s: getattrs of %s: %d%s",
				b->name, NM(oid), rc,
				x.rc ? " (an attribute visited twice)" : "");
			x.kv = &o->omap;
			rc = b->ops->omap_iter(b->h, &c->cid, o->name, o->nl,
					       NULL, 0, load_kv_cb, &x);
			REQUIRE(rc == 0 && x.rc == 0, "%s: omap_iter of %s: %d%s",
				b->name, NM(oid), rc,
				x.rc ? " (a key visited twice)" : "");
		}
	}
}

/* 0 when the sets are equal; else 1 and the first difference in msg. */
static int
kv_diff(const struct kvset *want, const struct kvset *got, const char *what,
	char *msg, size_t len)
{
	for (size_t k = 0; k < want->n || k < got->n; k++) {
		const struct kv *ea = k < want->n ? &want->e[k] : NULL;
		const struct kv *eb = k < got->n ? &got->e[k] : NULL;

		if (ea && eb && !bytes_cmp(ea->k, ea->kl, eb->k, eb->kl) &&
		    !bytes_cmp(ea->v, ea->vl, eb->v, eb->vl))
			continue;
		snprintf(msg, len, "%s entry #%zu is %s (%zu-byte value), "
			 "expected %s (%zu-byte value)", what, k,
			 eb ? NM(((struct bytes){ eb->k, eb->kl })) : "(none)",
			 eb ? eb->vl : 0,
			 ea ? NM(((struct bytes){ ea->k, ea->kl })) : "(none)",
			 ea ? ea->vl : 0);
		return 1;
	}
	return 0;
}

/* 0 when a and b hold the same; else 1 and the first difference in msg,
 * a naming "want" and b "got". */
static int
model_diff(const struct model *a, const struct model *b, char *msg,
	   size_t len)
{
	if (a->n != b->n) {
		snprintf(msg, len, "%zu collections, expected %zu", b->n, a->n);
		return 1;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct mcoll *ca = &a->c[i], *cb = &b->c[i];

		if (cid_cmp(&ca->cid, &cb->cid) != 0) {
			snprintf(msg, len, "collection %" PRIu64 ".%u.%d, "
				 "expected %" PRIu64 ".%u.%d", cb->cid.pool,
				 cb->cid.pg, (int)cb->cid.shard, ca->cid.pool,
				 ca->cid.pg, (int)ca->cid.shard);
			return 1;
		}
		for (size_t j = 0; j < ca->n || j < cb->n; j++) {
			const struct mobj *oa = j < ca->n ? &ca->o[j] : NULL;
			const struct mobj *ob = j < cb->n ? &cb->o[j] : NULL;
			struct bytes na;
			char why[640], where[300];

			if (oa == NULL || ob == NULL ||
			    bytes_cmp(oa->name, oa->nl, ob->name, ob->nl)) {
				snprintf(msg, len, "collection %" PRIu64
					 ".%u.%d: object #%zu is %s, expected "
					 "%s", ca->cid.pool, ca->cid.pg,
					 (int)ca->cid.shard, j,
					 ob ? NM(((struct bytes){ ob->name,
								  ob->nl }))
					    : "(none)",
					 oa ? NM(((struct bytes){ oa->name,
								  oa->nl }))
					    : "(none)");
				return 1;
			}
			na = (struct bytes){ oa->name, oa->nl };
			snprintf(where, sizeof(where), "%" PRIu64 ".%u.%d/%s",
				 ca->cid.pool, ca->cid.pg, (int)ca->cid.shard,
				 NM(na));
			if (oa->size != ob->size) {
				snprintf(msg, len, "object %s: size %" PRIu64
					 ", expected %" PRIu64, where,
					 ob->size, oa->size);
				return 1;
			}
			if (oa->size &&
			    memcmp(oa->data, ob->data, (size_t)oa->size)) {
				uint64_t k = 0;

				while (oa->data[k] == ob->data[k])
					k++;
				snprintf(msg, len, "object %s: byte at offset "
					 "%" PRIu64 " is 0x%02x, expected "
					 "0x%02x", where, k, ob->data[k],
					 oa->data[k]);
				return 1;
			}
			if (kv_diff(&oa->attrs, &ob->attrs, "attrs", why,
				    sizeof(why)) ||
			    kv_diff(&oa->omap, &ob->omap, "omap", why,
				    sizeof(why))) {
				snprintf(msg, len, "object %s: %s", where, why);
				return 1;
			}
		}
	}
	return 0;
}

/* The store holds what m says. */
static void
expect_model(struct be *b, const struct model *m, const char *when)
{
	struct model got = { NULL, 0, 0 };
	char msg[1024];

	model_load(b, &got);
	if (model_diff(m, &got, msg, sizeof(msg)))
		ck_abort_msg("%s: %s: %s", b->name, when, msg);
	model_free(&got);
}

static int
err_contains(const char *err, const char *path)
{
	return strstr(err, path) != NULL;
}

/* ---- 1. Lifecycle -------------------------------------------------------*/

START_TEST(lifecycle)
{
	struct be b, other;
	struct tsr_statfs sf;
	char err[1024] = "", dir[PATH_MAX];
	uint8_t *data = pattern(1, 100 * KiB);
	int rc, fd;

	be_new(&b, _i, "lifecycle");
	be_umount(&b);
	be_mount(&b);

	/* an empty store */
	memset(&sf, 0xa5, sizeof(sf));
	ck_assert_int_eq(b.ops->statfs(b.h, &sf), 0);
	ck_assert_msg(sf.total > 0, "%s: statfs total is 0", b.name);
	ck_assert_msg(sf.available <= sf.total && sf.used <= sf.total,
		      "%s: statfs total %" PRIu64 ", used %" PRIu64 ", "
		      "available %" PRIu64, b.name, sf.total, sf.used,
		      sf.available);
	ck_assert_msg(sf.objects == 0, "%s: statfs of an empty store counts "
		      "%" PRIu64 " objects", b.name, sf.objects);

	TXN_OK(&b, op_mkcoll(C1), op_mkcoll(C2),
	       op_write(C1, B("a"), 0, 100 * KiB, data), op_touch(C1, B("b")),
	       op_setattr(C2, B("c"), B("k"), B("v")));
	ck_assert_int_eq(b.ops->statfs(b.h, &sf), 0);
	ck_assert_msg(sf.objects == 3, "%s: statfs counts %" PRIu64 " objects, "
		      "expected 3", b.name, sf.objects);
	ck_assert_msg(sf.total > 0 && sf.available <= sf.total &&
		      sf.used <= sf.total, "%s: statfs total %" PRIu64 ", "
		      "used %" PRIu64 ", available %" PRIu64, b.name, sf.total,
		      sf.used, sf.available);
	TXN_OK(&b, op_remove(C1, B("b")));
	ck_assert_int_eq(b.ops->statfs(b.h, &sf), 0);
	ck_assert_msg(sf.objects == 2, "%s: statfs counts %" PRIu64 " objects "
		      "after a remove, expected 2", b.name, sf.objects);

	/* mount again, twice, and the store is the same */
	be_remount(&b);
	expect_data(&b, C1, B("a"), data, 100 * KiB);
	be_umount(&b);

	/* mkfs over a store: refused, naming the path, store untouched */
	err[0] = '\0';
	rc = b.ops->mkfs(b.h, err, sizeof(err));
	ck_assert_msg(rc == -EEXIST, "%s: mkfs over a store at %s: %d, "
		      "expected -EEXIST", b.name, b.path, rc);
	ck_assert_msg(err_contains(err, b.path), "%s: mkfs over a store: "
		      "message \"%s\" does not name %s", b.name, err, b.path);
	/* also from another instance, as a second daemon would */
	memset(&other, 0, sizeof(other));
	other.idx = b.idx;
	other.name = b.name;
	memcpy(other.path, b.path, sizeof(b.path));
	be_create(&other);
	err[0] = '\0';
	rc = other.ops->mkfs(other.h, err, sizeof(err));
	ck_assert_msg(rc == -EEXIST, "%s: mkfs over a store from a second "
		      "instance: %d, expected -EEXIST", b.name, rc);
	be_destroy(&other);
	be_mount(&b);
	expect_data(&b, C1, B("a"), data, 100 * KiB);
	expect_missing(&b, C1, B("b"));
	ck_assert_int_eq(b.ops->statfs(b.h, &sf), 0);
	ck_assert_msg(sf.objects == 2, "%s: statfs counts %" PRIu64 " objects "
		      "after remount, expected 2", b.name, sf.objects);
	be_close(&b);

	/* mount of nothing: -ENOENT naming the path */
	be_fresh_path(&b, _i, "lifecycle-none");
	be_create(&b);
	err[0] = '\0';
	rc = b.ops->mount(b.h, err, sizeof(err));
	ck_assert_msg(rc == -ENOENT, "%s: mount of nonexistent %s: %d, "
		      "expected -ENOENT", b.name, b.path, rc);
	ck_assert_msg(err_contains(err, b.path), "%s: mount of nothing: "
		      "message \"%s\" does not name %s", b.name, err, b.path);
	be_destroy(&b);

	/* mkfs over other data: a file where the store should go */
	be_fresh_path(&b, _i, "lifecycle-file");
	fd = open(b.path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_msg(fd >= 0, "create %s: %s", b.path, strerror(errno));
	ck_assert_int_eq(write(fd, data, 8192), 8192);
	close(fd);
	be_create(&b);
	err[0] = '\0';
	rc = b.ops->mkfs(b.h, err, sizeof(err));
	ck_assert_msg(rc == -EEXIST, "%s: mkfs over a file holding data at "
		      "%s: %d, expected -EEXIST", b.name, b.path, rc);
	ck_assert_msg(err_contains(err, b.path), "%s: mkfs over data: message "
		      "\"%s\" does not name %s", b.name, err, b.path);
	be_destroy(&b);

	/* mkfs over a directory holding other data */
	be_fresh_path(&b, _i, "lifecycle-dir");
	ck_assert_int_eq(mkdir(b.path, 0700), 0);
	snprintf(dir, sizeof(dir), "%.4000s/precious", b.path);
	fd = open(dir, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_msg(fd >= 0, "create %s: %s", dir, strerror(errno));
	ck_assert_int_eq(write(fd, data, 100), 100);
	close(fd);
	be_create(&b);
	err[0] = '\0';
	rc = b.ops->mkfs(b.h, err, sizeof(err));
	ck_assert_msg(rc == -EEXIST, "%s: mkfs over a directory holding a file "
		      "(%s): %d, expected -EEXIST", b.name, b.path, rc);
	be_destroy(&b);
	free(data);
}
END_TEST

/* ---- 2. Operations ------------------------------------------------------
 *
 * One test per group of operations, each against explicit expectations
 * written out here, so a failure names the rule broken.
 */

static int
count_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	(*(int *)arg)++;
	return 0;
}

static int
count_name_cb(void *arg, const void *oid, size_t oid_len)
{
	(void)oid;
	(void)oid_len;
	(*(int *)arg)++;
	return 0;
}

/* Every read of (cid, oid) fails with err, calling no callback. */
static void
expect_reads_fail(struct be *b, struct tsr_coll_id cid, struct bytes oid,
		  int err, const char *why)
{
	struct tsr_obj_stat st;
	uint8_t buf[16];
	uint64_t got = 0;
	size_t vl = 0;
	int calls = 0, rc;

	rc = b->ops->read(b->h, &cid, oid.p, oid.n, 0, sizeof(buf), buf, &got);
	ck_assert_msg(rc == err, "%s: read of %s (%s): %d, expected %d",
		      b->name, NM(oid), why, rc, err);
	rc = b->ops->stat(b->h, &cid, oid.p, oid.n, &st);
	ck_assert_msg(rc == err, "%s: stat of %s (%s): %d, expected %d",
		      b->name, NM(oid), why, rc, err);
	rc = b->ops->getattr(b->h, &cid, oid.p, oid.n, "k", 1, buf,
			     sizeof(buf), &vl);
	ck_assert_msg(rc == err, "%s: getattr of %s (%s): %d, expected %d",
		      b->name, NM(oid), why, rc, err);
	rc = b->ops->omap_get(b->h, &cid, oid.p, oid.n, "k", 1, buf,
			      sizeof(buf), &vl);
	ck_assert_msg(rc == err, "%s: omap_get of %s (%s): %d, expected %d",
		      b->name, NM(oid), why, rc, err);
	rc = b->ops->getattrs(b->h, &cid, oid.p, oid.n, count_cb, &calls);
	ck_assert_msg(rc == err && calls == 0, "%s: getattrs of %s (%s): %d "
		      "after %d callbacks, expected %d", b->name, NM(oid), why,
		      rc, calls, err);
	rc = b->ops->omap_iter(b->h, &cid, oid.p, oid.n, NULL, 0, count_cb,
			       &calls);
	ck_assert_msg(rc == err && calls == 0, "%s: omap_iter of %s (%s): %d "
		      "after %d callbacks, expected %d", b->name, NM(oid), why,
		      rc, calls, err);
}

START_TEST(ops_colls)
{
	static const struct tsr_coll_id shard0 = { 1, 0, 0 };
	struct tsr_cursor *cur = xmalloc(sizeof(*cur));
	uint8_t data[100] = { 1, 2, 3 };
	struct be b;
	int calls = 0, rc;

	be_new(&b, _i, "ops-colls");
	TXN_OK(&b, op_mkcoll(C1));
	TXN_FAILS(&b, -EEXIST, op_mkcoll(C1));
	TXN_FAILS(&b, -ENOENT, op_rmcoll(CNONE));
	/* collections differing in one field are different collections */
	TXN_OK(&b, op_mkcoll(shard0), op_mkcoll(C3));
	TXN_OK(&b, op_touch(C1, B("x")));
	expect_reads_fail(&b, shard0, B("x"), -ENOENT,
			  "in another shard of its collection");
	TXN_FAILS(&b, -ENOTEMPTY, op_rmcoll(C1));
	expect_size(&b, C1, B("x"), 0);
	TXN_OK(&b, op_remove(C1, B("x")), op_rmcoll(C1));
	/* gone: object operations in it fail, and it comes back empty */
	TXN_FAILS(&b, -ENOENT, op_touch(C1, B("x")));
	TXN_FAILS(&b, -ENOENT, op_rmcoll(C1));
	TXN_OK(&b, op_mkcoll(C1));
	expect_missing(&b, C1, B("x"));
	cur->len = 0;
	rc = b.ops->list_objects(b.h, &C1, cur, 10, count_name_cb, &calls);
	ck_assert_msg(rc == 0 && calls == 0 && cur->len == 0, "%s: "
		      "list_objects of a re-created collection: %d, %d names, "
		      "cursor of %u bytes", b.name, rc, calls, cur->len);
	TXN_OK(&b, op_rmcoll(C3), op_rmcoll(shard0));

	/* every object operation in a missing collection: -ENOENT */
	TXN_FAILS(&b, -ENOENT, op_touch(CNONE, B("o")));
	TXN_FAILS(&b, -ENOENT, op_write(CNONE, B("o"), 0, 3, data));
	TXN_FAILS(&b, -ENOENT, op_zero(CNONE, B("o"), 0, 3));
	TXN_FAILS(&b, -ENOENT, op_truncate(CNONE, B("o"), 3));
	TXN_FAILS(&b, -ENOENT, op_remove(CNONE, B("o")));
	TXN_FAILS(&b, -ENOENT, op_clone(CNONE, B("o"), B("p")));
	TXN_FAILS(&b, -ENOENT, op_clone_range(CNONE, B("o"), 0, 3, B("p"), 0));
	TXN_FAILS(&b, -ENOENT, op_setattr(CNONE, B("o"), B("k"), B("v")));
	TXN_FAILS(&b, -ENOENT, op_rmattr(CNONE, B("o"), B("k")));
	TXN_FAILS(&b, -ENOENT, op_omap_set(CNONE, B("o"), B("k"), B("v")));
	TXN_FAILS(&b, -ENOENT, op_omap_rm(CNONE, B("o"), B("k")));
	TXN_FAILS(&b, -ENOENT, op_omap_clear(CNONE, B("o")));
	TXN_FAILS(&b, -ENOENT, op_omap_rmrange(CNONE, B("o"), B("a"), B("z")));
	/* and every read */
	expect_reads_fail(&b, CNONE, B("o"), -ENOENT, "missing collection");
	calls = 0;
	cur->len = 0;
	rc = b.ops->list_objects(b.h, &CNONE, cur, 10, count_name_cb, &calls);
	ck_assert_msg(rc == -ENOENT && calls == 0, "%s: list_objects of a "
		      "missing collection: %d after %d names, expected -ENOENT",
		      b.name, rc, calls);
	/* reads of a missing object in an existing collection */
	expect_reads_fail(&b, C1, B("o"), -ENOENT, "missing object");
	free(cur);
	be_close(&b);
}
END_TEST

/* The object holds exactly what the model object e holds. */
static void
expect_mobj(struct be *b, struct tsr_coll_id cid, struct bytes oid,
	    const struct mobj *e)
{
	expect_data(b, cid, oid, e->data, e->size);
}

START_TEST(ops_write)
{
	static const struct {
		uint64_t off, len;
	} w[] = {
		/* unaligned, across 4 KiB blocks and 64 KiB chunks */
		{ 4095, 2 }, { 4097, 10000 }, { 65535, 3 },
		{ 3 * 65536 - 7, 65536 + 13 }, { 1, 1 }, { 131071, 1 },
		{ 12345, 54321 }, { 8192, 4096 }, { 200000, 1 },
	};
	uint8_t *p = pattern(2, 4 * MiB);
	struct mobj e;
	struct be b;

	memset(&e, 0, sizeof(e));
	be_new(&b, _i, "ops-write");
	TXN_OK(&b, op_mkcoll(C1));
	/* WRITE creates */
	TXN_OK(&b, op_write(C1, B("w"), 0, 10, p));
	mobj_write(&e, 0, p, 10);
	expect_mobj(&b, C1, B("w"), &e);
	/* past the end: extends, the gap reads as zeros */
	TXN_OK(&b, op_write(C1, B("w"), 100, 5, p + 10));
	mobj_write(&e, 100, p + 10, 5);
	expect_mobj(&b, C1, B("w"), &e);
	expect_range(&b, C1, B("w"), 10, 90, NULL);
	/* in the middle: only those bytes change */
	TXN_OK(&b, op_write(C1, B("w"), 4, 3, p + 20));
	mobj_write(&e, 4, p + 20, 3);
	expect_mobj(&b, C1, B("w"), &e);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		const uint8_t *d = p + 1000 + i * 7919;

		TXN_OK(&b, op_write(C1, B("w"), w[i].off, w[i].len, d));
		mobj_write(&e, w[i].off, d, w[i].len);
		expect_mobj(&b, C1, B("w"), &e);
	}
	/* a 3 MiB write at an odd offset, over data and past the end */
	TXN_OK(&b, op_write(C1, B("w"), 150001, 3 * MiB, p + 17));
	mobj_write(&e, 150001, p + 17, 3 * MiB);
	expect_mobj(&b, C1, B("w"), &e);
	/* several writes in one transaction: the later ones win */
	TXN_OK(&b, op_write(C1, B("w"), 0, 100, p + 5),
	       op_write(C1, B("w"), 50, 100, p + 500),
	       op_write(C1, B("w"), 25, 10, p + 9000));
	mobj_write(&e, 0, p + 5, 100);
	mobj_write(&e, 50, p + 500, 100);
	mobj_write(&e, 25, p + 9000, 10);
	expect_mobj(&b, C1, B("w"), &e);
	/* aligned whole 64 KiB regions (which a backend may take from the
	 * caller's buffer as they are) mixed in one transaction with small
	 * writes and zeros over the same regions, before and after them */
	{
		static const struct {
			uint64_t off, len, src; /* src UINT64_MAX: ZERO */
		} m[] = {
			{ 65536 + 100, 50, 7 },           /* then replaced whole */
			{ 0, 4 * 65536, 333 * 4096 },     /* four whole regions */
			{ 65536 + 10, 20, 11 },           /* into a whole one */
			{ 2 * 65536 - 5, 10, UINT64_MAX },
			{ 2 * 65536, 65536, 99 * 4096 },  /* replaces a whole one */
			{ 3 * 65536 + 4096, 8192, UINT64_MAX },
			{ 5 * 65536, 2 * 65536 + 1, 17 * 4096 },
			{ 5 * 65536 + 70000, 3, 5 },
		};
		struct tsr_txn_op ops[sizeof(m) / sizeof(m[0])];
		size_t n = sizeof(m) / sizeof(m[0]);

		for (size_t i = 0; i < n; i++)
			ops[i] = m[i].src == UINT64_MAX
					 ? op_zero(C1, B("w"), m[i].off, m[i].len)
					 : op_write(C1, B("w"), m[i].off, m[i].len,
						    p + m[i].src);
		ck_assert_int_eq(be_txn_ex(&b, ops, (uint32_t)n, NULL, __FILE__,
					   __LINE__), 0);
		for (size_t i = 0; i < n; i++)
			mobj_write(&e, m[i].off, m[i].src == UINT64_MAX
							 ? NULL : p + m[i].src,
				   m[i].len);
		expect_mobj(&b, C1, B("w"), &e);
	}
	/* one transaction touching many 64 KiB regions of one object, from
	 * the last to the first: a backend keeping per-region state sorted
	 * inserts before what it has each time */
	{
		struct tsr_txn_op ops[24];

		for (int i = 0; i < 24; i++) {
			uint64_t off = (uint64_t)(23 - i) * 65536 + 1000;

			ops[i] = op_write(C1, B("desc"), off, 5000,
					  p + i * 3000);
		}
		ck_assert_int_eq(be_txn_ex(&b, ops, 24, NULL, __FILE__,
					   __LINE__), 0);
		for (int i = 0; i < 24; i++)
			expect_range(&b, C1, B("desc"),
				     (uint64_t)(23 - i) * 65536 + 1000, 5000,
				     p + i * 3000);
		expect_size(&b, C1, B("desc"), 23 * 65536 + 6000);
	}
	/* a first write far from 0: all before it zeros */
	TXN_OK(&b, op_write(C1, B("far"), 5 * MiB + 3, 7, p));
	expect_size(&b, C1, B("far"), 5 * MiB + 10);
	expect_range(&b, C1, B("far"), 0, 5 * MiB + 3, NULL);
	expect_range(&b, C1, B("far"), 5 * MiB + 3, 7, p);
	be_remount(&b);
	expect_mobj(&b, C1, B("w"), &e);
	mobj_free(&e);
	free(p);
	be_close(&b);
}
END_TEST

/* WRITE data marked TSR_TXN_F_DATA_HELD is the caller's until on_commit:
 * a backend may write from it in place but must never change it, and once
 * on_commit has run it must not read it again.  Each transaction's buffer
 * is scribbled over in its callback; what was stored must still be the
 * bytes submitted.  Aligned, block-congruent and odd layouts, held whole
 * chunks changed by a later op of the same transaction, several in
 * flight, and overwrites of existing data (which a backend may journal). */
struct held_txn {
	uint8_t *buf;
	size_t len;
	const uint8_t *want; /* what buf must still hold at on_commit */
	int changed;
	struct waiter w;
};

static void
held_cb(void *arg, int rc)
{
	struct held_txn *h = arg;

	h->changed = memcmp(h->buf, h->want, h->len) != 0;
	memset(h->buf, 0xa5, h->len); /* the caller's buffer is free again */
	waiter_cb(&h->w, rc);
}

START_TEST(ops_write_held)
{
	static const struct {
		const char *oid;
		uint64_t off, len;
		size_t shift;  /* where in the buffer the data starts */
		int then_zero; /* a ZERO in the same txn over part of it */
	} t[] = {
		{ "aligned", 0, 4 * MiB, 0, 0 },
		{ "congruent", 4096 * 3 + 100, MiB + 5, 100, 0 },
		{ "odd", 65536, 2 * 65536, 17, 0 },
		{ "cow", 0, 4 * 65536, 0, 1 },
		{ "aligned", 65536, 3 * 65536, 0, 0 },   /* overwrite */
		{ "congruent", 5, 4096, 5, 0 },          /* small overwrite */
	};
	enum { N = sizeof(t) / sizeof(t[0]) };
	static struct held_txn h[N]; /* static: late callbacks (see be_txn_ex) */
	uint8_t *src = pattern(41, 5 * MiB);
	struct mobj e[N];
	struct be b;

	memset(e, 0, sizeof(e));
	be_new(&b, _i, "ops-write-held");
	TXN_OK(&b, op_mkcoll(C1));
	for (int round = 0; round < 2; round++) {
		/* round 0: one at a time; round 1: all in flight at once */
		for (size_t i = 0; i < N; i++) {
			struct tsr_txn_op ops[2];
			struct tsr_txn txn = { 1, ops };
			void *mem;

			ck_assert_int_eq(posix_memalign(&mem, 4096, t[i].len + t[i].shift), 0);
			h[i].buf = mem;
			h[i].len = t[i].len + t[i].shift;
			memcpy(h[i].buf + t[i].shift, src + i * 4099 + round, t[i].len);
			memset(h[i].buf, 0x3c, t[i].shift);
			h[i].want = xmalloc(h[i].len);
			memcpy((uint8_t *)h[i].want, h[i].buf, h[i].len);
			h[i].changed = 0;
			waiter_init(&h[i].w);
			ops[0] = op_write(C1, (struct bytes){ t[i].oid, strlen(t[i].oid) },
					  t[i].off, t[i].len, h[i].buf + t[i].shift);
			ops[0].flags = TSR_TXN_F_DATA_HELD;
			if (t[i].then_zero) {
				ops[1] = op_zero(C1, (struct bytes){ t[i].oid,
						 strlen(t[i].oid) }, 65536 + 10, 100);
				txn.nops = 2;
			}
			ck_assert_int_eq(b.ops->submit(b.h, &txn, held_cb, &h[i]), 0);
			if (round == 0)
				ck_assert_int_eq(waiter_wait(&h[i].w), 0);
		}
		for (size_t i = 0; i < N; i++) {
			size_t o = 0;

			ck_assert_int_eq(waiter_wait(&h[i].w), 0);
			ck_assert_int_eq(h[i].w.rc, 0);
			ck_assert_int_eq(h[i].w.calls, 1);
			ck_assert_msg(!h[i].changed, "%s: txn %zu (%s): the backend "
				      "changed held data before on_commit", b.name, i,
				      t[i].oid);
			while (o < N && strcmp(t[o].oid, t[i].oid) != 0)
				o++;
			mobj_write(&e[o], t[i].off, src + i * 4099 + round, t[i].len);
			if (t[i].then_zero)
				mobj_write(&e[o], 65536 + 10, NULL, 100);
		}
		ck_assert_int_eq(b.ops->flush(b.h), 0);
		for (size_t i = 0; i < N; i++) {
			if (e[i].size || e[i].data)
				expect_mobj(&b, C1, (struct bytes){ t[i].oid,
						strlen(t[i].oid) }, &e[i]);
			waiter_fini(&h[i].w);
			free(h[i].buf);
			free((void *)h[i].want);
		}
	}
	be_remount(&b);
	for (size_t i = 0; i < N; i++)
		if (e[i].size || e[i].data)
			expect_mobj(&b, C1, (struct bytes){ t[i].oid, strlen(t[i].oid) },
				    &e[i]);
	for (size_t i = 0; i < N; i++)
		mobj_free(&e[i]);
	free(src);
	be_close(&b);
}
END_TEST

START_TEST(ops_zero)
{
	uint8_t *p = pattern(3, 256 * KiB);
	struct mobj e;
	struct be b;

	memset(&e, 0, sizeof(e));
	be_new(&b, _i, "ops-zero");
	TXN_OK(&b, op_mkcoll(C1),
	       op_write(C1, B("z"), 0, 200 * KiB, p));
	mobj_write(&e, 0, p, 200 * KiB);
	/* within: zeros there, size unchanged */
	TXN_OK(&b, op_zero(C1, B("z"), 1000, 5000));
	mobj_write(&e, 1000, NULL, 5000);
	expect_mobj(&b, C1, B("z"), &e);
	/* a whole aligned chunk, and one byte */
	TXN_OK(&b, op_zero(C1, B("z"), 64 * KiB, 64 * KiB),
	       op_zero(C1, B("z"), 150001, 1));
	mobj_write(&e, 64 * KiB, NULL, 64 * KiB);
	mobj_write(&e, 150001, NULL, 1);
	expect_mobj(&b, C1, B("z"), &e);
	/* at the start: never shrinks */
	TXN_OK(&b, op_zero(C1, B("z"), 0, 10));
	mobj_write(&e, 0, NULL, 10);
	expect_mobj(&b, C1, B("z"), &e);
	/* across the end: extends */
	TXN_OK(&b, op_zero(C1, B("z"), 190 * KiB, 20 * KiB));
	mobj_write(&e, 190 * KiB, NULL, 20 * KiB);
	expect_mobj(&b, C1, B("z"), &e);
	/* wholly past the end: extends, the gap zeros too */
	TXN_OK(&b, op_zero(C1, B("z"), 300 * KiB, 10));
	mobj_write(&e, 300 * KiB, NULL, 10);
	expect_mobj(&b, C1, B("z"), &e);
	/* and data written over zeros reads back */
	TXN_OK(&b, op_write(C1, B("z"), 1500, 100, p + 7));
	mobj_write(&e, 1500, p + 7, 100);
	expect_mobj(&b, C1, B("z"), &e);
	/* ZERO over whole 64 KiB regions, then a WRITE into them, in one
	 * transaction: the write comes after, so it wins */
	TXN_OK(&b, op_write(C1, B("zw"), 0, 256 * KiB, p));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p, 256 * KiB);
	TXN_OK(&b, op_zero(C1, B("zw"), 53886, 129029),
	       op_write(C1, B("zw"), 128552, 33799, p + 11));
	mobj_write(&e, 53886, NULL, 129029);
	mobj_write(&e, 128552, p + 11, 33799);
	expect_mobj(&b, C1, B("zw"), &e);
	/* ... and a TRUNCATE down and up, then a WRITE */
	TXN_OK(&b, op_truncate(C1, B("zw"), 1000),
	       op_truncate(C1, B("zw"), 256 * KiB),
	       op_write(C1, B("zw"), 70000, 70000, p + 22));
	mobj_resize(&e, 1000);
	mobj_resize(&e, 256 * KiB);
	mobj_write(&e, 70000, p + 22, 70000);
	expect_mobj(&b, C1, B("zw"), &e);
	/* ZERO creates */
	TXN_OK(&b, op_zero(C1, B("z2"), 10, 100));
	expect_size(&b, C1, B("z2"), 110);
	expect_range(&b, C1, B("z2"), 0, 110, NULL);
	be_remount(&b);
	expect_mobj(&b, C1, B("zw"), &e);
	mobj_free(&e);
	free(p);
	be_close(&b);
}
END_TEST

START_TEST(ops_truncate)
{
	uint8_t *p = pattern(4, 256 * KiB);
	struct mobj e;
	struct be b;
	int rc;

	memset(&e, 0, sizeof(e));
	be_new(&b, _i, "ops-truncate");
	TXN_OK(&b, op_mkcoll(C1));
	/* TRUNCATE creates, growing reads zeros */
	TXN_OK(&b, op_truncate(C1, B("t"), 5000));
	expect_size(&b, C1, B("t"), 5000);
	expect_range(&b, C1, B("t"), 0, 5000, NULL);

	TXN_OK(&b, op_write(C1, B("u"), 0, 10 * KiB, p));
	mobj_write(&e, 0, p, 10 * KiB);
	TXN_OK(&b, op_truncate(C1, B("u"), 50 * KiB));
	mobj_resize(&e, 50 * KiB);
	expect_mobj(&b, C1, B("u"), &e);
	/* shrink then grow: the old bytes read as zeros */
	TXN_OK(&b, op_truncate(C1, B("u"), 3000));
	mobj_resize(&e, 3000);
	expect_mobj(&b, C1, B("u"), &e);
	TXN_OK(&b, op_truncate(C1, B("u"), 20000));
	mobj_resize(&e, 20000);
	expect_mobj(&b, C1, B("u"), &e);
	/* ... and past it, a write leaves the gap zeros */
	TXN_OK(&b, op_write(C1, B("u"), 70000, 100, p + 3));
	mobj_write(&e, 70000, p + 3, 100);
	expect_mobj(&b, C1, B("u"), &e);
	/* the same size: nothing changes */
	TXN_OK(&b, op_truncate(C1, B("u"), 70100));
	expect_mobj(&b, C1, B("u"), &e);
	/* shrink and grow in one transaction, mid-chunk */
	TXN_OK(&b, op_write(C1, B("v"), 0, 200 * KiB, p),
	       op_truncate(C1, B("v"), 65536 + 100),
	       op_truncate(C1, B("v"), 3 * 65536));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p, 65536 + 100);
	mobj_resize(&e, 3 * 65536);
	expect_mobj(&b, C1, B("v"), &e);
	/* to 0 and back */
	TXN_OK(&b, op_truncate(C1, B("v"), 0), op_truncate(C1, B("v"), 100000));
	expect_size(&b, C1, B("v"), 100000);
	expect_range(&b, C1, B("v"), 0, 100000, NULL);
	/* sparse: a large size costs nothing and reads zeros */
	TXN_OK(&b, op_truncate(C1, B("s"), 64 * MiB));
	expect_size(&b, C1, B("s"), 64 * MiB);
	expect_range(&b, C1, B("s"), 64 * MiB - 5000, 5000, NULL);
	TXN_OK(&b, op_truncate(C1, B("s"), 10));
	expect_size(&b, C1, B("s"), 10);

	/* past any sane max_object_size: -EFBIG, and nothing changes */
	TXN_FAILS(&b, -EFBIG, op_truncate(C1, B("u"), 1ull << 62));
	TXN_FAILS(&b, -EFBIG, op_write(C1, B("u"), 1ull << 62, 1, p));
	TXN_FAILS(&b, -EFBIG, op_zero(C1, B("u"), 1ull << 62, 1));
	TXN_FAILS(&b, -EFBIG, op_clone_range(C1, B("u"), 0, 1, B("u"),
					     1ull << 62));
	rc = TXN(&b, op_truncate(C1, B("big"), 1ull << 62));
	ck_assert_msg(rc == -EFBIG, "%s: TRUNCATE of a new object to 2^62: "
		      "%d, expected -EFBIG", b.name, rc);
	expect_missing(&b, C1, B("big"));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p, 3000);
	mobj_resize(&e, 20000);
	mobj_write(&e, 70000, p + 3, 100);
	expect_mobj(&b, C1, B("u"), &e);
	mobj_free(&e);
	free(p);
	be_close(&b);
}
END_TEST

START_TEST(ops_remove)
{
	uint8_t *p = pattern(5, 100 * KiB);
	struct be b;
	int n = 0, rc;

	be_new(&b, _i, "ops-remove");
	TXN_OK(&b, op_mkcoll(C1));
	TXN_FAILS(&b, -ENOENT, op_remove(C1, B("r")));
	TXN_OK(&b, op_write(C1, B("r"), 0, 100 * KiB, p),
	       op_setattr(C1, B("r"), B("a"), B("1")),
	       op_omap_set(C1, B("r"), B("k"), B("v")),
	       op_touch(C1, B("r2")));
	/* TOUCH of an existing object changes nothing */
	TXN_OK(&b, op_touch(C1, B("r")));
	expect_data(&b, C1, B("r"), p, 100 * KiB);
	expect_attr(&b, C1, B("r"), B("a"), B("1"));
	TXN_OK(&b, op_remove(C1, B("r")));
	expect_reads_fail(&b, C1, B("r"), -ENOENT, "removed");
	TXN_FAILS(&b, -ENOENT, op_remove(C1, B("r")));
	expect_size(&b, C1, B("r2"), 0);
	/* re-created, it holds nothing of the old object */
	TXN_OK(&b, op_touch(C1, B("r")));
	expect_size(&b, C1, B("r"), 0);
	expect_read_len(&b, C1, B("r"), 0, 100, 0);
	expect_no_attr(&b, C1, B("r"), B("a"));
	expect_no_omap(&b, C1, B("r"), B("k"));
	rc = b.ops->getattrs(b.h, &C1, "r", 1, count_cb, &n);
	ck_assert_msg(rc == 0 && n == 0, "%s: getattrs of a re-created "
		      "object: %d, %d attributes", b.name, rc, n);
	rc = b.ops->omap_iter(b.h, &C1, "r", 1, NULL, 0, count_cb, &n);
	ck_assert_msg(rc == 0 && n == 0, "%s: omap_iter of a re-created "
		      "object: %d, %d keys", b.name, rc, n);
	/* removed and re-created in one transaction */
	TXN_OK(&b, op_write(C1, B("r"), 0, 50 * KiB, p),
	       op_setattr(C1, B("r"), B("a"), B("2")));
	TXN_OK(&b, op_remove(C1, B("r")), op_write(C1, B("r"), 10, 10, p + 99));
	expect_size(&b, C1, B("r"), 20);
	expect_range(&b, C1, B("r"), 0, 10, NULL);
	expect_range(&b, C1, B("r"), 10, 10, p + 99);
	expect_no_attr(&b, C1, B("r"), B("a"));
	be_remount(&b);
	expect_size(&b, C1, B("r"), 20);
	expect_no_attr(&b, C1, B("r"), B("a"));
	free(p);
	be_close(&b);
}
END_TEST

static int
push_kv_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	kv_push(arg, k, kl, v, vl);
	return 0;
}

/* The attributes (omap 0), or the omap entries from start (omap 1), of an
 * object, sorted.  omap_iter must visit in key order from start;
 * getattrs' order is not promised.  Neither may visit a key twice. */
static void
collect_kv(struct be *b, int omap, struct tsr_coll_id cid, struct bytes oid,
	   struct bytes start, struct kvset *out)
{
	const char *what = omap ? "omap_iter" : "getattrs";
	struct kvset seen;
	int rc;

	memset(&seen, 0, sizeof(seen));
	memset(out, 0, sizeof(*out));
	if (omap)
		rc = b->ops->omap_iter(b->h, &cid, oid.p, oid.n, start.p,
				       start.n, push_kv_cb, &seen);
	else
		rc = b->ops->getattrs(b->h, &cid, oid.p, oid.n, push_kv_cb,
				      &seen);
	ck_assert_msg(rc == 0, "%s: %s of %s: %d (%s)", b->name, what,
		      NM(oid), rc, strerror(-rc));
	for (size_t i = 0; i < seen.n; i++) {
		struct bytes k = { seen.e[i].k, seen.e[i].kl };

		if (omap && i == 0)
			REQUIRE(bytes_cmp(k.p, k.n, start.p, start.n) >= 0,
				"%s: omap_iter of %s from %s: first key %s is "
				"before the start", b->name, NM(oid),
				NM(start), NM(k));
		if (omap && i > 0)
			REQUIRE(bytes_cmp(seen.e[i - 1].k, seen.e[i - 1].kl,
					  k.p, k.n) < 0,
				"%s: omap_iter of %s: key %s after %s: not in "
				"unsigned byte order", b->name, NM(oid), NM(k),
				NM(((struct bytes){ seen.e[i - 1].k,
						    seen.e[i - 1].kl })));
		REQUIRE(!kv_has(out, k), "%s: %s of %s: key %s visited twice",
			b->name, what, NM(oid), NM(k));
		kv_put(out, k.p, k.n, seen.e[i].v, seen.e[i].vl);
	}
	kv_free(&seen);
}

/* The attributes (omap 0) or omap (1) of an object are exactly the n
 * pairs given as alternating key, value. */
static void
expect_kvs(struct be *b, int omap, struct tsr_coll_id cid, struct bytes oid,
	   const struct bytes *pairs, size_t n)
{
	struct kvset want, got;
	char msg[768];

	memset(&want, 0, sizeof(want));
	for (size_t i = 0; i < n; i++)
		kv_put(&want, pairs[2 * i].p, pairs[2 * i].n,
		       pairs[2 * i + 1].p, pairs[2 * i + 1].n);
	collect_kv(b, omap, cid, oid, NOBYTES, &got);
	if (kv_diff(&want, &got, omap ? "omap" : "attrs", msg, sizeof(msg)))
		ck_abort_msg("%s: object %s: %s", b->name, NM(oid), msg);
	kv_free(&want);
	kv_free(&got);
}

#define PAIRS(...) ((const struct bytes[]){ __VA_ARGS__ })
#define NPAIRS(...) (sizeof(PAIRS(__VA_ARGS__)) / sizeof(struct bytes) / 2)
#define expect_attrs(b, c, o, ...)                                           \
	expect_kvs((b), 0, (c), (o), PAIRS(__VA_ARGS__), NPAIRS(__VA_ARGS__))
#define expect_omaps(b, c, o, ...)                                           \
	expect_kvs((b), 1, (c), (o), PAIRS(__VA_ARGS__), NPAIRS(__VA_ARGS__))
#define expect_no_attrs(b, c, o) expect_kvs((b), 0, (c), (o), NULL, 0)
#define expect_no_omaps(b, c, o) expect_kvs((b), 1, (c), (o), NULL, 0)

START_TEST(ops_clone)
{
	uint8_t *p = pattern(6, 512 * KiB);
	struct mobj e;
	struct be b;

	memset(&e, 0, sizeof(e));
	be_new(&b, _i, "ops-clone");
	TXN_OK(&b, op_mkcoll(C1));
	TXN_OK(&b, op_write(C1, B("s"), 0, 150 * KiB, p),
	       op_setattr(C1, B("s"), B("a"), B("1")),
	       op_setattr(C1, B("s"), B("b"), B("2")),
	       op_omap_set(C1, B("s"), B("k1"), B("v1")),
	       op_omap_set(C1, B("s"), B("k2"), B("v2")));
	/* a larger destination with attributes and omap of its own */
	TXN_OK(&b, op_write(C1, B("d"), 0, 300 * KiB, p + 1000),
	       op_setattr(C1, B("d"), B("old"), B("x")),
	       op_setattr(C1, B("d"), B("a"), B("z")),
	       op_omap_set(C1, B("d"), B("old"), B("y")));
	/* CLONE replaces it wholly: data, size, attributes, omap */
	TXN_OK(&b, op_clone(C1, B("s"), B("d")));
	expect_data(&b, C1, B("d"), p, 150 * KiB);
	expect_attrs(&b, C1, B("d"), B("a"), B("1"), B("b"), B("2"));
	expect_omaps(&b, C1, B("d"), B("k1"), B("v1"), B("k2"), B("v2"));
	/* to a new object */
	TXN_OK(&b, op_clone(C1, B("s"), B("n")));
	expect_data(&b, C1, B("n"), p, 150 * KiB);
	expect_attrs(&b, C1, B("n"), B("a"), B("1"), B("b"), B("2"));
	expect_omaps(&b, C1, B("n"), B("k1"), B("v1"), B("k2"), B("v2"));
	/* a copy: changing one side leaves the other alone */
	TXN_OK(&b, op_write(C1, B("s"), 100, 100, p + 5000),
	       op_setattr(C1, B("s"), B("a"), B("S")),
	       op_omap_rm(C1, B("s"), B("k1")),
	       op_truncate(C1, B("n"), 1000),
	       op_write(C1, B("d"), 200, 10, p + 7000),
	       op_rmattr(C1, B("d"), B("b")),
	       op_omap_set(C1, B("d"), B("k3"), B("v3")));
	mobj_write(&e, 0, p, 150 * KiB);
	mobj_write(&e, 100, p + 5000, 100);
	expect_mobj(&b, C1, B("s"), &e);
	expect_attrs(&b, C1, B("s"), B("a"), B("S"), B("b"), B("2"));
	expect_omaps(&b, C1, B("s"), B("k2"), B("v2"));
	expect_attrs(&b, C1, B("n"), B("a"), B("1"), B("b"), B("2"));
	expect_omaps(&b, C1, B("n"), B("k1"), B("v1"), B("k2"), B("v2"));
	expect_data(&b, C1, B("n"), p, 1000);
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p, 150 * KiB);
	mobj_write(&e, 200, p + 7000, 10);
	expect_mobj(&b, C1, B("d"), &e);
	expect_attrs(&b, C1, B("d"), B("a"), B("1"));
	expect_omaps(&b, C1, B("d"), B("k1"), B("v1"), B("k2"), B("v2"),
		     B("k3"), B("v3"));
	/* holes are cloned as holes (they read as zeros) */
	TXN_OK(&b, op_write(C1, B("h"), 1 * MiB, 4096, p),
	       op_write(C1, B("h"), 10, 10, p + 10));
	TXN_OK(&b, op_clone(C1, B("h"), B("d")));
	mobj_resize(&e, 0);
	mobj_write(&e, 1 * MiB, p, 4096);
	mobj_write(&e, 10, p + 10, 10);
	expect_mobj(&b, C1, B("d"), &e);
	expect_no_attrs(&b, C1, B("d"));
	expect_no_omaps(&b, C1, B("d"));
	/* an empty source */
	TXN_OK(&b, op_touch(C1, B("empty")), op_clone(C1, B("empty"), B("d")));
	expect_size(&b, C1, B("d"), 0);
	/* a missing source: -ENOENT, the destination untouched */
	TXN_FAILS(&b, -ENOENT, op_clone(C1, B("nosuch"), B("s")));
	TXN_FAILS(&b, -ENOENT, op_clone(C1, B("nosuch"), B("new")));
	expect_missing(&b, C1, B("new"));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p, 150 * KiB);
	mobj_write(&e, 100, p + 5000, 100);
	expect_mobj(&b, C1, B("s"), &e);
	be_remount(&b);
	expect_mobj(&b, C1, B("s"), &e);
	expect_data(&b, C1, B("n"), p, 1000);
	mobj_free(&e);
	free(p);
	be_close(&b);
}
END_TEST

START_TEST(ops_clone_range)
{
	uint8_t *p = pattern(7, 512 * KiB);
	struct mobj e, src;
	struct be b;

	memset(&e, 0, sizeof(e));
	memset(&src, 0, sizeof(src));
	be_new(&b, _i, "ops-clone-range");
	TXN_OK(&b, op_mkcoll(C1));
	/* a source with data, a hole and more data */
	TXN_OK(&b, op_write(C1, B("s"), 0, 100 * KiB, p),
	       op_write(C1, B("s"), 200 * KiB, 10 * KiB, p + 200 * KiB),
	       op_setattr(C1, B("s"), B("a"), B("1")));
	mobj_write(&src, 0, p, 100 * KiB);
	mobj_write(&src, 200 * KiB, p + 200 * KiB, 10 * KiB);
	/* to a missing destination: created, the part before off2 zeros */
	TXN_OK(&b, op_clone_range(C1, B("s"), 1000, 5000, B("d"), 7000));
	mobj_write(&e, 7000, src.data + 1000, 5000);
	expect_mobj(&b, C1, B("d"), &e);
	/* only data: no attributes come along */
	expect_no_attrs(&b, C1, B("d"));
	/* across the hole: zeros */
	TXN_OK(&b, op_clone_range(C1, B("s"), 90 * KiB, 120 * KiB, B("d2"), 0));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, src.data + 90 * KiB, 120 * KiB);
	expect_mobj(&b, C1, B("d2"), &e);
	/* past the source's end: zeros, and the destination grows to
	 * off2 + len as a write of len bytes would make it */
	TXN_OK(&b, op_clone_range(C1, B("s"), 210 * KiB - 100, 1000, B("d3"),
				  3));
	mobj_resize(&e, 0);
	mobj_write(&e, 3, src.data + 210 * KiB - 100, 100);
	mobj_write(&e, 103, NULL, 900);
	expect_mobj(&b, C1, B("d3"), &e);
	TXN_OK(&b, op_clone_range(C1, B("s"), 1 * MiB, 5000, B("d3"), 2000));
	mobj_write(&e, 2000, NULL, 5000);
	expect_mobj(&b, C1, B("d3"), &e);
	/* into the middle of a larger destination: it does not shrink */
	TXN_OK(&b, op_write(C1, B("big"), 0, 300 * KiB, p + 100 * KiB));
	mobj_resize(&e, 0);
	mobj_write(&e, 0, p + 100 * KiB, 300 * KiB);
	TXN_OK(&b, op_clone_range(C1, B("s"), 4095, 65537, B("big"), 33333));
	mobj_write(&e, 33333, src.data + 4095, 65537);
	expect_mobj(&b, C1, B("big"), &e);
	/* within one object, ranges apart: allowed */
	TXN_OK(&b, op_clone_range(C1, B("s"), 0, 4096, B("s"), 50000),
	       op_clone_range(C1, B("s"), 8192, 100, B("s"), 8192 + 100));
	mobj_write(&src, 50000, p, 4096);
	mobj_write(&src, 8292, p + 8192, 100);
	expect_mobj(&b, C1, B("s"), &src);
	/* ... past its own end, extending it */
	TXN_OK(&b, op_clone_range(C1, B("s"), 0, 1000, B("s"), 300 * KiB));
	mobj_write(&src, 300 * KiB, p, 1000);
	expect_mobj(&b, C1, B("s"), &src);
	/* overlapping: -EINVAL, nothing changes */
	TXN_FAILS(&b, -EINVAL, op_clone_range(C1, B("s"), 0, 4096, B("s"),
					      2048));
	TXN_FAILS(&b, -EINVAL, op_clone_range(C1, B("s"), 2048, 4096, B("s"),
					      0));
	TXN_FAILS(&b, -EINVAL, op_clone_range(C1, B("s"), 100, 10, B("s"),
					      100));
	TXN_FAILS(&b, -EINVAL, op_clone_range(C1, B("s"), 100, 10, B("s"),
					      109));
	expect_mobj(&b, C1, B("s"), &src);
	/* a missing source: -ENOENT, no destination made */
	TXN_FAILS(&b, -ENOENT, op_clone_range(C1, B("nosuch"), 0, 10, B("new"),
					      0));
	expect_missing(&b, C1, B("new"));
	be_remount(&b);
	expect_mobj(&b, C1, B("s"), &src);
	expect_mobj(&b, C1, B("big"), &e);
	mobj_free(&e);
	mobj_free(&src);
	free(p);
	be_close(&b);
}
END_TEST

/* Stops an iteration at the stop'th call with 7 (stop 0: never). */
struct stopper {
	int calls, stop;
};

static int
stop_kv_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct stopper *s = arg;

	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	return ++s->calls == s->stop ? 7 : 0;
}

/* get of omap (1) or attribute (0) key with a buffer of buflen. */
static int
get_kv(struct be *b, int omap, struct tsr_coll_id cid, struct bytes oid,
       struct bytes key, void *buf, size_t buflen, size_t *vl)
{
	return (omap ? b->ops->omap_get : b->ops->getattr)(
		b->h, &cid, oid.p, oid.n, key.p, key.n, buf, buflen, vl);
}

/* What getattr and omap_get share: -ERANGE with the full length when the
 * buffer is short, exact fits, empty values. */
static void
check_get_sizes(struct be *b, int omap, struct bytes oid)
{
	const char *what = omap ? "omap_get" : "getattr";
	uint8_t *v = pattern(8, 4000), buf[4000];
	size_t vl;
	int rc;

	TXN_OK(b, op_kv(omap ? TSR_TXN_OMAP_SET : TSR_TXN_SETATTR, C1, oid,
			B("big"), (struct bytes){ v, 4000 }),
	       op_kv(omap ? TSR_TXN_OMAP_SET : TSR_TXN_SETATTR, C1, oid,
		     B("empty"), (struct bytes){ "", 0 }));
	vl = 0;
	rc = get_kv(b, omap, C1, oid, B("big"), buf, 10, &vl);
	ck_assert_msg(rc == -ERANGE && vl == 4000, "%s: %s of a 4000-byte "
		      "value into 10 bytes: %d, length %zu; expected -ERANGE, "
		      "4000", b->name, what, rc, vl);
	vl = 0;
	rc = get_kv(b, omap, C1, oid, B("big"), buf, 3999, &vl);
	ck_assert_msg(rc == -ERANGE && vl == 4000, "%s: %s of a 4000-byte "
		      "value into 3999 bytes: %d, length %zu; expected -ERANGE, "
		      "4000", b->name, what, rc, vl);
	vl = 0;
	rc = get_kv(b, omap, C1, oid, B("big"), buf, 4000, &vl);
	ck_assert_msg(rc == 0 && vl == 4000 && memcmp(buf, v, 4000) == 0,
		      "%s: %s of a 4000-byte value into 4000 bytes: %d, length "
		      "%zu", b->name, what, rc, vl);
	vl = 99;
	rc = get_kv(b, omap, C1, oid, B("empty"), buf, 0, &vl);
	ck_assert_msg(rc == 0 && vl == 0, "%s: %s of an empty value into 0 "
		      "bytes: %d, length %zu", b->name, what, rc, vl);
	vl = 0;
	rc = get_kv(b, omap, C1, oid, B("big"), buf, 0, &vl);
	ck_assert_msg(rc == -ERANGE && vl == 4000, "%s: %s of a 4000-byte "
		      "value into 0 bytes: %d, length %zu", b->name, what, rc,
		      vl);
	free(v);
}

START_TEST(ops_attrs)
{
	static const uint8_t bin[] = { 0, 1, 0xff, 0, 0x80 };
	struct stopper st = { 0, 2 };
	uint8_t *big = pattern(8, 4000); /* as check_get_sizes sets */
	struct be b;
	int rc;

	be_new(&b, _i, "ops-attrs");
	TXN_OK(&b, op_mkcoll(C1));
	/* SETATTR creates */
	TXN_OK(&b, op_setattr(C1, B("x"), B("k"), B("v")));
	expect_size(&b, C1, B("x"), 0);
	expect_attr(&b, C1, B("x"), B("k"), B("v"));
	/* overwrite; binary keys and values; attributes and omap are
	 * separate maps */
	TXN_OK(&b, op_setattr(C1, B("x"), B("k"), B("longer value")),
	       op_setattr(C1, B("x"), B("\0k\xff"), ((struct bytes){ bin, 5 })),
	       op_setattr(C1, B("x"), B("k2"), B("2")),
	       op_omap_set(C1, B("x"), B("k"), B("omap")));
	expect_attr(&b, C1, B("x"), B("k"), B("longer value"));
	expect_attr(&b, C1, B("x"), B("\0k\xff"), ((struct bytes){ bin, 5 }));
	expect_omap(&b, C1, B("x"), B("k"), B("omap"));
	expect_no_attr(&b, C1, B("x"), B("\0k"));
	expect_no_attr(&b, C1, B("x"), B("k\0"));
	expect_attrs(&b, C1, B("x"), B("k"), B("longer value"), B("\0k\xff"),
		     ((struct bytes){ bin, 5 }), B("k2"), B("2"));
	/* RMATTR; of a missing attribute: fine; of a missing object:
	 * -ENOENT */
	TXN_OK(&b, op_rmattr(C1, B("x"), B("k2")));
	expect_no_attr(&b, C1, B("x"), B("k2"));
	TXN_OK(&b, op_rmattr(C1, B("x"), B("k2")),
	       op_rmattr(C1, B("x"), B("never")));
	TXN_FAILS(&b, -ENOENT, op_rmattr(C1, B("nosuch"), B("k")));
	expect_missing(&b, C1, B("nosuch"));
	/* a missing object is -ENOENT, not a missing attribute, also
	 * right after a read of one that exists */
	expect_attr(&b, C1, B("x"), B("k"), B("longer value"));
	expect_no_kv(&b, 0, C1, B("nosuch"), B("k"), -ENOENT);
	expect_attr(&b, C1, B("x"), B("k"), B("longer value"));
	expect_no_kv(&b, 0, CNONE, B("x"), B("k"), -ENOENT);
	expect_attrs(&b, C1, B("x"), B("k"), B("longer value"), B("\0k\xff"),
		     ((struct bytes){ bin, 5 }));
	expect_omaps(&b, C1, B("x"), B("k"), B("omap"));
	/* attributes do not touch the data */
	TXN_OK(&b, op_write(C1, B("y"), 0, 5, "hello"),
	       op_setattr(C1, B("y"), B("k"), B("v")));
	expect_data(&b, C1, B("y"), "hello", 5);
	check_get_sizes(&b, 0, B("y"));
	/* getattrs visits all; a callback's non-zero return stops it and is
	 * returned */
	TXN_OK(&b, op_setattr(C1, B("y"), B("a1"), B("1")),
	       op_setattr(C1, B("y"), B("a2"), B("2")));
	expect_attrs(&b, C1, B("y"), B("k"), B("v"), B("a1"), B("1"),
		     B("a2"), B("2"), B("big"), ((struct bytes){ big, 4000 }),
		     B("empty"), B(""));
	rc = b.ops->getattrs(b.h, &C1, "y", 1, stop_kv_cb, &st);
	ck_assert_msg(rc == 7 && st.calls == 2, "%s: getattrs whose callback "
		      "returns 7 on the 2nd call: returned %d after %d calls",
		      b.name, rc, st.calls);
	be_remount(&b);
	expect_attrs(&b, C1, B("x"), B("k"), B("longer value"), B("\0k\xff"),
		     ((struct bytes){ bin, 5 }));
	free(big);
	be_close(&b);
}
END_TEST

/* The omap keys of oid from start are exactly want[0..n), in that order. */
static void
expect_omap_keys(struct be *b, struct tsr_coll_id cid, struct bytes oid,
		 struct bytes start, const struct bytes *want, size_t n)
{
	struct kvset seen;
	int rc;

	memset(&seen, 0, sizeof(seen));
	rc = b->ops->omap_iter(b->h, &cid, oid.p, oid.n, start.p, start.n,
			       push_kv_cb, &seen);
	ck_assert_msg(rc == 0, "%s: omap_iter of %s from %s: %d", b->name,
		      NM(oid), NM(start), rc);
	for (size_t i = 0; i < n || i < seen.n; i++) {
		struct bytes got = i < seen.n ? (struct bytes){ seen.e[i].k,
								seen.e[i].kl }
					      : B("(end)");

		ck_assert_msg(i < n && i < seen.n &&
			      !bytes_cmp(got.p, got.n, want[i].p, want[i].n),
			      "%s: omap_iter of %s from %s: key #%zu is %s, "
			      "expected %s", b->name, NM(oid), NM(start), i,
			      NM(got), i < n ? NM(want[i]) : "(end)");
	}
	kv_free(&seen);
}

#define KEYS(...) ((const struct bytes[]){ __VA_ARGS__ })
#define NKEYS(...) (sizeof(KEYS(__VA_ARGS__)) / sizeof(struct bytes))
#define expect_keys(b, c, o, start, ...)                                     \
	expect_omap_keys((b), (c), (o), (start), KEYS(__VA_ARGS__),          \
			 NKEYS(__VA_ARGS__))

START_TEST(ops_omap)
{
	/* unsigned byte order, a prefix before its extensions */
	static const struct bytes sorted[] = {
		B("\0"), B("\0\0"), B("\0\xff"), B("a"), B("a\0"), B("ab"),
		B("a\xff"), B("b"), B("\x7f"), B("\x80"), B("\xff"),
		B("\xff\0"), B("\xff\xff"),
	};
	enum { NS = sizeof(sorted) / sizeof(sorted[0]) };
	struct tsr_txn_op ops[NS];
	struct stopper st = { 0, 3 };
	uint8_t *big = pattern(9, 64 * KiB);
	const struct bytes bigv = { big, 64 * KiB };
	struct be b;
	int rc;

	be_new(&b, _i, "ops-omap");
	TXN_OK(&b, op_mkcoll(C1));
	/* OMAP_SET creates, overwrites */
	TXN_OK(&b, op_omap_set(C1, B("o"), B("k"), B("v")));
	expect_size(&b, C1, B("o"), 0);
	expect_omap(&b, C1, B("o"), B("k"), B("v"));
	TXN_OK(&b, op_omap_set(C1, B("o"), B("k"), B("v2")),
	       op_omap_set(C1, B("o"), B("large"), bigv));
	expect_omap(&b, C1, B("o"), B("k"), B("v2"));
	expect_no_omap(&b, C1, B("o"), B("k\0"));
	expect_omap(&b, C1, B("o"), B("large"), bigv);
	check_get_sizes(&b, 1, B("o"));
	/* OMAP_RM; of a missing key: fine */
	TXN_OK(&b, op_omap_rm(C1, B("o"), B("k")),
	       op_omap_rm(C1, B("o"), B("never")));
	expect_no_omap(&b, C1, B("o"), B("k"));
	/* on a missing object: -ENOENT, not created */
	TXN_FAILS(&b, -ENOENT, op_omap_rm(C1, B("nosuch"), B("k")));
	TXN_FAILS(&b, -ENOENT, op_omap_clear(C1, B("nosuch")));
	TXN_FAILS(&b, -ENOENT, op_omap_rmrange(C1, B("nosuch"), B("a"),
					       B("z")));
	expect_missing(&b, C1, B("nosuch"));
	/* a missing object is -ENOENT, not a missing key, also right after
	 * a read of one that exists */
	expect_omap(&b, C1, B("o"), B("large"), bigv);
	expect_no_kv(&b, 1, C1, B("nosuch"), B("k"), -ENOENT);
	expect_omap(&b, C1, B("o"), B("large"), bigv);
	expect_no_kv(&b, 1, CNONE, B("o"), B("large"), -ENOENT);

	/* iteration order: inserted in a scrambled order */
	for (size_t i = 0; i < NS; i++) {
		size_t j = (i * 5 + 3) % NS;

		ops[i] = op_omap_set(C1, B("ord"), sorted[j], sorted[j]);
	}
	ck_assert_int_eq(be_txn_ex(&b, ops, NS, NULL, __FILE__, __LINE__), 0);
	expect_omap_keys(&b, C1, B("ord"), NOBYTES, sorted, NS);
	for (size_t i = 0; i < NS; i++)
		expect_omap(&b, C1, B("ord"), sorted[i], sorted[i]);
	/* from a start key: inclusive; between keys: the next one */
	expect_omap_keys(&b, C1, B("ord"), B("ab"), sorted + 5, NS - 5);
	expect_omap_keys(&b, C1, B("ord"), B("a\x01"), sorted + 5, NS - 5);
	expect_omap_keys(&b, C1, B("ord"), B("\0"), sorted, NS);
	expect_omap_keys(&b, C1, B("ord"), B("\xff\0"), sorted + NS - 2, 2);
	expect_omap_keys(&b, C1, B("ord"), B("\xff\xff\0"), NULL, 0);
	/* a callback's non-zero return stops it and is returned */
	rc = b.ops->omap_iter(b.h, &C1, "ord", 3, NULL, 0, stop_kv_cb, &st);
	ck_assert_msg(rc == 7 && st.calls == 3, "%s: omap_iter whose callback "
		      "returns 7 on the 3rd call: returned %d after %d calls",
		      b.name, rc, st.calls);

	/* OMAP_RMRANGE: [key, end) */
	TXN_OK(&b, op_touch(C1, B("r")), op_omap_set(C1, B("r"), B("k0"),
						     B("0")));
	for (int i = 1; i < 10; i++) {
		char k[3] = { 'k', (char)('0' + i), 0 };

		TXN_OK(&b, op_omap_set(C1, B("r"), ((struct bytes){ k, 2 }),
				       ((struct bytes){ k + 1, 1 })));
	}
	TXN_OK(&b, op_omap_rmrange(C1, B("r"), B("k2"), B("k5")));
	expect_keys(&b, C1, B("r"), NOBYTES, B("k0"), B("k1"), B("k5"),
		    B("k6"), B("k7"), B("k8"), B("k9"));
	/* an empty end: to the last key */
	TXN_OK(&b, op_omap_rmrange(C1, B("r"), B("k7"), NOBYTES));
	expect_keys(&b, C1, B("r"), NOBYTES, B("k0"), B("k1"), B("k5"),
		    B("k6"));
	/* end <= key: nothing */
	TXN_OK(&b, op_omap_rmrange(C1, B("r"), B("k5"), B("k5")),
	       op_omap_rmrange(C1, B("r"), B("k6"), B("k1")));
	expect_keys(&b, C1, B("r"), NOBYTES, B("k0"), B("k1"), B("k5"),
		    B("k6"));
	/* bounds that are not keys */
	TXN_OK(&b, op_omap_rmrange(C1, B("r"), B("k05"), B("k6")));
	expect_keys(&b, C1, B("r"), NOBYTES, B("k0"), B("k6"));
	/* binary bounds over the ordered set */
	TXN_OK(&b, op_omap_rmrange(C1, B("ord"), B("\0\0"), B("ab")),
	       op_omap_rmrange(C1, B("ord"), B("\x80"), B("\xff\xff")));
	expect_keys(&b, C1, B("ord"), NOBYTES, B("\0"), B("ab"), B("a\xff"),
		    B("b"), B("\x7f"), B("\xff\xff"));
	TXN_OK(&b, op_omap_rmrange(C1, B("ord"), B("\x01"), NOBYTES));
	expect_keys(&b, C1, B("ord"), NOBYTES, B("\0"));

	/* OMAP_CLEAR: empty, data and attributes untouched */
	TXN_OK(&b, op_write(C1, B("r"), 0, 5, "hello"),
	       op_setattr(C1, B("r"), B("a"), B("1")));
	TXN_OK(&b, op_omap_clear(C1, B("r")));
	expect_no_omaps(&b, C1, B("r"));
	expect_data(&b, C1, B("r"), "hello", 5);
	expect_attrs(&b, C1, B("r"), B("a"), B("1"));
	/* and omap ops do not touch data or attributes either */
	TXN_OK(&b, op_omap_set(C1, B("r"), B("x"), B("y")),
	       op_omap_rmrange(C1, B("r"), B("a"), NOBYTES));
	expect_data(&b, C1, B("r"), "hello", 5);
	expect_attrs(&b, C1, B("r"), B("a"), B("1"));
	be_remount(&b);
	expect_keys(&b, C1, B("ord"), NOBYTES, B("\0"));
	expect_omap(&b, C1, B("o"), B("large"), bigv);
	free(big);
	be_close(&b);
}
END_TEST

START_TEST(ops_reads)
{
	uint8_t *p = pattern(10, 64 * KiB), *buf = xmalloc(2 * MiB);
	struct tsr_obj_stat st1, st2;
	struct be b;
	uint64_t got;
	int rc;

	be_new(&b, _i, "ops-reads");
	TXN_OK(&b, op_mkcoll(C1), op_write(C1, B("r"), 0, 1000, p),
	       op_touch(C1, B("empty")));
	/* at and past the end: 0 bytes; across it: short */
	expect_read_len(&b, C1, B("r"), 1000, 10, 0);
	expect_read_len(&b, C1, B("r"), 5000, 10, 0);
	expect_read_len(&b, C1, B("r"), ~0ull - 10, 10, 0);
	expect_read_len(&b, C1, B("r"), 900, 500, 100);
	expect_read_len(&b, C1, B("r"), 0, 0, 0);
	expect_read_len(&b, C1, B("empty"), 0, 100, 0);
	memset(buf, 0xee, 2 * MiB);
	got = 0;
	rc = b.ops->read(b.h, &C1, "r", 1, 0, 2 * MiB, buf, &got);
	ck_assert_msg(rc == 0 && got == 1000 && memcmp(buf, p, 1000) == 0,
		      "%s: read of 2 MiB from a 1000-byte object: %d, %" PRIu64
		      " bytes", b.name, rc, got);
	got = 0;
	rc = b.ops->read(b.h, &C1, "r", 1, 999, 2, buf, &got);
	ck_assert_msg(rc == 0 && got == 1 && buf[0] == p[999], "%s: read of "
		      "the last byte: %d, %" PRIu64 " bytes", b.name, rc, got);
	/* a hole at the end reads as zeros, up to the size */
	TXN_OK(&b, op_truncate(C1, B("r"), 10000));
	expect_read_len(&b, C1, B("r"), 5000, 10000, 5000);
	expect_range(&b, C1, B("r"), 1000, 9000, NULL);
	/* stat: size, and mtime moves with each transaction touching it */
	ck_assert_int_eq(b.ops->stat(b.h, &C1, "r", 1, &st1), 0);
	ck_assert_uint_eq(st1.size, 10000);
	ck_assert_msg(st1.mtime_ns > 0, "%s: stat: mtime 0", b.name);
	usleep(2000);
	TXN_OK(&b, op_setattr(C1, B("r"), B("a"), B("b")));
	ck_assert_int_eq(b.ops->stat(b.h, &C1, "r", 1, &st2), 0);
	ck_assert_msg(st2.mtime_ns >= st1.mtime_ns, "%s: stat: mtime went "
		      "back from %" PRIu64 " to %" PRIu64, b.name,
		      st1.mtime_ns, st2.mtime_ns);
	be_remount(&b);
	expect_read_len(&b, C1, B("r"), 900, 500, 500);
	expect_range(&b, C1, B("r"), 0, 1000, p);

	/* large reads into aligned and unaligned buffers, from block
	 * boundaries and not, across a small overwrite and an unaligned end
	 * (a backend may read large aligned runs with O_DIRECT) */
	{
		size_t n = MiB + 1000;
		uint8_t *big = pattern(11, n), *q = pattern(12, 100);
		static const uint64_t at[] = { 0, 4096, 5000, 64 * KiB, MiB };

		TXN_OK(&b, op_write(C1, B("big"), 0, n, big));
		for (int round = 0; round < 3; round++) {
			for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
				for (int mis = 0; mis < 2; mis++) {
					memset(buf, 0xee, 2 * MiB);
					got = 0;
					rc = b.ops->read(b.h, &C1, "big", 3, at[i],
							 2 * MiB - mis, buf + mis, &got);
					ck_assert_msg(rc == 0 && got == n - at[i] &&
						      memcmp(buf + mis, big + at[i], got) == 0,
						      "%s: round %d: read of a %zu-byte object "
						      "from %" PRIu64 " into a%s buffer: %d, %"
						      PRIu64 " bytes%s", b.name, round, n, at[i],
						      mis ? "n unaligned" : "n aligned", rc, got,
						      rc == 0 && got == n - at[i] ? ", wrong bytes" : "");
					expect_read_crc(&b, C1, B("big"), at[i], 2 * MiB - mis,
							buf + mis, got, (size_t)mis);
				}
			if (round == 0) {
				/* a small overwrite inside a block, read at once */
				TXN_OK(&b, op_write(C1, B("big"), 5000, 100, q));
				memcpy(big + 5000, q, 100);
			} else if (round == 1) {
				be_remount(&b);
			}
		}
		free(big);
		free(q);
	}
	/* a range read again and again (which a backend may then serve from
	 * a cache: through read_crc, the clients' read, where it has one)
	 * reads what the latest write made: a large overwrite, a small one,
	 * a truncate and a regrowth, each after the range was read three
	 * times */
	{
		size_t n = MiB;
		uint8_t *want = pattern(13, n), *w = pattern(14, 256 * KiB);
		void *al = NULL;
		const struct tsr_backend_ops *o = b.ops;
		int has_crc = o->size >= offsetof(struct tsr_backend_ops, read_crc) +
					 sizeof(o->read_crc) && o->read_crc;
		uint32_t crc = 0;

		ck_assert_int_eq(posix_memalign(&al, 4096, n), 0);
		TXN_OK(&b, op_write(C1, B("hot"), 0, n, want));
		for (int step = 0; step < 4; step++) {
			for (int k = 0; k < 3; k++) {
				got = 0;
				rc = has_crc ? o->read_crc(b.h, &C1, "hot", 3, 0, n, al, &got, &crc)
					     : o->read(b.h, &C1, "hot", 3, 0, n, al, &got);
				ck_assert_msg(!has_crc || rc != 0 || crc == tsr_crc32c(0, al, got),
					      "%s: reread %d after change %d: wrong CRC", b.name, k,
					      step);
				ck_assert_msg(rc == 0 && got == n && memcmp(al, want, n) == 0,
					      "%s: reread %d after change %d: %d, %" PRIu64
					      " bytes%s", b.name, k, step, rc, got,
					      rc == 0 && got == n ? ", stale or wrong bytes" : "");
			}
			if (step == 0) {
				TXN_OK(&b, op_write(C1, B("hot"), 256 * KiB, 256 * KiB, w));
				memcpy(want + 256 * KiB, w, 256 * KiB);
			} else if (step == 1) {
				TXN_OK(&b, op_write(C1, B("hot"), 4096 + 7, 100, w + 9));
				memcpy(want + 4096 + 7, w + 9, 100);
			} else if (step == 2) {
				uint8_t *nw = pattern(15, n);

				TXN_OK(&b, op_truncate(C1, B("hot"), 8192),
				       op_write(C1, B("hot"), 8192, n - 8192, nw + 8192));
				memcpy(want + 8192, nw + 8192, n - 8192);
				free(nw);
			}
		}
		free(al);
		free(want);
		free(w);
	}
	free(p);
	free(buf);
	be_close(&b);
}
END_TEST

/* Transactions tsr_txn_validate refuses: submit() refuses them up front
 * with its error, calls no callback, and applies nothing. */
START_TEST(ops_refused)
{
	enum { NCASES = 13 };
	static const char *const what[NCASES] = {
		"op type 99", "an unknown flag", "a nonzero reserved word",
		"an empty object name", "a 4097-byte object name",
		"SETATTR with an empty key", "a key length without a key",
		"a WRITE whose range wraps", "CLONE without a destination",
		"a value of 1 MiB + 1", "MKCOLL naming an object",
		"a 4097-byte destination name", "a 4097-byte key",
	};
	uint8_t *big = xmalloc(TSR_TXN_MAX_VALUE + 1);
	const struct bytes toolong = { big, TSR_TXN_MAX_NAME + 1 };
	const struct bytes hugeval = { big, TSR_TXN_MAX_VALUE + 1 };
	struct tsr_txn_op ops[2];
	char err[512];
	struct be b;

	memset(big, 'n', TSR_TXN_MAX_VALUE + 1);
	be_new(&b, _i, "ops-refused");
	TXN_OK(&b, op_mkcoll(C1));
	for (int c = 0; c < NCASES; c++) {
		struct tsr_txn txn = { 2, ops };
		struct tsr_txn_op *op = &ops[1];
		int want, rc, refused;

		ops[0] = op_touch(C1, B("before"));
		*op = op_write(C1, B("x"), 0, 3, "abc");
		switch (c) {
		case 0:
			op->type = 99;
			break;
		case 1:
			op->flags = 0x80000000u; /* no such flag */
			break;
		case 2:
			op->reserved[1] = 1;
			break;
		case 3:
			op->oid_len = 0;
			break;
		case 4:
			*op = op_write(C1, toolong, 0, 3, "abc");
			break;
		case 5:
			*op = op_setattr(C1, B("x"), NOBYTES, B("v"));
			break;
		case 6:
			*op = op_omap_rm(C1, B("x"), B("k"));
			op->key = NULL;
			break;
		case 7:
			op->off = ~0ull - 1;
			break;
		case 8:
			*op = op_clone(C1, B("x"), NOBYTES);
			break;
		case 9:
			*op = op_omap_set(C1, B("x"), B("k"), hugeval);
			break;
		case 10:
			*op = op_mkcoll(C2);
			op->oid = "x";
			op->oid_len = 1;
			break;
		case 11:
			*op = op_clone(C1, B("x"), toolong);
			break;
		default:
			*op = op_omap_set(C1, B("x"), toolong, B("v"));
			break;
		}
		want = tsr_txn_validate(&txn, err, sizeof(err));
		ck_assert_msg(want < 0, "case %d (%s): tsr_txn_validate accepts "
			      "it: the test is wrong", c, what[c]);
		rc = be_txn_ex(&b, ops, 2, &refused, __FILE__, __LINE__);
		ck_assert_msg(refused && rc == want, "%s: a transaction with %s: "
			      "%s %d (%s), expected submit() to refuse it with "
			      "%d (%s)", b.name, what[c],
			      refused ? "refused with"
				      : "accepted, committed with",
			      rc, strerror(-rc), want, strerror(-want));
		expect_missing(&b, C1, B("before"));
		expect_missing(&b, C1, B("x"));
	}
	/* nops without ops */
	{
		int refused, rc = be_txn_ex(&b, NULL, 1, &refused, __FILE__,
					    __LINE__);

		ck_assert_msg(refused && rc == -EINVAL, "%s: a transaction of 1 "
			      "op with a NULL op array: %s %d", b.name,
			      refused ? "refused with" : "committed with", rc);
	}
	/* an empty transaction is a valid one */
	{
		int refused, rc = be_txn_ex(&b, NULL, 0, &refused, __FILE__,
					    __LINE__);

		ck_assert_msg(rc == 0, "%s: an empty transaction: %s %d", b.name,
			      refused ? "refused with" : "committed with", rc);
	}
	/* and the instance goes on working */
	TXN_OK(&b, op_touch(C1, B("after")));
	expect_size(&b, C1, B("after"), 0);
	free(big);
	be_close(&b);
}
END_TEST

/* Names with any bytes: NUL, '/', 0xff, dots, and the longest allowed. */
START_TEST(ops_names)
{
	static const struct bytes names[] = {
		B("\0"), B("\0\0"), B("a"), B("a\0b"), B("a/b"), B("/"),
		B("//"), B("."), B(".."), B("../x"), B("\xff"), B("\xff\xfe"),
		B("\n"), B("%s%n"), B("a b"), B("A"),
	};
	enum { NN = sizeof(names) / sizeof(names[0]) };
	uint8_t *longname = xmalloc(TSR_TXN_MAX_NAME);
	struct model m = { NULL, 0, 0 };
	struct tsr_txn_op ops[4];
	uint8_t *data[NN + 1];
	struct be b;

	/* every byte value, '/' and NUL many times */
	for (size_t i = 0; i < TSR_TXN_MAX_NAME; i++)
		longname[i] = (uint8_t)(i % 3 == 0 ? '/' : i % 5 == 0 ? 0
						   : (i * 31) % 256);
	be_new(&b, _i, "ops-names");
	ops[0] = op_mkcoll(C2);
	model_apply(&m, &ops[0]);
	ck_assert_int_eq(be_txn_ex(&b, ops, 1, NULL, __FILE__, __LINE__), 0);
	for (size_t i = 0; i <= NN; i++) {
		struct bytes n = i < NN ? names[i]
				: (struct bytes){ longname, TSR_TXN_MAX_NAME };
		size_t len = 100 + i;

		data[i] = pattern(100 + i, len);
		ops[0] = op_write(C2, n, 0, len, data[i]);
		ops[1] = op_setattr(C2, n, B("name"), n);
		ops[2] = op_omap_set(C2, n, n, B("v"));
		ops[3] = op_omap_set(C2, n, ((struct bytes){ longname,
							    TSR_TXN_MAX_NAME }),
				     n);
		for (int k = 0; k < 4; k++)
			ck_assert_int_eq(model_apply(&m, &ops[k]), 0);
		ck_assert_msg(be_txn_ex(&b, ops, 4, NULL, __FILE__,
					__LINE__) == 0,
			      "%s: writing object %s failed", b.name, NM(n));
	}
	for (size_t i = 0; i <= NN; i++) {
		struct bytes n = i < NN ? names[i]
				: (struct bytes){ longname, TSR_TXN_MAX_NAME };

		expect_data(&b, C2, n, data[i], 100 + i);
		expect_attr(&b, C2, n, B("name"), n);
	}
	/* the whole store, listing included, is what the model says */
	expect_model(&b, &m, "objects with awkward names");
	/* removing one touches none of its look-alikes */
	ops[0] = op_remove(C2, B("a/b"));
	ops[1] = op_remove(C2, B("\0"));
	ops[2] = op_remove(C2, ((struct bytes){ longname, TSR_TXN_MAX_NAME }));
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(model_apply(&m, &ops[k]), 0);
	ck_assert_int_eq(be_txn_ex(&b, ops, 3, NULL, __FILE__, __LINE__), 0);
	expect_model(&b, &m, "after removing a/b, \\x00 and the long name");
	be_reopen(&b);
	expect_model(&b, &m, "after remount");
	for (size_t i = 0; i <= NN; i++)
		free(data[i]);
	model_free(&m);
	free(longname);
	be_close(&b);
}
END_TEST

/* ---- 3. Atomicity -------------------------------------------------------*/

/* Submit ops to the store and apply them to m: both must agree on the
 * result; a failed transaction leaves m as it was. */
static int
txn_both(struct be *b, struct model *m, const struct tsr_txn_op *ops,
	 size_t n, int line)
{
	struct model tmp = { NULL, 0, 0 };
	int want = 0, rc;

	model_copy(&tmp, m);
	for (size_t i = 0; i < n && want == 0; i++)
		want = model_apply(&tmp, &ops[i]);
	rc = be_txn_ex(b, ops, n, NULL, __FILE__, line);
	ck_assert_msg(rc == want, "%s: transaction at line %d: %d (%s), "
		      "expected %d (%s)", b->name, line, rc, strerror(-rc),
		      want, strerror(-want));
	if (want == 0)
		model_copy(m, &tmp);
	model_free(&tmp);
	return rc;
}

#define TXN_BOTH(b, m, ...)                                                  \
	txn_both((b), (m), OPS(__VA_ARGS__), NOPS(__VA_ARGS__), __LINE__)

START_TEST(atomicity)
{
	uint8_t *p = pattern(11, 512 * KiB);
	struct model m = { NULL, 0, 0 };
	struct tsr_txn_op ops[16];
	struct be b;

	be_new(&b, _i, "atomicity");
	TXN_BOTH(&b, &m, op_mkcoll(C1),
		 op_write(C1, B("base"), 0, 100 * KiB, p),
		 op_setattr(C1, B("base"), B("a"), B("1")),
		 op_omap_set(C1, B("base"), B("k"), B("v")),
		 op_omap_set(C1, B("base"), B("k3"), B("v3")),
		 op_touch(C1, B("victim")));
	/* a transaction doing something of every kind, then failing in its
	 * last op (or, in the last cases, its first): nothing of it stays */
	for (int c = 0; c < 8; c++) {
		size_t n = 0;
		int rc;

		if (c == 7)
			ops[n++] = op_remove(C1, B("missing"));
		ops[n++] = op_write(C1, B("base"), 1000, 300 * KiB, p + 7);
		ops[n++] = op_write(C1, B("new1"), 0, 5000, p + 3);
		ops[n++] = op_zero(C1, B("base"), 0, 10);
		ops[n++] = op_truncate(C1, B("base"), 50);
		ops[n++] = op_setattr(C1, B("base"), B("a"), B("2"));
		ops[n++] = op_setattr(C1, B("new2"), B("x"), B("y"));
		ops[n++] = op_omap_set(C1, B("base"), B("k"), B("v2"));
		ops[n++] = op_omap_rmrange(C1, B("base"), B("k2"), NOBYTES);
		ops[n++] = op_rmattr(C1, B("base"), B("a"));
		ops[n++] = op_clone(C1, B("base"), B("new3"));
		ops[n++] = op_remove(C1, B("victim"));
		ops[n++] = op_mkcoll(C2);
		ops[n++] = op_touch(C2, B("c2obj"));
		switch (c) {
		case 0:
			ops[n++] = op_remove(C1, B("missing"));
			break;
		case 1: /* -ENOTEMPTY */
			ops[n++] = op_rmcoll(C1);
			break;
		case 2: /* -EEXIST */
			ops[n++] = op_mkcoll(C1);
			break;
		case 3: /* -EINVAL */
			ops[n++] = op_clone_range(C1, B("base"), 0, 10,
						  B("base"), 5);
			break;
		case 4:
			ops[n++] = op_clone(C1, B("missing"), B("x"));
			break;
		case 5: /* removed earlier in the transaction */
			ops[n++] = op_remove(C1, B("victim"));
			break;
		case 6: /* made earlier in the transaction */
			ops[n++] = op_mkcoll(C2);
			break;
		default:
			break;
		}
		rc = txn_both(&b, &m, ops, n, __LINE__);
		ck_assert_msg(rc < 0, "%s: case %d: the failing transaction "
			      "succeeded", b.name, c);
		expect_model(&b, &m, "after a failed transaction");
	}
	expect_data(&b, C1, B("base"), p, 100 * KiB);
	expect_attr(&b, C1, B("base"), B("a"), B("1"));
	expect_missing(&b, C1, B("new1"));

	/* each op sees the ones before it: write, then clone */
	TXN_BOTH(&b, &m, op_write(C1, B("s"), 0, 64 * KiB, p + 100),
		 op_setattr(C1, B("s"), B("a"), B("s")),
		 op_clone(C1, B("s"), B("d")));
	expect_data(&b, C1, B("d"), p + 100, 64 * KiB);
	expect_attr(&b, C1, B("d"), B("a"), B("s"));
	/* clone, then write the source: the clone keeps the old data */
	TXN_BOTH(&b, &m, op_clone(C1, B("s"), B("d2")),
		 op_write(C1, B("s"), 0, 100, p + 9999),
		 op_truncate(C1, B("s"), 32 * KiB),
		 op_rmattr(C1, B("s"), B("a")));
	expect_data(&b, C1, B("d2"), p + 100, 64 * KiB);
	expect_attr(&b, C1, B("d2"), B("a"), B("s"));
	expect_size(&b, C1, B("s"), 32 * KiB);
	expect_range(&b, C1, B("s"), 0, 100, p + 9999);
	/* write, then clone_range the new bytes; truncate, then copy zeros */
	TXN_BOTH(&b, &m, op_write(C1, B("s"), 5000, 100, p + 333),
		 op_clone_range(C1, B("s"), 5000, 100, B("d3"), 1),
		 op_truncate(C1, B("s"), 0),
		 op_clone_range(C1, B("s"), 0, 50, B("d3"), 101));
	expect_range(&b, C1, B("d3"), 1, 100, p + 333);
	expect_range(&b, C1, B("d3"), 101, 50, NULL);
	/* create and remove in one; remove and re-create; a collection
	 * made and used at once */
	TXN_BOTH(&b, &m, op_touch(C1, B("tmp")), op_remove(C1, B("tmp")),
		 op_remove(C1, B("d")), op_setattr(C1, B("d"), B("n"), B("1")),
		 op_mkcoll(C2), op_write(C2, B("x"), 0, 10, p),
		 op_omap_set(C2, B("x"), B("k"), B("v")),
		 op_omap_clear(C2, B("x")),
		 op_omap_set(C2, B("x"), B("k2"), B("v2")));
	expect_missing(&b, C1, B("tmp"));
	expect_size(&b, C1, B("d"), 0);
	expect_attrs(&b, C1, B("d"), B("n"), B("1"));
	expect_omaps(&b, C2, B("x"), B("k2"), B("v2"));
	/* emptied and removed in one */
	TXN_BOTH(&b, &m, op_remove(C2, B("x")), op_rmcoll(C2));
	expect_model(&b, &m, "after transactions building on themselves");
	be_reopen(&b);
	expect_model(&b, &m, "after remount");
	model_free(&m);
	free(p);
	be_close(&b);
}
END_TEST

/* ---- 4. Enumeration -----------------------------------------------------*/

static int
push_name_cb(void *arg, const void *oid, size_t oid_len)
{
	kv_push(arg, oid, oid_len, "", 0);
	return 0;
}

static int
push_coll_cb(void *arg, const struct tsr_coll_id *cid)
{
	kv_push(arg, cid, sizeof(*cid), "", 0);
	return 0;
}

static int
stop_name_cb(void *arg, const void *oid, size_t oid_len)
{
	(void)oid;
	(void)oid_len;
	return stop_kv_cb(arg, NULL, 0, NULL, 0);
}

static int
stop_coll_cb(void *arg, const struct tsr_coll_id *cid)
{
	(void)cid;
	return stop_kv_cb(arg, NULL, 0, NULL, 0);
}

/* One page of at most max names appended to out; the number listed. */
static size_t
list_page(struct be *b, struct tsr_coll_id cid, struct tsr_cursor *cur,
	  uint32_t max, struct kvset *out)
{
	size_t before = out->n;
	int rc = b->ops->list_objects(b->h, &cid, cur, max, push_name_cb, out);

	REQUIRE(rc == 0, "%s: list_objects (max %u): %d (%s)", b->name, max,
		rc, strerror(-rc));
	REQUIRE(out->n - before <= max, "%s: list_objects (max %u) listed %zu",
		b->name, max, out->n - before);
	REQUIRE(cur->len <= TSR_CURSOR_MAX, "%s: list_objects returned a "
		"cursor of %u bytes", b->name, cur->len);
	return out->n - before;
}

/* The names listed, in order, are exactly want[0..n). */
static void
expect_names(struct be *b, const struct kvset *got, const struct bytes *want,
	     size_t n, const char *how)
{
	for (size_t i = 0; i < n || i < got->n; i++) {
		struct bytes g = i < got->n ? (struct bytes){ got->e[i].k,
							      got->e[i].kl }
					    : B("(end)");

		REQUIRE(i < n && i < got->n && !bytes_cmp(g.p, g.n, want[i].p,
							  want[i].n),
			"%s: list_objects %s: name #%zu is %s, expected %s",
			b->name, how, i, NM(g), i < n ? NM(want[i]) : "(end)");
	}
}

/* A whole walk, max names a page, compared with want. */
static void
expect_walk(struct be *b, struct tsr_coll_id cid, uint32_t max,
	    const struct bytes *want, size_t n)
{
	struct tsr_cursor *cur = xmalloc(sizeof(*cur));
	struct kvset got;
	char how[64];
	size_t pages;

	memset(&got, 0, sizeof(got));
	cur->len = 0;
	for (pages = 0; pages < 2 * n + 4; pages++) {
		list_page(b, cid, cur, max, &got);
		if (cur->len == 0)
			break;
	}
	snprintf(how, sizeof(how), "with max %u", max);
	REQUIRE(cur->len == 0, "%s: list_objects %s: no end after %zu pages",
		b->name, how, pages);
	expect_names(b, &got, want, n, how);
	kv_free(&got);
	free(cur);
}

START_TEST(enumeration)
{
	static const struct bytes order[] = {
		B("a"), B("a\0"), B("ab"), B("b"), B("\xff"),
	};
	const struct tsr_coll_id colls[] = { C1, C2, C3 };
	struct tsr_cursor *cur = xmalloc(sizeof(*cur));
	struct bytes many[64];
	char names[64][8];
	struct kvset got;
	struct stopper st;
	struct be b;
	int rc;

	memset(&got, 0, sizeof(got));
	be_new(&b, _i, "enumeration");
	/* list_colls: every collection once */
	rc = b.ops->list_colls(b.h, push_coll_cb, &got);
	ck_assert_msg(rc == 0 && got.n == 0, "%s: list_colls of an empty "
		      "store: %d, %zu collections", b.name, rc, got.n);
	TXN_OK(&b, op_mkcoll(C2), op_mkcoll(C1), op_mkcoll(C3));
	for (int round = 0; round < 2; round++) {
		kv_free(&got);
		rc = b.ops->list_colls(b.h, push_coll_cb, &got);
		ck_assert_int_eq(rc, 0);
		ck_assert_msg(got.n == (round ? 2u : 3u), "%s: list_colls: %zu "
			      "collections, expected %d", b.name, got.n,
			      round ? 2 : 3);
		for (size_t i = 0; i < 3; i++) {
			int found = 0;

			if (round && i == 1)
				continue;
			for (size_t j = 0; j < got.n; j++)
				found += !memcmp(got.e[j].k, &colls[i],
						 sizeof(colls[i]));
			ck_assert_msg(found == 1, "%s: list_colls lists "
				      "collection %" PRIu64 ".%u.%d %d times",
				      b.name, colls[i].pool, colls[i].pg,
				      (int)colls[i].shard, found);
		}
		if (round == 0)
			TXN_OK(&b, op_rmcoll(C2));
	}
	TXN_OK(&b, op_mkcoll(C2));
	st = (struct stopper){ 0, 2 };
	rc = b.ops->list_colls(b.h, stop_coll_cb, &st);
	ck_assert_msg(rc == 7 && st.calls == 2, "%s: list_colls whose callback "
		      "returns 7 on the 2nd call: returned %d after %d calls",
		      b.name, rc, st.calls);
	kv_free(&got);

	/* list_objects: unsigned byte order, a prefix first; the same in
	 * pages of any size; an empty cursor at the end */
	TXN_OK(&b, op_touch(C1, order[3]), op_touch(C1, order[4]),
	       op_touch(C1, order[1]), op_touch(C1, order[0]),
	       op_touch(C1, order[2]), op_touch(C2, B("other")));
	cur->len = 0;
	list_page(&b, C1, cur, 100, &got);
	ck_assert_msg(cur->len == 0, "%s: list_objects of the whole collection "
		      "in one page left a cursor of %u bytes", b.name,
		      cur->len);
	expect_names(&b, &got, order, 5, "in one page");
	kv_free(&got);
	expect_walk(&b, C1, 1, order, 5);
	expect_walk(&b, C1, 3, order, 5);
	expect_walk(&b, C1, 5, order, 5);
	st = (struct stopper){ 0, 2 };
	cur->len = 0;
	rc = b.ops->list_objects(b.h, &C1, cur, 100, stop_name_cb, &st);
	ck_assert_msg(rc == 7 && st.calls == 2, "%s: list_objects whose "
		      "callback returns 7 on the 2nd call: returned %d after %d "
		      "calls", b.name, rc, st.calls);
	/* an empty collection: nothing, an empty cursor */
	cur->len = 0;
	list_page(&b, C3, cur, 10, &got);
	ck_assert_msg(got.n == 0 && cur->len == 0, "%s: list_objects of an "
		      "empty collection: %zu names, cursor of %u bytes", b.name,
		      got.n, cur->len);
	/* more names than a page, with awkward ones among them */
	for (int i = 0; i < 60; i++) {
		snprintf(names[i], sizeof(names[i]), "m%02d", i);
		many[i] = (struct bytes){ names[i], 3 };
		TXN_OK(&b, op_touch(C3, many[i]));
	}
	memcpy(names[60], "m\0", 2);
	memcpy(names[61], "m00\xff", 4);
	memcpy(names[62], "m0", 2);
	memcpy(names[63], "m\xff", 2);
	many[60] = (struct bytes){ names[60], 2 };
	many[61] = (struct bytes){ names[61], 4 };
	many[62] = (struct bytes){ names[62], 2 };
	many[63] = (struct bytes){ names[63], 2 };
	TXN_OK(&b, op_touch(C3, many[60]), op_touch(C3, many[61]),
	       op_touch(C3, many[62]), op_touch(C3, many[63]));
	{
		/* sorted by hand: m\0 m0 m00 m00\xff m01 ... m59 m\xff */
		struct bytes want[64];
		size_t n = 0;

		want[n++] = many[60];
		want[n++] = many[62];
		want[n++] = many[0];
		want[n++] = many[61];
		for (int i = 1; i < 60; i++)
			want[n++] = many[i];
		want[n++] = many[63];
		expect_walk(&b, C3, 1, want, n);
		expect_walk(&b, C3, 3, want, n);
		expect_walk(&b, C3, 64, want, n);
		expect_walk(&b, C3, 1000, want, n);
	}
	kv_free(&got);
	free(cur);
	be_close(&b);
}
END_TEST

/* "sNN" -> NN, else -1. */
static int
s_index(const struct kv *e)
{
	if (e->kl != 3 || e->k[0] != 's' || e->k[1] < '0' || e->k[1] > '9' ||
	    e->k[2] < '0' || e->k[2] > '9')
		return -1;
	return (e->k[1] - '0') * 10 + (e->k[2] - '0');
}

/* A walk resumed after creates and removes before and after its cursor,
 * and of the very object the cursor stands on: every object that existed
 * throughout is seen exactly once, and the walk stays in order. */
START_TEST(enumeration_changes)
{
	enum { NS = 80 };
	struct tsr_cursor *cur = xmalloc(sizeof(*cur));
	struct kvset seen;
	struct be b;
	char name[NS][4];
	int removed[NS];

	memset(&seen, 0, sizeof(seen));
	be_new(&b, _i, "enumeration-changes");
	TXN_OK(&b, op_mkcoll(C1));
	/* s00..s79: the even ones stay throughout, odd ones may go */
	for (int i = 0; i < NS; i++)
		snprintf(name[i], sizeof(name[i]), "s%02d", i);
	for (uint32_t max = 1; max <= 3; max += 2) {
		size_t pages;

		for (int i = 0; i < NS; i++) {
			TXN_OK(&b, op_touch(C1, ((struct bytes){ name[i], 3 })));
			removed[i] = 0;
		}
		kv_free(&seen);
		cur->len = 0;
		for (pages = 0; pages < 400; pages++) {
			struct tsr_txn_op ops[6];
			char a[8], z[8], after[4];
			size_t n = 0, got = list_page(&b, C1, cur, max, &seen);
			const struct kv *l = got ? &seen.e[seen.n - 1] : NULL;
			int li = l ? s_index(l) : -1;

			if (cur->len == 0)
				break;
			/* new names before the start and after the end (in
			 * falling order: a walk of max 1 would chase rising
			 * ones forever) */
			snprintf(a, sizeof(a), "a%03zu", pages);
			snprintf(z, sizeof(z), "z%03zu", 999 - pages);
			ops[n++] = op_touch(C1, ((struct bytes){ a, 4 }));
			ops[n++] = op_touch(C1, ((struct bytes){ z, 4 }));
			if (li >= 0) {
				/* a name right after the cursor's (not after
				 * those: a walk of max 1 would chase them) */
				memcpy(after, l->k, l->kl);
				after[l->kl] = '\0';
				ops[n++] = op_touch(C1, ((struct bytes){
					after, l->kl + 1 }));
			}
			if (li >= 0 && li % 2 == 1) {
				/* the object the cursor stands on */
				ops[n++] = op_remove(C1, ((struct bytes){
					name[li], 3 }));
				removed[li] = 1;
			}
			for (int i = (li < 0 ? 0 : li) + 3; i < NS; i++) {
				/* one not yet listed */
				if (i % 2 == 1 && !removed[i]) {
					ops[n++] = op_remove(C1, ((struct bytes){
						name[i], 3 }));
					removed[i] = 1;
					break;
				}
			}
			ck_assert_int_eq(be_txn_ex(&b, ops, n, NULL, __FILE__,
						   __LINE__), 0);
		}
		ck_assert_msg(cur->len == 0, "%s: a changing walk (max %u) did "
			      "not end in %zu pages", b.name, max, pages);
		/* in order (so nothing twice) ... */
		for (size_t i = 1; i < seen.n; i++)
			REQUIRE(bytes_cmp(seen.e[i - 1].k, seen.e[i - 1].kl,
					  seen.e[i].k, seen.e[i].kl) < 0,
				"%s: a changing walk (max %u) listed %s after "
				"%s", b.name, max,
				NM(((struct bytes){ seen.e[i].k, seen.e[i].kl })),
				NM(((struct bytes){ seen.e[i - 1].k,
						    seen.e[i - 1].kl })));
		/* ... and every object there throughout once */
		for (int i = 0; i < NS; i += 2) {
			int found = 0;

			for (size_t j = 0; j < seen.n; j++)
				found += s_index(&seen.e[j]) == i;
			ck_assert_msg(found == 1, "%s: a changing walk (max %u) "
				      "saw %s, which existed throughout, %d "
				      "times", b.name, max, name[i], found);
		}
	}
	kv_free(&seen);
	free(cur);
	be_close(&b);
}
END_TEST

/* ---- 5. Persistence -----------------------------------------------------*/

/* Pipelined submissions: callbacks record the order they come in. */
struct pipeline {
	pthread_mutex_t mu;
	int order[64];
	int n;
};

struct pipe_slot {
	struct pipeline *pl;
	int idx;
	int rc;
};

static void
pipe_cb(void *arg, int rc)
{
	struct pipe_slot *s = arg;

	pthread_mutex_lock(&s->pl->mu);
	if (s->pl->n < 64)
		s->pl->order[s->pl->n] = s->idx;
	s->pl->n++;
	s->rc = rc;
	pthread_mutex_unlock(&s->pl->mu);
}

START_TEST(persistence)
{
	static struct pipeline pl = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };
	static struct pipe_slot slots[40];
	uint8_t *p = pattern(12, 2 * MiB);
	struct model m = { NULL, 0, 0 };
	struct tsr_txn_op op;
	struct be b;
	int n;

	be_new(&b, _i, "persistence");
	TXN_BOTH(&b, &m, op_mkcoll(C1), op_mkcoll(C2), op_mkcoll(C3),
		 op_write(C1, B("big"), 0, 1536 * KiB, p),
		 op_setattr(C1, B("big"), B("a"), B("1")),
		 op_omap_set(C1, B("big"), B("k"), B("v")),
		 op_write(C1, B("sparse"), 3 * MiB, 5000, p + 77),
		 op_touch(C1, B("empty")),
		 op_omap_set(C2, B("meta"), B("k1"), B("v1")),
		 op_omap_set(C2, B("meta"), B("k2"), B("v2")),
		 op_touch(C3, B("gone")));
	TXN_BOTH(&b, &m, op_clone(C1, B("big"), B("clone")),
		 op_write(C1, B("big"), 4096, 4096, p + 1 * MiB),
		 op_remove(C3, B("gone")), op_rmcoll(C3),
		 op_truncate(C1, B("clone"), 1 * MiB + 1),
		 op_zero(C1, B("clone"), 100, 100000));
	expect_model(&b, &m, "before umount");
	be_remount(&b);
	expect_model(&b, &m, "after umount and mount");
	be_reopen(&b);
	expect_model(&b, &m, "after destroy and create");
	/* a reopened store goes on: new objects do not collide with old */
	TXN_BOTH(&b, &m, op_write(C2, B("new"), 0, 70000, p + 5),
		 op_clone(C1, B("sparse"), B("new2")),
		 op_remove(C1, B("empty")),
		 op_setattr(C1, B("big"), B("b"), B("2")));
	expect_model(&b, &m, "after writing to a reopened store");

	/* pipelined: 40 transactions without waiting; callbacks in
	 * submission order, each exactly once, all done when flush returns,
	 * and the result that of applying them in order */
	pl.n = 0;
	for (int i = 0; i < 40; i++) {
		struct tsr_txn_op ops[2];
		struct tsr_txn txn = { 2, ops };
		int rc;

		ops[0] = op_write(C2, B("seq"), (uint64_t)i * 1000, 3000,
				  p + i * 10000);
		ops[1] = op_omap_set(C2, B("seq"), B("last"),
				     ((struct bytes){ p + i, 4 }));
		for (int k = 0; k < 2; k++)
			ck_assert_int_eq(model_apply(&m, &ops[k]), 0);
		slots[i] = (struct pipe_slot){ &pl, i, 1 };
		rc = b.ops->submit(b.h, &txn, pipe_cb, &slots[i]);
		ck_assert_msg(rc == 0, "%s: pipelined submit %d: %d", b.name, i,
			      rc);
	}
	ck_assert_int_eq(b.ops->flush(b.h), 0);
	pthread_mutex_lock(&pl.mu);
	n = pl.n;
	pthread_mutex_unlock(&pl.mu);
	ck_assert_msg(n == 40, "%s: %d of 40 callbacks called when flush "
		      "returned", b.name, n);
	for (int i = 0; i < 40; i++) {
		ck_assert_msg(pl.order[i] == i, "%s: callback #%d was for "
			      "transaction %d: not in submission order", b.name,
			      i, pl.order[i]);
		ck_assert_msg(slots[i].rc == 0, "%s: pipelined transaction %d: "
			      "%d", b.name, i, slots[i].rc);
	}
	expect_model(&b, &m, "after pipelined transactions");
	/* umount right after submitting: umount flushes first */
	op = op_write(C2, B("late"), 0, 100, p + 3);
	ck_assert_int_eq(model_apply(&m, &op), 0);
	slots[0] = (struct pipe_slot){ &pl, 0, 1 };
	ck_assert_int_eq(b.ops->submit(b.h, &(struct tsr_txn){ 1, &op },
				       pipe_cb, &slots[0]), 0);
	be_umount(&b);
	ck_assert_msg(pl.n == 41 && slots[0].rc == 0, "%s: a transaction "
		      "submitted just before umount: %s", b.name,
		      pl.n == 41 ? "failed" : "never called back");
	be_destroy(&b);
	be_create(&b);
	be_mount(&b);
	expect_model(&b, &m, "after umount right after a submit");
	model_free(&m);
	free(p);
	be_close(&b);
}
END_TEST

/* ---- 6. Checksums -------------------------------------------------------
 *
 * Corrupt stored data behind the backend's back: every place in the
 * store's files where the first 4 KiB of an object's data lie raw gets one
 * bit flipped (every place: a copy left in a journal must not be the one
 * the backend reads from).  A backend that never stores data raw
 * (compressed, encrypted) cannot be checked this way: it sets
 * BACKEND_NO_RAW_SCAN_<name>.
 */
#define SCAN_LEN 4096
#define SCAN_FLIP_AT 100

static struct {
	const uint8_t *needle;
	int found;
	int failed;
	char where[PATH_MAX + 64];
} scan;

static int
scan_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	enum { CHUNK = 1 << 20 };
	uint8_t *buf;
	off_t base = 0;
	size_t have = 0;
	int fd;

	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		scan.failed = errno;
		snprintf(scan.where, sizeof(scan.where), "%s", path);
		return 1;
	}
	buf = xmalloc(CHUNK + SCAN_LEN);
	/* buf holds the file from base; keep SCAN_LEN - 1 bytes of overlap
	 * between reads so a match across them is found */
	for (int reads = 0; reads < (1 << 24); reads++) {
		ssize_t n = pread(fd, buf + have, CHUNK, base + (off_t)have);
		size_t pos = 0;

		if (n <= 0)
			break;
		have += (size_t)n;
		while (pos + SCAN_LEN <= have) {
			uint8_t *hit = memmem(buf + pos, have - pos, scan.needle,
					      SCAN_LEN);
			uint8_t byte;

			if (hit == NULL)
				break;
			byte = hit[SCAN_FLIP_AT] ^ 0x10;
			if (pwrite(fd, &byte, 1, base + (hit - buf) +
				   SCAN_FLIP_AT) != 1) {
				scan.failed = errno;
				snprintf(scan.where, sizeof(scan.where), "%s",
					 path);
			}
			hit[SCAN_FLIP_AT] = byte;
			if (scan.found++ == 0)
				snprintf(scan.where, sizeof(scan.where),
					 "%s at %lld", path,
					 (long long)(base + (hit - buf)));
			pos = (size_t)(hit - buf) + 1;
		}
		if (have >= SCAN_LEN) {
			size_t keep = SCAN_LEN - 1;

			memmove(buf, buf + have - keep, keep);
			base += (off_t)(have - keep);
			have = keep;
		}
	}
	fsync(fd);
	close(fd);
	free(buf);
	return 0;
}

START_TEST(checksum)
{
	/* victim: 1 MiB, so that its whole read takes a backend's direct
	 * path where it has one (backend-file's and -blockdev's from 512K) */
	uint8_t *p = pattern(13, MiB), *q = pattern(14, 64 * KiB);
	uint8_t *buf = xmalloc(MiB);
	char var[128];
	struct stat st;
	struct be b;
	uint64_t got;
	int rc;

	be_new(&b, _i, "checksum");
	TXN_OK(&b, op_mkcoll(C1), op_write(C1, B("victim"), 0, MiB, p),
	       op_write(C1, B("bystander"), 0, 64 * KiB, q));
	be_close(&b);

	memset(&scan, 0, sizeof(scan));
	scan.needle = p;
	ck_assert_msg(stat(b.path, &st) == 0, "%s: %s: %s", b.name, b.path,
		      strerror(errno));
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		scan_file(b.path, &st, FTW_F, NULL);
	else
		nftw(b.path, scan_file, 16, FTW_PHYS);
	ck_assert_msg(scan.failed == 0, "%s: scanning the store: %s: %s",
		      b.name, scan.where, strerror(scan.failed));
	snprintf(var, sizeof(var), "BACKEND_NO_RAW_SCAN_%s", b.name);
	if (scan.found == 0 && plugins[_i].no_raw_scan) {
		fprintf(stderr, "[%s] checksum: not checked (%s or "
			"--no-raw-scan)\n", b.name, var);
		goto out;
	}
	ck_assert_msg(scan.found > 0, "%s: the first 4 KiB of object victim's "
		      "data appear nowhere in the files under %s, so no bit "
		      "could be flipped.  A backend that stores data only "
		      "transformed (compressed, encrypted) sets %s=1 (or runs "
		      "tessera-conformance with --no-raw-scan)", b.name,
		      b.path, var);
	fprintf(stderr, "[%s] checksum: flipped a bit in %d copies, first %s\n",
		b.name, scan.found, scan.where);

	be_create(&b);
	be_mount(&b);
	got = 0;
	rc = b.ops->read(b.h, &C1, "victim", 6, 0, SCAN_LEN, buf, &got);
	ck_assert_msg(rc == -EIO, "%s: read of object victim at offset 0 "
		      "after a bit flip at offset %d: %d (%s), %" PRIu64
		      " bytes%s; expected -EIO", b.name, SCAN_FLIP_AT, rc,
		      strerror(-rc), got,
		      rc == 0 && got > SCAN_FLIP_AT &&
		      buf[SCAN_FLIP_AT] != p[SCAN_FLIP_AT]
			      ? ", the corrupt byte returned" : "");
	rc = b.ops->read(b.h, &C1, "victim", 6, 0, MiB, buf, &got);
	ck_assert_msg(rc == -EIO, "%s: read of all of object victim after a "
		      "bit flip at offset %d: %d, expected -EIO", b.name,
		      SCAN_FLIP_AT, rc);
	rc = b.ops->read(b.h, &C1, "victim", 6, 50, 100, buf, &got);
	ck_assert_msg(rc == -EIO, "%s: read of object victim [50, +100) after "
		      "a bit flip at offset %d: %d, expected -EIO", b.name,
		      SCAN_FLIP_AT, rc);
	/* the untouched object reads fine */
	expect_data(&b, C1, B("bystander"), q, 64 * KiB);
	be_close(&b);
out:
	free(p);
	free(q);
	free(buf);
}
END_TEST

/* ---- 7. Crash consistency -----------------------------------------------
 *
 * Rounds of: fork a child that mounts the store and submits random
 * transactions (up to CR_INFLIGHT at once), telling the parent through a
 * pipe "submitted i" before each submit and "acked i" from each on_commit;
 * SIGKILL it at a random moment; then the store must be the model after
 * exactly j transactions for some A <= j <= S (A acked, S submitted, both
 * counted from the first transaction).  Nothing acknowledged is lost
 * (j >= A) and nothing is applied in part (some j matches at all).  The
 * next round's child goes on from transaction j.
 *
 * Transaction i is generated from (seed, i) and the model's state before
 * it, so parent and child, starting from the same model, generate the same
 * transactions.  The generator applies each op to the model as it makes
 * it and only makes ops valid there, so every transaction must succeed.
 */
#define CR_SEED 0x5eed0c4a54ull
#define CR_NOBJ 4
#define CR_MAXSZ (1 * MiB)       /* objects stay within this */
#define CR_MAXW (256 * KiB)      /* largest write and clone_range */
#define CR_MAXOPS 4
#define CR_INFLIGHT 4
#define CR_MAX_DELAY_US 40000

static const struct tsr_coll_id cr_coll[2] = {
	{ 3, 1, TSR_SHARD_NONE }, { 3, 2, 1 },
};
static const struct bytes cr_obj[CR_NOBJ] = {
	B("alpha"), B("beta\0"), B("gamma/1"), B("\xff" "delta"),
};
static const struct bytes cr_attr[4] = {
	B("_"), B("snapset"), B("a\0b"), B("\xff"),
};
static const struct bytes cr_key[8] = {
	B("\0"), B("k1"), B("k2"), B("k2\0"), B("k3"), B("m"), B("z"),
	B("\xff\xff"),
};

/* A generated transaction; its buffers are its own. */
struct gtxn {
	uint32_t n;
	struct tsr_txn_op ops[CR_MAXOPS];
	uint8_t *buf[CR_MAXOPS];
};

static uint64_t
rnd(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint8_t *
rand_bytes(uint64_t *s, size_t n)
{
	uint8_t *p = xmalloc(n);

	for (size_t i = 0; i < n; i += 8) {
		uint64_t r = rng_next(s);

		memcpy(p + i, &r, n - i < 8 ? n - i : 8);
	}
	return p;
}

static void
gtxn_free(struct gtxn *g)
{
	for (uint32_t i = 0; i < g->n; i++)
		free(g->buf[i]);
	g->n = 0;
}

/* Apply the last op of g to m. */
static int
gen_apply(struct model *m, const struct gtxn *g, uint64_t idx, char *why,
	  size_t whylen)
{
	const struct tsr_txn_op *op = &g->ops[g->n - 1];
	int rc = model_apply(m, op);

	if (rc != 0)
		snprintf(why, whylen, "transaction %" PRIu64 " op %u (%s of "
			 "%s): %d in the model", idx, g->n - 1,
			 tsr_txn_op_name(op->type),
			 NM(((struct bytes){ op->oid, op->oid_len })), rc);
	return rc;
}

/* Generate transaction idx from (seed, idx) and m, applying it to m.  0,
 * or the error an op got from the model (a bug in the generator) with the
 * reason in why. */
static int
gen_txn(struct model *m, uint64_t seed, uint64_t idx, struct gtxn *g,
	char *why, size_t whylen)
{
	uint64_t s = (seed ^ ((idx + 1) * 0x9e3779b97f4a7c15ull)) | 1;
	uint32_t nops;

	memset(g, 0, sizeof(*g));
	rng_next(&s);
	if (idx == 0) {
		g->ops[g->n++] = op_mkcoll(cr_coll[0]);
		if (gen_apply(m, g, idx, why, whylen) < 0)
			return -EINVAL;
		g->ops[g->n++] = op_mkcoll(cr_coll[1]);
		if (gen_apply(m, g, idx, why, whylen) < 0)
			return -EINVAL;
	}
	/* (one slot left for the op that names the other collection, below) */
	nops = idx == 0 ? 0 : 1 + (uint32_t)rnd(&s, CR_MAXOPS - 1);
	int named[2] = { 0, 0 };
	for (uint32_t k = 0; k < nops; k++) {
		struct tsr_txn_op *op = &g->ops[g->n];
		int ci = (int)rnd(&s, 2);
		struct tsr_coll_id cid = cr_coll[ci];
		struct mcoll *c = model_coll(m, &cid, NULL);

		named[ci] = 1;
		size_t oi = (size_t)rnd(&s, CR_NOBJ);
		struct bytes oid = cr_obj[oi];
		struct mobj *o = c ? mobj_get(c, oid.p, oid.n, 0) : NULL;
		uint64_t size = o ? o->size : 0, r = rnd(&s, 100);
		uint64_t len, off, lim;
		uint8_t *buf = NULL;

		/* 0..65 make the object when missing; 66..99 need it */
		if (o == NULL && r >= 66)
			r %= 66;
		if (r < 30) {                           /* 30% WRITE */
			uint64_t q = rnd(&s, 10);

			len = q < 6 ? 1 + rnd(&s, 8 * KiB)
			    : q < 9 ? 8 * KiB + rnd(&s, 56 * KiB)
				    : 64 * KiB + rnd(&s, CR_MAXW - 64 * KiB + 1);
			lim = CR_MAXSZ - len;
			off = rnd(&s, 2) ? rnd(&s, min_u64(size + 4096, lim) + 1)
					 : rnd(&s, lim + 1);
			buf = rand_bytes(&s, (size_t)len);
			*op = op_write(cid, oid, off, len, buf);
		} else if (r < 35) {                    /* 5% ZERO */
			len = 1 + rnd(&s, 128 * KiB);
			lim = CR_MAXSZ - len;
			off = rnd(&s, min_u64(size + 64 * KiB, lim) + 1);
			*op = op_zero(cid, oid, off, len);
		} else if (r < 41) {                    /* 6% TRUNCATE */
			off = rnd(&s, 2) ? rnd(&s, size + 1)
					 : rnd(&s, CR_MAXSZ + 1);
			*op = op_truncate(cid, oid, off);
		} else if (r < 43) {                    /* 2% TOUCH */
			*op = op_touch(cid, oid);
		} else if (r < 52) {                    /* 9% SETATTR */
			len = rnd(&s, 201);
			buf = rand_bytes(&s, (size_t)len);
			*op = op_setattr(cid, oid, cr_attr[rnd(&s, 4)],
					 ((struct bytes){ buf, (size_t)len }));
		} else if (r < 66) {                    /* 14% OMAP_SET */
			len = rnd(&s, 10) ? rnd(&s, 101) : 2000 + rnd(&s, 2000);
			buf = rand_bytes(&s, (size_t)len);
			*op = op_omap_set(cid, oid, cr_key[rnd(&s, 8)],
					  ((struct bytes){ buf, (size_t)len }));
		} else if (r < 70) {                    /* 4% REMOVE */
			*op = op_remove(cid, oid);
		} else if (r < 74) {                    /* 4% CLONE */
			size_t di = (oi + 1 + (size_t)rnd(&s, CR_NOBJ - 1)) %
				    CR_NOBJ;

			*op = op_clone(cid, oid, cr_obj[di]);
		} else if (r < 83) {                    /* 9% CLONE_RANGE */
			size_t di = (size_t)rnd(&s, CR_NOBJ);
			uint64_t off2;

			len = 1 + rnd(&s, rnd(&s, 4) ? 16 * KiB : CR_MAXW);
			off = rnd(&s, size + 64 * KiB + 1);
			off2 = rnd(&s, CR_MAXSZ - len + 1);
			if (di == oi) {
				/* within one object: ranges apart */
				uint64_t end = off + 2 * len;

				if (end <= CR_MAXSZ)
					off2 = off + len +
					       rnd(&s, CR_MAXSZ - end + 1);
				else if (off >= len)
					off2 = rnd(&s, off - len + 1);
				else
					di = (oi + 1) % CR_NOBJ;
			}
			*op = op_clone_range(cid, oid, off, len, cr_obj[di],
					     off2);
		} else if (r < 87) {                    /* 4% RMATTR */
			*op = op_rmattr(cid, oid, cr_attr[rnd(&s, 4)]);
		} else if (r < 91) {                    /* 4% OMAP_RM */
			*op = op_omap_rm(cid, oid, cr_key[rnd(&s, 8)]);
		} else if (r < 93) {                    /* 2% OMAP_CLEAR */
			*op = op_omap_clear(cid, oid);
		} else {                                /* 7% OMAP_RMRANGE */
			struct bytes a = cr_key[rnd(&s, 8)];

			*op = op_omap_rmrange(cid, oid, a, rnd(&s, 4)
					      ? cr_key[rnd(&s, 8)] : NOBYTES);
		}
		g->buf[g->n++] = buf;
		/* applied at once: the next op is made against the result */
		if (gen_apply(m, g, idx, why, whylen) < 0)
			return -EINVAL;
	}
	/* Every transaction names both collections.  Commit order is per
	 * collection (tessera/backend.h): transactions that share one are
	 * ordered, so these are in one order, and what survives a crash is
	 * a prefix of them — which the crash test checks.  Transactions on
	 * collections of their own may commit in any order (the backend
	 * tests' order_* cases check that side). */
	for (int ci = 0; idx > 0 && ci < 2; ci++)
		if (!named[ci]) {
			g->ops[g->n] = op_touch(cr_coll[ci], cr_obj[0]);
			g->buf[g->n++] = NULL;
			if (gen_apply(m, g, idx, why, whylen) < 0)
				return -EINVAL;
		}
	return 0;
}

/* What the child tells the parent: fixed-size records, each written with
 * one write() (atomic on a pipe), in the order the child knows them. */
enum { REC_READY = 1, REC_SUBMITTED, REC_ACKED };

struct crash_rec {
	uint32_t type;
	uint32_t pad;
	uint64_t idx;
};

#define CHILD_FAILED 86

/* The child's state; it lives only in the child. */
static struct {
	const char *name;
	int wfd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int inflight;
	uint64_t next_ack;
	uint64_t slot[2 * CR_INFLIGHT];
} cc;

static TSR_PRINTF(1, 2) void
child_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[%s] crash child: ", cc.name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(CHILD_FAILED);
}

static void
child_rec(uint32_t type, uint64_t idx)
{
	struct crash_rec r = { type, 0, idx };

	if (write(cc.wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		child_fail("write to the parent: %s", strerror(errno));
}

static void
child_commit_cb(void *arg, int rc)
{
	uint64_t idx = *(const uint64_t *)arg;

	if (rc != 0)
		child_fail("transaction %" PRIu64 " failed: %d (%s)", idx, rc,
			   strerror(-rc));
	pthread_mutex_lock(&cc.mu);
	if (idx != cc.next_ack)
		child_fail("transaction %" PRIu64 " committed when %" PRIu64
			   " was due: not in submission order", idx,
			   cc.next_ack);
	cc.next_ack++;
	child_rec(REC_ACKED, idx);
	cc.inflight--;
	pthread_cond_broadcast(&cc.cv);
	pthread_mutex_unlock(&cc.mu);
}

/* The child: mount the store and submit transactions from start until
 * killed.  Never returns. */
static void
crash_child(int idx, const char *path, struct model *m, uint64_t start,
	    int wfd)
{
	struct tsr_instance *inst;
	const struct tsr_backend_ops *ops;
	struct opts_text o;
	char err[1024] = "";
	void *h;
	int rc;

	cc.name = tsr_plugin_desc(plugins[idx].plugin)->name;
	cc.wfd = wfd;
	pthread_mutex_init(&cc.mu, NULL);
	pthread_cond_init(&cc.cv, NULL);
	cc.inflight = 0;
	cc.next_ack = start;
	opts_parse(idx, path, &o);
	rc = tsr_instance_create(plugins[idx].plugin, &core_host.host, o.src,
				 o.n, &inst, err, sizeof(err));
	if (rc != 0)
		child_fail("instance: %s (%d)", err, rc);
	h = tsr_instance_handle(inst);
	ops = tsr_instance_ops(inst);
	rc = ops->mount(h, err, sizeof(err));
	if (rc != 0)
		child_fail("mount %s: %s (%d)", path, err, rc);
	child_rec(REC_READY, start);
	for (uint64_t i = start; i < start + 10000000; i++) {
		struct gtxn g;
		struct tsr_txn txn;
		char why[512];
		uint64_t *slot = &cc.slot[i % (2 * CR_INFLIGHT)];

		if (gen_txn(m, CR_SEED, i, &g, why, sizeof(why)) != 0)
			child_fail("generator: %s", why);
		pthread_mutex_lock(&cc.mu);
		while (cc.inflight >= CR_INFLIGHT)
			pthread_cond_wait(&cc.cv, &cc.mu);
		cc.inflight++;
		*slot = i;
		child_rec(REC_SUBMITTED, i);
		pthread_mutex_unlock(&cc.mu);
		txn.nops = g.n;
		txn.ops = g.ops;
		rc = ops->submit(h, &txn, child_commit_cb, slot);
		if (rc != 0)
			child_fail("submit of transaction %" PRIu64 ": %d (%s)",
				   i, rc, strerror(-rc));
		gtxn_free(&g);
	}
	child_fail("not killed after 10 million transactions");
}

/* The parent's reading of the child's records. */
struct crash_log {
	uint64_t start;
	uint64_t submitted, acked; /* counts */
	int ready, eof;
	char bad[256];             /* a record out of order */
	uint8_t part[sizeof(struct crash_rec)];
	size_t partlen;
};

static void
log_feed(struct crash_log *l, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct crash_rec r;

		l->part[l->partlen++] = p[i];
		if (l->partlen < sizeof(r))
			continue;
		memcpy(&r, l->part, sizeof(r));
		l->partlen = 0;
		if (r.type == REC_READY) {
			l->ready = 1;
		} else if (r.type == REC_SUBMITTED &&
			   r.idx == l->start + l->submitted) {
			l->submitted++;
		} else if (r.type == REC_ACKED &&
			   r.idx == l->start + l->acked &&
			   l->acked < l->submitted) {
			l->acked++;
		} else if (l->bad[0] == '\0') {
			snprintf(l->bad, sizeof(l->bad), "record %u for "
				 "transaction %" PRIu64 " after %" PRIu64
				 " submitted and %" PRIu64 " acked from %"
				 PRIu64, r.type, r.idx, l->submitted,
				 l->acked, l->start);
		}
	}
}

/* Read records until the deadline (monotonic ns), until READY if
 * until_ready, or until EOF. */
static void
log_read(int fd, struct crash_log *l, uint64_t deadline, int until_ready)
{
	uint8_t buf[4096];

	while (!l->eof && !(until_ready && l->ready)) {
		uint64_t now = mono_ns();
		struct pollfd pfd = { fd, POLLIN, 0 };
		ssize_t n;
		int rc;

		if (now >= deadline)
			return;
		rc = poll(&pfd, 1, (int)((deadline - now + 999999) / 1000000));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			l->eof = 1;
			return;
		}
		log_feed(l, buf, (size_t)n);
	}
}

/* The crash test's transactions without the crashes: the store is
 * compared with the model every few transactions, and once with
 * transactions in flight, so a mismatch in the crash test can be told
 * apart from a plain bug in an operation. */
#define RANDOM_TXNS 600
#define RANDOM_CHECK_EVERY 20

/* Objects around the sizes where a store may keep small objects apart
 * (backend-file and -blockdev keep data of objects up to inline_max in
 * their metadata): a seeded walk of writes, truncates, zeros (also of
 * an object's tail, which then reads as zeros, and of its end), clones
 * and removes over three objects of up to 80 KiB, checked against a model
 * after every transaction and after remounts. */
#define SO_STEPS 300
#define SO_MAX (80 * KiB)

START_TEST(small_objects)
{
	static const struct bytes names[3] = { B("s0"), B("s1"), B("s2") };
	/* sizes a boundary may sit at: blocks, 8 KiB, a chunk (64 KiB) */
	static const uint64_t edges[] = { 1, 100, 4095, 4096, 4097, 8191, 8192,
					  8193, 16384, 65535, 65536, 65537 };
	struct mobj e[3];
	int exists[3] = { 0, 0, 0 };
	uint8_t *p = pattern(31, SO_MAX), *z = xmalloc(SO_MAX);
	uint64_t seed = 0x5ba11;
	struct be b;

	memset(e, 0, sizeof(e));
	memset(z, 0, SO_MAX);
	be_new(&b, _i, "small-objects");
	TXN_OK(&b, op_mkcoll(C1));
	/* first the moves between the forms, each once: large to small
	 * with the first block untouched; small with a chunk far out;
	 * small growing past 8 KiB; a small tail zeroed */
	TXN_OK(&b, op_write(C1, names[0], 0, 20000, p));
	TXN_OK(&b, op_truncate(C1, names[0], 5000));
	mobj_write(&e[0], 0, p, 5000);
	expect_mobj(&b, C1, names[0], &e[0]);
	TXN_OK(&b, op_write(C1, names[1], 0, 3000, p + 1),
	       op_write(C1, names[1], 70000, 100, p + 2));
	mobj_write(&e[1], 0, p + 1, 3000);
	mobj_write(&e[1], 70000, p + 2, 100);
	expect_mobj(&b, C1, names[1], &e[1]);
	TXN_OK(&b, op_truncate(C1, names[1], 2000));
	mobj_resize(&e[1], 2000);
	expect_mobj(&b, C1, names[1], &e[1]);
	TXN_OK(&b, op_write(C1, names[2], 0, 8000, p + 3));
	TXN_OK(&b, op_write(C1, names[2], 8000, 500, p + 4));
	mobj_write(&e[2], 0, p + 3, 8000);
	mobj_write(&e[2], 8000, p + 4, 500);
	expect_mobj(&b, C1, names[2], &e[2]);
	TXN_OK(&b, op_zero(C1, names[0], 3000, 2000));
	mobj_write(&e[0], 3000, z, 2000);
	be_remount(&b);
	for (unsigned i = 0; i < 3; i++) {
		exists[i] = 1;
		expect_mobj(&b, C1, names[i], &e[i]);
	}
	for (int step = 0; step < SO_STEPS; step++) {
		unsigned o = (unsigned)rnd(&seed, 3), kind = (unsigned)rnd(&seed, 9);
		unsigned sz = (unsigned)rnd(&seed, 5);
		/* mostly small: an edge or up to 12 KiB; now and then large */
		uint64_t size = sz < 2 ? edges[rnd(&seed, 12)]
				: sz < 4 ? rnd(&seed, 12 * KiB + 1)
					 : rnd(&seed, SO_MAX + 1);
		uint64_t off = rnd(&seed, 3) == 0 ? 0 : rnd(&seed, size + 1);
		uint64_t len = size > off ? size - off : 0;
		const uint8_t *src = p + rnd(&seed, 64);
		int rc;

		if (len > SO_MAX - 64)
			len = SO_MAX - 64;
		if (kind <= 2 && len > 0) {
			/* a write, ending in zeros one time in three */
			const uint8_t *d = rnd(&seed, 3) == 0 ? z : src;
			rc = TXN(&b, op_write(C1, names[o], off, len, d));
			if (rc == 0) {
				mobj_write(&e[o], off, d, len);
				exists[o] = 1;
			}
		} else if (kind == 3 || kind == 7) {
			rc = TXN(&b, op_truncate(C1, names[o], size));
			if (rc == 0) {
				mobj_resize(&e[o], size);
				exists[o] = 1;
			}
		} else if (kind == 4 && exists[o] && e[o].size > 0) {
			/* zero from off to the end, or within */
			uint64_t zo = rnd(&seed, e[o].size);
			uint64_t zl = rnd(&seed, 2) ? e[o].size - zo
						    : 1 + rnd(&seed, e[o].size - zo);
			rc = TXN(&b, op_zero(C1, names[o], zo, zl));
			if (rc == 0)
				mobj_write(&e[o], zo, z, zl);
		} else if (kind == 5 && exists[o]) {
			unsigned d = (o + 1 + (unsigned)rnd(&seed, 2)) % 3;
			rc = TXN(&b, op_clone(C1, names[o], names[d]));
			if (rc == 0) {
				mobj_copy(&e[d], &e[o]);
				exists[d] = 1;
			}
		} else if (kind == 6 && exists[o]) {
			rc = TXN(&b, op_remove(C1, names[o]));
			if (rc == 0) {
				mobj_resize(&e[o], 0);
				exists[o] = 0;
			}
		} else {
			/* grow the object by a small append */
			uint64_t at = exists[o] ? e[o].size : 0;
			uint64_t n = 1 + rnd(&seed, 3000);
			if (at + n > SO_MAX)
				at = 0;
			rc = TXN(&b, op_write(C1, names[o], at, n, src));
			if (rc == 0) {
				mobj_write(&e[o], at, src, n);
				exists[o] = 1;
			}
		}
		ck_assert_msg(rc == 0, "%s: small objects, step %d (kind %u, "
			      "object %u, off %" PRIu64 ", size %" PRIu64 "): %d (%s)",
			      b.name, step, kind, o, off, size, rc, strerror(-rc));
		if (step % 50 == 49)
			be_remount(&b);
		if (step % 100 == 99)
			be_reopen(&b);
		for (unsigned i = 0; i < 3; i++) {
			if (exists[i])
				expect_mobj(&b, C1, names[i], &e[i]);
			else
				expect_missing(&b, C1, names[i]);
		}
	}
	for (unsigned i = 0; i < 3; i++)
		mobj_free(&e[i]);
	free(p);
	free(z);
	be_close(&b);
}
END_TEST

START_TEST(random_ops)
{
	static struct pipeline pl = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 };
	static struct pipe_slot slots[CR_INFLIGHT];
	struct model m = { NULL, 0, 0 };
	char why[512], when[64];
	struct be b;

	be_new(&b, _i, "random-ops");
	for (uint64_t i = 0; i < RANDOM_TXNS; i++) {
		struct gtxn g;
		int rc;

		ck_assert_msg(gen_txn(&m, CR_SEED, i, &g, why, sizeof(why)) == 0,
			      "generator: %s", why);
		if (i < RANDOM_TXNS / 2) {
			/* one at a time */
			rc = be_txn_ex(&b, g.ops, g.n, NULL, __FILE__, __LINE__);
			ck_assert_msg(rc == 0, "%s: random transaction %" PRIu64
				      " failed: %d (%s)", b.name, i, rc,
				      strerror(-rc));
		} else {
			/* CR_INFLIGHT at a time, as the crash child does */
			struct pipe_slot *s = &slots[i % CR_INFLIGHT];
			struct tsr_txn txn = { g.n, g.ops };

			*s = (struct pipe_slot){ &pl, (int)i, 1 };
			rc = b.ops->submit(b.h, &txn, pipe_cb, s);
			ck_assert_msg(rc == 0, "%s: submit of random transaction "
				      "%" PRIu64 ": %d", b.name, i, rc);
			if (i % CR_INFLIGHT == CR_INFLIGHT - 1) {
				ck_assert_int_eq(b.ops->flush(b.h), 0);
				for (int k = 0; k < CR_INFLIGHT; k++)
					ck_assert_msg(slots[k].rc == 0, "%s: "
						      "random transaction %d: "
						      "%d", b.name, slots[k].idx,
						      slots[k].rc);
			}
		}
		gtxn_free(&g);
		if (i % RANDOM_CHECK_EVERY == RANDOM_CHECK_EVERY - 1) {
			snprintf(when, sizeof(when), "after random transaction %"
				 PRIu64, i);
			expect_model(&b, &m, when);
		}
		if (i == RANDOM_TXNS / 4)
			be_remount(&b);
	}
	ck_assert_int_eq(b.ops->flush(b.h), 0);
	be_reopen(&b);
	expect_model(&b, &m, "after the random transactions and a remount");
	be_close(&b);
	model_free(&m);
}
END_TEST

START_TEST(crash)
{
	unsigned long rounds = crash_rounds_n;
	struct model m = { NULL, 0, 0 }, got = { NULL, 0, 0 };
	uint64_t rs = CR_SEED ^ 0x6b696c6cull, j = 0, maxlag = 0;
	uint64_t t0 = mono_ns(), acked_total = 0;
	char why[512];
	struct be b;

	/* mkfs here; from then on only children and checks mount it */
	be_fresh_path(&b, _i, "crash");
	be_create(&b);
	be_mkfs(&b);
	be_destroy(&b);
	for (unsigned long round = 0; round < rounds; round++) {
		struct crash_log l;
		char diff_a[640] = "", diff_s[640] = "";
		uint64_t r = rng_next(&rs), found = ~0ull;
		int fds[2], status;
		pid_t pid;

		memset(&l, 0, sizeof(l));
		l.start = j;
		ck_assert_int_eq(pipe(fds), 0);
		fflush(NULL);
		/* no instance and no backend thread here: the child starts
		 * clean with the model at state j */
		pid = fork();
		ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			close(fds[0]);
			crash_child(_i, b.path, &m, j, fds[1]);
		}
		close(fds[1]);
		/* one round in eight: killed at once, maybe in the middle of
		 * mount and journal replay; else 0..40 ms after mount */
		if (r % 8 != 0) {
			log_read(fds[0], &l, mono_ns() + 30000000000ull, 1);
			if (l.ready)
				log_read(fds[0], &l, mono_ns() + 1000 *
					 ((r >> 8) % (CR_MAX_DELAY_US + 1)), 0);
		}
		kill(pid, SIGKILL);
		log_read(fds[0], &l, mono_ns() + 30000000000ull, 0);
		close(fds[0]);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			      "%s: round %lu: the child %s %d (its message is "
			      "above)", b.name, round,
			      WIFSIGNALED(status) ? "died of signal"
						  : "exited with",
			      WIFSIGNALED(status) ? WTERMSIG(status)
						  : WEXITSTATUS(status));
		ck_assert_msg(l.eof, "%s: round %lu: no end of the child's "
			      "records", b.name, round);
		ck_assert_msg(l.bad[0] == '\0', "%s: round %lu: %s", b.name,
			      round, l.bad);

		/* what survived */
		be_create(&b);
		be_mount(&b);
		model_load(&b, &got);
		be_destroy(&b);

		/* the model at A (all acked must be there), then A+1 .. S */
		for (uint64_t i = j; i < j + l.acked; i++) {
			struct gtxn g;

			ck_assert_msg(gen_txn(&m, CR_SEED, i, &g, why,
					      sizeof(why)) == 0,
				      "generator: %s", why);
			gtxn_free(&g);
		}
		for (uint64_t k = j + l.acked; k <= j + l.submitted; k++) {
			struct gtxn g;
			char *d = k == j + l.acked ? diff_a : diff_s;

			if (!model_diff(&m, &got, d, sizeof(diff_a))) {
				found = k;
				break;
			}
			if (k == j + l.submitted)
				break;
			ck_assert_msg(gen_txn(&m, CR_SEED, k, &g, why,
					      sizeof(why)) == 0,
				      "generator: %s", why);
			gtxn_free(&g);
		}
		ck_assert_msg(found != ~0ull, "%s: round %lu: killed with A = %"
			      PRIu64 " transactions acked and S = %" PRIu64
			      " submitted (this round from %" PRIu64 "), the "
			      "store is not the state after any j of them, A "
			      "<= j <= S.  Against the state after A: %s.  "
			      "Against the state after S: %s", b.name, round,
			      j + l.acked, j + l.submitted, j, diff_a,
			      l.submitted > l.acked ? diff_s : "(the same)");
		if (found - (j + l.acked) > maxlag)
			maxlag = found - (j + l.acked);
		acked_total += l.acked;
		j = found;
		model_free(&got);
	}
	fprintf(stderr, "[%s] crash: %lu rounds, %" PRIu64 " transactions "
		"(%" PRIu64 " acked before a kill), max (j - A) = %" PRIu64
		", %.1f s\n", b.name, rounds, j, acked_total, maxlag,
		(double)(mono_ns() - t0) / 1e9);
	/* and the store still mounts and holds state j */
	be_create(&b);
	be_mount(&b);
	expect_model(&b, &m, "after the last crash round");
	be_close(&b);
	model_free(&m);
}
END_TEST

/* ---- 8. Threads ---------------------------------------------------------
 *
 * backend.h's thread rules: while a store is mounted, submit() and flush()
 * may come from several threads at once, and every read alongside them and
 * alongside commits.  TH_READERS threads read TH_STABLE objects of C1
 * (data, stat, an attribute, an omap value, a listing page) over and over
 * while TH_WRITERS threads each pipeline TH_TXNS transactions to objects
 * of their own in C2, flushing now and then.  Every read must be right,
 * every transaction committed exactly once and without error, and the
 * writers' objects hold their last writes.  Threads record the first
 * failure; the test thread asserts (Check's assertions belong to it).
 */
#define TH_STABLE 16
#define TH_READERS 4
#define TH_WRITERS 2
#define TH_TXNS 96
#define TH_NAMES 8          /* objects per writer, rewritten in turn */
#define TH_LEN (16 * KiB)
#define TH_MAX_S 120        /* readers give up after this, reporting it */
#define TH_MAX_READS 4000   /* rounds per reader at most: no spinning on */

struct th_run {
	struct be *b;
	const uint8_t *p;        /* data of every write: p + TH_LEN * k */
	pthread_mutex_t mu;
	int writers_left;
	char failure[512];       /* the first one; "" while none */
	unsigned long reads;
};

struct th_writer;

/* What on_commit gets: a writer's transaction. */
struct th_slot {
	struct th_writer *w;
	int i;
};

struct th_writer {
	struct th_run *r;
	int t;
	pthread_t tid;
	pthread_mutex_t mu;
	int calls[TH_TXNS];      /* on_commit calls per transaction */
	int rcs[TH_TXNS];
	struct th_slot slot[TH_TXNS];
};

static void TSR_PRINTF(2, 3)
th_fail(struct th_run *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->mu);
	if (r->failure[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->mu);
}

static void
th_commit_cb(void *arg, int rc)
{
	struct th_slot *sl = arg;
	struct th_writer *w = sl->w;

	pthread_mutex_lock(&w->mu);
	w->calls[sl->i]++;
	w->rcs[sl->i] = rc;
	pthread_mutex_unlock(&w->mu);
}

static int
th_name(char *buf, size_t n, const char *what, int a, int b)
{
	return snprintf(buf, n, "%s-%d-%d", what, a, b);
}

static void *
th_write_main(void *arg)
{
	struct th_writer *w = arg;
	struct be *b = w->r->b;
	char name[32];
	int rc;

	for (int i = 0; i < TH_TXNS; i++) {
		int k = w->t * TH_TXNS + i, nl;
		struct tsr_txn_op ops[2];
		struct tsr_txn txn = { 2, ops };

		nl = th_name(name, sizeof(name), "w", w->t, i % TH_NAMES);
		ops[0] = op_write(C2, ((struct bytes){ name, (size_t)nl }), 0,
				  TH_LEN, w->r->p + (size_t)k * TH_LEN);
		ops[1] = op_omap_set(C2, ((struct bytes){ name, (size_t)nl }),
				     B("i"), ((struct bytes){ &k, sizeof(k) }));
		w->slot[i].w = w;
		w->slot[i].i = i;
		rc = b->ops->submit(b->h, &txn, th_commit_cb, &w->slot[i]);
		if (rc != 0) {
			th_fail(w->r, "writer %d: submit of transaction %d: %d",
				w->t, i, rc);
			break;
		}
		if (i % 16 == 15 && (rc = b->ops->flush(b->h)) != 0) {
			th_fail(w->r, "writer %d: flush: %d", w->t, rc);
			break;
		}
	}
	if ((rc = b->ops->flush(b->h)) != 0)
		th_fail(w->r, "writer %d: last flush: %d", w->t, rc);
	pthread_mutex_lock(&w->r->mu);
	w->r->writers_left--;
	pthread_mutex_unlock(&w->r->mu);
	return NULL;
}

static int
th_cursor_cb(void *arg, const void *oid, size_t oid_len)
{
	(void)oid;
	(void)oid_len;
	(*(int *)arg)++;
	return 0;
}

/* One round of reads of stable object j; 0, or -1 with the failure
 * recorded. */
static int
th_read_one(struct th_run *r, int j, uint8_t *buf)
{
	struct be *b = r->b;
	struct tsr_obj_stat st;
	struct tsr_cursor cur;
	char name[32], val[8];
	size_t nl = (size_t)th_name(name, sizeof(name), "s", j, 0), vl = 0;
	uint64_t got = 0;
	int rc, listed = 0;

	rc = b->ops->read(b->h, &C1, name, nl, 0, TH_LEN, buf, &got);
	if (rc != 0 || got != TH_LEN ||
	    memcmp(buf, r->p + (size_t)(TH_WRITERS * TH_TXNS + j) * TH_LEN,
		   TH_LEN) != 0)
		goto bad_read;
	rc = b->ops->stat(b->h, &C1, name, nl, &st);
	if (rc != 0 || st.size != TH_LEN) {
		th_fail(r, "stat of %s: %d, size %" PRIu64 " (expected %u)",
			name, rc, st.size, TH_LEN);
		return -1;
	}
	rc = b->ops->getattr(b->h, &C1, name, nl, "a", 1, val, sizeof(val),
			     &vl);
	if (rc != 0 || vl != 1 || val[0] != 'A' + j) {
		th_fail(r, "getattr a of %s: %d, %zu bytes", name, rc, vl);
		return -1;
	}
	rc = b->ops->omap_get(b->h, &C1, name, nl, "o", 1, val, sizeof(val),
			      &vl);
	if (rc != 0 || vl != 1 || val[0] != 'a' + j) {
		th_fail(r, "omap_get o of %s: %d, %zu bytes", name, rc, vl);
		return -1;
	}
	cur.len = 0;
	rc = b->ops->list_objects(b->h, &C1, &cur, 8, th_cursor_cb, &listed);
	if (rc != 0 || listed != 8) {
		th_fail(r, "list_objects of C1, 8 from the start: %d, %d "
			"listed", rc, listed);
		return -1;
	}
	return 0;
bad_read:
	th_fail(r, "read of %s: %d, %" PRIu64 " bytes%s", name, rc, got,
		rc == 0 && got == TH_LEN ? ", not the bytes written" : "");
	return -1;
}

static void *
th_read_main(void *arg)
{
	struct th_run *r = arg;
	uint8_t *buf = malloc(TH_LEN);
	uint64_t s = (uint64_t)(uintptr_t)&buf, t0 = mono_ns();
	unsigned long n = 0;

	if (buf == NULL) {
		th_fail(r, "out of memory");
		return NULL;
	}
	for (;;) {
		int left;

		pthread_mutex_lock(&r->mu);
		left = r->writers_left;
		pthread_mutex_unlock(&r->mu);
		/* at least 50 rounds each, and on while the writers write
		 * (up to TH_MAX_READS: a shared machine has other work) */
		if ((left == 0 && n >= 50) || n >= TH_MAX_READS)
			break;
		if (mono_ns() - t0 > TH_MAX_S * 1000000000ull) {
			th_fail(r, "a reader still running after %d s (%lu "
				"rounds; writers not done: %d)", TH_MAX_S, n,
				left);
			break;
		}
		if (th_read_one(r, (int)(rng_next(&s) % TH_STABLE), buf) < 0)
			break;
		n++;
	}
	pthread_mutex_lock(&r->mu);
	r->reads += n;
	pthread_mutex_unlock(&r->mu);
	free(buf);
	return NULL;
}

START_TEST(threads)
{
	static struct th_writer w[TH_WRITERS];
	struct th_run r;
	pthread_t rt[TH_READERS];
	size_t total = (size_t)(TH_WRITERS * TH_TXNS + TH_STABLE);
	uint8_t *p = pattern(21, total * TH_LEN);
	struct be b;
	char name[32];

	be_new(&b, _i, "threads");
	TXN_OK(&b, op_mkcoll(C1), op_mkcoll(C2));
	for (int j = 0; j < TH_STABLE; j++) {
		size_t nl = (size_t)th_name(name, sizeof(name), "s", j, 0);
		char a = (char)('A' + j), o = (char)('a' + j);
		struct bytes oid = { name, nl };

		TXN_OK(&b, op_write(C1, oid, 0, TH_LEN,
				    p + (size_t)(TH_WRITERS * TH_TXNS + j) * TH_LEN),
		       op_setattr(C1, oid, B("a"), ((struct bytes){ &a, 1 })),
		       op_omap_set(C1, oid, B("o"), ((struct bytes){ &o, 1 })));
	}

	memset(&r, 0, sizeof(r));
	r.b = &b;
	r.p = p;
	r.writers_left = TH_WRITERS;
	pthread_mutex_init(&r.mu, NULL);
	for (int t = 0; t < TH_READERS; t++)
		ck_assert_int_eq(pthread_create(&rt[t], NULL, th_read_main, &r),
				 0);
	for (int t = 0; t < TH_WRITERS; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].r = &r;
		w[t].t = t;
		pthread_mutex_init(&w[t].mu, NULL);
		ck_assert_int_eq(pthread_create(&w[t].tid, NULL, th_write_main,
						&w[t]), 0);
	}
	for (int t = 0; t < TH_WRITERS; t++)
		ck_assert_int_eq(pthread_join(w[t].tid, NULL), 0);
	for (int t = 0; t < TH_READERS; t++)
		ck_assert_int_eq(pthread_join(rt[t], NULL), 0);
	ck_assert_msg(r.failure[0] == '\0', "%s: with %d readers and %d "
		      "writers at once: %s", b.name, TH_READERS, TH_WRITERS,
		      r.failure);
	for (int t = 0; t < TH_WRITERS; t++)
		for (int i = 0; i < TH_TXNS; i++)
			ck_assert_msg(w[t].calls[i] == 1 && w[t].rcs[i] == 0,
				      "%s: writer %d, transaction %d: on_commit "
				      "called %d times, last with %d", b.name,
				      t, i, w[t].calls[i], w[t].rcs[i]);
	/* each writer object holds its last write */
	for (int t = 0; t < TH_WRITERS; t++)
		for (int j = 0; j < TH_NAMES; j++) {
			int last = TH_TXNS - TH_NAMES + j, k = t * TH_TXNS + last;
			size_t nl = (size_t)th_name(name, sizeof(name), "w", t, j);

			expect_data(&b, C2, ((struct bytes){ name, nl }),
				    p + (size_t)k * TH_LEN, TH_LEN);
			expect_omap(&b, C2, ((struct bytes){ name, nl }), B("i"),
				    ((struct bytes){ &k, sizeof(k) }));
		}
	fprintf(stderr, "[%s] threads: %lu reads by %d threads during %d "
		"transactions from %d threads\n", b.name, r.reads, TH_READERS,
		TH_WRITERS * TH_TXNS, TH_WRITERS);
	be_close(&b);
	for (int t = 0; t < TH_WRITERS; t++)
		pthread_mutex_destroy(&w[t].mu);
	pthread_mutex_destroy(&r.mu);
	free(p);
}
END_TEST

/* ---- Runner -------------------------------------------------------------*/

static const char *plugins_from = "BACKEND_PLUGINS";

START_TEST(no_plugins)
{
	ck_abort_msg("%s names no plugin: set it to a colon-separated list "
		     "of backend plugin .so files", plugins_from);
}
END_TEST

START_TEST(plugin_loads)
{
	ck_assert_msg(plugins[_i].plugin != NULL, "%s", plugins[_i].err);
}
END_TEST

/* In the order they run; the runner checks these names against the
 * tests' own (cf_select). */
const struct cf_test_info cf_backend_tests[] = {
	{ "plugin_loads", "the file loads and is a backend plugin" },
	{ "lifecycle", "mkfs, mount, umount, mount again; mkfs over a store "
	  "or other data and mount of nothing refused, naming the path" },
	{ "ops_colls", "MKCOLL, RMCOLL; every operation and read in a "
	  "missing collection" },
	{ "ops_write", "WRITE: holes, extension, overwrite" },
	{ "ops_write_held", "WRITE with TSR_TXN_F_DATA_HELD" },
	{ "ops_zero", "ZERO" },
	{ "ops_truncate", "TRUNCATE" },
	{ "ops_remove", "REMOVE" },
	{ "ops_clone", "CLONE" },
	{ "ops_clone_range", "CLONE_RANGE" },
	{ "ops_attrs", "SETATTR, RMATTR, getattr, getattrs" },
	{ "ops_omap", "OMAP_SET, OMAP_RM, OMAP_CLEAR, OMAP_RMRANGE, omap_get, "
	  "omap_iter" },
	{ "ops_reads", "reads at, past and across the end; large reads into "
	  "aligned and unaligned buffers; stat" },
	{ "small_objects", "objects around small sizes (blocks, 8 KiB, a "
	  "chunk): writes, truncates, zeros, clones, removes against a model" },
	{ "ops_refused", "what tsr_txn_validate refuses, submit() refuses "
	  "up front" },
	{ "ops_names", "names holding NUL, '/', 0xff, of 4096 bytes" },
	{ "atomicity", "a failing operation leaves nothing of its transaction" },
	{ "enumeration", "list_colls, list_objects: order, paging, cursors" },
	{ "enumeration_changes", "a walk resumed across creates and removes" },
	{ "persistence", "umount and mount, destroy and create; pipelined "
	  "submits commit in order; flush" },
	{ "checksum", "a bit flipped in the store reads -EIO" },
	{ "random_ops", "random transactions against an in-memory model" },
	{ "threads", "reads from four threads while two submit and flush "
	  "(backend.h's thread rules)" },
	{ "crash", "the writer SIGKILLed at random moments: the store holds "
	  "what was acknowledged, and whole transactions only" },
	{ NULL, NULL },
};

/* Fill plugins[nplugins] from p. */
static void
load_plugin(const struct cf_plugin *p)
{
	struct plugin_entry *e = &plugins[nplugins++];
	const char *name, *text = p->options;
	char var[128];

	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", p->path);
	cf_load(registry, p->path, TSR_KIND_BACKEND, &e->plugin, e->err,
		sizeof(e->err), e->label, sizeof(e->label));
	if (e->plugin == NULL)
		return;
	name = tsr_plugin_desc(e->plugin)->name;
	snprintf(var, sizeof(var), "BACKEND_NO_RAW_SCAN_%s", name);
	e->no_raw_scan = p->no_raw_scan || getenv(var) != NULL;
	if (text != NULL) {
		snprintf(e->opts_from, sizeof(e->opts_from), "-o");
	} else {
		snprintf(var, sizeof(var), "BACKEND_OPTIONS_%s", name);
		text = getenv(var);
		if (text == NULL) {
			/* a plugin name may hold '-', an environment name
			 * may not */
			for (char *c = var; *c; c++)
				if (*c == '-')
					*c = '_';
			text = getenv(var);
		}
		snprintf(e->opts_from, sizeof(e->opts_from), "%s", var);
	}
	if (text != NULL && strlen(text) >= sizeof(e->opts)) {
		snprintf(e->err, sizeof(e->err), "%.800s: the options (%s) are "
			 "longer than %zu bytes", p->path,
			 p->options ? "-o" : var, sizeof(e->opts) - 1);
		e->plugin = NULL;
		return;
	}
	snprintf(e->opts, sizeof(e->opts), "%s", text ? text : "");
}

/* The crash test's rounds: run's, else BACKEND_CRASH_ROUNDS, else 200.
 * 0, or -1 when the variable is not a number. */
static int
set_crash_rounds(const struct cf_run *run)
{
	const char *v = getenv("BACKEND_CRASH_ROUNDS");
	char *end;

	crash_rounds_n = run->crash_rounds;
	if (crash_rounds_n != 0)
		return 0;
	crash_rounds_n = 200;
	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	crash_rounds_n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || crash_rounds_n > 1000000) {
		fprintf(stderr, "BACKEND_CRASH_ROUNDS=%s: not a number of "
			"rounds (0 to 1000000)\n", v);
		return -1;
	}
	return 0;
}

int
cf_backend_run(const struct cf_run *run)
{
	const TTest *const tests[] = {
		plugin_loads, lifecycle, ops_colls, ops_write, ops_write_held,
		ops_zero, ops_truncate, ops_remove, ops_clone, ops_clone_range,
		ops_attrs, ops_omap, ops_reads, small_objects, ops_refused,
		ops_names,
		atomicity, enumeration, enumeration_changes, persistence,
		checksum, random_ops, threads, crash,
	};
	enum { NTESTS = sizeof(tests) / sizeof(tests[0]) };
	const char *tmp = run->tmpdir;
	int selected[NTESTS];
	Suite *s;
	SRunner *sr;
	int failed;

	if (cf_select(cf_backend_tests, tests, NTESTS, run, selected) < 0 ||
	    set_crash_rounds(run) < 0)
		return -1;
	if (run->nplugins > MAX_PLUGINS) {
		fprintf(stderr, "%s names %zu plugins, more than %d\n",
			run->envvar, run->nplugins, MAX_PLUGINS);
		return -1;
	}
	if (tmp == NULL || *tmp == '\0')
		tmp = getenv("TMPDIR");
	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	if (strlen(tmp) > sizeof(scratch) - 32) {
		fprintf(stderr, "%s: too long for a scratch directory\n", tmp);
		return -1;
	}
	snprintf(scratch, sizeof(scratch), "%s/tsr-test-backend.XXXXXX", tmp);
	if (mkdtemp(scratch) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", scratch, strerror(errno));
		return -1;
	}
	if (run->envvar != NULL)
		plugins_from = run->envvar;
	s = suite_create("backend-conformance");
	tsr_core_host_init(&core_host, "conformance/backend", NULL, NULL);
	registry = tsr_registry_create();
	nplugins = 0;
	for (size_t i = 0; i < run->nplugins; i++)
		load_plugin(&run->plugins[i]);
	if (nplugins == 0) {
		TCase *tc = tcase_create("no-plugins");

		tcase_add_test(tc, no_plugins);
		suite_add_tcase(s, tc);
	}
	for (size_t i = 0; i < nplugins; i++) {
		TCase *tc = tcase_create(plugins[i].label);
		int a = (int)i, b = (int)i + 1;

		/* the crash loop is sized for well under two minutes; slow
		 * disks and sanitizers get plenty of margin */
		tcase_set_timeout(tc, 600);
		for (size_t t = 0; t < NTESTS; t++)
			if (selected[t] || t == 0) /* plugin_loads: always */
				tcase_add_loop_test(tc, tests[t], a, b);
		suite_add_tcase(s, tc);
	}

	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tsr_registry_destroy(registry);
	registry = NULL;
	tu_rm_rf(scratch);
	return failed;
}
