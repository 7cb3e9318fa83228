/* harness.h — what the backend plugins' unit tests share
 * (tests/unit/test_backend_file.c, tests/unit/test_backend_blockdev.c):
 * the plugin loaded through the core registry as the daemons load it, a
 * captured log, scratch files, stores and transactions, reads that check
 * what they get, fsck with its problems collected, the metadata store
 * opened behind the backend's back, a populated store — and the cases
 * every backend on the object-store engine must pass the same way
 * (damaged LevelDB, a missing CURRENT, the wrong state for a call, and the
 * order in which commits come back; see harness.c).  Each backend's test
 * program keeps only what is specific to it: its layout on disk, its
 * journal, its crash images.
 *
 * Conventions: helpers that take a store assert (Check) and name the
 * store's path in their message; st_try and txn_try do not, so a forked
 * writer child may use them.  Every test works in its own directory, tdir,
 * under one scratch root that bt_main removes (PREFIX_KEEP=1 keeps it,
 * PREFIX_VERBOSE=1 passes the backend's log lines on to stderr, PREFIX
 * being the backend's env_prefix).
 */
#ifndef TSR_TEST_BACKEND_HARNESS_H
#define TSR_TEST_BACKEND_HARNESS_H

#include "plugin/host.h"
#include "plugin/registry.h"

#include <tessera/backend.h>
#include <tessera/kv.h>

#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "testutil.h"

/* ---- The program's backend --------------------------------------------*/

struct store;

struct bt_backend {
	const char *name;        /* the plugin's name: "file" */
	const char *plugin_env;  /* names the .so: "BACKEND_FILE_PLUGIN" */
	const char *so_hint;     /* where the build puts it, for the message */
	const char *env_prefix;  /* PREFIX_KEEP, PREFIX_VERBOSE: "BFILE" */
	const char *root;        /* scratch root template, "/tmp/...XXXXXX" */
	/* Set s->dir, s->path, s->mpath and s->jpath for the store at
	 * tdir/name; make what must exist first.  0 or -errno. */
	int (*layout)(struct store *s, const char *name);
	/* options every instance gets first (the test's own override) */
	const struct tsr_srcval *defaults;
	size_t ndefaults;
	unsigned timeout;        /* seconds per test case */
};

/* Run the suite: load the plugin named by be->plugin_env, make the
 * scratch root, and run the shared cases and then those add_tests adds
 * (to a TCase with the fixture below).  Returns main's exit status. */
int bt_main(const struct bt_backend *be, void (*add_tests)(TCase *tc));

extern const struct bt_backend *bt;   /* what bt_main was given */
extern char tdir[128];                /* this test's directory */
extern const struct tsr_plugin *plugin;
extern char plugin_err[1024];
extern struct tsr_core_host core_host;
extern struct tsr_host host;          /* core_host.host, log captured */
extern const struct tsr_coll_id cid;  /* the collection tests use */

/* ---- Captured log --------------------------------------------------------
 *
 * The backend reports what only a log can carry (which object, which
 * offset) through host->logv; the last lines are kept to be checked. */
void log_clear(void);
/* The first kept line containing every one of the NULL-terminated
 * strings: its index, or -1; *level (may be NULL) gets its level. */
int log_find(int *level, ...);
/* Print the kept lines at level or more severe (for the report). */
void log_dump(int level);

/* ---- Files ---------------------------------------------------------------*/

void path_join(char *out, size_t n, const char *a, const char *b);
off_t file_size(const char *path);
void file_pwrite(const char *path, uint64_t off, const void *p, size_t n);
void file_pread(const char *path, uint64_t off, void *p, size_t n);
/* Invert n bytes at off: damage that is certain to change every byte. */
void file_garble(const char *path, uint64_t off, size_t n);
void file_truncate(const char *path, off_t size);
void file_put(const char *path, const void *p, size_t n);
/* Copy a regular file, cp -r a tree: 0 or -errno (no assertion: a
 * writer child uses them). */
int file_copy(const char *from, const char *to);
int tree_copy(const char *from, const char *to);
/* Entries of a directory other than . and .., or -1 if it cannot be read. */
int dir_count(const char *path);

/* Every regular file below dir but the empty ones (the spares a backend
 * makes ahead of new objects, LevelDB's LOCK), and the bytes they occupy
 * on disk. */
#define FLIST_MAX 64
struct flist {
	size_t n;
	uint64_t disk;
	char path[FLIST_MAX][PATH_MAX];
};
void walk_files(const char *dir, struct flist *l);

/* ---- Stores ----------------------------------------------------------------*/

struct store {
	struct tsr_instance *inst;
	void *h;
	const struct tsr_backend_ops *ops;
	char dir[200];          /* tdir/name: everything of the store */
	char path[216];         /* the option path= */
	char mpath[224];        /* the metadata store (LevelDB) */
	char jpath[232];        /* the journal */
	char err[1024];
};

#define OPT(n, v) { .name = (n), .kind = TSR_SRC_TEXT, .s = (v), .where = "test" }

/* An instance for tdir/name with the backend's defaults and then opts
 * (at most 6, which override).  create's rc, with its reason in s->err. */
int st_try(struct store *s, const char *name, const struct tsr_srcval *opts,
	   size_t nopts);
void st_new(struct store *s, const char *name, const struct tsr_srcval *opts,
	    size_t nopts);
void st_free(struct store *s);
int st_mkfs(struct store *s);
void st_mkfs_ok(struct store *s);
int st_mount(struct store *s);
void st_mount_ok(struct store *s);
void st_umount_ok(struct store *s);
/* A failure names the store or the part of it that failed (names) and
 * says what is wrong (says, when not NULL). */
void expect_fails(int rc, const char *what, const char *err, int want,
		  const char *names, const char *says);
void expect_mount_fails(struct store *s, int want, const char *names,
			const char *says);
void expect_mkfs_fails(struct store *s, int want, const char *names,
		       const char *says);
uint64_t st_avail(struct store *s);
/* A new instance for tdir/name: mkfs, mount, make the collection. */
void st_fresh(struct store *s, const char *name, const struct tsr_srcval *opts,
	      size_t nopts);

/* ---- Transactions --------------------------------------------------------*/

/* A commit callback's argument that can be waited for. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls, rc;
};
void on_commit(void *arg, int rc);

/* Submit ops as one transaction and wait for its on_commit, at most 30 s:
 * submit's refusal, on_commit's result, or -ETIMEDOUT.  Does not assert.
 * A waiter that timed out is leaked: a late callback must still find it. */
int txn_try(struct store *s, const struct tsr_txn_op *ops, uint32_t n);
void txn_ok(struct store *s, const struct tsr_txn_op *ops, uint32_t n);
/* An operation on cid's oid (NULL for the collection itself). */
struct tsr_txn_op op_new(uint32_t type, const char *oid);
struct tsr_txn_op op_write(const char *oid, uint64_t off, const void *data,
			   uint64_t len);
struct tsr_txn_op op_kv(uint32_t type, const char *oid, const char *key,
			const char *val);
void st_mkcoll(struct store *s);

/* ---- Reads ----------------------------------------------------------------*/

int obj_read(struct store *s, const char *oid, uint64_t off, uint64_t len,
	     void *buf, uint64_t *got);
int obj_stat(struct store *s, const char *oid, struct tsr_obj_stat *st);
/* oid holds exactly data[0..len). */
void expect_data(struct store *s, const char *oid, const void *data,
		 size_t len);
/* data[0..len) of oid at off, read alone. */
void expect_range(struct store *s, const char *oid, uint64_t off,
		  const void *data, size_t len);
void expect_absent(struct store *s, const char *oid);
int attr_get(struct store *s, const char *oid, const char *key, char *buf,
	     size_t buflen);
/* val NULL: the attribute is missing (-ENODATA). */
void expect_attr(struct store *s, const char *oid, const char *key,
		 const char *val);
/* Objects in the collection, or a negative errno. */
int count_objects(struct store *s);
/* Deterministic bytes for seed (they do not compress). */
void fill(void *buf, size_t n, uint32_t seed);
/* Lines of text: what compresses. */
void text_fill(uint8_t *text, size_t len);

/* ---- fsck -----------------------------------------------------------------*/

struct fsck_log {
	int calls, repaired;
	char all[8192];  /* every problem, one a line */
};
int st_fsck(struct store *s, int repair, struct fsck_log *l);
void expect_fsck_clean(struct store *s);

/* ---- The metadata store, opened behind the backend's back ----------------
 *
 * Chunk map keys (plugins/ostore/ostore.h): 'C', object id (u64 BE),
 * chunk (u32 BE). */

#define MAPS_MAX 64

struct cmap {
	uint64_t objid;
	uint32_t cno;
	uint8_t key[13];
	uint8_t val[256];
	size_t vl;
};

struct maps {
	size_t n;
	struct cmap m[MAPS_MAX];
};

/* Every chunk map of the (unmounted) store, in key order. */
void maps_read(struct store *s, struct maps *ms);
/* Put (or, with v NULL, delete) one key of the unmounted store. */
void meta_put(struct store *s, const void *k, size_t kl, const void *v,
	      size_t vl);

/* ---- A populated store ---------------------------------------------------
 *
 * pop-0 .. pop-(POP_N-1): sizes 5000 + 3000 i, data from seed i, an
 * attribute and an omap key each; written over two mounts, so that
 * LevelDB holds both a table (from recovering the first log) and a log. */

#define POP_N 6
size_t pop_size(unsigned i);
void pop_name(char *buf, size_t n, unsigned i);
void pop_write(struct store *s, unsigned from, unsigned to);
/* mkfs tdir/name and fill it; left unmounted. */
void pop_store(struct store *s, const char *name);
void pop_verify(struct store *s);
/* Mount, check every pop object, umount: nothing was lost. */
void pop_remount_verify(struct store *s);

#endif
