/* watch.c — what the leader watches: OSD beacons and failures, MDS
 * beacons and ranks (mon.h). */
#include "mon.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Failure detection (the leader) -----------------------------------------
 *
 * OSDs send a beacon (MON_OSD_BEACON; from daemons of the version before,
 * `osd beacon ID [--failed PEERS]`) every osd_beacon_interval;
 * the leader notes the time and the peers reported silent.  An up OSD is
 * marked down when its beacons stop for the grace (doubled for each
 * recent flap, up to 8x), or when mon_osd_min_down_reporters other up
 * OSDs reported it within the grace; a down OSD is marked out after
 * mon_osd_down_out_interval unless noout is set.  The answer to a beacon
 * says whether the map has the OSD up: one marked down while alive boots
 * again (core/beacon/).  The marks are changes like any other,
 * proposed by the leader under its own client id. */

void
watch_osd_beacon(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_osd_beacon *b,
		 uint64_t now)
{
	int32_t id = b->osd; /* in 0 .. MON_MAX_OSDS - 1: the decoders check it */
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(&mon->st.osdmap, id);
	struct osd_watch *w = &mon->watch[id];
	char text[160];

	if (o == NULL) {
		snprintf(text, sizeof(text), "osd.%d is not in the map: add it first "
			 "(tessera osd add %d --host HOST)", id, id);
		mon_reply(c, b->tid, -ENOENT, text, NULL);
		return;
	}
	w->last_beacon = now;
	if (b->version[0])
		tsr_strlcpy(w->version, b->version, sizeof(w->version));
	for (uint32_t f = 0; f < b->nfailed; f++) {
		int32_t t = b->failed[f];
		if (t == id)
			continue;
		struct osd_watch *tw = &mon->watch[t];
		size_t slot = 0;
		for (size_t k = 0; k < 8; k++) {
			if (tw->rep[k].at && tw->rep[k].who == id) {
				slot = k;
				break;
			}
			if (tw->rep[k].at < tw->rep[slot].at)
				slot = k;
		}
		tw->rep[slot].who = id;
		tw->rep[slot].at = now;
	}
	snprintf(text, sizeof(text), "{\"osd\": %d, \"up\": %s, \"in\": %s, "
		 "\"osdmap_epoch\": %" PRIu64 "}", o->id, o->up ? "true" : "false",
		 o->in ? "true" : "false", mon->st.osdmap.epoch);
	mon_reply(c, b->tid, 0, text, NULL);
}

/* ---- MDSs (the leader) ---------------------------------------------------------
 *
 * An MDS sends `mds beacon NAME GID ADDR STATE` every mds_beacon_interval
 * (GID: a number new at each start).  The leader boots an incarnation it
 * has not seen into the map as a standby (replacing an older one of that
 * name, whose rank is then vacant), gives a vacant rank to a standby (it
 * replays the rank's journal), records `active` when the holder says it
 * finished, and fails an MDS whose beacons stopped for
 * mon_mds_beacon_grace, so its rank goes to a standby.  Only a beacon
 * that says `standby` boots an incarnation: one failed while it held a
 * rank (paused past the grace) and still saying `active` is not let back
 * in.  The MDS learns its rank and state from the MDS map it subscribes
 * to. */

static struct mds_watch *
mds_watch(struct mon *mon, const char *name)
{
	for (size_t i = 0; i < mon->nmwatch; i++)
		if (strcmp(mon->mwatch[i].name, name) == 0)
			return &mon->mwatch[i];
	struct mds_watch *w = NULL;
	if (mon->nmwatch < TSR_MDSMAP_MAX_MDS) {
		w = &mon->mwatch[mon->nmwatch++];
	} else {
		/* full: reuse the entry of a name the map does not hold that
		 * has been silent longer than the grace */
		uint64_t now = tsr_mono_ns();
		for (size_t i = 0; i < mon->nmwatch && w == NULL; i++)
			if (tsr_mdsmap_find(&mon->st.mdsmap, mon->mwatch[i].name) == NULL &&
			    now - mon->mwatch[i].last_beacon > mon->mds_grace_ns)
				w = &mon->mwatch[i];
		if (w == NULL)
			return NULL;
	}
	memset(w, 0, sizeof(*w));
	tsr_strlcpy(w->name, name, sizeof(w->name));
	return w;
}

void
watch_mds_beacon(struct mon *mon, struct tsr_conn *c, const struct tsr_mon_mds_beacon *bp,
		 uint64_t now)
{
	const struct tsr_mon_mds_beacon b = *bp;
	struct mds_watch *w;
	const struct tsr_mdsmap_mds *d;
	struct tsr_sbuf out;
	char gidw[24];

	tsr_sbuf_init(&out);
	if ((w = mds_watch(mon, b.name)) == NULL) {
		mon_reply(c, b.tid, -ENOSPC, "too many MDSs", NULL);
		tsr_sbuf_release(&out);
		return;
	}
	if (w->gid != b.gid) {
		w->gid = b.gid;
		w->proposed_at = 0;
	}
	w->last_beacon = now;
	if (b.version[0])
		tsr_strlcpy(w->version, b.version, sizeof(w->version));
	d = tsr_mdsmap_find(&mon->st.mdsmap, b.name);
	snprintf(gidw, sizeof(gidw), "%" PRIu64, b.gid);
	if (now - w->proposed_at >= 1000000000ull || w->proposed_at == 0) {
		if ((d == NULL || d->gid != b.gid) && b.state != TSR_MDS_STANDBY) {
			/* an incarnation that believes it holds a rank the map
			 * no longer gives it (failed while paused): never back
			 * in; it will see the map and stand by as a new one */
			LOGD("mds.%s: incarnation %s says %s but is not in the map; "
			     "not booting it", b.name, gidw, tsr_mds_state_name(b.state));
		} else if (d == NULL || d->gid != b.gid) {
			char *argv[] = { "mds", "boot", (char *)b.name, gidw,
					 (char *)b.addr };
			LOGI("mds.%s (gid %s) at %s boots%s", b.name, gidw, b.addr,
			     d ? ", replacing its last incarnation" : "");
			propose_internal(mon, 5, argv);
			w->proposed_at = now;
		} else if (d->state == TSR_MDS_REPLAY && b.state == TSR_MDS_ACTIVE) {
			char *argv[] = { "mds", "active", (char *)b.name, gidw };
			propose_internal(mon, 4, argv);
			w->proposed_at = now;
		}
	}
	tsr_sbuf_printf(&out, "{\"mds\": ");
	tsr_sbuf_json_str(&out, b.name);
	tsr_sbuf_printf(&out, ", \"in_map\": %s, \"mdsmap_epoch\": %" PRIu64 "}",
			d && d->gid == b.gid ? "true" : "false", mon->st.mdsmap.epoch);
	mon_reply(c, b.tid, 0, tsr_sbuf_str(&out), NULL);
	tsr_sbuf_release(&out);
}

void
watch_mds(struct mon *mon, uint64_t now)
{
	const struct tsr_mdsmap *m = &mon->st.mdsmap;

	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER || !mon_lease_valid(mon, now))
		return;
	if (mon->lead_term != tsr_raft_term(mon->raft))
		return; /* check_failures starts the term's soft state */
	for (size_t i = 0; i < m->nmds; i++) {
		const struct tsr_mdsmap_mds *d = &m->mds[i];
		struct mds_watch *w = mds_watch(mon, d->name);
		uint64_t last;
		char gidw[24], *argv[] = { "mds", "fail", (char *)d->name, gidw };

		if (w == NULL || (w->proposed_at && now - w->proposed_at < 1000000000ull))
			continue;
		/* beacons of another incarnation (a new one booting) do not
		 * keep this one alive */
		last = w->gid == d->gid && w->last_beacon > mon->lead_since ? w->last_beacon
									   : mon->lead_since;
		if (now - last <= mon->mds_grace_ns)
			continue;
		snprintf(gidw, sizeof(gidw), "%" PRIu64, d->gid);
		LOGW("mds.%s: no beacon for %.1f s (grace %.1f s): failing it%s", d->name,
		     (double)(now - last) / 1e9, (double)mon->mds_grace_ns / 1e9,
		     d->rank >= 0 ? "; its rank goes to a standby" : "");
		propose_internal(mon, 4, argv);
		w->proposed_at = now;
		return; /* one change at a time: the next check sees its result */
	}
	/* vacant ranks to standbys, in name order */
	for (uint32_t r = 0; r < m->max_mds; r++) {
		if (tsr_mdsmap_rank(m, (int32_t)r))
			continue;
		for (size_t i = 0; i < m->nmds; i++) {
			const struct tsr_mdsmap_mds *d = &m->mds[i];
			struct mds_watch *w = mds_watch(mon, d->name);
			char rw[16], *argv[] = { "mds", "assign", (char *)d->name, rw };

			if (d->state != TSR_MDS_STANDBY || w == NULL || w->gid != d->gid ||
			    (w->proposed_at && now - w->proposed_at < 1000000000ull))
				continue;
			snprintf(rw, sizeof(rw), "%u", r);
			LOGI("rank %u: vacant; mds.%s takes it", r, d->name);
			propose_internal(mon, 4, argv);
			w->proposed_at = now;
			return;
		}
	}
}

/* The marks of one check, proposed together: one change, one epoch, for
 * many OSDs at once (decisions only: a monitor of the version before
 * takes one OSD per mark). */
struct marks {
	char list[MON_MAX_MARKS * 8];
	size_t n, len;
};

static void
marks_flush(struct mon *mon, struct marks *k, const char *verb)
{
	char *argv[4] = { "osd", (char *)verb, k->list, "--auto" };

	if (k->n)
		propose_internal(mon, verb[0] == 'o' ? 4 : 3, argv);
	k->n = k->len = 0;
	k->list[0] = '\0';
}

/* Mark OSD id (down or out): at once, or batched with the check's others. */
static void
mark(struct mon *mon, struct marks *k, const char *verb, int32_t id)
{
	if (!mon_decisions(mon) || k->n == MON_MAX_MARKS)
		marks_flush(mon, k, verb);
	k->len += (size_t)snprintf(k->list + k->len, sizeof(k->list) - k->len, "%s%d",
				   k->n ? "," : "", id);
	k->n++;
	if (!mon_decisions(mon))
		marks_flush(mon, k, verb);
}

void
watch_osds(struct mon *mon, uint64_t now)
{
	struct marks downs = { .n = 0 }, outs = { .n = 0 };

	if (tsr_raft_role(mon->raft) != TSR_RAFT_LEADER || !mon_lease_valid(mon, now))
		return;
	if (mon->lead_term != tsr_raft_term(mon->raft)) {
		/* we lead anew: what another leader knew is gone, so every OSD
		 * gets a full grace from now */
		mon->lead_term = tsr_raft_term(mon->raft);
		mon->lead_since = now;
		memset(mon->watch, 0, MON_MAX_OSDS * sizeof(*mon->watch));
		mon->nmwatch = 0;
	}
	for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
		const struct tsr_osdmap_osd *o = &mon->st.osdmap.osds[i];
		struct osd_watch *w = &mon->watch[o->id];

		if (now - w->proposed_at < 1000000000ull && w->proposed_at)
			continue; /* the last proposal is on its way */
		if (o->up) {
			uint64_t last = w->last_beacon > mon->lead_since ? w->last_beacon
									 : mon->lead_since;
			uint64_t grace;
			unsigned reporters = 0;

			w->down_seen = 0;
			if (w->up_from != o->up_from) {
				/* it booted: old reports are about its old life */
				w->up_from = o->up_from;
				memset(w->rep, 0, sizeof(w->rep));
				if (last < now)
					w->last_beacon = last = now;
			}
			if (w->last_flap && now - w->last_flap > 10 * mon->grace_ns)
				w->flaps = 0;
			grace = mon->grace_ns << (w->flaps < 3 ? w->flaps : 3);
			for (size_t k = 0; k < 8; k++) {
				const struct tsr_osdmap_osd *r = tsr_osdmap_osd(&mon->st.osdmap, w->rep[k].who);
				reporters += w->rep[k].at && now - w->rep[k].at < grace &&
					     r != NULL && r->up;
			}
			if (now - last <= grace && reporters < mon->min_reporters)
				continue;
			if (reporters >= mon->min_reporters)
				LOGW("osd.%d: %u OSDs report it silent: marking it down",
				     o->id, reporters);
			else
				LOGW("osd.%d: no beacon for %.1f s (grace %.1f s): marking "
				     "it down", o->id, (double)(now - last) / 1e9,
				     (double)grace / 1e9);
			mark(mon, &downs, "down", o->id);
			w->proposed_at = now;
			w->flaps++;
			w->last_flap = now;
			continue;
		}
		if (w->down_seen == 0)
			w->down_seen = now;
		if (!o->in || (mon->st.osdmap.flags & TSR_OSDMAP_NOOUT) ||
		    now - w->down_seen < mon->down_out_ns)
			continue;
		LOGW("osd.%d: down for %.1f s: marking it out (its data moves)", o->id,
		     (double)(now - w->down_seen) / 1e9);
		mark(mon, &outs, "out", o->id);
		w->proposed_at = now;
	}
	marks_flush(mon, &downs, "down");
	marks_flush(mon, &outs, "out");
}

/* ---- Versions (the leader) ----------------------------------------------------
 *
 * Each daemon says which software it runs: monitors in their Raft
 * messages, OSDs in their boot and beacons, MDSs in their beacons.  Like
 * the beacon times, what the leader heard is soft state: a new leader
 * knows the versions within a beacon interval. */

struct vcount {
	char version[TSR_MONMSG_VERSION_MAX];
	size_t n[3];                 /* mon, osd, mds */
	struct tsr_sbuf who;         /* "mon.a osd.3 ..." */
};

#define MAX_VERSIONS 16

static void
vcount_add(struct vcount *v, size_t *nv, int kind, const char *version,
	   const char *who)
{
	size_t i;

	if (version[0] == '\0')
		version = "unknown";
	for (i = 0; i < *nv && strcmp(v[i].version, version) != 0; i++)
		;
	if (i == *nv) {
		if (*nv == MAX_VERSIONS)
			i = MAX_VERSIONS - 1;  /* the last counts the rest */
		else
			(*nv)++;
		if (v[i].version[0] == '\0') {
			tsr_strlcpy(v[i].version, version, sizeof(v[i].version));
			tsr_sbuf_init(&v[i].who);
		}
	}
	v[i].n[kind]++;
	if (v[i].who.len < 200)
		tsr_sbuf_printf(&v[i].who, "%s%s", v[i].who.len ? " " : "", who);
	else if (v[i].who.buf[v[i].who.len - 1] != '.')
		tsr_sbuf_printf(&v[i].who, " ...");
}

size_t
watch_versions(struct mon *mon, uint64_t now, struct tsr_sbuf *out,
	       struct tsr_sbuf *detail)
{
	static const char *const kinds[] = { "mon", "osd", "mds" };
	struct vcount v[MAX_VERSIONS];
	size_t nv = 0, known = 0;
	char who[96];

	memset(v, 0, sizeof(v));
	for (size_t i = 0; i < mon->mem.n; i++) {
		const struct tsr_mon_member *m = &mon->mem.m[i];
		snprintf(who, sizeof(who), "mon.%s", m->name);
		vcount_add(v, &nv, 0, m == mon->self ? TSR_VERSION
				      : mon->peers[m->id - 1].version, who);
	}
	for (size_t i = 0; i < mon->st.osdmap.nosds; i++) {
		const struct tsr_osdmap_osd *o = &mon->st.osdmap.osds[i];
		if (!o->up)
			continue;
		snprintf(who, sizeof(who), "osd.%d", o->id);
		vcount_add(v, &nv, 1, mon->watch[o->id].version, who);
	}
	for (size_t i = 0; i < mon->st.mdsmap.nmds; i++) {
		const struct tsr_mdsmap_mds *d = &mon->st.mdsmap.mds[i];
		const char *ver = "";
		for (size_t k = 0; k < mon->nmwatch; k++)
			if (strcmp(mon->mwatch[k].name, d->name) == 0 &&
			    mon->mwatch[k].gid == d->gid)
				ver = mon->mwatch[k].version;
		snprintf(who, sizeof(who), "mds.%s", d->name);
		vcount_add(v, &nv, 2, ver, who);
	}
	for (size_t i = 0; i < nv; i++)
		known += strcmp(v[i].version, "unknown") != 0;
	if (known > 1 && mon->versions_differ_since == 0)
		mon->versions_differ_since = now;
	else if (known <= 1)
		mon->versions_differ_since = 0;
	for (int k = 0; out && k < 4; k++) {
		int first = 1;
		tsr_sbuf_printf(out, "%s\"%s\": {", k ? ", " : "", k < 3 ? kinds[k] : "overall");
		for (size_t i = 0; i < nv; i++) {
			size_t n = k < 3 ? v[i].n[k] : v[i].n[0] + v[i].n[1] + v[i].n[2];
			if (n == 0)
				continue;
			tsr_sbuf_printf(out, "%s", first ? "" : ", ");
			tsr_sbuf_json_str(out, v[i].version);
			tsr_sbuf_printf(out, ": %zu", n);
			first = 0;
		}
		tsr_sbuf_printf(out, "}");
	}
	for (size_t i = 0; detail && i < nv; i++) {
		char line[320];
		snprintf(line, sizeof(line), "%s: %s", v[i].version, tsr_sbuf_str(&v[i].who));
		tsr_sbuf_printf(detail, "%s", i ? ", " : "");
		tsr_sbuf_json_str(detail, line);
	}
	for (size_t i = 0; i < nv; i++)
		tsr_sbuf_release(&v[i].who);
	return known;
}
