/* test_bd_super.c — backend-blockdev's superblock: round trip, and each
 * way a device can be wrong (foreign, damaged, newer, shrunk, tiny)
 * reported as that, naming the path. */
#include "super.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char root[128];
static char path[192];
static int fd = -1;
static char err[512];

static void
setup(void)
{
	snprintf(path, sizeof(path), "%s/dev-XXXXXX", root);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
}

static void
teardown(void)
{
	close(fd);
	unlink(path);
}

static struct bd_super
sample(void)
{
	struct bd_super sb = { .block_size = 4096, .device_bytes = 1 << 20,
			       .data_offset = 65536, .created_ns = 1234567890123ull };
	for (int i = 0; i < 16; i++)
		sb.uuid[i] = (uint8_t)(i * 17 + 3);
	return sb;
}

START_TEST(round_trip)
{
	struct bd_super sb = sample(), got;
	uint64_t size;

	ck_assert_int_eq(bd_device_size(fd, path, &size, err, sizeof(err)), 0);
	ck_assert_uint_eq(size, 1 << 20);
	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), 0);
	memset(&got, 0, sizeof(got));
	ck_assert_msg(bd_super_read(fd, path, &got, err, sizeof(err)) == 0, "%s", err);
	ck_assert(memcmp(&sb, &got, sizeof(sb)) == 0);
	/* a device that grew is fine */
	ck_assert_int_eq(ftruncate(fd, 2 << 20), 0);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), 0);
}
END_TEST

START_TEST(foreign_device)
{
	struct bd_super got;

	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "not a Tessera block device (magic 0000000000000000");
}
END_TEST

START_TEST(damaged_superblock)
{
	struct bd_super sb = sample(), got;

	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), 0);
	/* flip one bit of the uuid */
	uint8_t b;
	ck_assert_int_eq(pread(fd, &b, 1, 20), 1);
	b ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &b, 1, 20), 1);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EIO);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "superblock checksum mismatch");
}
END_TEST

/* Bug: one flipped bit in the magic made the device "not a Tessera block
 * device ... run mkfs first", advice that erases it.  A magic near ours,
 * or any magic over a superblock that is otherwise ours, is damage; only
 * a block with nothing of ours is foreign. */
START_TEST(flipped_magic_not_sent_to_mkfs)
{
	struct bd_super sb = sample(), got;
	uint8_t block[BD_SUPER_SIZE], b;

	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), 0);
	ck_assert_int_eq(pread(fd, block, sizeof(block), 0), (ssize_t)sizeof(block));
	/* each bit of the magic in turn */
	for (int bit = 0; bit < 64; bit++) {
		b = block[6 + bit / 8] ^ (uint8_t)(1u << (bit % 8));
		ck_assert_int_eq(pwrite(fd, &b, 1, 6 + bit / 8), 1);
		err[0] = '\0';
		ck_assert_msg(bd_super_read(fd, path, &got, err, sizeof(err)) == -EIO,
			      "magic bit %d flipped: %s", bit, err);
		ck_assert_contains(err, path);
		ck_assert_contains(err, "damaged");
		ck_assert_contains(err, "differs from ours in 1 bit,");
		ck_assert_msg(strstr(err, "run mkfs") == NULL, "bit %d: %s", bit, err);
		ck_assert_int_eq(pwrite(fd, block + 6 + bit / 8, 1, 6 + bit / 8), 1);
	}
	/* the whole magic overwritten, the rest ours: still damage */
	ck_assert_int_eq(pwrite(fd, "\x58\x46\x53\x42\x00\x00\x10\x00", 8, 6), 8);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EIO);
	ck_assert_contains(err, "checksum holds");
	ck_assert_msg(strstr(err, "run mkfs") == NULL, "%s", err);
	/* ... and with the checksum gone too, the layout still says ours */
	ck_assert_int_eq(pwrite(fd, "\0\0\0\0", 4, 6 + 52), 4);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EIO);
	ck_assert_contains(err, "laid out as ours");
	/* nothing of ours left: foreign, and mkfs is the advice */
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)(i * 37u + 11u);
	ck_assert_int_eq(pwrite(fd, block, sizeof(block), 0), (ssize_t)sizeof(block));
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "not a Tessera block device");
	ck_assert_contains(err, "run mkfs");
}
END_TEST

START_TEST(newer_version)
{
	struct bd_super sb = sample(), got;
	uint8_t v[2] = { 3, 2 }; /* version 3, compat 2: we read only 1 */

	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), 0);
	ck_assert_int_eq(pwrite(fd, v, 2, 0), 2);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EOPNOTSUPP);
	ck_assert_contains(err, "superblock written by a newer Tessera (format version 3)");
}
END_TEST

START_TEST(shrunk_device)
{
	struct bd_super sb = sample(), got;

	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), 0);
	ck_assert_int_eq(ftruncate(fd, 512 << 10), 0);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -ENOSPC);
	ck_assert_contains(err, "the device is 524288 bytes, smaller than the 1048576 it was formatted with");
}
END_TEST

START_TEST(tiny_and_invalid)
{
	struct bd_super sb = sample(), got;

	ck_assert_int_eq(ftruncate(fd, 100), 0);
	ck_assert_int_eq(bd_super_read(fd, path, &got, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "100 bytes: too small to hold a superblock");
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	sb.block_size = 3000;
	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "refusing to write a superblock with block size 3000");
	sb = sample();
	sb.data_offset = 4096 + 512; /* not block aligned */
	ck_assert_int_eq(bd_super_write(fd, path, &sb, err, sizeof(err)), -EINVAL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bd_super");
	TCase *tc = tcase_create("super");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, foreign_device);
	tcase_add_test(tc, damaged_superblock);
	tcase_add_test(tc, flipped_magic_not_sent_to_mkfs);
	tcase_add_test(tc, newer_version);
	tcase_add_test(tc, shrunk_device);
	tcase_add_test(tc, tiny_and_invalid);
	suite_add_tcase(s, tc);
	/* every test's files live under one root, removed here even when a
	 * test failed before its teardown could run */
	snprintf(root, sizeof(root), "/tmp/tsr-test-bdsuper-XXXXXX");
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
