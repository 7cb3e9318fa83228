/* pgstats.c — where the placement groups stand, as their primaries tell
 * the leader (MON_PG_STATS, every osd_pg_stats_interval): what `tessera
 * status`, `pg stat|dump|query` and the PG health checks show.
 *
 * The stats live in the leader's memory only, not in the maps: they are a
 * view of the moment, rebuilt within a report interval by a new leader
 * (until then its PGs show "unknown").  A report is taken for a PG when it
 * is as new as the one held (the map epoch it was taken at): a primary
 * that lost the PG reports from an older epoch than its successor.  A PG
 * whose last report is older than MON_PG_STALE_NS shows "stale" (its
 * primary stopped reporting: dead, cut off, or no longer primary and the
 * new one silent); a PG of the map never reported shows "unknown".
 *
 * Recovery progress: the degraded object copies of all PGs, sampled at
 * most once a second, give a rate over the last samples and an ETA.
 *
 * Scrubs: a report carries when the PG was last scrubbed and deep
 * scrubbed and what the last scrub found inconsistent (up to
 * TSR_PG_STAT_MAX_BAD object names).  One check, PG_DAMAGED, stands for
 * what Ceph splits into PG_DAMAGED and OSD_SCRUB_ERRORS (both come from
 * the same counts): its summary counts the errors and PGs, its detail
 * names each PG's objects.  A stale report still counts: data found
 * damaged stays so until a scrub says otherwise.
 *
 * All of it runs on the monitor's loop, under mon->lock.
 */
#include "mon.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MON_PG_STALE_NS (30ull * 1000000000u)
#define SAMPLES 30

struct pg_entry {
	struct tsr_mon_pg_stat st;
	int32_t from;                /* the OSD that reported it */
	uint64_t at_ns;              /* when (the monitor's clock) */
};

/* An OSD's store, as its last report said. */
struct osd_use {
	uint64_t total, used, avail, objects;
	uint64_t at_ns;              /* 0: never reported */
};

struct mon_pgstats {
	struct pg_entry *e;          /* sorted by (pool, pg) */
	size_t n, cap;
	struct osd_use *use;         /* by OSD id */
	size_t nuse;
	uint64_t reports, refused;
	/* degraded copies over time: a ring */
	struct { uint64_t at_ns, degraded; } sample[SAMPLES];
	size_t nsample, first;
};

static int
cmp_pgid(int64_t pool, uint32_t pg, const struct pg_entry *x)
{
	if (pool != x->st.pool)
		return pool < x->st.pool ? -1 : 1;
	return pg < x->st.pg ? -1 : pg > x->st.pg;
}

/* The index of (pool, pg), or where it would go (*found 0). */
static size_t
find(const struct mon_pgstats *p, int64_t pool, uint32_t pg, int *found)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_pgid(pool, pg, &p->e[mid]);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = 0;
	return lo;
}

void
mon_pgstats_free(struct mon *mon)
{
	if (mon->pgstats == NULL)
		return;
	free(mon->pgstats->e);
	free(mon->pgstats->use);
	free(mon->pgstats);
	mon->pgstats = NULL;
}

static struct mon_pgstats *
stats_of(struct mon *mon)
{
	if (mon->pgstats == NULL)
		mon->pgstats = tsr_xcalloc(1, sizeof(*mon->pgstats));
	return mon->pgstats;
}

/* Drop what the map no longer has: a pool gone, PGs above its pg_num. */
static void
prune(struct mon *mon)
{
	struct mon_pgstats *p = stats_of(mon);
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct tsr_osdmap_pool *pool = tsr_osdmap_pool(&mon->st.osdmap,
								     p->e[i].st.pool);
		if (pool && p->e[i].st.pg < pool->pg_num)
			p->e[k++] = p->e[i];
	}
	p->n = k;
}

void
mon_pgstats_take(struct mon *mon, const struct tsr_mon_pg_stats *s, uint64_t now)
{
	struct mon_pgstats *p = stats_of(mon);

	p->reports++;
	if (s->total && (size_t)s->osd >= p->nuse) {
		size_t n = (size_t)s->osd + 1;
		struct osd_use *v = realloc(p->use, n * sizeof(*v));
		if (v) {
			memset(v + p->nuse, 0, (n - p->nuse) * sizeof(*v));
			p->use = v;
			p->nuse = n;
		}
	}
	if (s->total && (size_t)s->osd < p->nuse) {
		struct osd_use *u = &p->use[s->osd];
		u->total = s->total;
		u->used = s->used;
		u->avail = s->avail;
		u->objects = s->objects;
		u->at_ns = now;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const struct tsr_mon_pg_stat *st = &s->pgs[i];
		const struct tsr_osdmap_pool *pool = tsr_osdmap_pool(&mon->st.osdmap, st->pool);
		int found;
		size_t k;

		if (pool == NULL || st->pg >= pool->pg_num || st->epoch > mon->st.osdmap.epoch) {
			p->refused++; /* not a PG of this map (or from a map we lack) */
			continue;
		}
		k = find(p, st->pool, st->pg, &found);
		if (found && p->e[k].st.epoch > st->epoch) {
			p->refused++; /* a primary of an older map: its successor's holds */
			continue;
		}
		if (!found) {
			if (p->n == p->cap) {
				size_t cap = p->cap ? 2 * p->cap : 256;
				struct pg_entry *v = realloc(p->e, cap * sizeof(*v));
				if (v == NULL)
					continue;
				p->e = v;
				p->cap = cap;
			}
			memmove(&p->e[k + 1], &p->e[k], (p->n - k) * sizeof(*p->e));
			p->n++;
		}
		p->e[k].st = *st;
		p->e[k].from = s->osd;
		p->e[k].at_ns = now;
	}
}

/* PG (pool, pg)'s state now: its report's bits, stale when old, unknown
 * when none; *e the report (NULL: none). */
static uint32_t
state_now(struct mon_pgstats *p, int64_t pool, uint32_t pg, uint64_t now,
	  const struct pg_entry **e)
{
	int found;
	size_t k = find(p, pool, pg, &found);

	*e = found ? &p->e[k] : NULL;
	if (!found)
		return TSR_PG_ST_UNKNOWN;
	if (now - p->e[k].at_ns > MON_PG_STALE_NS)
		return p->e[k].st.state | TSR_PG_ST_STALE;
	return p->e[k].st.state;
}

/* The counts over every PG of the map. */
struct summary {
	uint64_t total, active, clean, degraded_pgs, inactive;
	uint64_t degraded, missing;
	struct { uint32_t state; uint64_t n; } by[64];
	size_t nby;
};

static void
summarize(struct mon *mon, uint64_t now, struct summary *sm)
{
	struct mon_pgstats *p = stats_of(mon);

	memset(sm, 0, sizeof(*sm));
	prune(mon);
	for (size_t i = 0; i < mon->st.osdmap.npools; i++) {
		const struct tsr_osdmap_pool *pool = &mon->st.osdmap.pools[i];
		for (uint32_t pg = 0; pg < pool->pg_num; pg++) {
			const struct pg_entry *e;
			uint32_t st = state_now(p, pool->id, pg, now, &e);
			size_t k;
			sm->total++;
			sm->active += (st & TSR_PG_ST_ACTIVE) != 0;
			sm->clean += (st & TSR_PG_ST_CLEAN) && (st & TSR_PG_ST_ACTIVE);
			sm->degraded_pgs += (st & TSR_PG_ST_DEGRADED) != 0;
			sm->inactive += !(st & TSR_PG_ST_ACTIVE) || (st & TSR_PG_ST_STALE);
			if (e) {
				sm->degraded += e->st.degraded;
				sm->missing += e->st.missing;
			}
			for (k = 0; k < sm->nby && sm->by[k].state != st; k++)
				;
			if (k == sm->nby && k < sizeof(sm->by) / sizeof(sm->by[0])) {
				sm->by[k].state = st;
				sm->by[k].n = 0;
				sm->nby++;
			}
			if (k < sm->nby)
				sm->by[k].n++;
		}
	}
	/* a sample a second, for the rate */
	size_t last = (p->first + p->nsample + SAMPLES - 1) % SAMPLES;
	if (p->nsample == 0 || now - p->sample[last].at_ns >= 1000000000u) {
		size_t at = (p->first + p->nsample) % SAMPLES;
		if (p->nsample == SAMPLES) {
			p->first = (p->first + 1) % SAMPLES;
			at = (p->first + SAMPLES - 1) % SAMPLES;
		} else {
			p->nsample++;
		}
		p->sample[at].at_ns = now;
		p->sample[at].degraded = sm->degraded;
	}
}

/* Degraded copies recovered a second over the samples (0: none, or the
 * count did not fall). */
static double
recovery_rate(const struct mon_pgstats *p)
{
	if (p->nsample < 2)
		return 0;
	const size_t a = p->first, b = (p->first + p->nsample - 1) % SAMPLES;
	double dt = (double)(p->sample[b].at_ns - p->sample[a].at_ns) / 1e9;
	if (dt <= 0 || p->sample[b].degraded >= p->sample[a].degraded)
		return 0;
	return (double)(p->sample[a].degraded - p->sample[b].degraded) / dt;
}

void
mon_pgstats_status(struct mon *mon, uint64_t now, struct tsr_sbuf *out)
{
	struct summary sm;
	char name[160];
	double rate;

	summarize(mon, now, &sm);
	rate = recovery_rate(stats_of(mon));
	tsr_sbuf_printf(out, "{\"total\": %" PRIu64 ", \"active\": %" PRIu64 ", \"clean\": %"
			PRIu64 ", \"inactive\": %" PRIu64 ", \"degraded_pgs\": %" PRIu64
			", \"degraded_objects\": %" PRIu64 ", \"missing_objects\": %" PRIu64
			", \"states\": [", sm.total, sm.active, sm.clean, sm.inactive,
			sm.degraded_pgs, sm.degraded, sm.missing);
	for (size_t k = 0; k < sm.nby; k++) {
		tsr_sbuf_printf(out, "%s{\"state\": \"%s\", \"count\": %" PRIu64 "}",
				k ? ", " : "", tsr_pg_state_str(sm.by[k].state, name, sizeof(name)),
				sm.by[k].n);
	}
	tsr_sbuf_printf(out, "], \"recovery\": {\"objects_per_s\": %.1f, \"eta_s\": %.0f}}",
			rate, rate > 0 ? (double)sm.degraded / rate : -1.0);
}

/* "pg 1.1a: 2 inconsistent objects: obj-17, obj-3" into out, the names
 * as JSON escapes them later (printable ASCII, the decoder checked). */
static void
damaged_line(const struct tsr_mon_pg_stat *st, char *out, size_t len)
{
	char name[160];
	size_t at;
	int n;

	if (st->scrub_errors == 0) {
		snprintf(out, len, "pg %" PRId64 ".%x is %s (its primary named no object)",
			 st->pool, st->pg, tsr_pg_state_str(st->state, name, sizeof(name)));
		return;
	}
	n = snprintf(out, len, "pg %" PRId64 ".%x: %u inconsistent object%s", st->pool,
		     st->pg, st->scrub_errors, st->scrub_errors == 1 ? "" : "s");
	at = n < 0 ? len : (size_t)n;
	for (uint32_t j = 0; j < st->nbad && at < len; j++) {
		n = snprintf(out + at, len - at, "%s%s", j ? ", " : ": ", st->bad[j]);
		at += n < 0 ? len : (size_t)n;
	}
	if (st->scrub_errors > st->nbad && st->nbad && at < len)
		snprintf(out + at, len - at, " and %u more", st->scrub_errors - st->nbad);
}

/* PG_DAMAGED (the file's comment). */
static void
damage_health(struct mon *mon, struct mon_health *h)
{
	struct mon_pgstats *p = stats_of(mon);
	struct tsr_sbuf d;
	uint64_t errors = 0;
	size_t damaged = 0;
	char line[640];

	tsr_sbuf_init(&d);
	for (size_t i = 0; i < p->n; i++) {
		const struct tsr_mon_pg_stat *st = &p->e[i].st;
		if (!(st->state & TSR_PG_ST_INCONSISTENT) && st->scrub_errors == 0)
			continue;
		errors += st->scrub_errors;
		if (damaged++ < 50) {
			damaged_line(st, line, sizeof(line));
			tsr_sbuf_printf(&d, "%s", damaged > 1 ? ", " : "");
			tsr_sbuf_json_str(&d, line);
		}
	}
	if (damaged)
		state_health_raise(h, MON_HEALTH_PG_DAMAGED, tsr_sbuf_str(&d), "%" PRIu64
				   " scrub error%s in %zu PG%s; possible data damage", errors,
				   errors == 1 ? "" : "s", damaged, damaged == 1 ? "" : "s");
	tsr_sbuf_release(&d);
}

void
mon_pgstats_health(struct mon *mon, uint64_t now, struct mon_health *h)
{
	struct mon_pgstats *p = stats_of(mon);
	struct summary sm;
	struct tsr_sbuf d;
	size_t shown = 0;
	char name[160], line[320];

	summarize(mon, now, &sm);
	if (sm.inactive) {
		tsr_sbuf_init(&d);
		for (size_t i = 0; i < mon->st.osdmap.npools && shown < 50; i++) {
			const struct tsr_osdmap_pool *pool = &mon->st.osdmap.pools[i];
			for (uint32_t pg = 0; pg < pool->pg_num && shown < 50; pg++) {
				const struct pg_entry *e;
				uint32_t st = state_now(p, pool->id, pg, now, &e);
				if ((st & TSR_PG_ST_ACTIVE) && !(st & TSR_PG_ST_STALE))
					continue;
				if (e)
					snprintf(line, sizeof(line), "pg %" PRId64 ".%x is %s (osd.%d "
						 "reported it %.0f s ago, at epoch %" PRIu64 ")",
						 pool->id, pg, tsr_pg_state_str(st, name, sizeof(name)),
						 e->from, (double)(now - e->at_ns) / 1e9, e->st.epoch);
				else
					snprintf(line, sizeof(line), "pg %" PRId64 ".%x is unknown (no "
						 "primary has reported it to this leader)", pool->id, pg);
				tsr_sbuf_printf(&d, "%s", shown++ ? ", " : "");
				tsr_sbuf_json_str(&d, line);
			}
		}
		state_health_raise(h, MON_HEALTH_PG_AVAILABILITY, tsr_sbuf_str(&d),
				   "%" PRIu64 " of %" PRIu64 " PGs inactive (not serving "
				   "operations)", sm.inactive, sm.total);
		tsr_sbuf_release(&d);
	}
	if (sm.degraded_pgs || sm.degraded) {
		tsr_sbuf_init(&d);
		shown = 0;
		for (size_t i = 0; i < p->n && shown < 50; i++) {
			if (!(p->e[i].st.state & TSR_PG_ST_DEGRADED))
				continue;
			snprintf(line, sizeof(line), "pg %" PRId64 ".%x is %s: %" PRIu64 " object "
				 "copies degraded, acting set of %u", p->e[i].st.pool, p->e[i].st.pg,
				 tsr_pg_state_str(p->e[i].st.state, name, sizeof(name)),
				 p->e[i].st.degraded, p->e[i].st.nacting);
			tsr_sbuf_printf(&d, "%s", shown++ ? ", " : "");
			tsr_sbuf_json_str(&d, line);
		}
		state_health_raise(h, MON_HEALTH_PG_DEGRADED, tsr_sbuf_str(&d),
				   "%" PRIu64 " object copies degraded in %" PRIu64 " PGs",
				   sm.degraded, sm.degraded_pgs);
		tsr_sbuf_release(&d);
	}
	damage_health(mon, h); /* the PGs of the map only: summarize pruned */
}

/* The share of o's store in use, or -1 when not known (or stale). */
static double
use_ratio(const struct mon_pgstats *p, int32_t osd, uint64_t now)
{
	const struct osd_use *u = (size_t)osd < p->nuse ? &p->use[osd] : NULL;

	if (u == NULL || u->at_ns == 0 || u->total == 0 || now - u->at_ns > MON_PG_STALE_NS)
		return -1;
	return (double)(u->total - u->avail) / (double)u->total;
}

void
mon_pgstats_osd_health(struct mon *mon, uint64_t now, double nearfull, double full,
		       struct mon_health *h)
{
	struct mon_pgstats *p = stats_of(mon);
	struct tsr_sbuf dn, df;
	size_t nn = 0, nf = 0;
	char line[200];

	tsr_sbuf_init(&dn);
	tsr_sbuf_init(&df);
	for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
		int32_t id = mon->st.osdmap.osds[i].id;
		double r = use_ratio(p, id, now);
		if (r < 0 || (r < nearfull && r < full))
			continue;
		snprintf(line, sizeof(line), "osd.%d is %.1f%% full (%" PRIu64 " of %" PRIu64
			 " bytes free)", id, r * 100, p->use[id].avail, p->use[id].total);
		if (r >= full) {
			tsr_sbuf_printf(&df, "%s", nf++ ? ", " : "");
			tsr_sbuf_json_str(&df, line);
		} else {
			tsr_sbuf_printf(&dn, "%s", nn++ ? ", " : "");
			tsr_sbuf_json_str(&dn, line);
		}
	}
	if (nf)
		state_health_raise(h, MON_HEALTH_OSD_FULL, tsr_sbuf_str(&df),
				   "%zu OSDs full (mon_osd_full_ratio %.2f)", nf, full);
	if (nn)
		state_health_raise(h, MON_HEALTH_OSD_NEARFULL, tsr_sbuf_str(&dn),
				   "%zu OSDs nearly full (mon_osd_nearfull_ratio %.2f)", nn,
				   nearfull);
	tsr_sbuf_release(&dn);
	tsr_sbuf_release(&df);
}

uint64_t
mon_pgstats_used(struct mon *mon, const struct tsr_osdmap *m, uint64_t now,
		 size_t *reporting)
{
	struct mon_pgstats *p = stats_of(mon);
	uint64_t used = 0;

	*reporting = 0;
	for (size_t i = 0; i < m->nosds; i++) {
		const struct osd_use *u = (size_t)m->osds[i].id < p->nuse ?
					  &p->use[m->osds[i].id] : NULL;
		if (u == NULL || u->at_ns == 0 || now - u->at_ns > MON_PG_STALE_NS)
			continue;
		used += u->used;
		(*reporting)++;
	}
	return used;
}

/* osd df: each OSD's store against its weight, and the PGs it is acting
 * for (as the primaries reported them). */
static void
osd_df(struct mon *mon, uint64_t now, struct tsr_sbuf *out)
{
	struct mon_pgstats *p = stats_of(mon);
	uint64_t t_total = 0, t_used = 0, t_avail = 0;
	double wsum = 0;

	for (size_t i = 0; i < mon->st.osdmap.nosds; i++)
		if (mon->st.osdmap.osds[i].in)
			wsum += mon->st.osdmap.osds[i].weight * mon->st.osdmap.osds[i].reweight;
	tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"osds\": [",
			mon->st.osdmap.epoch);
	for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
		const struct tsr_osdmap_osd *o = &mon->st.osdmap.osds[i];
		const struct osd_use *u = (size_t)o->id < p->nuse ? &p->use[o->id] : NULL;
		double r = use_ratio(p, o->id, now);
		uint64_t pgs = 0;
		for (size_t k = 0; k < p->n; k++)
			for (uint32_t j = 0; j < p->e[k].st.nacting; j++)
				pgs += p->e[k].st.acting[j] == o->id;
		double share = o->in && wsum > 0 ? o->weight * o->reweight / wsum : 0;
		tsr_sbuf_printf(out, "%s\n  {\"id\": %d, \"host\": ", i ? "," : "", o->id);
		tsr_sbuf_json_str(out, o->host);
		tsr_sbuf_printf(out, ", \"up\": %d, \"in\": %d, \"weight\": %.4f, \"reweight\": "
				"%.4f, \"weight_share\": %.4f, \"pgs\": %" PRIu64, o->up, o->in,
				o->weight, o->reweight, share, pgs);
		if (u && u->at_ns) {
			tsr_sbuf_printf(out, ", \"total\": %" PRIu64 ", \"used\": %" PRIu64
					", \"avail\": %" PRIu64 ", \"objects\": %" PRIu64
					", \"use\": %.4f, \"reported_s_ago\": %.1f", u->total,
					u->total - u->avail, u->avail, u->objects, r < 0 ? 0 : r,
					(double)(now - u->at_ns) / 1e9);
			t_total += u->total;
			t_used += u->total - u->avail;
			t_avail += u->avail;
		}
		tsr_sbuf_printf(out, "}");
	}
	tsr_sbuf_printf(out, "],\n \"total\": %" PRIu64 ", \"used\": %" PRIu64 ", \"avail\": %"
			PRIu64 "}", t_total, t_used, t_avail);
}

/* Unix seconds t as ISO 8601 in UTC ("2024-05-01T12:34:56Z"), "never"
 * for 0; a time past year 9999 (a report no clock made) as "unix T". */
static const char *
iso_time(uint64_t t, char *out, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t == 0)
		return "never";
	if (t > 253402300799ull || gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, len, "unix %" PRIu64, t);
	return out;
}

static void
pg_json(struct mon_pgstats *p, int64_t pool, uint32_t pg, uint64_t now, struct tsr_sbuf *out)
{
	const struct pg_entry *e;
	uint32_t st = state_now(p, pool, pg, now, &e);
	char name[160], t1[32], t2[32];

	tsr_sbuf_printf(out, "{\"pgid\": \"%" PRId64 ".%x\", \"state\": \"%s\"", pool, pg,
			tsr_pg_state_str(st, name, sizeof(name)));
	if (e) {
		tsr_sbuf_printf(out, ", \"reported_by\": %d, \"reported_s_ago\": %.1f, "
				"\"epoch\": %" PRIu64 ", \"last_update\": \"%" PRIu64 "'%" PRIu64
				"\", \"les\": %" PRIu64 ", \"lec\": %" PRIu64 ", \"same_interval_since\": %"
				PRIu64 ", \"degraded\": %" PRIu64 ", \"missing\": %" PRIu64
				", \"acting\": [", e->from, (double)(now - e->at_ns) / 1e9, e->st.epoch,
				e->st.lu_epoch, e->st.lu_ver, e->st.les, e->st.lec, e->st.sis,
				e->st.degraded, e->st.missing);
		for (uint32_t k = 0; k < e->st.nacting; k++)
			tsr_sbuf_printf(out, "%s%d", k ? ", " : "", e->st.acting[k]);
		tsr_sbuf_printf(out, "], \"last_scrub\": \"%s\", \"last_deep_scrub\": \"%s\", "
				"\"scrub_errors\": %u, \"inconsistent\": [",
				iso_time(e->st.last_scrub, t1, sizeof(t1)),
				iso_time(e->st.last_deep_scrub, t2, sizeof(t2)),
				e->st.scrub_errors);
		for (uint32_t k = 0; k < e->st.nbad; k++) {
			tsr_sbuf_printf(out, "%s", k ? ", " : "");
			tsr_sbuf_json_str(out, e->st.bad[k]);
		}
		tsr_sbuf_printf(out, "]");
	}
	tsr_sbuf_printf(out, "}");
}

int
mon_pgstats_read(struct mon *mon, int argc, char **argv, uint64_t now, struct tsr_sbuf *out)
{
	struct mon_pgstats *p = stats_of(mon);

	if (argc == 2 && strcmp(argv[0], "osd") == 0 && strcmp(argv[1], "df") == 0) {
		osd_df(mon, now, out);
		return 0;
	}
	if (argc < 2 || strcmp(argv[0], "pg") != 0)
		return -ENOENT;
	if (strcmp(argv[1], "stat") == 0) {
		tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"pgs\": ",
				mon->st.osdmap.epoch);
		mon_pgstats_status(mon, now, out);
		tsr_sbuf_printf(out, ", \"reports\": %" PRIu64 ", \"refused\": %" PRIu64 "}",
				p->reports, p->refused);
		return 0;
	}
	if (strcmp(argv[1], "dump") == 0) {
		size_t n = 0;
		prune(mon);
		tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"pgs\": [",
				mon->st.osdmap.epoch);
		for (size_t i = 0; i < mon->st.osdmap.npools; i++) {
			const struct tsr_osdmap_pool *pool = &mon->st.osdmap.pools[i];
			for (uint32_t pg = 0; pg < pool->pg_num; pg++) {
				tsr_sbuf_printf(out, "%s\n ", n++ ? "," : "");
				pg_json(p, pool->id, pg, now, out);
			}
		}
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	if (strcmp(argv[1], "query") == 0 && argc == 3) {
		char *dot = strchr(argv[2], '.'), *end = NULL;
		long long pool = dot ? strtoll(argv[2], &end, 10) : 0;
		unsigned long pg = dot && end == dot ? strtoul(dot + 1, &end, 16) : 0;
		const struct tsr_osdmap_pool *pl = dot && end && *end == '\0' && dot[1]
							   ? tsr_osdmap_pool(&mon->st.osdmap, pool)
							   : NULL;
		if (pl == NULL || pg >= pl->pg_num) {
			tsr_sbuf_printf(out, "no PG %s in OSD map epoch %" PRIu64 " (POOL.PG, the "
					"PG in hexadecimal: 1.1f)", argv[2], mon->st.osdmap.epoch);
			return -ENOENT;
		}
		pg_json(p, pool, (uint32_t)pg, now, out);
		return 0;
	}
	return -ENOENT;
}
