/* test_backend_blockdev.c — backend-blockdev against bad input, and its
 * fsck: images mkfs must refuse, damaged, foreign, newer and shrunk
 * superblocks, missing, foreign and damaged metadata stores, a full
 * device, flipped bits in object data (raw and zstd), copy-on-write
 * overwrites that must not leak space, chunk maps that claim a block
 * twice or past the end, missing, foreign and damaged journals, crash
 * images replayed from the journal, and option errors; and the cases
 * every backend shares (tests/backend/harness.c: damaged LevelDB, the
 * commit order, ...).
 *
 * The plugin comes from BACKEND_BLOCKDEV_PLUGIN (the path of blockdev.so)
 * and is instantiated through the core registry, as the daemons do;
 * without it the suite fails.  Every store is an image file,
 * TEST/NAME/dev.img, with its metadata in TEST/NAME/dev.img.meta, under
 * one scratch root that main() removes (BDEV_KEEP=1 keeps it for a look;
 * BDEV_VERBOSE=1 passes the backend's log lines on to stderr).
 *
 * Every instance gets size=64M, journal_size=4M and min_free=0: the
 * default journal (128M) is written full of zeros at every mkfs, and the
 * engine's default min_free (64M, a reserve meant for a file system
 * shared with others) is the whole of a 64 MiB device, which then holds
 * nothing.  A 4M journal also fills, and checkpoints, within a test.
 *
 * What every test holds the backend to: a failure is a negative errno and
 * a message naming the path and what is wrong; damage is reported (an
 * error, -EIO), never returned as data; nothing a commit callback
 * acknowledged is lost unless the damage hit that very data; a failed
 * mount changes nothing, so the store mounts again once the damage is
 * undone; and space is exact: what statfs offers can be written, and what
 * is overwritten or removed comes back.
 */
#include "backend/harness.h"

#include <tessera/backend.h>
#include <tessera/crc32c.h>
#include <tessera/kv.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The device layout (super.h, mkfs.h): a 4 KiB superblock, data in 4 KiB
 * blocks from 1 MiB on. */
#define SB_SIZE 4096u
#define BLK 4096u
#define DATA_OFF (1u << 20)
#define DEV_SIZE (64u << 20)
#define DEV_BLOCKS ((DEV_SIZE - DATA_OFF) / BLK)

/* A store is TEST/NAME/dev.img with its metadata in dev.img.meta. */
static int
bd_layout(struct store *s, const char *name)
{
	snprintf(s->dir, sizeof(s->dir), "%s/%s", tdir, name);
	snprintf(s->path, sizeof(s->path), "%s/dev.img", s->dir);
	snprintf(s->mpath, sizeof(s->mpath), "%s.meta", s->path);
	snprintf(s->jpath, sizeof(s->jpath), "%s/journal", s->mpath);
	return mkdir(s->dir, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

static const struct tsr_srcval bd_defaults[] = {
	OPT("size", "64M"), OPT("journal_size", "4M"), OPT("min_free", "0"),
};

/* ---- Files ----------------------------------------------------------------*/

static uint32_t
le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static uint64_t
le64(const uint8_t *b)
{
	return le32(b) | (uint64_t)le32(b + 4) << 32;
}

static void
put_le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void
put_le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* How many data blocks of image hold want (BLK bytes); *at gets the
 * device offset of the last. */
static int
count_block(const char *image, const void *want, uint64_t *at)
{
	enum { RUN = 256 };
	uint8_t *buf = malloc((size_t)RUN * BLK);
	int fd = open(image, O_RDONLY | O_CLOEXEC);
	uint64_t found = 0, off = DATA_OFF;
	int hits = 0;
	ssize_t got;

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(fd >= 0, "%s: %s", image, strerror(errno));
	while ((got = pread(fd, buf, (size_t)RUN * BLK, (off_t)off)) > 0) {
		for (ssize_t i = 0; i + (ssize_t)BLK <= got; i += BLK)
			if (memcmp(buf + i, want, BLK) == 0) {
				found = off + (uint64_t)i;
				hits++;
			}
		off += (uint64_t)got;
	}
	close(fd);
	free(buf);
	*at = found;
	return hits;
}

/* The device offset of the one data block of image holding want (BLK
 * bytes); asserts there is exactly one. */
static uint64_t
find_block(const char *image, const void *want)
{
	uint64_t at;
	int hits = count_block(image, want, &at);

	ck_assert_msg(hits == 1, "%s: the block looked for is stored %d times, "
		      "want once", image, hits);
	return at;
}

/* ---- mkfs -----------------------------------------------------------------*/

START_TEST(mkfs_refuses)
{
	static const struct tsr_srcval nosize[] = { OPT("size", "0") };
	static const struct tsr_srcval force[] = { OPT("size", "0"),
						   OPT("force", "true") };
	static const struct tsr_srcval tiny[] = { OPT("size", "512K") };
	enum { JUNK = 2 << 20 };
	struct store s;
	struct stat st;
	char p[PATH_MAX];
	uint8_t *junk = malloc(JUNK), *back = malloc(JUNK);

	ck_assert(junk && back);
	fill(junk, JUNK, 77);

	/* no image and no size to create one with */
	st_new(&s, "nosize", nosize, 1);
	expect_mkfs_fails(&s, -ENOENT, s.path, "size");
	ck_assert_int_eq(access(s.path, F_OK), -1);
	ck_assert_int_eq(access(s.mpath, F_OK), -1);
	st_free(&s);

	/* a directory where the image should be */
	st_new(&s, "dir", NULL, 0);
	ck_assert_int_eq(mkdir(s.path, 0700), 0);
	expect_mkfs_fails(&s, -EEXIST, s.path, "directory");
	ck_assert_int_eq(dir_count(s.path), 0);
	ck_assert_int_eq(access(s.mpath, F_OK), -1);
	st_free(&s);

	/* a file holding other data: refused, and left as it was ... */
	st_new(&s, "junk", nosize, 1);
	file_put(s.path, junk, JUNK);
	expect_mkfs_fails(&s, -EEXIST, s.path, "force");
	ck_assert_int_eq(file_size(s.path), JUNK);
	file_pread(s.path, 0, back, JUNK);
	ck_assert_msg(memcmp(back, junk, JUNK) == 0, "a refused mkfs changed %s",
		      s.path);
	ck_assert_int_eq(access(s.mpath, F_OK), -1);
	st_free(&s);
	/* ... unless forced: then it is a store of the file's size */
	st_new(&s, "junk", force, 2);
	st_mkfs_ok(&s);
	ck_assert_int_eq(file_size(s.path), JUNK);
	st_mount_ok(&s);
	ck_assert_int_eq(st_avail(&s), (uint64_t)(JUNK - DATA_OFF));
	st_mkcoll(&s);
	{
		struct tsr_txn_op op = op_write("x", 0, junk, 65536);
		txn_ok(&s, &op, 1);
		expect_data(&s, "x", junk, 65536);
	}
	st_umount_ok(&s);
	st_free(&s);

	/* a file of zeros is no one's data: formatted as it is */
	st_new(&s, "zeros", nosize, 1);
	memset(junk, 0, JUNK);
	file_put(s.path, junk, JUNK);
	st_mkfs_ok(&s);
	ck_assert_int_eq(file_size(s.path), JUNK);
	st_free(&s);

	/* a store: refused, forced or not, mounted or not; its data stays */
	pop_store(&s, "store");
	expect_mkfs_fails(&s, -EEXIST, s.path, NULL);
	st_mount_ok(&s);
	ck_assert_int_eq(st_mkfs(&s), -EBUSY);
	ck_assert_contains(s.err, s.path);
	pop_verify(&s);
	st_umount_ok(&s);
	st_free(&s);
	{
		static const struct tsr_srcval f[] = { OPT("force", "true") };
		st_new(&s, "store", f, 1);
		/* force overwrites the device, but not a metadata store */
		expect_mkfs_fails(&s, -EEXIST, s.mpath, "not empty");
		pop_remount_verify(&s);
		st_free(&s);
	}

	/* a metadata directory that holds something */
	st_new(&s, "metajunk", NULL, 0);
	ck_assert_int_eq(mkdir(s.mpath, 0700), 0);
	path_join(p, sizeof(p), s.mpath, "notes.txt");
	file_put(p, "hello\n", 6);
	expect_mkfs_fails(&s, -EEXIST, s.mpath, "not empty");
	ck_assert_int_eq(access(s.path, F_OK), -1); /* no image made */
	ck_assert_int_eq(dir_count(s.mpath), 1);
	st_free(&s);
	/* or is a file */
	st_new(&s, "metafile", NULL, 0);
	file_put(s.mpath, "x", 1);
	expect_mkfs_fails(&s, -EEXIST, s.mpath, NULL);
	ck_assert_int_eq(access(s.path, F_OK), -1);
	ck_assert_int_eq(file_size(s.mpath), 1);
	st_free(&s);
	/* an empty one is fine */
	st_new(&s, "metaempty", NULL, 0);
	ck_assert_int_eq(mkdir(s.mpath, 0700), 0);
	st_mkfs_ok(&s);
	st_mount_ok(&s);
	st_umount_ok(&s);
	st_free(&s);

	/* too small to hold a store: refused, and no image left behind */
	st_new(&s, "tiny", tiny, 1);
	expect_mkfs_fails(&s, -ENOSPC, s.path, "too small");
	ck_assert_int_eq(access(s.path, F_OK), -1);
	ck_assert_int_eq(access(s.mpath, F_OK), -1);
	st_free(&s);
	/* an existing small file: refused, and kept */
	st_new(&s, "tinyfile", nosize, 1);
	memset(junk, 0, 100 << 10);
	file_put(s.path, junk, 100 << 10);
	expect_mkfs_fails(&s, -ENOSPC, s.path, "too small");
	ck_assert_int_eq(stat(s.path, &st), 0);
	ck_assert_int_eq(st.st_size, 100 << 10);
	ck_assert_int_eq(access(s.mpath, F_OK), -1);
	st_free(&s);

	free(junk);
	free(back);
}
END_TEST

START_TEST(mkfs_zero_fill)
{
	static const struct tsr_srcval zf[] = { OPT("zero_fill", "true") };
	struct store s;
	struct stat st;
	uint8_t data[8192];
	struct tsr_txn_op op;

	st_new(&s, "store", zf, 1);
	st_mkfs_ok(&s);
	ck_assert_int_eq(stat(s.path, &st), 0);
	ck_assert_int_eq(st.st_size, DEV_SIZE);
	ck_assert_msg((uint64_t)st.st_blocks * 512 >= DEV_SIZE,
		      "zero_fill: %s has %" PRIu64 " bytes allocated, want %u",
		      s.path, (uint64_t)st.st_blocks * 512, DEV_SIZE);
	st_mount_ok(&s);
	ck_assert_int_eq(st_avail(&s), (uint64_t)DEV_BLOCKS * BLK);
	st_mkcoll(&s);
	fill(data, sizeof(data), 5);
	op = op_write("x", 0, data, sizeof(data));
	txn_ok(&s, &op, 1);
	expect_data(&s, "x", data, sizeof(data));
	st_umount_ok(&s);
	st_mount_ok(&s);
	expect_data(&s, "x", data, sizeof(data));
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* mkfs.h: zero_fill writes zeros over the image "so later writes find
 * allocated, written blocks", and mkfs preallocates an image "so a full
 * device is found at mkfs time, not at the first write".  Freeing blocks
 * (an overwrite, copy on write) must not give that allocation back to the
 * host file system. */
START_TEST(zero_fill_survives_frees)
{
	static const struct tsr_srcval zf[] = { OPT("zero_fill", "true") };
	struct store s;
	struct stat st;
	static uint8_t data[1 << 20];
	struct tsr_txn_op op;

	st_fresh(&s, "store", zf, 1);
	fill(data, sizeof(data), 5);
	op = op_write("x", 0, data, sizeof(data));
	txn_ok(&s, &op, 1);
	fill(data, sizeof(data), 6);
	txn_ok(&s, &op, 1); /* the first copy's 256 blocks are freed */
	expect_data(&s, "x", data, sizeof(data));
	st_umount_ok(&s);
	ck_assert_int_eq(stat(s.path, &st), 0);
	fprintf(stderr, "zero_fill_survives_frees: %s: %" PRIu64 " of %u bytes "
		"allocated after 1 MiB was freed\n", s.path,
		(uint64_t)st.st_blocks * 512, DEV_SIZE);
	ck_assert_msg((uint64_t)st.st_blocks * 512 >= DEV_SIZE,
		      "zero_fill image %s: only %" PRIu64 " of %u bytes allocated "
		      "after blocks were freed (punched out by the discard?)",
		      s.path, (uint64_t)st.st_blocks * 512, DEV_SIZE);
	st_free(&s);
}
END_TEST

/* Whether the file system under tdir punches holes (a discard of an image
 * file is one). */
static int
punch_works(void)
{
	char path[PATH_MAX];
	uint8_t b[2 * BLK];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/punch-probe", tdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	memset(b, 1, sizeof(b));
	ck_assert_int_eq(pwrite(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	ok = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, BLK) == 0;
	close(fd);
	unlink(path);
	return ok;
}

static uint64_t
allocated(const char *path)
{
	struct stat st;

	ck_assert_msg(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return (uint64_t)st.st_blocks * 512;
}

/* Blocks freed before a checkpoint are discarded (on a sparse image, holes
 * punched) by a thread of their own, off the seal and the write lock, and
 * only then reused: a discard after the reuse would wipe the new data.
 * The checkpoint here is the seal's, when small writes fill the 1 MiB
 * journal; once the holes are punched, a 16 MiB object written again (on
 * the freed blocks: nothing else is free enough) reads back, before and
 * after a remount. */
START_TEST(frees_discarded_then_reused)
{
	static const struct tsr_srcval j1[] = { OPT("journal_size", "1M"),
						OPT("size", "40M") };
	enum { BIG = 16u << 20 };
	static uint8_t big[BIG], small[BLK];
	struct store s;
	struct tsr_txn_op op;
	char name[32];
	uint64_t before, now = 0, avail0;
	int punch = punch_works(), i;

	st_fresh(&s, "store", j1, 2);
	avail0 = st_avail(&s);
	fill(big, sizeof(big), 7);
	op = op_write("big", 0, big, sizeof(big));
	txn_ok(&s, &op, 1);
	op = op_new(TSR_TXN_REMOVE, "big");
	txn_ok(&s, &op, 1);
	before = allocated(s.path);
	/* small writes through the journal until it has been checkpointed
	 * (far fewer than 600 fill 1 MiB) and the holes are punched */
	for (i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "small%d", i);
		fill(small, sizeof(small), (uint32_t)i);
		op = op_write(name, 0, small, sizeof(small));
		txn_ok(&s, &op, 1);
		if (i % 50 == 49 && (now = allocated(s.path)) + BIG / 2 < before)
			break;
	}
	for (int t = 0; punch && t < 100 && (now = allocated(s.path)) + BIG / 2 >= before; t++)
		usleep(50000);
	fprintf(stderr, "frees_discarded_then_reused: %s: %" PRIu64 " bytes allocated "
		"after a 16 MiB object was removed, %" PRIu64 " after %d small writes%s\n",
		s.path, before, now, i, punch ? "" : " (no hole punching here)");
	if (punch)
		ck_assert_msg(now + BIG / 2 < before, "%s: the removed object's blocks "
			      "were not discarded (%" PRIu64 " bytes allocated before, "
			      "%" PRIu64 " after)", s.path, before, now);
	/* all of the freed space is usable (40 MiB image: the 16 MiB write
	 * needs the old object's blocks back) */
	ck_assert_uint_ge(st_avail(&s) + (uint64_t)(i + 1) * BLK + BLK * 64, avail0);
	fill(big, sizeof(big), 8);
	op = op_write("big2", 0, big, sizeof(big));
	txn_ok(&s, &op, 1);
	op = op_write("big3", 0, big, sizeof(big) / 2);
	txn_ok(&s, &op, 1);
	expect_data(&s, "big2", big, sizeof(big));
	fill(small, sizeof(small), 0);
	expect_data(&s, "small0", small, sizeof(small));
	st_umount_ok(&s);
	st_mount_ok(&s);
	expect_data(&s, "big2", big, sizeof(big));
	expect_data(&s, "big3", big, sizeof(big) / 2);
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* ---- The superblock ----------------------------------------------------
 *
 * super.h: an envelope (u8 version, u8 compat, u32 length) around the
 * magic, uuid, block size, device size, data offset and creation time,
 * then a CRC32C over the envelope.  Each variant damages it one way; the
 * mount (and fsck) must fail with the errno super.h gives that damage,
 * naming the device, and the store must mount with its data once the
 * damage is undone. */

enum { SB_GARBAGE, SB_ZEROS, SB_MAGIC, SB_CHECKSUM, SB_NEWER, SB_COMPAT,
       SB_SHRUNK, SB_TINY, SB_NVARIANTS };
static const char *const sb_variant[] = {
	"first 4 KiB garbage", "first 4 KiB zeros", "magic changed",
	"a uuid byte flipped", "envelope version 9 (crc recomputed)",
	"envelope compat 9 alone (crc recomputed)",
	"image truncated to half", "image truncated to 100 bytes",
};

START_TEST(superblock_damaged)
{
	enum { SAVE = 2 << 20 };  /* the superblock and the blocks in use */
	struct store s;
	struct fsck_log fl;
	uint8_t *saved = malloc(SAVE), sb[SB_SIZE];
	char half[32], full[32];
	int v = _i, want = 0, rc;
	const char *says = NULL;
	uint32_t len;

	ck_assert_ptr_nonnull(saved);
	pop_store(&s, "store");
	file_pread(s.path, 0, saved, SAVE);
	memcpy(sb, saved, sizeof(sb));
	len = le32(sb + 2);
	ck_assert_msg(sb[0] == 1 && sb[1] == 1 && len == 52 &&
		      le64(sb + 6) == 0x3156454442525354ull,
		      "%s: the superblock is not laid out as super.h draws it",
		      s.path);
	ck_assert_int_eq(le32(sb + 6 + len), tsr_crc32c(0, sb, 6 + len));
	ck_assert_int_eq(le64(sb + 6 + 8 + 16 + 4), DEV_SIZE);
	ck_assert_int_eq(le64(sb + 6 + 8 + 16 + 4 + 8), DATA_OFF);

	switch (v) {
	case SB_GARBAGE:
		fill(sb, sizeof(sb), 9);
		file_pwrite(s.path, 0, sb, sizeof(sb));
		want = -EINVAL, says = "not a Tessera block device";
		break;
	case SB_ZEROS:
		memset(sb, 0, sizeof(sb));
		file_pwrite(s.path, 0, sb, sizeof(sb));
		want = -EINVAL, says = "not a Tessera block device";
		break;
	case SB_MAGIC:
		/* the rest is ours: damage, never "run mkfs" (see
		 * test_bd_super.c, flipped_magic_not_sent_to_mkfs) */
		memcpy(sb + 6, "NOTBDEV1", 8);
		file_pwrite(s.path, 0, sb, sizeof(sb));
		want = -EIO, says = "damaged";
		break;
	case SB_CHECKSUM:
		file_garble(s.path, 6 + 8 + 3, 1);
		want = -EIO, says = "checksum";
		break;
	case SB_NEWER:
	case SB_COMPAT:
		/* an envelope's compat never exceeds its version
		 * (encoding.h), so a newer writer's superblock has both */
		if (v == SB_NEWER)
			sb[0] = 9;
		sb[1] = 9;
		put_le32(sb + 6 + len, tsr_crc32c(0, sb, 6 + len));
		file_pwrite(s.path, 0, sb, sizeof(sb));
		if (v == SB_NEWER)
			want = -EOPNOTSUPP, says = "newer";
		else
			want = -EIO, says = "damaged";
		break;
	case SB_SHRUNK:
		file_truncate(s.path, DEV_SIZE / 2);
		snprintf(half, sizeof(half), "%u", DEV_SIZE / 2);
		want = -ENOSPC, says = half;
		break;
	case SB_TINY:
		file_truncate(s.path, 100);
		want = -EINVAL, says = "too small";
		break;
	}
	rc = st_mount(&s);
	ck_assert_msg(rc == want, "%s: mount: %d (%s), want %d (%s): %s",
		      sb_variant[v], rc, strerror(-rc), want, strerror(-want), s.err);
	ck_assert_contains(s.err, s.path);
	ck_assert_contains(s.err, says);
	if (v == SB_SHRUNK) {
		snprintf(full, sizeof(full), "%u", DEV_SIZE);
		ck_assert_contains(s.err, full);
	}
	/* fsck says the same, through its callback */
	rc = st_fsck(&s, 0, &fl);
	ck_assert_msg(rc == want, "fsck: %d (%s), want %d\n%s", rc, strerror(-rc),
		      want, fl.all);
	ck_assert_contains(fl.all, s.path);
	/* and mkfs does not take it (the device holds data, or the
	 * metadata store is there) */
	ck_assert_int_eq(st_mkfs(&s), -EEXIST);

	/* the failed mount changed nothing: undone, the store is whole */
	if (v == SB_SHRUNK || v == SB_TINY)
		file_truncate(s.path, DEV_SIZE);
	file_pwrite(s.path, 0, saved, SAVE);
	pop_remount_verify(&s);
	expect_fsck_clean(&s);
	st_free(&s);
	free(saved);
}
END_TEST

/* ---- The metadata store ------------------------------------------------*/

START_TEST(meta_missing)
{
	struct store s;
	struct fsck_log fl;
	char away[PATH_MAX];
	int rc;

	pop_store(&s, "store");
	snprintf(away, sizeof(away), "%s.away", s.mpath);
	ck_assert_int_eq(rename(s.mpath, away), 0);

	/* gone */
	expect_mount_fails(&s, -ENOENT, s.mpath, "meta_path");
	ck_assert_contains(s.err, s.path);
	ck_assert_int_eq(access(s.mpath, F_OK), -1); /* not made */
	rc = st_fsck(&s, 0, &fl);
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_contains(fl.all, s.mpath);

	ck_assert_int_eq(rename(away, s.mpath), 0);
	pop_remount_verify(&s);
	st_free(&s);
}
END_TEST

/* meta_path an empty directory: no store in it either, and the failed
 * mount leaves it empty, so mkfs would still take it. */
START_TEST(meta_empty_dir)
{
	struct store s;
	char away[PATH_MAX];
	int rc;

	pop_store(&s, "store");
	snprintf(away, sizeof(away), "%s.away", s.mpath);
	ck_assert_int_eq(rename(s.mpath, away), 0);
	ck_assert_int_eq(mkdir(s.mpath, 0700), 0);
	rc = st_mount(&s);
	ck_assert_msg(rc == -ENOENT || rc == -EINVAL, "mount with an empty "
		      "meta_path: %d (%s): %s", rc, strerror(-rc), s.err);
	ck_assert_contains(s.err, s.mpath);
	fprintf(stderr, "meta_empty_dir: mount: %s\n", s.err);
	ck_assert_msg(dir_count(s.mpath) == 0, "a failed mount left %d files in "
		      "the empty %s", dir_count(s.mpath), s.mpath);
	ck_assert_int_eq(rmdir(s.mpath), 0);
	ck_assert_int_eq(rename(away, s.mpath), 0);
	pop_remount_verify(&s);
	st_free(&s);
}
END_TEST

/* meta_path naming another device's metadata: refused, both untouched. */
START_TEST(meta_foreign)
{
	struct store s, o, x;
	struct fsck_log fl;
	struct tsr_srcval other_meta[1];
	struct tsr_txn_op op;
	uint8_t data[4096];
	int rc;

	pop_store(&s, "store");
	st_fresh(&o, "other", NULL, 0);
	fill(data, sizeof(data), 3);
	op = op_write("o", 0, data, sizeof(data));
	txn_ok(&o, &op, 1);
	st_umount_ok(&o);

	other_meta[0] = (struct tsr_srcval)OPT("meta_path", o.mpath);
	st_new(&x, "store", other_meta, 1);
	expect_mount_fails(&x, -EINVAL, o.mpath, "another device");
	ck_assert_contains(x.err, s.path);
	ck_assert_contains(x.err, "uuid");
	rc = st_fsck(&x, 0, &fl);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_contains(fl.all, "another device");
	st_free(&x);

	pop_remount_verify(&s);
	st_mount_ok(&o);
	expect_data(&o, "o", data, sizeof(data));
	ck_assert_int_eq(count_objects(&o), 1);
	st_umount_ok(&o);
	expect_fsck_clean(&o);
	expect_fsck_clean(&s);
	st_free(&o);
	st_free(&s);
}
END_TEST

/* ---- The journal (meta_path/journal, journal.h) -------------------------
 *
 * Each variant leaves the journal missing, foreign or damaged: the mount
 * and fsck fail naming it, and with it back the store mounts whole. */

enum { JR_GONE, JR_FOREIGN, JR_HEADERS, JR_TRUNCATED, JR_NVARIANTS };
static const char *const jr_variant[] = {
	"journal removed", "another store's journal",
	"both header copies garbage", "journal truncated to half",
};

START_TEST(journal_bad)
{
	struct store s, o;
	struct fsck_log fl;
	char copy[PATH_MAX];
	uint8_t junk[4096];
	int v = _i, want = 0, rc;
	const char *says = NULL;

	pop_store(&s, "store");
	path_join(copy, sizeof(copy), tdir, "journal.copy");
	ck_assert_int_eq(file_copy(s.jpath, copy), 0);
	ck_assert_int_eq(file_size(s.jpath), 4 << 20);
	switch (v) {
	case JR_GONE:
		ck_assert_int_eq(unlink(s.jpath), 0);
		want = -ENOENT;
		break;
	case JR_FOREIGN:
		st_fresh(&o, "other", NULL, 0);
		st_umount_ok(&o);
		ck_assert_int_eq(file_copy(o.jpath, s.jpath), 0);
		st_free(&o);
		want = -EINVAL, says = "another store";
		break;
	case JR_HEADERS:
		fill(junk, sizeof(junk), 8);
		file_pwrite(s.jpath, 0, junk, sizeof(junk));
		want = -EBADMSG, says = "header";
		break;
	case JR_TRUNCATED:
		file_truncate(s.jpath, 2 << 20);
		want = -EBADMSG, says = "truncated";
		break;
	}
	rc = st_mount(&s);
	ck_assert_msg(rc == want, "%s: mount: %d (%s), want %d (%s): %s",
		      jr_variant[v], rc, strerror(-rc), want, strerror(-want), s.err);
	ck_assert_contains(s.err, s.jpath);
	if (says)
		ck_assert_contains(s.err, says);
	rc = st_fsck(&s, 0, &fl);
	ck_assert_msg(rc == want, "%s: fsck: %d\n%s", jr_variant[v], rc, fl.all);
	ck_assert_contains(fl.all, s.jpath);

	ck_assert_int_eq(file_copy(copy, s.jpath), 0);
	pop_remount_verify(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* ---- Crash images ---------------------------------------------------------
 *
 * A commit is durable once its journal record is; its deferred data (a
 * batch of at most 256 KiB) and its metadata are applied without a sync,
 * so a power cut may lose them, and replay must put them back.  The test
 * copies the live store while it is idle before the last transaction,
 * lets that commit, and builds the image a power cut right after the
 * record leaves: the device and LevelDB as they were (or, for a large
 * transaction, whose data is written in place and synced before its
 * record, the device as it is now), and the journal as it is now.
 *
 * Transaction i writes w-i (6000 bytes, seed i) with attribute gen = i,
 * overwrites block i of "shared" (copy on write: its old block is freed)
 * and sets shared's omap key "last" to i; the last one in the "direct"
 * variant also writes 1 MiB to "big", which makes the batch too large to
 * defer. */

#define W_TXNS 8
#define W_SIZE 6000u
#define W_BIG (1u << 20)

enum { CR_ALL_NOW, CR_DEFERRED, CR_DIRECT, CR_TORN, CR_NVARIANTS };
static const char *const cr_variant[] = {
	"everything as the writer left it (kill -9)",
	"device and LevelDB before the last (deferred) transaction",
	"LevelDB before the last (direct, 1 MiB) transaction",
	"as \"deferred\", the last record torn",
};

static void
w_ops(unsigned i, struct tsr_txn_op ops[5], char *name, char *val,
      uint8_t *data, uint8_t *block, uint8_t *big)
{
	sprintf(name, "w-%u", i);
	sprintf(val, "%u", i);
	fill(data, W_SIZE, i);
	fill(block, 4096, 1000 + i);
	ops[0] = op_write(name, 0, data, W_SIZE);
	ops[1] = op_kv(TSR_TXN_SETATTR, name, "gen", val);
	ops[2] = op_write("shared", (uint64_t)i * 4096, block, 4096);
	ops[3] = op_kv(TSR_TXN_OMAP_SET, "shared", "last", val);
	if (big != NULL) {
		fill(big, W_BIG, 2000 + i);
		ops[4] = op_write("big", 0, big, W_BIG);
	}
}

/* Writer transaction i in s: 1 whole, 0 absent, -1 partly there or
 * wrong (with why). */
static int
w_state(struct store *s, unsigned i, char *why, size_t whylen)
{
	char name[32], val[32], attr[64], last[64];
	uint8_t data[W_SIZE], block[4096], buf[W_SIZE + 16];
	uint64_t got;
	size_t vl = 0;
	int part[4], rc;

	sprintf(name, "w-%u", i);
	sprintf(val, "%u", i);
	fill(data, W_SIZE, i);
	fill(block, 4096, 1000 + i);
	rc = obj_read(s, name, 0, sizeof(buf), buf, &got);
	part[0] = rc == -ENOENT ? 0
		  : rc == 0 && got == W_SIZE && !memcmp(buf, data, W_SIZE) ? 1 : -1;
	rc = attr_get(s, name, "gen", attr, sizeof(attr));
	part[1] = rc == -ENOENT ? 0 : rc == 0 && !strcmp(attr, val) ? 1 : -1;
	rc = obj_read(s, "shared", (uint64_t)i * 4096, 4096, buf, &got);
	part[2] = rc == 0 && got == 0 ? 0
		  : rc == 0 && got == 4096 && !memcmp(buf, block, 4096) ? 1 : -1;
	rc = s->ops->omap_get(s->h, &cid, "shared", 6, "last", 4, last,
			      sizeof(last) - 1, &vl);
	last[rc == 0 && vl < sizeof(last) ? vl : 0] = '\0';
	part[3] = rc < 0 ? -1 : (unsigned)atoi(last) >= i ? 1 : 0;
	snprintf(why, whylen, "txn %u: data %d, attr %d, shared block %d, "
		 "omap last %d (\"%s\")", i, part[0], part[1], part[2], part[3],
		 last);
	for (int k = 0; k < 4; k++)
		if (part[k] != part[0] || part[k] < 0)
			return -1;
	return part[0];
}

/* The offset of the last record after the checkpoint, and its payload
 * length (journal.h: from 4096 on, magic 0x4a524543, consecutive seqs,
 * each padded to a multiple of 4096). */
static uint64_t
journal_last(const char *path, uint32_t *len)
{
	uint8_t h[24];
	uint64_t off = 4096, last = 0, seq = 0;
	off_t size = file_size(path);

	while (off + 24 <= (uint64_t)size) {
		file_pread(path, off, h, sizeof(h));
		if (le32(h) != 0x4a524543u || (last && le64(h + 8) != seq + 1))
			break;
		last = off;
		seq = le64(h + 8);
		*len = le32(h + 4);
		off += (24 + (uint64_t)*len + 4095) / 4096 * 4096;
	}
	ck_assert_msg(last != 0, "%s: no journal records", path);
	return last;
}

START_TEST(crash_replay)
{
	struct store s, c;
	struct fsck_log fl;
	struct tsr_txn_op ops[5];
	char name[32], val[32], why[256];
	static uint8_t data[W_SIZE], block[4096], big[W_BIG];
	int v = _i, rc;

	st_fresh(&s, "live", NULL, 0);
	for (unsigned i = 0; i < W_TXNS - 1; i++) {
		w_ops(i, ops, name, val, data, block, NULL);
		txn_ok(&s, ops, 4);
	}
	/* idle: the state before the last transaction */
	st_new(&c, "crash", NULL, 0);
	if (v != CR_ALL_NOW) {
		ck_assert_int_eq(file_copy(s.path, c.path), 0);
		ck_assert_int_eq(tree_copy(s.mpath, c.mpath), 0);
	}
	w_ops(W_TXNS - 1, ops, name, val, data, block, v == CR_DIRECT ? big : NULL);
	txn_ok(&s, ops, v == CR_DIRECT ? 5 : 4);
	/* the last record, as the journal holds it now */
	if (v == CR_ALL_NOW) {
		ck_assert_int_eq(file_copy(s.path, c.path), 0);
		ck_assert_int_eq(tree_copy(s.mpath, c.mpath), 0);
	} else {
		ck_assert_int_eq(file_copy(s.jpath, c.jpath), 0);
		if (v == CR_DIRECT)
			/* in place and synced first */
			ck_assert_int_eq(file_copy(s.path, c.path), 0);
	}
	st_umount_ok(&s);
	st_free(&s);
	if (v == CR_TORN) {
		uint32_t len = 0;
		uint64_t at = journal_last(c.jpath, &len);
		file_garble(c.jpath, at + 24 + len / 2, 1);
	}

	/* the image lacks the last transaction's deferred data: only
	 * replay can bring it */
	fill(data, W_SIZE, W_TXNS - 1);
	if (v == CR_DEFERRED || v == CR_TORN) {
		uint64_t at;
		ck_assert_int_eq(count_block(c.path, data, &at), 0);
	}

	log_clear();
	st_mount_ok(&c);
	ck_assert_msg(log_find(NULL, c.path, "replayed", NULL) >= 0,
		      "%s: no journal records replayed", cr_variant[v]);
	/* a record dropped is never dropped silently (see test_bf_journal.c,
	 * last_record_flip_not_silent) */
	if (v == CR_TORN) {
		int lvl;
		ck_assert_msg(log_find(&lvl, c.jpath, "fails its checksum",
				       "dropped as a torn write", NULL) >= 0,
			      "%s: the last record was dropped without a warning",
			      cr_variant[v]);
		ck_assert_int_eq(lvl, TSR_LOG_WARN);
	} else {
		ck_assert_int_lt(log_find(NULL, "torn write", NULL), 0);
	}
	for (unsigned i = 0; i < W_TXNS - 1; i++) {
		rc = w_state(&c, i, why, sizeof(why));
		ck_assert_msg(rc == 1, "%s: an acknowledged transaction is lost or "
			      "damaged: %s", cr_variant[v], why);
	}
	rc = w_state(&c, W_TXNS - 1, why, sizeof(why));
	if (v == CR_TORN)
		ck_assert_msg(rc == 0, "%s: a torn record was applied: %s",
			      cr_variant[v], why);
	else
		ck_assert_msg(rc == 1, "%s: the last (journaled) transaction was not "
			      "replayed: %s", cr_variant[v], why);
	if (v == CR_DIRECT)
		expect_data(&c, "big", big, W_BIG);
	else
		expect_absent(&c, "big");
	{
		struct tsr_statfs sf;
		ck_assert_int_eq(c.ops->statfs(c.h, &sf), 0);
		ck_assert_int_eq(sf.objects, W_TXNS - (v == CR_TORN) + 1 +
						     (v == CR_DIRECT));
	}
	/* and takes new writes, over blocks the lost transaction had taken */
	w_ops(W_TXNS - 1, ops, name, val, data, block, NULL);
	txn_ok(&c, ops, 4);
	ck_assert_int_eq(w_state(&c, W_TXNS - 1, why, sizeof(why)), 1);
	st_umount_ok(&c);
	rc = st_fsck(&c, 0, &fl);
	ck_assert_msg(rc == 0, "%s: fsck after recovery: %d\n%s", cr_variant[v], rc,
		      fl.all);
	st_mount_ok(&c);
	for (unsigned i = 0; i < W_TXNS; i++)
		ck_assert_int_eq(w_state(&c, i, why, sizeof(why)), 1);
	st_umount_ok(&c);
	st_free(&c);
}
END_TEST

/* A transaction whose record can never fit in the journal fails with
 * -EFBIG and leaves no trace. */
START_TEST(txn_bigger_than_journal)
{
	static const struct tsr_srcval small[] = { OPT("journal_size", "1M") };
	enum { V = 1 << 20 };
	struct store s;
	struct fsck_log fl;
	struct tsr_txn_op ops[2];
	char *v = malloc(V + 1);
	uint8_t x[8192];
	int rc;

	ck_assert_ptr_nonnull(v);
	memset(v, 'v', V);
	v[V] = '\0';
	fill(x, sizeof(x), 3);
	st_fresh(&s, "store", small, 1);
	ops[0] = op_write("x", 0, x, sizeof(x));
	ops[1] = op_kv(TSR_TXN_SETATTR, "x", "huge", v);   /* 1 MiB value */
	rc = txn_try(&s, ops, 2);
	ck_assert_msg(rc == -EFBIG, "a 1 MiB attribute through a 1 MiB journal: "
		      "%d (%s)", rc, strerror(-rc));
	expect_absent(&s, "x");
	ops[0] = op_write("y", 0, x, sizeof(x));
	txn_ok(&s, ops, 1);
	expect_data(&s, "y", x, sizeof(x));
	st_umount_ok(&s);
	st_mount_ok(&s);
	expect_absent(&s, "x");
	expect_data(&s, "y", x, sizeof(x));
	st_umount_ok(&s);
	rc = st_fsck(&s, 0, &fl);
	ck_assert_msg(rc == 0, "fsck after a refused transaction: %d\n%s", rc,
		      fl.all);
	st_free(&s);
	free(v);
}
END_TEST

/* ---- A full device ------------------------------------------------------
 *
 * 64 MiB, 1 MiB of it before the data area: 15 objects of 4 MiB fit, the
 * 16th does not, and fails with -ENOSPC before anything is written.
 * Removing objects gives their space back: statfs counts it at once, and
 * blocks still waiting for a checkpoint (blockdev.c: freed blocks are
 * reused only after the next one) are freed by one when they are what a
 * write needs. */

#define BIG (4u << 20)

static void
big_name(char *buf, size_t n, const char *prefix, unsigned i)
{
	snprintf(buf, n, "%s-%u", prefix, i);
}

/* The objects the test expects, by seed (0: none). */
struct bigset {
	unsigned n;
	char name[40][32];
	uint32_t seed[40];
};

/* Every object of b as expected, and extra objects besides them. */
static void
bigset_verify(struct store *s, const struct bigset *b, uint8_t *buf, int extra)
{
	int live = 0;

	for (unsigned i = 0; i < b->n; i++) {
		if (b->seed[i] == 0) {
			expect_absent(s, b->name[i]);
			continue;
		}
		fill(buf, BIG, b->seed[i]);
		expect_data(s, b->name[i], buf, BIG);
		live++;
	}
	ck_assert_int_eq(count_objects(s), live + extra);
}

START_TEST(full_device)
{
	static struct bigset set;
	struct store s;
	struct tsr_statfs sf;
	struct tsr_txn_op ops[3];
	uint8_t *buf = malloc(BIG), *other = malloc(BIG), small[65536];
	uint64_t avail, before_rm;
	char name[32];
	int rc = 0;

	ck_assert(buf && other);
	memset(&set, 0, sizeof(set));
	st_fresh(&s, "store", NULL, 0);
	ck_assert_int_eq(s.ops->statfs(s.h, &sf), 0);
	ck_assert_int_eq(sf.total, (uint64_t)DEV_BLOCKS * BLK);
	ck_assert_int_eq(sf.available, (uint64_t)DEV_BLOCKS * BLK);

	/* 4 MiB objects until one fails */
	for (unsigned i = 0; i < 20; i++) {
		big_name(name, sizeof(name), "big", i);
		fill(buf, BIG, 100 + i);
		ops[0] = op_write(name, 0, buf, BIG);
		ops[1] = op_kv(TSR_TXN_SETATTR, name, "gen", "1");
		rc = txn_try(&s, ops, 2);
		if (rc != 0)
			break;
		snprintf(set.name[set.n], sizeof(set.name[0]), "%s", name);
		set.seed[set.n++] = 100 + i;
	}
	ck_assert_msg(rc == -ENOSPC, "write to a full device: %d (%s)", rc,
		      strerror(-rc));
	ck_assert_msg(set.n == (DEV_BLOCKS * BLK) / BIG, "%u objects of 4 MiB "
		      "fit in %u blocks, want %u", set.n, DEV_BLOCKS,
		      (DEV_BLOCKS * BLK) / BIG);
	fprintf(stderr, "full_device: %u objects of 4 MiB, then ENOSPC\n", set.n);
	expect_absent(&s, name);
	avail = st_avail(&s);
	ck_assert_msg(avail < BIG, "%" PRIu64 " bytes available after ENOSPC",
		      avail);
	ck_assert_int_eq(avail, (uint64_t)DEV_BLOCKS * BLK - (uint64_t)set.n * BIG);

	/* an overwrite needs new blocks too (copy on write): refused whole */
	fill(other, BIG, 999);
	ops[0] = op_write("small", 0, other, 4096);
	ops[1] = op_write(set.name[0], 0, other, BIG);
	ops[2] = op_kv(TSR_TXN_SETATTR, set.name[0], "gen", "2");
	rc = txn_try(&s, ops, 3);
	ck_assert_msg(rc == -ENOSPC, "a 4 MiB overwrite on a full device: %d (%s)",
		      rc, strerror(-rc));
	expect_absent(&s, "small");
	expect_attr(&s, set.name[0], "gen", "1");
	ck_assert_int_eq(st_avail(&s), avail);
	bigset_verify(&s, &set, buf, 0);

	/* what is left can be written */
	fill(small, sizeof(small), 5);
	ops[0] = op_write("small", 0, small, sizeof(small));
	txn_ok(&s, ops, 1);
	ck_assert_int_eq(st_avail(&s), avail - sizeof(small));
	avail -= sizeof(small);

	/* removals give space back, exactly */
	before_rm = avail;
	for (unsigned i = 1; i < set.n; i += 5) {
		ops[0] = op_new(TSR_TXN_REMOVE, set.name[i]);
		txn_ok(&s, ops, 1);
		set.seed[i] = 0;
		avail += BIG;
		ck_assert_int_eq(st_avail(&s), avail);
	}
	/* and the freed blocks are written again: more than the tail had */
	for (unsigned i = 0; i < 20; i++) {
		big_name(name, sizeof(name), "new", i);
		fill(buf, BIG, 500 + i);
		ops[0] = op_write(name, 0, buf, BIG);
		rc = txn_try(&s, ops, 1);
		if (rc != 0)
			break;
		snprintf(set.name[set.n], sizeof(set.name[0]), "%s", name);
		set.seed[set.n++] = 500 + i;
		avail -= BIG;
		ck_assert_int_eq(st_avail(&s), avail);
	}
	ck_assert_msg(rc == -ENOSPC, "write to a full device: %d (%s)", rc,
		      strerror(-rc));
	ck_assert_msg(avail < BIG && avail == before_rm,
		      "after removing and rewriting, %" PRIu64 " bytes available, "
		      "want %" PRIu64, avail, before_rm);
	expect_absent(&s, name);
	bigset_verify(&s, &set, buf, 1);
	expect_data(&s, "small", small, sizeof(small));

	/* all of it again after a remount, and the same space */
	st_umount_ok(&s);
	st_mount_ok(&s);
	ck_assert_int_eq(st_avail(&s), avail);
	bigset_verify(&s, &set, buf, 1);
	expect_data(&s, "small", small, sizeof(small));
	expect_attr(&s, set.name[0], "gen", "1");
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
	free(buf);
	free(other);
}
END_TEST

/* min_free: the reserve refuses writes that would eat into it, but a
 * removal eats nothing (the metadata is not on the device) and gives
 * space back: refusing it would leave a full device no way to become
 * less full. */
START_TEST(remove_when_reserve_reached)
{
	static const struct tsr_srcval reserve[] = { OPT("min_free", "1T") };
	struct store s;
	struct tsr_txn_op ops[2];
	uint8_t a[16384];
	int rc;

	fill(a, sizeof(a), 1);
	st_fresh(&s, "store", NULL, 0);
	ops[0] = op_write("A", 0, a, sizeof(a));
	ops[1] = op_write("B", 0, a, sizeof(a));
	txn_ok(&s, ops, 1);
	txn_ok(&s, ops + 1, 1);
	st_umount_ok(&s);
	st_free(&s);

	st_new(&s, "store", reserve, 1);
	st_mount_ok(&s);
	ck_assert_int_eq(st_avail(&s), 0);
	ops[0] = op_write("C", 0, a, 4096);
	rc = txn_try(&s, ops, 1);
	ck_assert_msg(rc == -ENOSPC, "write into the reserve: %d (%s)", rc,
		      strerror(-rc));
	expect_absent(&s, "C");
	ops[0] = op_new(TSR_TXN_REMOVE, "A");
	rc = txn_try(&s, ops, 1);
	ck_assert_msg(rc == 0, "removing an object from a device at its min_free "
		      "reserve: %d (%s)", rc, strerror(-rc));
	expect_absent(&s, "A");
	expect_data(&s, "B", a, sizeof(a));
	st_umount_ok(&s);
	st_free(&s);
}
END_TEST

/* ---- Flipped bits in object data ------------------------------------------*/

START_TEST(data_bitflip)
{
	enum { N = 3 * 4096 };
	struct store s;
	struct fsck_log fl;
	struct tsr_txn_op op;
	static uint8_t v[N], b[N], buf[N];
	uint64_t got, at;
	int rc, level = -1;

	fill(v, N, 11);
	fill(b, N, 12);
	st_fresh(&s, "store", NULL, 0);
	op = op_write("victim", 0, v, N);
	txn_ok(&s, &op, 1);
	op = op_write("bystander", 0, b, N);
	txn_ok(&s, &op, 1);
	st_umount_ok(&s);
	at = find_block(s.path, v + 4096);
	file_garble(s.path, at + 100, 1);

	st_mount_ok(&s);
	log_clear();
	rc = obj_read(&s, "victim", 0, N, buf, &got);
	ck_assert_msg(rc == -EIO, "read of damaged data: %d (%s)", rc, strerror(-rc));
	/* the log names the object and the offset, as an error */
	ck_assert_msg(log_find(&level, "victim", "offset 4096", "checksum", NULL) >= 0,
		      "no log line naming victim, offset 4096 and the checksum");
	ck_assert_int_eq(level, TSR_LOG_ERROR);
	ck_assert_int_eq(obj_read(&s, "victim", 4096 + 200, 10, buf, &got), -EIO);
	/* the blocks around it, and the other object, are fine */
	expect_range(&s, "victim", 0, v, 4096);
	expect_range(&s, "victim", 8192, v + 8192, 4096);
	expect_data(&s, "bystander", b, N);
	/* a partial overwrite of the damaged block must read it first:
	 * refused, and nothing changes */
	op = op_write("victim", 4096 + 8, "xyz", 3);
	rc = txn_try(&s, &op, 1);
	ck_assert_msg(rc == -EIO, "a partial write over damaged data: %d (%s)", rc,
		      strerror(-rc));
	st_umount_ok(&s);

	rc = st_fsck(&s, 0, &fl);
	ck_assert_msg(rc > 0, "fsck of damaged data: %d\n%s", rc, fl.all);
	ck_assert_contains(fl.all, "checksum");
	ck_assert_int_eq(fl.repaired, 0);
	rc = st_fsck(&s, 1, &fl);
	ck_assert_msg(rc > 0, "fsck --repair of damaged data: %d\n%s", rc, fl.all);

	/* a whole-block overwrite replaces the damage (new blocks, CoW) */
	st_mount_ok(&s);
	ck_assert_int_eq(obj_read(&s, "victim", 0, N, buf, &got), -EIO);
	op = op_write("victim", 4096, v + 4096, 4096);
	txn_ok(&s, &op, 1);
	expect_data(&s, "victim", v, N);
	expect_data(&s, "bystander", b, N);
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* ---- Copy on write ------------------------------------------------------
 *
 * Every overwrite takes new blocks and frees the old ones (at the next
 * checkpoint; a 4 MiB journal fills several times here): 2000 overwrites
 * of one block must leave the free space where it was, and the allocator
 * rebuilt at mount must agree. */

#define COW_ROUNDS 2000
#define COW_WINDOW 16   /* transactions in flight */

struct inflight {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int pending, failed, first_rc;
};

static void
inflight_cb(void *arg, int rc)
{
	struct inflight *f = arg;

	pthread_mutex_lock(&f->mu);
	if (rc != 0 && f->failed++ == 0)
		f->first_rc = rc;
	f->pending--;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

START_TEST(cow_overwrite)
{
	static uint8_t base[65536], blk[4096], last[4096];
	static struct inflight f = { PTHREAD_MUTEX_INITIALIZER,
				     PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct store s;
	struct tsr_txn_op op;
	uint64_t avail0, avail1;
	int rc;

	fill(base, sizeof(base), 1);
	st_fresh(&s, "store", NULL, 0);
	op = op_write("cow", 0, base, sizeof(base));
	txn_ok(&s, &op, 1);
	op = op_write("neighbour", 0, base, 16384);
	txn_ok(&s, &op, 1);
	avail0 = st_avail(&s);

	/* one at a time, then many in flight (group commit: several
	 * overwrites of the block in one batch) */
	for (unsigned i = 0; i < COW_ROUNDS; i++) {
		fill(blk, sizeof(blk), 1000 + i);
		op = op_write("cow", 5 * 4096, blk, sizeof(blk));
		if (i < COW_ROUNDS / 4) {
			txn_ok(&s, &op, 1);
			continue;
		}
		struct tsr_txn t = { 1, &op };
		pthread_mutex_lock(&f.mu);
		while (f.pending >= COW_WINDOW)
			pthread_cond_wait(&f.cv, &f.mu);
		f.pending++;
		pthread_mutex_unlock(&f.mu);
		rc = s.ops->submit(s.h, &t, inflight_cb, &f);
		if (rc < 0) {
			pthread_mutex_lock(&f.mu);
			f.pending--;
			pthread_mutex_unlock(&f.mu);
			ck_abort_msg("submit: %s", strerror(-rc));
		}
	}
	pthread_mutex_lock(&f.mu);
	while (f.pending > 0)
		pthread_cond_wait(&f.cv, &f.mu);
	pthread_mutex_unlock(&f.mu);
	ck_assert_msg(f.failed == 0, "%d overwrites failed, the first with %s",
		      f.failed, strerror(-f.first_rc));

	fill(last, sizeof(last), 1000 + COW_ROUNDS - 1);
	memcpy(base + 5 * 4096, last, sizeof(last));
	expect_data(&s, "cow", base, sizeof(base));
	avail1 = st_avail(&s);
	fprintf(stderr, "cow_overwrite: %d overwrites of one block: available "
		"%" PRIu64 " -> %" PRIu64 "\n", COW_ROUNDS, avail0, avail1);
	ck_assert_msg(avail1 + 4 * BLK >= avail0 && avail1 <= avail0 + 4 * BLK,
		      "space leaked by copy on write: %" PRIu64 " bytes available "
		      "before, %" PRIu64 " after", avail0, avail1);

	st_umount_ok(&s);
	st_mount_ok(&s);
	ck_assert_msg(st_avail(&s) == avail1, "the allocator rebuilt at mount "
		      "has %" PRIu64 " bytes available, the running one had %"
		      PRIu64, st_avail(&s), avail1);
	expect_data(&s, "cow", base, sizeof(base));
	expect_range(&s, "neighbour", 0, base, 16384);
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* ---- Space accounting ---------------------------------------------------
 *
 * Every operation that drops or replaces stored blocks — truncate, zero
 * of a whole chunk and of part of one, overwrite with zeros, clone onto
 * an existing object, remove — gives exactly those blocks back, in one
 * transaction or several, raw or compressed; the allocator rebuilt at
 * mount agrees with the running one at every step, and once everything
 * is removed the device is as free as after mkfs. */

static void
space_step(struct store *s, const char *what, uint64_t want, int exact)
{
	uint64_t now = st_avail(s);

	if (exact)
		ck_assert_msg(now == want, "after %s: %" PRIu64 " bytes available, "
			      "want %" PRIu64, what, now, want);
	st_umount_ok(s);
	st_mount_ok(s);
	ck_assert_msg(st_avail(s) == now, "after %s: the allocator rebuilt at "
		      "mount has %" PRIu64 " bytes available, the running one had %"
		      PRIu64, what, st_avail(s), now);
}

START_TEST(space_accounting)
{
	static const struct tsr_srcval zstd[] = { OPT("compression", "zstd") };
	enum { K = 1024, CH = 65536 };
	static uint8_t a[256 * K], zeros[CH], buf[256 * K];
	int z = _i;           /* 0: raw, exact counts; 1: zstd */
	struct store s;
	struct tsr_txn_op ops[4];
	uint64_t avail0, got;

	fill(a, sizeof(a), 61);
	if (z)
		text_fill(a + 128 * K, 128 * K); /* half of it compresses */
	st_fresh(&s, "store", z ? zstd : NULL, z ? 1 : 0);
	avail0 = st_avail(&s);

	ops[0] = op_write("A", 0, a, sizeof(a));                 /* 64 blocks */
	txn_ok(&s, ops, 1);
	space_step(&s, "a 256 KiB write", avail0 - 64 * BLK, !z);

	ops[0] = op_new(TSR_TXN_TRUNCATE, "A");                  /* keeps 25 */
	ops[0].off = 100 * K;
	txn_ok(&s, ops, 1);
	space_step(&s, "truncate to 100 KiB", avail0 - 25 * BLK, !z);

	ops[0] = op_new(TSR_TXN_ZERO, "A");                      /* chunk 0 */
	ops[0].off = 0;
	ops[0].len = CH;
	ops[1] = op_new(TSR_TXN_ZERO, "A");                      /* 1 block */
	ops[1].off = CH;
	ops[1].len = BLK;
	txn_ok(&s, ops, 2);
	space_step(&s, "zeroing 68 KiB", avail0 - 8 * BLK, !z);

	ops[0] = op_new(TSR_TXN_CLONE, "A");                     /* B: 8 */
	ops[0].oid2 = "B";
	ops[0].oid2_len = 1;
	ops[1] = op_new(TSR_TXN_CLONE_RANGE, "A");               /* C: 8 */
	ops[1].off = CH;
	ops[1].len = 36 * K;
	ops[1].oid2 = "C";
	ops[1].oid2_len = 1;
	ops[1].off2 = 0;
	txn_ok(&s, ops, 2);
	space_step(&s, "a clone and a clone_range", avail0 - 24 * BLK, !z);

	ops[0] = op_write("B", CH, zeros, sizeof(zeros));         /* B: 0 */
	ops[1] = op_new(TSR_TXN_CLONE, "C");                      /* onto A */
	ops[1].oid2 = "A";
	ops[1].oid2_len = 1;
	txn_ok(&s, ops, 2);
	space_step(&s, "zeros over B, C cloned onto A", avail0 - 16 * BLK, !z);

	/* what is left reads right */
	ck_assert_int_eq(obj_read(&s, "A", 0, sizeof(buf), buf, &got), 0);
	ck_assert_int_eq(got, 36 * K);
	ck_assert_msg(memcmp(buf, zeros, BLK) == 0 &&
		      memcmp(buf + BLK, a + CH + BLK, 32 * K) == 0,
		      "A after the clone: wrong data");
	ck_assert_int_eq(obj_read(&s, "B", 0, sizeof(buf), buf, &got), 0);
	ck_assert_int_eq(got, 2 * CH);
	ck_assert(memcmp(buf, zeros, CH) == 0 && memcmp(buf + CH, zeros, CH) == 0);

	/* several of them in one transaction, then everything removed */
	ops[0] = op_write("D", 0, a, sizeof(a));
	ops[1] = op_new(TSR_TXN_TRUNCATE, "D");
	ops[1].off = 10 * K;
	ops[2] = op_write("D", 3 * CH, a, 4 * K);
	ops[3] = op_new(TSR_TXN_REMOVE, "B");
	txn_ok(&s, ops, 4);
	space_step(&s, "write, truncate, write, remove in one transaction",
		   avail0 - 20 * BLK, !z);
	ops[0] = op_new(TSR_TXN_REMOVE, "A");
	ops[1] = op_new(TSR_TXN_REMOVE, "C");
	ops[2] = op_new(TSR_TXN_REMOVE, "D");
	txn_ok(&s, ops, 3);
	space_step(&s, "removing everything", avail0, 1);
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
}
END_TEST

/* ---- fsck: chunk maps against the allocator -----------------------------
 *
 * Raw chunk map value (ostore.h): envelope (6 bytes) { u8 kind | 0x80,
 * u16 zero bits, u32 crc per stored block, u64 location per stored
 * block }. */

enum { FM_TWICE, FM_PAST_END, FM_DAMAGED, FM_NVARIANTS };
static const char *const fm_variant[] = {
	"two objects' maps claim the same blocks",
	"a map points past the end of the device", "a map is garbage",
};

START_TEST(fsck_bad_maps)
{
	/* (8 KiB objects stored in blocks, not inline in their maps) */
	static const struct tsr_srcval blocks[] = { OPT("inline_max", "0") };
	struct store s;
	struct fsck_log fl;
	struct maps *ms = calloc(1, sizeof(*ms));
	struct tsr_txn_op op;
	static uint8_t a[8192], b[8192], c[8192];
	uint8_t bad[256];
	size_t bad_len;
	int v = _i, rc;
	char idstr[40];
	const struct cmap *victim;

	ck_assert_ptr_nonnull(ms);
	fill(a, sizeof(a), 41);
	fill(b, sizeof(b), 42);
	fill(c, sizeof(c), 43);
	st_fresh(&s, "store", blocks, 1);
	op = op_write("a", 0, a, sizeof(a));
	txn_ok(&s, &op, 1);
	op = op_write("b", 0, b, sizeof(b));
	txn_ok(&s, &op, 1);
	op = op_write("c", 0, c, sizeof(c));
	txn_ok(&s, &op, 1);
	st_umount_ok(&s);
	expect_fsck_clean(&s);

	maps_read(&s, ms);
	ck_assert_int_eq(ms->n, 3);
	for (size_t i = 0; i < 3; i++) {
		/* two stored blocks each: 6 + 1 + 2 + 2*4 + 2*8 bytes */
		ck_assert_int_eq(ms->m[i].cno, 0);
		ck_assert_int_eq(ms->m[i].vl, 33);
		ck_assert_int_eq(ms->m[i].val[6], 0x80); /* raw, with locations */
	}
	victim = &ms->m[1]; /* b's, between a's and c's */
	snprintf(idstr, sizeof(idstr), "object id %" PRIu64, victim->objid);
	switch (v) {
	case FM_TWICE:
		/* b's map becomes a copy of a's */
		memcpy(bad, ms->m[0].val, ms->m[0].vl);
		bad_len = ms->m[0].vl;
		break;
	case FM_PAST_END:
		memcpy(bad, victim->val, victim->vl);
		put_le64(bad + victim->vl - 8, DEV_BLOCKS + 10);
		bad_len = victim->vl;
		break;
	default:
		fill(bad, 40, 7);
		bad_len = 40;
		break;
	}
	meta_put(&s, victim->key, 13, bad, bad_len);

	/* the allocator cannot be built: mount refuses, pointing at fsck */
	expect_mount_fails(&s, -EIO, s.path, "fsck");
	ck_assert_contains(s.err, idstr);
	if (v == FM_TWICE)
		ck_assert_contains(s.err, "twice");

	rc = st_fsck(&s, 0, &fl);
	fprintf(stderr, "fsck_bad_maps[%s]: fsck: %d\n%s", fm_variant[v], rc,
		fl.all);
	ck_assert_msg(rc > 0, "fsck: %d\n%s", rc, fl.all);
	ck_assert_contains(fl.all, idstr);
	ck_assert_contains(fl.all, v == FM_TWICE ? "claimed twice"
				   : v == FM_PAST_END ? "past the end"
						      : "chunk map damaged");
	ck_assert_int_eq(fl.repaired, 0);

	/* --repair cannot know which object the blocks are: what does it
	 * leave?  (Reported, not required.) */
	rc = st_fsck(&s, 1, &fl);
	fprintf(stderr, "fsck_bad_maps[%s]: fsck --repair: %d, %d repaired\n%s",
		fm_variant[v], rc, fl.repaired, fl.all);
	rc = st_mount(&s);
	fprintf(stderr, "fsck_bad_maps[%s]: mount after fsck --repair: %d (%s)%s%s\n",
		fm_variant[v], rc, strerror(-rc), rc ? ": " : "", rc ? s.err : "");
	if (rc == 0)
		st_umount_ok(&s);

	/* the failed mounts changed nothing: with b's map back, all three
	 * read back and the store is clean */
	meta_put(&s, victim->key, 13, victim->val, victim->vl);
	st_mount_ok(&s);
	expect_data(&s, "a", a, sizeof(a));
	expect_data(&s, "b", b, sizeof(b));
	expect_data(&s, "c", c, sizeof(c));
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
	free(ms);
}
END_TEST

/* ---- zstd -----------------------------------------------------------------*/

START_TEST(zstd_store)
{
	static const struct tsr_srcval zstd[] = { OPT("compression", "zstd") };
	enum { MB = 1 << 20, CH = 65536 };
	struct store s;
	struct fsck_log fl;
	struct maps *ms = calloc(1, sizeof(*ms));
	struct tsr_txn_op op;
	uint8_t *text = malloc(MB), *buf = malloc(MB), sb[SB_SIZE];
	uint64_t avail0, used, got, loc, data_off, at;
	uint32_t stored;
	int rc;

	ck_assert(ms && text && buf);
	text_fill(text, MB);
	st_fresh(&s, "store", zstd, 1);
	avail0 = st_avail(&s);
	op = op_write("text", 0, text, MB);
	txn_ok(&s, &op, 1);
	expect_data(&s, "text", text, MB);
	used = avail0 - st_avail(&s);
	fprintf(stderr, "zstd_store: 1 MiB of text takes %" PRIu64 " bytes of "
		"the device\n", used);
	ck_assert_msg(used > 0 && used <= MB / 8, "1 MiB of text takes %" PRIu64
		      " bytes compressed", used);
	st_umount_ok(&s);
	st_mount_ok(&s);
	ck_assert_int_eq(avail0 - st_avail(&s), used);
	expect_data(&s, "text", text, MB);
	st_umount_ok(&s);

	/* where chunk 0's compressed bytes are: its map, 6 + 1 + 4 + 4 + 8
	 * bytes (kind 1 | 0x80, stored length, crc, location) */
	maps_read(&s, ms);
	ck_assert_int_eq(ms->n, MB / CH);
	ck_assert_int_eq(ms->m[0].cno, 0);
	ck_assert_int_eq(ms->m[0].vl, 23);
	ck_assert_int_eq(ms->m[0].val[6], 0x81);
	stored = le32(ms->m[0].val + 7);
	loc = le64(ms->m[0].val + 15);
	ck_assert_msg(stored > 8 && stored < BLK, "chunk 0 stored in %u bytes",
		      stored);
	file_pread(s.path, 0, sb, sizeof(sb));
	data_off = le64(sb + 6 + 8 + 16 + 4 + 8);
	at = data_off + loc * BLK;
	{
		uint8_t *z = malloc(stored);
		ck_assert_ptr_nonnull(z);
		file_pread(s.path, at, z, stored);
		ck_assert_msg(tsr_crc32c(0, z, stored) == le32(ms->m[0].val + 11),
			      "chunk 0's stored bytes are not at block %" PRIu64, loc);
		free(z);
	}
	file_garble(s.path, at + stored / 2, 1);

	st_mount_ok(&s);
	log_clear();
	rc = obj_read(&s, "text", 100, 4096, buf, &got);
	ck_assert_msg(rc == -EIO, "read of damaged compressed data: %d", rc);
	ck_assert_msg(log_find(NULL, "text", "offset 0", "checksum", NULL) >= 0,
		      "no log line naming text, offset 0 and the checksum");
	ck_assert_int_eq(obj_read(&s, "text", 0, MB, buf, &got), -EIO);
	expect_range(&s, "text", CH, text + CH, MB - CH);
	st_umount_ok(&s);
	rc = st_fsck(&s, 0, &fl);
	ck_assert_msg(rc > 0, "fsck of damaged compressed data: %d\n%s", rc, fl.all);
	ck_assert_contains(fl.all, "checksum");
	st_free(&s);
	free(ms);
	free(text);
	free(buf);
}
END_TEST

/* Compressed chunks are stored in one run of blocks (blockdev.c,
 * store_chunk: take(..., 1, ...)).  With the free space in single blocks
 * — every other block of a full device zeroed — statfs still offers
 * tens of MiB, and a 64 KiB write must find room: the chunk can be stored
 * raw block by block if no run is free. */
START_TEST(zstd_fragmented_free_space)
{
	static const struct tsr_srcval zstd[] = { OPT("compression", "zstd") };
	enum { CH = 65536 };
	struct store s;
	struct tsr_txn_op *ops = calloc(BIG / BLK / 2, sizeof(*ops));
	uint8_t *buf = malloc(BIG), half[CH];
	char names[16][32], tail[] = "tail";
	uint64_t avail;
	unsigned nbig = (DEV_BLOCKS * BLK) / BIG;
	size_t tail_len;
	int rc;

	ck_assert(ops && buf && nbig <= 16);
	/* fill the device with raw data, to the last block */
	st_fresh(&s, "store", NULL, 0);
	for (unsigned i = 0; i < nbig; i++) {
		big_name(names[i], sizeof(names[i]), "big", i);
		fill(buf, BIG, 200 + i);
		ops[0] = op_write(names[i], 0, buf, BIG);
		txn_ok(&s, ops, 1);
	}
	/* every other block of each object zeroed, half an object a
	 * transaction (the engine's space check counts 64 KiB a chunk) */
	for (unsigned i = 0; i < nbig; i++)
		for (unsigned h = 0; h < 2; h++) {
			uint32_t n = 0;
			for (uint64_t off = h * (BIG / 2); off < (h + 1) * (uint64_t)(BIG / 2);
			     off += 2 * BLK) {
				ops[n] = op_new(TSR_TXN_ZERO, names[i]);
				ops[n].off = off;
				ops[n].len = BLK;
				n++;
			}
			txn_ok(&s, ops, n);
		}
	/* the contiguous tail after the objects, taken whole */
	avail = st_avail(&s);
	tail_len = DEV_BLOCKS * (size_t)BLK - (size_t)nbig * BIG;
	fill(buf, tail_len, 300);
	ops[0] = op_write(tail, 0, buf, tail_len);
	txn_ok(&s, ops, 1);
	ck_assert_int_eq(st_avail(&s), avail - tail_len);
	avail = st_avail(&s);
	ck_assert_int_eq(avail, (uint64_t)nbig * BIG / 2);
	/* half random, half zeros: stored raw, 8 single blocks will do */
	memset(half, 0, sizeof(half));
	fill(half, CH / 2, 400);
	ops[0] = op_write("r", 0, half, CH);
	txn_ok(&s, ops, 1);
	expect_data(&s, "r", half, CH);
	avail -= CH / 2;
	ck_assert_int_eq(st_avail(&s), avail);
	st_umount_ok(&s);
	st_free(&s);

	/* compressed, the same chunk is about 8 blocks in one run */
	st_new(&s, "store", zstd, 1);
	st_mount_ok(&s);
	ck_assert_int_eq(st_avail(&s), avail);
	ops[0] = op_write("z", 0, half, CH);
	rc = txn_try(&s, ops, 1);
	fprintf(stderr, "zstd_fragmented_free_space: a 64 KiB write with %" PRIu64
		" bytes available in single blocks: %d (%s)\n", avail, rc,
		strerror(-rc));
	ck_assert_msg(rc == 0, "a 64 KiB compressible write with %" PRIu64 " bytes "
		      "available (all in single blocks): %d (%s)", avail, rc,
		      strerror(-rc));
	expect_data(&s, "z", half, CH);
	st_umount_ok(&s);
	expect_fsck_clean(&s);
	st_free(&s);
	free(ops);
	free(buf);
}
END_TEST

/* ---- Option errors --------------------------------------------------------*/

START_TEST(option_errors)
{
	static const struct {
		struct tsr_srcval opt;
		int rc;
		const char *says;
	} bad[] = {
		{ OPT("size", "-1"), -EINVAL, "size" },
		{ OPT("size", "lots"), -EINVAL, "size" },
		{ OPT("sise", "64M"), -EINVAL, "sise" },
		{ OPT("force", "maybe"), -EINVAL, "force" },
		{ OPT("compression", "lz4"), -EINVAL, "lz4" },
		{ OPT("min_free", "-1"), -EINVAL, "min_free" },
		{ OPT("path", ""), -EINVAL, "path" },
	};
	static const char *const blkdevs[] = { "/dev/vda", "/dev/sda", "/dev/nvme0n1",
					       "/dev/loop0", "/dev/xvda" };
	struct store s;
	struct tsr_srcval only = OPT("size", "64M");
	char err[1024] = "";
	struct tsr_instance *inst = NULL;
	int rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = st_try(&s, "store", &bad[i].opt, 1);
		ck_assert_msg(rc < 0, "%s=%s accepted", bad[i].opt.name, bad[i].opt.s);
		ck_assert_msg(rc == bad[i].rc, "%s=%s: %d (%s), want %d", bad[i].opt.name,
			      bad[i].opt.s, rc, strerror(-rc), bad[i].rc);
		ck_assert_contains(s.err, bad[i].says);
		ck_assert_contains(s.err, bad[i].opt.name);
		ck_assert_ptr_null(s.inst);
	}
	/* path is required */
	rc = tsr_instance_create(plugin, &host, &only, 1, &inst, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_contains(err, "path");
	ck_assert_ptr_null(inst);
	/* nothing was made on disk */
	snprintf(s.dir, sizeof(s.dir), "%s/store", tdir);
	ck_assert_int_eq(dir_count(s.dir), 0);

	/* a block device without meta_path: refused by create, which only
	 * looks at the device node (never opens it) */
	for (size_t i = 0; i < sizeof(blkdevs) / sizeof(blkdevs[0]); i++) {
		struct tsr_srcval p = OPT("path", blkdevs[i]);
		struct stat st;

		if (stat(blkdevs[i], &st) != 0 || !S_ISBLK(st.st_mode))
			continue;
		inst = NULL;
		err[0] = '\0';
		rc = tsr_instance_create(plugin, &host, &p, 1, &inst, err, sizeof(err));
		if (rc == 0)
			tsr_instance_destroy(inst); /* no mkfs, no mount */
		ck_assert_msg(rc == -EINVAL, "path=%s without meta_path: %d",
			      blkdevs[i], rc);
		ck_assert_contains(err, "meta_path");
		ck_assert_contains(err, blkdevs[i]);
		break;
	}
}
END_TEST

/* ---- main -----------------------------------------------------------------*/

static void
add_tests(TCase *tc)
{
	tcase_add_test(tc, mkfs_refuses);
	tcase_add_test(tc, mkfs_zero_fill);
	tcase_add_test(tc, zero_fill_survives_frees);
	tcase_add_test(tc, frees_discarded_then_reused);
	tcase_add_loop_test(tc, superblock_damaged, 0, SB_NVARIANTS);
	tcase_add_test(tc, meta_missing);
	tcase_add_test(tc, meta_empty_dir);
	tcase_add_test(tc, meta_foreign);
	tcase_add_loop_test(tc, journal_bad, 0, JR_NVARIANTS);
	tcase_add_loop_test(tc, crash_replay, 0, CR_NVARIANTS);
	tcase_add_test(tc, txn_bigger_than_journal);
	tcase_add_test(tc, full_device);
	tcase_add_test(tc, remove_when_reserve_reached);
	tcase_add_test(tc, data_bitflip);
	tcase_add_test(tc, cow_overwrite);
	tcase_add_loop_test(tc, space_accounting, 0, 2);
	tcase_add_loop_test(tc, fsck_bad_maps, 0, FM_NVARIANTS);
	tcase_add_test(tc, zstd_store);
	tcase_add_test(tc, zstd_fragmented_free_space);
	tcase_add_test(tc, option_errors);
}

int
main(void)
{
	static const struct bt_backend be = {
		.name = "blockdev",
		.plugin_env = "BACKEND_BLOCKDEV_PLUGIN",
		.so_hint = "build/plugins/backend-blockdev/.libs/blockdev.so",
		.env_prefix = "BDEV",
		.root = "/tmp/tsr-test-bdev.XXXXXX",
		.layout = bd_layout,
		.defaults = bd_defaults,
		.ndefaults = sizeof(bd_defaults) / sizeof(bd_defaults[0]),
		/* mkfs preallocates 64 MiB images, and the full-device tests
		 * write them full; slow disks and sanitizers get room */
		.timeout = 120,
	};

	return bt_main(&be, add_tests);
}
