/* replica.c — the `replica` redundancy plugin: an object is stored as
 * `copies` whole copies, one per OSD of the acting set (tessera/
 * redundancy.h).  Any one copy reads or rebuilds the others.
 *
 * It is the default redundancy of a pool (`tessera pool create`), so the
 * monitors need it in their plugin_dir: they refuse a pool whose plugin
 * they do not have, or whose options its schema below refuses.
 */
#include <tessera/redundancy.h>

#include "errf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct tsr_opt_def replica_options[] = {
	{ .name = "copies", .type = TSR_OPT_INT, .def = "3", .min = "1",
	  .max = "16", .help = "whole copies of each object, one per OSD "
	  "of the acting set" },
	{ .name = NULL }
};

struct replica {
	const struct tsr_host *host;
	uint32_t copies;
};

static int
replica_create(const struct tsr_host *host, const struct tsr_opts *opts,
	       void **instance, char *err, size_t errlen)
{
	struct replica *r = host->alloc(host->ctx, sizeof(*r));

	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->host = host;
	r->copies = (uint32_t)opts->vals[0].i; /* the schema bounds it */
	*instance = r;
	return 0;
}

static void
replica_destroy(void *instance)
{
	struct replica *r = instance;

	r->host->free(r->host->ctx, r);
}

static void
replica_info(void *inst, struct tsr_redundancy_info *info)
{
	struct replica *r = inst;

	*info = (struct tsr_redundancy_info){
		.size = sizeof(*info), .nshards = r->copies, .ndata = 1,
		.stripe_unit = 0, .flags = TSR_REDUNDANCY_SHARES_INPUT,
	};
}

static uint64_t
replica_shard_size(void *inst, uint64_t len)
{
	(void)inst;
	return len;
}

static tsr_shard_set
all_shards(const struct replica *r)
{
	return r->copies >= 64 ? ~(tsr_shard_set)0 : ((tsr_shard_set)1 << r->copies) - 1;
}

/* The lowest shard in set, or -1. */
static int
lowest(tsr_shard_set set)
{
	return set ? __builtin_ctzll(set) : -1;
}

static int
replica_encode(void *inst, uint64_t off, const void *data, size_t len,
	       struct tsr_shard_buf *shards, char *err, size_t errlen)
{
	struct replica *r = inst;

	(void)off;
	(void)err; /* cannot fail: nothing is copied */
	(void)errlen;
	/* TSR_REDUNDANCY_SHARES_INPUT: every shard is the input itself */
	for (uint32_t i = 0; i < r->copies; i++) {
		shards[i].data = (void *)data;
		shards[i].len = len;
	}
	return 0;
}

static int
replica_decode(void *inst, uint64_t off, tsr_shard_set have,
	       const struct tsr_shard_buf *shards, void *out, size_t len,
	       char *err, size_t errlen)
{
	struct replica *r = inst;
	int from = lowest(have & all_shards(r));

	(void)off;
	if (from < 0)
		return errf(err, errlen, -EIO, "no copy to read: none of the "
			    "shards given (0x%llx) is one of the %u copies",
			    (unsigned long long)have, r->copies);
	if (shards[from].len < len || (len && shards[from].data == NULL))
		return errf(err, errlen, -EINVAL, "cannot read %zu bytes from "
			    "copy %d: it holds %zu%s", len, from,
			    shards[from].len,
			    shards[from].data == NULL ? " and has no buffer" : "");
	if (len)
		memcpy(out, shards[from].data, len);
	return 0;
}

static int
replica_repair(void *inst, tsr_shard_set have, tsr_shard_set want,
	       struct tsr_shard_buf *shards, char *err, size_t errlen)
{
	struct replica *r = inst;
	int from = lowest(have & all_shards(r));

	if (want & ~all_shards(r))
		return errf(err, errlen, -EINVAL, "shard %d wanted, but there "
			    "are %u copies (0 to %u)", lowest(want & ~all_shards(r)),
			    r->copies, r->copies - 1);
	if (from < 0)
		return errf(err, errlen, -EIO, "no copy to repair from: none "
			    "of the shards given (0x%llx) is one of the %u "
			    "copies", (unsigned long long)have, r->copies);
	for (tsr_shard_set w = want & ~have; w; w &= w - 1) {
		int to = lowest(w);

		/* the caller's buffer must hold a whole copy */
		if (shards[from].len && shards[from].data == NULL)
			return errf(err, errlen, -EINVAL, "cannot repair from "
				    "copy %d: %zu bytes long but no buffer",
				    from, shards[from].len);
		if (shards[to].len < shards[from].len ||
		    (shards[from].len && shards[to].data == NULL))
			return errf(err, errlen, -EINVAL, "cannot repair copy "
				    "%d: its buffer %s %zu bytes, copy %d holds "
				    "%zu", to, shards[to].data ? "holds" :
				    "is missing, length", shards[to].len, from,
				    shards[from].len);
		if (shards[from].len)
			memcpy(shards[to].data, shards[from].data, shards[from].len);
		shards[to].len = shards[from].len;
	}
	return 0;
}

static int
replica_minimum_to_read(void *inst, tsr_shard_set want, tsr_shard_set available,
			tsr_shard_set *need)
{
	struct replica *r = inst;
	int from = lowest(available & all_shards(r));

	if (want & ~all_shards(r))
		return -EINVAL;
	if (want == 0) {
		*need = 0;
		return 0;
	}
	/* one copy, the lowest (the primary's when it has one) */
	if (from < 0)
		return -EIO;
	*need = (tsr_shard_set)1 << from;
	return 0;
}

static const struct tsr_redundancy_ops replica_ops = {
	.size = sizeof(struct tsr_redundancy_ops),
	.abi_version = TSR_REDUNDANCY_ABI_VERSION,
	.info = replica_info,
	.shard_size = replica_shard_size,
	.encode = replica_encode,
	.decode = replica_decode,
	.repair = replica_repair,
	.minimum_to_read = replica_minimum_to_read,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_REDUNDANCY,
	.name = "replica",
	.version = "1.0.0",
	.summary = "whole copies of each object, any one of which reads it",
	.options = replica_options,
	.create = replica_create,
	.destroy = replica_destroy,
	.ops = &replica_ops,
};
