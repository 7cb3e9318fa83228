/* altcrush.c — a placement plugin named "crush" that builds other maps
 * than the real one: the test of monitors on different builds
 * (tests/integration/test_mon.c, mixed_builds) gives it to one monitor.
 *
 * Its binary map is its own: "ALT1", then each device of the topology as
 * (u32 id, u32 weight) little-endian, with every weight doubled — the
 * kind of difference another version of a plugin, or another plugin
 * installed under the same name, makes.  It places by weighted
 * rendezvous hashing over the devices, so the map it builds is a working
 * one; it has no text form.
 */
#include <tessera/placement.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct alt {
	const struct tsr_host *host;
	uint32_t n;
	uint32_t ids[4096], weights[4096];
};

static int
alt_create(const struct tsr_host *host, const struct tsr_opts *opts, void **inst,
	   char *err, size_t errlen)
{
	struct alt *a = host->alloc(host->ctx, sizeof(*a));

	(void)opts;
	if (a == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(a, 0, sizeof(*a));
	a->host = host;
	*inst = a;
	return 0;
}

static void
alt_destroy(void *inst)
{
	struct alt *a = inst;

	a->host->free(a->host->ctx, a);
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int
alt_encode(void *inst, const struct tsr_topology *t, struct tsr_buf *out, char *err,
	   size_t errlen)
{
	struct alt *a = inst;
	uint32_t n = 0;
	uint8_t *p;

	for (uint32_t i = 0; i < t->nitems; i++)
		n += t->items[i].type == 0;
	if ((p = a->host->alloc(a->host->ctx, 4 + 8 * (size_t)n)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(p, "ALT1", 4);
	n = 0;
	for (uint32_t i = 0; i < t->nitems; i++)
		if (t->items[i].type == 0) {
			put32(p + 4 + 8 * n, (uint32_t)t->items[i].id);
			put32(p + 8 + 8 * n, t->items[i].weight * 2);
			n++;
		}
	out->data = p;
	out->len = 4 + 8 * (size_t)n;
	return 0;
}

static int
alt_compile(void *inst, const char *in, size_t len, struct tsr_buf *out, char *err,
	    size_t errlen)
{
	(void)inst;
	(void)in;
	(void)len;
	(void)out;
	snprintf(err, errlen, "the test plugin has no text form");
	return -EOPNOTSUPP;
}

static int
alt_decompile(void *inst, const void *in, size_t len, struct tsr_buf *out, char *err,
	      size_t errlen)
{
	return alt_compile(inst, (const char *)in, len, out, err, errlen);
}

static int
alt_load(void *inst, const void *map, size_t len, char *err, size_t errlen)
{
	struct alt *a = inst;
	const uint8_t *p = map;

	if (len < 4 || memcmp(p, "ALT1", 4) != 0 || (len - 4) % 8 ||
	    (len - 4) / 8 > sizeof(a->ids) / sizeof(a->ids[0])) {
		snprintf(err, errlen, "not a map of the test plugin");
		return -EINVAL;
	}
	a->n = (uint32_t)((len - 4) / 8);
	for (uint32_t i = 0; i < a->n; i++) {
		a->ids[i] = get32(p + 4 + 8 * i);
		a->weights[i] = get32(p + 8 + 8 * i);
	}
	return 0;
}

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static int
alt_map(void *inst, uint32_t rule, uint32_t x, uint32_t nrep, const uint32_t *weights,
	uint32_t nweights, int32_t *out)
{
	struct alt *a = inst;
	uint32_t got = 0;

	(void)rule;
	for (; got < nrep; got++) {
		uint64_t best = 0;
		int32_t pick = -1;
		for (uint32_t i = 0; i < a->n; i++) {
			uint32_t id = a->ids[i];
			int taken = 0;
			for (uint32_t k = 0; k < got && !taken; k++)
				taken = out[k] == (int32_t)id;
			if (taken || id >= nweights || weights[id] == 0)
				continue;
			uint64_t h = mix((uint64_t)x << 32 | id) % 1000003 * a->weights[i];
			if (pick < 0 || h > best) {
				best = h;
				pick = (int32_t)id;
			}
		}
		if (pick < 0)
			break;
		out[got] = pick;
	}
	return (int)got;
}

static uint32_t
alt_max_devices(void *inst)
{
	struct alt *a = inst;
	uint32_t m = 0;

	for (uint32_t i = 0; i < a->n; i++)
		if (a->ids[i] + 1 > m)
			m = a->ids[i] + 1;
	return m;
}

static int
alt_rule_width(void *inst, uint32_t rule, uint32_t *width)
{
	struct alt *a = inst;

	(void)rule;
	*width = a->n;
	return 0;
}

static const struct tsr_placement_ops alt_ops = {
	.size = sizeof(struct tsr_placement_ops),
	.encode = alt_encode,
	.compile = alt_compile,
	.decompile = alt_decompile,
	.load = alt_load,
	.map = alt_map,
	.max_devices = alt_max_devices,
	.rule_width = alt_rule_width,
};

TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
	.abi_major = TSR_PLUGIN_ABI_MAJOR,
	.abi_minor = TSR_PLUGIN_ABI_MINOR,
	.desc_size = sizeof(struct tsr_plugin_desc),
	.kind = TSR_KIND_PLACEMENT,
	.name = "crush",
	.version = "0.0.1-test",
	.summary = "test only: a placement plugin named crush that builds other maps",
	.options = NULL,
	.create = alt_create,
	.destroy = alt_destroy,
	.ops = &alt_ops,
};
