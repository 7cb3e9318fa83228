/* crush.c — the "crush" placement plugin: CRUSH-style straw2 placement with
 * exact coupling between a failure domain and its devices.
 *
 * Every device under the rule's root draws -log2(U)/w (straw2's
 * exponential race), U stratified over blocks of 256 inputs and
 * superblocks of 65536 (pb_strat_draw in placebase.h); a failure domain's
 * draw is the best draw among its devices that take part; the rule returns
 * the N domains with the best draws, each represented by its best device.
 *
 * This is the same distribution as hierarchical straw2 with bucket weights
 * equal to the sum of their devices (the minimum of exponential draws is
 * exponential with the summed rate, and it is attained by each device with
 * probability proportional to its weight).  What the flat evaluation adds
 * is coupling: a domain's draw is made of its devices' draws, so removing,
 * reweighting or marking out one device changes only the inputs that
 * device won; every other input keeps all of its devices.  Hierarchical
 * straw2 draws the domain separately from its weight, so removing a device
 * also reshuffles inputs among whole domains (Ceph's crushtool measures
 * about 2x the necessary movement for that case).
 *
 * Cost: one draw per device under the root (eight at a time, see
 * pb_strat_draws) and one logarithm per class of equal-weight devices in
 * a domain (the best of equal-weight draws is the largest draw value),
 * with no retries: distinctness of domains is by
 * construction, and out, down or reweighted-away devices simply do not
 * take part.
 */
#include "placebase/placebase.h"
#include "placebase/topn.h"

#include <tessera/placement.h>

/* Draws of the rule's devices, computed a chunk at a time in device order
 * (the order the domains and their classes are laid out in). */
#define CRUSH_CHUNK 256

struct drawbuf {
	const struct pb_rule *r;
	struct pb_strat_in in; /* what the input's draws are made from */
	uint32_t base, n;      /* buf holds draws of devices base .. base+n-1 */
	uint32_t buf[CRUSH_CHUNK];
};

/* The draw of device i, filling the buffer with the next chunk's draws
 * when i is outside it. */
static inline uint32_t
drawbuf_get(void *ctx, uint32_t i)
{
	struct drawbuf *b = ctx;

	if (i < b->base || i >= b->base + b->n) {
		b->base = i;
		b->n = b->r->ndev - i < CRUSH_CHUNK ? b->r->ndev - i : CRUSH_CHUNK;
		pb_strat_draws(b->r->key + i, b->n, &b->in, b->buf);
	}
	return b->buf[i - b->base];
}

static int
crush_map_input(const struct pb_map *m, const struct pb_rule *r, uint32_t x,
		uint32_t nrep, const uint32_t *w, uint32_t nw, int32_t *out)
{
	(void)m; /* everything needed is in the rule's tables */
	struct topn best;
	struct drawbuf b; /* fields set one by one: buf needs no zeroing */

	b.r = r;
	b.in = pb_strat_input(x);
	b.base = 0;
	b.n = 0;

	topn_init(&best, nrep);
	for (uint32_t di = 0; di < r->ndomains; di++) {
		double draw;
		int32_t dev = pb_domain_best(r, &r->domains[di], x, w, nw,
					     drawbuf_get, &b, &draw);
		if (dev >= 0)
			topn_offer(&best, draw, dev, di);
	}
	for (uint32_t i = 0; i < best.k; i++)
		out[i] = best.dev[i];
	return 0;
}

static int
crush_map(void *inst, uint32_t rule, uint32_t x, uint32_t nrep,
	  const uint32_t *weights, uint32_t nweights, int32_t *out)
{
	return pb_map(inst, crush_map_input, rule, x, nrep, weights, nweights, out);
}

static const struct tsr_placement_ops crush_ops = {
	.size = sizeof(struct tsr_placement_ops),
	.encode = pb_encode,
	.compile = pb_compile,
	.decompile = pb_decompile,
	.load = pb_load,
	.map = crush_map,
	.max_devices = pb_max_devices,
	.rule_width = pb_rule_width,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_PLACEMENT,
	.name = "crush",
	.version = "1.0.0",
	.summary = "straw2 placement over a typed hierarchy, domains coupled to their devices",
	.options = NULL,
	.create = pb_create,
	.destroy = pb_destroy,
	.ops = &crush_ops,
};
