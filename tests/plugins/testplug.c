/* testplug.c — the plugins the loader tests load: one good partitioner and,
 * built from the same source with one -D each, the broken variants the
 * loader must refuse, each for one precise reason.
 *
 *   (none)             good: partitioner "good"
 *   TP_TWIN            a second partitioner named "good" (duplicate)
 *   TP_BAD_ABI         abi_major 2
 *   TP_NEWER_MINOR     abi_minor newer than the core's
 *   TP_BAD_KIND        kind 99
 *   TP_NO_DESC         exports no descriptor symbol
 *   TP_BAD_OPT_TYPE    an option of unknown type
 *   TP_BAD_OPT_RANGE   an option whose default breaks its own bounds
 *   TP_BAD_OPS         a mandatory operation left NULL
 *   TP_BAD_NAME        a malformed plugin name
 *
 * The good plugin is a real, if simple, partitioner: it hashes directories
 * to ranks, keeps children with their parent unless told to spread them,
 * proposes moving the busiest subtree off an overloaded rank, and splits
 * fragments that grow too large.  It keeps all state in its instance.
 */
#include <tessera/partitioner.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { OPT_SALT, OPT_SPREAD, OPT_THRESHOLD, OPT_SPLIT_SIZE, OPT_LABEL };

static const char *const label_choices[] = { "alpha", "beta", NULL };

static const struct tsr_opt_def options[] = {
	[OPT_SALT] = { .name = "salt", .type = TSR_OPT_INT, .def = "0",
		       .min = "0", .max = "1000000",
		       .help = "mixed into the directory hash" },
	[OPT_SPREAD] = { .name = "spread", .type = TSR_OPT_BOOL, .def = "false",
			 .help = "hash every directory instead of keeping it with its parent" },
	[OPT_THRESHOLD] = { .name = "threshold", .type = TSR_OPT_DOUBLE,
			    .def = "0.25", .min = "0", .max = "10",
			    .help = "relative overload that triggers a migration" },
#ifdef TP_BAD_OPT_RANGE
	[OPT_SPLIT_SIZE] = { .name = "split_size", .type = TSR_OPT_INT,
			     .def = "5000000", .min = "16", .max = "1000000",
			     .help = "entries above which a fragment splits" },
#else
	[OPT_SPLIT_SIZE] = { .name = "split_size", .type = TSR_OPT_INT,
			     .def = "10000", .min = "16", .max = "1000000",
			     .help = "entries above which a fragment splits" },
#endif
#ifdef TP_BAD_OPT_TYPE
	[OPT_LABEL] = { .name = "label", .type = 42, .def = "alpha",
			.choices = label_choices,
			.help = "a label of a type the core does not know" },
#else
	[OPT_LABEL] = { .name = "label", .type = TSR_OPT_STRING, .def = "alpha",
			.choices = label_choices, .help = "a word for log lines" },
#endif
	{ .name = NULL }
};

struct part {
	const struct tsr_host *host;
	int64_t salt;
	int spread;
	double threshold;
	int64_t split_size;
	char label[16];
	uint64_t calls; /* per-instance state: proves instances are separate */
};

static int
part_create(const struct tsr_host *host, const struct tsr_opts *opts,
	    void **instance, char *err, size_t errlen)
{
	struct part *p;

	if (opts->count != sizeof(options) / sizeof(options[0]) - 1) {
		snprintf(err, errlen, "expected %zu option values, got %u",
			 sizeof(options) / sizeof(options[0]) - 1, opts->count);
		return -EINVAL;
	}
	p = host->alloc(host->ctx, sizeof(*p));
	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(p, 0, sizeof(*p));
	p->host = host;
	p->salt = opts->vals[OPT_SALT].i;
	p->spread = (int)opts->vals[OPT_SPREAD].i;
	p->threshold = opts->vals[OPT_THRESHOLD].d;
	p->split_size = opts->vals[OPT_SPLIT_SIZE].i;
	snprintf(p->label, sizeof(p->label), "%s", opts->vals[OPT_LABEL].s);
	tsr_host_log(host, TSR_LOG_INFO,
		     "created: salt %lld spread %d threshold %.2f split_size %lld label %s",
		     (long long)p->salt, p->spread, p->threshold,
		     (long long)p->split_size, p->label);
	*instance = p;
	return 0;
}

static void
part_destroy(void *instance)
{
	struct part *p = instance;

	p->host->free(p->host->ctx, p);
}

/* 64-bit mix (splitmix64's finaliser): well spread, fixed forever. */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static int
part_where(void *instance, const struct tsr_part_dir *dir, uint32_t nranks,
	   int32_t *rank)
{
	struct part *p = instance;

	p->calls++;
	if (nranks == 0)
		return -EINVAL;
	if (dir->pin >= 0)
		*rank = dir->pin % (int32_t)nranks;
	else if (!p->spread && dir->parent_rank >= 0)
		*rank = dir->parent_rank % (int32_t)nranks;
	else
		*rank = (int32_t)(mix(dir->df.ino ^ (uint64_t)p->salt ^
				      ((uint64_t)dir->df.frag_value << 40)) % nranks);
	return 0;
}

static int
part_balance(void *instance, const struct tsr_part_load *loads, uint32_t n,
	     uint32_t nranks, tsr_part_move_cb cb, void *arg)
{
	struct part *p = instance;
	double total[64] = { 0 }, sum = 0;
	uint32_t hi = 0, lo = 0;

	if (nranks == 0 || nranks > 64)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (loads[i].rank < 0 || (uint32_t)loads[i].rank >= nranks)
			return -EINVAL;
		total[loads[i].rank] += loads[i].read_load + loads[i].write_load;
		sum += loads[i].read_load + loads[i].write_load;
	}
	for (uint32_t r = 1; r < nranks; r++) {
		if (total[r] > total[hi])
			hi = r;
		if (total[r] < total[lo])
			lo = r;
	}
	double mean = sum / nranks;
	if (hi == lo || total[hi] <= mean * (1.0 + p->threshold))
		return 0;
	/* move the busiest subtree of hi that does not overshoot */
	const struct tsr_part_load *best = NULL;
	for (uint32_t i = 0; i < n; i++) {
		double l = loads[i].read_load + loads[i].write_load;
		if ((uint32_t)loads[i].rank != hi || total[lo] + l > mean * (1.0 + p->threshold))
			continue;
		if (best == NULL || l > best->read_load + best->write_load)
			best = &loads[i];
	}
	if (best == NULL)
		return 0;
	struct tsr_part_move mv = { .root = best->root, .from = (int32_t)hi,
				    .to = (int32_t)lo };
	return cb(arg, &mv);
}

static int
part_fragment(void *instance, const struct tsr_part_fragstat *st, int *action)
{
	struct part *p = instance;

	if ((int64_t)st->entries > p->split_size)
		*action = 1;
	else if (st->df.frag_bits > 0 && (int64_t)st->entries < p->split_size / 8)
		*action = -1;
	else
		*action = 0;
	return 0;
}

static const struct tsr_partitioner_ops ops = {
	.size = sizeof(struct tsr_partitioner_ops),
	.abi_version = TSR_PARTITIONER_ABI_VERSION,
	.where = part_where,
#ifndef TP_BAD_OPS
	.balance = part_balance,
#endif
	.fragment = part_fragment,
};

#ifdef TP_BAD_OPS
/* keep the compiler from calling part_balance unused */
int (*const tp_unused_balance)(void *, const struct tsr_part_load *, uint32_t,
			       uint32_t, tsr_part_move_cb, void *) = part_balance;
#endif

#if defined(TP_NO_DESC)
#define DESC_SYMBOL tessera_plugin_misspelt
#else
#define DESC_SYMBOL tessera_plugin
#endif

TSR_PLUGIN_EXPORT extern const struct tsr_plugin_desc DESC_SYMBOL;
const struct tsr_plugin_desc DESC_SYMBOL = {
#ifdef TP_BAD_ABI
	.abi_major = 2,
#else
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
#endif
#ifdef TP_NEWER_MINOR
	.abi_minor = TSR_PLUGIN_ABI_MINOR + 7,
#else
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
#endif
	.desc_size = sizeof(struct tsr_plugin_desc),
#ifdef TP_BAD_KIND
	.kind = 99,
#else
	.kind = TSR_KIND_PARTITIONER,
#endif
#ifdef TP_BAD_NAME
	.name = "Bad Name",
#else
	.name = "good",
#endif
#ifdef TP_TWIN
	.version = "2.0.0",
	.summary = "a second plugin claiming the name 'good'",
#else
	.version = "1.0.0",
	.summary = "test partitioner: hash directories to ranks",
#endif
	.options = options,
	.create = part_create,
	.destroy = part_destroy,
	.ops = &ops,
};
