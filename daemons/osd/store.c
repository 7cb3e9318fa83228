/* store.c — an OSD's store: the backend the configuration names, opened
 * with its options, and the superblock that ties the store to one OSD of
 * one cluster (osd.h).
 *
 * The superblock is one object of the OSD's own collection (pool
 * OSD_META_POOL, which no pool id reaches: ids are non-negative), one
 * attribute in a versioned encoding:
 *
 *     struct v1 { string fsid; i32 whoami; u8[16] uuid; u64 created_ns; }
 *
 * written by `tessera-osd --mkfs` in the transaction that makes the
 * collection, and checked at every start before the OSD talks to anyone:
 * a store of another cluster, or of another OSD, is refused with both
 * identities named, so a disk moved to the wrong host or a configuration
 * that points two OSDs at one path never serves data.
 */
#include "osd.h"
#include "config/options.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/encoding.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define SUPER_OID "osd_superblock"
#define SUPER_KEY "super"
#define SUPER_MAX 1024

const struct tsr_coll_id osd_meta_coll = { OSD_META_POOL, 0, TSR_SHARD_NONE };

/* backend_options ("k=v,k=v") and the path into srcvals: *buf holds the
 * text they point into (the caller frees it). */
static int
parse_options(const char *text, const char *path, const char *where,
	      struct tsr_srcval *out, size_t max, size_t *n, char **buf,
	      char *err, size_t errlen)
{
	char *s = strdup(text), *save = NULL, *tok;
	int have_path = 0;

	*n = 0;
	*buf = s;
	if (s == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq;

		while (*tok == ' ')
			tok++;
		if (*tok == '\0')
			continue;
		if ((eq = strchr(tok, '=')) == NULL || eq == tok)
			return tsr_errf(err, errlen, -EINVAL, "%s: backend_options: "
					"'%s' is not KEY=VALUE", where, tok);
		if (*n + 1 >= max)
			return tsr_errf(err, errlen, -EINVAL, "%s: backend_options: "
					"more than %zu options", where, max - 1);
		*eq = '\0';
		have_path |= strcmp(tok, "path") == 0;
		out[(*n)++] = (struct tsr_srcval){ .name = tok, .kind = TSR_SRC_TEXT,
						   .s = eq + 1, .where = where };
	}
	if (!have_path)
		out[(*n)++] = (struct tsr_srcval){ .name = "path", .kind = TSR_SRC_TEXT,
						   .s = path, .where = where };
	return 0;
}

int
osd_store_open(struct osd_store *st, struct tsr_conf *conf,
	       const struct tsr_registry *reg, char *err, size_t errlen)
{
	struct tsr_srcval srcs[64];
	const char *name = tsr_conf_str(conf, "backend");
	const struct tsr_plugin *p;
	char *buf = NULL, why[768];
	size_t n;
	int rc;

	memset(st, 0, sizeof(*st));
	tsr_strlcpy(st->backend, name, sizeof(st->backend));
	tsr_strlcpy(st->path, tsr_conf_str(conf, "osd_data"), sizeof(st->path));
	tsr_core_host_init(&st->host, "backend", NULL, NULL);
	p = tsr_registry_find(reg, TSR_KIND_BACKEND, name);
	if (p == NULL)
		return tsr_errf(err, errlen, -ENOENT, "%s: no backend plugin '%s' in "
				"plugin_dir %s (`tessera plugins list` shows what is "
				"installed)", tsr_conf_where(conf, "backend"), name,
				tsr_conf_str(conf, "plugin_dir"));
	rc = parse_options(tsr_conf_str(conf, "backend_options"), st->path,
			   tsr_conf_where(conf, "backend_options"), srcs,
			   sizeof(srcs) / sizeof(srcs[0]), &n, &buf, err, errlen);
	if (rc == 0) {
		for (size_t i = 0; i < n; i++)
			if (strcmp(srcs[i].name, "path") == 0)
				tsr_strlcpy(st->path, srcs[i].s, sizeof(st->path));
		rc = tsr_instance_create(p, &st->host.host, srcs, n, &st->inst, why,
					 sizeof(why));
		if (rc < 0)
			tsr_errf(err, errlen, rc, "backend %s: %s", name, why);
	}
	free(buf);
	if (rc < 0)
		return rc;
	st->ops = tsr_instance_ops(st->inst);
	st->h = tsr_instance_handle(st->inst);
	/* the largest object it stores, when the plugin says (the OSD
	 * refuses a write past it before it reaches the store) */
	{
		const struct tsr_opts *o = tsr_instance_opts(st->inst);
		st->max_object = 0;
		for (uint32_t i = 0; o && i < o->count; i++)
			if (strcmp(o->defs[i].name, "max_object_size") == 0 && o->vals[i].i > 0)
				st->max_object = (uint64_t)o->vals[i].i;
	}
	return 0;
}

void
osd_store_close(struct osd_store *st)
{
	if (st->mounted)
		st->ops->umount(st->h);
	st->mounted = 0;
	if (st->inst)
		tsr_instance_destroy(st->inst);
	st->inst = NULL;
}

/* ---- The superblock --------------------------------------------------------*/

static int
super_encode(struct tsr_enc *e, const struct osd_super *sb)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_str(e, sb->fsid);
	tsr_enc_i32(e, sb->whoami);
	tsr_enc_raw(e, sb->uuid, sizeof(sb->uuid));
	tsr_enc_u64(e, sb->created_ns);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

/* What is wrong goes to why: the store's name for it is the caller's. */
static int
super_decode(const void *p, size_t n, struct osd_super *sb, char *why, size_t whylen)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	int rc;

	memset(sb, 0, sizeof(*sb));
	tsr_dec_init(&d, p, n);
	if ((rc = tsr_dec_begin_struct(&d, 1, &ver, &sub)) < 0)
		return tsr_errf(why, whylen, rc, rc == -EOPNOTSUPP ?
				"written by a newer tessera-osd (its format is not "
				"version 1): run that version, or a newer one" :
				"not a versioned superblock");
	tsr_dec_str(&sub, sb->fsid, sizeof(sb->fsid));
	sb->whoami = tsr_dec_i32(&sub);
	tsr_dec_raw(&sub, sb->uuid, sizeof(sb->uuid));
	sb->created_ns = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return tsr_errf(why, whylen, -EBADMSG, "truncated, or bytes after its "
				"end (%zu bytes)", n);
	if (sb->whoami < 0 || sb->whoami >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(why, whylen, -EBADMSG, "OSD id %d out of range",
				sb->whoami);
	return 0;
}

/* A cluster id the messenger takes: 32 hex digits, dashes anywhere. */
static bool
fsid_ok(const char *fsid)
{
	size_t n = 0;

	for (const char *p = fsid; *p; p++) {
		if (*p == '-')
			continue;
		if (!isxdigit((unsigned char)*p))
			return false;
		n++;
	}
	return n == 32;
}

struct sync_commit {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, rc;
};

static void
sync_cb(void *arg, int rc)
{
	struct sync_commit *s = arg;

	pthread_mutex_lock(&s->mu);
	s->rc = rc;
	s->done = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Submit txn and wait for its commit (start-up and mkfs only). */
static int
submit_wait(struct osd_store *st, const struct tsr_txn *txn)
{
	struct sync_commit s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
				 0, 0 };
	int rc = st->ops->submit(st->h, txn, sync_cb, &s);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s.mu);
	while (!s.done)
		pthread_cond_wait(&s.cv, &s.mu);
	pthread_mutex_unlock(&s.mu);
	return s.rc;
}

int
osd_store_mkfs(struct osd_store *st, const char *fsid, int32_t whoami,
	       char *err, size_t errlen)
{
	struct osd_super sb = { .whoami = whoami };
	struct tsr_txn_op ops[3];
	struct tsr_enc e;
	char why[768] = "", us[37];
	int rc;

	/* the stamp is only worth what the cluster id is: an empty one
	 * would match every other cluster without one */
	if (!fsid_ok(fsid) || strlen(fsid) >= sizeof(sb.fsid))
		return tsr_errf(err, errlen, -EINVAL, "fsid \"%.60s\": an OSD's store is "
				"stamped with its cluster's id, a UUID (set fsid in the "
				"global section; `cat /proc/sys/kernel/random/uuid` makes "
				"one)", fsid);
	tsr_strlcpy(sb.fsid, fsid, sizeof(sb.fsid));
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != (ssize_t)sizeof(sb.uuid))
		return tsr_errf(err, errlen, -EIO, "no random bytes for the OSD's uuid");
	sb.uuid[6] = (uint8_t)((sb.uuid[6] & 0x0f) | 0x40); /* version 4 */
	sb.uuid[8] = (uint8_t)((sb.uuid[8] & 0x3f) | 0x80);
	sb.created_ns = tsr_now_ns();
	if ((rc = st->ops->mkfs(st->h, why, sizeof(why))) < 0)
		return tsr_errf(err, errlen, rc, "backend %s mkfs at %s: %s%s", st->backend,
				st->path, why, rc == -EEXIST ? " (an OSD store is "
				"never overwritten: remove it first if it is no longer "
				"wanted)" : "");
	if ((rc = st->ops->mount(st->h, why, sizeof(why))) < 0)
		return tsr_errf(err, errlen, rc, "backend %s: mount of the new store "
				"at %s: %s", st->backend, st->path, why);
	st->mounted = 1;
	tsr_enc_init(&e);
	if (super_encode(&e, &sb) < 0) {
		tsr_enc_release(&e);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	memset(ops, 0, sizeof(ops));
	ops[0] = (struct tsr_txn_op){ .type = TSR_TXN_MKCOLL, .cid = osd_meta_coll };
	ops[1] = (struct tsr_txn_op){ .type = TSR_TXN_TOUCH, .cid = osd_meta_coll,
				      .oid = SUPER_OID, .oid_len = strlen(SUPER_OID) };
	ops[2] = (struct tsr_txn_op){ .type = TSR_TXN_SETATTR, .cid = osd_meta_coll,
				      .oid = SUPER_OID, .oid_len = strlen(SUPER_OID),
				      .key = SUPER_KEY, .key_len = strlen(SUPER_KEY),
				      .val = e.buf, .val_len = e.len };
	rc = submit_wait(st, &(struct tsr_txn){ 3, ops });
	tsr_enc_release(&e);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "%s: writing the OSD superblock: %s",
				st->path, strerror(-rc));
	st->sb = sb;
	tsr_uuid_str(sb.uuid, us);
	tsr_errf(err, errlen, 0, "osd.%d of cluster \"%s\": a %s store at %s, uuid %s",
		 whoami, fsid, st->backend, st->path, us);
	return 0;
}

int
osd_store_mount(struct osd_store *st, const char *fsid, int32_t whoami,
		char *err, size_t errlen)
{
	uint8_t buf[SUPER_MAX];
	char why[768] = "";
	size_t len = 0;
	int rc;

	if ((rc = st->ops->mount(st->h, why, sizeof(why))) < 0) {
		char hint[80] = "";
		if (rc == -ENOENT)
			snprintf(hint, sizeof(hint), " (prepare it with `tessera-osd "
				 "--mkfs --id %d`)", whoami);
		return tsr_errf(err, errlen, rc, "backend %s at %s: %s%s", st->backend,
				st->path, why, hint);
	}
	st->mounted = 1;
	rc = st->ops->getattr(st->h, &osd_meta_coll, SUPER_OID, strlen(SUPER_OID),
			      SUPER_KEY, strlen(SUPER_KEY), buf, sizeof(buf), &len);
	if (rc == -ENOENT || rc == -ENODATA)
		return tsr_errf(err, errlen, -ENOENT, "%s: a %s store without an OSD "
				"superblock: not an OSD's, or one whose `tessera-osd "
				"--mkfs` was interrupted (remove it and run `tessera-osd "
				"--mkfs --id %d` again)", st->path, st->backend, whoami);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "%s: reading the OSD superblock: %s",
				st->path, strerror(-rc));
	if ((rc = super_decode(buf, len, &st->sb, why, sizeof(why))) < 0)
		return tsr_errf(err, errlen, rc == -EOPNOTSUPP ? rc : -EIO, "%s: the OSD "
				"superblock (object %s, attribute %s of the OSD's own "
				"collection): %s", st->path, SUPER_OID, SUPER_KEY, why);
	if (strcmp(st->sb.fsid, fsid) != 0)
		return tsr_errf(err, errlen, -EINVAL, "%s belongs to cluster \"%s\", "
				"and this configuration is cluster \"%s\" (fsid): an OSD "
				"never joins another cluster", st->path, st->sb.fsid, fsid);
	if (st->sb.whoami != whoami)
		return tsr_errf(err, errlen, -EINVAL, "%s is the store of osd.%d, not "
				"osd.%d: one OSD never starts on another's store (check "
				"osd_data and backend_options for osd.%d)", st->path,
				st->sb.whoami, whoami, whoami);
	return 0;
}
