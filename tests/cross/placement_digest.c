/* placement_digest.c — a digest of the crush and hrw mappings of a fixed
 * map, compiled straight from the plugin sources (no dlopen), so the same
 * program can be built for another architecture and its answer compared:
 * placement must be byte-identical on every host.  See check-arch.sh. */
#include "placebase/placebase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the plugins' descriptors, linked in from their sources */
extern const struct tsr_plugin_desc crush_desc, hrw_desc;

static void *
h_alloc(void *ctx, size_t n)
{
	(void)ctx;
	return malloc(n);
}

static void
h_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static uint64_t
digest(const struct tsr_plugin_desc *d, const struct tsr_buf *blob,
       uint32_t rule, uint32_t ninputs)
{
	struct tsr_host host = { .size = sizeof(host), .alloc = h_alloc, .free = h_free };
	const struct tsr_placement_ops *ops = d->ops;
	uint32_t w[1200];
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	char err[256];
	void *inst;

	for (uint32_t i = 0; i < 1200; i++)
		w[i] = i % 97 == 5 ? 0 : i % 31 == 3 ? 0x8000 : 0x10000;
	if (d->create(&host, NULL, &inst, err, sizeof(err)) < 0 ||
	    ops->load(inst, blob->data, blob->len, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", d->name, err);
		exit(1);
	}
	for (uint32_t x = 0; x < ninputs; x++) {
		int32_t out[4];
		ops->map(inst, rule, x * 2654435761u, 4, w, 1200, out);
		for (int i = 0; i < 4; i++) {
			h ^= (uint32_t)out[i];
			h *= 0x100000001b3ull;
		}
	}
	d->destroy(inst);
	return h;
}

int
main(void)
{
	static struct tsr_topo_item items[1400];
	static char names[1400][24];
	static const char *const types[] = { "osd", "host", "rack", "root" };
	struct tsr_topo_rule rules[2] = {
		{ .id = 0, .name = "by-host", .root = -1, .domain_type = 1, .mode = TSR_RULE_CHOOSELEAF },
		{ .id = 1, .name = "by-rack", .root = -1, .domain_type = 2, .mode = TSR_RULE_CHOOSELEAF },
	};
	uint32_t n = 0, dev = 0;
	char err[256];

	/* 6 racks x 20 hosts x 10 devices, weights 1.0 .. 3.0 */
	items[n++] = (struct tsr_topo_item){ .id = -1, .type = 3, .name = "default" };
	for (int r = 0; r < 6; r++) {
		int32_t rid = -2 - r * 21;
		snprintf(names[n], sizeof(names[n]), "rack%d", r);
		items[n] = (struct tsr_topo_item){ .id = rid, .parent = -1, .type = 2, .name = names[n] };
		n++;
		for (int hh = 0; hh < 20; hh++) {
			int32_t hid = rid - 1 - hh;
			snprintf(names[n], sizeof(names[n]), "host%d-%d", r, hh);
			items[n] = (struct tsr_topo_item){ .id = hid, .parent = rid, .type = 1, .name = names[n] };
			n++;
			for (int k = 0; k < 10; k++, dev++) {
				snprintf(names[n], sizeof(names[n]), "osd.%u", dev);
				items[n] = (struct tsr_topo_item){ .id = (int32_t)dev, .parent = hid,
					.weight = 0x10000 + (dev % 5) * 0x8000, .name = names[n] };
				n++;
			}
		}
	}
	struct tsr_topology topo = { .ntypes = 4, .types = types, .nitems = n,
				     .items = items, .nrules = 2, .rules = rules };
	struct tsr_host host = { .size = sizeof(host), .alloc = h_alloc, .free = h_free };
	const struct tsr_placement_ops *ops = crush_desc.ops;
	struct tsr_buf blob;
	void *inst;

	if (crush_desc.create(&host, NULL, &inst, err, sizeof(err)) < 0 ||
	    ops->encode(inst, &topo, &blob, err, sizeof(err)) < 0) {
		fprintf(stderr, "encode: %s\n", err);
		return 1;
	}
	crush_desc.destroy(inst);
	for (uint32_t rule = 0; rule < 2; rule++)
		printf("crush rule %u %016llx\nhrw   rule %u %016llx\n", rule,
		       (unsigned long long)digest(&crush_desc, &blob, rule, 200000), rule,
		       (unsigned long long)digest(&hrw_desc, &blob, rule, 200000));
	free(blob.data);
	return 0;
}
