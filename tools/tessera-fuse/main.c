/* main.c — tessera-fuse: mount a Tessera file system with the `fuse`
 * mount plugin (tessera/mount.h).
 *
 *   tessera-fuse MOUNTPOINT [-o OPTIONS] [-f] [-d]
 *   mount.fuse.tessera SOURCE MOUNTPOINT [-o OPTIONS]     (mount(8), fstab)
 *
 * It connects the file client (tessera/fs.h) — the client library, the
 * session with the MDS — finds the mount plugin in plugin_dir and hands it
 * the file client's calls.  Unless -f, it returns once the file system is
 * mounted (or says why it is not): a child serves it, detached.
 */
#include "config/config.h"
#include "config/options.h"
#include "log/log.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/client.h>
#include <tessera/fs.h>
#include <tessera/mount.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARGS 64

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: tessera-fuse MOUNTPOINT [-o OPTIONS] [-f] [-d]\n"
		"       mount.fuse.tessera SOURCE MOUNTPOINT [-o OPTIONS]\n"
		"       mount -t fuse.tessera none MOUNTPOINT -o conf=FILE[,...]\n"
		"\n"
		"Mount the cluster's file system at MOUNTPOINT through FUSE.  It returns\n"
		"once the file system is mounted, or says why it is not; a process of its\n"
		"own serves it until `fusermount3 -u MOUNTPOINT` or `umount MOUNTPOINT`.\n"
		"\n"
		"Options (-o, separated by commas):\n"
		"  conf=FILE          the cluster's configuration ($TESSERA_CONF, default\n"
		"                     /etc/tessera/tessera.conf)\n"
		"  name=NAME          the client to act as (client.NAME, default\n"
		"                     client.admin); its key is in the configuration's keyring\n"
		"  subdir=PATH        mount this directory of the file system as the root\n"
		"  attr_timeout=SEC   how long the kernel keeps attributes (default 1)\n"
		"  entry_timeout=SEC  how long the kernel keeps names (default 1)\n"
		"  max_threads=N      FUSE worker threads at most (default 64)\n"
		"  any other option goes to FUSE (ro, allow_other, ...); allow_other and\n"
		"  default_permissions are on unless noallow_other, and the kernel checks\n"
		"  permissions as well as the MDS\n"
		"\n"
		"  -f                 stay in the foreground\n"
		"  -d                 FUSE's debug output (implies -f)\n"
		"  -h, --help         this help\n"
		"\n"
		"In /etc/fstab:\n"
		"  none  /mnt/tessera  fuse.tessera  conf=/etc/tessera/tessera.conf,_netdev  0 0\n"
		"\n"
		"Exit status: 0 mounted (or, with -f, unmounted cleanly), 1 failed (the\n"
		"message says why), 2 usage error.\n");
}

struct opts {
	const char *mountpoint;
	const char *conf, *name, *subdir;
	int foreground, debug, allow_other;
	char *fuse_opts;             /* what goes to FUSE, comma separated */
	struct tsr_srcval plugin[8]; /* options of the plugin */
	size_t nplugin;
	char *storage[64];           /* copies the above point into */
	size_t nstorage;
};

static char *
keep(struct opts *o, const char *s, size_t n)
{
	char *c = tsr_xcalloc(1, n + 1);

	memcpy(c, s, n);
	if (o->nstorage < sizeof(o->storage) / sizeof(o->storage[0]))
		o->storage[o->nstorage++] = c;
	return c;
}

static void
add_fuse_opt(struct opts *o, const char *opt)
{
	size_t old = o->fuse_opts ? strlen(o->fuse_opts) : 0;
	char *n = realloc(o->fuse_opts, old + strlen(opt) + 2);

	if (n == NULL)
		abort();
	if (old)
		n[old++] = ',';
	strcpy(n + old, opt);
	o->fuse_opts = n;
}

/* One -o list: ours are taken, the plugin's kept as its options, the rest
 * go to FUSE.  0, or 2 after a message. */
static int
parse_o(struct opts *o, const char *list)
{
	static const char *const plugin_keys[] = { "attr_timeout", "entry_timeout",
						   "max_threads", NULL };
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");
		char *item = keep(o, p, n), *eq = strchr(item, '=');
		const char *val = eq ? eq + 1 : NULL;
		int taken = 0;

		if (eq)
			*eq = '\0';
		if (strcmp(item, "conf") == 0 || strcmp(item, "name") == 0 ||
		    strcmp(item, "subdir") == 0) {
			if (val == NULL || *val == '\0') {
				fprintf(stderr, "tessera-fuse: -o %s needs a value (%s=...)\n",
					item, item);
				return 2;
			}
			if (item[0] == 'c')
				o->conf = val;
			else if (item[0] == 'n')
				o->name = val;
			else
				o->subdir = val;
			taken = 1;
		} else if (strcmp(item, "noallow_other") == 0) {
			o->allow_other = 0;
			taken = 1;
		} else if (strcmp(item, "allow_other") == 0 ||
			   strcmp(item, "default_permissions") == 0 ||
			   strcmp(item, "_netdev") == 0 || strcmp(item, "rw") == 0 ||
			   strcmp(item, "defaults") == 0 || strcmp(item, "auto") == 0 ||
			   strcmp(item, "noauto") == 0 || strcmp(item, "user") == 0 ||
			   strcmp(item, "nouser") == 0) {
			taken = 1; /* on already, or mount(8)'s own */
		}
		for (int i = 0; !taken && plugin_keys[i]; i++) {
			if (strcmp(item, plugin_keys[i]) != 0)
				continue;
			if (val == NULL || o->nplugin == 8) {
				fprintf(stderr, "tessera-fuse: -o %s needs a value\n", item);
				return 2;
			}
			o->plugin[o->nplugin].name = item;
			o->plugin[o->nplugin].kind = TSR_SRC_TEXT;
			o->plugin[o->nplugin].s = val;
			o->plugin[o->nplugin].where = "-o";
			o->nplugin++;
			taken = 1;
		}
		if (!taken) {
			if (eq)
				*eq = '=';
			add_fuse_opt(o, item);
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	const char *prog = basename(argv[0]);
	int helper = strncmp(prog, "mount.", 6) == 0; /* mount.fuse.tessera SOURCE MP */
	int npos = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	o->allow_other = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		} else if (strcmp(a, "-f") == 0) {
			o->foreground = 1;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = o->foreground = 1;
		} else if (strcmp(a, "-o") == 0) {
			if (i + 1 == argc) {
				fprintf(stderr, "tessera-fuse: -o needs OPTIONS\n");
				return 2;
			}
			if ((rc = parse_o(o, argv[++i])) != 0)
				return rc;
		} else if (strncmp(a, "-o", 2) == 0) {
			if ((rc = parse_o(o, a + 2)) != 0)
				return rc;
		} else if (a[0] == '-' && a[1] != '\0') {
			/* mount(8)'s -n, -s, -v */
			if (helper && (strcmp(a, "-n") == 0 || strcmp(a, "-s") == 0 ||
				       strcmp(a, "-v") == 0))
				continue;
			fprintf(stderr, "tessera-fuse: unknown option %s (see --help)\n", a);
			return 2;
		} else {
			npos++;
			/* the helper's SOURCE comes first and names nothing */
			if (!helper || npos == 2)
				o->mountpoint = a;
		}
	}
	if (npos != (helper ? 2 : 1) || o->mountpoint == NULL) {
		fprintf(stderr, "tessera-fuse: %s (see --help)\n",
			helper ? "give SOURCE and MOUNTPOINT" : "give one MOUNTPOINT");
		return 2;
	}
	return 0;
}

/* ---- Telling the parent ---- */

static int ready_fd = -1;

static void
tell_parent(const char *msg)
{
	if (ready_fd < 0)
		return;
	if (write(ready_fd, msg, strlen(msg)) < 0) {
		/* the parent is gone: nobody to tell */
	}
	close(ready_fd);
	ready_fd = -1;
}

static void
mounted(void *arg)
{
	(void)arg;
	tell_parent("ok");
	if (!isatty(2) || ready_fd < 0) {
		/* detached: nothing more to say on the terminal */
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			close(null);
		}
	}
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ready_fd >= 0)
		tell_parent(msg);
	else
		fprintf(stderr, "tessera-fuse: %s\n", msg);
	return 1;
}

/* Fork: the parent waits for the child to say "ok" or why not. */
static int
detach(void)
{
	int p[2];
	pid_t pid;
	char buf[1536];
	ssize_t n, got = 0;

	if (pipe(p) < 0)
		return -errno;
	if ((pid = fork()) < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		while ((n = read(p[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
			got += n;
		buf[got] = '\0';
		if (strcmp(buf, "ok") == 0)
			_exit(0);
		fprintf(stderr, "tessera-fuse: %s\n", got ? buf : "the mount ended before it "
			"was made (see the log)");
		_exit(1);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
	return 0;
}

/* ---- The file client's table ---- */

static void
fill_table(struct tsr_mount_fs *t, struct tsr_fs *fs)
{
	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->fs = fs;
	t->why = tsr_fs_why;
	t->lookup = tsr_fs_lookup;
	t->getattr = tsr_fs_getattr;
	t->setattr = tsr_fs_setattr;
	t->mknod = tsr_fs_mknod;
	t->mkdir = tsr_fs_mkdir;
	t->symlink = tsr_fs_symlink;
	t->readlink = tsr_fs_readlink;
	t->unlink = tsr_fs_unlink;
	t->rmdir = tsr_fs_rmdir;
	t->rename = tsr_fs_rename;
	t->link = tsr_fs_link;
	t->readdir = tsr_fs_readdir;
	t->getxattr = tsr_fs_getxattr;
	t->setxattr = tsr_fs_setxattr;
	t->listxattr = tsr_fs_listxattr;
	t->removexattr = tsr_fs_removexattr;
	t->open = tsr_fs_open;
	t->create = tsr_fs_create;
	t->read = tsr_fs_read;
	t->write = tsr_fs_write;
	t->fsync = tsr_fs_fsync;
	t->close = tsr_fs_close;
	t->fallocate = tsr_fs_fallocate;
	t->getlk = tsr_fs_getlk;
	t->setlk = tsr_fs_setlk;
	t->statfs = tsr_fs_statfs;
	t->fsetattr = tsr_fs_fsetattr;
	t->keep_cache = tsr_fs_keep_cache;
	t->set_inval = tsr_fs_set_inval;
	t->flush = tsr_fs_flush;
	t->fsyncdir = tsr_fs_fsyncdir;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct tsr_client *c = NULL;
	struct tsr_fs *fs = NULL;
	struct tsr_conf *conf = NULL;
	struct tsr_registry *reg = NULL;
	const struct tsr_plugin *plugin;
	struct tsr_instance *inst = NULL;
	struct tsr_core_host host;
	struct tsr_mount_fs table;
	struct tsr_mount_args args;
	struct tsr_fs_stat st;
	char err[1024], who[96], *fargv[MAX_ARGS];
	int fargc = 0, rc, status = 1;
	sigset_t sigs;
	struct stat mp;

	if ((rc = parse(argc, argv, &o)) != 0)
		return rc < 0 ? 0 : rc;
	if (stat(o.mountpoint, &mp) < 0 || !S_ISDIR(mp.st_mode)) {
		fprintf(stderr, "tessera-fuse: %s: %s\n", o.mountpoint,
			errno ? strerror(errno) : "not a directory");
		return 1;
	}
	if (o.conf == NULL)
		o.conf = getenv("TESSERA_CONF") ? getenv("TESSERA_CONF")
						: "/etc/tessera/tessera.conf";
	snprintf(who, sizeof(who), "%s%s", o.name && strncmp(o.name, "client.", 7) != 0
		 ? "client." : "", o.name ? o.name : "client.admin");
	/* the threads the client starts must not take the stop signals:
	 * FUSE's (which libfuse's handlers interrupt) do */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (!o.foreground && detach() < 0) {
		fprintf(stderr, "tessera-fuse: cannot fork: %s\n", strerror(errno));
		return 1;
	}
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	if (tsr_client_connect(o.conf, who, 30000, &c, err, sizeof(err)) < 0) {
		status = fail("%s", err);
		goto out;
	}
	if (tsr_fs_mount(c, 30000, &fs, err, sizeof(err)) < 0) {
		status = fail("%s", err);
		goto out;
	}
	if (tsr_fs_walk(fs, NULL, o.subdir ? o.subdir : "/", 0, &st) < 0) {
		status = fail("subdir %s: %s", o.subdir ? o.subdir : "/", tsr_fs_why());
		goto out;
	}
	if (!S_ISDIR(st.mode)) {
		status = fail("subdir %s: not a directory", o.subdir);
		goto out;
	}
	/* the plugin */
	if ((rc = tsr_conf_load(o.conf, &conf, err, sizeof(err))) < 0 ||
	    (rc = tsr_conf_resolve(conf, "client", who + 7, NULL, err, sizeof(err))) < 0) {
		status = fail("%s", err);
		goto out;
	}
	reg = tsr_registry_create();
	if (reg == NULL ||
	    tsr_registry_load_dir(reg, tsr_conf_str(conf, "plugin_dir"), NULL, NULL, err,
				  sizeof(err)) < 0) {
		status = fail("plugins: %s", reg ? err : "out of memory");
		goto out;
	}
	if ((plugin = tsr_registry_find(reg, TSR_KIND_MOUNT, "fuse")) == NULL) {
		status = fail("no mount plugin \"fuse\" in %s (plugin_dir)",
			      tsr_conf_str(conf, "plugin_dir"));
		goto out;
	}
	tsr_core_host_init(&host, "fuse", conf, NULL);
	if (tsr_instance_create(plugin, &host.host, o.plugin, o.nplugin, &inst, err,
				sizeof(err)) < 0) {
		status = fail("the fuse plugin: %s", err);
		goto out;
	}
	/* FUSE's arguments */
	fargv[fargc++] = argv[0];
	if (o.debug)
		fargv[fargc++] = "-d";
	if (o.allow_other)
		add_fuse_opt(&o, "allow_other");
	add_fuse_opt(&o, "default_permissions");
	add_fuse_opt(&o, "fsname=tessera");
	add_fuse_opt(&o, "subtype=tessera");
	fargv[fargc++] = "-o";
	fargv[fargc++] = o.fuse_opts;
	fargv[fargc] = NULL;
	fill_table(&table, fs);
	memset(&args, 0, sizeof(args));
	args.size = sizeof(args);
	args.mountpoint = o.mountpoint;
	args.root = st.ino;
	args.foreground = o.foreground;
	args.argc = fargc;
	args.argv = fargv;
	args.mounted = mounted;
	pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
	{
		const struct tsr_mount_ops *ops = tsr_instance_ops(inst);
		rc = ops->serve(tsr_instance_handle(inst), &table, &args, err, sizeof(err));
	}
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (rc < 0)
		status = fail("%s", err);
	else
		status = 0;
out:
	tsr_instance_destroy(inst);
	tsr_registry_destroy(reg);
	tsr_conf_destroy(conf);
	tsr_fs_unmount(fs);
	tsr_client_shutdown(c);
	for (size_t i = 0; i < o.nstorage; i++)
		free(o.storage[i]);
	free(o.fuse_opts);
	return status;
}
