/* cmd_cluster.c — `tessera status`, `health`, `osd ...`, `pool ...`,
 * `mds stat`, `mds fail`, `fs set`, `mon stat`: commands the monitors
 * answer.
 *
 * The words of the command go to the monitor cluster as they are (monc.h
 * finds a monitor that can answer); the tool's own options (--conf,
 * --format, --timeout) are taken out first.  Reads print a summary, or the
 * monitors' JSON with --format json; changes print what changed.
 *
 * The tool's runtime for it: a messenger that only connects, and an event
 * loop on a thread of its own running the monitor client, which the main
 * thread waits on (tsr_monc_command).
 */
#include "cli.h"
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/monc.h"
#include "mon/monmsg.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define DEFAULT_CONF "/etc/tessera/tessera.conf"

struct copts {
	char w0[32];            /* the first word of a two-word command */
	const char *conf;
	const char *who;        /* --name: whose key we use (client.admin) */
	bool json;
	uint64_t timeout_ms;
	char *words[TSR_MONMSG_MAX_ARGS];
	int nwords;
};

static int
parse(const char *name, int argc, char **argv, int nfixed, struct copts *o)
{
	const char *why;

	memset(o, 0, sizeof(*o));
	o->conf = getenv("TESSERA_CONF") ? getenv("TESSERA_CONF") : DEFAULT_CONF;
	o->timeout_ms = 15000;
	o->who = getenv("TESSERA_NAME") ? getenv("TESSERA_NAME") : "client.admin";
	/* the command's own words first ("osd" "add"), argv[0] is the last */
	snprintf(o->w0, sizeof(o->w0), "%.*s", (int)strcspn(name, " "), name);
	if (nfixed == 2)
		o->words[o->nwords++] = o->w0;
	o->words[o->nwords++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--conf") == 0 || strcmp(a, "-c") == 0) {
			if (v == NULL)
				return cli_usage_err(name, NULL, "%s needs a file", a);
			o->conf = v;
			i++;
		} else if (strncmp(a, "--conf=", 7) == 0) {
			o->conf = a + 7;
		} else if (strcmp(a, "--name") == 0 || strcmp(a, "-n") == 0) {
			if (v == NULL)
				return cli_usage_err(name, NULL, "%s needs an entity name", a);
			o->who = v;
			i++;
		} else if (strcmp(a, "--format") == 0) {
			if (v == NULL || cli_parse_format(v, &o->json) < 0)
				return CLI_USAGE;
			i++;
		} else if (strcmp(a, "--timeout") == 0) {
			char *end;
			double s = v ? strtod(v, &end) : 0;
			if (v == NULL || *end || !(s > 0) || s > 3600)
				return cli_usage_err(name, NULL, "--timeout takes seconds "
						     "in (0, 3600]");
			o->timeout_ms = (uint64_t)(s * 1000);
			i++;
		} else if (o->nwords < TSR_MONMSG_MAX_ARGS) {
			o->words[o->nwords++] = argv[i];
		} else {
			return cli_usage_err(name, NULL, "too many arguments (a command "
					     "has at most %d words)", TSR_MONMSG_MAX_ARGS);
		}
	}
	/* the monitors refuse a longer word (monmsg.h); say so here rather
	 * than send what they cannot read */
	for (int i = 0; i < o->nwords; i++) {
		size_t l = strlen(o->words[i]);
		if (l >= TSR_MONMSG_MAX_ARG)
			return cli_usage_err(name, NULL, "'%.20s...' is %zu bytes long; "
					     "a word may have at most %d", o->words[i],
					     l, TSR_MONMSG_MAX_ARG - 1);
	}
	/* from --name or $TESSERA_NAME */
	if (!tsr_auth_name_valid(o->who, &why))
		return cli_usage_err(name, NULL, "name '%s': %s", o->who, why);
	return 0;
}

/* ---- Plain output: a few fields of the JSON, found by name -------------*/

/* The text after "key": in json (NULL if absent); good enough for the
 * monitors' own flat output, which this only summarizes. */
static const char *
jfind(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	return p ? p + strlen(pat) : NULL;
}

static void
jprint(const char *label, const char *json, const char *key)
{
	const char *v = jfind(json, key);
	size_t n = 0;

	if (v == NULL)
		return;
	if (*v == '"') {
		v++;
		while (v[n] && v[n] != '"')
			n++;
	} else {
		while (v[n] && v[n] != ',' && v[n] != '}')
			n++;
	}
	printf("%s%.*s", label, (int)n, v);
}

/* A JSON string at p (after its opening quote) printed as text; the end
 * of the string.  The monitors escape only quotes, backslashes and
 * control bytes (\uXXXX), which print as they were. */
static const char *
print_jstr(const char *p)
{
	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1] == 'u' && strlen(p) >= 6) {
			putchar((int)strtol((char[]){ p[4], p[5], 0 }, NULL, 16));
			p += 5;
		} else if (*p == '\\' && p[1]) {
			putchar(*++p);
		} else {
			putchar(*p);
		}
	}
	return p;
}

/* The JSON string at p (its opening quote) as text (malloc'd), or NULL;
 * unescaped as print_jstr does. */
static char *
jstr_dup(const char *p)
{
	char *s, *q;

	if (p == NULL || *p != '"' || (s = q = malloc(strlen(p))) == NULL)
		return NULL;
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1] == 'u' && strlen(p) >= 6) {
			*q++ = (char)strtol((char[]){ p[4], p[5], 0 }, NULL, 16);
			p += 5;
		} else if (*p == '\\' && p[1]) {
			*q++ = *++p;
		} else {
			*q++ = *p;
		}
	}
	*q = '\0';
	return s;
}

/* The health checks of a `health` or `status` answer: "  CODE: summary",
 * and with detail each detail line under it. */
static void
print_checks(const char *text, int detail)
{
	const char *c = jfind(text, "checks"), *end;

	if (c == NULL)
		return;
	end = jfind(text, "reasons");
	while ((c = strstr(c, "{\"code\": \"")) != NULL && (!end || c < end)) {
		const char *s = jfind(c, "summary"), *d = jfind(c, "detail");
		printf("  %.*s: ", (int)strcspn(c + 10, "\""), c + 10);
		if (s && *s == '"')
			print_jstr(s + 1);
		printf("\n");
		for (const char *p = d ? d + 1 : NULL; detail && p && *p == '"';) {
			printf("      ");
			p = print_jstr(p + 1);
			printf("\n");
			p += *p == '"';
			p += strspn(p, ", ");
		}
		c += 10;
	}
}

/* The PG summary of status and pg stat: the counts by state, then the
 * degraded objects and the recovery's progress. */
static void
print_pgs(const char *pg)
{
	const char *end = strstr(pg, "\"recovery\"");

	jprint("pgs: ", pg, "total");
	printf(":");
	for (const char *p = strstr(pg, "{\"state\": "); p && (!end || p < end);
	     p = strstr(p + 1, "{\"state\": ")) {
		jprint(" ", p, "count");
		jprint(" ", p, "state");
		printf(";");
	}
	printf("\n");
	const char *d = jfind(pg, "degraded_objects");
	if (d && strtoull(d, NULL, 10) > 0) {
		jprint("recovery: ", pg, "degraded_objects");
		printf(" object copies degraded");
		const char *r = end ? jfind(end, "objects_per_s") : NULL;
		const char *eta = end ? jfind(end, "eta_s") : NULL;
		if (r && strtod(r, NULL) > 0) {
			printf(", %.1f/s", strtod(r, NULL));
			if (eta && strtod(eta, NULL) >= 0)
				printf(", about %.0f s left", strtod(eta, NULL));
		}
		printf("\n");
	}
}

static void
print_plain(const struct copts *o, const char *text)
{
	const char *w0 = o->words[0], *w1 = o->nwords > 1 ? o->words[1] : "";

	if (strcmp(w0, "status") == 0 || strcmp(w0, "health") == 0) {
		jprint("health: ", text, "health");
		printf("\n");
		print_checks(text, w0[0] == 'h' && strcmp(w1, "detail") == 0);
		if (w0[0] == 'h')
			return;
		jprint("monitors: leader ", text, "leader");
		jprint(", term ", text, "term");
		jprint(", committed ", text, "committed");
		printf("\n");
		const char *om = jfind(text, "osdmap");
		if (om) {
			jprint("osdmap: epoch ", om, "epoch");
			jprint(", ", om, "osds");
			jprint(" osds, ", om, "up");
			jprint(" up, ", om, "in");
			jprint(" in; ", om, "pools");
			printf(" pools\n");
		}
		const char *pg = jfind(text, "pgs");
		if (pg)
			print_pgs(pg);
		const char *mm = jfind(text, "mdsmap");
		if (mm) {
			jprint("mdsmap: epoch ", mm, "epoch");
			jprint(", ", mm, "active");
			jprint("/", mm, "max_mds");
			jprint(" ranks active, ", mm, "standby");
			printf(" standby\n");
		}
		return;
	}
	if (strcmp(w0, "mon") == 0 && strcmp(w1, "stat") == 0) {
		jprint("leader: mon.", text, "leader");
		jprint(", term ", text, "term");
		jprint(", committed ", text, "committed");
		printf("\n");
		for (const char *p = jfind(text, "name"); p; p = jfind(p, "name")) {
			jprint("  mon.", p - 8, "name");
			jprint(" ", p - 8, "addr");
			jprint(" in_quorum=", p - 8, "in_quorum");
			printf("\n");
		}
		return;
	}
	if (strcmp(w0, "pool") == 0 && strcmp(w1, "ls") == 0) {
		for (const char *p = jfind(text, "id"); p; p = jfind(p, "id")) {
			jprint("", p - 6, "name");
			jprint(" (id ", p - 6, "id");
			jprint("): pg_num ", p - 6, "pg_num");
			jprint(", size ", p - 6, "size");
			jprint(", min_size ", p - 6, "min_size");
			jprint(", rule ", p - 6, "rule");
			jprint(", redundancy ", p - 6, "redundancy");
			const char *ro = jfind(p - 6, "redundancy_opts");
			if (ro && ro[1] != '"')
				jprint(" ", p - 6, "redundancy_opts");
			printf("\n");
		}
		return;
	}
	if (strcmp(w0, "osd") == 0 && strcmp(w1, "dump") == 0) {
		const char *pt = jfind(text, "pg_temp");
		jprint("osdmap epoch ", text, "osdmap_epoch");
		printf("\n");
		for (const char *p = strstr(text, "{\"id\": "); p && (!pt || p < pt);
		     p = strstr(p + 1, "{\"id\": ")) {
			jprint("osd.", p, "id");
			jprint(" up=", p, "up");
			jprint(" in=", p, "in");
			jprint(" up_from=", p, "up_from");
			jprint(" up_thru=", p, "up_thru");
			jprint(" ", p, "addr");
			printf("\n");
		}
		for (const char *p = pt ? strstr(pt, "{\"pgid\": ") : NULL; p;
		     p = strstr(p + 1, "{\"pgid\": ")) {
			const char *ids = jfind(p, "osds");
			jprint("pg_temp ", p, "pgid");
			printf(" %.*s\n", ids ? (int)(strcspn(ids, "]") + 1) : 0, ids ? ids : "");
		}
		for (const char *p = strstr(text, "{\"client\": "); p;
		     p = strstr(p + 1, "{\"client\": ")) {
			jprint("blocklist client ", p, "client");
			jprint(" until ", p, "until");
			printf("\n");
		}
		return;
	}
	if (strcmp(w0, "osd") == 0 && strcmp(w1, "tree") == 0) {
		jprint("osdmap epoch ", text, "osdmap_epoch");
		printf("\n");
		for (const char *h = jfind(text, "host"); h; ) {
			const char *next = strstr(h, "{\"host\": ");
			jprint("host ", h - 8, "host");
			const char *rk = jfind(h - 8, "rack");
			if (rk && rk[1] != '"')
				jprint(" in rack ", h - 8, "rack");
			jprint(" (weight ", h - 8, "weight");
			printf(")\n");
			const char *end = next ? next : h + strlen(h);
			for (const char *p = strstr(h, "{\"id\": "); p && p < end;
			     p = strstr(p + 1, "{\"id\": ")) {
				jprint("  osd.", p, "id");
				jprint(" weight ", p, "weight");
				jprint(" reweight ", p, "reweight");
				jprint(" up=", p, "up");
				jprint(" in=", p, "in");
				printf("\n");
			}
			h = next ? next + 1 : NULL;
			if (h)
				h = jfind(h, "host");
		}
		return;
	}
	if (strcmp(w0, "mds") == 0 && strcmp(w1, "stat") == 0) {
		jprint("mdsmap epoch ", text, "mdsmap_epoch");
		jprint(", file system ", text, "fs_name");
		jprint(", max_mds ", text, "max_mds");
		printf("\n");
		for (const char *p = strstr(text, "{\"rank\": "); p;
		     p = strstr(p + 1, "{\"rank\": ")) {
			jprint("  rank ", p, "rank");
			jprint(": ", p, "state");
			const char *m = jfind(p, "mds");
			if (m && m[1] != '"') {
				jprint(", mds.", p, "mds");
				jprint(" at ", p, "addr");
			}
			printf("\n");
		}
		const char *sb = jfind(text, "standbys");
		for (const char *q = sb ? strstr(sb, "{\"mds\": ") : NULL; q;
		     q = strstr(q + 1, "{\"mds\": ")) {
			jprint("  standby mds.", q, "mds");
			jprint(" at ", q, "addr");
			printf("\n");
		}
		return;
	}
	if (strcmp(w0, "osd") == 0 && strcmp(w1, "df") == 0) {
		printf("%-5s %-12s %8s %8s %10s %10s %10s %6s %5s\n", "ID", "HOST", "WEIGHT",
		       "REWEIGHT", "SIZE MiB", "USED MiB", "AVAIL MiB", "%USE", "PGS");
		for (const char *p = strstr(text, "{\"id\": "); p; p = strstr(p + 1, "{\"id\": ")) {
			const char *next = strchr(p, '}'); /* the end of this OSD's object */
			const char *v;
			char host[64] = "";
			double w = 0, rw = 0, use = -1;
			unsigned long long tot = 0, used = 0, av = 0, pgs = 0;
			int id = atoi(p + 7);
			if ((v = jfind(p, "host")))
				sscanf(v, "\"%63[^\"]", host);
			if ((v = jfind(p, "weight")))
				w = strtod(v, NULL);
			if ((v = jfind(p, "reweight")))
				rw = strtod(v, NULL);
			if ((v = jfind(p, "pgs")))
				pgs = strtoull(v, NULL, 10);
			if ((v = jfind(p, "total")) && (!next || v < next)) {
				tot = strtoull(v, NULL, 10);
				used = strtoull(jfind(p, "used"), NULL, 10);
				av = strtoull(jfind(p, "avail"), NULL, 10);
				use = strtod(jfind(p, "use"), NULL);
			}
			if (use < 0)
				printf("%-5d %-12s %8.4f %8.4f %10s %10s %10s %6s %5llu\n", id, host, w,
				       rw, "-", "-", "-", "-", pgs);
			else
				printf("%-5d %-12s %8.4f %8.4f %10.1f %10.1f %10.1f %5.1f%% %5llu\n", id,
				       host, w, rw, tot / 1048576.0, used / 1048576.0, av / 1048576.0,
				       use * 100, pgs);
		}
		return;
	}
	if (strcmp(w0, "pg") == 0 && strcmp(w1, "stat") == 0) {
		jprint("osdmap epoch ", text, "osdmap_epoch");
		printf("\n");
		print_pgs(jfind(text, "pgs") ? jfind(text, "pgs") : text);
		return;
	}
	if (strcmp(w0, "pg") == 0 && strcmp(w1, "dump") == 0) {
		printf("%-10s %-36s %-8s %-12s %-20s %-20s %-6s %s\n", "PG", "STATE", "EPOCH",
		       "HEAD", "LAST_SCRUB", "LAST_DEEP_SCRUB", "ERRORS", "ACTING");
		for (const char *p = strstr(text, "{\"pgid\": "); p;
		     p = strstr(p + 1, "{\"pgid\": ")) {
			char id[32] = "", st[160] = "", head[48] = "-", ep[24] = "-", act[96] = "-";
			char ls[32] = "-", lds[32] = "-", errs[16] = "-";
			const char *v;
			if ((v = jfind(p, "pgid")))
				sscanf(v, "\"%31[^\"]", id);
			if ((v = jfind(p, "state")))
				sscanf(v, "\"%127[^\"]", st);
			const char *next = strstr(p + 1, "{\"pgid\": ");
			if ((v = jfind(p, "epoch")) && (!next || v < next))
				sscanf(v, "%23[0-9]", ep);
			if ((v = jfind(p, "last_update")) && (!next || v < next))
				sscanf(v, "\"%47[^\"]", head);
			if ((v = jfind(p, "acting")) && (!next || v < next))
				sscanf(v, "%95[^]]", act);
			if ((v = jfind(p, "last_scrub")) && (!next || v < next))
				sscanf(v, "\"%31[^\"]", ls);
			if ((v = jfind(p, "last_deep_scrub")) && (!next || v < next))
				sscanf(v, "\"%31[^\"]", lds);
			if ((v = jfind(p, "scrub_errors")) && (!next || v < next))
				sscanf(v, "%15[0-9]", errs);
			printf("%-10s %-36s %-8s %-12s %-20s %-20s %-6s %s%s\n", id, st, ep, head, ls,
			       lds, errs, act, act[0] == '[' ? "]" : "");
			/* the objects the last scrub found inconsistent, a line */
			if ((v = jfind(p, "inconsistent")) && (!next || v < next) &&
			    v[0] == '[' && v[1] == '"') {
				unsigned long named = 0, all = strtoul(errs, NULL, 10);
				printf("%-10s inconsistent: ", "");
				for (v++; *v == '"';) {
					v = print_jstr(v + 1);
					named++;
					if (*v == '"')
						v++;
					if (strncmp(v, ", ", 2) != 0)
						break;
					printf(", ");
					v += 2;
				}
				if (all > named)
					printf(" and %lu more", all - named);
				printf("\n");
			}
		}
		return;
	}
	if (strcmp(w0, "versions") == 0) {
		static const char *const kinds[] = { "mon", "osd", "mds", "overall" };
		for (size_t k = 0; k < 4; k++) {
			const char *v = jfind(text, kinds[k]);
			if (v && *v == '{')
				printf("%-8s %.*s\n", kinds[k], (int)strcspn(v + 1, "}"), v + 1);
		}
		return;
	}
	if (strcmp(w0, "osd") == 0 && strcmp(w1, "placement") == 0 &&
	    jfind(text, "changed")) {
		int changed = strncmp(jfind(text, "changed"), "true", 4) == 0;
		jprint(changed ? "placement plugin " : "the placement plugin is already ",
		       text, "placement");
		if (changed)
			jprint(" (was ", text, "was");
		const char *osds = jfind(text, "osds");
		jprint(changed ? "), osdmap epoch " : " (osdmap epoch ", text, "osdmap_epoch");
		if (!changed)
			printf("): nothing changed\n");
		else if (osds && strtoul(osds, NULL, 10) > 0)
			printf(": the PGs whose OSDs change move by backfill (`tessera "
			       "status` shows the progress)\n");
		else
			printf("\n");
		return;
	}
	/* changes and the rest: the result as it is */
	printf("%s\n", text);
}

/* Run words on the monitors: the status, with *text the answer or why
 * not (malloc'd); -1 with err when the runtime cannot be set up. */
static int
ask_monitors(const struct tsr_mon_members *mem, struct tsr_msgr_opts *mo,
	     int nwords, char **words, uint64_t timeout_ms, char **text,
	     char *err, size_t errlen, int *setup_failed)
{
	struct tsr_msgr *msgr = NULL;
	struct tsr_loop *loop = NULL;
	struct tsr_loop_thread *thr = NULL;
	struct tsr_monc *mc = NULL;
	uint64_t id;
	int rc;

	*text = NULL;
	*setup_failed = 1;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = tsr_now_ns();
	mo->entity_type = TSR_ENTITY_TOOL;
	mo->entity_id = id >> 1;
	mo->bind = NULL;
	mo->workers = 1;
	mo->dispatchers = 1;
	if ((rc = tsr_msgr_create(mo, NULL, &msgr, err, errlen)) < 0)
		return rc;
	if ((rc = tsr_loop_create(&loop)) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-rc));
		goto out;
	}
	if ((rc = tsr_monc_create(msgr, loop, mem, &mc, err, errlen)) < 0)
		goto out;
	if ((rc = tsr_loop_thread_start(loop, &thr)) < 0) {
		snprintf(err, errlen, "starting a thread: %s", strerror(-rc));
		goto out;
	}
	*setup_failed = 0;
	rc = tsr_monc_command(mc, nwords, words, timeout_ms, text);
out:
	/* the loop stopped, the client goes, then what it ran on */
	tsr_loop_thread_stop(thr);
	tsr_monc_destroy(mc);
	tsr_msgr_destroy(msgr);
	tsr_loop_destroy(loop);
	return rc;
}

/* check: for a change, the read that shows whether it was applied; NULL
 * for a read. */
static int
run_words(const char *name, int argc, char **argv, int nfixed, const char *check)
{
	struct tsr_mon_members mem;
	struct tsr_msgr_opts mo;
	struct tsr_conf *conf = NULL;
	struct tsr_auth *auth = NULL;
	struct copts o;
	char err[1024], *text = NULL, type[8], *id;
	int rc, setup_failed = 0;

	if ((rc = parse(name, argc, argv, nfixed, &o)) != 0)
		return rc;
	/* a monitor that is down is part of the answer below, not a warning */
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	/* the configuration as TYPE-ID of --name sees it, so that $name in
	 * `keyring` finds that entity's key */
	snprintf(type, sizeof(type), "%.*s", (int)strcspn(o.who, "."), o.who);
	id = strchr(o.who, '.') + 1;
	if (tsr_conf_load(o.conf, &conf, err, sizeof(err)) < 0 ||
	    tsr_conf_resolve(conf, type, id, NULL, err, sizeof(err)) < 0) {
		tsr_conf_destroy(conf);
		return cli_fail(name, NULL, "%s", err);
	}
	rc = tsr_monc_conf(conf, &mem, &mo, err, sizeof(err));
	if (rc == 0)
		rc = tsr_auth_conf(conf, o.who, &auth, err, sizeof(err));
	mo.auth = auth;
	tsr_conf_destroy(conf);
	if (rc == 0)
		rc = ask_monitors(&mem, &mo, o.nwords, o.words, o.timeout_ms, &text,
				  err, sizeof(err), &setup_failed);
	tsr_auth_destroy(auth);
	if (rc < 0 && (setup_failed || text == NULL)) {
		free(text);
		return cli_fail(name, NULL, "%s", err);
	}
	if (rc == -ECANCELED && text && text[0] == '{') {
		/* a refusal with numbers (`osd placement set` without
		 * --yes-i-really-mean-it: what it would move): the JSON with
		 * --format json, else its "error", a sentence saying them.
		 * Only -ECANCELED: other refusals keep their exit status */
		char *why = jstr_dup(jfind(text, "error"));
		if (o.json)
			printf("%s\n", text);
		rc = cli_fail(name, NULL, "%s", why ? why : text);
		free(why);
		free(text);
		return rc;
	}
	if (rc < 0) {
		/* -EINVAL: the monitors found the words wrong (state.h) */
		if (rc == -EINVAL)
			rc = cli_usage_err(name, NULL, "%s", text ? text : strerror(-rc));
		else if (rc == -EINPROGRESS && check)
			rc = cli_unknown(name, check, text);
		else
			rc = cli_fail(name, NULL, "%s", text ? text : strerror(-rc));
		free(text);
		return rc;
	}
	if (o.json)
		printf("%s\n", text);
	else
		print_plain(&o, text);
	free(text);
	return CLI_OK;
}

/* Reads (READn) and changes (CHANGE2, with the read that shows their
 * outcome), of one word or two. */
#define READ1(fn, name)                                                       \
	static int fn(int argc, char **argv) { return run_words(name, argc, argv, 1, NULL); }
#define READ2(fn, name)                                                       \
	static int fn(int argc, char **argv) { return run_words(name, argc, argv, 2, NULL); }
#define CHANGE2(fn, name, check)                                              \
	static int fn(int argc, char **argv) { return run_words(name, argc, argv, 2, check); }

READ1(c_status, "status")
READ1(c_health, "health")
READ2(c_health_detail, "health detail")
READ1(c_versions, "versions")
READ2(c_osd_tree, "osd tree")
READ2(c_osd_dump, "osd dump")
CHANGE2(c_osd_add, "osd add", "osd tree")
CHANGE2(c_osd_rm, "osd rm", "osd tree")
CHANGE2(c_osd_in, "osd in", "osd tree")
CHANGE2(c_osd_out, "osd out", "osd tree")
CHANGE2(c_osd_reweight, "osd reweight", "osd tree")
CHANGE2(c_osd_down, "osd down", "osd tree")
/* a beacon is answered by the leader from its state: nothing is logged */
READ2(c_osd_beacon, "osd beacon")
CHANGE2(c_osd_set, "osd set", "health")
CHANGE2(c_osd_placement, "osd placement", "osd dump")
CHANGE2(c_osd_unset, "osd unset", "health")
CHANGE2(c_osd_blocklist, "osd blocklist", "osd dump")
CHANGE2(c_pool_create, "pool create", "pool ls")
READ2(c_pool_ls, "pool ls")
CHANGE2(c_pool_set, "pool set", "pool ls")
CHANGE2(c_pool_rm, "pool rm", "pool ls")
READ2(c_mds_stat, "mds stat")
CHANGE2(c_mds_fail, "mds fail", "mds stat")
CHANGE2(c_fs_set, "fs set", "mds stat")
READ2(c_mon_stat, "mon stat")
READ2(c_pg_stat, "pg stat")
READ2(c_osd_df, "osd df")
READ2(c_pg_dump, "pg dump")
READ2(c_pg_query, "pg query")

static void
common_help(FILE *f, const char *synopsis, const char *what)
{
	fprintf(f,
		"Usage: tessera %s [--conf FILE] [--name NAME] [--format plain|json]\n"
		"       [--timeout S]\n"
		"%s\n"
		"\n"
		"The command goes to the monitors listed in mon_members of the cluster\n"
		"file (--conf, or $TESSERA_CONF, default " DEFAULT_CONF "): to the\n"
		"leader, which answers reads while a majority confirms it leads and\n"
		"applies changes once a majority has logged them.  A change sent again\n"
		"after a failover is applied once.\n"
		"\n"
		"      --conf FILE     the cluster file\n"
		"  -n, --name NAME     whose key to use (default client.admin, or\n"
		"                      $TESSERA_NAME); the file `keyring` names, with\n"
		"                      $name as TYPE-ID (client-admin), holds it\n"
		"      --format F      plain (default) or json (the monitors' answer)\n"
		"      --timeout S     give up after S seconds without a monitor quorum\n"
		"                      (default 15), naming what each monitor said\n"
		"\n"
		"Exit status: 0 on success, 1 when the monitors refused or could not be\n"
		"reached (a change: known not to be applied), 2 for a usage error (the\n"
		"monitors' too), 3 when a change was sent and no monitor said what\n"
		"became of it: it may or may not have been applied, and the message\n"
		"names the command that shows which.\n", synopsis, what);
}

#define HELP(fn, syn, what) static void fn(FILE *f) { common_help(f, syn, what); }
HELP(h_status, "status", "The cluster's health, monitors, and map epochs and counts.")
HELP(h_health, "health", "HEALTH_OK, HEALTH_WARN or HEALTH_ERR, with each check raised:\n"
     "its code (OSD_DOWN, MDS_RANK_VACANT, ...; doc/operations.md lists them),\n"
     "which scripts match, and a summary.")
HELP(h_versions, "versions", "How many daemons run each software version, by type (mon, osd,\n"
     "mds) and overall, as far as the leader has heard: monitors say it in\n"
     "their Raft messages, OSDs and MDSs in their beacons (\"unknown\": not\n"
     "heard since this leader was elected, or a daemon too old to say).\n"
     "Health warns (VERSIONS_DIFFER) when versions have differed for\n"
     "mon_warn_versions_differ.")
HELP(h_health_detail, "health detail", "The health checks raised, each with what it means and\n"
     "its detail: which OSDs, monitors, ranks or pools.")
HELP(h_osd_tree, "osd tree", "The OSDs by host, with weights and up/in state.")
HELP(h_osd_dump, "osd dump", "The OSD map's records: each OSD up and in or not, the epoch its\n"
     "running incarnation came up (up_from) and the last epoch the monitors\n"
     "know it served through (up_thru, which its PGs ask to raise before they\n"
     "take writes); then the PG temp mappings (a PG's acting set for a while,\n"
     "primary first, as its primary asked).")
HELP(h_osd_add, "osd add [ID | FIRST-LAST [--per-host N]] --host HOST [--rack RACK] [--weight W]",
     "Add an OSD to the map (the lowest free id unless ID is given), in; on\n"
     "host HOST, in rack RACK if given; weight W (default 1).  FIRST-LAST\n"
     "adds those OSDs in one change (at most 2000; none may exist), all on\n"
     "HOST, or N to a host named HOST-0, HOST-1, ... with --per-host N.")
HELP(h_osd_rm, "osd rm ID", "Remove an OSD that is down from the map.")
HELP(h_osd_in, "osd in ID", "Mark an OSD in: it receives data.")
HELP(h_osd_out, "osd out ID[,ID...]", "Mark OSDs out: their data moves elsewhere (a list: one\n"
     "change, one epoch).")
HELP(h_osd_reweight, "osd reweight ID R", "Set an OSD's reweight (0..1).")
HELP(h_osd_down, "osd down ID[,ID...]", "Mark OSDs down (a running one boots again at its next\n"
     "beacon; a list: one change, one epoch).")
HELP(h_osd_beacon, "osd beacon ID [--failed ID,ID...]",
     "What an OSD sends every osd_beacon_interval: it is alive, and these peers\n"
     "are silent.  The answer says whether the map has it up.  For tests and\n"
     "debugging: OSDs send it themselves.  The monitors take it only from that\n"
     "OSD's key: --name osd.ID.")
HELP(h_osd_set, "osd set noout", "Set a cluster flag (noout: never mark OSDs out).")
HELP(h_osd_placement, "osd placement set PLUGIN [--yes-i-really-mean-it]",
     "Choose the cluster's placement plugin (crush, the default, or hrw), which\n"
     "every client and daemon computes placement with.  Before the first OSD\n"
     "is added it is taken at once.  With OSDs in the map a new plugin moves\n"
     "data, so without --yes-i-really-mean-it nothing changes: the leader\n"
     "places the PGs under the map as it is and under PLUGIN (OSDs that are\n"
     "down but in where they are placed; on a large map an even sample, what\n"
     "it places in about 100 ms, scaled to all PGs), and says how many PG\n"
     "copies would land on an OSD that does not hold them now (out of all,\n"
     "and what a placement unrelated to the current one would move), how\n"
     "many PGs would change primary, and about how many bytes would be copied\n"
     "(an estimate: the moved share of what the OSDs' stores hold, from their\n"
     "last reports); it exits 1.  With the flag the map takes the new plugin\n"
     "in one epoch and the OSDs move the data by backfill, serving I/O\n"
     "meanwhile.  The plugin the map has already: nothing changes.  The\n"
     "monitors refuse a plugin they do not have in plugin_dir.  `tessera osd\n"
     "dump` shows the plugin in use.")
HELP(h_osd_unset, "osd unset noout", "Clear a cluster flag.")
HELP(h_osd_blocklist, "osd blocklist add CLIENT [SECONDS] | osd blocklist rm CLIENT",
     "Make the OSDs refuse every operation of a client until SECONDS from now\n"
     "(default 3600, at most a year), or take the refusal back.  CLIENT is the\n"
     "client's id in hexadecimal, as tessera-mds logs it when it evicts one.\n"
     "An MDS adds clients itself when it evicts them (mds_cap_revoke_timeout,\n"
     "mds_blocklist_duration), so their late writes cannot land after those of\n"
     "the clients their capabilities went to.  An entry ends by itself; adding\n"
     "one also drops those that ended.  `tessera osd dump` lists them.")
HELP(h_pool_create, "pool create NAME [PG_NUM] [--size N] [--min-size N] [--rule ID]\n"
     "       [--redundancy PLUGIN [--redundancy-opts K=V,...]]",
     "Create a pool (32 PGs, size 3, min_size 2, placement rule 0, redundancy\n"
     "plugin replica, by default).  Numbers may be decimal or 0x hexadecimal.\n"
     "The monitors refuse a redundancy plugin they do not have in their\n"
     "plugin_dir, and options it does not take (`tessera plugins check\n"
     "replica.so` lists a plugin's options).")
HELP(h_pool_ls, "pool ls", "List the pools.")
HELP(h_pool_set, "pool set NAME pg_num|size|min_size|rule VALUE",
     "Change a pool (pg_num only grows).")
HELP(h_pool_rm, "pool rm NAME --yes-i-really-mean-it",
     "Remove a pool and its data.")
HELP(h_mds_stat, "mds stat", "The MDS map: file system ranks and standbys.")
HELP(h_mds_fail, "mds fail NAME",
     "Fail an MDS: it leaves the MDS map and its rank goes to a standby.  A\n"
     "running MDS so failed stands by again as a new incarnation.")
HELP(h_fs_set, "fs set max_mds N",
     "Set how many ranks share the namespace (1..64).  Vacant ranks go to\n"
     "standbys; holders of ranks above the new count stand by.")
HELP(h_mon_stat, "mon stat", "The monitors, the leader, the term, the commit index.")
HELP(h_osd_df, "osd df", "Each OSD's store: its size, bytes used and free, objects, the\n"
     "share used, its weight's share of the OSDs in, and how many PGs it\n"
     "acts for, as its last PG report (osd_pg_stats_interval) said.  Health\n"
     "raises OSD_NEARFULL and OSD_FULL past mon_osd_nearfull_ratio and\n"
     "mon_osd_full_ratio; an OSD past osd_full_ratio refuses writes that may\n"
     "grow it (ENOSPC).")
HELP(h_pg_stat, "pg stat", "The placement groups by state (active+clean, peering,\n"
     "active+undersized+degraded, ...: each primary reports its PGs every\n"
     "osd_pg_stats_interval; unknown: none reported to this leader yet;\n"
     "stale: no report for 30 s), the object copies degraded, and the\n"
     "recovery rate and ETA.")
HELP(h_pg_dump, "pg dump", "Every placement group: its state, who reported it and when,\n"
     "its log head, last epoch started and clean, interval, degraded and\n"
     "missing objects, acting set, when it was last scrubbed and deep\n"
     "scrubbed (UTC), and the objects its last scrub found inconsistent.")
HELP(h_pg_query, "pg query POOL.PG", "One placement group as pg dump shows it (the PG number\n"
     "in hexadecimal: pg query 1.1f).")

const struct cli_cmd cli_cluster_cmds[] = {
	{ "status", "", "cluster health, monitors, map epochs", c_status, h_status },
	{ "health", "", "HEALTH_OK / WARN / ERR and why", c_health, h_health },
	{ "health detail", "", "each health check with its detail", c_health_detail,
	  h_health_detail },
	{ "versions", "", "the software each daemon runs", c_versions, h_versions },
	{ "osd tree", "", "OSDs by host", c_osd_tree, h_osd_tree },
	{ "osd dump", "", "OSD records: up_from, up_thru; PG temp", c_osd_dump, h_osd_dump },
	{ "osd add", "[ID] --host H", "add an OSD to the map", c_osd_add, h_osd_add },
	{ "osd rm", "ID", "remove an OSD from the map", c_osd_rm, h_osd_rm },
	{ "osd in", "ID", "mark an OSD in", c_osd_in, h_osd_in },
	{ "osd out", "ID", "mark an OSD out", c_osd_out, h_osd_out },
	{ "osd reweight", "ID R", "set an OSD's reweight", c_osd_reweight, h_osd_reweight },
	{ "osd down", "ID[,ID...]", "mark OSDs down", c_osd_down, h_osd_down },
	{ "osd beacon", "ID [--failed IDS]", "an OSD's beacon (tests)", c_osd_beacon, h_osd_beacon },
	{ "osd set", "noout", "set a cluster flag", c_osd_set, h_osd_set },
	{ "osd placement", "set PLUGIN", "choose the placement plugin (with OSDs: "
	  "what would move)", c_osd_placement, h_osd_placement },
	{ "osd unset", "noout", "clear a cluster flag", c_osd_unset, h_osd_unset },
	{ "osd blocklist", "add|rm CLIENT", "refuse a client at the OSDs (eviction)",
	  c_osd_blocklist, h_osd_blocklist },
	{ "pool create", "NAME [PG_NUM]", "create a pool", c_pool_create, h_pool_create },
	{ "pool ls", "", "list pools", c_pool_ls, h_pool_ls },
	{ "pool set", "NAME KEY VALUE", "change a pool", c_pool_set, h_pool_set },
	{ "pool rm", "NAME --yes-i-really-mean-it", "remove a pool", c_pool_rm, h_pool_rm },
	{ "mds stat", "", "the MDS map", c_mds_stat, h_mds_stat },
	{ "mds fail", "NAME", "fail an MDS (its rank goes to a standby)", c_mds_fail, h_mds_fail },
	{ "fs set", "max_mds N", "set the number of metadata ranks", c_fs_set, h_fs_set },
	{ "mon stat", "", "the monitors and the leader", c_mon_stat, h_mon_stat },
	{ "pg stat", "", "PGs by state, degraded objects, recovery", c_pg_stat, h_pg_stat },
	{ "osd df", "", "each OSD's store: size, used, free, PGs", c_osd_df, h_osd_df },
	{ "pg dump", "", "every PG: state, reporter, log head, acting set, scrubs", c_pg_dump,
	  h_pg_dump },
	{ "pg query", "POOL.PG", "one PG", c_pg_query, h_pg_query },
	{ NULL, NULL, NULL, NULL, NULL }
};
