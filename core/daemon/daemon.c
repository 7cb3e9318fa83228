/* daemon.c — the shared daemon life cycle. */
#include "daemon/daemon.h"
#include "auth/auth.h"
#include "config/options.h"
#include "daemon/pidfile.h"
#include "event/loop.h"
#include "log/log.h"
#include "msg/msgr.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_CONF "/etc/tessera/tessera.conf"
#define START_WAIT_S 300 /* how long the launcher waits for a detached start */

struct tsr_daemon {
	const struct tsr_daemon_def *def;
	char name[64];
	char id[32];
	struct tsr_conf *conf;
	struct tsr_loop *loop;
	struct tsr_asok *asok;
	struct tsr_registry *reg;
	struct tsr_pidfile *pid;
	int sigfd;
	int ready_fd;          /* write end of the pipe to the waiting parent */
	uint64_t started_ns;
	struct tsr_auth *auth;  /* TYPE.ID's key, for mon, osd and mds */
	void *priv;
};

struct tsr_loop *tsr_daemon_loop(struct tsr_daemon *d) { return d->loop; }
struct tsr_conf *tsr_daemon_conf(struct tsr_daemon *d) { return d->conf; }
struct tsr_registry *tsr_daemon_registry(struct tsr_daemon *d) { return d->reg; }
struct tsr_asok *tsr_daemon_asok(struct tsr_daemon *d) { return d->asok; }
const struct tsr_auth *tsr_daemon_auth(struct tsr_daemon *d) { return d->auth; }
const char *tsr_daemon_name(const struct tsr_daemon *d) { return d->name; }
const char *tsr_daemon_id(const struct tsr_daemon *d) { return d->id; }
void tsr_daemon_set_priv(struct tsr_daemon *d, void *priv) { d->priv = priv; }
void *tsr_daemon_priv(struct tsr_daemon *d) { return d->priv; }

void
tsr_daemon_request_stop(struct tsr_daemon *d)
{
	tsr_loop_stop(d->loop);
}

static void
usage(FILE *f, const char *prog, const struct tsr_daemon_def *def)
{
	fprintf(f,
		"Usage: %s --id ID [--conf FILE] [--foreground]\n"
		"%s%s%s%s\n"
		"\n"
		"Options:\n"
		"  -i, --id ID        this daemon's id; it reads the sections global,\n"
		"                     %s and %s-ID of the configuration file\n"
		"  -c, --conf FILE    cluster configuration file (default %s)\n"
		"  -f, --foreground   stay attached to the terminal and log to stderr\n"
		"                     unless log_file is set\n"
		"  -h, --help         show this help and exit\n"
		"  -V, --version      show the version and exit\n"
		"%s"
		"\n"
		"Signals: SIGTERM or SIGINT stop the daemon cleanly; SIGHUP reopens\n"
		"the log file.  The admin socket (config key admin_socket) answers\n"
		"`tessera admin SOCKET help`.\n",
		prog, def->mkfs ? "       " : "", def->mkfs ? prog : "",
		def->mkfs ? " --mkfs --id ID [--conf FILE]\n" : "", def->summary,
		def->type, def->type, DEFAULT_CONF,
		def->mkfs ? "  --mkfs             prepare this daemon's store (mkfs_help below)\n"
			    "                     and exit; it refuses a store that exists\n" : "");
	if (def->mkfs && def->mkfs_help)
		fprintf(f, "\n%s\n", def->mkfs_help);
}

/* ---- Admin commands every daemon answers ----------------------------------*/

static int
cmd_status(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct tsr_daemon *d = arg;

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{\n  \"name\": ");
	tsr_sbuf_json_str(out, d->name);
	tsr_sbuf_printf(out, ",\n  \"type\": ");
	tsr_sbuf_json_str(out, d->def->type);
	tsr_sbuf_printf(out, ",\n  \"id\": ");
	tsr_sbuf_json_str(out, d->id);
	tsr_sbuf_printf(out, ",\n  \"pid\": %ld,\n  \"version\": \"%s\""
			",\n  \"uptime_s\": %.3f,\n  \"plugins_loaded\": %zu"
			",\n  \"messengers\": %u",
			(long)getpid(), TSR_VERSION,
			(double)(tsr_mono_ns() - d->started_ns) / 1e9,
			tsr_registry_count(d->reg), tsr_msgr_live());
	if (d->def->status)
		d->def->status(d, out);
	tsr_sbuf_printf(out, "\n}\n");
	return 0;
}

struct show_ctx {
	struct tsr_sbuf *out;
	int n;
};

static void
show_one(void *arg, const char *key, const char *value, const char *where)
{
	struct show_ctx *c = arg;

	tsr_sbuf_printf(c->out, "%s\n  ", c->n++ ? "," : "");
	tsr_sbuf_json_str(c->out, key);
	tsr_sbuf_printf(c->out, ": {\"value\": ");
	tsr_sbuf_json_str(c->out, value);
	tsr_sbuf_printf(c->out, ", \"from\": ");
	tsr_sbuf_json_str(c->out, where);
	tsr_sbuf_printf(c->out, "}");
}

static int
cmd_config_show(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct tsr_daemon *d = arg;
	struct show_ctx c = { .out = out };

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{");
	tsr_conf_foreach(d->conf, show_one, &c);
	tsr_sbuf_printf(out, "\n}\n");
	return 0;
}

static int
cmd_log_level(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	int sub = -1, lvl;

	(void)arg;
	if (argc == 0) {
		tsr_sbuf_printf(out, "{");
		for (int i = 0; i < TSR_SUB__COUNT; i++)
			tsr_sbuf_printf(out, "%s\n  \"%s\": \"%s\"", i ? "," : "",
					tsr_log_subsys_name(i),
					tsr_log_level_name(tsr_log_get_level(i)));
		tsr_sbuf_printf(out, "\n}\n");
		return 0;
	}
	if (argc > 2) {
		tsr_sbuf_printf(out, "usage: log level [SUBSYSTEM] LEVEL\n");
		return -EINVAL;
	}
	if (argc == 2 && (sub = tsr_log_subsys_parse(argv[0])) < 0) {
		tsr_sbuf_printf(out, "unknown log subsystem \"%s\"\n", argv[0]);
		return -EINVAL;
	}
	lvl = tsr_log_level_parse(argv[argc - 1]);
	if (lvl < 0) {
		tsr_sbuf_printf(out,
				"unknown log level \"%s\" (error, warn, info, debug, trace)\n",
				argv[argc - 1]);
		return -EINVAL;
	}
	tsr_log_set_level(sub, lvl);
	TSR_LOG_INFO(DAEMON, "log level of %s set to %s",
		     sub < 0 ? "every subsystem" : tsr_log_subsys_name(sub),
		     tsr_log_level_name(lvl));
	tsr_sbuf_printf(out, "{\"subsystem\": \"%s\", \"level\": \"%s\"}\n",
			sub < 0 ? "all" : tsr_log_subsys_name(sub),
			tsr_log_level_name(lvl));
	return 0;
}

static int
cmd_log_reopen(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	int rc;

	(void)arg;
	(void)argc;
	(void)argv;
	rc = tsr_log_reopen();
	tsr_sbuf_printf(out, rc < 0 ? "cannot reopen log: %s\n" : "{\"reopened\": true}\n",
			strerror(-rc));
	return rc;
}

static int
cmd_version(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	(void)arg;
	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{\"version\": \"%s\", \"plugin_abi\": \"%d.%d\"}\n",
			TSR_VERSION, TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR);
	return 0;
}

/* ---- Signals ------------------------------------------------------------*/

static void
signal_event(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)arg;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			TSR_LOG_INFO(DAEMON, "SIGHUP: reopening the log file");
			tsr_log_reopen();
			break;
		case SIGTERM:
		case SIGINT:
			TSR_LOG_INFO(DAEMON, "%s from pid %u: stopping",
				     si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT",
				     si.ssi_pid);
			tsr_loop_stop(loop);
			break;
		}
	}
}

/* ---- Start-up -------------------------------------------------------------*/

/* mkdir -p for the directory part of path. */
static int
make_parent_dirs(const char *path, char *err, size_t errlen)
{
	char buf[4096];
	size_t n = tsr_strlcpy(buf, path, sizeof(buf));

	if (n >= sizeof(buf))
		return tsr_errf(err, errlen, -ENAMETOOLONG, "path too long: %s", path);
	char *slash = strrchr(buf, '/');
	if (slash == NULL || slash == buf)
		return 0;
	*slash = '\0';
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return tsr_errf(err, errlen, -errno,
						"cannot create directory %s: %s",
						buf, strerror(errno));
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

/* Fork; the parent waits for the child's verdict on start-up and exits
 * with it, so `tessera-osd -i 3` fails visibly when the daemon cannot
 * start.  Returns in the child only. */
static int
detach(struct tsr_daemon *d)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char status = 1;
		close(p[1]);
		/* Bounded: a start that hangs is reported, not waited on
		 * forever.  The daemon itself is left running. */
		for (int waited = 0; waited < START_WAIT_S; waited += 10) {
			if (poll(&pfd, 1, 10000) != 0)
				break;
			fprintf(stderr, "%s: still starting (pid %ld) after %d s...\n",
				d->name, (long)pid, waited + 10);
		}
		if (pfd.revents == 0) {
			fprintf(stderr, "%s: gave up waiting after %d s; it is still starting (pid %ld): see its log\n",
				d->name, START_WAIT_S, (long)pid);
			_exit(1);
		}
		if (read(p[0], &status, 1) != 1)
			status = 1; /* the child died before saying */
		_exit(status);
	}
	close(p[0]);
	d->ready_fd = p[1];
	setsid();
	return 0;
}

static void
report_ready(struct tsr_daemon *d, char status, bool detached)
{
	if (d->ready_fd < 0)
		return;
	ssize_t w = write(d->ready_fd, &status, 1);
	(void)w;
	close(d->ready_fd);
	d->ready_fd = -1;
	if (detached && status == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			if (tsr_log_path() != NULL)
				dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
	}
}

static int
setup(struct tsr_daemon *d, bool foreground, char *err, size_t errlen)
{
	const char *path;
	sigset_t mask;
	long stale = 0;
	int rc;

	path = tsr_conf_str(d->conf, "log_file");
	if (!foreground && path[0] == '\0') {
		/* detached with no log file: stderr would go nowhere */
		static char deflog[4200];
		snprintf(deflog, sizeof(deflog), "%s/%s.log",
			 tsr_conf_str(d->conf, "run_dir"), d->name);
		path = deflog;
	}
	if (path[0] != '\0') {
		if ((rc = make_parent_dirs(path, err, errlen)) < 0 ||
		    (rc = tsr_log_open(path, err, errlen)) < 0)
			return rc;
	}
	TSR_LOG_INFO(DAEMON, "%s %s starting (pid %ld, config %s)", d->name,
		     TSR_VERSION, (long)getpid(), tsr_conf_path(d->conf));

	path = tsr_conf_str(d->conf, "pid_file");
	if (path[0] != '\0') {
		if ((rc = make_parent_dirs(path, err, errlen)) < 0 ||
		    (rc = tsr_pidfile_create(path, &d->pid, &stale, err, errlen)) < 0)
			return rc;
		if (stale > 0 && stale != (long)getpid())
			TSR_LOG_WARN(DAEMON, "pid file %s named pid %ld, which is not running: replaced it",
				     path, stale);
	}

	/* Signals are taken through a signalfd on the loop, so handlers never
	 * run at awkward moments; block them before any thread exists so that
	 * every thread inherits the mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((rc = tsr_loop_create(&d->loop)) < 0)
		return tsr_errf(err, errlen, rc, "event loop: %s", strerror(-rc));
	d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sigfd < 0)
		return tsr_errf(err, errlen, -errno, "signalfd: %s", strerror(errno));
	if ((rc = tsr_loop_fd_add(d->loop, d->sigfd, TSR_EV_READ, signal_event, d)) < 0)
		return tsr_errf(err, errlen, rc, "event loop: %s", strerror(-rc));

	path = tsr_conf_str(d->conf, "admin_socket");
	if (path[0] != '\0') {
		if ((rc = make_parent_dirs(path, err, errlen)) < 0 ||
		    (rc = tsr_asok_create(d->loop, path, &d->asok, err, errlen)) < 0)
			return rc;
		tsr_asok_register(d->asok, "status", "name, pid, uptime and state of this daemon",
				  cmd_status, d);
		tsr_asok_register(d->asok, "version", "software version and plugin ABI",
				  cmd_version, d);
		tsr_asok_register(d->asok, "config show",
				  "every option in effect, with where it was set",
				  cmd_config_show, d);
		tsr_asok_register(d->asok, "log level",
				  "show levels, or set: log level [SUBSYSTEM] LEVEL",
				  cmd_log_level, d);
		tsr_asok_register(d->asok, "log reopen", "reopen the log file",
				  cmd_log_reopen, d);
	}

	d->reg = tsr_registry_create();
	if (d->reg == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	path = tsr_conf_str(d->conf, "plugin_dir");
	rc = tsr_registry_load_dir(d->reg, path, NULL, NULL, err, errlen);
	if (rc == -ENOENT) {
		/* no plugins yet is a state, not a failure: a daemon that
		 * needs one says so when it looks for it */
		TSR_LOG_WARN(DAEMON, "%s; continuing without plugins", err);
		rc = 0;
	}
	if (rc < 0)
		return rc;
	TSR_LOG_INFO(DAEMON, "%d plugins loaded from %s", rc, path);
	return 0;
}

/* The daemon's key, from the keyring the configuration names.  Daemon
 * types that are no cluster entity (tests' own) have none. */
static int
load_auth(struct tsr_daemon *d, char *err, size_t errlen)
{
	char name[TSR_AUTH_NAME_MAX];

	snprintf(name, sizeof(name), "%s.%s", d->def->type, d->id);
	if (!tsr_auth_name_valid(name, NULL))
		return 0;
	return tsr_auth_conf(d->conf, name, &d->auth, err, errlen);
}

static void
teardown(struct tsr_daemon *d)
{
	tsr_auth_destroy(d->auth);
	tsr_asok_destroy(d->asok);
	if (d->sigfd >= 0) {
		tsr_loop_fd_del(d->loop, d->sigfd);
		close(d->sigfd);
	}
	tsr_registry_destroy(d->reg);
	tsr_loop_destroy(d->loop);
	tsr_pidfile_remove(d->pid);
	tsr_conf_destroy(d->conf);
}

/* --mkfs: the plugins, then def->mkfs, in the foreground; no log file,
 * pid file, loop or admin socket (the daemon is not running). */
static int
run_mkfs(struct tsr_daemon *d, const char *prog)
{
	char err[1024] = "", shown[1200];
	const char *dir = tsr_conf_str(d->conf, "plugin_dir");
	int rc;

	if ((d->reg = tsr_registry_create()) == NULL) {
		rc = tsr_errf(err, sizeof(err), -ENOMEM, "out of memory");
	} else {
		rc = tsr_registry_load_dir(d->reg, dir, NULL, NULL, err, sizeof(err));
		if (rc == -ENOENT) { /* the plugin mkfs needs says it is missing */
			rc = 0;
			err[0] = '\0';
		}
	}
	if (rc >= 0)
		rc = d->def->mkfs(d, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s: mkfs failed: %s\n", prog,
			tsr_opt_quote(err, shown, sizeof(shown)));
	else
		printf("%s: %s\n", prog, err[0] ? err : "store prepared");
	tsr_registry_destroy(d->reg);
	tsr_conf_destroy(d->conf);
	return rc < 0 ? 1 : 0;
}

int
tsr_daemon_main(int argc, char **argv, const struct tsr_daemon_def *def)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "id", required_argument, NULL, 'i' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "mkfs", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 }
	};
	struct tsr_daemon d = { .def = def, .sigfd = -1, .ready_fd = -1 };
	const char *conf_path = DEFAULT_CONF, *id = NULL;
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool foreground = false, mkfs = false;
	char err[1024], shown[1200];
	int c, rc;

	while ((c = getopt_long(argc, argv, "c:i:fhVM", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': conf_path = optarg; break;
		case 'i': id = optarg; break;
		case 'f': foreground = true; break;
		case 'M':
			if (def->mkfs == NULL) {
				fprintf(stderr, "%s: --mkfs: a %s has no store to prepare "
					"(see --help)\n", prog, def->type);
				return 2;
			}
			mkfs = true;
			break;
		case 'h': usage(stdout, prog, def); return 0;
		case 'V':
			printf("%s %s (plugin ABI %d.%d)\n", prog, TSR_VERSION,
			       TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR);
			return 0;
		default:
			usage(stderr, prog, def);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog,
			argv[optind]);
		return 2;
	}
	if (id == NULL || id[0] == '\0') {
		fprintf(stderr, "%s: --id is required (see --help)\n", prog);
		return 2;
	}
	for (const char *p = id; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_') || p - id >= 30) {
			fprintf(stderr, "%s: --id '%s': use at most 30 letters, digits or '_'\n",
				prog, id);
			return 2;
		}
	}
	/* Make sure 0, 1 and 2 are open: a daemon started with them closed
	 * would otherwise hand those numbers to its log or sockets, and
	 * detaching (which points 0-2 at /dev/null) would clobber them. */
	int nullfd;
	while ((nullfd = open("/dev/null", O_RDWR)) >= 0 && nullfd <= 2)
		; /* at most three rounds */
	if (nullfd > 2)
		close(nullfd);
	tsr_strlcpy(d.id, id, sizeof(d.id));
	snprintf(d.name, sizeof(d.name), "%s-%s", def->type, id);
	tsr_log_set_ident(d.name);

	if ((rc = tsr_conf_load(conf_path, &d.conf, err, sizeof(err))) < 0 ||
	    (rc = tsr_conf_resolve(d.conf, def->type, id, def->options, err,
				   sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, tsr_opt_quote(err, shown, sizeof(shown)));
		tsr_conf_destroy(d.conf);
		return 1;
	}
	tsr_log_set_level(-1, tsr_log_level_parse(tsr_conf_str(d.conf, "log_level")));
	if (mkfs)
		return run_mkfs(&d, prog);

	if (!foreground && (rc = detach(&d)) < 0) {
		fprintf(stderr, "%s: cannot detach: %s\n", prog, strerror(-rc));
		tsr_conf_destroy(d.conf);
		return 1;
	}
	d.started_ns = tsr_mono_ns();
	err[0] = '\0';
	rc = setup(&d, foreground, err, sizeof(err));
	if (rc == 0)
		rc = load_auth(&d, err, sizeof(err));
	bool started = rc == 0 && def->start;
	if (started)
		rc = def->start(&d, err, sizeof(err));
	if (rc < 0) {
		/* it may quote the configuration file's bytes as they are */
		tsr_opt_quote(err, shown, sizeof(shown));
		TSR_LOG_ERR(DAEMON, "start-up failed: %s", shown);
		if (started && def->stop)
			def->stop(&d); /* undo what start managed to do */
		if (tsr_log_path() != NULL || foreground)
			fprintf(stderr, "%s: start-up failed: %s\n", prog, shown);
		report_ready(&d, 1, !foreground);
		teardown(&d);
		tsr_log_close();
		return 1;
	}
	TSR_LOG_INFO(DAEMON, "%s running", d.name);
	report_ready(&d, 0, !foreground);

	rc = tsr_loop_run(d.loop);
	if (rc < 0)
		TSR_LOG_ERR(DAEMON, "event loop failed: %s", strerror(-rc));
	if (def->stop)
		def->stop(&d);
	TSR_LOG_INFO(DAEMON, "%s stopped", d.name);
	teardown(&d);
	tsr_log_close();
	return rc < 0 ? 1 : 0;
}
