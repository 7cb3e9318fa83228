/* test_osdmap_epoch.c — OSD map epochs (core/map/osdmap_epoch.h): a PG's up
 * and acting sets under an epoch, from up, in, reweight and PG temp; one
 * placement instance per blob, made on first use and shared along a chain
 * of epochs; epochs that stay as they were while later ones are made, and
 * are shared by many threads at once; and a map of 10,000 OSDs.
 *
 * Placement is the real "crush" plugin, loaded from $PLUGIN_DIR as daemons
 * load it. */
#include "map/osdmap_epoch.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/hash.h>
#include <tessera/placement.h>

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char err[512];
static struct tsr_registry *reg;
static struct tsr_core_host host;
static const struct tsr_plugin *crush;

/* ---- A placement plugin that counts: crush, with its loads and instances
 * counted, registered as "counted" (built in, through the same registry). */

static atomic_int loads, live, placed;

static int
counted_create(const struct tsr_host *h, const struct tsr_opts *opts, void **inst,
	       char *e, size_t elen)
{
	int rc = tsr_plugin_desc(crush)->create(h, opts, inst, e, elen);

	if (rc == 0)
		atomic_fetch_add(&live, 1);
	return rc;
}

static void
counted_destroy(void *inst)
{
	atomic_fetch_sub(&live, 1);
	tsr_plugin_desc(crush)->destroy(inst);
}

static struct tsr_placement_ops counted_ops;

static int
counted_load(void *inst, const void *map, size_t len, char *e, size_t elen)
{
	const struct tsr_placement_ops *ops = tsr_plugin_desc(crush)->ops;

	atomic_fetch_add(&loads, 1);
	return ops->load(inst, map, len, e, elen);
}

static int
counted_map(void *inst, uint32_t rule, uint32_t x, uint32_t nrep,
	    const uint32_t *weights, uint32_t nweights, int32_t *out)
{
	const struct tsr_placement_ops *ops = tsr_plugin_desc(crush)->ops;

	atomic_fetch_add(&placed, 1);
	return ops->map(inst, rule, x, nrep, weights, nweights, out);
}

static struct tsr_plugin_desc counted_desc;

static void
setup(void)
{
	const char *dir = getenv("PLUGIN_DIR");
	char path[512];

	ck_assert_msg(dir != NULL, "PLUGIN_DIR is not set");
	snprintf(path, sizeof(path), "%s/crush.so", dir);
	reg = tsr_registry_create();
	ck_assert_msg(tsr_registry_load_file(reg, path, &crush, err, sizeof(err)) == 0,
		      "%s", err);
	counted_desc = *tsr_plugin_desc(crush);
	counted_desc.name = "counted";
	counted_desc.create = counted_create;
	counted_desc.destroy = counted_destroy;
	counted_ops = *(const struct tsr_placement_ops *)tsr_plugin_desc(crush)->ops;
	counted_ops.load = counted_load;
	counted_ops.map = counted_map;
	counted_desc.ops = &counted_ops;
	ck_assert_msg(tsr_registry_add_builtin(reg, &counted_desc, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_core_host_init(&host, "test/osdmap_epoch", NULL, NULL);
}

static void
teardown(void)
{
	tsr_registry_destroy(reg);
}

/* ---- Maps ---------------------------------------------------------------------*/

enum { RULE_HOST = 0, RULE_OSD = 1 };

/* The placement blob of nhosts hosts of per OSDs each (ids host * per +
 * i), made by the crush plugin: rule 0 one copy per host, rule 1 one per
 * OSD. */
static void
make_blob(int nhosts, int per, void **blob, size_t *len)
{
	static const char *const types[] = { "osd", "host", "root" };
	size_t n = 1 + (size_t)nhosts * (1 + (size_t)per);
	struct tsr_topo_item *items = calloc(n, sizeof(*items));
	char (*names)[16] = calloc(n, sizeof(*names));
	struct tsr_topo_rule rules[2] = {
		{ .id = RULE_HOST, .name = "host", .root = -1, .domain_type = 1,
		  .mode = TSR_RULE_CHOOSELEAF },
		{ .id = RULE_OSD, .name = "osd", .root = -1, .domain_type = 0,
		  .mode = TSR_RULE_CHOOSE },
	};
	struct tsr_topology t = { .ntypes = 3, .types = types, .nrules = 2,
				  .rules = rules };
	struct tsr_instance *inst;
	struct tsr_buf out = { 0 };
	size_t k = 0;

	items[k++] = (struct tsr_topo_item){ .id = -1, .parent = 0, .type = 2,
					     .name = "default" };
	for (int h = 0; h < nhosts; h++) {
		snprintf(names[k], sizeof(names[k]), "host%d", h);
		items[k] = (struct tsr_topo_item){ .id = -2 - h, .parent = -1, .type = 1,
						   .name = names[k] };
		k++;
		for (int i = 0; i < per; i++) {
			snprintf(names[k], sizeof(names[k]), "osd.%d", h * per + i);
			items[k] = (struct tsr_topo_item){ .id = h * per + i,
							   .parent = -2 - h, .type = 0,
							   .weight = TSR_WEIGHT_ONE,
							   .name = names[k] };
			k++;
		}
	}
	t.nitems = (uint32_t)k;
	t.items = items;
	ck_assert_int_eq(tsr_instance_create(crush, &host.host, NULL, 0, &inst, err,
					     sizeof(err)), 0);
	const struct tsr_placement_ops *ops = tsr_instance_ops(inst);
	ck_assert_msg(ops->encode(tsr_instance_handle(inst), &t, &out, err,
				  sizeof(err)) == 0, "%s", err);
	tsr_instance_destroy(inst);
	*blob = out.data;   /* the core host's alloc is malloc */
	*len = out.len;
	free(items);
	free(names);
}

/* A map at epoch 5 of those hosts' OSDs, all up and in; pool 1 "data"
 * (pg_num PGs, 3 copies, rule host) and pool 2 "flat" (64 PGs, 2 copies,
 * rule osd); placed by plugin. */
static struct tsr_osdmap
make_map(int nhosts, int per, uint32_t pg_num, const char *plugin)
{
	struct tsr_osdmap m;

	tsr_osdmap_init(&m);
	m.epoch = 5;
	snprintf(m.placement, sizeof(m.placement), "%s", plugin);
	make_blob(nhosts, per, &m.pmap, &m.pmap_len);
	m.osds = calloc((size_t)(nhosts * per), sizeof(*m.osds));
	for (int i = 0; i < nhosts * per; i++) {
		struct tsr_osdmap_osd *o = &m.osds[m.nosds++];
		o->id = i;
		snprintf(o->host, sizeof(o->host), "host%d", i / per);
		snprintf(o->addr, sizeof(o->addr), "10.0.%d.%d:6800", i / 250, i % 250);
		o->weight = 1;
		o->reweight = 1;
		o->in = o->up = 1;
		o->up_from = 2;
	}
	m.pools = calloc(2, sizeof(*m.pools));
	m.pools[0] = (struct tsr_osdmap_pool){ .id = 1, .name = "data", .pg_num = pg_num,
					       .size = 3, .min_size = 2, .rule = RULE_HOST,
					       .redundancy = "replica" };
	m.pools[1] = (struct tsr_osdmap_pool){ .id = 2, .name = "flat", .pg_num = 64,
					       .size = 2, .min_size = 1, .rule = RULE_OSD,
					       .redundancy = "replica" };
	m.npools = 2;
	m.next_pool_id = 3;
	ck_assert_msg(tsr_osdmap_check(&m, err, sizeof(err)) == 0, "%s", err);
	return m;
}

static struct tsr_osdmap_epoch *
make_epoch(int nhosts, int per, uint32_t pg_num, const char *plugin)
{
	struct tsr_osdmap m = make_map(nhosts, per, pg_num, plugin);
	struct tsr_osdmap_epoch *ep;

	ck_assert_msg(tsr_osdmap_epoch_create(&m, reg, &host.host, &ep, err,
					      sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_null(m.osds);   /* taken */
	return ep;
}

/* The epoch after ep in which edit(map, arg) changed the map (through
 * diff, as a monitor makes an incremental). */
static struct tsr_osdmap_epoch *
next_epoch(const struct tsr_osdmap_epoch *ep,
	   void (*edit)(struct tsr_osdmap *m, const void *arg), const void *arg)
{
	struct tsr_osdmap b;
	struct tsr_osdmap_inc inc;
	struct tsr_osdmap_epoch *out;

	ck_assert_int_eq(tsr_osdmap_copy(&b, tsr_osdmap_epoch_map(ep)), 0);
	b.epoch++;
	edit(&b, arg);
	ck_assert_int_eq(tsr_osdmap_diff(tsr_osdmap_epoch_map(ep), &b, &inc), 0);
	ck_assert_msg(tsr_osdmap_epoch_next(ep, &inc, &out, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_osdmap_inc_free(&inc);
	tsr_osdmap_free(&b);
	return out;
}

struct osd_edit {
	int32_t id;
	int up, in;
	double reweight;
};

static void
edit_osd(struct tsr_osdmap *m, const void *arg)
{
	const struct osd_edit *e = arg;
	struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, e->id);

	o->up = (uint8_t)e->up;
	o->in = (uint8_t)e->in;
	o->reweight = e->reweight;
}

static void
get_mapping(const struct tsr_osdmap_epoch *ep, int64_t pool, uint32_t pg,
	    struct tsr_pg_mapping *out)
{
	ck_assert_msg(tsr_osdmap_epoch_map_pg(ep, pool, pg, out, err, sizeof(err)) == 0,
		      "%s", err);
}

static int
holds(const int32_t *v, uint32_t n, int32_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == id)
			return 1;
	return 0;
}

/* ---- Tests --------------------------------------------------------------------*/

START_TEST(pg_sets_under_an_epoch)
{
	struct tsr_osdmap_epoch *ep = make_epoch(4, 3, 256, "crush");
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
	struct tsr_pg_mapping pm, om;

	ck_assert_uint_eq(tsr_osdmap_epoch_number(ep), 5);
	for (uint32_t pg = 0; pg < 256; pg++) {
		get_mapping(ep, 1, pg, &pm);
		ck_assert_uint_eq(pm.epoch, 5);
		ck_assert_int_eq(pm.pgid.pool, 1);
		ck_assert_uint_eq(pm.pgid.pg, pg);
		ck_assert_uint_eq(pm.nup, 3);
		/* one copy per host */
		for (uint32_t i = 0; i < 3; i++)
			for (uint32_t j = 0; j < i; j++)
				ck_assert_str_ne(tsr_osdmap_osd(m, pm.up[i])->host,
						 tsr_osdmap_osd(m, pm.up[j])->host);
		ck_assert_uint_eq(pm.nacting, 3);
		ck_assert_int_eq(memcmp(pm.up, pm.acting, sizeof(pm.up)), 0);
		ck_assert_int_eq(pm.up_primary, pm.up[0]);
		ck_assert_int_eq(pm.acting_primary, pm.up[0]);
	}
	get_mapping(ep, 2, 63, &pm);
	ck_assert_uint_eq(pm.nup, 2);
	/* an object lands in its PG's sets */
	for (int i = 0; i < 50; i++) {
		char name[32];
		int n = snprintf(name, sizeof(name), "10000000000.%08x", i);
		ck_assert_int_eq(tsr_osdmap_epoch_map_object(ep, 1, name, (size_t)n, &om,
							     err, sizeof(err)), 0);
		ck_assert_uint_eq(om.pgid.pg, tsr_object_pg(name, (size_t)n, 256));
		get_mapping(ep, 1, om.pgid.pg, &pm);
		ck_assert_int_eq(memcmp(&om, &pm, sizeof(om)), 0);
	}
	tsr_osdmap_epoch_put(ep);
}
END_TEST

/* Regression: the only end-to-end placement (in the monitors' integration
 * test) weighed OSDs by `in` alone, so a reweighted OSD kept its full
 * share and a down one stayed in the set.  Now: down leaves the up set
 * (the others keep their places, nobody new joins: the PG is degraded,
 * nothing moves); out moves the OSD's share to others and no other PG
 * changes; reweight takes that share of PGs away. */
START_TEST(pg_mapping_ignored_up_and_reweight)
{
	struct tsr_osdmap_epoch *e1 = make_epoch(4, 3, 4096, "crush");
	const struct osd_edit down = { 4, 0, 1, 1.0 }, out = { 4, 0, 0, 1.0 },
			      zero = { 7, 1, 1, 0.0 }, half = { 7, 1, 1, 0.5 };
	struct tsr_osdmap_epoch *e2 = next_epoch(e1, edit_osd, &down);
	struct tsr_osdmap_epoch *e3 = next_epoch(e2, edit_osd, &out);
	struct tsr_osdmap_epoch *e4 = next_epoch(e1, edit_osd, &zero);
	struct tsr_osdmap_epoch *e5 = next_epoch(e1, edit_osd, &half);
	size_t had = 0, n7 = 0, npeer = 0;

	for (uint32_t pg = 0; pg < 4096; pg++) {
		struct tsr_pg_mapping a, b, c, d, e;
		get_mapping(e1, 1, pg, &a);
		get_mapping(e2, 1, pg, &b);
		get_mapping(e3, 1, pg, &c);
		get_mapping(e4, 1, pg, &d);
		get_mapping(e5, 1, pg, &e);
		/* down: the same set without osd.4, in the same order */
		uint32_t k = 0;
		for (uint32_t i = 0; i < a.nup; i++)
			if (a.up[i] != 4)
				ck_assert_int_eq(b.up[k++], a.up[i]);
		ck_assert_uint_eq(b.nup, k);
		ck_assert_int_eq(b.up_primary, k ? b.up[0] : -1);
		ck_assert_int_eq(memcmp(b.acting, b.up, sizeof(b.up)), 0);
		/* out: full again; those of a that stay in stay in */
		ck_assert_uint_eq(c.nup, 3);
		ck_assert(!holds(c.up, c.nup, 4));
		for (uint32_t i = 0; i < a.nup; i++)
			if (a.up[i] != 4)
				ck_assert(holds(c.up, c.nup, a.up[i]));
		if (holds(a.up, a.nup, 4))
			had++;
		else
			ck_assert_int_eq(memcmp(a.up, c.up, sizeof(a.up)), 0);
		/* reweight 0: never chosen */
		ck_assert(!holds(d.up, d.nup, 7));
		/* reweight 0.5: about half its share; its host's peers 8 and
		 * 6 take the rest */
		n7 += holds(e.up, e.nup, 7);
		npeer += holds(e.up, e.nup, 0) + holds(e.up, e.nup, 1) + holds(e.up, e.nup, 2);
	}
	ck_assert_uint_gt(had, 500);
	/* osd.0..2 share a full host (3 of 4 PGs): about 1024 each; osd.7
	 * gets half of a third of its host's 3072, about 512 */
	double ratio = (double)n7 / ((double)npeer / 3);
	ck_assert_msg(ratio > 0.4 && ratio < 0.6, "osd.7 at reweight 0.5 holds %zu "
		      "PGs, its peers %zu each", n7, npeer / 3);
	tsr_osdmap_epoch_put(e5);
	tsr_osdmap_epoch_put(e4);
	tsr_osdmap_epoch_put(e3);
	tsr_osdmap_epoch_put(e2);
	tsr_osdmap_epoch_put(e1);
}
END_TEST

struct temp_edit {
	uint32_t pg;
	uint32_t n;
	int32_t osds[4];
	int32_t down[3];
	uint32_t ndown;
};

static void
edit_temp(struct tsr_osdmap *m, const void *arg)
{
	const struct temp_edit *e = arg;

	if (m->npg_temp == 0 && e->n) {
		m->pg_temp = realloc(m->pg_temp, sizeof(*m->pg_temp));
		memset(m->pg_temp, 0, sizeof(*m->pg_temp));
		m->npg_temp = 1;
	}
	if (e->n) {
		m->pg_temp[0].pgid.pool = 1;
		m->pg_temp[0].pgid.pg = e->pg;
		m->pg_temp[0].n = e->n;
		memcpy(m->pg_temp[0].osds, e->osds, e->n * sizeof(e->osds[0]));
	}
	for (uint32_t i = 0; i < e->ndown; i++)
		tsr_osdmap_osd(m, e->down[i])->up = 0;
}

/* PG temp replaces the acting set (primary first) and leaves up alone; its
 * down OSDs and ids the map lacks drop out; with none left, acting is up. */
START_TEST(pg_temp_sets_acting)
{
	struct tsr_osdmap_epoch *e1 = make_epoch(4, 3, 64, "crush");
	struct tsr_pg_mapping a, b;
	struct temp_edit t = { .pg = 9, .n = 4 };
	int32_t others[3];
	uint32_t k = 0;

	get_mapping(e1, 1, 9, &a);
	for (int32_t id = 0; id < 12 && k < 3; id++)
		if (!holds(a.up, a.nup, id))
			others[k++] = id;
	t.osds[0] = others[0];
	t.osds[1] = 4000;          /* not in the map */
	t.osds[2] = others[1];
	t.osds[3] = others[2];
	struct tsr_osdmap_epoch *e2 = next_epoch(e1, edit_temp, &t);
	get_mapping(e2, 1, 9, &b);
	ck_assert_int_eq(memcmp(a.up, b.up, sizeof(a.up)), 0);
	ck_assert_int_eq(b.up_primary, a.up_primary);
	ck_assert_uint_eq(b.nacting, 3);
	ck_assert_int_eq(b.acting[0], others[0]);
	ck_assert_int_eq(b.acting[1], others[1]);
	ck_assert_int_eq(b.acting[2], others[2]);
	ck_assert_int_eq(b.acting_primary, others[0]);
	/* another PG is not affected */
	get_mapping(e2, 1, 8, &b);
	ck_assert_int_eq(memcmp(b.acting, b.up, sizeof(b.up)), 0);

	/* its primary goes down: the next takes over */
	struct temp_edit d1 = { .down = { others[0] }, .ndown = 1 };
	struct tsr_osdmap_epoch *e3 = next_epoch(e2, edit_temp, &d1);
	get_mapping(e3, 1, 9, &b);
	ck_assert_uint_eq(b.nacting, 2);
	ck_assert_int_eq(b.acting_primary, others[1]);
	/* all of them down: acting is up (which they are not in) */
	struct temp_edit d2 = { .down = { others[1], others[2] }, .ndown = 2 };
	struct tsr_osdmap_epoch *e4 = next_epoch(e3, edit_temp, &d2);
	get_mapping(e4, 1, 9, &b);
	ck_assert_uint_eq(b.nacting, b.nup);
	ck_assert_int_eq(memcmp(b.acting, b.up, sizeof(b.up)), 0);
	ck_assert_int_eq(b.acting_primary, b.up_primary);
	tsr_osdmap_epoch_put(e4);
	tsr_osdmap_epoch_put(e3);
	tsr_osdmap_epoch_put(e2);
	tsr_osdmap_epoch_put(e1);
}
END_TEST

static uint8_t *
map_bytes(const struct tsr_osdmap *m, size_t *len)
{
	struct tsr_enc e;

	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_osdmap_encode(&e, m), 0);
	return tsr_enc_take(&e, len);
}

static void
edit_add_host(struct tsr_osdmap *m, const void *arg)
{
	(void)arg;
	free(m->pmap);
	make_blob(5, 3, &m->pmap, &m->pmap_len);
	m->osds = realloc(m->osds, 15 * sizeof(*m->osds));
	for (int32_t i = 12; i < 15; i++) {
		m->osds[m->nosds] = m->osds[0];
		m->osds[m->nosds].id = i;
		snprintf(m->osds[m->nosds].host, sizeof(m->osds[0].host), "host4");
		m->nosds++;
	}
}

/* Making the next epoch leaves the one before as it was, and refuses an
 * incremental that is not for it, or does not apply, without a new epoch. */
START_TEST(epochs_stay_as_they_were)
{
	struct tsr_osdmap_epoch *e1 = make_epoch(4, 3, 64, "crush"), *bad = NULL;
	const struct osd_edit down = { 0, 0, 1, 1.0 };
	struct tsr_pg_mapping before[64], after;
	size_t l0, l1;
	uint8_t *b0 = map_bytes(tsr_osdmap_epoch_map(e1), &l0), *b1;

	for (uint32_t pg = 0; pg < 64; pg++)
		get_mapping(e1, 1, pg, &before[pg]);
	struct tsr_osdmap_epoch *e2 = next_epoch(e1, edit_osd, &down);
	struct tsr_osdmap_epoch *e3 = next_epoch(e2, edit_add_host, NULL);
	ck_assert_uint_eq(tsr_osdmap_epoch_number(e3), 7);
	ck_assert_uint_eq(tsr_osdmap_epoch_map(e3)->nosds, 15);
	b1 = map_bytes(tsr_osdmap_epoch_map(e1), &l1);
	ck_assert_uint_eq(l0, l1);
	ck_assert_int_eq(memcmp(b0, b1, l0), 0);
	for (uint32_t pg = 0; pg < 64; pg++) {
		get_mapping(e1, 1, pg, &after);
		ck_assert_int_eq(memcmp(&after, &before[pg], sizeof(after)), 0);
	}
	free(b1);

	/* an incremental for another epoch, or one that does not apply */
	struct tsr_osdmap_inc inc;
	int32_t gone = 99;
	memset(&inc, 0, sizeof(inc));
	inc.epoch = 7;
	inc.next_pool_id = 3;
	ck_assert_int_eq(tsr_osdmap_epoch_next(e1, &inc, &bad, err, sizeof(err)), -ESTALE);
	inc.epoch = 6;
	inc.osd_rm = &gone;
	inc.nosd_rm = 1;
	ck_assert_int_eq(tsr_osdmap_epoch_next(e1, &inc, &bad, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "osd.99");
	ck_assert_ptr_null(bad);
	b1 = map_bytes(tsr_osdmap_epoch_map(e1), &l1);
	ck_assert_int_eq(memcmp(b0, b1, l0), 0);
	free(b1);
	free(b0);

	/* the chain outlives the epochs it came from, and the other way */
	tsr_osdmap_epoch_put(e1);
	tsr_osdmap_epoch_put(tsr_osdmap_epoch_get(e3));
	get_mapping(e3, 1, 3, &after);
	ck_assert_uint_eq(after.epoch, 7);
	tsr_osdmap_epoch_put(e3);
	get_mapping(e2, 1, 3, &after);
	tsr_osdmap_epoch_put(e2);
	tsr_osdmap_epoch_put(NULL);
}
END_TEST

/* One plugin instance per blob, loaded at the first PG mapped, shared by
 * the epochs that bring no new blob, destroyed with the last of them. */
START_TEST(placement_instance_per_blob)
{
	const struct osd_edit down = { 2, 0, 1, 1.0 }, out = { 2, 0, 0, 1.0 };
	struct tsr_pg_mapping pm;
	struct tsr_osdmap_epoch *e1, *e2, *e3, *e4;

	atomic_store(&loads, 0);
	atomic_store(&live, 0);
	e1 = make_epoch(4, 3, 64, "counted");
	e2 = next_epoch(e1, edit_osd, &down);
	ck_assert_int_eq(atomic_load(&loads), 0);   /* not before it is used */
	get_mapping(e2, 1, 0, &pm);
	ck_assert_int_eq(atomic_load(&loads), 1);
	for (uint32_t pg = 0; pg < 64; pg++) {
		get_mapping(e1, 1, pg, &pm);
		get_mapping(e2, 1, pg, &pm);
	}
	e3 = next_epoch(e2, edit_osd, &out);
	get_mapping(e3, 2, 5, &pm);
	ck_assert_int_eq(atomic_load(&loads), 1);
	ck_assert_int_eq(atomic_load(&live), 1);
	/* a new blob: a new instance, for it and the epochs after */
	e4 = next_epoch(e3, edit_add_host, NULL);
	get_mapping(e4, 1, 5, &pm);
	ck_assert_int_eq(atomic_load(&loads), 2);
	ck_assert_int_eq(atomic_load(&live), 2);
	tsr_osdmap_epoch_put(e1);
	tsr_osdmap_epoch_put(e2);
	ck_assert_int_eq(atomic_load(&live), 2);
	tsr_osdmap_epoch_put(e3);
	ck_assert_int_eq(atomic_load(&live), 1);
	tsr_osdmap_epoch_put(e4);
	ck_assert_int_eq(atomic_load(&live), 0);
}
END_TEST

/* Raw sets depend on the blob, the weights and the pools, not on up or
 * PG temp: epochs that differ only there place each PG once between them
 * (the boots and failures of a large cluster cost no placement), and
 * their sets are those a fresh epoch computes; a change of weight or of a
 * pool places again. */
START_TEST(raw_sets_placed_once_per_weights_and_pools)
{
	const struct osd_edit down = { 2, 0, 1, 1.0 }, rew = { 5, 1, 1, 0.5 };
	struct tsr_pg_mapping a, b;
	struct tsr_osdmap_epoch *e1, *e2, *e3, *fresh;
	struct tsr_osdmap copy;

	e1 = make_epoch(4, 3, 64, "counted");
	atomic_store(&placed, 0);
	for (uint32_t pg = 0; pg < 64; pg++)
		get_mapping(e1, 1, pg, &a);
	ck_assert_int_eq(atomic_load(&placed), 64);
	for (uint32_t pg = 0; pg < 64; pg++)
		get_mapping(e1, 1, pg, &a);                 /* again: cached */
	ck_assert_int_eq(atomic_load(&placed), 64);
	e2 = next_epoch(e1, edit_osd, &down);             /* osd.2 down */
	ck_assert_int_eq(tsr_osdmap_copy(&copy, tsr_osdmap_epoch_map(e2)), 0);
	ck_assert_msg(tsr_osdmap_epoch_create(&copy, reg, &host.host, &fresh, err,
					      sizeof(err)) == 0, "%s", err);
	for (uint32_t pg = 0; pg < 64; pg++) {
		get_mapping(e2, 1, pg, &a);
		for (uint32_t i = 0; i < a.nup; i++)
			ck_assert_int_ne(a.up[i], 2);
		get_mapping(fresh, 1, pg, &b);
		ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
	}
	/* e2 took e1's: only the fresh epoch placed */
	ck_assert_int_eq(atomic_load(&placed), 64 + 64);
	e3 = next_epoch(e2, edit_osd, &rew);              /* a new weight */
	for (uint32_t pg = 0; pg < 64; pg++)
		get_mapping(e3, 1, pg, &a);
	ck_assert_int_eq(atomic_load(&placed), 64 + 64 + 64);
	tsr_osdmap_epoch_put(fresh);
	tsr_osdmap_epoch_put(e1);
	tsr_osdmap_epoch_put(e2);
	tsr_osdmap_epoch_put(e3);
}
END_TEST

static void
edit_pool_rule(struct tsr_osdmap *m, const void *arg)
{
	m->pools[1].rule = *(const uint32_t *)arg;
}

START_TEST(mapping_refusals)
{
	struct tsr_osdmap_epoch *ep = make_epoch(4, 3, 64, "crush"), *e2;
	struct tsr_pg_mapping pm;
	struct tsr_osdmap m;
	const uint32_t rule9 = 9;

	ck_assert_int_eq(tsr_osdmap_epoch_map_pg(ep, 7, 0, &pm, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, "no pool 7");
	ck_assert_int_eq(pm.up_primary, -1);
	ck_assert_int_eq(tsr_osdmap_epoch_map_object(ep, 7, "x", 1, &pm, err,
						     sizeof(err)), -ENOENT);
	ck_assert_int_eq(tsr_osdmap_epoch_map_pg(ep, 1, 64, &pm, err, sizeof(err)), -ERANGE);
	ck_assert_contains(err, "1.40");
	e2 = next_epoch(ep, edit_pool_rule, &rule9);
	ck_assert_int_eq(tsr_osdmap_epoch_map_pg(e2, 2, 0, &pm, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, "rule 9");
	tsr_osdmap_epoch_put(e2);
	tsr_osdmap_epoch_put(ep);

	/* no placement map; a plugin this process lacks (every time); a blob
	 * the plugin refuses */
	m = make_map(2, 2, 8, "crush");
	m.placement[0] = '\0';
	ck_assert_int_eq(tsr_osdmap_epoch_create(&m, reg, &host.host, &ep, err,
						 sizeof(err)), 0);
	ck_assert_int_eq(tsr_osdmap_epoch_map_pg(ep, 1, 0, &pm, err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, "no placement map");
	tsr_osdmap_epoch_put(ep);
	m = make_map(2, 2, 8, "nosuch");
	ck_assert_int_eq(tsr_osdmap_epoch_create(&m, reg, &host.host, &ep, err,
						 sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		ck_assert_int_eq(tsr_osdmap_epoch_map_pg(ep, 1, 0, &pm, err, sizeof(err)),
				 -ENOENT);
		ck_assert_contains(err, "no placement plugin 'nosuch'");
	}
	tsr_osdmap_epoch_put(ep);
	m = make_map(2, 2, 8, "crush");
	memset(m.pmap, 0x5a, m.pmap_len);
	ck_assert_int_eq(tsr_osdmap_epoch_create(&m, reg, &host.host, &ep, err,
						 sizeof(err)), 0);
	ck_assert_int_lt(tsr_osdmap_epoch_map_pg(ep, 1, 0, &pm, err, sizeof(err)), 0);
	ck_assert_contains(err, "placement plugin 'crush' refuses the map");
	tsr_osdmap_epoch_put(ep);

	/* a map that is not sane makes no epoch, and stays the caller's */
	m = make_map(2, 2, 8, "crush");
	m.osds[0].weight = -1;
	ck_assert_int_eq(tsr_osdmap_epoch_create(&m, reg, &host.host, &ep, err,
						 sizeof(err)), -EINVAL);
	ck_assert_contains(err, "osd.0");
	ck_assert_ptr_nonnull(m.osds);
	tsr_osdmap_free(&m);
}
END_TEST

/* ---- Threads ----------------------------------------------------------------
 *
 * Readers take references to epochs of a chain while the chain is made and
 * its older epochs are dropped (so the last reference of some goes on a
 * reader's thread), and map PGs on them from their first use on (the
 * instances load under contention).  Every answer must match the same
 * chain made and mapped on one thread.  Run under ASan for the races that
 * count: use after free, double free, leaks. */

enum { CHAIN = 24, PGS = 64, READERS = 4, READS = 3000 };

static struct tsr_pg_mapping expect[CHAIN][PGS];
static struct tsr_osdmap_epoch *slot[CHAIN];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int mismatches, reads;

struct chain_edit {
	int k;
};

/* Step k of the chain: a mark, a reweight or a PG temp mapping. */
static void
edit_chain(struct tsr_osdmap *m, const void *arg)
{
	int k = ((const struct chain_edit *)arg)->k;
	struct tsr_osdmap_osd *o = &m->osds[(k * 5) % m->nosds];

	switch (k % 4) {
	case 0: o->up = !o->up; break;
	case 1: o->in = !o->in; break;
	case 2: o->reweight = o->reweight < 1 ? 1 : 0.5; break;
	default: {
		struct temp_edit t = { .pg = (uint32_t)k % PGS, .n = 2,
				       .osds = { o->id, (o->id + 4) % 12 } };
		edit_temp(m, &t);
	}
	}
}

static void
make_chain(struct tsr_osdmap_epoch **out)
{
	out[0] = make_epoch(4, 3, PGS, "crush");
	for (int k = 1; k < CHAIN; k++) {
		struct chain_edit e = { k };
		out[k] = next_epoch(out[k - 1], edit_chain, &e);
	}
}

static void *
reader(void *arg)
{
	uint64_t r = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	char why[256];

	for (int i = 0; i < READS; i++) {
		struct tsr_osdmap_epoch *ep = NULL;
		struct tsr_pg_mapping pm;
		int k = (int)(tu_rnd(&r) % CHAIN);
		uint32_t pg = (uint32_t)(tu_rnd(&r) % PGS);

		pthread_mutex_lock(&slot_lock);
		for (int j = 0; j < CHAIN && ep == NULL; j++)
			if (slot[(k + j) % CHAIN] != NULL) {
				k = (k + j) % CHAIN;
				ep = tsr_osdmap_epoch_get(slot[k]);
			}
		pthread_mutex_unlock(&slot_lock);
		if (ep == NULL)
			break;
		if (tsr_osdmap_epoch_map_pg(ep, 1, pg, &pm, why, sizeof(why)) != 0 ||
		    memcmp(&pm, &expect[k][pg], sizeof(pm)) != 0)
			atomic_fetch_add(&mismatches, 1);
		/* and hold another epoch's reference for a moment */
		struct tsr_osdmap_epoch *held = tsr_osdmap_epoch_get(ep);
		tsr_osdmap_epoch_put(ep);
		tsr_osdmap_epoch_put(held);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

START_TEST(epochs_shared_by_threads)
{
	struct tsr_osdmap_epoch *one[CHAIN];
	pthread_t t[READERS];

	make_chain(one);
	for (int k = 0; k < CHAIN; k++) {
		for (uint32_t pg = 0; pg < PGS; pg++)
			get_mapping(one[k], 1, pg, &expect[k][pg]);
		tsr_osdmap_epoch_put(one[k]);
	}
	make_chain(slot);   /* fresh: nothing loaded yet */
	atomic_store(&mismatches, 0);
	atomic_store(&reads, 0);
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)i), 0);
	/* drop the older epochs while the readers work, keeping the last */
	for (int k = 0; k < CHAIN - 1; k++) {
		uint64_t until = tsr_mono_ns() + 2000000;   /* 2 ms apart */
		while (tsr_mono_ns() < until && atomic_load(&reads) < READERS * READS)
			;
		pthread_mutex_lock(&slot_lock);
		tsr_osdmap_epoch_put(slot[k]);
		slot[k] = NULL;
		pthread_mutex_unlock(&slot_lock);
	}
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	tsr_osdmap_epoch_put(slot[CHAIN - 1]);
	slot[CHAIN - 1] = NULL;
	ck_assert_int_eq(atomic_load(&mismatches), 0);
	ck_assert_int_eq(atomic_load(&reads), READERS * READS);
}
END_TEST

/* ---- Scale ------------------------------------------------------------------*/

static void
edit_mark_down(struct tsr_osdmap *m, const void *arg)
{
	(void)arg;
	for (size_t i = 0; i < 100; i++)
		m->osds[i * 97 % m->nosds].up = 0;
}

/* 10,000 OSDs (500 hosts of 20): the full map round trips, an epoch places
 * a pool's PGs, and one incremental marks 100 OSDs down.  The sizes and
 * times go to the log (bench/results.md quotes them). */
START_TEST(ten_thousand_osds)
{
	struct tsr_osdmap m = make_map(500, 20, 4096, "crush"), d;
	struct tsr_osdmap_epoch *e1, *e2;
	struct tsr_osdmap_inc inc;
	struct tsr_pg_mapping pm;
	struct tsr_enc e;
	size_t len, ilen, blob = m.pmap_len;
	uint8_t *buf;
	uint64_t t0;

	buf = map_bytes(&m, &len);
	ck_assert_msg(tsr_osdmap_decode(buf, len, &d, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(d.nosds, 10000);
	tsr_osdmap_free(&d);
	free(buf);
	ck_assert_int_eq(tsr_osdmap_epoch_create(&m, reg, &host.host, &e1, err,
						 sizeof(err)), 0);
	t0 = tsr_mono_ns();
	get_mapping(e1, 1, 0, &pm);
	uint64_t load_us = (tsr_mono_ns() - t0) / 1000;
	t0 = tsr_mono_ns();
	for (uint32_t pg = 0; pg < 4096; pg++) {
		get_mapping(e1, 1, pg, &pm);
		ck_assert_uint_eq(pm.nup, 3);
	}
	uint64_t map_us = (tsr_mono_ns() - t0) / 1000;
	t0 = tsr_mono_ns();
	e2 = next_epoch(e1, edit_mark_down, NULL);
	uint64_t next_us = (tsr_mono_ns() - t0) / 1000;
	ck_assert_int_eq(tsr_osdmap_diff(tsr_osdmap_epoch_map(e1), tsr_osdmap_epoch_map(e2),
					 &inc), 0);
	tsr_enc_init(&e);
	ck_assert_int_eq(tsr_osdmap_inc_encode(&e, &inc), 0);
	ilen = e.len;
	tsr_enc_release(&e);
	tsr_osdmap_inc_free(&inc);
	for (uint32_t pg = 0; pg < 4096; pg += 7) {
		get_mapping(e2, 1, pg, &pm);
		for (uint32_t i = 0; i < pm.nup; i++)
			ck_assert(tsr_osdmap_osd(tsr_osdmap_epoch_map(e2), pm.up[i])->up);
	}
	printf("10,000 OSDs: full map %zu bytes (placement blob %zu), incremental "
	       "marking 100 down %zu bytes; first PG mapped (instance made, blob "
	       "loaded) in %llu us, 4096 PGs in %llu us, next epoch in %llu us\n",
	       len, blob, ilen, (unsigned long long)load_us,
	       (unsigned long long)map_us, (unsigned long long)next_us);
	tsr_osdmap_epoch_put(e1);
	tsr_osdmap_epoch_put(e2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("osdmap_epoch");
	TCase *tc = tcase_create("osdmap_epoch");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pg_sets_under_an_epoch);
	tcase_add_test(tc, pg_mapping_ignored_up_and_reweight);
	tcase_add_test(tc, pg_temp_sets_acting);
	tcase_add_test(tc, epochs_stay_as_they_were);
	tcase_add_test(tc, placement_instance_per_blob);
	tcase_add_test(tc, raw_sets_placed_once_per_weights_and_pools);
	tcase_add_test(tc, mapping_refusals);
	tcase_add_test(tc, epochs_shared_by_threads);
	tcase_add_test(tc, ten_thousand_osds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
