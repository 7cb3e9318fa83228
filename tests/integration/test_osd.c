/* test_osd.c — tessera-osd end to end, on the cluster harness
 * (tests/cluster): real monitors, real OSD daemons on real stores.
 *
 * So far the OSD's store and identity, its boot into the map, and the
 * placement groups it computes under each epoch; the data path comes
 * with the rest of issue 18.  Each test case runs alone with
 * CK_RUN_CASE=name.
 */
#include "cluster/cluster.h"
#include "cluster/tc_check.h"
#include "map/osdmap_epoch.h"
#include "plugin/host.h"
#include "plugin/registry.h"

#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* out names what it should (the whole output in the failure message). */
#define assert_says(out, what)                                               \
	ck_assert_msg((out) != NULL && strstr((out), (what)) != NULL,        \
		      "expected \"%s\" in:\n%s", (what), (out) ? (out) : "(none)")

/* A copy of the cluster's configuration with more sections (text) after
 * its own. */
static void
conf_with(struct tc_cluster *c, const char *text, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/other.conf", c->dir);
	ck_assert_int_eq(tc_write_conf(c, path, NULL), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "a"));
	fprintf(f, "%s\n", text);
	ck_assert_int_eq(fclose(f), 0);
}

/* mkfs makes a store stamped with the cluster, the OSD and a uuid, and
 * never overwrites one; an OSD refuses a store of another OSD, of
 * another cluster, and a path holding none, each naming both sides. */
START_TEST(store_identity)
{
	struct tc_cluster c;
	char *out = NULL, conf[400], path[600];

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\";"), 0);
	ck_assert_int_eq(tc_fsid_new(&c), 0);
	char want[200];

	/* no cluster id, or not a UUID: nothing to stamp the store with */
	conf_with(&c, "osd = { fsid = \"\"; };", conf, sizeof(conf));
	ck_assert_int_eq(tc_osd_mkfs(&c, 0, conf, &out), 1);
	assert_says(out, "a UUID");
	free(out);
	ck_assert_int_eq(tc_osd_mkfs(&c, 0, NULL, &out), 0);
	snprintf(want, sizeof(want), "osd.0 of cluster \"%s\"", c.fsid);
	assert_says(out, want);
	assert_says(out, "uuid ");
	free(out);

	/* again on the same store: refused, the store untouched */
	ck_assert_int_eq(tc_osd_mkfs(&c, 0, NULL, &out), 1);
	assert_says(out, "never overwritten");
	free(out);

	/* osd.1 pointed at osd.0's store */
	snprintf(path, sizeof(path), "osd-1 = { osd_data = \"%s/osd-0\"; };", c.dir);
	conf_with(&c, path, conf, sizeof(conf));
	ck_assert_int_eq(tc_osd_run(&c, 1, conf, &out), 1);
	assert_says(out, "is the store of osd.0, not osd.1");
	free(out);

	/* osd.0 under another cluster's configuration */
	conf_with(&c, "osd = { fsid = \"4b1d0c3e-0000-4000-8000-00000000beef\"; };",
		  conf, sizeof(conf));
	ck_assert_int_eq(tc_osd_run(&c, 0, conf, &out), 1);
	snprintf(want, sizeof(want), "belongs to cluster \"%s\", and this "
		 "configuration is cluster \"4b1d0c3e-0000-4000-8000-00000000beef\"",
		 c.fsid);
	assert_says(out, want);
	free(out);

	/* osd.2 has no store; --id 07 is not osd.7 */
	ck_assert_int_eq(tc_osd_run(&c, 2, NULL, &out), 1);
	assert_says(out, "tessera-osd --mkfs --id 2");
	free(out);
	{
		char *argv[] = { (char *)getenv("TESSERA_OSD"), "--mkfs", "--id", "07",
				 "--conf", c.conf, NULL };
		ck_assert_ptr_nonnull(argv[0]);
		ck_assert_int_eq(tc_run(argv, &out), 1);
		assert_says(out, "without leading zeros");
		free(out);
	}

	/* a backend that is not installed */
	conf_with(&c, "osd-3 = { backend = \"tape\"; };", conf, sizeof(conf));
	ck_assert_int_eq(tc_osd_mkfs(&c, 3, conf, &out), 1);
	assert_says(out, "no backend plugin 'tape'");
	free(out);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* osd.id's "up" from `osd tree` (-1: the monitors do not say). */
static int
osd_up(struct tc_cluster *c, int id)
{
	char *out = NULL, want[32];
	const char *p, *u;
	int up = -1;

	if (tc_cli(c, &out, "osd tree --format json --timeout 5") == 0 && out) {
		snprintf(want, sizeof(want), "{\"id\": %d, ", id);
		if ((p = strstr(out, want)) != NULL && (u = strstr(p, "\"up\": ")) != NULL)
			up = strncmp(u + 6, "true", 4) == 0;
	}
	free(out);
	return up;
}

static int
await_up(struct tc_cluster *c, int id, int up, int timeout_ms)
{
	uint64_t t0 = tc_now_ms();

	do {
		if (osd_up(c, id) == up)
			return 0;
		tc_sleep_ms(100);
	} while (tc_now_ms() - t0 < (uint64_t)timeout_ms);
	return -1;
}

/* One monitor, four OSD daemons on hosts h0..h3 (a cluster id, their
 * stores made, all up), and pool data of 64 PGs x 3. */
static void
four_osds_and_a_pool(struct tc_cluster *c)
{
	char *out = NULL;

	c->real_osds = 1;
	ck_assert_int_eq(tc_fsid_new(c), 0);
	ck_assert_int_eq(tc_start_all(c), 0);
	ck_assert_int_ge(tc_wait_leader(c, 15000), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tc_cli(c, NULL, "osd add %d --host h%d", i, i), 0);
		ck_assert_int_eq(tc_osd_mkfs(c, (size_t)i, NULL, &out), 0);
		free(out);
		ck_assert_int_eq(tc_osd_start(c, (size_t)i), 0);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(await_up(c, i, 1, 15000) == 0, "osd.%d never came up", i);
	ck_assert_int_eq(tc_cli(c, NULL, "pool create data 64 --size 3"), 0);
}

/* The monitors' OSD map as an epoch that places with the built plugins
 * (reg), through a client's subscription at epoch at least `epoch`. */
static struct tsr_osdmap_epoch *
map_now(struct tc_cluster *c, struct tsr_registry *reg, struct tsr_core_host *host,
	uint64_t epoch)
{
	struct tc_client *k;
	struct tsr_osdmap_epoch *sub_ep, *ep;
	struct tsr_osdmap m;
	char err[512];

	ck_assert_int_eq(tc_client_open(c, TSR_MON_SUB_OSD, 0, NULL, NULL, &k), 0);
	ck_assert_int_eq(tsr_mapsub_wait(k->sub, TSR_MON_MAP_OSD, epoch, 15000), 0);
	ck_assert_ptr_nonnull(sub_ep = tsr_mapsub_osdmap(k->sub));
	ck_assert_int_eq(tsr_osdmap_copy(&m, tsr_osdmap_epoch_map(sub_ep)), 0);
	tsr_osdmap_epoch_put(sub_ep);
	tc_client_close(k);
	ck_assert_msg(tsr_osdmap_epoch_create(&m, reg, &host->host, &ep, err,
					      sizeof(err)) == 0, "%s", err);
	return ep;
}

/* The epoch of the monitors' OSD map (`osd tree` says it). */
static uint64_t
mon_epoch(struct tc_cluster *c)
{
	char *out = NULL;
	uint64_t e = 0;

	if (tc_cli(c, &out, "osd tree --format json --timeout 5") == 0 && out)
		e = tc_json_u64(out, "osdmap_epoch", 0);
	free(out);
	return e;
}

/* Four OSD daemons on four hosts boot into the map; after a pool is
 * made, each lists (`pg ls`) exactly the PGs whose acting set holds it,
 * with its role, as the placement computed here from the monitors' map
 * says — every PG on 3 OSDs of 3 different hosts.  SIGTERM stops an OSD
 * cleanly (exit 0); one killed (SIGKILL) comes back on its store, boots
 * again and lists the same PGs. */
START_TEST(boot_and_pgs)
{
	struct tc_cluster c;
	struct tsr_registry *reg = tsr_registry_create();
	struct tsr_core_host host;
	struct tsr_osdmap_epoch *ep;
	const char *dir = getenv("PLUGIN_DIR");
	char *out = NULL, path[600], err[512];
	uint64_t epoch;
	int st;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/crush.so", dir);
	ck_assert_msg(tsr_registry_load_file(reg, path, NULL, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_core_host_init(&host, "test", NULL, NULL);
	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	epoch = mon_epoch(&c);
	ck_assert_uint_gt(epoch, 0);
	ep = map_now(&c, reg, &host, epoch);

	for (int round = 0; round < 2; round++) {
		const struct tsr_osdmap *m = tsr_osdmap_epoch_map(ep);
		const struct tsr_osdmap_pool *pool = NULL;
		size_t listed = 0;

		for (size_t i = 0; i < m->npools; i++)
			if (strcmp(m->pools[i].name, "data") == 0)
				pool = &m->pools[i];
		ck_assert_ptr_nonnull(pool);
		for (int i = 0; i < 4; i++) {
			uint64_t t0 = tc_now_ms();
			/* each OSD holds the epoch (its beacons say which) */
			for (;;) {
				ck_assert_int_eq(tc_osd_asok(&c, (size_t)i, "pg ls", &out), 0);
				if (tc_json_u64(out, "osdmap_epoch", 0) >= epoch)
					break;
				ck_assert_msg(tc_now_ms() - t0 < 15000, "osd.%d: %s", i, out);
				free(out);
				tc_sleep_ms(100);
			}
			for (uint32_t pg = 0; pg < pool->pg_num; pg++) {
				struct tsr_pg_mapping pm;
				char want[64];
				int role = -1;

				ck_assert_msg(tsr_osdmap_epoch_map_pg(ep, pool->id, pg, &pm,
								      err, sizeof(err)) == 0,
					      "%s", err);
				ck_assert_uint_eq(pm.nacting, 3);
				for (uint32_t j = 0; j < pm.nacting; j++)
					if (pm.acting[j] == i)
						role = (int)j;
				snprintf(want, sizeof(want), "\"pgid\": \"%" PRId64 ".%x\", "
					 "\"role\": %d,", pool->id, pg, role);
				if (role >= 0) {
					assert_says(out, want);
					listed++;
				} else {
					snprintf(want, sizeof(want), "\"pgid\": \"%" PRId64
						 ".%x\"", pool->id, pg);
					ck_assert_msg(strstr(out, want) == NULL, "osd.%d lists "
						      "%s, which it is not in:\n%s", i, want, out);
				}
			}
			free(out);
		}
		ck_assert_uint_eq(listed, 3 * 64);
		if (round == 1)
			break;
		/* a clean stop, then a crash; both come back on their stores */
		st = tc_osd_signal(&c, 1, SIGTERM);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "osd.1: %#x", st);
		ck_assert_int_eq(tc_osd_signal(&c, 2, SIGKILL) & 0x7f, SIGKILL);
		ck_assert_int_eq(tc_cli(&c, NULL, "osd down 1,2"), 0);
		ck_assert_int_eq(tc_osd_start(&c, 1), 0);
		ck_assert_int_eq(tc_osd_start(&c, 2), 0);
		ck_assert_int_eq(await_up(&c, 1, 1, 15000), 0);
		ck_assert_int_eq(await_up(&c, 2, 1, 15000), 0);
		/* each restarted from the map epochs in its store, and took
		 * only the epochs after them, one by one, from the monitors */
		for (int i = 1; i <= 2; i++) {
			ck_assert_int_eq(tc_osd_asok(&c, (size_t)i, "maps", &out), 0);
			ck_assert_msg(tc_json_u64(out, "fulls", 99) == 0 &&
				      tc_json_u64(out, "incs", 0) > 0 &&
				      tc_json_u64(out, "first", 0) > 0,
				      "osd.%d did not restart from its stored maps: %s", i, out);
			fprintf(stderr, "boot_and_pgs: osd.%d restarted from its stored maps: "
				"%s", i, out);
			free(out);
		}
		epoch = mon_epoch(&c);
		tsr_osdmap_epoch_put(ep);
		ep = map_now(&c, reg, &host, epoch);
	}
	tsr_osdmap_epoch_put(ep);
	ck_assert_int_eq(tc_osd_asok(&c, 0, "store", &out), 0);
	assert_says(out, "\"whoami\": 0");
	assert_says(out, "\"backend\": \"file\"");
	free(out);
	ck_assert_int_eq(tc_destroy(&c), 0);
	tsr_registry_destroy(reg);
}
END_TEST

/* Four OSDs share PGs and ping each other.  One paused (SIGSTOP) stops
 * answering; the others report it silent in their beacons and the
 * monitors mark it down long before its own beacons' grace (30 s here)
 * would; resumed, it finds itself down, boots again, and its peers hear
 * it again. */
START_TEST(heartbeats_report_silent)
{
	struct tc_cluster c;
	char *out = NULL;
	uint64_t t0, took;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_heartbeat_interval = \"200ms\"; "
				   "osd_heartbeat_grace = \"1s\"; "
				   "mon_osd_beacon_grace = \"30s\"; "
				   "mon_osd_min_down_reporters = 2;"), 0);
	four_osds_and_a_pool(&c);
	/* osd.0 pings the three others and hears them */
	t0 = tc_now_ms();
	for (;;) {
		ck_assert_int_eq(tc_osd_asok(&c, 0, "heartbeat", &out), 0);
		if (tc_json_u64(out, "replies", 0) >= 6 && strstr(out, "\"osd\": 3,"))
			break;
		ck_assert_msg(tc_now_ms() - t0 < 15000, "osd.0: %s", out);
		free(out);
		tc_sleep_ms(100);
	}
	free(out);

	ck_assert_int_eq(tc_osd_signal(&c, 3, SIGSTOP), 0);
	t0 = tc_now_ms();
	ck_assert_msg(await_up(&c, 3, 0, 20000) == 0, "osd.3 paused, never marked down");
	took = tc_now_ms() - t0;
	fprintf(stderr, "heartbeats_report_silent: osd.3 paused, marked down after "
		"%.1f s (heartbeat grace 1 s, beacon grace 30 s)\n", (double)took / 1e3);
	ck_assert_msg(took < 10000, "marked down after %" PRIu64 " ms: not by its "
		      "peers' reports", took);
	ck_assert_int_eq(tc_osd_signal(&c, 3, SIGCONT), 0);
	ck_assert_msg(await_up(&c, 3, 1, 20000) == 0, "osd.3 resumed, never up again");
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* The PGs active+clean at their primaries under epoch min_epoch or later
 * (`pg dump` of every running OSD), and what each OSD holds, into why. */
static int
count_clean(struct tc_cluster *c, const int *running, uint64_t min_epoch, char *why,
	    size_t whylen)
{
	int clean = 0;

	why[0] = '\0';
	for (int i = 0; i < 4; i++) {
		char *out = NULL;
		int here = 0;
		if (!running[i])
			continue;
		if (tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0) {
			for (const char *p = strstr(out, "{\"pgid\""); p;
			     p = strstr(p + 1, "{\"pgid\"")) {
				if (strncmp(strstr(p, "\"state\": ") + 9, "\"active+clean\"", 14) == 0 &&
				    tc_json_u64(p, "epoch", 0) >= min_epoch)
					here++;
			}
			size_t n = strlen(why);
			snprintf(why + n, whylen - n, " osd.%d: %llu copies, %d active+clean;", i,
				 (unsigned long long)tc_json_u64(out, "copies", 0), here);
		}
		clean += here;
		free(out);
	}
	return clean;
}

static void
await_clean(struct tc_cluster *c, const int *running, int want, const char *what)
{
	uint64_t t0 = tc_now_ms(), epoch;
	char why[1024], *tree = NULL;
	int n = 0;

	ck_assert_int_eq(tc_cli(c, &tree, "osd tree --format json"), 0);
	epoch = tc_json_u64(tree, "osdmap_epoch", 0);
	free(tree);
	while (tc_now_ms() - t0 < 20000 &&
	       (n = count_clean(c, running, epoch, why, sizeof(why))) < want)
		tc_sleep_ms(200);
	if (n < want) {
		for (int i = 0; i < 4; i++) {
			char *out = NULL;
			if (running[i] && tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0)
				fprintf(stderr, "osd.%d pg dump: %.3000s\n", i, out);
			free(out);
		}
	}
	ck_assert_msg(n >= want, "%s: %d of %d PGs active+clean at epoch %llu after 60 s:%s",
		      what, n, want, (unsigned long long)epoch, why);
	fprintf(stderr, "pgs_peer: %s: %d PGs active+clean at epoch %llu or later after "
		"%.1f s\n", what, n, (unsigned long long)epoch, (double)(tc_now_ms() - t0) / 1e3);
}

/* Wait until the running OSDs hold `want` copies in all (strays gone). */
static void
await_copies(struct tc_cluster *c, const int *running, int want, const char *what)
{
	uint64_t t0 = tc_now_ms();
	int n = -1;
	char why[512] = "";

	while (tc_now_ms() - t0 < 20000 && n != want) {
		n = 0;
		why[0] = '\0';
		for (int i = 0; i < 4; i++) {
			char *out = NULL;
			if (running[i] && tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0) {
				int k = (int)tc_json_u64(out, "copies", 0);
				size_t l = strlen(why);
				n += k;
				snprintf(why + l, sizeof(why) - l, " osd.%d: %d;", i, k);
			}
			free(out);
		}
		if (n != want)
			tc_sleep_ms(200);
	}
	ck_assert_msg(n == want, "%s: %d copies held, not %d:%s", what, n, want, why);
	fprintf(stderr, "pgs_peer: %s: %d copies:%s\n", what, n, why);
}

/* Four OSD daemons peer the PGs of a new pool over their sessions and
 * bring every one to active+clean, each copy in a collection of its
 * store; one killed and marked out, its PGs peer again on the three left
 * (the monitors record their primaries' up_thru) and are active+clean
 * again. */
START_TEST(pgs_peer)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");

	ck_assert_int_eq(tc_osd_signal(&c, 3, SIGKILL) & 0x7f, SIGKILL);
	running[3] = 0;
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down 3"), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 3"), 0);
	await_clean(&c, running, 64, "osd.3 killed and out");
	await_copies(&c, running, 64 * 3, "osd.3 killed and out");

	/* back on its store (its copies loaded and fed the epochs it stored)
	 * and in: the PGs move back, and the copies no longer needed on the
	 * others are removed */
	ck_assert_int_eq(tc_osd_start(&c, 3), 0);
	running[3] = 1;
	ck_assert_msg(await_up(&c, 3, 1, 15000) == 0, "osd.3 never came back up");
	ck_assert_int_eq(tc_cli(&c, NULL, "osd in 3"), 0);
	await_clean(&c, running, 64, "osd.3 back and in");
	await_copies(&c, running, 64 * 3, "osd.3 back and in");
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

int
main(void)
{
	/* one test case each: CK_RUN_CASE=name runs that one */
	const struct tc_case cases[] = {
		{ "store_identity", store_identity },
		{ "boot_and_pgs", boot_and_pgs },
		{ "heartbeats_report_silent", heartbeats_report_silent },
		{ "pgs_peer", pgs_peer },
	};

	return tc_check_main("osd", cases, TC_NCASES(cases));
}
