/* test_bf_journal.c — backend-file's write-ahead journal: creating and
 * opening it (and refusing one that is foreign, short or damaged),
 * records replayed exactly as appended, a torn tail, a full journal and
 * its checkpoint — on the O_DIRECT path, on tmpfs, and on the buffered
 * path forced by refusing O_DIRECT. */
/* the open() shim below must not meet glibc's inline fortified open() */
#undef _FORTIFY_SOURCE
#include "ostore/journal.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char root[128];     /* on the disk's file system */
static char shmroot[128];  /* on tmpfs, when /dev/shm exists */
static char dir[256];
static char path[400];
static char err[1024];
static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8,
				  9, 10, 11, 12, 13, 14, 15, 16 };

#define BLK 4096u

/* ---- Refusing O_DIRECT ----------------------------------------------------
 *
 * Linux tmpfs takes O_DIRECT since 6.6, so /dev/shm no longer guarantees
 * the buffered path.  This open() (the executable's definition wins over
 * libc's, for journal.c too) refuses O_DIRECT the way a file system
 * without it does, when a test case asks it to. */
static int refuse_direct;
static int direct_refused;  /* O_DIRECT opens refused */
static int direct_opened;   /* and let through, successfully */

int
open(const char *file, int flags, ...)
{
	static int (*real_open)(const char *, int, ...);
	mode_t mode = 0;

	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (refuse_direct && (flags & O_DIRECT)) {
		direct_refused++;
		errno = EINVAL;
		return -1;
	}
	if (real_open == NULL)
		*(void **)&real_open = dlsym(RTLD_NEXT, "open");
	int fd = real_open(file, flags, mode);
	if (fd >= 0 && (flags & O_DIRECT))
		direct_opened++;
	return fd;
}

/* Does the file system under dir take O_DIRECT? */
static int
takes_direct(void)
{
	char p[480];
	int fd;

	snprintf(p, sizeof(p), "%s/probe", dir);
	fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
	if (fd >= 0)
		close(fd);
	unlink(p);
	return fd >= 0;
}

/* ---- Fixtures --------------------------------------------------------------*/

static void
make_dir(const char *under)
{
	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", under);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/journal", dir);
}

static void
setup(void)
{
	make_dir(root);
}

static void
setup_shm(void)
{
	make_dir(shmroot);
}

static void
setup_buffered(void)
{
	make_dir(root);
	refuse_direct = 1;
}

static void
teardown(void)
{
	ck_assert_int_eq(tu_rm_rf(dir), 0);
}

/* ---- Helpers ---------------------------------------------------------------*/

static void
create_journal(uint64_t size)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(dfd, 0);
	ck_assert_msg(jr_create(dfd, "journal", path, size, uuid, err,
				sizeof(err)) == 0, "%s", err);
	close(dfd);
}

static struct jr *
open_journal(void)
{
	struct jr *j = NULL;

	ck_assert_msg(jr_open(path, uuid, &j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(j);
	return j;
}

/* Bytes a record takes on disk, from the layout in journal.h. */
static uint64_t
span(size_t n)
{
	return (JR_REC_HEADER + n + BLK - 1) / BLK * BLK;
}

/* Payload number tag of n bytes: different for every tag and offset. */
static uint8_t *
payload(size_t n, unsigned tag)
{
	uint8_t *p = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(tag * 131u + i * 7u + (i >> 8) * 3u);
	return p;
}

static uint64_t
append(struct jr *j, size_t n, unsigned tag)
{
	uint8_t *p = payload(n, tag);
	uint64_t seq = 0;

	ck_assert_msg(jr_append(j, p, n, &seq, err, sizeof(err)) == 0, "%s", err);
	free(p);
	return seq;
}

struct rec {
	uint64_t seq;
	size_t n;
	uint8_t *p;
	int last;
};

struct seen {
	struct rec *r;
	size_t n, cap;
	size_t stop_at;   /* return stop_rc on this record (1-based), 0: never */
	int stop_rc;
};

static int
collect(void *arg, uint64_t seq, const void *p, size_t n, int last)
{
	struct seen *s = arg;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->r = realloc(s->r, s->cap * sizeof(*s->r));
		ck_assert_ptr_nonnull(s->r);
	}
	s->r[s->n].seq = seq;
	s->r[s->n].n = n;
	s->r[s->n].last = last;
	s->r[s->n].p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(s->r[s->n].p);
	if (n > 0) /* an empty record may come with p NULL */
		memcpy(s->r[s->n].p, p, n);
	s->n++;
	return s->n == s->stop_at ? s->stop_rc : 0;
}

static void
seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->r[i].p);
	free(s->r);
	memset(s, 0, sizeof(*s));
}

/* Replay j into s (emptied first); returns jr_replay's result. */
static int
replay(struct jr *j, struct seen *s, uint64_t *nrec)
{
	size_t stop_at = s->stop_at;
	int stop_rc = s->stop_rc;

	seen_free(s);
	s->stop_at = stop_at;
	s->stop_rc = stop_rc;
	return jr_replay(j, collect, s, nrec, err, sizeof(err));
}

/* Record i of s is seq with payload (n, tag). */
static void
expect_rec(const struct seen *s, size_t i, uint64_t seq, size_t n, unsigned tag)
{
	uint8_t *p = payload(n, tag);

	ck_assert_uint_lt(i, s->n);
	ck_assert_uint_eq(s->r[i].seq, seq);
	ck_assert_uint_eq(s->r[i].n, n);
	ck_assert_msg(memcmp(s->r[i].p, p, n) == 0, "record %zu: payload differs", i);
	free(p);
}

static void
write_at(uint64_t off, const void *p, size_t n)
{
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void
read_at(uint64_t off, void *p, size_t n)
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, p, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void
flip_byte(uint64_t off)
{
	uint8_t b;

	read_at(off, &b, 1);
	b ^= 0x5a;
	write_at(off, &b, 1);
}

static uint64_t
le(const uint8_t *b, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* The record header at off, as journal.h draws it. */
static void
expect_on_disk(uint64_t off, size_t n, uint64_t seq)
{
	uint8_t h[JR_REC_HEADER];

	ck_assert_uint_eq(off % BLK, 0);
	read_at(off, h, sizeof(h));
	ck_assert_uint_eq(le(h, 4), 0x4a524543u);
	ck_assert_uint_eq(le(h + 4, 4), n);
	ck_assert_uint_eq(le(h + 8, 8), seq);
	ck_assert_uint_eq(le(h + 20, 4), 0);
}

/* Build a record (header and payload) as a client writing object data
 * could: everything journal.h describes except the lap's nonce, which only
 * the journal header holds. */
static void
forge_record(uint8_t *out, uint64_t seq, const void *p, uint32_t n)
{
	uint8_t *h = out;
	uint32_t crc;

	memset(h, 0, JR_REC_HEADER);
	for (int i = 0; i < 4; i++) {
		h[i] = (uint8_t)(0x4a524543u >> (8 * i));
		h[4 + i] = (uint8_t)(n >> (8 * i));
	}
	for (int i = 0; i < 8; i++)
		h[8 + i] = (uint8_t)(seq >> (8 * i));
	crc = tsr_crc32c(tsr_crc32c(0, h, 16), p, n);
	for (int i = 0; i < 4; i++)
		h[16 + i] = (uint8_t)(crc >> (8 * i));
	memcpy(out + JR_REC_HEADER, p, n);
}

/* Write header copy slot (0: at 0, 1: at 2048) as journal.h describes it. */
static void
forge_header(int slot, uint64_t size, uint64_t gen, uint64_t cp_seq)
{
	struct tsr_enc e;
	uint8_t buf[2048] = { 0 };
	uint8_t *b;
	size_t mark, len;

	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, 0x314c4e524a525354ull);
	tsr_enc_raw(&e, uuid, 16);
	tsr_enc_u64(&e, size);
	tsr_enc_u64(&e, gen);
	tsr_enc_u64(&e, cp_seq);
	tsr_enc_u64(&e, 0); /* nonce: the lap's checksum seed */
	tsr_enc_end_struct(&e, mark);
	tsr_enc_u32(&e, tsr_crc32c(0, e.buf, e.len));
	b = tsr_enc_take(&e, &len);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_le(len, sizeof(buf));
	memcpy(buf, b, len);
	free(b);
	write_at((uint64_t)slot * 2048, buf, sizeof(buf));
}

/* ---- Create and open -------------------------------------------------------*/

START_TEST(create_refuses_existing_and_small)
{
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(dfd, 0);
	/* below the minimum: refused, and nothing is left behind */
	ck_assert_int_eq(jr_create(dfd, "journal", path, JR_MIN_SIZE - 1, uuid,
				   err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "minimum");
	ck_assert_int_eq(stat(path, &st), -1);
	/* the minimum itself is fine, and the file has exactly that size */
	ck_assert_msg(jr_create(dfd, "journal", path, JR_MIN_SIZE, uuid, err,
				sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, JR_MIN_SIZE);
	/* put a record in, then try to create over it */
	struct jr *j = open_journal();
	ck_assert_uint_eq(append(j, 100, 1), 1);
	jr_close(j);
	err[0] = '\0';
	ck_assert_int_eq(jr_create(dfd, "journal", path, 2 * JR_MIN_SIZE, uuid,
				   err, sizeof(err)), -EEXIST);
	ck_assert_contains(err, path);
	/* ... which left the existing journal alone */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, JR_MIN_SIZE);
	j = open_journal();
	struct seen s = { 0 };
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 1, 100, 1);
	seen_free(&s);
	jr_close(j);
	/* nor is any other existing file touched */
	int fd = openat(dfd, "precious", O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "keep", 4), 4);
	close(fd);
	ck_assert_int_eq(jr_create(dfd, "precious", "precious", JR_MIN_SIZE, uuid,
				   err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(fstatat(dfd, "precious", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 4);
	close(dfd);
}
END_TEST

START_TEST(fresh_journal_is_empty)
{
	struct seen s = { 0 };
	uint64_t nrec = 99;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	ck_assert_uint_eq(jr_capacity(j), JR_MIN_SIZE - JR_HEADER_SIZE);
	ck_assert_uint_eq(jr_max_payload(j), JR_MIN_SIZE - JR_HEADER_SIZE - JR_REC_HEADER);
	ck_assert_uint_eq(jr_used(j), 0);
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(jr_used(j), 0);
	/* the first record is seq 1, at the first block after the header */
	ck_assert_uint_eq(append(j, 10, 1), 1);
	ck_assert_uint_eq(jr_used(j), BLK);
	jr_close(j);
	expect_on_disk(JR_HEADER_SIZE, 10, 1);
	seen_free(&s);
}
END_TEST

START_TEST(odd_size_rounds_capacity_down)
{
	/* a size that is not a multiple of the block: the tail is unusable */
	uint64_t size = JR_MIN_SIZE + 1000;
	uint64_t max;
	uint8_t *p;
	uint64_t seq;
	struct jr *j;

	create_journal(size);
	j = open_journal();
	ck_assert_uint_eq(jr_capacity(j), size - JR_HEADER_SIZE);
	max = jr_max_payload(j);
	ck_assert_uint_eq(max, (size - JR_HEADER_SIZE) / BLK * BLK - JR_REC_HEADER);
	p = payload(max + 1, 3);
	ck_assert_int_eq(jr_append(j, p, max + 1, &seq, err, sizeof(err)), -E2BIG);
	ck_assert_msg(jr_append(j, p, max, &seq, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(seq, 1);
	ck_assert_uint_le(jr_used(j), jr_capacity(j));
	ck_assert_int_eq(jr_append(j, p, 0, &seq, err, sizeof(err)), -ENOSPC);
	jr_close(j);
	j = open_journal();
	struct seen s = { 0 };
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 1, max, 3);
	seen_free(&s);
	free(p);
	jr_close(j);
}
END_TEST

START_TEST(open_refuses_another_store)
{
	uint8_t other[16];
	struct jr *j = NULL;

	create_journal(JR_MIN_SIZE);
	memcpy(other, uuid, 16);
	other[15] ^= 1;
	ck_assert_int_eq(jr_open(path, other, &j, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(j);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "another store");
}
END_TEST

START_TEST(open_refuses_truncated)
{
	struct jr *j = NULL;

	create_journal(2 * JR_MIN_SIZE);
	/* shorter than the size its header records */
	ck_assert_int_eq(truncate(path, 2 * JR_MIN_SIZE - BLK), 0);
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(j);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "truncated");
	/* shorter than the two header copies themselves */
	ck_assert_int_eq(truncate(path, 3000), 0);
	err[0] = '\0';
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(j);
	ck_assert_contains(err, path);
	/* empty */
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(j);
	/* missing altogether */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, path);
}
END_TEST

START_TEST(open_accepts_grown_file)
{
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	ck_assert_int_eq(truncate(path, 2 * JR_MIN_SIZE), 0);
	j = open_journal();
	/* the header's size rules, not the file's */
	ck_assert_uint_eq(jr_capacity(j), JR_MIN_SIZE - JR_HEADER_SIZE);
	jr_close(j);
}
END_TEST

START_TEST(open_refuses_both_headers_damaged)
{
	uint8_t junk[JR_HEADER_SIZE];
	struct jr *j = NULL;

	create_journal(JR_MIN_SIZE);
	memset(junk, 0xa5, sizeof(junk));
	write_at(0, junk, sizeof(junk));
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(j);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "damaged");
	/* zeros, as if the header was never written */
	memset(junk, 0, sizeof(junk));
	write_at(0, junk, sizeof(junk));
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(j);
}
END_TEST

START_TEST(open_refuses_flipped_header_byte)
{
	struct jr *j = NULL;

	create_journal(JR_MIN_SIZE);
	/* a fresh journal's header is in copy B (generation 1); A is zeros */
	for (uint64_t off = 2048; off < 2048 + 60; off += 7) {
		flip_byte(off);
		ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
		ck_assert_ptr_null(j);
		flip_byte(off);
	}
	jr_close(open_journal());
}
END_TEST

START_TEST(open_uses_the_good_header_copy)
{
	uint8_t junk[2048];
	struct seen s = { 0 };
	struct jr *j;

	memset(junk, 0xa5, sizeof(junk));
	create_journal(JR_MIN_SIZE);
	j = open_journal();
	append(j, 50, 1);
	append(j, 60, 2);
	jr_close(j);
	/* copy A garbage, B (generation 1, nothing checkpointed) good */
	write_at(0, junk, sizeof(junk));
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 2);
	expect_rec(&s, 0, 1, 50, 1);
	expect_rec(&s, 1, 2, 60, 2);
	/* checkpoint: generation 2 goes to copy A, and says records <= 2 are
	 * applied; one record after it */
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(append(j, 70, 3), 3);
	jr_close(j);
	/* both good: the newer one (A) rules */
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 3, 70, 3);
	jr_close(j);
	/* copy B garbage, A good: the same */
	write_at(2048, junk, sizeof(junk));
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 3, 70, 3);
	/* and the next checkpoint (generation 3) rewrites copy B */
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	jr_close(j);
	write_at(0, junk, sizeof(junk));
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(append(j, 1, 4), 4);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* ---- Records ---------------------------------------------------------------*/

static const size_t sizes[] = { 0, 1, 4071, 4072, 4073, 100000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

START_TEST(append_then_replay_in_order)
{
	struct seen s = { 0 };
	uint64_t nrec = 0, used = 0, off = JR_HEADER_SIZE;
	struct jr *j;

	direct_refused = direct_opened = 0;
	create_journal(JR_MIN_SIZE);
	j = open_journal();
	/* the path this case means to test is the one taken */
	if (refuse_direct)
		ck_assert_int_gt(direct_refused, 0);
	else if (direct_opened == 0)
		ck_assert_msg(!takes_direct(), "O_DIRECT works here, the journal did not use it");
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	for (size_t i = 0; i < NSIZES; i++) {
		ck_assert_uint_eq(append(j, sizes[i], (unsigned)i), i + 1);
		used += span(sizes[i]);
		ck_assert_uint_eq(jr_used(j), used);
		ck_assert_uint_eq(jr_capacity(j), JR_MIN_SIZE - JR_HEADER_SIZE);
	}
	jr_close(j);
	/* every record starts on a block, after the one before it */
	for (size_t i = 0; i < NSIZES; i++) {
		expect_on_disk(off, sizes[i], i + 1);
		off += span(sizes[i]);
	}
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, NSIZES);
	ck_assert_uint_eq(s.n, NSIZES);
	for (size_t i = 0; i < NSIZES; i++)
		expect_rec(&s, i, i + 1, sizes[i], (unsigned)i);
	ck_assert_uint_eq(jr_used(j), used);
	/* replaying again gives the same */
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, NSIZES);
	ck_assert_uint_eq(jr_used(j), used);
	/* appends continue after the last one */
	ck_assert_uint_eq(append(j, 5, 77), NSIZES + 1);
	jr_close(j);
	expect_on_disk(off, 5, NSIZES + 1);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, NSIZES + 1);
	for (size_t i = 0; i < NSIZES; i++)
		expect_rec(&s, i, i + 1, sizes[i], (unsigned)i);
	expect_rec(&s, NSIZES, NSIZES + 1, 5, 77);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* Offset of record i (0-based) of a journal holding records of sizes n. */
static uint64_t
rec_off(const size_t *n, size_t i)
{
	uint64_t off = JR_HEADER_SIZE;

	for (size_t k = 0; k < i; k++)
		off += span(n[k]);
	return off;
}

START_TEST(torn_record_ends_replay)
{
	const size_t n[] = { 5000, 300, 9000 };
	struct seen s = { 0 };
	uint64_t nrec = 0;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	for (size_t i = 0; i < 3; i++)
		append(j, n[i], (unsigned)i + 1);
	jr_close(j);
	/* one byte of the last record's payload is wrong */
	flip_byte(rec_off(n, 2) + JR_REC_HEADER + 4500);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 2);
	ck_assert_uint_eq(s.n, 2);
	expect_rec(&s, 0, 1, n[0], 1);
	expect_rec(&s, 1, 2, n[1], 2);
	ck_assert_uint_eq(jr_used(j), span(n[0]) + span(n[1]));
	/* the next append takes the torn record's place and seq */
	ck_assert_uint_eq(append(j, 100, 9), 3);
	jr_close(j);
	expect_on_disk(rec_off(n, 2), 100, 3);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	expect_rec(&s, 0, 1, n[0], 1);
	expect_rec(&s, 1, 2, n[1], 2);
	expect_rec(&s, 2, 3, 100, 9);
	jr_close(j);
	seen_free(&s);
}
END_TEST

START_TEST(torn_tail_of_multiblock_record)
{
	/* a record of several blocks whose later blocks never landed */
	const size_t n[] = { 10, 20000 };
	uint8_t zeros[BLK] = { 0 };
	struct seen s = { 0 };
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	append(j, n[0], 1);
	append(j, n[1], 2);
	jr_close(j);
	write_at(rec_off(n, 1) + 2 * BLK, zeros, BLK);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 1, n[0], 1);
	jr_close(j);
	/* and a damaged header (its length) ends it just the same */
	flip_byte(rec_off(n, 0) + 5);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(jr_used(j), 0);
	ck_assert_uint_eq(append(j, 1, 3), 1);
	jr_close(j);
	seen_free(&s);
}
END_TEST

START_TEST(damaged_record_before_intact_one_refused)
{
	/* a crash tears only the last record: an intact one after the stop
	 * means committed records were damaged, and replay says so */
	const size_t n[] = { 100, 5000, 200, 300 };
	struct seen s = { 0 };
	uint64_t nrec = 99;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	for (size_t i = 0; i < 4; i++)
		append(j, n[i], (unsigned)i + 1);
	jr_close(j);
	/* the payload of record 2: its header says where record 3 is */
	flip_byte(rec_off(n, 1) + JR_REC_HEADER + 4000);
	j = open_journal();
	err[0] = '\0';
	ck_assert_int_eq(replay(j, &s, &nrec), -EBADMSG);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "damaged");
	ck_assert_uint_eq(nrec, 1);
	jr_close(j);
	flip_byte(rec_off(n, 1) + JR_REC_HEADER + 4000);
	/* its magic: record 3 is found by looking at the blocks after it */
	flip_byte(rec_off(n, 1));
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), -EBADMSG);
	ck_assert_contains(err, path);
	jr_close(j);
	flip_byte(rec_off(n, 1));
	/* undamaged, it all replays */
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 4);
	jr_close(j);
	/* damage to the last record alone is a torn tail */
	flip_byte(rec_off(n, 3) + JR_REC_HEADER + 10);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	jr_close(j);
	seen_free(&s);
}
END_TEST

START_TEST(damage_found_past_a_large_record)
{
	/* record 2 is larger than the window replay searches blindly; its
	 * intact header still leads to record 3 */
	const size_t n[] = { 10, (17u << 20), 10 };
	struct seen s = { 0 };
	struct jr *j;

	create_journal(40u << 20);
	j = open_journal();
	for (size_t i = 0; i < 3; i++)
		append(j, n[i], (unsigned)i + 1);
	jr_close(j);
	flip_byte(rec_off(n, 1) + JR_REC_HEADER + (9u << 20));
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), -EBADMSG);
	ck_assert_contains(err, "damaged");
	jr_close(j);
	seen_free(&s);
}
END_TEST

START_TEST(full_journal_then_checkpoint)
{
	const uint64_t cap = JR_MIN_SIZE - JR_HEADER_SIZE;
	const uint64_t blocks = cap / BLK;
	uint64_t seq = 0, got, nrec = 0, last;
	struct seen s = { 0 };
	struct jr *j;
	uint8_t *p;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	/* one-block records up to two blocks before the end */
	for (uint64_t i = 0; i < blocks - 2; i++)
		ck_assert_uint_eq(append(j, 4072, (unsigned)i), ++seq);
	/* a two-block record fills it exactly */
	ck_assert_uint_eq(append(j, 8000, 500), ++seq);
	ck_assert_uint_eq(jr_used(j), cap);
	/* nothing more fits: -ENOSPC, and neither seq nor space is used */
	p = payload(4072, 0);
	ck_assert_int_eq(jr_append(j, p, 0, &got, err, sizeof(err)), -ENOSPC);
	ck_assert_int_eq(jr_append(j, p, 4072, &got, err, sizeof(err)), -ENOSPC);
	ck_assert_uint_eq(jr_used(j), cap);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, seq);
	expect_rec(&s, seq - 1, seq, 8000, 500);
	ck_assert_uint_eq(jr_used(j), cap);
	ck_assert_int_eq(jr_append(j, p, 0, &got, err, sizeof(err)), -ENOSPC);
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(jr_used(j), 0);
	/* a checkpoint with nothing after it: nothing to replay */
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 0);
	ck_assert_uint_eq(jr_used(j), 0);
	/* laps with fewer records each time: the previous lap's records past
	 * the new ones have lower seqs and are never replayed */
	for (unsigned lap = 0; lap < 4; lap++) {
		uint64_t first = seq + 1;
		uint64_t count = blocks / (lap + 2);

		for (uint64_t i = 0; i < count; i++)
			ck_assert_uint_eq(append(j, (size_t)(i * 37 % 4000), lap * 1000 + (unsigned)i),
					  ++seq);
		ck_assert_uint_eq(jr_used(j), count * BLK);
		jr_close(j);
		j = open_journal();
		ck_assert_int_eq(replay(j, &s, &nrec), 0);
		ck_assert_uint_eq(nrec, count);
		for (uint64_t i = 0; i < count; i++)
			expect_rec(&s, i, first + i, (size_t)(i * 37 % 4000),
				   lap * 1000 + (unsigned)i);
		ck_assert_uint_eq(jr_used(j), count * BLK);
		ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(jr_used(j), 0);
	}
	/* after the last checkpoint, the next record starts at the front */
	last = append(j, 3, 4242);
	ck_assert_uint_eq(last, seq + 1);
	jr_close(j);
	expect_on_disk(JR_HEADER_SIZE, 3, last);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 1);
	expect_rec(&s, 0, last, 3, 4242);
	jr_close(j);
	free(p);
	seen_free(&s);
}
END_TEST

START_TEST(oversized_payload_refused)
{
	struct jr *j;
	uint64_t max, seq = 0;
	uint8_t *p;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	max = jr_max_payload(j);
	ck_assert_uint_eq(span(max), jr_capacity(j));
	p = payload(max + 1, 5);
	err[0] = '\0';
	ck_assert_int_eq(jr_append(j, p, max + 1, &seq, err, sizeof(err)), -E2BIG);
	ck_assert_contains(err, path);
	ck_assert_int_eq(jr_append(j, p, SIZE_MAX / 2, &seq, err, sizeof(err)), -E2BIG);
	ck_assert_uint_eq(jr_used(j), 0);
	/* the largest fits an empty journal, but not behind another record */
	ck_assert_uint_eq(append(j, 1, 1), 1);
	ck_assert_int_eq(jr_append(j, p, max, &seq, err, sizeof(err)), -ENOSPC);
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(jr_append(j, p, max, &seq, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(seq, 2);
	ck_assert_uint_eq(jr_used(j), jr_capacity(j));
	jr_close(j);
	j = open_journal();
	struct seen s = { 0 };
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 2, max, 5);
	seen_free(&s);
	jr_close(j);
	free(p);
}
END_TEST

START_TEST(callback_stops_replay)
{
	struct seen s = { 0 };
	uint64_t nrec = 99;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	for (unsigned i = 0; i < 4; i++)
		append(j, 100 + i, i);
	jr_close(j);
	j = open_journal();
	/* a positive value: returned as is, no record after it delivered */
	s.stop_at = 2;
	s.stop_rc = 7;
	ck_assert_int_eq(replay(j, &s, &nrec), 7);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(nrec, 1);
	/* a negative errno: the same */
	s.stop_at = 3;
	s.stop_rc = -EIO;
	ck_assert_int_eq(replay(j, &s, &nrec), -EIO);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(nrec, 2);
	/* a stopped replay can be run again, from the start */
	s.stop_at = 0;
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 4);
	for (unsigned i = 0; i < 4; i++)
		expect_rec(&s, i, i + 1, 100 + i, i);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* The callback learns which record is the last; JR_DROP on the last one
 * leaves it out and the next append goes over it; JR_DROP on any other
 * is an error.  Records written unsynced (jr_write) replay like others. */
START_TEST(last_record_can_be_dropped)
{
	struct seen s = { 0 };
	uint64_t nrec = 99, seq = 0;
	uint8_t *p = payload(5000, 2);
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	append(j, 100, 0);
	append(j, 200, 1);
	ck_assert_msg(jr_write(j, p, 5000, &seq, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(seq, 3);
	free(p);
	jr_close(j);

	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	expect_rec(&s, 2, 3, 5000, 2);
	ck_assert_int_eq(s.r[0].last + s.r[1].last, 0);
	ck_assert_int_eq(s.r[2].last, 1);

	/* dropping a record that is not the last: refused */
	s.stop_at = 2;
	s.stop_rc = JR_DROP;
	ck_assert_int_eq(replay(j, &s, &nrec), -EINVAL);
	ck_assert_msg(strstr(err, "not the last") != NULL, "%s", err);

	/* the last: left out, and the next append takes its place */
	s.stop_at = 3;
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 2);
	ck_assert_uint_eq(append(j, 300, 9), 3);
	expect_on_disk(JR_HEADER_SIZE + span(100) + span(200), 300, 3);
	jr_close(j);

	j = open_journal();
	s.stop_at = 0;
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	expect_rec(&s, 0, 1, 100, 0);
	expect_rec(&s, 1, 2, 200, 1);
	expect_rec(&s, 2, 3, 300, 9);
	ck_assert_int_eq(s.r[2].last, 1);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* Dropping the last record read is refused when the record after it is
 * damaged and the next one intact: it was not the last written. */
START_TEST(drop_before_damage_refused)
{
	struct seen s = { 0 };
	uint64_t nrec = 99;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	for (unsigned i = 0; i < 4; i++)
		append(j, 100, i);
	jr_close(j);
	flip_byte(JR_HEADER_SIZE + 2 * span(100) + JR_REC_HEADER + 50);
	j = open_journal();
	s.stop_at = 2; /* record 2: the last one replay can read */
	s.stop_rc = JR_DROP;
	ck_assert_int_eq(replay(j, &s, &nrec), -EBADMSG);
	ck_assert_msg(strstr(err, "record 3") != NULL, "%s", err);
	ck_assert_int_eq(s.r[1].last, 1);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* Bug: jr_replay turns every -ENODATA into 0 (it means end of file from
 * its own full_pread), including one returned by the callback. */
START_TEST(callback_enodata_is_returned)
{
	struct seen s = { .stop_at = 1, .stop_rc = -ENODATA };
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	append(j, 10, 1);
	append(j, 10, 2);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), -ENODATA);
	jr_close(j);
	seen_free(&s);
}
END_TEST

/* Bug: a record's crc covers only itself, so bytes left in the file by an
 * earlier lap that look like the record replay expects next are replayed,
 * though never appended in this lap.  Payloads are client data (object
 * writes are journaled), so a client can plant such bytes. */
START_TEST(stale_payload_is_not_a_record)
{
	/* record 1 spans three blocks; in its payload, at the second block
	 * boundary, sits something shaped like record 3 */
	const size_t n = 3 * BLK - JR_REC_HEADER;
	uint8_t *p = calloc(1, n);
	struct seen s = { 0 };
	uint64_t seq;
	struct jr *j;

	ck_assert_ptr_nonnull(p);
	forge_record(p + BLK - JR_REC_HEADER, 3, "not appended", 12);
	create_journal(JR_MIN_SIZE);
	j = open_journal();
	ck_assert_int_eq(jr_append(j, p, n, &seq, err, sizeof(err)), 0);
	ck_assert_uint_eq(seq, 1);
	/* it is applied; the next lap's record 2 lands on block 0 */
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(append(j, 10, 2), 2);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, NULL), 0);
	ck_assert_msg(s.n == 1, "replayed %zu records, only seq 2 was appended "
		      "since the checkpoint", s.n);
	expect_rec(&s, 0, 2, 10, 2);
	jr_close(j);
	seen_free(&s);
	free(p);
}
END_TEST

/* Bug: the header's size is trusted; one below the minimum (here 0)
 * opens, and jr_capacity/jr_max_payload wrap around. */
START_TEST(header_size_below_minimum_refused)
{
	struct jr *j = NULL;

	create_journal(JR_MIN_SIZE);
	forge_header(0, 0, 5, 0);
	ck_assert_int_eq(jr_open(path, uuid, &j, err, sizeof(err)), -EBADMSG);
	if (j != NULL)
		jr_close(j);
}
END_TEST

/* Bug: the record's length field is a u32, but a journal of more than
 * 4 GiB (journal_size goes to 64G) offers larger payloads, whose length
 * jr_append would truncate.  The file is sparse. */
START_TEST(max_payload_fits_length_field)
{
	const uint64_t size = 5ull << 30;
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	forge_header(0, size, 5, 0);
	ck_assert_int_eq(truncate(path, (off_t)size), 0);
	j = open_journal();
	ck_assert_uint_eq(jr_capacity(j), size - JR_HEADER_SIZE);
	ck_assert_uint_le(jr_max_payload(j), UINT32_MAX);
	jr_close(j);
}
END_TEST

/* Bug, the same cause: when replay stops at the end of the records, it
 * looks for an intact record with the seq after next, and stale payload
 * bytes shaped like one make it refuse the journal (so the store does not
 * mount) although nothing is damaged. */
START_TEST(stale_payload_does_not_refuse_replay)
{
	const size_t n = 3 * BLK - JR_REC_HEADER;
	uint8_t *p = calloc(1, n);
	struct seen s = { 0 };
	uint64_t seq;
	struct jr *j;

	ck_assert_ptr_nonnull(p);
	/* in record 1's payload at the third block: something shaped like
	 * record 4 */
	forge_record(p + 2 * BLK - JR_REC_HEADER, 4, "not appended", 12);
	create_journal(JR_MIN_SIZE);
	j = open_journal();
	ck_assert_int_eq(jr_append(j, p, n, &seq, err, sizeof(err)), 0);
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(append(j, 10, 2), 2);
	jr_close(j);
	j = open_journal();
	ck_assert_msg(replay(j, &s, NULL) == 0, "%s", err);
	ck_assert_uint_eq(s.n, 1);
	expect_rec(&s, 0, 2, 10, 2);
	jr_close(j);
	seen_free(&s);
	free(p);
}
END_TEST

/* jr_dropped's message names the journal, the record's offset and seq,
 * and says what is wrong with it. */
static void
expect_dropped(struct jr *j, uint64_t off, uint64_t seq, const char *what)
{
	char msg[1024], want[64];

	ck_assert_msg(jr_dropped(j, msg, sizeof(msg)) == 1,
		      "record %llu at %llu (%s) dropped without a word",
		      (unsigned long long)seq, (unsigned long long)off, what);
	ck_assert_contains(msg, path);
	snprintf(want, sizeof(want), "last record at offset %llu (seq %llu)",
		 (unsigned long long)off, (unsigned long long)seq);
	ck_assert_contains(msg, want);
	ck_assert_contains(msg, what);
	ck_assert_contains(msg, "dropped as a torn write");
}

/* Bug: one flipped byte in the last record after the checkpoint dropped
 * it on replay with no word at all: a torn write looks the same, but so
 * does an acknowledged transaction the disk damaged.  Replay still drops
 * it (a crash does tear the last record), and jr_dropped says so, for a
 * flip in the payload or in any field of the header; a clean end of the
 * records (zeros, or an earlier lap's records) says nothing. */
START_TEST(last_record_flip_not_silent)
{
	const size_t n[] = { 100, 5000, 300 };
	const struct {
		uint64_t at;      /* in the last record */
		const char *what;
	} flips[] = {
		{ JR_REC_HEADER + 150, "fails its checksum" },  /* payload */
		{ 0, "damaged magic" },
		{ 1, "damaged magic" },
		{ 4, "fails its checksum" },                    /* its length */
		{ 7, "runs past the journal's end" },
		{ 8, "damaged sequence number" },
		{ 15, "damaged sequence number" },
		{ 16, "fails its checksum" },                   /* its crc */
	};
	uint64_t last = rec_off(n, 2), nrec = 0;
	struct seen s = { 0 };
	char msg[1024];
	struct jr *j;

	create_journal(JR_MIN_SIZE);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_int_eq(jr_dropped(j, msg, sizeof(msg)), 0); /* a fresh one */
	for (size_t i = 0; i < 3; i++)
		append(j, n[i], (unsigned)i + 1);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	ck_assert_int_eq(jr_dropped(j, msg, sizeof(msg)), 0);
	jr_close(j);
	for (size_t f = 0; f < sizeof(flips) / sizeof(flips[0]); f++) {
		flip_byte(last + flips[f].at);
		j = open_journal();
		err[0] = '\0';
		ck_assert_msg(replay(j, &s, &nrec) == 0, "%s", err);
		ck_assert_uint_eq(nrec, 2);
		expect_dropped(j, last, 3, flips[f].what);
		jr_close(j);
		flip_byte(last + flips[f].at);
	}
	/* the drop is reported once: the next append takes its place */
	flip_byte(last + JR_REC_HEADER + 10);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	expect_dropped(j, last, 3, "fails its checksum");
	ck_assert_uint_eq(append(j, 10, 9), 3);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 3);
	ck_assert_int_eq(jr_dropped(j, msg, sizeof(msg)), 0);
	/* after a checkpoint the old lap's records lie past the new ones:
	 * the end of the records, not damage */
	ck_assert_msg(jr_checkpoint(j, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(append(j, 10, 4), 4);
	jr_close(j);
	j = open_journal();
	ck_assert_int_eq(replay(j, &s, &nrec), 0);
	ck_assert_uint_eq(nrec, 1);
	ck_assert_msg(jr_dropped(j, msg, sizeof(msg)) == 0, "%s", msg);
	jr_close(j);
	seen_free(&s);
}
END_TEST

static void
add_data_path(TCase *tc)
{
	tcase_add_test(tc, append_then_replay_in_order);
	tcase_add_test(tc, torn_record_ends_replay);
	tcase_add_test(tc, torn_tail_of_multiblock_record);
	tcase_add_test(tc, damaged_record_before_intact_one_refused);
	tcase_add_test(tc, full_journal_then_checkpoint);
	tcase_add_test(tc, oversized_payload_refused);
	tcase_add_test(tc, callback_stops_replay);
	tcase_add_test(tc, last_record_can_be_dropped);
	tcase_add_test(tc, drop_before_damage_refused);
	tcase_add_test(tc, stale_payload_is_not_a_record);
	tcase_add_test(tc, stale_payload_does_not_refuse_replay);
	tcase_add_test(tc, last_record_flip_not_silent);
}

int
main(void)
{
	Suite *s = suite_create("bf_journal");
	TCase *tc = tcase_create("journal");
	TCase *shm = NULL, *buf = tcase_create("buffered");
	struct stat st;
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, create_refuses_existing_and_small);
	tcase_add_test(tc, fresh_journal_is_empty);
	tcase_add_test(tc, odd_size_rounds_capacity_down);
	tcase_add_test(tc, open_refuses_another_store);
	tcase_add_test(tc, open_refuses_truncated);
	tcase_add_test(tc, open_accepts_grown_file);
	tcase_add_test(tc, open_refuses_both_headers_damaged);
	tcase_add_test(tc, open_refuses_flipped_header_byte);
	tcase_add_test(tc, open_uses_the_good_header_copy);
	tcase_add_test(tc, callback_enodata_is_returned);
	tcase_add_test(tc, header_size_below_minimum_refused);
	tcase_add_test(tc, max_payload_fits_length_field);
	tcase_add_test(tc, damage_found_past_a_large_record);
	add_data_path(tc);
	suite_add_tcase(s, tc);
	/* the same records with O_DIRECT refused: the buffered path */
	tcase_set_timeout(buf, 60);
	tcase_add_checked_fixture(buf, setup_buffered, teardown);
	add_data_path(buf);
	suite_add_tcase(s, buf);
	/* every test's files live under one root, removed here even when a
	 * test failed before its teardown could run */
	snprintf(root, sizeof(root), "/tmp/tsr-test-bf-journal-XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	/* and on tmpfs, whichever path its kernel gives */
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(shmroot, sizeof(shmroot), "/dev/shm/tsr-test-bf-journal-XXXXXX");
		if (mkdtemp(shmroot) != NULL) {
			shm = tcase_create("tmpfs");
			tcase_set_timeout(shm, 60);
			tcase_add_checked_fixture(shm, setup_shm, teardown);
			add_data_path(shm);
			suite_add_tcase(s, shm);
		} else {
			shmroot[0] = '\0';
		}
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rm_rf(root);
	if (shmroot[0])
		tu_rm_rf(shmroot);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
