/* pgs.c — the placement groups an OSD serves under one map epoch (osd.h).
 *
 * Every PG of every pool is mapped under the epoch (map/osdmap_epoch.h)
 * and kept when this OSD is in its acting set.  The placement itself (90
 * us a PG at 10,000 OSDs) is paid once per blob, weights and pools: epochs
 * that only mark OSDs up or down, or change PG temp, reuse the raw sets
 * and derive up and acting from them.  What remains per epoch is a walk
 * over every PG of the cluster on the daemon's loop; peering will look
 * only at the PGs an incremental can move.
 */
#include "osd.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
osd_pgs_compute(const struct tsr_osdmap_epoch *ep, int32_t whoami,
		struct osd_pg **out, size_t *n, size_t *unplaced, char *err,
		size_t errlen)
{
	const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
	struct osd_pg *v = NULL;
	size_t cap = 0, k = 0;
	char why[256];

	*out = NULL;
	*n = 0;
	*unplaced = 0;
	if (err && errlen)
		err[0] = '\0';
	for (size_t i = 0; i < m->npools; i++) {
		const struct tsr_osdmap_pool *p = &m->pools[i];

		for (uint32_t pg = 0; pg < p->pg_num; pg++) {
			struct tsr_pg_mapping pm;
			int32_t role = -1;
			int rc = tsr_osdmap_epoch_map_pg(ep, p->id, pg, &pm, why, sizeof(why));

			if (rc < 0) {
				/* the whole pool fails alike (a rule the map
				 * cannot satisfy, a plugin missing) */
				if ((*unplaced)++ == 0 && err && errlen)
					tsr_errf(err, errlen, rc, "pool %s: %s", p->name, why);
				(*unplaced) += p->pg_num - pg - 1;
				break;
			}
			for (uint32_t j = 0; j < pm.nacting; j++)
				if (pm.acting[j] == whoami)
					role = (int32_t)j;
			if (role < 0)
				continue;
			if (k == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct osd_pg *nv = realloc(v, ncap * sizeof(*v));
				if (nv == NULL) {
					free(v);
					return tsr_errf(err, errlen, -ENOMEM, "out of memory");
				}
				v = nv;
				cap = ncap;
			}
			v[k].pgid = pm.pgid;
			v[k].role = role;
			v[k].nacting = pm.nacting;
			memcpy(v[k].acting, pm.acting, sizeof(v[k].acting));
			k++;
		}
	}
	*out = v;
	*n = k;
	return 0;
}
