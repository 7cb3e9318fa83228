/* store_rig.h — a fresh object store on each backend plugin, for the unit
 * tests of what lives on one (test_pgstore, test_scrub).  The plugins come
 * from BACKEND_FILE_PLUGIN and BACKEND_BLOCKDEV_PLUGIN (the suite's
 * environment sets them), each loaded once.
 *
 * The test defines, before including this, the scratch directory the
 * stores go in and what loads plugins:
 *
 *     static struct tsr_core_host core_host;
 *     static struct tsr_registry *registry;
 *     static char root[] = "/tmp/tsr-test-NAME.XXXXXX";   (mkdtemp'd)
 */
#ifndef TSR_TEST_STORE_RIG_H
#define TSR_TEST_STORE_RIG_H

#include "config/options.h"
#include "plugin/host.h"
#include "plugin/registry.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RIG_OPT(n, v) { .name = (n), .kind = TSR_SRC_TEXT, .s = (v), .where = "test" }

struct rig {
	struct tsr_instance *inst;
	const struct tsr_backend_ops *ops;
	void *h;
};

static const char *const backends[] = { "file", "blockdev" };

/* A new store, made and mounted, of backend which (0 file, 1 blockdev). */
static void
rig_open(struct rig *r, int which)
{
	const char *env = which == 0 ? "BACKEND_FILE_PLUGIN" : "BACKEND_BLOCKDEV_PLUGIN";
	const char *so = getenv(env);
	static const struct tsr_plugin *loaded[2]; /* once (CK_FORK=no runs all in one) */
	static int count;
	char err[1024], dir[256], path[300];
	struct tsr_srcval src[6];
	size_t n = 0;

	ck_assert_msg(so && *so, "%s is not set: it names the %s backend's plugin", env,
		      backends[which]);
	if (loaded[which] == NULL &&
	    tsr_registry_load_file(registry, so, &loaded[which], err, sizeof(err)) < 0)
		ck_abort_msg("%s: %s", so, err);
	snprintf(dir, sizeof(dir), "%s/%s-%d-%d", root, backends[which], (int)getpid(),
		 count++);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	if (which == 0) {
		snprintf(path, sizeof(path), "%s", dir);
		src[n++] = (struct tsr_srcval)RIG_OPT("journal_size", "8M");
	} else {
		snprintf(path, sizeof(path), "%s/dev.img", dir);
		src[n++] = (struct tsr_srcval)RIG_OPT("size", "64M");
		src[n++] = (struct tsr_srcval)RIG_OPT("journal_size", "8M");
		src[n++] = (struct tsr_srcval)RIG_OPT("min_free", "0");
	}
	src[n++] = (struct tsr_srcval)RIG_OPT("path", path);
	if (tsr_instance_create(loaded[which], &core_host.host, src, n, &r->inst, err,
				sizeof(err)) < 0)
		ck_abort_msg("%s instance: %s", backends[which], err);
	r->h = tsr_instance_handle(r->inst);
	r->ops = tsr_instance_ops(r->inst);
	if (r->ops->mkfs(r->h, err, sizeof(err)) < 0 || r->ops->mount(r->h, err, sizeof(err)) < 0)
		ck_abort_msg("%s: %s", backends[which], err);
}

static void
rig_close(struct rig *r)
{
	ck_assert_int_eq(r->ops->umount(r->h), 0);
	tsr_instance_destroy(r->inst);
}

struct rig_commit_wait {
	int done, rc;
};

static void
rig_on_commit(void *arg, int rc)
{
	struct rig_commit_wait *c = arg;

	c->rc = rc;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

/* Submit t and wait until it is durable: its result. */
static int
rig_commit(struct rig *r, const struct tsr_txn *t)
{
	struct rig_commit_wait c = { 0, 0 };
	int rc = r->ops->submit(r->h, t, rig_on_commit, &c);

	if (rc < 0)
		return rc;
	ck_assert_int_eq(r->ops->flush(r->h), 0);
	ck_assert(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE));
	return c.rc;
}

#endif
