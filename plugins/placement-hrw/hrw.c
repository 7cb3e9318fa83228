/* hrw.c — the "hrw" placement plugin: weighted rendezvous (highest random
 * weight) hashing, level by level, with failure domains.
 *
 * Each failure domain under the rule's root draws -log2(U)/W from a hash of
 * (input, domain), W being the sum of its devices' map weights; the domains
 * are taken in draw order, and inside each one the device with the best
 * draw among those taking part is chosen; a domain with no such device is
 * passed over.  This is the classic hierarchical rendezvous scheme (and the
 * shape of hierarchical straw2): few draws per input, but a domain's draw
 * does not know which device would serve it, so changing one device's map
 * weight also moves inputs between whole domains.  It is the baseline the
 * "crush" plugin is measured against.
 */
#include "placebase/placebase.h"
#include "placebase/topn.h"

#include <tessera/placement.h>

/* Within a domain a device's hash value is a plain hash of (input, device). */
struct hrw_ctx {
	const struct pb_rule *r;
	uint32_t x;
};

static inline uint32_t
hrw_hash24(void *ctx, uint32_t i)
{
	const struct hrw_ctx *c = ctx;

	return pb_hash(c->x, c->r->key[i]) >> 8;
}

static int
hrw_map_input(const struct pb_map *m, const struct pb_rule *r, uint32_t x,
	      uint32_t nrep, const uint32_t *w, uint32_t nw, int32_t *out)
{
	(void)m; /* everything needed is in the rule's tables */
	struct hrw_ctx hc = { r, x };
	uint32_t filled = 0;
	double floor_draw = 0;
	int32_t floor_id = 0;
	int have_floor = 0;

	/* Take domains in draw order, 64 at a time: each round keeps the 64
	 * best live domains worse than everything seen in earlier rounds.
	 * Domains with no device taking part are never candidates, so a round
	 * is needed only when a live domain's devices are all reweighted away
	 * for this input; each round costs one pass over the domains. */
	for (uint32_t seen = 0; filled < nrep && seen < r->ndomains;) {
		struct topn cand;
		topn_init(&cand, 64);
		for (uint32_t di = 0; di < r->ndomains; di++) {
			const struct pb_domain *dm = &r->domains[di];
			double draw = pb_draw24(pb_hash(x, dm->key) >> 8, dm->inv_w);
			if (have_floor && !topn_better(floor_draw, floor_id, draw, dm->id))
				continue; /* taken in an earlier round */
			/* a domain with nothing in it would only cost a round */
			if (!pb_domain_alive(r, dm, w, nw))
				continue;
			topn_offer(&cand, draw, dm->id, di);
		}
		if (cand.k == 0)
			break;
		for (uint32_t i = 0; i < cand.k && filled < nrep; i++) {
			double unused;
			int32_t dev = pb_domain_best(r, &r->domains[cand.tag[i]],
						     x, w, nw, hrw_hash24, &hc,
						     &unused);
			if (dev >= 0)
				out[filled++] = dev;
		}
		seen += cand.k;
		floor_draw = cand.draw[cand.k - 1];
		floor_id = cand.dev[cand.k - 1];
		have_floor = 1;
	}
	return 0;
}

static int
hrw_map(void *inst, uint32_t rule, uint32_t x, uint32_t nrep,
	const uint32_t *weights, uint32_t nweights, int32_t *out)
{
	return pb_map(inst, hrw_map_input, rule, x, nrep, weights, nweights, out);
}

static const struct tsr_placement_ops hrw_ops = {
	.size = sizeof(struct tsr_placement_ops),
	.encode = pb_encode,
	.compile = pb_compile,
	.decompile = pb_decompile,
	.load = pb_load,
	.map = hrw_map,
	.max_devices = pb_max_devices,
	.rule_width = pb_rule_width,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_PLACEMENT,
	.name = "hrw",
	.version = "1.0.0",
	.summary = "weighted rendezvous hashing per level, with failure domains",
	.options = NULL,
	.create = pb_create,
	.destroy = pb_destroy,
	.ops = &hrw_ops,
};
