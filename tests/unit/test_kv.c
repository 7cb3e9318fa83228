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
open_db(const char *name, int create)
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
	struct tsr_kv *kv = open_db("db", 1);
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
	kv = open_db("db", 0);
	expect(kv, "b", "two");
	expect(kv, "a", NULL);
	tsr_kv_close(kv);
}
END_TEST

START_TEST(batch_is_all_or_nothing_to_readers)
{
	struct tsr_kv *kv = open_db("db", 1);
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
	struct tsr_kv *kv = open_db("db", 1);
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
	ck_assert_int_eq(tsr_kv_open(path, 0, &kv, err, sizeof(err)), -ENOENT);
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
	struct tsr_kv *kv = open_db("db", 1);

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
	int rc = tsr_kv_open(path, 0, &kv, err, sizeof(err));
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_null(kv);
	ck_assert_contains(err, path);
	/* repair rebuilds a manifest from what it can read */
	ck_assert_msg(tsr_kv_repair(path, err, sizeof(err)) == 0, "%s", err);
	kv = open_db("db", 0);
	expect(kv, "key000", "some value that is long enough to matter");
	tsr_kv_close(kv);
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
	tcase_add_test(tc, batch_is_all_or_nothing_to_readers);
	tcase_add_test(tc, scan_ranges_in_byte_order);
	tcase_add_test(tc, missing_store_named);
	tcase_add_test(tc, damaged_store_reported);
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
