/* kv.c — tessera/kv.h over LevelDB's C API. */
#include <tessera/kv.h>

#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <leveldb/c.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct tsr_kv {
	leveldb_t *db;
	leveldb_options_t *opts;
	leveldb_filterpolicy_t *bloom;
	leveldb_readoptions_t *ropts;
	leveldb_writeoptions_t *wsync;
	leveldb_writeoptions_t *wnosync;
	char *path;
};

struct tsr_kv_batch {
	leveldb_writebatch_t *wb;
};

/* LevelDB reports errors as malloc'd text; turn one into our message and
 * an errno (damage is -EIO: LevelDB says "Corruption: ..."). */
static int
fail(const char *path, const char *what, char *lerr, char *err, size_t errlen)
{
	int rc = strncmp(lerr, "Corruption", 10) == 0 ? -EIO
		 : strstr(lerr, "does not exist") ? -ENOENT
		 : strncmp(lerr, "IO error", 8) == 0 ? -EIO : -EINVAL;

	tsr_errf(err, errlen, rc, "LevelDB store %s: %s: %s", path, what, lerr);
	leveldb_free(lerr);
	return rc;
}

static void
destroy(struct tsr_kv *kv)
{
	if (kv->db)
		leveldb_close(kv->db);
	if (kv->opts)
		leveldb_options_destroy(kv->opts);
	if (kv->bloom)
		leveldb_filterpolicy_destroy(kv->bloom);
	if (kv->ropts)
		leveldb_readoptions_destroy(kv->ropts);
	if (kv->wsync)
		leveldb_writeoptions_destroy(kv->wsync);
	if (kv->wnosync)
		leveldb_writeoptions_destroy(kv->wnosync);
	free(kv->path);
	free(kv);
}

static leveldb_options_t *
make_options(int create, const struct tsr_kv_tuning *t, leveldb_filterpolicy_t *bloom)
{
	leveldb_options_t *o = leveldb_options_create();

	leveldb_options_set_create_if_missing(o, (unsigned char)(create != 0));
	/* read everything back with its checksum and refuse damage instead
	 * of skipping it */
	leveldb_options_set_paranoid_checks(o, 1);
	if (t != NULL && t->write_buffer)
		leveldb_options_set_write_buffer_size(o, t->write_buffer);
	if (t != NULL && t->uncompressed)
		leveldb_options_set_compression(o, leveldb_no_compression);
	if (bloom != NULL)
		leveldb_options_set_filter_policy(o, bloom);
	return o;
}

/* LevelDB's files that hold no data: it takes LOCK and starts its info
 * log before it looks for CURRENT, so an open that found nothing (or a
 * first start that died right there) leaves them behind. */
static int
no_data(const char *name)
{
	return strcmp(name, "LOCK") == 0 || strcmp(name, "LOG") == 0 ||
	       strcmp(name, "LOG.old") == 0;
}

/* A file of a LevelDB store: MANIFEST-N, N.ldb, N.sst, N.log. */
static int
leveldb_file(const char *name)
{
	const char *dot = strrchr(name, '.');

	return strncmp(name, "MANIFEST-", 9) == 0 ||
	       (dot && (strcmp(dot, ".ldb") == 0 || strcmp(dot, ".sst") == 0 ||
			strcmp(dot, ".log") == 0));
}

enum { KV_ABSENT, KV_EMPTY, KV_STORE };

/* What is at path: KV_ABSENT, KV_EMPTY (a directory holding nothing, or
 * only no_data files), KV_STORE (a directory with CURRENT: LevelDB judges
 * the rest), or a negative errno with the reason in err — files but no
 * CURRENT is -EIO, and nothing is touched. */
static int
look(const char *path, enum tsr_kv_mode mode, char *err, size_t errlen)
{
	char cur[4096], first[256] = "";
	struct dirent *de;
	struct stat st;
	int files = 0, ours = 0;
	DIR *d;

	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return KV_ABSENT;
		return tsr_errf(err, errlen, -errno, "LevelDB store %s: %s", path,
				strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return tsr_errf(err, errlen, -ENOTDIR, "LevelDB store %s: not a "
				"directory", path);
	snprintf(cur, sizeof(cur), "%s/CURRENT", path);
	if (stat(cur, &st) == 0)
		return KV_STORE;
	if (errno != ENOENT)
		return tsr_errf(err, errlen, -errno, "LevelDB store %s: %s: %s",
				path, cur, strerror(errno));
	if ((d = opendir(path)) == NULL)
		return tsr_errf(err, errlen, -errno, "LevelDB store %s: %s", path,
				strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    no_data(de->d_name))
			continue;
		if (files++ == 0)
			snprintf(first, sizeof(first), "%s", de->d_name);
		ours += leveldb_file(de->d_name);
	}
	closedir(d);
	if (files == 0)
		return KV_EMPTY;
	/* Never a new store over this: LevelDB would take the old tables for
	 * garbage and delete them.  Never LevelDB's message either ("CURRENT
	 * does not exist"), which reads as "no store here, make one". */
	return tsr_errf(err, errlen, -EIO, "LevelDB store %s: holds %d file%s "
			"(%s%s) but no CURRENT: %s; refusing to %s (restore CURRENT "
			"from a backup, or move the directory away)", path, files,
			files == 1 ? "" : "s", first, files > 1 ? ", ..." : "",
			ours ? "a damaged LevelDB store, not a new one"
			     : "other data, not a LevelDB store",
			mode == TSR_KV_CREATE ? "create a store over it" : "open it");
}

int
tsr_kv_open(const char *path, enum tsr_kv_mode mode, struct tsr_kv **out,
	    char *err, size_t errlen)
{
	return tsr_kv_open_tuned(path, mode, NULL, out, err, errlen);
}

int
tsr_kv_open_tuned(const char *path, enum tsr_kv_mode mode,
		  const struct tsr_kv_tuning *tuning, struct tsr_kv **out,
		  char *err, size_t errlen)
{
	struct tsr_kv *kv;
	char *lerr = NULL;
	int what;

	/* Decide here, not in LevelDB: with create_if_missing it makes a new
	 * store wherever CURRENT is missing, and without it, it still
	 * creates the directory (and LOCK and LOG) before it finds out. */
	if ((what = look(path, mode, err, errlen)) < 0)
		return what;
	if (what != KV_STORE && mode != TSR_KV_CREATE)
		return tsr_errf(err, errlen, -ENOENT, "LevelDB store %s: cannot "
				"open: %s", path, what == KV_ABSENT ? "it does not exist"
				: "the directory is empty");
	kv = calloc(1, sizeof(*kv));
	if (kv == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	kv->path = strdup(path);
	/* A lookup of a key that is not there (every new object's) would
	 * otherwise read a block of each level-0 table and of every level
	 * below: a Bloom filter of 10 bits a key answers most of them from
	 * memory (about 1% false positives).  Tables written without one
	 * are read as before. */
	kv->bloom = leveldb_filterpolicy_create_bloom(10);
	kv->opts = make_options(what != KV_STORE, tuning, kv->bloom);
	kv->ropts = leveldb_readoptions_create();
	leveldb_readoptions_set_verify_checksums(kv->ropts, 1);
	kv->wsync = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(kv->wsync, 1);
	kv->wnosync = leveldb_writeoptions_create();
	if (kv->path == NULL) {
		destroy(kv);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	kv->db = leveldb_open(kv->opts, path, &lerr);
	if (lerr != NULL) {
		int rc = fail(path, "cannot open", lerr, err, errlen);
		kv->db = NULL;
		destroy(kv);
		return rc;
	}
	*out = kv;
	return 0;
}

void
tsr_kv_close(struct tsr_kv *kv)
{
	if (kv)
		destroy(kv);
}

int
tsr_kv_get(struct tsr_kv *kv, const void *key, size_t klen, void **val,
	   size_t *vlen, char *err, size_t errlen)
{
	char *lerr = NULL;
	char *v = leveldb_get(kv->db, kv->ropts, key, klen, vlen, &lerr);

	if (lerr != NULL)
		return fail(kv->path, "read", lerr, err, errlen);
	if (v == NULL)
		return -ENOENT;
	*val = v;
	return 0;
}

void
tsr_kv_free(void *val)
{
	if (val)
		leveldb_free(val);
}

struct tsr_kv_batch *
tsr_kv_batch_create(void)
{
	struct tsr_kv_batch *b = calloc(1, sizeof(*b));

	if (b)
		b->wb = leveldb_writebatch_create();
	return b;
}

void
tsr_kv_batch_put(struct tsr_kv_batch *b, const void *key, size_t klen,
		 const void *val, size_t vlen)
{
	leveldb_writebatch_put(b->wb, key, klen, val, vlen);
}

void
tsr_kv_batch_del(struct tsr_kv_batch *b, const void *key, size_t klen)
{
	leveldb_writebatch_delete(b->wb, key, klen);
}

void
tsr_kv_batch_clear(struct tsr_kv_batch *b)
{
	leveldb_writebatch_clear(b->wb);
}

void
tsr_kv_batch_destroy(struct tsr_kv_batch *b)
{
	if (b == NULL)
		return;
	leveldb_writebatch_destroy(b->wb);
	free(b);
}

int
tsr_kv_write(struct tsr_kv *kv, struct tsr_kv_batch *b, int sync, char *err,
	     size_t errlen)
{
	char *lerr = NULL;

	leveldb_write(kv->db, sync ? kv->wsync : kv->wnosync, b->wb, &lerr);
	if (lerr != NULL)
		return fail(kv->path, "write", lerr, err, errlen);
	return 0;
}

/* Unsigned-byte order, shorter first on a common prefix: LevelDB's
 * default comparator. */
static int
keycmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

int
tsr_kv_scan(struct tsr_kv *kv, const void *start, size_t slen, const void *end,
	    size_t elen, tsr_kv_scan_cb cb, void *arg, char *err, size_t errlen)
{
	leveldb_iterator_t *it = leveldb_create_iterator(kv->db, kv->ropts);
	char *lerr = NULL;
	int rc = 0;

	if (start != NULL)
		leveldb_iter_seek(it, start, slen);
	else
		leveldb_iter_seek_to_first(it);
	for (; leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		const char *v = leveldb_iter_value(it, &vl);
		if (end != NULL && keycmp(k, kl, end, elen) >= 0)
			break;
		if ((rc = cb(arg, k, kl, v, vl)) != 0)
			break;
	}
	leveldb_iter_get_error(it, &lerr);
	leveldb_iter_destroy(it);
	if (lerr != NULL)
		return fail(kv->path, "scan", lerr, err, errlen);
	return rc;
}

int
tsr_kv_repair(const char *path, char *err, size_t errlen)
{
	leveldb_options_t *o = make_options(0, NULL, NULL);
	char *lerr = NULL;
	struct stat st;

	if (stat(path, &st) != 0) {
		leveldb_options_destroy(o);
		return tsr_errf(err, errlen, -ENOENT, "LevelDB store %s: does not exist",
				path);
	}
	leveldb_repair_db(o, path, &lerr);
	leveldb_options_destroy(o);
	if (lerr != NULL)
		return fail(path, "repair failed", lerr, err, errlen);
	return 0;
}
