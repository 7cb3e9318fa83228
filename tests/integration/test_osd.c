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

#include <tessera/client.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <pthread.h>

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

/* One monitor, four OSD daemons on hosts h0..h3 (a cluster id, their
 * stores made, all up), and pool data of 64 PGs x 3. */
/* The cluster's placement plugin for the next four_osds_and_a_pool (NULL:
 * the default, crush). */
static const char *placement_plugin;

static void
four_osds_and_a_pool(struct tc_cluster *c)
{
	char *out = NULL;

	c->real_osds = 1;
	ck_assert_int_eq(tc_fsid_new(c), 0);
	ck_assert_int_eq(tc_start_all(c), 0);
	ck_assert_int_ge(tc_wait_leader(c, 15000), 0);
	if (placement_plugin) {
		char *dump = NULL;
		ck_assert_int_eq(tc_cli(c, NULL, "osd placement set %s", placement_plugin), 0);
		ck_assert_int_eq(tc_cli(c, &dump, "osd dump --format json"), 0);
		assert_says(dump, placement_plugin);
		free(dump);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(tc_cli(c, NULL, "osd add %d --host h%d", i, i), 0);
		ck_assert_int_eq(tc_osd_mkfs(c, (size_t)i, NULL, &out), 0);
		free(out);
		ck_assert_int_eq(tc_osd_start(c, (size_t)i), 0);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(tc_await_osd_up(c, i, 1, 15000) == 0, "osd.%d never came up", i);
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
/* Threads of process pid whose scheduling policy is not policy (field 41
 * of /proc/PID/task/TID/stat); -1 when none can be read. */
static int
threads_not_under(pid_t pid, int policy)
{
	char path[64];
	DIR *dir;
	struct dirent *de;
	int seen = 0, other = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL) {
		char p2[96], line[1024], *end, *save = NULL;
		FILE *f;
		int field = 2;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p2, sizeof(p2), "/proc/%d/task/%.32s/stat", (int)pid, de->d_name);
		if ((f = fopen(p2, "r")) == NULL)
			continue; /* the thread ended */
		end = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		if (end == NULL)
			continue;
		/* after "pid (comm)" come fields 3 onwards */
		for (char *t = strtok_r(end + 1, " ", &save); t != NULL;
		     t = strtok_r(NULL, " ", &save)) {
			if (++field == 41) {
				seen++;
				if (atoi(t) != policy) {
					fprintf(stderr, "pid %d thread %s: policy %s, not %d\n",
						(int)pid, de->d_name, t, policy);
					other++;
				}
				break;
			}
		}
	}
	closedir(dir);
	return seen ? other : -1;
}

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
	snprintf(c.sections, sizeof(c.sections), "osd-3 = { osd_sched_batch = false; };\n");
	four_osds_and_a_pool(&c);
	epoch = mon_epoch(&c);
	ck_assert_uint_gt(epoch, 0);
	ep = map_now(&c, reg, &host, epoch);
	/* osd_sched_batch: every thread of osd.0-2 under SCHED_BATCH, osd.3's
	 * (the option off in its section) under the policy it inherited from
	 * us (SCHED_OTHER unless the suite itself runs under another) */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(threads_not_under(c.osd[i].pid, i < 3 ? SCHED_BATCH
								 : sched_getscheduler(0)), 0);

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
		ck_assert_int_eq(tc_await_osd_up(&c, 1, 1, 15000), 0);
		ck_assert_int_eq(tc_await_osd_up(&c, 2, 1, 15000), 0);
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
	ck_assert_msg(tc_await_osd_up(&c, 3, 0, 20000) == 0, "osd.3 paused, never marked down");
	took = tc_now_ms() - t0;
	fprintf(stderr, "heartbeats_report_silent: osd.3 paused, marked down after "
		"%.1f s (heartbeat grace 1 s, beacon grace 30 s)\n", (double)took / 1e3);
	ck_assert_msg(took < 10000, "marked down after %" PRIu64 " ms: not by its "
		      "peers' reports", took);
	ck_assert_int_eq(tc_osd_signal(&c, 3, SIGCONT), 0);
	ck_assert_msg(tc_await_osd_up(&c, 3, 1, 20000) == 0, "osd.3 resumed, never up again");
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
	for (int i = 0; i < (int)c->nosd; i++) {
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
		/* the copies that are neither clean at that epoch nor replicas */
		for (int i = 0; i < (int)c->nosd; i++) {
			char *out = NULL;
			if (running[i] && tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0)
				for (const char *p = strstr(out, "{\"pgid\""); p;
				     p = strstr(p + 1, "{\"pgid\"")) {
					const char *st = strstr(p, "\"state\": ");
					if (st && strncmp(st + 9, "\"replica\"", 9) != 0 &&
					    (strncmp(st + 9, "\"active+clean\"", 14) != 0 ||
					     tc_json_u64(p, "epoch", 0) < epoch))
						fprintf(stderr, "osd.%d: %.*s\n", i,
							(int)strcspn(p, "}"), p);
				}
			free(out);
		}
	}
	ck_assert_msg(n >= want, "%s: %d of %d PGs active+clean at epoch %llu after 20 s:%s",
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
		for (int i = 0; i < (int)c->nosd; i++) {
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
	if (n != want)
		for (int i = 0; i < (int)c->nosd; i++) {
			char *out = NULL;
			if (running[i] && tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0)
				for (const char *p = strstr(out, "{\"pgid\""); p;
				     p = strstr(p + 1, "{\"pgid\""))
					if (strncmp(strstr(p, "\"state\": ") + 9, "\"active+clean\"",
						    14) != 0 &&
					    strncmp(strstr(p, "\"state\": ") + 9, "\"replica\"", 9))
						fprintf(stderr, "osd.%d: %.300s\n", i, p);
			free(out);
		}
	ck_assert_msg(n == want, "%s: %d copies held, not %d:%s", what, n, want, why);
	fprintf(stderr, "pgs_peer: %s: %d copies:%s\n", what, n, why);
}

/* Wait until `tessera pg stat` says what (a fragment of its JSON), as the
 * primaries' reports reach the leader; the last answer on failure. */
static void
await_pg_stat(struct tc_cluster *c, const char *what, const char *why)
{
	uint64_t t0 = tc_now_ms();
	char *out = NULL;

	for (;;) {
		free(out);
		out = NULL;
		if (tc_cli(c, &out, "pg stat --format json") == 0 && strstr(out, what))
			break;
		if (tc_now_ms() - t0 > 20000)
			break;
		tc_sleep_ms(200);
	}
	ck_assert_msg(out && strstr(out, what), "%s: pg stat never said %s; it says:\n%s", why,
		      what, out ? out : "(nothing)");
	fprintf(stderr, "pgs_peer: %s: pg stat says %s after %.1f s\n", why, what,
		(double)(tc_now_ms() - t0) / 1e3);
	free(out);
}

/* Wait until the monitors' `pg dump` gives pgid a state that says
 * `state` ("peered" in "undersized+degraded+peered"); the last state seen
 * on failure. */
static void
await_pg_state(struct tc_cluster *c, const char *pgid, const char *state, const char *why)
{
	uint64_t t0 = tc_now_ms();
	char key[48], seen[128] = "(no report)";

	snprintf(key, sizeof(key), "{\"pgid\": \"%s\"", pgid);
	for (;;) {
		char *out = NULL;
		const char *p, *st;
		if (tc_cli(c, &out, "pg dump --format json") == 0 && (p = strstr(out, key)) &&
		    (st = strstr(p, "\"state\": \"")) != NULL) {
			st += 10;
			snprintf(seen, sizeof(seen), "%.*s", (int)strcspn(st, "\""), st);
		}
		free(out);
		if (strstr(seen, state) || tc_now_ms() - t0 > 20000)
			break;
		tc_sleep_ms(200);
	}
	ck_assert_msg(strstr(seen, state), "%s: PG %s is %s, not %s after 20 s", why, pgid,
		      seen, state);
	fprintf(stderr, "%s: PG %s %s after %.1f s\n", why, pgid, seen,
		(double)(tc_now_ms() - t0) / 1e3);
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
				   "osd_beacon_interval = \"300ms\"; osd_recovery_max_active = 3; "
				   "osd_backfill_window = 16;"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	{
		/* the recovery throttles reach the PGs */
		char *out = NULL;
		ck_assert_int_eq(tc_osd_asok(&c, 0, "pg dump", &out), 0);
		assert_says(out, "\"recovery_max\": 3, \"backfill_window\": 16");
		free(out);
	}
	/* what the primaries tell the monitors */
	await_pg_stat(&c, "\"total\": 64, \"active\": 64, \"clean\": 64", "a new pool");

	ck_assert_int_eq(tc_osd_signal(&c, 3, SIGKILL) & 0x7f, SIGKILL);
	running[3] = 0;
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down 3"), 0);
	/* down, not out: its PGs run on two copies of three */
	await_pg_stat(&c, "active+undersized+degraded", "osd.3 down");
	{
		char *out = NULL;
		ck_assert_int_eq(tc_cli(&c, &out, "health detail"), 0);
		assert_says(out, "PG_DEGRADED");
		assert_says(out, "active+undersized+degraded");
		free(out);
		ck_assert_int_eq(tc_cli(&c, &out, "status"), 0);
		assert_says(out, "pgs: 64:");
		free(out);
		ck_assert_int_eq(tc_cli(&c, &out, "pg query 1.0 --format json"), 0);
		assert_says(out, "\"pgid\": \"1.0\"");
		assert_says(out, "\"acting\": [");
		free(out);
		ck_assert_int_ne(tc_cli(&c, &out, "pg query 1.40"), 0);
		assert_says(out, "no PG 1.40");
		free(out);
	}
	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 3"), 0);
	await_clean(&c, running, 64, "osd.3 killed and out");
	await_copies(&c, running, 64 * 3, "osd.3 killed and out");

	/* back on its store (its copies loaded and fed the epochs it stored)
	 * and in: the PGs move back, and the copies no longer needed on the
	 * others are removed */
	ck_assert_int_eq(tc_osd_start(&c, 3), 0);
	running[3] = 1;
	ck_assert_msg(tc_await_osd_up(&c, 3, 1, 15000) == 0, "osd.3 never came back up");
	ck_assert_int_eq(tc_cli(&c, NULL, "osd in 3"), 0);
	await_clean(&c, running, 64, "osd.3 back and in");
	await_copies(&c, running, 64 * 3, "osd.3 back and in");
	await_pg_stat(&c, "\"total\": 64, \"active\": 64, \"clean\": 64", "osd.3 back and in");

	/* copies that became strays while their OSD was down: osd.0 holds
	 * every PG (osd.3 out), is killed and marked out, and the PGs go
	 * clean on the others (osd.3 in).  Restarted, osd.0 replays those
	 * epochs and tells the primaries of its copies before the map shows
	 * it up again; that map changes none of the PGs (osd.0 is still
	 * out), and still its strays are removed. */
	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 3"), 0);
	await_clean(&c, running, 64, "osd.3 out again");
	await_copies(&c, running, 64 * 3, "osd.3 out again");
	ck_assert_int_eq(tc_osd_signal(&c, 0, SIGKILL) & 0x7f, SIGKILL);
	running[0] = 0;
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down 0"), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 0"), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "osd in 3"), 0);
	await_clean(&c, running, 64, "osd.0 down and out, osd.3 in");
	ck_assert_int_eq(tc_osd_start(&c, 0), 0);
	running[0] = 1;
	ck_assert_msg(tc_await_osd_up(&c, 0, 1, 15000) == 0, "osd.0 never came back up");
	await_copies(&c, running, 64 * 3, "osd.0 back, out");
	{
		/* counted above only if it answered: it holds nothing */
		char *out = NULL;
		ck_assert_int_eq(tc_osd_asok(&c, 0, "pg dump", &out), 0);
		ck_assert_msg(tc_json_u64(out, "copies", 99) == 0, "osd.0, out, still holds "
			      "copies: %.300s", out);
		free(out);
	}
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* The CLI over the object client library: put, stat, get, ls, rm of
 * objects of a pool of four OSDs, each answered by the PG's primary once
 * every copy holds it; then with one OSD killed (the client's operations
 * go to whoever serves each PG then) the objects written before read back
 * the same, and new ones are written. */
START_TEST(objects_cli)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	char path[512], back[512], *out = NULL;
	FILE *f;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	snprintf(path, sizeof(path), "%s/in.bin", c.dir);
	snprintf(back, sizeof(back), "%s/back.bin", c.dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 300000; i++)
		fputc((i * 7 + i / 1000) & 0xff, f);
	ck_assert_int_eq(fclose(f), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(tc_cli(&c, NULL, "object put data obj-%d %s", i, path), 0);
	ck_assert_int_eq(tc_cli(&c, &out, "object stat data obj-7 --format json"), 0);
	assert_says(out, "\"size\": 300000");
	free(out);
	ck_assert_int_eq(tc_cli(&c, NULL, "object get data obj-7 %s", back), 0);
	{
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "cmp -s %s %s", path, back);
		ck_assert_int_eq(system(cmd), 0);
	}
	ck_assert_int_eq(tc_cli(&c, &out, "object ls data"), 0);
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "obj-%d\n", i);
		assert_says(out, name);
	}
	free(out);
	/* tessera bench: a short write run that leaves its objects, a read
	 * run that checks every byte of them, and the cleanup */
	ck_assert_int_eq(tc_cli(&c, &out, "bench data 1 write -b 65536 -t 4 --no-cleanup "
				"--format json"), 0);
	assert_says(out, "\"errors\": 0");
	free(out);
	ck_assert_int_eq(tc_cli(&c, &out, "bench data 1 rand -t 4 --format json"), 0);
	assert_says(out, "\"errors\": 0");
	free(out);
	ck_assert_int_eq(tc_cli(&c, &out, "bench data 0 cleanup"), 0);
	assert_says(out, "removed");
	free(out);
	ck_assert_int_eq(tc_cli(&c, NULL, "object rm data obj-3"), 0);
	ck_assert_int_ne(tc_cli(&c, &out, "object stat data obj-3"), 0);
	assert_says(out, "No such file");
	free(out);

	/* one OSD killed: reads and writes go on once its PGs peer again */
	ck_assert_int_eq(tc_osd_signal(&c, 1, SIGKILL) & 0x7f, SIGKILL);
	running[1] = 0;
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down 1"), 0);
	for (int i = 0; i < 20; i += 3) {
		if (i == 3)
			continue;
		ck_assert_int_eq(tc_cli(&c, NULL, "object get data obj-%d %s", i, back), 0);
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "cmp -s %s %s", path, back);
		ck_assert_msg(system(cmd) == 0, "obj-%d differs after osd.1 died", i);
	}
	for (int i = 20; i < 25; i++)
		ck_assert_int_eq(tc_cli(&c, NULL, "object put data obj-%d %s", i, path), 0);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST


static struct tsr_client *
client_of(struct tc_cluster *c)
{
	struct tsr_client *k = NULL;
	char err[1024];

	ck_assert_msg(tsr_client_connect(c->conf, "client.admin", 15000, &k, err,
					 sizeof(err)) == 0, "connect: %s", err);
	return k;
}

static int64_t
pool_of(struct tsr_client *k, const char *name)
{
	int64_t id = -1;

	ck_assert_msg(tsr_client_pool(k, name, &id) == 0, "%s", tsr_client_why());
	return id;
}

/* The OSDs of `pgid`'s copies as their own `pg dump` says: the primary's
 * index, and a mask of the replicas (-1: none yet). */
static int
copies_of(struct tc_cluster *c, const char *pgid, unsigned *replicas)
{
	char want[64];
	int primary = -1;

	*replicas = 0;
	snprintf(want, sizeof(want), "{\"pgid\": \"%s\", \"state\": \"", pgid);
	for (int i = 0; i < 4; i++) {
		char *out = NULL;
		const char *p;
		if (tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0 &&
		    (p = strstr(out, want)) != NULL) {
			p += strlen(want);
			if (strncmp(p, "active", 6) == 0)
				primary = i;
			else if (strncmp(p, "replica", 7) == 0)
				*replicas |= 1u << i;
		}
		free(out);
	}
	return primary;
}

/* Flip a byte in the middle of the largest data file of osd.i's store (a
 * file-backend store holding one object's data besides small ones): bit
 * rot, under the running daemon. */
static void
rot_largest(struct tc_cluster *c, int i)
{
	char cmd[1024], *out = NULL, *argv[] = { "/bin/sh", "-c", cmd, NULL };
	FILE *f;
	long size;

	snprintf(cmd, sizeof(cmd), "find %s/osd-%d/data -type f -printf '%%s %%p\\n' | "
		 "sort -n | tail -1 | cut -d' ' -f2-", c->dir, i);
	ck_assert_int_eq(tc_run(argv, &out), 0);
	out[strcspn(out, "\n")] = '\0';
	ck_assert_msg(out[0] == '/', "osd.%d: no data file found (%s)", i, out);
	ck_assert_ptr_nonnull(f = fopen(out, "r+b"));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert_int_gt(size, 1000);
	ck_assert_int_eq(fseek(f, size / 2, SEEK_SET), 0);
	int ch = fgetc(f);
	ck_assert_int_eq(fseek(f, size / 2, SEEK_SET), 0);
	fputc(ch ^ 0x5a, f);
	ck_assert_int_eq(fclose(f), 0);
	free(out);
}

/* Run `pg CMD PGID`, again while the PG is not active+clean (a repair
 * recovering, a report not in yet): its exit status, output in *out. */
static int
pg_cmd(struct tc_cluster *c, const char *cmd, const char *pgid, char **out)
{
	uint64_t t0 = tc_now_ms();
	int rc;

	for (;;) {
		*out = NULL;
		rc = tc_cli(c, out, "pg %s %s --format json", cmd, pgid);
		if (rc == 0 || !*out || !strstr(*out, "not active+clean") ||
		    tc_now_ms() - t0 > 20000)
			return rc;
		free(*out);
		tc_sleep_ms(200);
	}
}

/* Deep-scrub pgid: it finds nobj objects, and its copies alike. */
static void
deep_scrub_clean(struct tc_cluster *c, const char *pgid, int nobj)
{
	char want[64], *out = NULL;

	ck_assert_int_eq(pg_cmd(c, "deep-scrub", pgid, &out), 0);
	snprintf(want, sizeof(want), "\"objects\": %d, \"inconsistent\": 0", nobj);
	assert_says(out, want);
	free(out);
}

/* Wait until `health detail` says (or, want 0, no longer says) what. */
static void
await_health(struct tc_cluster *c, const char *what, int want, const char *why)
{
	uint64_t t0 = tc_now_ms();
	char *out = NULL;
	int says = !want;

	while (tc_now_ms() - t0 < 20000) {
		free(out);
		out = NULL;
		tc_cli(c, &out, "health detail");
		says = out && strstr(out, what) != NULL;
		if (says == want)
			break;
		tc_sleep_ms(300);
	}
	ck_assert_msg(says == want, "%s: health detail %s \"%s\" after 20 s:\n%s", why,
		      want ? "never says" : "still says", what, out ? out : "(nothing)");
	free(out);
}

/* Writes to a pool's objects w-0..w-7 (their whole contents, an
 * attribute and an omap key each time) until told to stop, from a thread
 * of its own: a scrub meanwhile must not take them for damage. */
struct churn {
	struct tc_cluster *c;
	int64_t pool;
	volatile int stop;
	int writes, failed;
};

static void *
churn_run(void *arg)
{
	struct churn *w = arg;
	struct tsr_client *k = NULL;
	char err[1024], buf[3000];

	if (tsr_client_connect(w->c->conf, "client.admin", 15000, &k, err, sizeof(err)) < 0) {
		w->failed = -1;
		return NULL;
	}
	for (int i = 0; !w->stop && i < 100000; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16], val[16];
		const void *key = "k";
		size_t klen = 1, vlen;

		snprintf(name, sizeof(name), "w-%d", i % 8);
		vlen = (size_t)snprintf(val, sizeof(val), "%d", i);
		memset(buf, 'a' + i % 26, sizeof(buf));
		tsr_op_write_full(op, buf, 1000 + (size_t)(i % 2000));
		tsr_op_setxattr(op, "user.n", val, vlen);
		{
			const void *vals[1] = { val };
			tsr_op_omap_set(op, &key, &klen, vals, &vlen, 1);
		}
		if (tsr_op_run(k, w->pool, name, strlen(name), op, NULL) == 0)
			w->writes++;
		else
			w->failed++;
		tsr_op_destroy(op);
	}
	tsr_client_shutdown(k);
	return NULL;
}

/* Bit rot found and repaired.  A deep scrub of a healthy PG finds
 * nothing; a byte flipped in a replica's stored data (the store's
 * checksums make it a read error there) makes the object inconsistent:
 * the deep scrub names it and the OSD, health names it (PG_DAMAGED), and
 * a shallow scrub, which reads no data, cannot see it.  pg repair rebuilds
 * that copy from the others; a deep scrub then finds the PG whole and the
 * health check clears.  Then the primary's own copy rots: a client's read
 * of it fails with EIO until pg repair pulls a good copy back, and the
 * object reads back byte for byte. */
START_TEST(scrub_repairs_bit_rot)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, primary;
	char path[512], back[512], pgid[32], cmd[1200], *out = NULL;
	unsigned replicas;
	int64_t pool;
	FILE *f;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	ck_assert_int_eq(tc_cli(&c, NULL, "pool create one 1 --size 3"), 0);
	await_clean(&c, running, 65, "a pool of one PG");
	{
		struct tsr_client *k = client_of(&c);
		pool = pool_of(k, "one");
		tsr_client_shutdown(k);
	}
	snprintf(pgid, sizeof(pgid), "%" PRId64 ".0", pool);
	snprintf(path, sizeof(path), "%s/in.bin", c.dir);
	snprintf(back, sizeof(back), "%s/back.bin", c.dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 400000; i++)
		fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "object put one victim %s", path), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "object put one small-1 %s/tessera.conf", c.dir), 0);
	ck_assert_int_eq(tc_cli(&c, NULL, "object put one small-2 %s/tessera.conf", c.dir), 0);
	primary = copies_of(&c, pgid, &replicas);
	ck_assert_msg(primary >= 0 && __builtin_popcount(replicas) == 2,
		      "PG %s: primary osd.%d, replicas 0x%x", pgid, primary, replicas);

	/* healthy: nothing to find */
	ck_assert_int_eq(pg_cmd(&c, "deep-scrub", pgid, &out), 0);
	assert_says(out, "\"objects\": 3, \"inconsistent\": 0");
	free(out);
	/* a pool of one copy: nothing to compare with, and the scrub ends
	 * (it once waited for maps no member would send) */
	ck_assert_int_eq(tc_cli(&c, NULL, "pool create single 1 --size 1 --min-size 1"), 0);
	await_clean(&c, running, 66, "a pool of one copy");
	ck_assert_int_eq(tc_cli(&c, NULL, "object put single alone %s/tessera.conf", c.dir),
			 0);
	{
		struct tsr_client *k = client_of(&c);
		char single[32];
		snprintf(single, sizeof(single), "%" PRId64 ".0", pool_of(k, "single"));
		tsr_client_shutdown(k);
		ck_assert_int_eq(pg_cmd(&c, "deep-scrub", single, &out), 0);
		assert_says(out, "\"objects\": 1, \"inconsistent\": 0");
		free(out);
	}

	/* a replica's copy rots */
	int victim = __builtin_ctz(replicas);
	rot_largest(&c, victim);
	ck_assert_int_eq(pg_cmd(&c, "scrub", pgid, &out), 0); /* no data read: unseen */
	assert_says(out, "\"inconsistent\": 0");
	free(out);
	ck_assert_int_ne(pg_cmd(&c, "deep-scrub", pgid, &out), 0);
	assert_says(out, "\"inconsistent\": 1");
	assert_says(out, "\"name\": \"victim\"");
	snprintf(cmd, sizeof(cmd), "osd.%d: read error", victim);
	assert_says(out, cmd);
	free(out);
	await_health(&c, "victim", 1, "after the deep scrub");
	await_health(&c, "PG_DAMAGED", 1, "after the deep scrub");

	ck_assert_int_eq(pg_cmd(&c, "repair", pgid, &out), 0);
	assert_says(out, "\"repaired\": 1");
	free(out);
	ck_assert_int_eq(pg_cmd(&c, "deep-scrub", pgid, &out), 0);
	assert_says(out, "\"objects\": 3, \"inconsistent\": 0");
	free(out);
	await_health(&c, "PG_DAMAGED", 0, "after the repair");

	/* the primary's own copy rots: reads fail until it is repaired */
	rot_largest(&c, primary);
	ck_assert_int_ne(tc_cli(&c, &out, "object get one victim %s", back), 0);
	assert_says(out, "Input/output error");
	free(out);
	ck_assert_int_eq(pg_cmd(&c, "repair", pgid, &out), 0);
	assert_says(out, "\"repaired\": 1");
	snprintf(cmd, sizeof(cmd), "osd.%d: read error", primary);
	assert_says(out, cmd);
	free(out);
	ck_assert_msg(pg_cmd(&c, "deep-scrub", pgid, &out) == 0, "after the primary's "
		      "repair: %s", out ? out : "");
	assert_says(out, "\"inconsistent\": 0");
	free(out);
	ck_assert_int_eq(tc_cli(&c, NULL, "object get one victim %s", back), 0);
	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", path, back);
	ck_assert_msg(system(cmd) == 0, "victim differs after its repair");

	/* scrubs while a client rewrites objects: nothing inconsistent */
	{
		struct churn w = { &c, pool, 0, 0, 0 };
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, churn_run, &w), 0);
		for (int i = 0; i < 6; i++) {
			ck_assert_msg(pg_cmd(&c, i % 2 ? "deep-scrub" : "scrub", pgid, &out) == 0,
				      "a scrub under writes, %d writes in: %s", w.writes,
				      out ? out : "");
			assert_says(out, "\"inconsistent\": 0");
			free(out);
		}
		w.stop = 1;
		pthread_join(t, NULL);
		ck_assert_int_eq(w.failed, 0);
		ck_assert_int_gt(w.writes, 0);
		fprintf(stderr, "scrub_repairs_bit_rot: 6 scrubs under %d writes, none "
			"inconsistent\n", w.writes);
	}
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Objects o-0 .. o-(n-1) of pool (n at most 100): o-i holds 100 + 97 i
 * bytes of one letter (first + i, wrapping within the alphabet) and its
 * own name in the attribute user.i. */
static void
put_lettered(struct tsr_client *k, int64_t pool, int n, char first)
{
	for (int i = 0; i < n; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16], buf[10000];
		snprintf(name, sizeof(name), "o-%d", i);
		memset(buf, first + i % 26, sizeof(buf));
		tsr_op_write_full(op, buf, 100 + (size_t)i * 97);
		tsr_op_setxattr(op, "user.i", name, strlen(name));
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s",
			      name, tsr_op_why(op));
		tsr_op_destroy(op);
	}
}

/* Every object put_lettered() made reads back whole, its attribute too. */
static void
check_lettered(struct tsr_client *k, int64_t pool, int n, char first, const char *when)
{
	for (int i = 0; i < n; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16], buf[10000], want[10000], x[16];
		size_t xlen = 0;
		uint64_t got = 0;
		int rrc = -1, xrc = -1;
		snprintf(name, sizeof(name), "o-%d", i);
		memset(want, first + i % 26, sizeof(want));
		tsr_op_read(op, 0, sizeof(buf), buf, &got, &rrc);
		tsr_op_getxattr(op, "user.i", x, sizeof(x), &xlen, &xrc);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s %s: %s",
			      name, when, tsr_op_why(op));
		ck_assert_int_eq(rrc, 0);
		ck_assert_int_eq(xrc, 0);
		ck_assert_msg(got == 100 + (uint64_t)i * 97 && memcmp(buf, want, got) == 0,
			      "%s %s: %llu bytes read back, not what was written", name, when,
			      (unsigned long long)got);
		ck_assert_msg(xlen == strlen(name) && memcmp(x, name, xlen) == 0,
			      "%s %s: its attribute lost", name, when);
		tsr_op_destroy(op);
	}
}

/* Four OSDs, and pool "one" of one PG (3 copies, min_size 2) holding
 * nobj objects put_lettered() from first: the client (*k), the pool, the
 * PG's id; returns its primary's index, the replicas' in *replicas. */
static int
one_pg_of_objects(struct tc_cluster *c, int *running, int nobj, char first,
		  struct tsr_client **k, int64_t *pool, char pgid[32], unsigned *replicas)
{
	int primary;

	ck_assert_int_eq(tc_create(c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(c);
	ck_assert_int_eq(tc_cli(c, NULL, "pool create one 1 --size 3 --min-size 2"), 0);
	await_clean(c, running, 65, "a pool of one PG");
	*k = client_of(c);
	*pool = pool_of(*k, "one");
	put_lettered(*k, *pool, nobj, first);
	snprintf(pgid, 32, "%" PRId64 ".0", *pool);
	primary = copies_of(c, pgid, replicas);
	ck_assert_msg(primary >= 0 && __builtin_popcount(*replicas) == 2,
		      "PG %s: primary osd.%d, replicas 0x%x", pgid, primary, *replicas);
	return primary;
}

/* A whole PG down: every OSD of a PG killed at once, then started again
 * on their stores.  Nothing acknowledged is missing: every object reads
 * back byte for byte, and a deep scrub finds the three copies alike. */
START_TEST(whole_pg_down)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, primary, nobj = 40;
	struct tsr_client *k;
	char pgid[32], ids[32] = "";
	unsigned replicas, all;
	int64_t pool;

	primary = one_pg_of_objects(&c, running, nobj, 'A', &k, &pool, pgid, &replicas);
	tsr_client_shutdown(k);
	all = replicas | 1u << primary;

	/* all three at once, then marked down, then back */
	for (int i = 0; i < 4; i++)
		if (all & 1u << i) {
			ck_assert_int_eq(tc_osd_signal(&c, (size_t)i, SIGKILL) & 0x7f, SIGKILL);
			running[i] = 0;
			snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%d",
				 ids[0] ? "," : "", i);
		}
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down %s", ids), 0);
	for (int i = 0; i < 4; i++)
		if (all & 1u << i) {
			ck_assert_int_eq(tc_osd_start(&c, (size_t)i), 0);
			running[i] = 1;
		}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(tc_await_osd_up(&c, i, 1, 15000) == 0, "osd.%d never came back", i);
	await_clean(&c, running, 65, "the PG's OSDs back");

	k = client_of(&c);
	check_lettered(k, pool, nobj, 'A', "after the restart");
	tsr_client_shutdown(k);
	deep_scrub_clean(&c, pgid, nobj);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Each PG's acting set from `pg dump` (the monitors' view): sets[pg]
 * for pool 1's 64 PGs, as a bit mask of OSDs; how many were read. */
static int
acting_sets(struct tc_cluster *c, unsigned sets[64])
{
	char *out = NULL;
	int n = 0;

	memset(sets, 0, 64 * sizeof(sets[0]));
	ck_assert_int_eq(tc_cli(c, &out, "pg dump --format json"), 0);
	for (const char *p = strstr(out, "{\"pgid\": \"1."); p;
	     p = strstr(p + 1, "{\"pgid\": \"1.")) {
		unsigned pg = (unsigned)strtoul(p + 12, NULL, 16);
		const char *a = strstr(p, "\"acting\": [");
		if (a == NULL || pg >= 64)
			continue;
		a += 11;
		while (*a && *a != ']') {
			char *end;
			long id = strtol(a, &end, 10);
			if (end == a)
				break;
			sets[pg] |= 1u << id;
			a = end + (*end == ',' ? 1 : 0);
			while (*a == ' ')
				a++;
		}
		n++;
	}
	free(out);
	return n;
}

/* Growth: a fifth OSD joins a cluster holding data.  The PGs rebalance
 * onto it by themselves (backfill), about its share of the copies moves
 * (printed next to the optimum, a fifth), every PG ends active+clean with
 * its three copies on the OSDs' stores, and every object reads back. */
START_TEST(growth)
{
	struct tc_cluster c;
	int running[5] = { 1, 1, 1, 1, 0 }, nobj = 200, moved = 0, onto = 0;
	unsigned before[64], after[64];
	struct tsr_client *k;
	char *out = NULL;
	int64_t pool;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "data");
	for (int i = 0; i < nobj; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16], buf[3000];
		snprintf(name, sizeof(name), "g-%d", i);
		memset(buf, 'a' + i % 26, sizeof(buf));
		tsr_op_write_full(op, buf, 500 + (size_t)i * 11);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s",
			      name, tsr_op_why(op));
		tsr_op_destroy(op);
	}
	ck_assert_int_eq(acting_sets(&c, before), 64);

	ck_assert_int_eq(tc_cli(&c, NULL, "osd add 4 --host h4"), 0);
	ck_assert_int_eq(tc_osd_mkfs(&c, 4, NULL, &out), 0);
	free(out);
	ck_assert_int_eq(tc_osd_start(&c, 4), 0);
	running[4] = 1;
	ck_assert_msg(tc_await_osd_up(&c, 4, 1, 15000) == 0, "osd.4 never came up");
	await_clean(&c, running, 64, "after osd.4 joined");
	await_copies(&c, running, 64 * 3, "after osd.4 joined");
	/* the monitors' view, once the primaries' reports caught up: every
	 * PG with three copies, and osd.4 in as many acting sets as it holds
	 * copies (a report from before its backfill ended still names the
	 * copy it replaced, with three members all the same) */
	for (uint64_t t0 = tc_now_ms();; tc_sleep_ms(200)) {
		int whole = acting_sets(&c, after) == 64, in4 = 0, held4 = -1;
		char *dump = NULL;
		for (int pg = 0; pg < 64; pg++) {
			whole = whole && __builtin_popcount(after[pg]) == 3;
			in4 += (after[pg] >> 4) & 1;
		}
		if (tc_osd_asok(&c, 4, "pg dump", &dump) == 0)
			held4 = (int)tc_json_u64(dump, "copies", 0);
		free(dump);
		if ((whole && in4 == held4) || tc_now_ms() - t0 > 10000)
			break;
	}
	for (int pg = 0; pg < 64; pg++) {
		ck_assert_msg(__builtin_popcount(after[pg]) == 3, "PG 1.%x on OSDs 0x%x", pg,
			      after[pg]);
		moved += __builtin_popcount(after[pg] & ~before[pg]);
		onto += (after[pg] >> 4) & 1;
	}
	fprintf(stderr, "growth: %d of 192 PG copies moved (%d onto osd.4); the optimum "
		"is a fifth, 38.4\n", moved, onto);
	ck_assert_int_eq(moved, onto); /* only onto the new OSD */
	ck_assert_msg(onto >= 20 && onto <= 60, "%d copies onto osd.4: far from 38", onto);

	for (int i = 0; i < nobj; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16], buf[5000], want[3000];
		uint64_t got = 0;
		int rrc = -1;
		snprintf(name, sizeof(name), "g-%d", i);
		memset(want, 'a' + i % 26, sizeof(want));
		tsr_op_read(op, 0, sizeof(buf), buf, &got, &rrc);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s",
			      name, tsr_op_why(op));
		ck_assert_msg(rrc == 0 && got == 500 + (uint64_t)i * 11 &&
			      memcmp(buf, want, got) == 0, "%s read back wrong", name);
		tsr_op_destroy(op);
	}
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Each PG of pool 1 as the OSDs' own lists of the copies in their stores
 * say (`pg dump` of each running OSD): holders[pg], a mask of the OSDs
 * holding a copy in any state, and primary[pg], the OSD running it
 * active (-1: none). */
static void
copies_on_stores(struct tc_cluster *c, const int *running, unsigned holders[64],
		 int primary[64])
{
	for (int pg = 0; pg < 64; pg++) {
		holders[pg] = 0;
		primary[pg] = -1;
	}
	for (int i = 0; i < (int)c->nosd; i++) {
		char *out = NULL;
		if (!running[i] || tc_osd_asok(c, (size_t)i, "pg dump", &out) != 0) {
			free(out);
			continue;
		}
		for (const char *p = strstr(out, "{\"pgid\": \"1."); p;
		     p = strstr(p + 1, "{\"pgid\": \"1.")) {
			unsigned pg = (unsigned)strtoul(p + 12, NULL, 16);
			const char *st = strstr(p, "\"state\": \"");
			if (pg >= 64 || st == NULL)
				continue;
			holders[pg] |= 1u << i;
			if (strncmp(st + 10, "active", 6) == 0)
				primary[pg] = i;
		}
		free(out);
	}
}

/* The cluster's placement plugin changed on a cluster holding data.  On
 * four OSDs placed by crush, with 100 objects written: `osd placement
 * set hrw` alone changes nothing (the map keeps crush and its epoch) and
 * says how many PG copies would move and about how many bytes; with
 * --yes-i-really-mean-it the map takes hrw and the OSDs backfill.  Every
 * PG ends active+clean with its copies, in the OSDs' own stores, on
 * exactly the OSDs hrw places it on under the new map and its primary
 * the first of them; as many copies moved as the estimate said; a deep
 * scrub finds each PG's copies alike; every object reads back. */
START_TEST(placement_change)
{
	struct tc_cluster c;
	struct tsr_registry *reg = tsr_registry_create();
	struct tsr_core_host host;
	struct tsr_osdmap_epoch *ep;
	int running[4] = { 1, 1, 1, 1 }, nobj = 100, primary[64], actual = 0;
	unsigned before[64], holders[64], want[64];
	const char *dir = getenv("PLUGIN_DIR");
	uint64_t e0, moved, t0;
	char *out = NULL, path[600], err[512];
	struct tsr_client *k;
	int64_t pool;

	ck_assert_ptr_nonnull(dir);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s.so", dir, i ? "hrw" : "crush");
		ck_assert_msg(tsr_registry_load_file(reg, path, NULL, err, sizeof(err)) == 0,
			      "%s", err);
	}
	tsr_core_host_init(&host, "test", NULL, NULL);
	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "data");
	put_lettered(k, pool, nobj, 'a');
	/* where the copies are now, on the stores: the map's sets */
	copies_on_stores(&c, running, before, primary);
	for (int pg = 0; pg < 64; pg++)
		ck_assert_msg(__builtin_popcount(before[pg]) == 3, "PG 1.%x on OSDs 0x%x "
			      "before the change", pg, before[pg]);

	/* the estimate, once the OSDs have reported what their stores hold */
	e0 = mon_epoch(&c);
	for (t0 = tc_now_ms();; tc_sleep_ms(300)) {
		free(out);
		out = NULL;
		ck_assert_int_eq(tc_cli(&c, &out, "osd placement set hrw --format json"), 1);
		if ((tc_json_u64(out, "osds_reporting", 0) == 4 &&
		     tc_json_u64(out, "used_bytes", 0) > 0) || tc_now_ms() - t0 > 10000)
			break;
	}
	assert_says(out, "\"placement\": \"crush\", \"new_placement\": \"hrw\", "
		    "\"changed\": false");
	assert_says(out, "\"pgs_in_map\": 64, \"sampled\": false, \"pgs_placed\": 64, "
		    "\"pg_copies\": 192, ");
	assert_says(out, "\"osds_reporting\": 4, ");
	assert_says(out, "add --yes-i-really-mean-it to change it");
	moved = tc_json_u64(out, "moved", 0);
	ck_assert_msg(moved > 0 && moved <= 64, "%s", out);
	ck_assert_msg(tc_json_u64(out, "used_bytes", 0) > 0 &&
		      tc_json_u64(out, "estimated_bytes_to_copy", 0) > 0, "%s", out);
	free(out);
	ck_assert_int_eq(tc_cli(&c, &out, "osd placement set hrw"), 1);
	{
		char says[64];
		snprintf(says, sizeof(says), "would move %llu of 192 PG copies",
			 (unsigned long long)moved);
		assert_says(out, says);
	}
	assert_says(out, "to copy (an estimate: ");
	fprintf(stderr, "placement_change: %s", out);
	free(out);
	ck_assert_int_eq(tc_cli(&c, &out, "osd dump --format json"), 0);
	assert_says(out, "\"placement\": \"crush\"");
	ck_assert_uint_eq(tc_json_u64(out, "osdmap_epoch", 0), e0);
	free(out);

	/* the change: one epoch, then the OSDs move the data */
	t0 = tc_now_ms();
	ck_assert_int_eq(tc_cli(&c, &out, "osd placement set hrw --yes-i-really-mean-it"), 0);
	assert_says(out, "placement plugin hrw (was crush)");
	free(out);
	ck_assert_int_eq(tc_cli(&c, &out, "osd dump --format json"), 0);
	assert_says(out, "\"placement\": \"hrw\"");
	ck_assert_uint_gt(tc_json_u64(out, "osdmap_epoch", 0), e0);
	free(out);
	await_clean(&c, running, 64, "after the change to hrw");
	await_copies(&c, running, 64 * 3, "after the change to hrw");

	/* each PG's copies where hrw puts them under the map now */
	ep = map_now(&c, reg, &host, mon_epoch(&c));
	ck_assert_str_eq(tsr_osdmap_epoch_map(ep)->placement, "hrw");
	for (int pg = 0; pg < 64; pg++) {
		struct tsr_pg_mapping pm;
		ck_assert_msg(tsr_osdmap_epoch_map_pg(ep, pool, (uint32_t)pg, &pm, err,
						      sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(pm.nup, 3);
		want[pg] = 0;
		for (uint32_t j = 0; j < pm.nup; j++)
			want[pg] |= 1u << pm.up[j];
		primary[pg] = pm.up_primary;
	}
	tsr_osdmap_epoch_put(ep);
	{
		int ok = 0, got[64];
		for (uint64_t t1 = tc_now_ms(); !ok && tc_now_ms() - t1 < 20000;) {
			copies_on_stores(&c, running, holders, got);
			ok = 1;
			for (int pg = 0; pg < 64; pg++)
				ok = ok && holders[pg] == want[pg] && got[pg] == primary[pg];
			if (!ok)
				tc_sleep_ms(200);
		}
		for (int pg = 0; pg < 64; pg++) {
			ck_assert_msg(holders[pg] == want[pg] && got[pg] == primary[pg],
				      "PG 1.%x: copies on OSDs 0x%x, primary osd.%d; hrw "
				      "places it on 0x%x, primary osd.%d", pg, holders[pg],
				      got[pg], want[pg], primary[pg]);
			actual += __builtin_popcount(want[pg] & ~before[pg]);
		}
	}
	fprintf(stderr, "placement_change: %d of 192 PG copies moved (estimated %llu); "
		"active+clean on hrw %.1f s after the change\n", actual,
		(unsigned long long)moved, (double)(tc_now_ms() - t0) / 1e3);
	ck_assert_int_eq(actual, (int)moved);

	/* the copies alike, and every object back */
	{
		int objects = 0;
		for (int pg = 0; pg < 64; pg++) {
			char pgid[32];
			snprintf(pgid, sizeof(pgid), "%" PRId64 ".%x", pool, pg);
			ck_assert_int_eq(pg_cmd(&c, "deep-scrub", pgid, &out), 0);
			assert_says(out, "\"inconsistent\": 0");
			objects += (int)tc_json_u64(out, "objects", 0);
			free(out);
		}
		ck_assert_int_eq(objects, nobj);
	}
	check_lettered(k, pool, nobj, 'a', "on the new plugin");
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
	tsr_registry_destroy(reg);
}
END_TEST

/* The schedule: with intervals of seconds, every PG's primary scrubs and
 * deep-scrubs it by itself, at most osd_max_scrubs PGs at a time per OSD,
 * and the monitors show when (pg dump's last_scrub, last_deep_scrub). */
START_TEST(scrub_on_schedule)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	uint64_t t0;
	char *out = NULL;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\"; "
				   "osd_scrub_interval = \"1s\"; "
				   "osd_deep_scrub_interval = \"2s\"; osd_max_scrubs = 4;"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(tc_cli(&c, NULL, "object put data obj-%d %s/tessera.conf", i,
					c.dir), 0);
	t0 = tc_now_ms();
	for (;;) {
		free(out);
		out = NULL;
		ck_assert_int_eq(tc_cli(&c, &out, "pg dump --format json"), 0);
		if (!strstr(out, "\"last_deep_scrub\": \"never\"") &&
		    !strstr(out, "\"last_scrub\": \"never\"") && strstr(out, "\"1.3f\""))
			break;
		ck_assert_msg(tc_now_ms() - t0 < 40000, "40 s on, PGs never scrubbed:\n%.4000s",
			      out);
		tc_sleep_ms(500);
	}
	fprintf(stderr, "scrub_on_schedule: 64 PGs scrubbed and deep-scrubbed in %.1f s\n",
		(double)(tc_now_ms() - t0) / 1e3);
	assert_says(out, "\"scrub_errors\": 0");
	ck_assert_ptr_null(strstr(out, "\"scrub_errors\": 1"));
	free(out);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Operations submitted together: how many are left, how many failed. */
struct waitall {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int left, bad;
};

static void
done(void *arg, int result, const struct tsr_objver *ver)
{
	struct waitall *w = arg;

	(void)ver;
	pthread_mutex_lock(&w->mu);
	w->bad += result != 0;
	w->left--;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Every kind of step through the library: a compound write applied whole
 * (data, an attribute, omap keys), read back in one compound; guards that
 * hold and do not (a failed guard changes nothing); appends in flight
 * together land in the order sent; omap ranges in pages with a prefix;
 * truncate, zero, remove; the errors a caller acts on. */
/* The sum over the OSDs of a count in `pg dump`. */
static uint64_t
in_place_sum(struct tc_cluster *c, const char *key)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < c->nosd; i++) {
		char *out = NULL;
		ck_assert_int_eq(tc_osd_asok(c, i, "pg dump", &out), 0);
		sum += tc_json_u64(out, key, 0);
		free(out);
	}
	return sum;
}

START_TEST(client_ops)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	struct tsr_client *k;
	struct tsr_objver v1, v2;
	struct tsr_op *op;
	int64_t pool;
	char buf[4096];
	uint64_t got = 0, size = 0;
	size_t len = 0;
	int rc1 = 1, rc2 = 1, rc3 = 1;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "data");

	/* one compound write, read back in one compound */
	{
		const void *keys[3] = { "a1", "a2", "b1" }, *vals[3] = { "x", "yy", "zzz" };
		size_t kl[3] = { 2, 2, 2 }, vl[3] = { 1, 2, 3 };
		struct tsr_kvs range, attrs;
		op = tsr_op_create();
		tsr_op_create_obj(op, 1);
		tsr_op_write_full(op, "hello world", 11);
		tsr_op_setxattr(op, "owner", "alice", 5);
		tsr_op_omap_set(op, keys, kl, vals, vl, 3);
		ck_assert_msg(tsr_op_run(k, pool, "o1", 2, op, &v1) == 0, "%s", tsr_op_why(op));
		tsr_op_destroy(op);
		ck_assert_uint_gt(v1.ver, 0);

		op = tsr_op_create();
		tsr_op_read(op, 6, 100, buf, &got, &rc1);
		tsr_op_getxattr(op, "owner", buf + 100, 100, &len, &rc2);
		tsr_op_omap_get_range(op, NULL, 0, "a", 1, 10, &range, &rc3);
		tsr_op_getxattrs(op, &attrs, NULL);
		tsr_op_stat(op, &size, NULL, NULL);
		ck_assert_msg(tsr_op_run(k, pool, "o1", 2, op, &v2) == 0, "%s", tsr_op_why(op));
		tsr_op_destroy(op);
		ck_assert_int_eq(rc1 | rc2 | rc3, 0);
		ck_assert_uint_eq(got, 5);
		ck_assert_int_eq(memcmp(buf, "world", 5), 0);
		ck_assert_uint_eq(len, 5);
		ck_assert_int_eq(memcmp(buf + 100, "alice", 5), 0);
		ck_assert_uint_eq(range.n, 2);
		ck_assert_int_eq(range.more, 0);
		ck_assert_int_eq(memcmp(range.kv[1].key, "a2", 2), 0);
		ck_assert_int_eq(memcmp(range.kv[1].val, "yy", 2), 0);
		ck_assert_uint_eq(attrs.n, 1); /* the OSD's own attributes are not shown */
		ck_assert_uint_eq(size, 11);
		ck_assert(v2.epoch == v1.epoch && v2.ver == v1.ver);
		tsr_kvs_free(&range);
		tsr_kvs_free(&attrs);
	}

	/* guards: exclusive create of what exists; a stale version; the
	 * write with them is not applied */
	op = tsr_op_create();
	tsr_op_create_obj(op, 1);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), -EEXIST);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_assert_version(op, v1.epoch, v1.ver);
	tsr_op_append(op, "!", 1);
	ck_assert_msg(tsr_op_run(k, pool, "o1", 2, op, &v2) == 0, "%s", tsr_op_why(op));
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_assert_version(op, v1.epoch, v1.ver);  /* stale now */
	tsr_op_append(op, "?", 1);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), -ECANCELED);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_cmpxattr(op, "owner", TSR_CMP_EQ, "bob", 3);
	tsr_op_truncate(op, 0);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), -ECANCELED);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_cmpxattr(op, "owner", TSR_CMP_EQ, "alice", 5);
	tsr_op_assert_exists(op);
	tsr_op_append(op, "#", 1);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), 0);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_read(op, 0, 100, buf, &got, NULL);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), 0);
	tsr_op_destroy(op);
	ck_assert_uint_eq(got, 13);
	ck_assert_int_eq(memcmp(buf, "hello world!#", 13), 0);

	/* a write and a read in one operation: refused before it is sent */
	op = tsr_op_create();
	tsr_op_append(op, "x", 1);
	tsr_op_stat(op, &size, NULL, NULL);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), -EINVAL);
	tsr_op_destroy(op);

	/* missing things */
	op = tsr_op_create();
	tsr_op_stat(op, &size, NULL, NULL);
	ck_assert_int_eq(tsr_op_run(k, pool, "nope", 4, op, NULL), -ENOENT);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_remove(op);
	ck_assert_int_eq(tsr_op_run(k, pool, "nope", 4, op, NULL), -ENOENT);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_getxattr(op, "none", buf, sizeof(buf), &len, NULL);
	ck_assert_int_eq(tsr_op_run(k, pool, "o1", 2, op, NULL), -ENODATA);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_stat(op, &size, NULL, NULL);
	ck_assert_int_eq(tsr_op_run(k, 999, "o1", 2, op, NULL), -ENOENT);
	assert_says(tsr_op_why(op), "no pool 999");
	tsr_op_destroy(op);

	/* appends in flight together land in the order sent */
	{
		struct waitall w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 64, 0 };
		struct tsr_op *ops[64];
		char rec[64][16];
		for (int i = 0; i < 64; i++) {
			snprintf(rec[i], sizeof(rec[i]), "<%013d>", i);
			ops[i] = tsr_op_create();
			tsr_op_append(ops[i], rec[i], 15);
			ck_assert_int_eq(tsr_op_submit(k, pool, "log", 3, ops[i], done, &w), 0);
		}
		pthread_mutex_lock(&w.mu);
		while (w.left)
			pthread_cond_wait(&w.cv, &w.mu);
		pthread_mutex_unlock(&w.mu);
		ck_assert_int_eq(w.bad, 0);
		for (int i = 0; i < 64; i++)
			tsr_op_destroy(ops[i]);
		char *all = malloc(64 * 15);
		op = tsr_op_create();
		tsr_op_read(op, 0, 64 * 15, all, &got, NULL);
		ck_assert_int_eq(tsr_op_run(k, pool, "log", 3, op, NULL), 0);
		tsr_op_destroy(op);
		ck_assert_uint_eq(got, 64 * 15);
		for (int i = 0; i < 64; i++)
			ck_assert_msg(memcmp(all + 15 * i, rec[i], 15) == 0, "record %d out of "
				      "place: %.15s", i, all + 15 * i);
		free(all);
	}

	/* omap pages: 300 keys, 100 at a time, under a prefix */
	{
		const void *keys[300], *vals[300];
		size_t kl[300], vl[300];
		char kb[300][16];
		struct tsr_kvs page;
		char after[16] = "";
		size_t after_len = 0, total = 0;
		for (int i = 0; i < 300; i++) {
			snprintf(kb[i], sizeof(kb[i]), "%c%05d", i % 2 ? 'p' : 'q', i);
			keys[i] = kb[i];
			kl[i] = 6;
			vals[i] = kb[i];
			vl[i] = 6;
		}
		op = tsr_op_create();
		tsr_op_omap_set(op, keys, kl, vals, vl, 300);
		ck_assert_int_eq(tsr_op_run(k, pool, "dir", 3, op, NULL), -EINVAL); /* unsorted */
		tsr_op_destroy(op);
		/* sorted: the q keys after the p keys */
		for (int i = 0, j = 0; i < 300; i++)
			if (kb[i][0] == 'p')
				keys[j++] = kb[i];
		for (int i = 0, j = 150; i < 300; i++)
			if (kb[i][0] == 'q')
				keys[j++] = kb[i];
		for (int i = 0; i < 300; i++)
			vals[i] = keys[i];
		op = tsr_op_create();
		tsr_op_omap_set(op, keys, kl, vals, vl, 300);
		ck_assert_msg(tsr_op_run(k, pool, "dir", 3, op, NULL) == 0, "%s", tsr_op_why(op));
		tsr_op_destroy(op);
		for (int pages = 0; pages < 10; pages++) {
			op = tsr_op_create();
			tsr_op_omap_get_range(op, after_len ? after : NULL, after_len, "p", 1, 100,
					      &page, NULL);
			ck_assert_int_eq(tsr_op_run(k, pool, "dir", 3, op, NULL), 0);
			tsr_op_destroy(op);
			for (size_t i = 0; i < page.n; i++)
				ck_assert_int_eq(((const char *)page.kv[i].key)[0], 'p');
			total += page.n;
			if (page.n) {
				memcpy(after, page.kv[page.n - 1].key, page.kv[page.n - 1].key_len);
				after_len = page.kv[page.n - 1].key_len;
			}
			int more = page.more;
			tsr_kvs_free(&page);
			if (!more)
				break;
		}
		ck_assert_uint_eq(total, 150);
		op = tsr_op_create();
		tsr_op_omap_rm_range(op, "p", 1, "q", 1);
		ck_assert_int_eq(tsr_op_run(k, pool, "dir", 3, op, NULL), 0);
		tsr_op_destroy(op);
		op = tsr_op_create();
		tsr_op_omap_get_range(op, NULL, 0, NULL, 0, 1000, &page, NULL);
		ck_assert_int_eq(tsr_op_run(k, pool, "dir", 3, op, NULL), 0);
		tsr_op_destroy(op);
		ck_assert_uint_eq(page.n, 150);
		ck_assert_int_eq(((const char *)page.kv[0].key)[0], 'q');
		tsr_kvs_free(&page);
	}

	/* writes the store or a replica could not take are refused whole,
	 * and the PG goes on: past the backend's max_object_size; more ops
	 * than a transaction may hold */
	op = tsr_op_create();
	tsr_op_write(op, 1ull << 40, "x", 1);
	ck_assert_int_eq(tsr_op_run(k, pool, "big", 3, op, NULL), -EFBIG);
	tsr_op_destroy(op);
	{
		enum { NK = 40000 };
		char (*kb)[8] = malloc(sizeof(*kb) * NK);
		const void **keys = malloc(sizeof(*keys) * NK), **vals = malloc(sizeof(*vals) * NK);
		size_t *kl = malloc(sizeof(*kl) * NK);
		for (int i = 0; i < NK; i++) {
			snprintf(kb[i], sizeof(kb[i]), "k%06d", i);
			keys[i] = vals[i] = kb[i];
			kl[i] = 7;
		}
		op = tsr_op_create();
		tsr_op_omap_set(op, keys, kl, vals, kl, NK);
		tsr_op_omap_set(op, keys, kl, vals, kl, NK);
		ck_assert_int_eq(tsr_op_run(k, pool, "big", 3, op, NULL), -E2BIG);
		tsr_op_destroy(op);
		free(kb);
		free(keys);
		free(vals);
		free(kl);
	}
	op = tsr_op_create();
	tsr_op_write_full(op, "fine", 4);
	ck_assert_int_eq(tsr_op_run(k, pool, "big", 3, op, NULL), 0);
	tsr_op_destroy(op);

	/* truncate and zero */
	op = tsr_op_create();
	tsr_op_write_full(op, "0123456789", 10);
	tsr_op_zero(op, 2, 3);
	tsr_op_truncate(op, 8);
	ck_assert_int_eq(tsr_op_run(k, pool, "tz", 2, op, NULL), 0);
	tsr_op_destroy(op);
	op = tsr_op_create();
	tsr_op_read(op, 0, 100, buf, &got, NULL);
	ck_assert_int_eq(tsr_op_run(k, pool, "tz", 2, op, NULL), 0);
	tsr_op_destroy(op);
	ck_assert_uint_eq(got, 8);
	ck_assert_int_eq(memcmp(buf, "01\0\0\0" "567", 8), 0);

	/* writes one at a time find their shards idle and run on the I/O
	 * threads that read them, with their REPOPs and replies; reads of
	 * data never do (ops.c, route) */
	{
		uint64_t ops0 = in_place_sum(&c, "client_ops_in_place");
		uint64_t msgs0 = in_place_sum(&c, "pg_msgs_in_place"), ops1, msgs1;
		char name[16];
		for (int i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "ip%d", i);
			op = tsr_op_create();
			tsr_op_write_full(op, name, strlen(name));
			ck_assert_int_eq(tsr_op_run(k, pool, name, strlen(name), op, NULL), 0);
			tsr_op_destroy(op);
		}
		ops1 = in_place_sum(&c, "client_ops_in_place");
		msgs1 = in_place_sum(&c, "pg_msgs_in_place");
		ck_assert_msg(ops1 - ops0 >= 20 && ops1 - ops0 <= 40, "%llu of 40 writes "
			      "in place", (unsigned long long)(ops1 - ops0));
		/* two REPOPs and two replies each */
		ck_assert_msg(msgs1 - msgs0 >= 80 && msgs1 - msgs0 <= 160, "%llu of the "
			      "writes' 160 PG messages in place",
			      (unsigned long long)(msgs1 - msgs0));
		for (int i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "ip%d", i);
			op = tsr_op_create();
			tsr_op_read(op, 0, 100, buf, &got, NULL);
			ck_assert_int_eq(tsr_op_run(k, pool, name, strlen(name), op, NULL), 0);
			tsr_op_destroy(op);
			ck_assert_uint_eq(got, strlen(name));
		}
		ck_assert_uint_eq(in_place_sum(&c, "client_ops_in_place"), ops1);
	}

	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST


/* Full stores: four OSDs on small blockdev images; 4 MiB objects are
 * written until the primaries refuse with ENOSPC (osd_full_ratio 0.5),
 * long before a store itself runs out; health says OSD_FULL and `osd df`
 * shows the use; every object acknowledged before reads back; removals
 * still go on the full stores, and once they freed room writes do too. */
START_TEST(full_stores)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	struct tsr_client *k;
	struct tsr_op *op;
	int64_t pool;
	uint8_t *buf = malloc(4u << 20), *back = malloc(4u << 20);
	int n = 0, rc = 0;
	char name[32], *out = NULL;

	ck_assert_int_eq(tc_create(&c, 1, "backend = \"blockdev\"; "
				   "backend_options = \"size=160M,journal_size=8M,min_free=4M\"; "
				   "osd_beacon_interval = \"300ms\"; osd_pg_stats_interval = \"300ms\"; "
				   "osd_full_ratio = 0.5; mon_osd_nearfull_ratio = 0.3; "
				   "mon_osd_full_ratio = 0.5;"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "data");
	for (size_t i = 0; i < (4u << 20); i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 12));
	/* (the OSDs measure their stores every osd_pg_stats_interval: a few
	 * writes may pass the ratio before they see it) */
	for (n = 0; n < 200; n++) {
		snprintf(name, sizeof(name), "big-%d", n);
		op = tsr_op_create();
		buf[0] = (uint8_t)n;
		tsr_op_write_full(op, buf, 4u << 20);
		rc = tsr_op_run(k, pool, name, strlen(name), op, NULL);
		ck_assert_msg(rc == 0 || rc == -ENOSPC, "%s: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
		if (rc == -ENOSPC)
			break;
		tc_sleep_ms(20);
	}
	fprintf(stderr, "full_stores: ENOSPC after %d objects of 4 MiB\n", n);
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_gt(n, 5);
	{
		uint64_t t0 = tc_now_ms();
		do {
			free(out);
			out = NULL;
			tc_cli(&c, &out, "health detail");
			if (out && strstr(out, "OSD_FULL"))
				break;
			tc_sleep_ms(200);
		} while (tc_now_ms() - t0 < 15000);
		assert_says(out, "OSD_FULL");
		free(out);
	}
	ck_assert_int_eq(tc_cli(&c, &out, "osd df"), 0);
	assert_says(out, "%USE");
	free(out);
	/* what was acknowledged is whole */
	for (int i = 0; i < n; i += 3) {
		uint64_t got = 0;
		snprintf(name, sizeof(name), "big-%d", i);
		op = tsr_op_create();
		tsr_op_read(op, 0, 4u << 20, back, &got, NULL);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s", name,
			      tsr_op_why(op));
		tsr_op_destroy(op);
		buf[0] = (uint8_t)i;
		ck_assert_msg(got == (4u << 20) && memcmp(back, buf, got) == 0, "%s differs", name);
	}
	/* removals go on full stores */
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "big-%d", i);
		op = tsr_op_create();
		tsr_op_remove(op);
		rc = tsr_op_run(k, pool, name, strlen(name), op, NULL);
		ck_assert_msg(rc == 0, "removing %s on a full cluster: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
	}
	/* and once the stores are measured again, writes go too */
	{
		uint64_t t0 = tc_now_ms();
		do {
			op = tsr_op_create();
			tsr_op_write_full(op, "room again", 10);
			rc = tsr_op_run(k, pool, "after", 5, op, NULL);
			tsr_op_destroy(op);
			if (rc != -ENOSPC)
				break;
			tc_sleep_ms(200);
		} while (tc_now_ms() - t0 < 15000);
		ck_assert_int_eq(rc, 0);
	}
	free(buf);
	free(back);
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Bug: a replica whose store ran out of space failed the write it was
 * sent, logged it, and went on serving: the PG waited for it forever, and
 * so did every later write of the PG (big-45 of full_stores stalled so).
 * Now a store that fails a change stops its OSD, and the PG goes on with
 * the other copies.  osd.3's store is small (96 MiB, no full ratio to
 * stop writes early), the others' large: 4 MiB objects are written until
 * osd.3 stops on its own, saying why; every write is acknowledged, and
 * every one reads back. */
START_TEST(store_runs_out)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	struct tsr_client *k;
	struct tsr_op *op;
	int64_t pool;
	uint8_t *buf = malloc(4u << 20), *back = malloc(4u << 20);
	char name[32], path[600], *out = NULL;
	int n, stopped = 0;

	/* (osd-3's own section after global's: the harness writes the rest
	 * of global, then closes the section this opens) */
	ck_assert_int_eq(tc_create(&c, 1, "backend = \"blockdev\"; "
				   "backend_options = \"size=640M,journal_size=8M,min_free=4M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_heartbeat_interval = \"200ms\"; "
				   "osd_heartbeat_grace = \"1500ms\"; osd_full_ratio = 0.0; }; "
				   "osd-3 = { backend_options = "
				   "\"size=96M,journal_size=8M,min_free=4M\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "data");
	for (size_t i = 0; i < (4u << 20); i++)
		buf[i] = (uint8_t)(i * 13 + (i >> 10));
	snprintf(path, sizeof(path), "%s/log/osd-3.log", c.dir);
	for (n = 0; n < 90; n++) {
		snprintf(name, sizeof(name), "fill-%d", n);
		buf[0] = (uint8_t)n;
		op = tsr_op_create();
		tsr_op_write_full(op, buf, 4u << 20);
		int rc = tsr_op_run(k, pool, name, strlen(name), op, NULL);
		ck_assert_msg(rc == 0, "%s: %s (osd.3 %s)", name, tsr_op_why(op),
			      stopped ? "stopped" : "running");
		tsr_op_destroy(op);
		if (!stopped) {
			FILE *f = fopen(path, "r");
			char line[1024];
			while (f && fgets(line, sizeof(line), f))
				stopped |= strstr(line, "stopping: its store failed a change") != NULL;
			if (f)
				fclose(f);
			if (stopped)
				fprintf(stderr, "store_runs_out: osd.3 stopped after %d objects\n", n);
		}
		if (stopped && n > 40)
			break;
	}
	ck_assert_msg(stopped, "osd.3 never stopped (its store of 96 MiB should have run out)");
	for (int i = 0; i <= n && i < 90; i++) {
		uint64_t got = 0;
		snprintf(name, sizeof(name), "fill-%d", i);
		op = tsr_op_create();
		tsr_op_read(op, 0, 4u << 20, back, &got, NULL);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s",
			      name, tsr_op_why(op));
		tsr_op_destroy(op);
		buf[0] = (uint8_t)i;
		ck_assert_msg(got == (4u << 20) && memcmp(back, buf, got) == 0, "%s differs", name);
	}
	ck_assert_int_eq(tc_cli(&c, &out, "osd tree --format json"), 0);
	free(out);
	free(buf);
	free(back);
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* The content of object i of the writes under kill. */
static void
fill(uint8_t *p, size_t n, int i)
{
	for (size_t k = 0; k < n; k++)
		p[k] = (uint8_t)(k * 131 + (size_t)i * 7 + (k >> 9));
}

struct writer {
	struct tsr_client *k;
	int64_t pool;
	int n;                       /* objects to write */
	int *acked;                  /* 1 acknowledged, -errno failed */
	int next, inflight, done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tsr_op **ops;
	uint8_t *data;               /* n x OBJ bytes */
};
#define OBJ (64u << 10)

struct wctx {
	struct writer *w;
	int i;
};

static void wsubmit(struct writer *w);

static void
wdone(void *arg, int result, const struct tsr_objver *ver)
{
	struct wctx *x = arg;
	struct writer *w = x->w;

	(void)ver;
	pthread_mutex_lock(&w->mu);
	w->acked[x->i] = result == 0 ? 1 : result;
	w->inflight--;
	w->done++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	free(x);
}

/* Keep 16 writes in flight until all n went (called with w->mu held). */
static void
wsubmit(struct writer *w)
{
	while (w->inflight < 16 && w->next < w->n) {
		int i = w->next++;
		struct wctx *x = malloc(sizeof(*x));
		char name[32];
		x->w = w;
		x->i = i;
		snprintf(name, sizeof(name), "w-%d", i);
		w->ops[i] = tsr_op_create();
		tsr_op_write_full(w->ops[i], w->data + (size_t)i * OBJ, OBJ);
		w->inflight++;
		if (tsr_op_submit(w->k, w->pool, name, strlen(name), w->ops[i], wdone, x) < 0) {
			w->acked[i] = -EIO;
			w->inflight--;
			w->done++;
			free(x);
		}
	}
}

/* Acknowledged writes survive: 400 objects written 16 at a time while
 * one OSD after another is killed (SIGKILL, at most one down at a time:
 * a minority of each PG's three copies) and restarted; every write the
 * library acknowledged reads back whole.  Meanwhile a journal object is
 * appended to one record at a time, by a client that sends every
 * request twice (client_inject_dup) and sends again whenever a primary
 * changes: each acknowledged record is in it exactly once, in order. */
static void writes_under_kill_body(void);

START_TEST(writes_under_kill)
{
	writes_under_kill_body();
}
END_TEST

/* Each OSD on an address of its own for the next writes_under_kill_body
 * (0: all on 127.0.0.1). */
static int own_addresses;

/* The same with the hrw placement plugin, chosen before the first OSD,
 * and each OSD a "host" on an address of its own (127.0.0.2 to
 * 127.0.0.5): clients and peers reach each at the address the map gives
 * for it. */
START_TEST(writes_under_kill_hrw)
{
	placement_plugin = "hrw";
	own_addresses = 1;
	writes_under_kill_body();
	placement_plugin = NULL;
	own_addresses = 0;
}
END_TEST

static void
writes_under_kill_body(void)
{
	struct tc_cluster c;
	struct writer w;
	struct tsr_client *k;
	int running[4] = { 1, 1, 1, 1 }, kills = 0, victim = -1;
	int records = 0, failed_records = 0;
	uint64_t t0;
	char rec[32];

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_heartbeat_interval = \"200ms\"; "
				   "osd_heartbeat_grace = \"1500ms\"; "
				   "client_inject_dup = true;"), 0);
	for (int i = 0; own_addresses && i < 4; i++)
		snprintf(c.sections + strlen(c.sections), sizeof(c.sections) - strlen(c.sections),
			 "osd-%d = { osd_addr = \"127.0.0.%d:0\"; };\n", i, i + 2);
	four_osds_and_a_pool(&c);
	if (own_addresses) {
		char *dump = NULL;
		ck_assert_int_eq(tc_cli(&c, &dump, "osd dump --format json"), 0);
		for (int i = 0; i < 4; i++) {
			char want[32];
			snprintf(want, sizeof(want), "\"127.0.0.%d:", i + 2);
			assert_says(dump, want);
		}
		free(dump);
	}
	await_clean(&c, running, 64, "a new pool");
	k = client_of(&c);
	memset(&w, 0, sizeof(w));
	w.k = k;
	w.pool = pool_of(k, "data");
	w.n = 400;
	w.acked = calloc((size_t)w.n, sizeof(int));
	w.ops = calloc((size_t)w.n, sizeof(*w.ops));
	w.data = malloc((size_t)w.n * OBJ);
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	for (int i = 0; i < w.n; i++)
		fill(w.data + (size_t)i * OBJ, OBJ, i);

	t0 = tc_now_ms();
	pthread_mutex_lock(&w.mu);
	wsubmit(&w);
	pthread_mutex_unlock(&w.mu);
	while (tc_now_ms() - t0 < 120000) {
		int done;
		/* a journal record, appended alone */
		struct tsr_op *op = tsr_op_create();
		snprintf(rec, sizeof(rec), "<%06d>", records + failed_records);
		tsr_op_append(op, rec, 8);
		int rc = tsr_op_run(k, w.pool, "journal", 7, op, NULL);
		ck_assert_msg(rc == 0, "record %d: %s", records + failed_records, tsr_op_why(op));
		tsr_op_destroy(op);
		records++;
		pthread_mutex_lock(&w.mu);
		wsubmit(&w);
		done = w.done;
		pthread_mutex_unlock(&w.mu);
		if (done >= w.n)
			break;
		/* every 80 writes: the OSD down comes back, the next one dies */
		if (done >= 80 * (kills + 1) && kills < 4) {
			if (victim >= 0) {
				ck_assert_int_eq(tc_osd_start(&c, (size_t)victim), 0);
				running[victim] = 1;
			}
			victim = kills % 4;
			ck_assert_int_eq(tc_osd_signal(&c, (size_t)victim, SIGKILL) & 0x7f, SIGKILL);
			running[victim] = 0;
			fprintf(stderr, "writes_under_kill: osd.%d killed after %d writes\n",
				victim, done);
			kills++;
		}
	}
	pthread_mutex_lock(&w.mu);
	while (w.inflight > 0)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	fprintf(stderr, "writes_under_kill: %d writes and %d records in %.1f s, %d kills\n",
		w.done, records, (double)(tc_now_ms() - t0) / 1e3, kills);
	ck_assert_int_eq(w.done, w.n);
	ck_assert_int_ge(kills, 4);

	/* every acknowledged write reads back whole */
	{
		uint8_t *buf = malloc(OBJ);
		int acked = 0;
		for (int i = 0; i < w.n; i++) {
			char name[32];
			uint64_t got = 0;
			ck_assert_msg(w.acked[i] == 1, "write %d failed: %d (%s)", i, w.acked[i],
				      tsr_op_why(w.ops[i]));
			acked++;
			snprintf(name, sizeof(name), "w-%d", i);
			struct tsr_op *op = tsr_op_create();
			tsr_op_read(op, 0, OBJ, buf, &got, NULL);
			int rc = tsr_op_run(k, w.pool, name, strlen(name), op, NULL);
			ck_assert_msg(rc == 0, "%s: %s", name, tsr_op_why(op));
			tsr_op_destroy(op);
			ck_assert_msg(got == OBJ && memcmp(buf, w.data + (size_t)i * OBJ, OBJ) == 0,
				      "%s: %llu bytes, not what was acknowledged", name,
				      (unsigned long long)got);
		}
		free(buf);
		fprintf(stderr, "writes_under_kill: %d acknowledged writes read back\n", acked);
	}
	/* the journal: every record once, in order */
	{
		char *all = malloc((size_t)records * 8 + 64);
		uint64_t got = 0;
		struct tsr_op *op = tsr_op_create();
		tsr_op_read(op, 0, (uint64_t)records * 8 + 64, all, &got, NULL);
		ck_assert_int_eq(tsr_op_run(k, w.pool, "journal", 7, op, NULL), 0);
		tsr_op_destroy(op);
		ck_assert_msg(got == (uint64_t)records * 8, "the journal holds %llu bytes for %d "
			      "records: a record applied twice or lost",
			      (unsigned long long)got, records);
		for (int i = 0; i < records; i++) {
			snprintf(rec, sizeof(rec), "<%06d>", i);
			ck_assert_msg(memcmp(all + 8 * i, rec, 8) == 0, "record %d is %.8s", i,
				      all + 8 * i);
		}
		free(all);
	}
	for (int i = 0; i < w.n; i++)
		tsr_op_destroy(w.ops[i]);
	free(w.ops);
	free(w.acked);
	free(w.data);
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}


/* What osd.i's copy of pgid knows committed and holds: its `pg dump`
 * "head" and "committed" equal (and not 0'0), or 0. */
static int
committed_all(struct tc_cluster *c, int i, const char *pgid, char *head, size_t len)
{
	char want[64], *out = NULL;
	const char *p, *h, *k;
	int ok = 0;

	snprintf(want, sizeof(want), "{\"pgid\": \"%s\", ", pgid);
	head[0] = '\0';
	if (tc_osd_asok(c, (size_t)i, "pg dump", &out) == 0 && (p = strstr(out, want)) != NULL &&
	    (h = strstr(p, "\"head\": \"")) != NULL && (k = strstr(p, "\"committed\": \"")) != NULL) {
		h += 9;
		k += 14;
		size_t hn = strcspn(h, "\""), kn = strcspn(k, "\"");
		snprintf(head, len, "%.*s", (int)hn, h);
		ok = hn == kn && strncmp(h, k, hn) == 0 && strncmp(h, "0'0", hn) != 0;
	}
	free(out);
	return ok;
}

/* Below min_size.  Pool "one" (one PG, 3 copies, min_size 2) holds 40
 * objects; its primary and one replica are killed and marked down (noout):
 * the last copy peers alone ("peered", not active), every object and
 * attribute reads back from it, and a write waits: it completes only when
 * the two OSDs return.  The lone copy is a replica, so it serves reads as
 * far as the primary told it writes were committed (the primary's tick).
 * That copy was away first: out while the objects were rewritten on the
 * fourth OSD, then back in and recovered, the fourth's copy removed.  It
 * took part in the last start, so peering it alone must not wait for the
 * interval it missed, whose OSDs are dead or hold nothing now. */
START_TEST(min_size)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, primary, survivor = -1, nobj = 40;
	struct tsr_client *k;
	char pgid[32], *out = NULL, ids[32] = "", head[64], head0[64];
	unsigned replicas;
	int64_t pool;
	struct waitall w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1, 0 };
	struct tsr_op *wop;
	uint64_t t0;

	primary = one_pg_of_objects(&c, running, nobj, 'a', &k, &pool, pgid, &replicas);
	for (int i = 3; i >= 0; i--)
		if (replicas & 1u << i)
			survivor = i;
	ck_assert_int_eq(tc_cli(&c, NULL, "osd out %d", survivor), 0);
	await_clean(&c, running, 65, "the survivor-to-be out");
	put_lettered(k, pool, nobj, 'A');
	ck_assert_int_eq(tc_cli(&c, NULL, "osd in %d", survivor), 0);
	await_clean(&c, running, 65, "the survivor-to-be back in");
	await_copies(&c, running, 65 * 3, "the survivor-to-be back in");
	ck_assert_int_eq(copies_of(&c, pgid, &replicas), primary);
	ck_assert_msg(replicas & 1u << survivor, "osd.%d is not a replica again (0x%x)",
		      survivor, replicas);
	/* the replica learns how far the writes are committed within a
	 * tick of the primary's (about a second) */
	ck_assert_msg(committed_all(&c, primary, pgid, head0, sizeof(head0)),
		      "the primary osd.%d does not know its writes (head %s) committed", primary,
		      head0);
	t0 = tc_now_ms();
	while (!committed_all(&c, survivor, pgid, head, sizeof(head)) && tc_now_ms() - t0 < 15000)
		tc_sleep_ms(100);
	ck_assert_msg(committed_all(&c, survivor, pgid, head, sizeof(head)),
		      "osd.%d never learned that its writes (head %s) are committed", survivor,
		      head);
	ck_assert_msg(strcmp(head, head0) == 0, "osd.%d's head %s, the primary's %s", survivor,
		      head, head0);
	fprintf(stderr, "min_size: osd.%d knew its writes to %s committed after %.1f s\n",
		survivor, head, (double)(tc_now_ms() - t0) / 1e3);

	ck_assert_int_eq(tc_cli(&c, NULL, "osd set noout"), 0);
	for (int i = 0; i < 4; i++)
		if ((replicas | 1u << primary) & 1u << i && i != survivor) {
			ck_assert_int_eq(tc_osd_signal(&c, (size_t)i, SIGKILL) & 0x7f, SIGKILL);
			running[i] = 0;
			snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%d",
				 ids[0] ? "," : "", i);
		}
	ck_assert_int_eq(tc_cli(&c, NULL, "osd down %s", ids), 0);
	await_pg_state(&c, pgid, "peered", "two of three copies down");

	/* reads of what is there */
	t0 = tc_now_ms();
	check_lettered(k, pool, nobj, 'A', "below min_size");
	fprintf(stderr, "min_size: %d objects read from osd.%d alone in %.1f s\n", nobj,
		survivor, (double)(tc_now_ms() - t0) / 1e3);
	ck_assert_int_eq(tc_cli(&c, &out, "health --format json"), 0);
	assert_says(out, "PG_AVAILABILITY");
	free(out);
	out = NULL;

	/* a write waits for the copies */
	{
		char buf[3000];
		memset(buf, 'Z', sizeof(buf));
		wop = tsr_op_create();
		tsr_op_write_full(wop, buf, sizeof(buf));
		ck_assert_int_eq(tsr_op_submit(k, pool, "o-0", 3, wop, done, &w), 0);
	}
	tc_sleep_ms(2000);
	pthread_mutex_lock(&w.mu);
	ck_assert_msg(w.left == 1, "a write below min_size answered (%s)",
		      w.bad ? "an error" : "done");
	pthread_mutex_unlock(&w.mu);
	for (int i = 0; i < 4; i++)
		if (!running[i]) {
			ck_assert_int_eq(tc_osd_start(&c, (size_t)i), 0);
			running[i] = 1;
		}
	t0 = tc_now_ms();
	pthread_mutex_lock(&w.mu);
	while (w.left && tc_now_ms() - t0 < 25000) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&w.cv, &w.mu, &ts);
	}
	ck_assert_msg(w.left == 0 && w.bad == 0, "the write that waited: %s",
		      w.left ? "never answered" : tsr_op_why(wop));
	pthread_mutex_unlock(&w.mu);
	fprintf(stderr, "min_size: the write waited, and completed %.1f s after the OSDs "
		"restarted\n", (double)(tc_now_ms() - t0) / 1e3);
	tsr_op_destroy(wop);
	{
		struct tsr_op *op = tsr_op_create();
		char buf[5000];
		uint64_t got = 0;
		int rrc = -1;
		tsr_op_read(op, 0, sizeof(buf), buf, &got, &rrc);
		ck_assert_int_eq(tsr_op_run(k, pool, "o-0", 3, op, NULL), 0);
		ck_assert_msg(rrc == 0 && got == 3000 && buf[0] == 'Z' && buf[2999] == 'Z',
			      "o-0 after the write that waited: %llu bytes",
			      (unsigned long long)got);
		tsr_op_destroy(op);
	}
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_cli(&c, NULL, "osd unset noout"), 0);
	await_clean(&c, running, 65, "the two OSDs back");
	deep_scrub_clean(&c, pgid, nobj);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* ---- Thrash: a model-checked workload while OSDs die, return, go out and in ---- */

#define TH_WORKERS 4
#define TH_OBJS 8                /* per worker: no two workers share one */
#define TH_MAX (48u << 10)       /* an object's largest size */
#define TH_NX 3                  /* attributes user.x0 .. user.x2 */
#define TH_NK 8                  /* omap keys k0 .. k7 */

struct tobj {
	int exists;
	uint8_t data[TH_MAX];
	size_t size;
	int hasx[TH_NX], hask[TH_NK];
	char xval[TH_NX][16], kval[TH_NK][24];
	size_t xlen[TH_NX], klen[TH_NK];
	struct tsr_objver ver;       /* as the last acknowledged change left it */
};

struct tworker {
	struct tsr_client *k;
	int64_t pool;
	int id;
	uint64_t rng;
	volatile int *stop;
	pthread_t th;
	struct tobj obj[TH_OBJS];
	uint64_t ops, checks, guards_failed, worst_ms; /* (worst: of any op) */
	char fail[768];
};

static uint32_t
trnd(struct tworker *w, uint32_t n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return n ? (uint32_t)(w->rng % n) : 0;
}

static void
tname(const struct tworker *w, int j, char *name, size_t len)
{
	snprintf(name, len, "t%d-%d", w->id, j);
}

/* The object as read (data, attributes, omap, version) against the model:
 * "" when they agree, else what differs in msg. */
static void
tcheck(struct tworker *w, int j, char *msg, size_t len)
{
	struct tobj *o = &w->obj[j];
	static __thread uint8_t buf[TH_MAX + 1];
	struct tsr_kvs xs = { 0 }, ks = { 0 };
	struct tsr_objver ver = { 0, 0 };
	uint64_t got = 0;
	int rrc = -1, xrc = -1, krc = -1, rc, nx = 0;
	char name[32];
	struct tsr_op *op = tsr_op_create();

	msg[0] = '\0';
	tname(w, j, name, sizeof(name));
	tsr_op_read(op, 0, sizeof(buf), buf, &got, &rrc);
	tsr_op_getxattrs(op, &xs, &xrc);
	tsr_op_omap_get_range(op, NULL, 0, NULL, 0, 64, &ks, &krc);
	{
		uint64_t t0 = tc_now_ms();
		rc = tsr_op_run(w->k, w->pool, name, strlen(name), op, &ver);
		if (tc_now_ms() - t0 > w->worst_ms)
			w->worst_ms = tc_now_ms() - t0;
	}
	w->checks++;
	if (!o->exists) {
		if (rc != -ENOENT)
			snprintf(msg, len, "%s: removed, but a read answers %d (%llu bytes)", name, rc,
				 (unsigned long long)got);
		goto out;
	}
	if (rc != 0) {
		snprintf(msg, len, "%s: read failed: %d (%s)", name, rc, tsr_op_why(op));
		goto out;
	}
	if (got != o->size || memcmp(buf, o->data, o->size) != 0) {
		size_t at = 0;
		while (at < got && at < o->size && buf[at] == o->data[at])
			at++;
		snprintf(msg, len, "%s: %llu bytes read, %zu acknowledged; first difference at "
			 "byte %zu", name, (unsigned long long)got, o->size, at);
		goto out;
	}
	for (size_t i = 0; i < xs.n; i++) {
		const struct tsr_kv *x = &xs.kv[i];
		int n;
		if (x->key_len != 7 || memcmp(x->key, "user.x", 6) != 0)
			continue;
		n = ((const char *)x->key)[6] - '0';
		if (n < 0 || n >= TH_NX || !o->hasx[n] || x->val_len != o->xlen[n] ||
		    memcmp(x->val, o->xval[n], o->xlen[n]) != 0) {
			snprintf(msg, len, "%s: attribute %.*s is not as acknowledged", name,
				 (int)x->key_len, (const char *)x->key);
			goto out;
		}
		nx++;
	}
	for (int n = 0; n < TH_NX; n++)
		nx -= o->hasx[n];
	if (nx != 0) {
		snprintf(msg, len, "%s: %d attributes more (or, negative, fewer) than acknowledged",
			 name, nx);
		goto out;
	}
	{
		size_t want = 0, m = 0;
		for (int n = 0; n < TH_NK; n++)
			want += (size_t)o->hask[n];
		for (int n = 0; n < TH_NK && m <= ks.n; n++) {
			if (!o->hask[n])
				continue;
			const struct tsr_kv *x = m < ks.n ? &ks.kv[m] : NULL;
			char key[4];
			snprintf(key, sizeof(key), "k%d", n);
			if (x == NULL || x->key_len != 2 || memcmp(x->key, key, 2) != 0 ||
			    x->val_len != o->klen[n] || memcmp(x->val, o->kval[n], o->klen[n]) != 0) {
				snprintf(msg, len, "%s: omap key %s is not as acknowledged", name, key);
				goto out;
			}
			m++;
		}
		if (ks.n != want) {
			snprintf(msg, len, "%s: %zu omap keys, %zu acknowledged", name, ks.n, want);
			goto out;
		}
	}
	if (ver.epoch != o->ver.epoch || ver.ver != o->ver.ver)
		snprintf(msg, len, "%s: version %llu'%llu, the last change made %llu'%llu", name,
			 (unsigned long long)ver.epoch, (unsigned long long)ver.ver,
			 (unsigned long long)o->ver.epoch, (unsigned long long)o->ver.ver);
out:
	tsr_kvs_free(&xs);
	tsr_kvs_free(&ks);
	tsr_op_destroy(op);
}

static void
tfill(struct tworker *w, uint8_t *p, size_t n)
{
	uint8_t b = (uint8_t)trnd(w, 256), step = (uint8_t)(1 + trnd(w, 7));
	for (size_t i = 0; i < n; i++, b = (uint8_t)(b + step))
		p[i] = b;
}

/* One random change to object j, applied to the model when acknowledged;
 * 0, or -1 with w->fail set. */
static int
tchange(struct tworker *w, int j)
{
	struct tobj *o = &w->obj[j], n = *o;   /* n: the model if it applies */
	static __thread uint8_t buf[TH_MAX];
	struct tsr_op *op = tsr_op_create();
	struct tsr_objver ver = { 0, 0 };
	int kind = (int)trnd(w, 12), expect = 0, rc;
	const char *what = "";
	char name[32];
	uint64_t t0 = tc_now_ms();

	tname(w, j, name, sizeof(name));
	if (!o->exists && (kind == 4 || kind == 5 || kind == 7 || kind == 9 || kind == 11))
		kind = 1;                    /* (what needs the object: make it) */
	switch (kind) {
	case 0: {                            /* write somewhere, maybe past the end */
		size_t off = trnd(w, (uint32_t)(o->size + 4096)), l = 1 + trnd(w, 16384);
		if (off > TH_MAX - 1)
			off = TH_MAX - 1;
		if (off + l > TH_MAX)
			l = TH_MAX - off;
		tfill(w, buf, l);
		tsr_op_write(op, off, buf, l);
		if (!o->exists)
			n.size = 0;
		if (off > n.size)
			memset(n.data + n.size, 0, off - n.size);
		memcpy(n.data + off, buf, l);
		if (off + l > n.size)
			n.size = off + l;
		n.exists = 1;
		what = "write";
		break;
	}
	case 1: {                            /* write whole */
		size_t l = trnd(w, 32768);
		tfill(w, buf, l);
		tsr_op_write_full(op, buf, l);
		if (!o->exists)
			memset(n.hasx, 0, sizeof(n.hasx)), memset(n.hask, 0, sizeof(n.hask));
		memcpy(n.data, buf, l);
		n.size = l;
		n.exists = 1;
		what = "write_full";
		break;
	}
	case 2: {                            /* append */
		size_t l = 1 + trnd(w, 8192), at = o->exists ? o->size : 0;
		if (at + l > TH_MAX) {
			l = 0;
			tsr_op_truncate(op, 0);  /* full: start again */
			n.size = 0;
			what = "truncate to 0";
		} else {
			tfill(w, buf, l);
			tsr_op_append(op, buf, l);
			memcpy(n.data + at, buf, l);
			n.size = at + l;
			what = "append";
		}
		if (!o->exists)
			memset(n.hasx, 0, sizeof(n.hasx)), memset(n.hask, 0, sizeof(n.hask));
		n.exists = 1;
		break;
	}
	case 3: {                            /* truncate, shorter or longer */
		size_t to = trnd(w, (uint32_t)((o->exists ? o->size : 0) + 8192));
		if (to > TH_MAX)
			to = TH_MAX;
		tsr_op_truncate(op, to);
		if (!o->exists) {
			n.size = 0;
			memset(n.hasx, 0, sizeof(n.hasx));
			memset(n.hask, 0, sizeof(n.hask));
		}
		if (to > n.size)
			memset(n.data + n.size, 0, to - n.size);
		n.size = to;
		n.exists = 1;
		what = "truncate";
		break;
	}
	case 4: {                            /* zero a range inside */
		size_t off = trnd(w, (uint32_t)o->size + 1), l = trnd(w, 8192);
		tsr_op_zero(op, off, l);
		if (off < n.size)
			memset(n.data + off, 0, l > n.size - off ? n.size - off : l);
		what = "zero";
		break;
	}
	case 5:                              /* remove */
		tsr_op_remove(op);
		memset(&n, 0, sizeof(n));
		what = "remove";
		break;
	case 6: {                            /* set an attribute */
		int x = (int)trnd(w, TH_NX);
		char key[8];
		snprintf(key, sizeof(key), "user.x%d", x);
		n.xlen[x] = (size_t)snprintf(n.xval[x], sizeof(n.xval[x]), "v%u", trnd(w, 1000000));
		tsr_op_setxattr(op, key, n.xval[x], n.xlen[x]);
		if (!o->exists) {
			n.size = 0;
			memset(n.hasx, 0, sizeof(n.hasx));
			memset(n.hask, 0, sizeof(n.hask));
		}
		n.hasx[x] = 1;
		n.exists = 1;
		what = "setxattr";
		break;
	}
	case 7: {                            /* remove an attribute it has */
		int x = (int)trnd(w, TH_NX);
		char key[8];
		if (!o->hasx[x]) {
			tsr_op_destroy(op);
			return 0;
		}
		snprintf(key, sizeof(key), "user.x%d", x);
		tsr_op_rmxattr(op, key);
		n.hasx[x] = 0;
		what = "rmxattr";
		break;
	}
	case 8: {                            /* omap: set one to three keys */
		const void *keys[TH_NK], *vals[TH_NK];
		size_t kl[TH_NK], vl[TH_NK], m = 0;
		static __thread char kb[TH_NK][4];
		uint32_t pick = 1u << trnd(w, TH_NK) | 1u << trnd(w, TH_NK) | 1u << trnd(w, TH_NK);
		for (int x = 0; x < TH_NK; x++) {    /* (in key order, as omap wants) */
			if (!(pick & 1u << x))
				continue;
			snprintf(kb[m], sizeof(kb[m]), "k%d", x);
			n.klen[x] = (size_t)snprintf(n.kval[x], sizeof(n.kval[x]), "val-%u",
						     trnd(w, 1u << 30));
			n.hask[x] = 1;
			keys[m] = kb[m];
			kl[m] = 2;
			vals[m] = n.kval[x];
			vl[m] = n.klen[x];
			m++;
		}
		tsr_op_omap_set(op, keys, kl, vals, vl, m);
		n.exists = 1;
		what = "omap_set";
		break;
	}
	case 9: {                            /* omap: remove keys (some absent) */
		const void *keys[TH_NK];
		size_t kl[TH_NK], m = 0;
		static __thread char kb[TH_NK][4];
		uint32_t pick = 1u << trnd(w, TH_NK) | 1u << trnd(w, TH_NK);
		for (int x = 0; x < TH_NK; x++) {
			if (!(pick & 1u << x))
				continue;
			snprintf(kb[m], sizeof(kb[m]), "k%d", x);
			keys[m] = kb[m];
			kl[m] = 2;
			n.hask[x] = 0;
			m++;
		}
		tsr_op_omap_rm(op, keys, kl, m);
		what = "omap_rm";
		break;
	}
	case 10: {                           /* guarded on an attribute */
		int wrong = trnd(w, 3) == 0;
		size_t off = trnd(w, 4096), l = 1 + trnd(w, 4096);
		const void *key = "k0";
		size_t kl = 2;
		if (!o->exists || !o->hasx[0]) {
			tsr_op_destroy(op);
			op = tsr_op_create();
			n = *o;
			n.xlen[0] = (size_t)snprintf(n.xval[0], sizeof(n.xval[0]), "g0");
			tsr_op_setxattr(op, "user.x0", n.xval[0], n.xlen[0]);
			if (!o->exists) {
				memset(&n, 0, sizeof(n));
				n.xlen[0] = 2;
				memcpy(n.xval[0], "g0", 2);
			}
			n.hasx[0] = 1;
			n.exists = 1;
			what = "setxattr (for a guard)";
			break;
		}
		tsr_op_cmpxattr(op, "user.x0", TSR_CMP_EQ, wrong ? "nope" : o->xval[0],
				wrong ? 4 : o->xlen[0]);
		tfill(w, buf, l);
		tsr_op_write(op, off, buf, l);
		n.xlen[1] = (size_t)snprintf(n.xval[1], sizeof(n.xval[1]), "c%u", trnd(w, 99999));
		tsr_op_setxattr(op, "user.x1", n.xval[1], n.xlen[1]);
		n.klen[0] = (size_t)snprintf(n.kval[0], sizeof(n.kval[0]), "guarded");
		tsr_op_omap_set(op, &key, &kl, (const void *const *)&(const void *){ n.kval[0] },
				&n.klen[0], 1);
		if (off > n.size)
			memset(n.data + n.size, 0, off - n.size);
		memcpy(n.data + off, buf, l);
		if (off + l > n.size)
			n.size = off + l;
		n.hasx[1] = 1;
		n.hask[0] = 1;
		expect = wrong ? -ECANCELED : 0;
		what = wrong ? "compound, its attribute guard failing" : "compound, guarded";
		break;
	}
	case 11: {                           /* guarded on the version */
		int wrong = trnd(w, 4) == 0;
		size_t l = 1 + trnd(w, 2048);
		if (o->size + l > TH_MAX)
			l = 0;
		tsr_op_assert_version(op, o->ver.epoch, o->ver.ver + (wrong ? 1 : 0));
		tfill(w, buf, l);
		tsr_op_append(op, buf, l);
		memcpy(n.data + n.size, buf, l);
		n.size += l;
		tsr_op_rmxattr(op, "user.x2");   /* (absent: fine or not? below) */
		n.hasx[2] = 0;
		expect = wrong ? -ECANCELED : 0;
		if (!o->hasx[2] && !wrong)
			expect = -ENODATA;
		what = wrong ? "compound, its version guard failing" : "compound, on a version";
		break;
	}
	}
	rc = tsr_op_run(w->k, w->pool, name, strlen(name), op, &ver);
	{
		uint64_t ms = tc_now_ms() - t0;
		if (ms > w->worst_ms)
			w->worst_ms = ms;
	}
	w->ops++;
	if (rc != expect) {
		snprintf(w->fail, sizeof(w->fail), "%s: %s answered %d (%s), expected %d", name,
			 what, rc, tsr_op_why(op), expect);
		tsr_op_destroy(op);
		return -1;
	}
	tsr_op_destroy(op);
	if (rc == 0) {
		n.ver = n.exists ? ver : (struct tsr_objver){ 0, 0 };
		*o = n;
	} else {
		w->guards_failed++;
	}
	return 0;
}

static void *
tworker_run(void *arg)
{
	struct tworker *w = arg;
	char msg[512];

	while (!*w->stop && !w->fail[0]) {
		int j = (int)trnd(w, TH_OBJS);
		if (tchange(w, j) < 0)
			break;
		if (trnd(w, 3) == 0) {
			tcheck(w, j, msg, sizeof(msg));
			if (msg[0])
				snprintf(w->fail, sizeof(w->fail), "%s", msg);
		}
	}
	return NULL;
}

/* Thrash.  Four workers each change 8 objects of pool "thrash" (16 PGs,
 * 3 copies, min_size 2) at random — writes anywhere, whole writes,
 * appends, truncates, zeroes, removes, attributes, omap keys, compounds
 * guarded on an attribute or the version, some meant to fail — and check
 * each object against a model of what was acknowledged, while OSDs are
 * SIGKILLed and restarted and marked out and in at random, never more
 * than two (size - 1) unavailable at once; logs of 200 entries make a
 * copy that was away long backfilled, one backfill at a time per OSD,
 * and recovery pushes go at 16 MiB/s.  Every answer must be the one
 * the model expects, every read what the model holds.  Then everything
 * returns: every PG active+clean with three copies on the stores, every
 * object as the model says, and a deep scrub of each PG finds its copies
 * alike.  TSR_THRASH_SECONDS (default 40) runs longer. */
START_TEST(thrash)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, out[4] = { 0 }, kills = 0, outs = 0;
	volatile int stop = 0;
	struct tworker *w = calloc(TH_WORKERS, sizeof(*w));
	struct tsr_client *k;
	const char *env = getenv("TSR_THRASH_SECONDS");
	uint64_t seconds = env && atoi(env) > 0 ? (uint64_t)atoi(env) : 40, t0, seed;
	uint64_t rng;
	char msg[512], *o = NULL;
	int64_t pool;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"500ms\"; "
				   "osd_heartbeat_interval = \"200ms\"; "
				   "osd_heartbeat_grace = \"1500ms\"; "
				   "osd_pg_log_max = 200; osd_recovery_max_bytes = \"16M\"; "
				   "client_op_timeout = \"90s\";"), 0);
	four_osds_and_a_pool(&c);
	ck_assert_int_eq(tc_cli(&c, NULL, "pool create thrash 16 --size 3 --min-size 2"), 0);
	await_clean(&c, running, 80, "a new pool");
	k = client_of(&c);
	pool = pool_of(k, "thrash");
	seed = getenv("TSR_THRASH_SEED") ? strtoull(getenv("TSR_THRASH_SEED"), NULL, 10)
					 : (uint64_t)time(NULL);
	rng = seed * 2654435761u + 1;
	fprintf(stderr, "thrash: seed %llu (TSR_THRASH_SEED), %llu s\n",
		(unsigned long long)seed, (unsigned long long)seconds);
	for (int i = 0; i < TH_WORKERS; i++) {
		w[i].k = k;
		w[i].pool = pool;
		w[i].id = i;
		w[i].rng = rng + (uint64_t)i * 7919 + 1;
		w[i].stop = &stop;
		ck_assert_int_eq(pthread_create(&w[i].th, NULL, tworker_run, &w[i]), 0);
	}

	t0 = tc_now_ms();
	while (tc_now_ms() - t0 < seconds * 1000) {
		int gone = 0, failed = 0, act, i;
		for (int x = 0; x < TH_WORKERS; x++)
			failed |= w[x].fail[0] != 0;
		if (failed)
			break;
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		tc_sleep_ms(1000 + (uint32_t)(rng % 2500));
		for (int x = 0; x < 4; x++)
			gone += !running[x] || out[x];
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		/* kill (45%) or out (20%) one that serves, unless two are gone
		 * already; else bring one back */
		act = (int)(rng % 100);
		act = gone >= 2 ? 2 : act < 45 ? 0 : act < 65 ? 1 : 2;
		i = (int)((rng >> 16) % 4);
		for (int x = 0; x < 4 && act < 2 && !(running[i] && !out[i]); x++)
			i = (i + 1) % 4;
		if (act == 0) {
			ck_assert_int_eq(tc_osd_signal(&c, (size_t)i, SIGKILL) & 0x7f, SIGKILL);
			running[i] = 0;
			kills++;
			fprintf(stderr, "thrash: %.1f s: osd.%d killed\n",
				(double)(tc_now_ms() - t0) / 1e3, i);
		} else if (act == 1) {
			ck_assert_int_eq(tc_cli(&c, NULL, "osd out %d", i), 0);
			out[i] = 1;
			outs++;
			fprintf(stderr, "thrash: %.1f s: osd.%d out\n",
				(double)(tc_now_ms() - t0) / 1e3, i);
		} else {
			for (int x = 0; x < 4; x++) {
				int y = (i + x) % 4;
				if (!running[y]) {
					ck_assert_int_eq(tc_osd_start(&c, (size_t)y), 0);
					running[y] = 1;
					fprintf(stderr, "thrash: %.1f s: osd.%d restarted\n",
						(double)(tc_now_ms() - t0) / 1e3, y);
					break;
				}
				if (out[y]) {
					ck_assert_int_eq(tc_cli(&c, NULL, "osd in %d", y), 0);
					out[y] = 0;
					fprintf(stderr, "thrash: %.1f s: osd.%d in\n",
						(double)(tc_now_ms() - t0) / 1e3, y);
					break;
				}
			}
		}
	}
	/* everything back (a change waiting below min_size ends then) */
	stop = 1;
	for (int i = 0; i < 4; i++) {
		if (!running[i]) {
			ck_assert_int_eq(tc_osd_start(&c, (size_t)i), 0);
			running[i] = 1;
		}
		if (out[i]) {
			ck_assert_int_eq(tc_cli(&c, NULL, "osd in %d", i), 0);
			out[i] = 0;
		}
	}
	for (int i = 0; i < TH_WORKERS; i++)
		pthread_join(w[i].th, NULL);
	{
		uint64_t ops = 0, checks = 0, guards = 0, worst = 0;
		for (int i = 0; i < TH_WORKERS; i++) {
			ops += w[i].ops;
			checks += w[i].checks;
			guards += w[i].guards_failed;
			worst = w[i].worst_ms > worst ? w[i].worst_ms : worst;
		}
		fprintf(stderr, "thrash: %llu changes (%llu refused by their guards, as meant), "
			"%llu checks in %.1f s; %d kills, %d outs; slowest operation %.1f s\n",
			(unsigned long long)ops, (unsigned long long)guards,
			(unsigned long long)checks, (double)(tc_now_ms() - t0) / 1e3, kills, outs,
			(double)worst / 1e3);
	}
	for (int i = 0; i < TH_WORKERS; i++)
		ck_assert_msg(w[i].fail[0] == 0, "thrash (seed %llu): %s", (unsigned long long)seed,
			      w[i].fail);

	for (int i = 0; i < 4; i++)
		ck_assert_msg(tc_await_osd_up(&c, i, 1, 30000) == 0, "osd.%d never came back", i);
	{
		char why[1024];
		uint64_t t1 = tc_now_ms();
		while (tc_now_ms() - t1 < 120000 && count_clean(&c, running, 0, why, sizeof(why)) < 80)
			tc_sleep_ms(500);
	}
	await_clean(&c, running, 80, "after the thrash");
	await_copies(&c, running, 80 * 3, "after the thrash");
	/* no backfill slot held or asked for once all is clean (none leaked
	 * through the kills) */
	for (int i = 0; i < 4; i++) {
		char *st = NULL;
		const char *b;
		ck_assert_int_eq(tc_osd_asok(&c, (size_t)i, "pg dump", &st), 0);
		ck_assert_ptr_nonnull(b = strstr(st, "\"backfill_slots\""));
		ck_assert_msg(tc_json_u64(strstr(b, "\"local\""), "held", 99) == 0 &&
			      tc_json_u64(strstr(b, "\"local\""), "waiting", 99) == 0 &&
			      tc_json_u64(strstr(b, "\"remote\""), "held", 99) == 0 &&
			      tc_json_u64(strstr(b, "\"remote\""), "waiting", 99) == 0,
			      "osd.%d holds backfill slots once all is clean: %.240s", i, b);
		fprintf(stderr, "thrash: osd.%d backfill slots: %.200s\n", i, b);
		free(st);
	}
	for (int i = 0; i < TH_WORKERS; i++)
		for (int j = 0; j < TH_OBJS; j++) {
			tcheck(&w[i], j, msg, sizeof(msg));
			ck_assert_msg(msg[0] == 0, "thrash (seed %llu), at the end: %s",
				      (unsigned long long)seed, msg);
		}
	for (uint32_t pg = 0; pg < 16; pg++) {
		char pgid[32];
		snprintf(pgid, sizeof(pgid), "%" PRId64 ".%x", pool, pg);
		ck_assert_int_eq(pg_cmd(&c, "deep-scrub", pgid, &o), 0);
		assert_says(o, "\"inconsistent\": 0");
		free(o);
		o = NULL;
	}
	fprintf(stderr, "thrash: %d objects as the model says; 16 PGs deep-scrubbed alike\n",
		TH_WORKERS * TH_OBJS);
	tsr_client_shutdown(k);
	free(w);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Backfills per OSD.  Pool "bf" (8 PGs, 3 copies) keeps logs of 10
 * entries and takes 144 writes, so a copy made anew is backfilled, not
 * recovered from the log; osd.0 marked out sends its copies to the other
 * three.  With osd_max_backfills 1 no OSD ever held two backfill slots,
 * as a primary or as the copy filled (its reservers' most_held), every
 * copy that moved was reserved for, every PG ends active+clean with 3
 * copies, and every object reads back. */
START_TEST(backfills_bounded)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, nobj = 48, held = 0;
	uint64_t granted_local = 0, granted_remote = 0;
	struct tsr_client *k;
	char *st = NULL, want[32];
	int64_t pool;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=8M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\"; "
				   "osd_pg_log_max = 10; osd_max_backfills = 1; "
				   "osd_backfill_window = 4;"), 0);
	four_osds_and_a_pool(&c);
	ck_assert_int_eq(tc_cli(&c, NULL, "pool create bf 8 --size 3"), 0);
	await_clean(&c, running, 72, "a pool of 8 PGs");
	k = client_of(&c);
	pool = pool_of(k, "bf");
	put_lettered(k, pool, nobj, 'A');
	put_lettered(k, pool, nobj, 'N');
	put_lettered(k, pool, nobj, 'a');
	/* the copies osd.0 holds of pool bf: each must be backfilled elsewhere */
	ck_assert_int_eq(tc_osd_asok(&c, 0, "pg dump", &st), 0);
	snprintf(want, sizeof(want), "{\"pgid\": \"%" PRId64 ".", pool);
	for (const char *p = strstr(st, want); p; p = strstr(p + 1, want))
		held++;
	free(st);
	ck_assert_int_ge(held, 1);

	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 0"), 0);
	{
		char why[1024];
		uint64_t t0 = tc_now_ms();
		while (tc_now_ms() - t0 < 60000 && count_clean(&c, running, 0, why, sizeof(why)) < 72)
			tc_sleep_ms(300);
	}
	await_clean(&c, running, 72, "osd.0 out");
	await_copies(&c, running, 72 * 3, "osd.0 out");
	for (int i = 0; i < 4; i++) {
		const char *b, *l, *r;
		st = NULL;
		ck_assert_int_eq(tc_osd_asok(&c, (size_t)i, "pg dump", &st), 0);
		ck_assert_ptr_nonnull(b = strstr(st, "\"backfill_slots\""));
		ck_assert_ptr_nonnull(l = strstr(b, "\"local\""));
		ck_assert_ptr_nonnull(r = strstr(b, "\"remote\""));
		ck_assert_msg(tc_json_u64(b, "max", 0) == 1, "osd.%d: %.200s", i, b);
		ck_assert_msg(tc_json_u64(l, "most_held", 99) <= 1 &&
			      tc_json_u64(r, "most_held", 99) <= 1,
			      "osd.%d ran more backfills at once than osd_max_backfills: %.200s", i,
			      b);
		ck_assert_msg(tc_json_u64(l, "held", 99) == 0 && tc_json_u64(r, "held", 99) == 0,
			      "osd.%d holds backfill slots after the backfills ended: %.200s", i, b);
		granted_local += tc_json_u64(l, "granted", 0);
		granted_remote += tc_json_u64(r, "granted", 0);
		free(st);
	}
	fprintf(stderr, "backfills_bounded: %d copies moved off osd.0; %llu local and %llu "
		"remote backfill slots granted, at most one held at a time on each OSD\n", held,
		(unsigned long long)granted_local, (unsigned long long)granted_remote);
	ck_assert_msg(granted_remote >= (uint64_t)held && granted_local >= (uint64_t)held,
		      "%d copies moved, but %llu local and %llu remote slots granted", held,
		      (unsigned long long)granted_local, (unsigned long long)granted_remote);
	check_lettered(k, pool, nobj, 'a', "after the backfills");
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Recovery bandwidth.  With osd_recovery_max_bytes 2M, osd.0 marked out
 * sends pool "rp"'s copies (48 objects of 256 KiB, 3 copies) elsewhere by
 * recovery: no OSD pushes more than 2 MiB a second over the recovery's
 * time (plus a tenth of a second's burst and one object), the pace made
 * pushes wait, and meanwhile a client's writes and reads of other objects
 * of the pool go on, not queued behind the pushes (each pair within 2 s,
 * peering included).  Every object reads back. */
START_TEST(recovery_paced)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 }, nobj = 48, clean = 0, probes = 0;
	const size_t osz = 256u << 10;
	const double bps = 2 * 1048576.0;
	uint64_t t0, t1, worst = 0, waits = 0;
	struct tsr_client *k;
	uint8_t *buf = malloc(osz), *got = malloc(osz);
	char why[1024];
	int64_t pool;

	ck_assert_int_eq(tc_create(&c, 1, "backend_options = \"journal_size=32M\"; "
				   "osd_beacon_interval = \"300ms\"; "
				   "osd_pg_stats_interval = \"300ms\"; "
				   "osd_recovery_max_bytes = \"2M\";"), 0);
	four_osds_and_a_pool(&c);
	ck_assert_int_eq(tc_cli(&c, NULL, "pool create rp 8 --size 3"), 0);
	await_clean(&c, running, 72, "a pool of 8 PGs");
	k = client_of(&c);
	pool = pool_of(k, "rp");
	for (int i = 0; i < nobj; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16];
		snprintf(name, sizeof(name), "r-%d", i);
		fill(buf, osz, i);
		tsr_op_write_full(op, buf, osz);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s", name,
			      tsr_op_why(op));
		tsr_op_destroy(op);
	}

	ck_assert_int_eq(tc_cli(&c, NULL, "osd out 0"), 0);
	t0 = tc_now_ms();
	/* a client's probes while it recovers: a small write, then a read */
	while (tc_now_ms() - t0 < 90000 &&
	       (clean = count_clean(&c, running, 0, why, sizeof(why))) < 72) {
		char name[16], small[512];
		struct tsr_op *op = tsr_op_create();
		uint64_t n = 0, a = tc_now_ms();
		snprintf(name, sizeof(name), "p-%d", probes % 16);
		memset(small, 'a' + probes % 26, sizeof(small));
		tsr_op_write_full(op, small, sizeof(small));
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s",
			      name, tsr_op_why(op));
		tsr_op_destroy(op);
		op = tsr_op_create();
		tsr_op_read(op, 0, sizeof(small), small, &n, NULL);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0 && n == 512,
			      "%s: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
		if (tc_now_ms() - a > worst)
			worst = tc_now_ms() - a;
		probes++;
		tc_sleep_ms(100);
	}
	t1 = tc_now_ms();
	await_clean(&c, running, 72, "osd.0 out");
	for (int i = 0; i < 4; i++) {
		char *st = NULL;
		const char *p;
		uint64_t bytes;
		ck_assert_int_eq(tc_osd_asok(&c, (size_t)i, "pg dump", &st), 0);
		ck_assert_ptr_nonnull(p = strstr(st, "\"recovery_pace\""));
		bytes = tc_json_u64(p, "bytes", 0);
		waits += tc_json_u64(p, "waits", 0);
		fprintf(stderr, "recovery_paced: osd.%d pushed %.2f MiB in %.1f s (%.2f MiB/s), %llu "
			"pushes waited\n", i, (double)bytes / 1048576.0, (double)(t1 - t0) / 1e3,
			(double)bytes / 1048576.0 / ((double)(t1 - t0) / 1e3),
			(unsigned long long)tc_json_u64(p, "waits", 0));
		ck_assert_msg((double)bytes <= bps * (double)(t1 - t0) / 1e3 + bps / 10 + 2.0 * osz,
			      "osd.%d pushed %llu bytes in %llu ms: more than 2 MiB/s", i,
			      (unsigned long long)bytes, (unsigned long long)(t1 - t0));
		free(st);
	}
	fprintf(stderr, "recovery_paced: %d probes, the slowest %.2f s\n", probes,
		(double)worst / 1e3);
	ck_assert_msg(waits > 0, "no push waited for the pace");
	/* (the first may wait for the PGs to peer again; writes do not queue
	 * behind the paced pushes) */
	ck_assert_msg(worst <= 2000, "a client's write and read took %.1f s during recovery",
		      (double)worst / 1e3);
	for (int i = 0; i < nobj; i++) {
		struct tsr_op *op = tsr_op_create();
		char name[16];
		uint64_t n = 0;
		snprintf(name, sizeof(name), "r-%d", i);
		fill(buf, osz, i);
		tsr_op_read(op, 0, osz, got, &n, NULL);
		ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0, "%s: %s", name,
			      tsr_op_why(op));
		ck_assert_msg(n == osz && memcmp(got, buf, osz) == 0, "%s read back wrong", name);
		tsr_op_destroy(op);
	}
	free(buf);
	free(got);
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* Sessions with little room (ms_send_queue 1M): eight threads write 4 MiB
 * objects, so a REPOP that the primary's I/O thread sends in place
 * (ops.c, route) often finds its session full.  It may not wait there;
 * it is left to the shard's worker, and so are that event's later sends
 * (pgrt.c, defer_send).  Every write is answered, and reads back. */
#define SQ_THREADS 8
#define SQ_OBJS 4
#define SQ_SIZE (4u << 20)

struct sq_writer {
	struct tsr_client *k;
	int64_t pool;
	int id;
	char fail[256];
};

static void
sq_fill(uint8_t *b, int id, int j)
{
	for (size_t i = 0; i < SQ_SIZE; i++)
		b[i] = (uint8_t)(i * 7 + (size_t)id * 31 + (size_t)j * 131 + (i >> 12));
}

static void *
sq_run(void *arg)
{
	struct sq_writer *w = arg;
	uint8_t *b = malloc(SQ_SIZE);

	if (b == NULL)
		snprintf(w->fail, sizeof(w->fail), "out of memory");
	for (int j = 0; b && j < SQ_OBJS && !w->fail[0]; j++) {
		char name[32];
		struct tsr_op *op = tsr_op_create();
		snprintf(name, sizeof(name), "sq%d.%d", w->id, j);
		sq_fill(b, w->id, j);
		tsr_op_write_full(op, b, SQ_SIZE);
		if (tsr_op_run(w->k, w->pool, name, strlen(name), op, NULL) < 0)
			snprintf(w->fail, sizeof(w->fail), "%s: %s", name, tsr_op_why(op));
		tsr_op_destroy(op);
	}
	free(b);
	return NULL;
}

START_TEST(full_send_queues)
{
	struct tc_cluster c;
	int running[4] = { 1, 1, 1, 1 };
	struct sq_writer w[SQ_THREADS];
	pthread_t th[SQ_THREADS];
	struct tsr_client *k;
	uint8_t *want = malloc(SQ_SIZE), *got = malloc(SQ_SIZE);
	uint64_t deferred = 0;
	int64_t pool;

	ck_assert_int_eq(tc_create(&c, 1, "ms_send_queue = \"1M\"; "
				   "osd_beacon_interval = \"300ms\";"), 0);
	four_osds_and_a_pool(&c);
	await_clean(&c, running, 64, "a new pool");
	ck_assert(want && got);
	k = client_of(&c);
	pool = pool_of(k, "data");
	for (int i = 0; i < SQ_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].k = k;
		w[i].pool = pool;
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&th[i], NULL, sq_run, &w[i]), 0);
	}
	for (int i = 0; i < SQ_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(!w[i].fail[0], "writer %d: %s", i, w[i].fail);
	}
	for (int i = 0; i < SQ_THREADS; i++)
		for (int j = 0; j < SQ_OBJS; j++) {
			char name[32];
			uint64_t n = 0;
			struct tsr_op *op = tsr_op_create();
			snprintf(name, sizeof(name), "sq%d.%d", i, j);
			sq_fill(want, i, j);
			tsr_op_read(op, 0, SQ_SIZE, got, &n, NULL);
			ck_assert_msg(tsr_op_run(k, pool, name, strlen(name), op, NULL) == 0,
				      "%s: %s", name, tsr_op_why(op));
			tsr_op_destroy(op);
			ck_assert_msg(n == SQ_SIZE && memcmp(got, want, SQ_SIZE) == 0,
				      "%s read back wrong", name);
		}
	for (size_t i = 0; i < c.nosd; i++) {
		char *out = NULL;
		ck_assert_int_eq(tc_osd_asok(&c, i, "pg dump", &out), 0);
		deferred += tc_json_u64(out, "pg_sends_deferred", 0);
		free(out);
	}
	ck_assert_msg(deferred > 0, "no send was left to a shard: the test did not "
		      "fill a session");
	free(want);
	free(got);
	tsr_client_shutdown(k);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

int
main(void)
{
	/* one test case each: CK_RUN_CASE=name runs that one */
	const struct tc_case cases[] = {
		{ "store_identity", store_identity, NULL },
		{ "boot_and_pgs", boot_and_pgs, NULL },
		{ "heartbeats_report_silent", heartbeats_report_silent, NULL },
		{ "pgs_peer", pgs_peer, TC_LONG },
		{ "objects_cli", objects_cli, TC_LONG },
		{ "client_ops", client_ops, NULL },
		{ "full_send_queues", full_send_queues, NULL },
		{ "writes_under_kill", writes_under_kill, TC_LONG },
		{ "writes_under_kill_hrw", writes_under_kill_hrw, TC_LONG },
		{ "full_stores", full_stores, TC_LONG },
		{ "store_runs_out", store_runs_out, TC_LONG },
		{ "scrub_repairs_bit_rot", scrub_repairs_bit_rot, TC_LONG },
		{ "scrub_on_schedule", scrub_on_schedule, TC_LONG },
		{ "whole_pg_down", whole_pg_down, TC_LONG },
		{ "min_size", min_size, TC_LONG },
		{ "thrash", thrash, TC_LONG },
		{ "backfills_bounded", backfills_bounded, TC_LONG },
		{ "recovery_paced", recovery_paced, TC_LONG },
		{ "growth", growth, TC_LONG },
		{ "placement_change", placement_change, NULL },
	};

	return tc_check_main("osd", cases, TC_NCASES(cases));
}
