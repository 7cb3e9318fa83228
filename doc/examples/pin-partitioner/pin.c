/* pin.c — an out-of-tree partitioner plugin: the worked example of
 * doc/plugin-abi.md.
 *
 * Policy: a directory goes to the rank an administrator pinned it (or an
 * ancestor) to; everything else stays on `home_rank`.  It never proposes
 * migrations and never fragments: the behaviour of a cluster that wants
 * its namespace split only by hand.
 */
#include <tessera/partitioner.h>

#include <errno.h>
#include <stdio.h>

/* Options: indices into opts->vals, in the order of the table below. */
enum { OPT_HOME_RANK };

static const struct tsr_opt_def pin_options[] = {
	[OPT_HOME_RANK] = { .name = "home_rank", .type = TSR_OPT_INT, .def = "0",
			    .min = "0", .max = "255",
			    .help = "rank owning every directory that is not pinned" },
	{ .name = NULL }
};

struct pin {
	const struct tsr_host *host;
	int32_t home_rank;
};

static int
pin_create(const struct tsr_host *host, const struct tsr_opts *opts,
	   void **instance, char *err, size_t errlen)
{
	struct pin *p = host->alloc(host->ctx, sizeof(*p));

	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->host = host;
	p->home_rank = (int32_t)opts->vals[OPT_HOME_RANK].i;
	tsr_host_log(host, TSR_LOG_INFO, "unpinned directories go to rank %d",
		     p->home_rank);
	*instance = p;
	return 0;
}

static void
pin_destroy(void *instance)
{
	struct pin *p = instance;

	p->host->free(p->host->ctx, p);
}

static int
pin_where(void *instance, const struct tsr_part_dir *dir, uint32_t nranks,
	  int32_t *rank)
{
	struct pin *p = instance;

	if (nranks == 0)
		return -EINVAL;
	*rank = (dir->pin >= 0 ? dir->pin : p->home_rank) % (int32_t)nranks;
	return 0;
}

static int
pin_balance(void *instance, const struct tsr_part_load *loads, uint32_t nloads,
	    uint32_t nranks, tsr_part_move_cb cb, void *arg)
{
	(void)instance; (void)loads; (void)nloads; (void)nranks; (void)cb; (void)arg;
	return 0; /* moves happen only when an administrator re-pins */
}

static int
pin_fragment(void *instance, const struct tsr_part_fragstat *st, int *action)
{
	(void)instance;
	(void)st;
	*action = 0; /* directories are never split automatically */
	return 0;
}

/* The partitioner kind is provisional (tessera/partitioner.h): its table
 * says which version of the header it was built for, and the loader
 * refuses another. */
static const struct tsr_partitioner_ops pin_ops = {
	.size = sizeof(struct tsr_partitioner_ops),
	.abi_version = TSR_PARTITIONER_ABI_VERSION,
	.where = pin_where,
	.balance = pin_balance,
	.fragment = pin_fragment,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_PARTITIONER,
	.name = "pin",
	.version = "1.0.0",
	.summary = "directories stay where an administrator pinned them",
	.options = pin_options,
	.create = pin_create,
	.destroy = pin_destroy,
	.ops = &pin_ops,
};
