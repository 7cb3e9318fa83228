/* fsck.c — the engine's checks of a store, before the backend's own. */
#include "ostore_int.h"
#include "errf.h"

#include <tessera/kv.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* ---- fsck -------------------------------------------------------------------
 *
 * Checks, on an unmounted store (after replaying its journal):
 *   - every onode decodes, names an existing collection, and has a unique
 *     id below the superblock's next id;
 *   - attributes, omap entries and chunk maps belong to a live object
 *     (orphans are removed by repair), chunk maps decode and lie within
 *     the object's size (stale ones are removed by repair);
 *   - every stored block and compressed chunk matches its checksum (not
 *     repairable here: the OSD recovers the object from a replica);
 *   - every data file belongs to a live object (orphans are unlinked);
 *   - the superblock's object count and byte total (repair rewrites them).
 */

void
os_fsck_report(struct os_fsck *c, int fixable, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	verrf(msg, sizeof(msg), 0, fmt, ap);
	va_end(ap);
	if (!(fixable && c->repair))
		c->unrepaired++;
	if (c->cb)
		c->cb(c->arg, msg, fixable && c->repair);
}

static int
fsck_onode(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct os_fsck *c = arg;
	struct tsr_coll_id cid;
	struct onode on;
	uint8_t ck[1 + CID_LEN];
	char nb[96], err[256];
	void *cv;
	size_t cvl;

	if (kl <= 1 + CID_LEN) {
		os_fsck_report(c, 1, "malformed object key of %zu bytes", kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	os_oid_str((const uint8_t *)k + 1 + CID_LEN, kl - 1 - CID_LEN, nb, sizeof(nb));
	if (os_onode_decode(v, vl, &on) < 0) {
		os_fsck_report(c, 0, "object %s: onode damaged", nb);
		return 0;
	}
	if (on.objid > c->max_id)
		c->max_id = on.objid;
	os_cid_get((const uint8_t *)k + 1, &cid);
	if (tsr_kv_get(c->os->kv, ck, os_key_coll(ck, &cid), &cv, &cvl, err,
		       sizeof(err)) == 0) {
		tsr_kv_free(cv);
	} else {
		os_fsck_report(c, 1, "object %s: its collection %" PRIu64 ".%u.%d is "
			    "missing (repair recreates it)", nb, cid.pool, cid.pg,
			    cid.shard);
		tsr_kv_batch_put(c->fix, ck, sizeof(ck), "", 0);
	}
	if (c->nids == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		uint64_t *ni = realloc(c->ids, ncap * sizeof(*ni));
		if (ni == NULL)
			return -ENOMEM;
		c->ids = ni;
		uint64_t *ns = realloc(c->sizes, ncap * sizeof(*ns));
		if (ns == NULL)
			return -ENOMEM;
		c->sizes = ns;
		c->cap = ncap;
	}
	c->ids[c->nids] = on.objid;
	c->sizes[c->nids++] = on.size;
	c->bytes += on.size;
	return 0;
}

/* Index of objid among the live ids, or -1. */
static ssize_t
fsck_find(const struct os_fsck *c, uint64_t objid)
{
	size_t lo = 0, hi = c->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->ids[mid] < objid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nids && c->ids[lo] == objid ? (ssize_t)lo : -1;
}

static int
fsck_sub(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct os_fsck *c = arg;
	const uint8_t *kb = k;
	struct os_cmeta m;
	uint64_t objid;
	ssize_t i;

	if (kl < 9 || (kb[0] == 'C' && kl != 13)) {
		os_fsck_report(c, 1, "malformed '%c' key of %zu bytes", kb[0], kl);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	objid = get_be64(kb + 1);
	if ((i = fsck_find(c, objid)) < 0) {
		os_fsck_report(c, 1, "'%c' record of object id %" PRIu64
			    " that does not exist", kb[0], objid);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	if (kb[0] != 'C')
		return 0;
	uint32_t no = get_be32(kb + 9);
	if (os_cmeta_decode(v, vl, &m) < 0) {
		os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: chunk map damaged",
			    objid, no);
		return 0;
	}
	if ((uint64_t)no * OS_CHUNK >= c->sizes[i]) {
		os_fsck_report(c, 1, "object id %" PRIu64 " chunk %u: past the object's "
			    "end", objid, no);
		tsr_kv_batch_del(c->fix, k, kl);
		return 0;
	}
	/* the backend accounts for the space the map holds */
	if (c->on_map && c->on_map(c, objid, no, &m) < 0)
		return -ENOMEM;
	char label[32];
	snprintf(label, sizeof(label), "id %" PRIu64, objid);
	if (m.kind == OS_CHUNK_INLINE) {
		if ((uint64_t)no * OS_CHUNK + m.stored > c->sizes[i])
			os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: inline "
				       "data runs past the object's end", objid, no);
		else if (os_read_ichunk(c->os, label, objid, no, &m, c->tmp) < 0)
			os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: inline "
				       "data does not match its checksum", objid, no);
		return 0;
	}
	int fd = c->os->hooks->data_fd(c->os, objid, 1);
	int rc = 0;
	if (m.kind == OS_CHUNK_ZSTD)
		rc = os_read_zchunk(c->os, c->dctx, fd, label, objid, no, &m, c->tmp);
	else
		for (unsigned b = 0; b < OS_BPC && rc == 0; b++)
			rc = os_read_block(c->os, fd, label, objid, no, b, &m, c->tmp);
	if (fd >= 0)
		c->os->hooks->data_fd_done(c->os, fd, 1);
	if (rc == -EIO)
		os_fsck_report(c, 0, "object id %" PRIu64 " chunk %u: stored data does "
			    "not match its checksum", objid, no);
	return rc == -ENOMEM ? rc : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
os_fsck_live(const struct os_fsck *c, uint64_t objid)
{
	return fsck_find(c, objid) >= 0;
}

/* The engine's checks on an opened store (see the list above); the
 * backend's fsck_extra runs after them, then repairs are written. */
int
os_fsck_run(struct os *os, int repair, tsr_fsck_cb cb, void *arg,
	    int (*on_map)(struct os_fsck *, uint64_t, uint32_t,
			  const struct os_cmeta *),
	    void *be)
{
	static const char *const ranges[][2] = { { "A", "B" }, { "C", "D" },
						 { "M", "N" } };
	struct os_fsck c;
	char err[512] = "";
	int rc;

	memset(&c, 0, sizeof(c));
	c.os = os;
	c.repair = repair;
	c.cb = cb;
	c.arg = arg;
	c.on_map = on_map;
	c.be = be;
	c.fix = tsr_kv_batch_create();
	c.dctx = ZSTD_createDCtx();
	c.tmp = malloc(OS_CHUNK);
	if (c.fix == NULL || c.dctx == NULL || c.tmp == NULL) {
		rc = errf(err, sizeof(err), -ENOMEM, "%s: out of memory", os->path);
		goto out;
	}
	rc = tsr_kv_scan(os->kv, "O", 1, "P", 1, fsck_onode, &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	/* sort ids, keeping sizes with them */
	uint64_t *pairs = malloc((c.nids ? c.nids : 1) * 2 * sizeof(*pairs));
	if (pairs == NULL) {
		rc = errf(err, sizeof(err), -ENOMEM, "%s: out of memory", os->path);
		goto out;
	}
	for (size_t i = 0; i < c.nids; i++) {
		pairs[2 * i] = c.ids[i];
		pairs[2 * i + 1] = c.sizes[i];
	}
	qsort(pairs, c.nids, 2 * sizeof(*pairs), cmp_u64);
	for (size_t i = 0; i < c.nids; i++) {
		c.ids[i] = pairs[2 * i];
		c.sizes[i] = pairs[2 * i + 1];
		if (i && c.ids[i] == c.ids[i - 1])
			os_fsck_report(&c, 0, "two objects share id %" PRIu64, c.ids[i]);
	}
	free(pairs);
	for (size_t i = 0; i < 3 && rc == 0; i++)
		rc = tsr_kv_scan(os->kv, ranges[i][0], 1, ranges[i][1], 1, fsck_sub,
				 &c, err, sizeof(err));
	if (rc < 0)
		goto out;
	if (os->hooks->fsck_extra)
		os->hooks->fsck_extra(&c);
	if (c.max_id >= os->sb.next_objid) {
		/* handing out an id in use would make two objects share data */
		os_fsck_report(&c, 1, "superblock's next object id %" PRIu64 " is not "
			       "above id %" PRIu64 ", which is in use (repair raises it)",
			       os->sb.next_objid, c.max_id);
		os->sb.next_objid = c.max_id + 1;
		if (repair && (rc = os_super_store(os, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (c.nids != os->sb.objects || c.bytes != os->sb.bytes) {
		os_fsck_report(&c, 1, "superblock counts %" PRIu64 " objects / %" PRIu64
			       " bytes, the store holds %zu / %" PRIu64, os->sb.objects,
			       os->sb.bytes, c.nids, c.bytes);
		os->sb.objects = c.nids;
		os->sb.bytes = c.bytes;
		if (repair && (rc = os_super_store(os, 1, err, sizeof(err))) < 0)
			goto out;
	}
	if (repair)
		rc = tsr_kv_write(os->kv, c.fix, 1, err, sizeof(err));
out:
	if (rc < 0 && cb)
		cb(arg, err, 0);
	tsr_kv_batch_destroy(c.fix);
	ZSTD_freeDCtx(c.dctx);
	free(c.tmp);
	free(c.ids);
	free(c.sizes);
	return rc < 0 ? rc : c.unrepaired;
}
