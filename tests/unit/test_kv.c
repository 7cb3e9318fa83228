/* test_kv.c — the on-disk key/value store: reads and writes, atomic
 * batches, ordered scans, persistence across reopen, and damaged stores
 * reported with their path instead of crashing. */
#include <tessera/kv.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256];
static char root[128];
static char err[1024];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	ck_assert_int_eq(tu_rm_rf(dir), 0);
}

static struct tsr_kv *
open_db(const char *name, enum tsr_kv_mode create)
{
	char path[400];
	struct tsr_kv *kv = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_msg(tsr_kv_open(path, create, &kv, err, sizeof(err)) == 0, "%s", err);
	return kv;
}

static void
put(struct tsr_kv *kv, const char *k, const char *v, int sync)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();
	tsr_kv_batch_put(b, k, strlen(k), v, strlen(v));
	ck_assert_int_eq(tsr_kv_write(kv, b, sync, err, sizeof(err)), 0);
	tsr_kv_batch_destroy(b);
}

static void
expect(struct tsr_kv *kv, const char *k, const char *v)
{
	void *val;
	size_t vl;

	if (v == NULL) {
		ck_assert_int_eq(tsr_kv_get(kv, k, strlen(k), &val, &vl, err, sizeof(err)),
				 -ENOENT);
		return;
	}
	ck_assert_int_eq(tsr_kv_get(kv, k, strlen(k), &val, &vl, err, sizeof(err)), 0);
	ck_assert_uint_eq(vl, strlen(v));
	ck_assert(memcmp(val, v, vl) == 0);
	tsr_kv_free(val);
}

START_TEST(put_get_delete_reopen)
{
	struct tsr_kv *kv = open_db("db", TSR_KV_CREATE);
	struct tsr_kv_batch *b;

	put(kv, "a", "1", 0);
	put(kv, "b", "two", 1);
	expect(kv, "a", "1");
	expect(kv, "b", "two");
	expect(kv, "c", NULL);
	/* binary keys and values, with NUL bytes */
	b = tsr_kv_batch_create();
	tsr_kv_batch_put(b, "k\0k", 3, "v\0\0v", 4);
	tsr_kv_batch_del(b, "a", 1);
	ck_assert_int_eq(tsr_kv_write(kv, b, 1, err, sizeof(err)), 0);
	tsr_kv_batch_destroy(b);
	void *val;
	size_t vl;
	ck_assert_int_eq(tsr_kv_get(kv, "k\0k", 3, &val, &vl, err, sizeof(err)), 0);
	ck_assert_uint_eq(vl, 4);
	ck_assert(memcmp(val, "v\0\0v", 4) == 0);
	tsr_kv_free(val);
	expect(kv, "a", NULL);
	tsr_kv_close(kv);
	kv = open_db("db", TSR_KV_OPEN);
	expect(kv, "b", "two");
	expect(kv, "a", NULL);
	tsr_kv_close(kv);
}
END_TEST

/* Tables (.ldb) in a store's directory; their bytes into *bytes unless
 * NULL. */
static int
tables(const char *path, long long *bytes)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	if (bytes)
		*bytes = 0;
	while ((de = readdir(d)) != NULL) {
		const char *dot = strrchr(de->d_name, '.');
		char f[700];
		struct stat st;

		if (dot == NULL || strcmp(dot, ".ldb") != 0)
			continue;
		n++;
		if (bytes == NULL)
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		ck_assert_int_eq(stat(f, &st), 0);
		*bytes += st.st_size;
	}
	closedir(d);
	return n;
}

#define VAL_LEN 4096

/* Values from..to-1 into kv, one batch each: VAL_LEN bytes of (uint8_t)i
 * under the key "%06d" of i. */
static void
put_values(struct tsr_kv *kv, int from, int to)
{
	static char v[VAL_LEN];
	char k[16];

	for (int i = from; i < to; i++) {
		struct tsr_kv_batch *b = tsr_kv_batch_create();
		memset(v, i, sizeof(v));
		snprintf(k, sizeof(k), "%06d", i);
		tsr_kv_batch_put(b, k, strlen(k), v, sizeof(v));
		ck_assert_int_eq(tsr_kv_write(kv, b, 0, err, sizeof(err)), 0);
		tsr_kv_batch_destroy(b);
	}
}

/* 3 MiB of 4 KiB values into a store tuned to 1 MiB of write buffer,
 * and into one with the defaults (4 MiB): the first has written tables
 * out by the end, the second not; both read everything back, also
 * after a reopen. */
START_TEST(write_buffer_tuned)
{
	static const struct tsr_kv_tuning small = { .write_buffer = 1u << 20 };
	int ntables[2];

	for (int t = 0; t < 2; t++) {
		char path[400], k[16];
		struct tsr_kv *kv = NULL;
		void *val;
		size_t vl;

		snprintf(path, sizeof(path), "%s/db%d", dir, t);
		ck_assert_msg(tsr_kv_open_tuned(path, TSR_KV_CREATE, t ? NULL : &small,
						&kv, err, sizeof(err)) == 0, "%s", err);
		put_values(kv, 0, 768);
		/* the write-out runs in the background: a bounded wait */
		for (int w = 0; w < 100 && t == 0 && tables(path, NULL) == 0; w++)
			usleep(20000);
		ntables[t] = tables(path, NULL);
		for (int pass = 0; pass < 2; pass++) {
			for (int i = 0; i < 768; i += 97) {
				snprintf(k, sizeof(k), "%06d", i);
				ck_assert_int_eq(tsr_kv_get(kv, k, strlen(k), &val, &vl, err,
							    sizeof(err)), 0);
				ck_assert_uint_eq(vl, VAL_LEN);
				ck_assert_uint_eq(((uint8_t *)val)[vl - 1], (uint8_t)i);
				tsr_kv_free(val);
			}
			tsr_kv_close(kv);
			kv = NULL;
			if (pass == 0)
				ck_assert_msg(tsr_kv_open_tuned(path, TSR_KV_OPEN, &small, &kv,
								err, sizeof(err)) == 0, "%s", err);
		}
	}
	ck_assert_msg(ntables[0] > 0, "1 MiB write buffer: no table written "
		      "after 3 MiB of changes");
	ck_assert_msg(ntables[1] == 0, "default write buffer: %d tables written "
		      "after 3 MiB of changes (expected none below 4 MiB)", ntables[1]);
}
END_TEST

/* 3 MiB of 4 KiB values of one repeated byte each (which compress to
 * almost nothing) through a 1 MiB write buffer, with LevelDB's Snappy
 * and uncompressed: the uncompressed tables hold the bytes as they are,
 * the compressed ones a small part of them (LevelDB built with Snappy,
 * as Debian's is).  Then each store is opened
 * with the other setting, written again and read back whole: tables of
 * both kinds read alike. */
START_TEST(tables_compressed_or_not)
{
	static const struct tsr_kv_tuning set[2] = {
		{ .write_buffer = 1u << 20 },
		{ .write_buffer = 1u << 20, .uncompressed = 1 },
	};
	long long bytes[2];

	for (int t = 0; t < 2; t++) {
		char path[400], k[16];
		struct tsr_kv *kv = NULL;
		void *val;
		size_t vl;

		snprintf(path, sizeof(path), "%s/cz%d", dir, t);
		for (int round = 0; round < 2; round++) {
			ck_assert_msg(tsr_kv_open_tuned(path, round ? TSR_KV_OPEN : TSR_KV_CREATE,
							&set[t ^ round], &kv, err,
							sizeof(err)) == 0, "%s", err);
			put_values(kv, round * 768, (round + 1) * 768);
			/* measured after close, which waits for a table being
			 * written (not for one only scheduled): 768 values
			 * through a 1 MiB buffer fill three, so at least two
			 * tables are out */
			tsr_kv_close(kv);
			kv = NULL;
			if (round == 0)
				tables(path, &bytes[t]);
		}
		ck_assert_msg(tsr_kv_open_tuned(path, TSR_KV_OPEN, &set[t], &kv, err,
						sizeof(err)) == 0, "%s", err);
		for (int i = 0; i < 2 * 768; i += 37) {
			snprintf(k, sizeof(k), "%06d", i);
			ck_assert_int_eq(tsr_kv_get(kv, k, strlen(k), &val, &vl, err,
						    sizeof(err)), 0);
			ck_assert_uint_eq(vl, VAL_LEN);
			ck_assert_uint_eq(((uint8_t *)val)[0], (uint8_t)i);
			ck_assert_uint_eq(((uint8_t *)val)[vl - 1], (uint8_t)i);
			tsr_kv_free(val);
		}
		tsr_kv_close(kv);
	}
	ck_assert_msg(bytes[0] > 0 && bytes[1] >= 4096LL * 256,
		      "tables after 3 MiB: %lld bytes compressed, %lld uncompressed",
		      bytes[0], bytes[1]);
	ck_assert_msg(bytes[0] * 8 < bytes[1], "compressed tables %lld bytes, "
		      "uncompressed %lld: expected far fewer compressed", bytes[0],
		      bytes[1]);
}
END_TEST

START_TEST(batch_is_all_or_nothing_to_readers)
{
	struct tsr_kv *kv = open_db("db", TSR_KV_CREATE);
	struct tsr_kv_batch *b = tsr_kv_batch_create();

	tsr_kv_batch_put(b, "x", 1, "1", 1);
	tsr_kv_batch_put(b, "y", 1, "2", 1);
	/* nothing is visible before the write */
	expect(kv, "x", NULL);
	ck_assert_int_eq(tsr_kv_write(kv, b, 1, err, sizeof(err)), 0);
	expect(kv, "x", "1");
	expect(kv, "y", "2");
	/* a cleared batch writes nothing */
	tsr_kv_batch_clear(b);
	tsr_kv_batch_put(b, "z", 1, "3", 1);
	tsr_kv_batch_clear(b);
	ck_assert_int_eq(tsr_kv_write(kv, b, 0, err, sizeof(err)), 0);
	expect(kv, "z", NULL);
	tsr_kv_batch_destroy(b);
	tsr_kv_close(kv);
}
END_TEST

struct seen {
	char keys[16][8];
	int n;
	int stop_at;
};

static int
collect(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct seen *s = arg;

	(void)v;
	(void)vl;
	ck_assert_uint_lt(kl, 8);
	memcpy(s->keys[s->n], k, kl);
	s->keys[s->n][kl] = '\0';
	s->n++;
	return s->n == s->stop_at ? 42 : 0;
}

START_TEST(scan_ranges_in_byte_order)
{
	struct tsr_kv *kv = open_db("db", TSR_KV_CREATE);
	const char *keys[] = { "b", "a", "ab", "c", "\xff", "B" };
	struct seen s = { .n = 0 };

	for (size_t i = 0; i < 6; i++)
		put(kv, keys[i], "v", 0);
	ck_assert_int_eq(tsr_kv_scan(kv, NULL, 0, NULL, 0, collect, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 6);
	const char *order[] = { "B", "a", "ab", "b", "c", "\xff" };
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(s.keys[i], order[i]);
	/* [a, b): a prefix comes before its extensions, the end is excluded */
	s.n = 0;
	ck_assert_int_eq(tsr_kv_scan(kv, "a", 1, "b", 1, collect, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "a");
	ck_assert_str_eq(s.keys[1], "ab");
	/* early stop returns the callback's value */
	s.n = 0;
	s.stop_at = 3;
	ck_assert_int_eq(tsr_kv_scan(kv, NULL, 0, NULL, 0, collect, &s, err, sizeof(err)), 42);
	ck_assert_int_eq(s.n, 3);
	tsr_kv_close(kv);
}
END_TEST

START_TEST(missing_store_named)
{
	char path[400];
	struct tsr_kv *kv = NULL;

	snprintf(path, sizeof(path), "%s/nope", dir);
	ck_assert_int_eq(tsr_kv_open(path, TSR_KV_OPEN, &kv, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(kv);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "cannot open");
	ck_assert_int_eq(tsr_kv_repair(path, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, path);
}
END_TEST

/* Overwrite every file of the store whose name starts with prefix with
 * garbage (keeping its size). */
static int
damage(const char *db, const char *prefix)
{
	char path[1024];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(db);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", db, de->d_name);
		int fd = open(path, O_RDWR);
		ck_assert_int_ge(fd, 0);
		off_t size = lseek(fd, 0, SEEK_END);
		for (off_t o = 0; o < size; o += 7)
			ck_assert_int_eq(pwrite(fd, "\x5a", 1, o), 1);
		close(fd);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(damaged_store_reported)
{
	char path[400];
	struct tsr_kv *kv = open_db("db", TSR_KV_CREATE);

	for (int i = 0; i < 200; i++) {
		char k[16];
		snprintf(k, sizeof(k), "key%03d", i);
		put(kv, k, "some value that is long enough to matter", 1);
	}
	tsr_kv_close(kv);
	snprintf(path, sizeof(path), "%s/db", dir);
	/* the manifest names the tables: damage it, and opening fails with
	 * the path and LevelDB's reason, without a crash */
	ck_assert_int_ge(damage(path, "MANIFEST"), 1);
	kv = NULL;
	int rc = tsr_kv_open(path, TSR_KV_OPEN, &kv, err, sizeof(err));
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_null(kv);
	ck_assert_contains(err, path);
	/* repair rebuilds a manifest from what it can read */
	ck_assert_msg(tsr_kv_repair(path, err, sizeof(err)) == 0, "%s", err);
	kv = open_db("db", TSR_KV_OPEN);
	expect(kv, "key000", "some value that is long enough to matter");
	tsr_kv_close(kv);
}
END_TEST

/* The names and sizes of the files in path, sorted, into out. */
static void
listing(const char *path, char *out, size_t outlen)
{
	char names[64][300];
	struct dirent *de;
	int n = 0;
	size_t used = 0;
	DIR *d = opendir(path);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL && n < 64) {
		char p[1024];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		ck_assert_int_eq(stat(p, &st), 0);
		snprintf(names[n++], sizeof(names[0]), "%s:%lld", de->d_name,
			 (long long)st.st_size);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]),
	      (int (*)(const void *, const void *))strcmp);
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, used < outlen ? outlen - used : 0,
					 "%s ", names[i]);
	ck_assert_uint_lt(used, outlen);
}

/* Bug: a store whose CURRENT is gone was taken for a new one: LevelDB,
 * asked to create a missing store, made a fresh one there and deleted
 * the old tables.  Now it is refused as damaged, in either mode, with the
 * path and what is missing, and its files stay as they were. */
START_TEST(store_missing_current_refused)
{
	char path[400], cur[450], before[8192], after[8192];
	struct tsr_kv *kv = open_db("db", TSR_KV_CREATE);

	for (int i = 0; i < 200; i++) {
		char k[16];
		snprintf(k, sizeof(k), "key%03d", i);
		put(kv, k, "a value long enough to reach a table file", 1);
	}
	tsr_kv_close(kv);
	/* a second open makes the log a table, as a restarted daemon's does */
	kv = open_db("db", TSR_KV_OPEN);
	tsr_kv_close(kv);
	snprintf(path, sizeof(path), "%s/db", dir);
	snprintf(cur, sizeof(cur), "%s/CURRENT", path);
	ck_assert_int_eq(unlink(cur), 0);
	listing(path, before, sizeof(before));
	for (int mode = TSR_KV_OPEN; mode <= TSR_KV_CREATE; mode++) {
		kv = NULL;
		err[0] = '\0';
		ck_assert_int_eq(tsr_kv_open(path, (enum tsr_kv_mode)mode, &kv, err,
					     sizeof(err)), -EIO);
		ck_assert_ptr_null(kv);
		ck_assert_contains(err, path);
		ck_assert_contains(err, "no CURRENT");
		ck_assert_contains(err, "damaged");
		listing(path, after, sizeof(after));
		ck_assert_str_eq(after, before);
	}
	ck_assert_contains(err, "refusing to create");
	/* put CURRENT back (it names the newest manifest): all is there */
	DIR *d = opendir(path);
	struct dirent *de;
	char manifest[300] = "";
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "MANIFEST-", 9) == 0 &&
		    strcmp(de->d_name, manifest) > 0)
			snprintf(manifest, sizeof(manifest), "%s", de->d_name);
	strcat(manifest, "\n");
	closedir(d);
	ck_assert_str_ne(manifest, "\n");
	int fd = open(cur, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, manifest, strlen(manifest)), (ssize_t)strlen(manifest));
	close(fd);
	kv = open_db("db", TSR_KV_OPEN);
	expect(kv, "key000", "a value long enough to reach a table file");
	expect(kv, "key199", "a value long enough to reach a table file");
	tsr_kv_close(kv);
}
END_TEST

/* The same rule: a store is made in an absent or empty directory (and
 * one holding only what a failed open leaves, LOCK and LOG), never in one
 * that holds something else; and opening without create makes nothing. */
START_TEST(store_created_only_where_nothing_is)
{
	char path[400], f[450], before[8192], after[8192];
	struct tsr_kv *kv = NULL;
	struct stat st;
	int fd;

	/* absent, without create: nothing is made */
	snprintf(path, sizeof(path), "%s/absent", dir);
	ck_assert_int_eq(tsr_kv_open(path, TSR_KV_OPEN, &kv, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(stat(path, &st), -1);
	/* an empty directory: -ENOENT without create, a store with it */
	snprintf(path, sizeof(path), "%s/empty", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(tsr_kv_open(path, TSR_KV_OPEN, &kv, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, "empty");
	kv = open_db("empty", TSR_KV_CREATE);
	put(kv, "k", "v", 1);
	tsr_kv_close(kv);
	kv = open_db("empty", TSR_KV_OPEN);
	expect(kv, "k", "v");
	tsr_kv_close(kv);
	/* LevelDB's LOCK and LOG alone hold nothing: created over */
	snprintf(path, sizeof(path), "%s/leftovers", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(f, sizeof(f), "%s/%s", path, i ? "LOG" : "LOCK");
		fd = open(f, O_WRONLY | O_CREAT, 0644);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	kv = open_db("leftovers", TSR_KV_CREATE);
	tsr_kv_close(kv);
	/* a directory of other files: refused in both modes, left alone */
	snprintf(path, sizeof(path), "%s/other", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(f, sizeof(f), "%s/notes.txt", path);
	fd = open(f, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "keep", 4), 4);
	close(fd);
	listing(path, before, sizeof(before));
	for (int mode = TSR_KV_OPEN; mode <= TSR_KV_CREATE; mode++) {
		kv = NULL;
		ck_assert_int_eq(tsr_kv_open(path, (enum tsr_kv_mode)mode, &kv, err,
					     sizeof(err)), -EIO);
		ck_assert_ptr_null(kv);
		ck_assert_contains(err, path);
		ck_assert_contains(err, "no CURRENT");
		ck_assert_contains(err, "not a LevelDB store");
		listing(path, after, sizeof(after));
		ck_assert_str_eq(after, before);
	}
	/* a file where the directory should be */
	ck_assert_int_eq(tsr_kv_open(f, TSR_KV_CREATE, &kv, err, sizeof(err)), -ENOTDIR);
	ck_assert_contains(err, f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("kv");
	TCase *tc = tcase_create("kv");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, put_get_delete_reopen);
	tcase_add_test(tc, write_buffer_tuned);
	tcase_add_test(tc, tables_compressed_or_not);
	tcase_add_test(tc, batch_is_all_or_nothing_to_readers);
	tcase_add_test(tc, scan_ranges_in_byte_order);
	tcase_add_test(tc, missing_store_named);
	tcase_add_test(tc, damaged_store_reported);
	tcase_add_test(tc, store_missing_current_refused);
	tcase_add_test(tc, store_created_only_where_nothing_is);
	suite_add_tcase(s, tc);
	/* every test's files live under one root, removed here even when a
	 * test failed before its teardown could run */
	snprintf(root, sizeof(root), "/tmp/tsr-test-kv-XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rm_rf(root);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
