/* test_fsmeta.c — the file system's encodings (core/mds/fsmeta.h,
 * mdsmsg.h) and the u64 map (core/util/u64map.h): every encoding
 * round-trips, every cut of a valid one is refused with a reason, what a
 * peer could not have sent is refused; layouts map every byte to one place;
 * the map agrees with a plain array under random operations. */
#include "mds/fsmeta.h"
#include "mds/mdsmsg.h"
#include "util/u64map.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void
sample_inode(struct tsr_inode *in, uint64_t ino)
{
	memset(in, 0, sizeof(*in));
	in->ino = ino;
	in->mode = S_IFREG | 0640;
	in->uid = 1000;
	in->gid = 100;
	in->nlink = 1;
	in->size = 12345;
	in->mtime.sec = -5; /* before 1970 */
	in->mtime.nsec = 999999999;
	in->ctime.sec = 1700000000;
	in->change = 7;
	tsr_layout_default(&in->layout, 3);
	in->rstat.rbytes = 1;
	ck_assert_int_eq(tsr_inode_xattr_set(in, "user.a", "1", 1), 0);
	ck_assert_int_eq(tsr_inode_xattr_set(in, "user.b", "", 0), 0);
}

/* Every shorter prefix of buf is refused by decode, with a reason. */
#define ASSERT_CUTS_REFUSED(decode_call)                                          \
	for (size_t cut = 0; cut < e.len; cut++) {                                \
		char err_[256] = "";                                              \
		size_t len_ = cut;                                                \
		int rc_ = decode_call;                                            \
		ck_assert_msg(rc_ == -EBADMSG, "a cut at %zu of %zu: %d", cut, e.len, rc_); \
		ck_assert_msg(err_[0], "a cut at %zu refused without a reason", cut); \
	}

START_TEST(inode_round_trip_and_xattrs)
{
	struct tsr_inode in, out, cp;
	struct tsr_enc e;
	const void *v;
	size_t vl;
	char *names;
	size_t nlen;
	char err[256];

	sample_inode(&in, 42);
	in.symlink = strdup("a/b");
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_inode_encode(&e, &in), 0);
	ck_assert_int_eq(tsr_inode_decode(e.buf, e.len, &out, err, sizeof(err)), 0);
	ck_assert_uint_eq(out.ino, 42);
	ck_assert_int_eq(out.mtime.sec, -5);
	ck_assert_uint_eq(out.mtime.nsec, 999999999);
	ck_assert_str_eq(out.symlink, "a/b");
	ck_assert_uint_eq(out.nxattrs, 2);
	ck_assert_int_eq(tsr_inode_xattr_get(&out, "user.a", &v, &vl), 0);
	ck_assert_uint_eq(vl, 1);
	ck_assert_int_eq(memcmp(v, "1", 1), 0);
	ASSERT_CUTS_REFUSED(tsr_inode_decode(e.buf, len_, &cp, err_, sizeof(err_)));
	/* a byte more is refused too */
	{
		uint8_t *more = malloc(e.len + 1);
		memcpy(more, e.buf, e.len);
		more[e.len] = 0;
		ck_assert_int_eq(tsr_inode_decode(more, e.len + 1, &cp, err, sizeof(err)),
				 -EBADMSG);
		free(more);
	}
	tsr_enc_release(&e);

	/* replace, remove, list; a copy is deep */
	ck_assert_int_eq(tsr_inode_xattr_set(&out, "user.a", "22", 2), 0);
	ck_assert_int_eq(tsr_inode_xattr_set(&out, "user.b", NULL, 0), 0);
	ck_assert_int_eq(tsr_inode_xattr_set(&out, "user.b", NULL, 0), -ENODATA);
	ck_assert_int_eq(tsr_inode_xattr_get(&out, "user.b", &v, &vl), -ENODATA);
	ck_assert_uint_eq(out.nxattrs, 1);
	ck_assert_int_eq(tsr_inode_xattr_list(&out, &names, &nlen), 0);
	ck_assert_uint_eq(nlen, 7);
	ck_assert_str_eq(names, "user.a");
	free(names);
	ck_assert_int_eq(tsr_inode_copy(&cp, &out), 0);
	ck_assert_ptr_ne(cp.xattrs, out.xattrs);
	ck_assert_int_eq(tsr_inode_xattr_set(&cp, "user.big", NULL, 0), -ENODATA);
	{
		char *big = calloc(1, TSR_FS_XATTR_VALUE_MAX + 1);
		ck_assert_int_eq(tsr_inode_xattr_set(&cp, "user.big", big,
						     TSR_FS_XATTR_VALUE_MAX + 1), -E2BIG);
		free(big);
	}
	tsr_inode_free(&cp);
	tsr_inode_free(&out);
	tsr_inode_free(&in);
}
END_TEST

START_TEST(inode_refusals)
{
	struct tsr_inode in, out;
	struct tsr_enc e;
	char err[256];

	/* ino 0 */
	sample_inode(&in, 1);
	in.ino = 0;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_inode_encode(&e, &in), 0);
	ck_assert_int_eq(tsr_inode_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	/* nanoseconds out of range */
	in.ino = 5;
	in.atime.nsec = 1000000000u;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_inode_encode(&e, &in), 0);
	ck_assert_int_eq(tsr_inode_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	/* an xattr count that does not match the list */
	in.atime.nsec = 0;
	in.nxattrs = 3;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_inode_encode(&e, &in), 0);
	ck_assert_int_eq(tsr_inode_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	tsr_inode_free(&in);
}
END_TEST

START_TEST(dentry_round_trip)
{
	struct tsr_dentry de = { .kind = TSR_DENTRY_PRIMARY, .ino = 9, .dtype = DT_REG }, out;
	struct tsr_enc e;
	char err[256];

	sample_inode(&de.inode, 9);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_dentry_encode(&e, &de), 0);
	ck_assert_int_eq(tsr_dentry_decode(e.buf, e.len, &out, err, sizeof(err)), 0);
	ck_assert_uint_eq(out.inode.size, 12345);
	tsr_dentry_free(&out);
	ASSERT_CUTS_REFUSED(tsr_dentry_decode(e.buf, len_, &out, err_, sizeof(err_)));
	tsr_enc_release(&e);
	/* a primary entry holding another inode */
	de.ino = 10;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_dentry_encode(&e, &de), 0);
	ck_assert_int_eq(tsr_dentry_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	/* a remote one carries no inode */
	de.kind = TSR_DENTRY_REMOTE;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_dentry_encode(&e, &de), 0);
	ck_assert_int_eq(tsr_dentry_decode(e.buf, e.len, &out, err, sizeof(err)), 0);
	ck_assert_uint_eq(out.ino, 10);
	ck_assert_uint_eq(out.inode.ino, 0);
	tsr_enc_release(&e);
	/* an unknown kind */
	de.kind = 3;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_dentry_encode(&e, &de), 0);
	ck_assert_int_eq(tsr_dentry_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	tsr_inode_free(&de.inode);
}
END_TEST

/* Every update type round-trips; an IOBJ update decodes with its ino (the
 * inode's): a replay once refused such events as "ino 0". */
START_TEST(event_round_trip)
{
	struct tsr_fs_event ev = { .seq = 77 }, out;
	struct tsr_fs_update *u;
	struct tsr_enc e, e2;
	char err[256];

	u = tsr_fs_event_add(&ev, TSR_FSU_LINK);
	u->ino = 1;
	strcpy(u->name, "f");
	u->de.kind = TSR_DENTRY_PRIMARY;
	u->de.ino = 5;
	sample_inode(&u->de.inode, 5);
	u = tsr_fs_event_add(&ev, TSR_FSU_UNLINK);
	u->ino = 1;
	strcpy(u->name, "g");
	u = tsr_fs_event_add(&ev, TSR_FSU_IOBJ);
	sample_inode(&u->inode, 6);
	u = tsr_fs_event_add(&ev, TSR_FSU_IOBJ_RM);
	u->ino = 6;
	u = tsr_fs_event_add(&ev, TSR_FSU_DIR_NEW);
	u->ino = 8;
	u->parent = 1;
	strcpy(u->name, "d");
	u = tsr_fs_event_add(&ev, TSR_FSU_DIR_RM);
	u->ino = 8;
	u = tsr_fs_event_add(&ev, TSR_FSU_REPARENT);
	u->ino = 8;
	u->parent = 2;
	strcpy(u->name, "e");
	u = tsr_fs_event_add(&ev, TSR_FSU_RSTAT);
	u->ino = 2;
	u->dbytes = -100;
	u->dfiles = 1;
	u->dsubdirs = -1;
	u->rctime.sec = 3;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_fs_event_encode(&e, &ev), 0);
	ck_assert_msg(tsr_fs_event_decode(e.buf, e.len, &out, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(out.seq, 77);
	ck_assert_uint_eq(out.n, 8);
	ck_assert_uint_eq(out.u[2].ino, 6);
	ck_assert_uint_eq(out.u[2].inode.ino, 6);
	ck_assert_int_eq(out.u[7].dbytes, -100);
	ck_assert_int_eq(out.u[7].dsubdirs, -1);
	tsr_enc_init(&e2);
	ck_assert_int_eq(tsr_fs_event_encode(&e2, &out), 0);
	ck_assert_uint_eq(e.len, e2.len);
	ck_assert_int_eq(memcmp(e.buf, e2.buf, e.len), 0);
	tsr_enc_release(&e2);
	tsr_fs_event_free(&out);
	ASSERT_CUTS_REFUSED(tsr_fs_event_decode(e.buf, len_, &out, err_, sizeof(err_)));
	tsr_enc_release(&e);
	/* a name with a slash, and "..", are no names */
	strcpy(ev.u[1].name, "a/b");
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_fs_event_encode(&e, &ev), 0);
	ck_assert_int_eq(tsr_fs_event_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	strcpy(ev.u[1].name, "..");
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_fs_event_encode(&e, &ev), 0);
	ck_assert_int_eq(tsr_fs_event_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	/* an unknown update type */
	strcpy(ev.u[1].name, "g");
	ev.u[3].type = 99;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_fs_event_encode(&e, &ev), 0);
	ck_assert_int_eq(tsr_fs_event_decode(e.buf, e.len, &out, err, sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	tsr_fs_event_free(&ev);
}
END_TEST

/* Every byte of the first sets maps to exactly one (object, offset), and
 * consecutive bytes of a stripe unit to consecutive offsets. */
START_TEST(layout_maps_each_byte_once)
{
	struct tsr_layout l = { .object_size = 4 * 65536, .stripe_unit = 65536,
				.stripe_count = 3, .pool = 1 };
	uint64_t objs = 3 * 4, per = 4 * 65536;
	uint8_t *seen = calloc(objs * per / 65536, 1);
	char err[128], oid[48];

	ck_assert_int_eq(tsr_layout_check(&l, err, sizeof(err)), 0);
	for (uint64_t off = 0; off < objs * per; off += 65536) {
		uint64_t o, oo, left;
		tsr_layout_map(&l, off, &o, &oo, &left);
		ck_assert_uint_lt(o, objs);
		ck_assert_uint_eq(left, 65536);
		ck_assert_uint_eq(oo % 65536, 0);
		ck_assert_uint_eq(seen[(o * per + oo) / 65536], 0);
		seen[(o * per + oo) / 65536] = 1;
		tsr_layout_map(&l, off + 100, &o, &oo, &left);
		ck_assert_uint_eq(oo % 65536, 100);
		ck_assert_uint_eq(left, 65536 - 100);
	}
	free(seen);
	/* one stripe: plain chunks */
	tsr_layout_default(&l, 1);
	{
		uint64_t o, oo, left;
		tsr_layout_map(&l, (9u << 20) + 5, &o, &oo, &left);
		ck_assert_uint_eq(o, 2);
		ck_assert_uint_eq(oo, (1u << 20) + 5);
		ck_assert_uint_eq(left, (3u << 20) - 5);
	}
	tsr_fs_data_oid(0x10000000001ull, 2, oid, sizeof(oid));
	ck_assert_str_eq(oid, "10000000001.00000002");
	l.stripe_unit = 1000;
	ck_assert_int_eq(tsr_layout_check(&l, err, sizeof(err)), -EINVAL);
	l.stripe_unit = 65536;
	l.object_size = 65536 * 3 + 1;
	ck_assert_int_eq(tsr_layout_check(&l, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(hex_versions_order_as_numbers)
{
	char a[17], b[17];
	uint64_t v;

	tsr_fs_hex16(9, a);
	tsr_fs_hex16(10, b);
	ck_assert_int_lt(strcmp(a, b), 0);
	ck_assert_int_eq(tsr_fs_unhex16(b, 16, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(tsr_fs_unhex16("000000000000000g", 16, &v), -EINVAL);
	ck_assert_int_eq(tsr_fs_unhex16("0", 1, &v), -EINVAL);
	ck_assert_uint_eq(tsr_fs_rank_ino_base(0), 1ull << 40);
	ck_assert_uint_eq(tsr_fs_rank_ino_base(1), 2ull << 40);
}
END_TEST

START_TEST(messages)
{
	struct tsr_mds_request r = { .tid = 5, .op = TSR_MDS_OP_RENAME, .ino = 1, .ino2 = 2,
				     .uid = 1000, .gid = 100, .ngroups = 2,
				     .groups = { 4, 5 } };
	struct tsr_mds_reply rep = { .tid = 5, .result = -ENOENT, .end = 1 }, rout;
	struct tsr_mds_session s = { .tid = 1, .op = TSR_MDS_SESSION_OPEN, .client = 9 };
	struct tsr_mds_dirent ent[2];
	struct tsr_enc e;
	char err[256];

	ck_assert_str_eq(tsr_mdsmsg_name(TSR_MSG_MDS_REQUEST), "mds request");
	ck_assert_ptr_null(tsr_mdsmsg_name(TSR_MSG_USER + 127));
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_USER + 127, "", 0, NULL, 0), -ENOENT);
	ck_assert_int_eq(tsr_mds_op_writes(TSR_MDS_OP_RENAME), 1);
	ck_assert_int_eq(tsr_mds_op_writes(TSR_MDS_OP_LOOKUP), 0);

	strcpy(r.name, "a");
	strcpy(r.name2, "b");
	r.value = "xyz";
	r.value_len = 3;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), 0);
	ASSERT_CUTS_REFUSED(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, len_, err_,
					     sizeof(err_)));
	tsr_enc_release(&e);
	/* what a client could not have sent */
	r.op = 99;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "op 99"));
	tsr_enc_release(&e);
	r.op = TSR_MDS_OP_READDIR;
	r.max = TSR_MDS_READDIR_MAX + 1;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);

	/* a lock whose range ends before it starts, or of no known type */
	r.op = TSR_MDS_OP_SETLK;
	r.max = 0;
	r.lk.start = 10;
	r.lk.end = 5;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	r.lk.end = UINT64_MAX;
	r.lk.type = 7;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	r.lk.type = F_WRLCK | TSR_LOCK_FLOCK;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), 0);
	tsr_enc_release(&e);

	/* a tell's ctime (v3) comes through; a nanosecond count past a
	 * second does not */
	struct tsr_mds_request back;
	r.op = TSR_MDS_OP_SETATTR;
	r.sa.mask = TSR_SETATTR_MTIME | TSR_SETATTR_CTIME;
	r.sa.ctime = (struct tsr_ftime){ 1700000000, 123456789 };
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_request_decode(e.buf, e.len, &back, err, sizeof(err)), 0);
	ck_assert_int_eq(back.sa.ctime.sec, 1700000000);
	ck_assert_uint_eq(back.sa.ctime.nsec, 123456789);
	ck_assert_uint_eq(back.sa.mask, r.sa.mask);
	tsr_enc_release(&e);
	r.sa.ctime.nsec = 1000000000u;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_request_encode(&e, &r), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
	r.sa.mask = 0;
	r.sa.ctime = (struct tsr_ftime){ 0, 0 };

	sample_inode(&rep.in[0], 3);
	rep.n = 1;
	memset(ent, 0, sizeof(ent));
	strcpy(ent[0].name, "x");
	ent[0].cookie = 10;
	sample_inode(&ent[0].inode, 4);
	strcpy(ent[1].name, "y");
	ent[1].cookie = 11;
	sample_inode(&ent[1].inode, 5);
	rep.ent = ent;
	rep.nent = 2;
	rep.value = "v";
	rep.value_len = 1;
	strcpy(rep.why, "no such thing");
	rep.nosec = 1;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_reply_encode(&e, &rep), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REPLY, e.buf, e.len, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tsr_mdsmsg_reply_decode(e.buf, e.len, &rout, err, sizeof(err)), 0);
	ck_assert_uint_eq(rout.nent, 2);
	ck_assert_str_eq(rout.ent[1].name, "y");
	ck_assert_str_eq(rout.why, "no such thing");
	ck_assert_uint_eq(rout.nosec, 1);
	tsr_mdsmsg_reply_free(&rout);
	ASSERT_CUTS_REFUSED(tsr_mdsmsg_check(TSR_MSG_MDS_REPLY, e.buf, len_, err_,
					     sizeof(err_)));
	tsr_enc_release(&e);
	/* a positive result is no errno */
	rep.result = 5;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_reply_encode(&e, &rep), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_REPLY, e.buf, e.len, err, sizeof(err)),
			 -EBADMSG);
	tsr_enc_release(&e);
	tsr_inode_free(&rep.in[0]);
	tsr_inode_free(&ent[0].inode);
	tsr_inode_free(&ent[1].inode);

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_session_encode(&e, &s), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_SESSION, e.buf, e.len, err,
					  sizeof(err)), 0);
	ASSERT_CUTS_REFUSED(tsr_mdsmsg_check(TSR_MSG_MDS_SESSION, e.buf, len_, err_,
					     sizeof(err_)));
	tsr_enc_release(&e);
	s.op = 4;
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_mdsmsg_session_encode(&e, &s), 0);
	ck_assert_int_eq(tsr_mdsmsg_check(TSR_MSG_MDS_SESSION, e.buf, e.len, err,
					  sizeof(err)), -EBADMSG);
	tsr_enc_release(&e);
}
END_TEST

/* Random puts and deletes, with keys that collide in few slots, against a
 * plain array. */
START_TEST(u64map_matches_an_array)
{
	enum { N = 512 };
	struct tsr_u64map m = { 0 };
	void *ref[N] = { 0 };
	size_t n = 0;

	srand(42);
	for (int i = 0; i < 50000; i++) {
		uint64_t k = (uint64_t)(rand() % N);
		void *v = (void *)(uintptr_t)(i + 1);
		if (k == 0)
			continue;
		if (rand() % 3 == 0) {
			ck_assert_ptr_eq(tsr_u64map_del(&m, k << 20), ref[k]);
			if (ref[k])
				n--;
			ref[k] = NULL;
		} else {
			ck_assert_int_eq(tsr_u64map_put(&m, k << 20, v), 0);
			if (ref[k] == NULL)
				n++;
			ref[k] = v;
		}
		if (i % 97 == 0)
			for (uint64_t j = 1; j < N; j++)
				ck_assert_ptr_eq(tsr_u64map_get(&m, j << 20), ref[j]);
		ck_assert_uint_eq(m.n, n);
	}
	ck_assert_int_eq(tsr_u64map_put(&m, 0, (void *)1), -EINVAL);
	ck_assert_ptr_null(tsr_u64map_get(&m, 0));
	tsr_u64map_free(&m);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fsmeta");
	TCase *tc = tcase_create("fsmeta");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, inode_round_trip_and_xattrs);
	tcase_add_test(tc, inode_refusals);
	tcase_add_test(tc, dentry_round_trip);
	tcase_add_test(tc, event_round_trip);
	tcase_add_test(tc, layout_maps_each_byte_once);
	tcase_add_test(tc, hex_versions_order_as_numbers);
	tcase_add_test(tc, messages);
	tcase_add_test(tc, u64map_matches_an_array);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
