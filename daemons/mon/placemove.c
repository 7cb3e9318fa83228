/* placemove.c — what a new placement plugin would move: the leader's
 * answer to `osd placement set PLUGIN` on a map with OSDs, given before
 * anything changes (mon.h).
 *
 * PGs of every pool are placed twice with the placement plugins this
 * monitor has (the ones clients and OSDs load by the same names): under
 * the OSD map as it stands, and under the same map with PLUGIN's
 * placement map, made from the same OSDs, hosts and racks by the code
 * that makes the map's own (state_placement_map).  A PG copy moves when
 * the new map's up set holds an OSD that is not in the PG's acting set
 * now: that OSD gets the PG by backfill.  The primary changes when the
 * new up set's first OSD is not the acting primary now.
 *
 * In both maps every OSD that is in counts as up (so up is the raw
 * set): a down OSD that is in keeps its place, holds its copies and is
 * backfilled to the new placement when it returns, so its PGs move as
 * the others do; left out, the estimate would miss them.  The answer says
 * how many such OSDs are down.  With no OSD in, nothing is placed and
 * there is nothing to estimate: that is refused as such, not "0 of 0".
 *
 * There is no optimum to print next to it, as there is for a new OSD (its
 * share): on an unchanged topology the least a balanced placement must
 * move is nothing, and what a new plugin moves is the price of choosing
 * otherwise.  What puts the number in scale is what a placement unrelated
 * to the current one would move: a copy stays where it is about as often
 * as a draw by weight picks an OSD that holds the PG now
 * ("unrelated_fraction").  Two plugins are unrelated, so expect about that.
 *
 * The bytes are the moved share of what the OSDs' stores hold, as their
 * last reports said (pgstats.c): an estimate, since PGs differ in size.
 *
 * It runs on the leader's loop, under mon->lock, which sends no Raft
 * heartbeat meanwhile, and a map() call costs more the more OSDs and
 * hosts there are (about 50 us on 10,000 OSDs: 8192 PGs took 0.8 s there,
 * and a leader lost its lease on 20,000).  So it stops at whichever comes
 * first: MON_PLACEMOVE_PGS PGs placed, or MON_PLACEMOVE_MS since the
 * command came (the clock read every MON_PLACEMOVE_CHECK PGs; the lease
 * is mon_election_ticks - 2 ticks, 800 ms by default), and always places
 * at least one batch of MON_PLACEMOVE_CHECK.  (What comes before the
 * placing, PLUGIN's placement map and the two epochs, costs what any
 * change of the topology costs the leader: it is not bounded here, and
 * counts against the 100 ms.)  So the answer comes long before a CLI
 * gives up on the leader (3 s) and asks another monitor.  The counting
 * could run off the loop (epochs are immutable and thread-safe), but the
 * answer would then need a waiter, a thread and a rule for commands
 * meanwhile, for a command asked rarely; a sample bounded in time answers
 * as well.  For a sample stopped early
 * to be an even one, PGs are visited in a scattered order over all pools:
 * the k-th of all PGs (pools in the map's order) at k = i * step mod all,
 * with step coprime to all (so a full run visits each PG once) and near
 * all / phi, the golden ratio, so that every prefix of the visits is
 * spread evenly over the PG numbers (the three-distance theorem; a small
 * step would crowd an early stop into the first pools).  PG seeds are
 * hashes, so PG numbers say nothing of placement.  The answer says how
 * many PGs were placed, that it is a sample, and the totals scaled to
 * all PGs. */
#include "mon.h"
#include "map/osdmap_epoch.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(rc, ...) (tsr_sbuf_printf(out, __VA_ARGS__), (rc))

#define MON_PLACEMOVE_PGS 8192          /* PGs placed at most */
#define MON_PLACEMOVE_MS 100            /* and for at most this long */
#define MON_PLACEMOVE_CHECK 128         /* PGs placed between clock reads */

struct moves {
	uint64_t all;                /* PGs in the map */
	uint64_t pgs, copies;        /* PGs placed; copies the new map places */
	uint64_t moved;              /* of those, onto an OSD not holding the PG */
	uint64_t primary;            /* PGs whose primary changes */
	uint64_t fewer;              /* PGs the new map gives fewer OSDs than now */
	double unrelated;            /* copies an unrelated placement would move */
	double ms;                   /* since the command came */
};

/* A share of the weight: what a draw by weight gives the OSD. */
static double
share_of(const struct tsr_osdmap *m, int32_t id)
{
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, id);

	return o && o->up && o->in ? o->weight * o->reweight : 0;
}

static int
holds(const struct tsr_pg_mapping *a, int32_t id)
{
	for (uint32_t j = 0; j < a->nacting; j++)
		if (a->acting[j] == id)
			return 1;
	return 0;
}

static uint64_t
gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* The step of the visiting order (the comment at the top says why):
 * coprime to all, near all / phi. */
static uint64_t
scatter_step(uint64_t all)
{
	uint64_t step = (uint64_t)((double)all * 0.6180339887498949);

	if (step == 0)
		step = 1;
	while (gcd(step, all) != 1)
		step++;
	return step;
}

/* Place PGs under now and under next, in the scattered order, until all
 * are placed, MON_PLACEMOVE_PGS are, or MON_PLACEMOVE_MS have passed
 * since t0 (tsr_mono_ns); the counts in mv, or the plugin's error naming
 * the PG and the plugin in out. */
static int
count_moves(const struct tsr_osdmap_epoch *now, const struct tsr_osdmap_epoch *next,
	    uint64_t t0, struct moves *mv, struct tsr_sbuf *out)
{
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(now);
	const struct tsr_osdmap *n = tsr_osdmap_epoch_map(next);
	uint64_t *first, step, k = 0;
	char err[512];
	double all = 0;
	int rc = 0;

	memset(mv, 0, sizeof(*mv));
	for (size_t i = 0; i < m->nosds; i++)
		all += share_of(m, m->osds[i].id);
	/* first[p]: the index of pool p's PG 0 among all PGs */
	first = tsr_xcalloc(m->npools + 1, sizeof(*first));
	for (size_t p = 0; p < m->npools; p++)
		first[p + 1] = first[p] + m->pools[p].pg_num;
	mv->all = first[m->npools];
	step = scatter_step(mv->all);
	while (mv->pgs < mv->all && mv->pgs < MON_PLACEMOVE_PGS) {
		const struct tsr_osdmap_pool *pool;
		struct tsr_pg_mapping a, b;
		size_t lo = 0, hi = m->npools;
		double held = 0;
		uint32_t pg;

		if (mv->pgs > 0 && mv->pgs % MON_PLACEMOVE_CHECK == 0 &&
		    tsr_mono_ns() - t0 >= (uint64_t)MON_PLACEMOVE_MS * 1000000)
			break;
		/* the pool whose PGs hold index k: first[lo] <= k < first[lo + 1] */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			if (first[mid] <= k)
				lo = mid;
			else
				hi = mid;
		}
		pool = &m->pools[lo];
		pg = (uint32_t)(k - first[lo]);
		k += step;
		if (k >= mv->all)
			k -= mv->all;
		if ((rc = tsr_osdmap_epoch_map_pg(now, pool->id, pg, &a, err,
						  sizeof(err))) < 0) {
			rc = FAIL(rc, "cannot place PG %" PRId64 ".%x under the current "
				  "map (%s): %s", pool->id, pg, m->placement, err);
			break;
		}
		if ((rc = tsr_osdmap_epoch_map_pg(next, pool->id, pg, &b, err,
						  sizeof(err))) < 0) {
			rc = FAIL(rc, "%s cannot place PG %" PRId64 ".%x of pool '%s': %s",
				  n->placement, pool->id, pg, pool->name, err);
			break;
		}
		mv->pgs++;
		mv->copies += b.nup;
		for (uint32_t j = 0; j < b.nup; j++)
			mv->moved += !holds(&a, b.up[j]);
		for (uint32_t j = 0; j < a.nacting; j++)
			held += share_of(m, a.acting[j]);
		if (all > 0 && held < all)
			mv->unrelated += b.nup * (1 - held / all);
		mv->primary += b.up_primary != a.acting_primary;
		mv->fewer += b.nup < a.nacting;
	}
	free(first);
	mv->ms = (double)(tsr_mono_ns() - t0) / 1e6;
	return rc;
}

/* n bytes for people: "12.3 MiB". */
static void
bytes_text(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", n);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* x of the PGs placed, scaled to all PGs of the map. */
static uint64_t
scaled(const struct moves *mv, double x)
{
	return mv->pgs ? (uint64_t)(x * (double)mv->all / (double)mv->pgs + 0.5) : 0;
}

/* The answer: the numbers as JSON, and in "error" a sentence saying them.
 * down: the OSDs that are in but down (counted as up). */
static void
answer(const struct tsr_osdmap *m, const char *plugin, const struct moves *mv,
       size_t down, uint64_t used, size_t reporting, struct tsr_sbuf *out)
{
	double frac = mv->copies ? (double)mv->moved / (double)mv->copies : 0;
	double unrel = mv->copies ? mv->unrelated / (double)mv->copies : 0;
	uint64_t est = (uint64_t)(frac * (double)used + 0.5);
	int sampled = mv->pgs < mv->all;
	struct tsr_sbuf s;
	char b1[32], b2[32];

	tsr_sbuf_init(&s);
	if (mv->pgs == 0) {
		tsr_sbuf_printf(&s, "changing the placement plugin from %s to %s moves no "
				"data now: the map has no pools", m->placement, plugin);
	} else {
		/* a sample's numbers are not totals: the totals they make,
		 * then what the sample was */
		tsr_sbuf_printf(&s, "changing the placement plugin from %s to %s would move "
				"%s%" PRIu64 " of %" PRIu64 " PG copies (%.1f%%; a placement "
				"unrelated to the current one would move about %.1f%%) and "
				"change the primary of %s%" PRIu64 " of %" PRIu64 " PGs",
				m->placement, plugin, sampled ? "about " : "",
				scaled(mv, (double)mv->moved), scaled(mv, (double)mv->copies),
				frac * 100, unrel * 100, sampled ? "about " : "",
				scaled(mv, (double)mv->primary), mv->all);
		if (sampled)
			tsr_sbuf_printf(&s, " (estimated from a sample of %" PRIu64 " of the %"
					PRIu64 " PGs, spread over all pools, placed in %.0f ms: "
					"in it %" PRIu64 " of %" PRIu64 " copies move and %"
					PRIu64 " primaries change)", mv->pgs, mv->all, mv->ms,
					mv->moved, mv->copies, mv->primary);
		if (mv->fewer)
			tsr_sbuf_printf(&s, "; %s would give %s%" PRIu64 " PGs fewer OSDs "
					"than they have now", plugin, sampled ? "about " : "",
					scaled(mv, (double)mv->fewer));
		if (down)
			tsr_sbuf_printf(&s, "; %zu of the OSDs that are in %s down, counted "
					"where they are placed (a down OSD keeps its place "
					"and is backfilled when it returns)", down,
					down == 1 ? "is" : "are");
		bytes_text(est, b1, sizeof(b1));
		bytes_text(used, b2, sizeof(b2));
		if (reporting)
			tsr_sbuf_printf(&s, ": about %s to copy (an estimate: %.1f%% of the "
					"%s the stores of %zu of %zu OSDs hold)", b1,
					frac * 100, b2, reporting, m->nosds);
		else
			tsr_sbuf_printf(&s, ": how many bytes is not known (no OSD has "
					"reported its store's usage lately)");
	}
	tsr_sbuf_printf(&s, "; nothing was changed: add --yes-i-really-mean-it to "
			"change it");

	tsr_sbuf_printf(out, "{\"placement\": ");
	tsr_sbuf_json_str(out, m->placement);
	tsr_sbuf_printf(out, ", \"new_placement\": ");
	tsr_sbuf_json_str(out, plugin);
	tsr_sbuf_printf(out, ", \"changed\": false, \"osdmap_epoch\": %" PRIu64
			", \"pgs_in_map\": %" PRIu64 ", \"sampled\": %s", m->epoch, mv->all,
			sampled ? "true" : "false");
	tsr_sbuf_printf(out, ", \"pgs_placed\": %" PRIu64 ", \"pg_copies\": %" PRIu64
			", \"moved\": %" PRIu64 ", \"moved_fraction\": %.4f, "
			"\"unrelated_fraction\": %.4f, \"primary_changed\": %" PRIu64
			", \"pgs_fewer_osds\": %" PRIu64, mv->pgs, mv->copies, mv->moved,
			frac, unrel, mv->primary, mv->fewer);
	tsr_sbuf_printf(out, ", \"estimated_pg_copies\": %" PRIu64 ", \"estimated_moved\": %"
			PRIu64 ", \"estimated_primary_changed\": %" PRIu64
			", \"estimated_pgs_fewer_osds\": %" PRIu64 ", \"osds_down\": %zu"
			", \"placing_ms\": %.1f", scaled(mv, (double)mv->copies),
			scaled(mv, (double)mv->moved), scaled(mv, (double)mv->primary),
			scaled(mv, (double)mv->fewer), down, mv->ms);
	tsr_sbuf_printf(out, ", \"used_bytes\": %" PRIu64 ", \"osds_reporting\": %zu"
			", \"estimated_bytes_to_copy\": %" PRIu64 ", \"error\": ", used,
			reporting, est);
	tsr_sbuf_json_str(out, tsr_sbuf_str(&s));
	tsr_sbuf_printf(out, "}");
	LOGI("osd placement set %s, a dry run (%" PRIu64 " of %" PRIu64 " PGs placed twice, "
	     "%.1f ms): %s", plugin, mv->pgs, mv->all, mv->ms, tsr_sbuf_str(&s));
	tsr_sbuf_release(&s);
}

int
mon_placement_dry_run(struct mon *mon, const struct tsr_mon_cmd *cmd, uint64_t now,
		      struct tsr_sbuf *out)
{
	/* the leader's view: what a change proposed now would meet */
	const struct mon_state *st = mon->proj_valid ? &mon->proj : &mon->st;
	const struct tsr_osdmap *m = &st->osdmap;
	const struct tsr_registry *reg = tsr_daemon_registry(mon->d);
	struct tsr_osdmap_epoch *now_ep = NULL, *next_ep = NULL;
	struct tsr_osdmap cur, next, view;
	struct tsr_core_host host;
	struct tsr_sbuf why;
	struct moves mv;
	const char *plugin;
	uint64_t t0 = tsr_mono_ns(), used;
	size_t len = 0, reporting, in = 0, down = 0;
	void *blob = NULL;
	char err[512];
	int yes, cannot, rc;

	if (!state_placement_set((int)cmd->argc, cmd->argv, &plugin, &yes) || yes ||
	    m->nosds == 0 || strcmp(plugin, m->placement) == 0)
		return 0;
	for (size_t i = 0; i < m->nosds; i++) {
		in += m->osds[i].in;
		down += m->osds[i].in && !m->osds[i].up;
	}
	if (in == 0)
		return FAIL(-ENODATA, "cannot estimate what %s would move: no OSD is in "
			    "(the map's %zu OSDs are all out), so no PG is placed; nothing "
			    "was changed: add --yes-i-really-mean-it to change it", plugin,
			    m->nosds);
	/* PLUGIN's placement map of the same OSDs, hosts and racks */
	view = *m;
	tsr_strlcpy(view.placement, plugin, sizeof(view.placement));
	tsr_sbuf_init(&why);
	rc = state_placement_map(&st->placer, &view, &blob, &len, &cannot, &why);
	if (rc < 0)
		tsr_sbuf_printf(out, "cannot estimate what %s would move: %s", plugin,
				tsr_sbuf_str(&why));
	tsr_sbuf_release(&why);
	if (rc < 0)
		return rc;
	tsr_osdmap_init(&cur);
	tsr_osdmap_init(&next);
	if (tsr_osdmap_copy(&cur, m) < 0 || tsr_osdmap_copy(&next, m) < 0) {
		rc = FAIL(-ENOMEM, "out of memory");
		goto out;
	}
	/* every OSD that is in, up: down ones keep their place (the top) */
	for (size_t i = 0; i < cur.nosds; i++)
		if (cur.osds[i].in)
			cur.osds[i].up = next.osds[i].up = 1;
	free(next.pmap);
	next.pmap = blob;
	next.pmap_len = len;
	blob = NULL;
	tsr_strlcpy(next.placement, plugin, sizeof(next.placement));
	/* instances of both plugins, for the two epochs, which go before
	 * the host does */
	tsr_core_host_init(&host, "placement", NULL, NULL);
	if ((rc = tsr_osdmap_epoch_create(&cur, reg, &host.host, &now_ep, err,
					  sizeof(err))) < 0 ||
	    (rc = tsr_osdmap_epoch_create(&next, reg, &host.host, &next_ep, err,
					  sizeof(err))) < 0) {
		rc = FAIL(rc, "cannot estimate what %s would move: %s", plugin, err);
		goto out;
	}
	if ((rc = count_moves(now_ep, next_ep, t0, &mv, out)) < 0)
		goto out;
	used = mon_pgstats_used(mon, m, now, &reporting);
	answer(m, plugin, &mv, down, used, reporting, out);
	rc = -ECANCELED;
out:
	tsr_osdmap_epoch_put(now_ep);
	tsr_osdmap_epoch_put(next_ep);
	tsr_osdmap_free(&cur);
	tsr_osdmap_free(&next);
	free(blob);
	return rc;
}
