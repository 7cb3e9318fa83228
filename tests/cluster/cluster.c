/* cluster.c — the cluster test harness (cluster.h). */
#include "cluster.h"
#include "auth/auth.h"

#include "config/config.h"
#include "daemon/asok.h"
#include "event/loop.h"
#include "log/log.h"
#include "mon/monc.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct tc_cluster *live[8]; /* for the atexit hook */

uint64_t
tc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
tc_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static const char *
prog(const char *env)
{
	const char *p = getenv(env);

	if (p == NULL || *p == '\0') {
		fprintf(stderr, "cluster harness: $%s is not set (run through "
			"make check)\n", env);
		exit(99);
	}
	return p;
}

/* A port nobody listens on now, below the kernel's ephemeral range: a
 * port the kernel handed out for port 0 may be handed out again as the
 * local port of any outgoing connection (the suite makes thousands)
 * before the daemon binds it, and the daemon then cannot listen.  Other
 * test programs pick from the same range at random; a daemon that still
 * finds its port taken exits, which the tests see.  A port is never
 * handed out twice by one process: two monitors of one cluster once drew
 * the same port, and neither had bound it yet to make the check fail. */
static int
free_port(void)
{
	static unsigned seed;
	enum { NGIVEN = 1024 };
	static uint16_t given[NGIVEN];
	static size_t ngiven;
	unsigned low = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u", &low) != 1 || low < 2048)
			low = 32768;
		fclose(f);
	}
	if (seed == 0)
		seed = (unsigned)getpid() ^ (unsigned)tc_now_ms();
	for (int tries = 0; tries < 200; tries++) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		uint16_t port = (uint16_t)(1024 + rand_r(&seed) % (low - 1024));
		size_t n = ngiven < NGIVEN ? ngiven : NGIVEN, k = 0;
		int fd, one = 1, ok;

		while (k < n && given[k] != port)
			k++;
		if (k < n)
			continue;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons(port);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok) {
			given[ngiven++ % NGIVEN] = port;
			return port;
		}
	}
	return -1;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
cleanup_all(void)
{
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (live[i])
			(void)tc_destroy(live[i]);
}

static int dsignal(struct tc_daemon *d, int sig);
static char root[128];

int
tc_root_init(void)
{
	snprintf(root, sizeof(root), "/tmp/tsr-test-cluster.XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("cluster harness: mkdtemp");
		return -1;
	}
	return setenv("TC_ROOT", root, 1);
}

void
tc_root_remove(void)
{
	/* a mount a failed test left (FUSE) goes first, lazily: removing
	 * its directory would otherwise walk into the file system */
	FILE *mf = root[0] ? fopen("/proc/self/mounts", "r") : NULL;
	char line[1024];

	while (mf && fgets(line, sizeof(line), mf)) {
		char *dir = strchr(line, ' '), *end;
		if (dir && (end = strchr(dir + 1, ' ')) != NULL) {
			*end = '\0';
			if (strncmp(dir + 1, root, strlen(root)) == 0)
				umount2(dir + 1, MNT_DETACH);
		}
	}
	if (mf)
		fclose(mf);
	if (root[0] && getenv("TC_KEEP") == NULL)
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = '\0';
}

int
tc_write_conf(struct tc_cluster *c, const char *path, const char *extra)
{
	FILE *f = fopen(path ? path : c->conf, "w");
	/* the monitors make the placement map with the built plugins */
	const char *plugins = getenv("PLUGIN_DIR");
	char own[300];

	if (f == NULL)
		return -1;
	if (plugins == NULL || *plugins == '\0') {
		snprintf(own, sizeof(own), "%s/plugins", c->dir);
		plugins = own;
	}
	fprintf(f, "global = {\n"
		"  %s%s%s"
		"  run_dir = \"%s/run\";\n"
		"  log_file = \"%s/log/$name.log\";\n"
		"  plugin_dir = \"%s\";\n"
		"  mon_data = \"%s/$name\";\n"
		"  osd_data = \"%s/$name\";\n"
		"  keyring = \"%s/keys/$name.keyring\";\n"
		"  mon_members = \"",
		c->fsid[0] ? "fsid = \"" : "", c->fsid, c->fsid[0] ? "\";\n" : "",
		c->dir, c->dir, plugins, c->dir, c->dir, c->dir);
	for (size_t i = 0; i < c->nmon; i++)
		fprintf(f, "%s%s=%s", i ? ", " : "", c->mon[i].name, c->mon[i].addr);
	fprintf(f, "\";\n%s\n};\n%s\n", extra ? extra : c->extra, c->sections);
	return fclose(f) == 0 ? 0 : -1;
}

int
tc_create(struct tc_cluster *c, size_t nmon, const char *extra)
{
	static int hooked;
	char sub[400];

	memset(c, 0, sizeof(*c));
	if (nmon == 0 || nmon > TC_MAX_MONS)
		return -1;
	snprintf(c->dir, sizeof(c->dir), "%s/cluster.XXXXXX",
		 getenv("TC_ROOT") ? getenv("TC_ROOT") : "/tmp");
	if (mkdtemp(c->dir) == NULL)
		return -1;
	snprintf(c->conf, sizeof(c->conf), "%s/tessera.conf", c->dir);
	for (const char *d = "run\0log\0plugins\0keys\0"; *d; d += strlen(d) + 1) {
		snprintf(sub, sizeof(sub), "%s/%s", c->dir, d);
		mkdir(sub, 0700);
	}
	/* keys for every daemon it starts (tc_key_write) and the CLI */
	tsr_auth_secret_new(c->secret);
	if (tc_key_write(c, "client", "admin") < 0 ||
	    tsr_auth_from_secret(c->secret, "client.admin", &c->admin) < 0)
		return -1;
	c->nmon = nmon;
	for (size_t i = 0; i < nmon; i++) {
		int port = free_port();
		if (port < 0)
			return -1;
		snprintf(c->mon[i].name, sizeof(c->mon[i].name), "%c", (char)('a' + i));
		snprintf(c->mon[i].addr, sizeof(c->mon[i].addr), "127.0.0.1:%d", port);
	}
	snprintf(c->extra, sizeof(c->extra), "%s", extra ? extra : "");
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (live[i] == NULL) {
			live[i] = c;
			break;
		}
	if (!hooked) {
		atexit(cleanup_all);
		hooked = 1;
	}
	return tc_write_conf(c, NULL, NULL);
}

int
tc_destroy(struct tc_cluster *c)
{
	int reports = 0;

	/* a clean stop of each, so leak checkers run at exit: the MDSs
	 * first, while the OSDs they write their last state to still run */
	for (size_t i = 0; i < c->nmds; i++)
		if (c->mds[i].pid > 0)
			dsignal(&c->mds[i], SIGTERM);
	for (size_t i = 0; i < c->nosd; i++)
		if (c->osd[i].pid > 0)
			dsignal(&c->osd[i], SIGTERM);
	for (size_t i = 0; i < c->nmon; i++)
		if (c->mon[i].pid > 0)
			tc_signal(c, i, SIGTERM);
	for (size_t i = 0; c->dir[0] && i < c->nmon + c->nosd + c->nmds; i++) {
		const struct tc_daemon *d = i < c->nmon ? &c->mon[i]
					    : i < c->nmon + c->nosd ? &c->osd[i - c->nmon]
					    : &c->mds[i - c->nmon - c->nosd];
		const char *type = i < c->nmon ? "mon" : i < c->nmon + c->nosd ? "osd" : "mds";
		char path[400];
		FILE *f;
		char line[512];

		snprintf(path, sizeof(path), "%s/log/%s-%s.stderr", c->dir, type, d->name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "Sanitizer") || strstr(line, "runtime error")) {
				fprintf(stderr, "cluster: %s.%s: %s", type, d->name, line);
				reports++;
			}
		fclose(f);
	}
	if (c->dir[0] && getenv("TC_KEEP") == NULL)
		nftw(c->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tsr_auth_destroy(c->admin);
	c->admin = NULL;
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (live[i] == c)
			live[i] = NULL;
	c->dir[0] = '\0';
	return reports;
}

int
tc_key_write(struct tc_cluster *c, const char *type, const char *id)
{
	char path[400], name[64], err[512];
	uint8_t key[TSR_AUTH_KEY_LEN];
	int rc;

	snprintf(path, sizeof(path), "%s/keys/%s-%s.keyring", c->dir, type, id);
	snprintf(name, sizeof(name), "%s.%s", type, id);
	if (access(path, F_OK) == 0)
		return 0;
	if (strcmp(type, "mon") == 0) {
		rc = tsr_auth_keyring_write(path, &c->secret, 1, NULL, NULL, false,
					    err, sizeof(err));
	} else {
		tsr_auth_derive(c->secret, name, key);
		rc = tsr_auth_keyring_write(path, NULL, 0, name, key, false, err,
					    sizeof(err));
	}
	if (rc < 0)
		fprintf(stderr, "cluster harness: %s\n", err);
	return rc < 0 ? -1 : 0;
}

/* Run prog as daemon TYPE-NAME in the foreground, a child of the test. */
static int
spawn(struct tc_cluster *c, struct tc_daemon *d, const char *prog_path,
      const char *type, const char *conf)
{
	pid_t pid;

	if (d->pid > 0 || tc_key_write(c, type, d->name) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		char errpath[400];
		int errfd;

		/* a daemon dies with the test that started it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		/* stderr (start-up errors, sanitizer reports) to a file that
		 * tc_destroy() reads */
		snprintf(errpath, sizeof(errpath), "%s/log/%s-%s.stderr", c->dir,
			 type, d->name);
		errfd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		if (errfd >= 0)
			dup2(errfd, 2);
		execl(prog_path, prog_path, "--foreground", "--conf", conf, "--id",
		      d->name, (char *)NULL);
		_exit(127);
	}
	d->pid = pid;
	d->paused = 0;
	return 0;
}

int
tc_start_conf(struct tc_cluster *c, size_t i, const char *conf)
{
	return spawn(c, &c->mon[i], prog("TESSERA_MON"), "mon", conf);
}

int
tc_osd_start(struct tc_cluster *c, size_t i)
{
	if (i >= TC_MAX_OSDS)
		return -1;
	if (c->nosd <= i)
		c->nosd = i + 1;
	snprintf(c->osd[i].name, sizeof(c->osd[i].name), "%zu", i);
	return spawn(c, &c->osd[i], prog(c->real_osds ? "TESSERA_OSD" : "TESTOSD"),
		     "osd", c->conf);
}

int
tc_mds_start(struct tc_cluster *c, size_t i)
{
	if (i >= TC_MAX_MDSS)
		return -1;
	if (c->nmds <= i)
		c->nmds = i + 1;
	snprintf(c->mds[i].name, sizeof(c->mds[i].name), "m%zu", i);
	return spawn(c, &c->mds[i], prog(c->real_mds ? "TESSERA_MDS" : "TESTMDS"), "mds",
		     c->conf);
}

int
tc_osd_up(struct tc_cluster *c, int id)
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

int
tc_await_osd_up(struct tc_cluster *c, int id, int up, int timeout_ms)
{
	uint64_t t0 = tc_now_ms();

	do {
		if (tc_osd_up(c, id) == up)
			return 0;
		tc_sleep_ms(100);
	} while (tc_now_ms() - t0 < (uint64_t)timeout_ms);
	return -1;
}

int
tc_mds_active(struct tc_cluster *c)
{
	static const char tag[] = "rank 0: active, mds.m";
	char *out = NULL;
	const char *p;
	int who = -1;

	if (tc_cli(c, &out, "mds stat --timeout 5") == 0 && out &&
	    (p = strstr(out, tag)) != NULL)
		who = atoi(p + strlen(tag));
	free(out);
	return who;
}

int
tc_await_mds_active(struct tc_cluster *c, int not, int timeout_ms)
{
	uint64_t t0 = tc_now_ms();
	int who;

	do {
		if ((who = tc_mds_active(c)) >= 0 && who != not)
			return who;
		tc_sleep_ms(100);
	} while (tc_now_ms() - t0 < (uint64_t)timeout_ms);
	return -1;
}

int
tc_fs_start(struct tc_cluster *c, int nmds)
{
	char *out = NULL;

	c->real_osds = 1;
	c->real_mds = 1;
	if (tc_fsid_new(c) < 0 || tc_start_all(c) < 0 || tc_wait_leader(c, 15000) < 0) {
		fprintf(stderr, "tc_fs_start: no monitor leader\n");
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		if (tc_cli(c, NULL, "osd add %d --host h%d", i, i) != 0 ||
		    tc_osd_mkfs(c, (size_t)i, NULL, &out) != 0 ||
		    tc_osd_start(c, (size_t)i) < 0) {
			fprintf(stderr, "tc_fs_start: osd.%d: %s\n", i, out ? out : "");
			free(out);
			return -1;
		}
		free(out);
		out = NULL;
	}
	for (int i = 0; i < 4; i++)
		if (tc_await_osd_up(c, i, 1, 15000) < 0) {
			fprintf(stderr, "tc_fs_start: osd.%d never came up\n", i);
			return -1;
		}
	if (tc_cli(c, NULL, "pool create data 32 --size 3") != 0 ||
	    tc_cli(c, NULL, "pool create metadata 16 --size 3") != 0) {
		fprintf(stderr, "tc_fs_start: cannot make the pools\n");
		return -1;
	}
	for (int i = 0; i < nmds; i++)
		if (tc_mds_start(c, (size_t)i) < 0)
			return -1;
	if (tc_await_mds_active(c, -1, 30000) < 0) {
		fprintf(stderr, "tc_fs_start: no active MDS after 30 s\n");
		return -1;
	}
	return 0;
}

int
tc_start_prog(struct tc_cluster *c, size_t i, const char *prog_path)
{
	return spawn(c, &c->mon[i], prog_path, "mon", c->conf);
}

int
tc_start(struct tc_cluster *c, size_t i)
{
	return tc_start_conf(c, i, c->conf);
}

int
tc_start_all(struct tc_cluster *c)
{
	for (size_t i = 0; i < c->nmon; i++)
		if (c->mon[i].pid == 0 && tc_start(c, i) < 0)
			return -1;
	return 0;
}

int
tc_exited(struct tc_cluster *c, size_t i, int *status)
{
	if (c->mon[i].pid <= 0)
		return 1;
	if (waitpid(c->mon[i].pid, status, WNOHANG) == c->mon[i].pid) {
		c->mon[i].pid = 0;
		return 1;
	}
	return 0;
}

static int
dsignal(struct tc_daemon *d, int sig)
{
	int status = 0;

	if (d->pid <= 0)
		return -1;
	if (sig == SIGSTOP || sig == SIGCONT) {
		kill(d->pid, sig);
		d->paused = sig == SIGSTOP;
		return 0;
	}
	if (d->paused && sig == SIGTERM)
		kill(d->pid, SIGCONT);
	kill(d->pid, sig);
	for (int t = 0; t < 2000; t++) {   /* 20 s, then for sure */
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = 0;
			d->paused = 0;
			return status;
		}
		tc_sleep_ms(10);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &status, 0);
	d->pid = 0;
	d->paused = 0;
	return status;
}

int
tc_signal(struct tc_cluster *c, size_t i, int sig)
{
	return dsignal(&c->mon[i], sig);
}

int
tc_osd_signal(struct tc_cluster *c, size_t i, int sig)
{
	return dsignal(&c->osd[i], sig);
}

int
tc_mds_signal(struct tc_cluster *c, size_t i, int sig)
{
	return dsignal(&c->mds[i], sig);
}

int
tc_run(char **argv, char **out)
{
	int p[2], status = 0;
	struct tsr_sbuf sb;
	pid_t pid;

	if (out)
		*out = NULL;
	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	tsr_sbuf_init(&sb);
	uint64_t end = tc_now_ms() + 60000;
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char buf[4096];
		ssize_t n;

		if (tc_now_ms() > end) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = read(p[0], buf, sizeof(buf))) <= 0)
			break;
		tsr_sbuf_add(&sb, buf, (size_t)n);
	}
	close(p[0]);
	waitpid(pid, &status, 0);
	if (out)
		*out = strdup(tsr_sbuf_str(&sb));
	tsr_sbuf_release(&sb);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
tc_cli(struct tc_cluster *c, char **out, const char *fmt, ...)
{
	char words[1024], *argv[72];
	int argc = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(words, sizeof(words), fmt, ap);
	va_end(ap);
	argv[argc++] = (char *)prog("TESSERA");
	for (char *save = NULL, *w = strtok_r(words, " ", &save); w && argc < 68;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc++] = "--conf";
	argv[argc++] = c->conf;
	argv[argc] = NULL;
	return tc_run(argv, out);
}

int
tc_fsid_new(struct tc_cluster *c)
{
	uint8_t u[16];

	tsr_auth_random(u, sizeof(u));
	tsr_uuid_str(u, c->fsid);
	return tc_write_conf(c, NULL, NULL);
}

int
tc_osd_mkfs(struct tc_cluster *c, size_t i, const char *conf, char **out)
{
	char id[16];
	char *argv[] = { (char *)prog("TESSERA_OSD"), "--mkfs", "--id", id, "--conf",
			 (char *)(conf ? conf : c->conf), NULL };

	snprintf(id, sizeof(id), "%zu", i);
	return tc_run(argv, out);
}

int
tc_osd_run(struct tc_cluster *c, size_t i, const char *conf, char **out)
{
	char id[16];
	char *argv[] = { (char *)prog("TESSERA_OSD"), "--foreground", "--id", id,
			 "--conf", (char *)(conf ? conf : c->conf), NULL };

	snprintf(id, sizeof(id), "%zu", i);
	if (tc_key_write(c, "osd", id) < 0)
		return -1;
	return tc_run(argv, out);
}

static int
dasok(struct tc_cluster *c, struct tc_daemon *d, const char *type, const char *cmd,
      char **out)
{
	char path[400], err[256];
	struct tsr_sbuf reply;
	int status = 0, rc;

	*out = NULL;
	if (d->pid <= 0 || d->paused)
		return -1;
	snprintf(path, sizeof(path), "%s/run/%s-%s.asok", c->dir, type, d->name);
	tsr_sbuf_init(&reply);
	rc = tsr_asok_request(path, cmd, 2000, &status, &reply, err, sizeof(err));
	if (rc == 0 && status == 0)
		*out = strdup(tsr_sbuf_str(&reply));
	tsr_sbuf_release(&reply);
	return rc == 0 && status == 0 ? 0 : -1;
}

int
tc_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out)
{
	return dasok(c, &c->mon[i], "mon", cmd, out);
}

int
tc_osd_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out)
{
	return dasok(c, &c->osd[i], "osd", cmd, out);
}

int
tc_mds_asok(struct tc_cluster *c, size_t i, const char *cmd, char **out)
{
	return dasok(c, &c->mds[i], "mds", cmd, out);
}

int
tc_isolate(struct tc_cluster *c, size_t i, const char *names)
{
	char cmd[128], *out;
	int rc;

	snprintf(cmd, sizeof(cmd), "inject isolate %s", names);
	rc = tc_asok(c, i, cmd, &out);
	free(out);
	return rc;
}

uint64_t
tc_json_u64(const char *json, const char *key, uint64_t def)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = json ? strstr(json, pat) : NULL;
	return p ? strtoull(p + strlen(pat), NULL, 10) : def;
}

int
tc_view(struct tc_cluster *c, size_t i, struct tc_mon_view *v)
{
	char *out;
	const char *r;

	memset(v, 0, sizeof(*v));
	if (tc_asok(c, i, "status", &out) < 0)
		return -1;
	r = strstr(out, "\"role\": \"");
	if (r)
		sscanf(r + 9, "%15[a-z]", v->role);
	v->term = tc_json_u64(out, "term", 0);
	v->applied_index = tc_json_u64(out, "applied_index", 0);
	v->history_crc = (uint32_t)tc_json_u64(out, "history_crc", 0);
	v->osdmap_epoch = tc_json_u64(out, "osdmap_epoch", 0);
	v->maps_crc = (uint32_t)tc_json_u64(out, "maps_crc", 0);
	r = strstr(out, "\"version\": \"");
	if (r)
		sscanf(r + 12, "%63[^\"]", v->version);
	free(out);
	return 0;
}

/* The last lines of a file, to stderr, each prefixed. */
static void
dump_tail(const char *path, const char *prefix, int lines)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;
	long at;
	char *p;

	if (f == NULL) {
		fprintf(stderr, "%s: (no %s)\n", prefix, path);
		return;
	}
	fseek(f, 0, SEEK_END);
	at = ftell(f);
	at = at > (long)sizeof(buf) - 1 ? at - (long)sizeof(buf) + 1 : 0;
	fseek(f, at, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = buf + n;
	for (int k = 0; p > buf && k <= lines; )
		if (*--p == '\n' && p + 1 < buf + n)
			k++;
	if (*p == '\n')
		p++;
	for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(stderr, "%s: %s\n", prefix, line);
}

void
tc_dump(struct tc_cluster *c, const char *why)
{
	fprintf(stderr, "cluster %s: %s; the monitors:\n", c->dir, why);
	for (size_t i = 0; i < c->nmon; i++) {
		char path[400], prefix[64], *out = NULL;
		int status = 0;

		snprintf(prefix, sizeof(prefix), "  mon.%s", c->mon[i].name);
		if (c->mon[i].pid <= 0) {
			fprintf(stderr, "%s: not running\n", prefix);
		} else if (waitpid(c->mon[i].pid, &status, WNOHANG) == c->mon[i].pid) {
			fprintf(stderr, "%s: exited (status 0x%x)\n", prefix, status);
			c->mon[i].pid = 0;
		} else if (c->mon[i].paused) {
			fprintf(stderr, "%s: paused\n", prefix);
		} else if (tc_asok(c, i, "status", &out) < 0) {
			fprintf(stderr, "%s: pid %d, no answer on its admin socket\n",
				prefix, (int)c->mon[i].pid);
		} else {
			for (char *q = out; *q; q++)
				if (*q == '\n')
					*q = ' ';
			fprintf(stderr, "%s: pid %d, %s at %s: %.1500s\n", prefix,
				(int)c->mon[i].pid, c->mon[i].name, c->mon[i].addr, out);
		}
		free(out);
		snprintf(path, sizeof(path), "%s/log/mon-%s.log", c->dir, c->mon[i].name);
		dump_tail(path, prefix, 12);
		snprintf(path, sizeof(path), "%s/log/mon-%s.stderr", c->dir, c->mon[i].name);
		dump_tail(path, prefix, 4);
	}
}

int
tc_wait_leader(struct tc_cluster *c, int timeout_ms)
{
	uint64_t end = tc_now_ms() + (uint64_t)timeout_ms;

	do {
		int leader = -1, n = 0;
		uint64_t term = 0;

		for (size_t i = 0; i < c->nmon; i++) {
			struct tc_mon_view v;
			if (c->mon[i].pid > 0 && !c->mon[i].paused &&
			    tc_view(c, i, &v) == 0 && strcmp(v.role, "leader") == 0 &&
			    v.term >= term) {
				if (v.term > term)
					n = 0;
				leader = (int)i;
				term = v.term;
				n++;
			}
		}
		if (n == 1) {
			char *out;
			int rc = tc_cli(c, &out, "mon stat --format json --timeout 2");
			char want[48];
			snprintf(want, sizeof(want), "\"leader\": \"%s\"", c->mon[leader].name);
			int ok = rc == 0 && out && strstr(out, want);
			free(out);
			if (ok)
				return leader;
		}
		tc_sleep_ms(50);
	} while (tc_now_ms() < end);
	tc_dump(c, "no single leader that the CLI confirms");
	return -1;
}

int
tc_wait_converged(struct tc_cluster *c, int timeout_ms)
{
	uint64_t end = tc_now_ms() + (uint64_t)timeout_ms;

	do {
		struct tc_mon_view first, v;
		int same = 1, have = 0;

		for (size_t i = 0; i < c->nmon && same; i++) {
			if (c->mon[i].pid <= 0)
				continue;
			if (tc_view(c, i, &v) < 0) {
				same = 0;
				break;
			}
			if (!have) {
				first = v;
				have = 1;
			} else if (v.applied_index != first.applied_index ||
				   v.history_crc != first.history_crc ||
				   (v.maps_crc != first.maps_crc &&
				    strcmp(v.version, first.version) == 0)) {
				same = 0;
			}
		}
		if (same && have)
			return 0;
		tc_sleep_ms(100);
	} while (tc_now_ms() < end);
	for (size_t i = 0; i < c->nmon; i++) {
		struct tc_mon_view v;
		if (c->mon[i].pid <= 0)
			fprintf(stderr, "cluster: mon.%s is not running\n", c->mon[i].name);
		else if (tc_view(c, i, &v) < 0)
			fprintf(stderr, "cluster: mon.%s (pid %d) does not answer its "
				"admin socket\n", c->mon[i].name, (int)c->mon[i].pid);
		else
			fprintf(stderr, "cluster: mon.%s: %s, term %llu, applied %llu, "
				"history %08x, maps %08x\n", c->mon[i].name, v.role,
				(unsigned long long)v.term,
				(unsigned long long)v.applied_index, v.history_crc,
				v.maps_crc);
	}
	tc_dump(c, "the monitors did not converge");
	return -1;
}

int
tc_client_open(struct tc_cluster *c, uint32_t want, uint32_t renew_ms,
	       tsr_mapsub_cb cb, void *arg, struct tc_client **out)
{
	static uint64_t n;
	struct tc_client *k = calloc(1, sizeof(*k));
	struct tsr_mon_members mem;
	struct tsr_msgr_opts mo;
	struct tsr_conf *conf = NULL;
	char err[1024] = "out of memory";
	int rc = k ? 0 : -ENOMEM;

	*out = NULL;
	/* sessions ending is what the tests do to it, not news */
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	if (rc == 0)
		rc = tsr_conf_load(c->conf, &conf, err, sizeof(err));
	if (rc == 0)
		rc = tsr_conf_resolve(conf, "client", NULL, NULL, err, sizeof(err));
	if (rc == 0)
		rc = tsr_monc_conf(conf, &mem, &mo, err, sizeof(err));
	tsr_conf_destroy(conf);
	if (rc == 0) {
		mo.auth = c->admin;
		mo.entity_type = TSR_ENTITY_CLIENT;
		mo.entity_id = ((uint64_t)getpid() << 16) + ++n;
		mo.bind = NULL;
		mo.workers = 1;
		mo.dispatchers = 1;
		rc = tsr_msgr_create(&mo, NULL, &k->msgr, err, sizeof(err));
	}
	if (rc == 0 && (rc = tsr_loop_create(&k->loop)) < 0)
		snprintf(err, sizeof(err), "event loop: %s", strerror(-rc));
	/* the modules before the loop runs (their rule: on its thread, or
	 * while it does not run) */
	if (rc == 0)
		rc = tsr_monc_create(k->msgr, k->loop, &mem, &k->monc, err, sizeof(err));
	if (rc == 0 && want)
		rc = tsr_mapsub_create(k->msgr, k->loop, &mem, NULL, NULL, want, renew_ms,
				       cb, arg,
				       &k->sub, err, sizeof(err));
	if (rc == 0 && (rc = tsr_loop_thread_start(k->loop, &k->thr)) < 0)
		snprintf(err, sizeof(err), "starting a thread: %s", strerror(-rc));
	if (rc < 0) {
		fprintf(stderr, "cluster harness: client: %s\n", err);
		tc_client_close(k);
		return -1;
	}
	*out = k;
	return 0;
}

void
tc_client_close(struct tc_client *k)
{
	if (k == NULL)
		return;
	/* the loop stopped first: the modules go while it does not run */
	tsr_loop_thread_stop(k->thr);
	tsr_mapsub_destroy(k->sub);
	tsr_monc_destroy(k->monc);
	tsr_msgr_destroy(k->msgr);
	if (k->loop)
		tsr_loop_destroy(k->loop);
	free(k);
}

int
tc_mon_by_addr(struct tc_cluster *c, const char *addr)
{
	for (size_t i = 0; i < c->nmon; i++)
		if (strcmp(c->mon[i].addr, addr) == 0)
			return (int)i;
	return -1;
}
