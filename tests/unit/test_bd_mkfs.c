/* test_bd_mkfs.c — formatting backend-blockdev images: a new image is
 * preallocated and readable back, an existing Tessera device is never
 * overwritten without force, too-small targets are refused and a refused
 * new image leaves no file behind. */
#include "mkfs.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char root[128], dir[160], img[256], err[512];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/osd.img", dir);
}

static void
teardown(void)
{
	unlink(img);
	rmdir(dir);
}

static struct bd_super
read_back(void)
{
	struct bd_super sb;
	int fd = open(img, O_RDONLY);

	memset(&sb, 0, sizeof(sb)); /* compared whole, padding included */
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(bd_super_read(fd, img, &sb, err, sizeof(err)) == 0, "%s", err);
	close(fd);
	return sb;
}

START_TEST(new_image)
{
	struct bd_mkfs_opts o = { .size = 8 << 20, .block_size = 4096 };
	struct bd_super sb, got;
	struct stat st;

	ck_assert_msg(bd_mkfs(img, &o, &sb, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, 8 << 20);
	/* preallocated, not sparse: a full disk shows at mkfs time */
	ck_assert_int_ge((long long)st.st_blocks * 512, 8 << 20);
	got = read_back();
	ck_assert(memcmp(&sb, &got, sizeof(sb)) == 0);
	ck_assert_uint_eq(got.device_bytes, 8 << 20);
	ck_assert_uint_eq(got.data_offset, BD_DATA_OFFSET);
	ck_assert_uint_eq(got.uuid[6] >> 4, 4);
}
END_TEST

START_TEST(never_overwrite_without_force)
{
	struct bd_mkfs_opts o = { .size = 4 << 20, .block_size = 4096 };
	struct bd_super a, b;

	ck_assert_int_eq(bd_mkfs(img, &o, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(bd_mkfs(img, &o, &b, err, sizeof(err)), -EEXIST);
	ck_assert_contains(err, img);
	ck_assert_contains(err, "already holds a Tessera superblock");
	/* the first format is intact */
	b = read_back();
	ck_assert(memcmp(a.uuid, b.uuid, 16) == 0);
	o.force = 1;
	ck_assert_int_eq(bd_mkfs(img, &o, &b, err, sizeof(err)), 0);
	ck_assert(memcmp(a.uuid, b.uuid, 16) != 0);
}
END_TEST

START_TEST(foreign_file_is_formatted)
{
	struct bd_mkfs_opts o = { .block_size = 65536 };
	int fd = open(img, O_RDWR | O_CREAT, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (4 << 20) + 1000), 0);
	close(fd);
	ck_assert_msg(bd_mkfs(img, &o, NULL, err, sizeof(err)) == 0, "%s", err);
	/* whole blocks only */
	ck_assert_uint_eq(read_back().device_bytes, 4 << 20);
}
END_TEST

START_TEST(too_small_refused)
{
	struct bd_mkfs_opts o = { .size = 1 << 20, .block_size = 4096 };
	struct stat st;

	ck_assert_int_eq(bd_mkfs(img, &o, NULL, err, sizeof(err)), -ENOSPC);
	ck_assert_contains(err, "1048576 bytes is too small (at least 1114112)");
	/* the refused new image is gone */
	ck_assert_int_ne(stat(img, &st), 0);
	char bad[300];
	snprintf(bad, sizeof(bad), "%s/no/such/dir.img", dir);
	ck_assert_int_eq(bd_mkfs(bad, &o, NULL, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, bad);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bd_mkfs");
	TCase *tc = tcase_create("mkfs");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, new_image);
	tcase_add_test(tc, never_overwrite_without_force);
	tcase_add_test(tc, foreign_file_is_formatted);
	tcase_add_test(tc, too_small_refused);
	suite_add_tcase(s, tc);
	/* every test's files live under one root, removed here even when a
	 * test failed before its teardown could run */
	snprintf(root, sizeof(root), "/tmp/tsr-test-bdmkfs-XXXXXX");
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
