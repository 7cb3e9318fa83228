/* cmd_fs.c — `tessera fs ls|stat|mkdir|rm|rmdir|mv|ln|put|get|cat|getfattr|
 * setfattr`: the file system without a mount, through the file client
 * (tessera/fs.h) — thin commands, as a program would call the library. */
#include "cli.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/client.h>
#include <tessera/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4u << 20)

static void
fs_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera fs COMMAND [OPTIONS] ARGS\n"
		"\n"
		"The file system of the cluster, without mounting it: each command\n"
		"opens a session with the active MDS, does one thing and ends.\n"
		"Paths are absolute within the file system.\n"
		"\n"
		"  ls PATH               the entries of a directory (or the file), with\n"
		"                        type, mode, owner, size and name\n"
		"  stat PATH             an inode's attributes (symlinks not followed)\n"
		"  mkdir [-p] PATH       make a directory (-p: and its parents; no error\n"
		"                        when it exists)\n"
		"  rm [-r] PATH          remove a file or symlink (-r: a directory and\n"
		"                        everything under it)\n"
		"  rmdir PATH            remove an empty directory\n"
		"  mv FROM TO            rename (atomically; replaces TO as rename(2))\n"
		"  ln [-s] TARGET PATH   a hard link to TARGET (-s: a symlink holding it)\n"
		"  put LOCAL PATH        copy a local file in (- : standard input)\n"
		"  get PATH LOCAL        copy a file out (- : standard output)\n"
		"  cat PATH              the same as get PATH -\n"
		"  getfattr PATH NAME    an extended attribute's value, also the virtual\n"
		"                        tessera.dir.rbytes, rfiles, rsubdirs, rctime and\n"
		"                        tessera.{dir,file}.layout[.FIELD]\n"
		"  setfattr PATH NAME VALUE\n"
		"                        set one (tessera.dir.layout.object_size, ...\n"
		"                        set a layout: on a directory, or an empty file)\n"
		"\n"
		"Options:\n"
		"  -c, --conf FILE     the cluster's configuration ($TESSERA_CONF,\n"
		"                      default /etc/tessera/tessera.conf)\n"
		"  -n, --name NAME     the client to act as ($TESSERA_NAME, default\n"
		"                      client.admin)\n"
		"      --timeout MS    how long to wait for the monitors and an active\n"
		"                      MDS (default 15000)\n"
		"\n"
		"The commands act as root (uid 0) in the file system.\n"
		"Exit status: 0 done, 1 failed (the message says why), 2 usage error.\n");
}

struct fopts {
	const char *conf, *who;
	uint64_t timeout_ms;
	int recursive, parents, symbolic;
	int nargs;
	char *args[4];
};

static int
parse(int argc, char **argv, struct fopts *o)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->conf = getenv("TESSERA_CONF");
	o->who = getenv("TESSERA_NAME") ? getenv("TESSERA_NAME") : "client.admin";
	o->timeout_ms = 15000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:n:hrps", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->conf = optarg; break;
		case 'n': o->who = optarg; break;
		case 'r': o->recursive = 1; break;
		case 'p': o->parents = 1; break;
		case 's': o->symbolic = 1; break;
		case 't':
			if (cli_parse_uint("fs", NULL, "--timeout", optarg, 1, 3600000,
					   &o->timeout_ms) < 0)
				return CLI_USAGE;
			break;
		case 'h':
			fs_help(stdout);
			return -1;
		default:
			return cli_bad_option("fs", NULL, c, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (o->nargs == 4)
			return cli_usage_err("fs", NULL, "too many arguments (\"%s\")", argv[i]);
		o->args[o->nargs++] = argv[i];
	}
	return 0;
}

static char
type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	}
	return '-';
}

static void
print_entry(const char *name, const struct tsr_fs_stat *st)
{
	char perm[11];
	static const char rwx[] = "rwxrwxrwx";

	perm[0] = type_char(st->mode);
	for (int i = 0; i < 9; i++)
		perm[i + 1] = (st->mode & (1u << (8 - i))) ? rwx[i] : '-';
	perm[10] = '\0';
	printf("%s %3" PRIu32 " %5" PRIu32 " %5" PRIu32 " %12" PRIu64 " %s\n", perm,
	       st->nlink, st->uid, st->gid, st->size, name);
}

static int
ls_one(void *arg, const char *name, const struct tsr_fs_stat *st, uint64_t cookie)
{
	(void)arg;
	(void)cookie;
	print_entry(name, st);
	return 0;
}

static int
cmd_ls(struct tsr_fs *fs, struct fopts *o)
{
	struct tsr_fs_stat st;
	const char *path = o->nargs > 1 ? o->args[1] : "/";
	int rc;

	if ((rc = tsr_fs_walk(fs, NULL, path, 0, &st)) < 0)
		return cli_fail("fs", "ls", "%s: %s", path, tsr_fs_why());
	if (!S_ISDIR(st.mode)) {
		print_entry(path, &st);
		return 0;
	}
	if ((rc = tsr_fs_readdir(fs, NULL, st.ino, 0, 0, ls_one, NULL)) < 0)
		return cli_fail("fs", "ls", "%s: %s", path, tsr_fs_why());
	return 0;
}

static int
cmd_stat(struct tsr_fs *fs, struct fopts *o)
{
	struct tsr_fs_stat st;

	if (o->nargs != 2)
		return cli_usage_err("fs", "stat", "one PATH");
	if (tsr_fs_walk(fs, NULL, o->args[1], 1, &st) < 0)
		return cli_fail("fs", "stat", "%s: %s", o->args[1], tsr_fs_why());
	printf("{\"ino\": %" PRIu64 ", \"type\": \"%c\", \"mode\": \"%04o\", \"uid\": %" PRIu32
	       ", \"gid\": %" PRIu32 ", \"nlink\": %" PRIu32 ", \"size\": %" PRIu64
	       ", \"atime\": %" PRId64 ".%09" PRIu32 ", \"mtime\": %" PRId64 ".%09" PRIu32
	       ", \"ctime\": %" PRId64 ".%09" PRIu32 ", \"change\": %" PRIu64 "}\n",
	       st.ino, type_char(st.mode), st.mode & 07777, st.uid, st.gid, st.nlink, st.size,
	       st.atime.sec, st.atime.nsec, st.mtime.sec, st.mtime.nsec, st.ctime.sec,
	       st.ctime.nsec, st.change);
	return 0;
}

static int
mkdir_p(struct tsr_fs *fs, const char *path, int parents)
{
	char buf[4096], name[256];
	uint64_t parent;
	int rc;

	if (parents) {
		size_t n = strlen(path);
		if (n >= sizeof(buf))
			return -ENAMETOOLONG;
		memcpy(buf, path, n + 1);
		for (char *p = buf + 1; *p; p++) {
			if (*p != '/')
				continue;
			*p = '\0';
			if ((rc = mkdir_p(fs, buf, 0)) < 0 && rc != -EEXIST)
				return rc;
			*p = '/';
		}
	}
	if ((rc = tsr_fs_walk_parent(fs, NULL, path, &parent, name)) < 0)
		return rc;
	rc = tsr_fs_mkdir(fs, NULL, parent, name, 0755, NULL);
	if (rc == -EEXIST && parents) {
		struct tsr_fs_stat st;
		if (tsr_fs_walk(fs, NULL, path, 0, &st) == 0 && S_ISDIR(st.mode))
			return 0;
	}
	return rc;
}

struct rm_walk {
	struct tsr_fs *fs;
	char (*names)[256];
	uint32_t *modes;
	size_t n, cap;
};

static int
collect(void *arg, const char *name, const struct tsr_fs_stat *st, uint64_t cookie)
{
	struct rm_walk *w = arg;

	(void)cookie;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->names = realloc(w->names, w->cap * sizeof(*w->names));
		w->modes = realloc(w->modes, w->cap * sizeof(*w->modes));
		if (w->names == NULL || w->modes == NULL)
			return -ENOMEM;
	}
	tsr_strlcpy(w->names[w->n], name, sizeof(w->names[0]));
	w->modes[w->n++] = st->mode;
	return 0;
}

/* Remove everything in directory ino, depth first. */
static int
rm_tree(struct tsr_fs *fs, uint64_t ino, int depth)
{
	struct rm_walk w = { .fs = fs };
	int rc;

	if (depth > 256)
		return -ELOOP;
	if ((rc = tsr_fs_readdir(fs, NULL, ino, 0, 0, collect, &w)) < 0)
		goto out;
	for (size_t i = 0; i < w.n && rc == 0; i++) {
		if (S_ISDIR(w.modes[i])) {
			struct tsr_fs_stat st;
			if ((rc = tsr_fs_lookup(fs, NULL, ino, w.names[i], &st)) == 0 &&
			    (rc = rm_tree(fs, st.ino, depth + 1)) == 0)
				rc = tsr_fs_rmdir(fs, NULL, ino, w.names[i]);
		} else {
			rc = tsr_fs_unlink(fs, NULL, ino, w.names[i]);
		}
	}
out:
	free(w.names);
	free(w.modes);
	return rc;
}

static int
cmd_rm(struct tsr_fs *fs, struct fopts *o, int rmdir)
{
	const char *cmd = rmdir ? "rmdir" : "rm";
	struct tsr_fs_stat st;
	uint64_t parent;
	char name[256];
	int rc;

	if (o->nargs != 2)
		return cli_usage_err("fs", cmd, "one PATH");
	if (tsr_fs_walk_parent(fs, NULL, o->args[1], &parent, name) < 0 ||
	    tsr_fs_lookup(fs, NULL, parent, name, &st) < 0)
		return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
	if (S_ISDIR(st.mode) && !rmdir) {
		if (!o->recursive)
			return cli_fail("fs", cmd, "%s: a directory (rm -r, or rmdir)",
					o->args[1]);
		if ((rc = rm_tree(fs, st.ino, 0)) < 0)
			return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
		rmdir = 1;
	}
	rc = rmdir ? tsr_fs_rmdir(fs, NULL, parent, name) : tsr_fs_unlink(fs, NULL, parent, name);
	if (rc < 0)
		return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
	return 0;
}

static int
cmd_mv(struct tsr_fs *fs, struct fopts *o)
{
	uint64_t p1, p2;
	char n1[256], n2[256];

	if (o->nargs != 3)
		return cli_usage_err("fs", "mv", "FROM and TO");
	if (tsr_fs_walk_parent(fs, NULL, o->args[1], &p1, n1) < 0 ||
	    tsr_fs_walk_parent(fs, NULL, o->args[2], &p2, n2) < 0 ||
	    tsr_fs_rename(fs, NULL, p1, n1, p2, n2, 0) < 0)
		return cli_fail("fs", "mv", "%s -> %s: %s", o->args[1], o->args[2],
				tsr_fs_why());
	return 0;
}

static int
cmd_ln(struct tsr_fs *fs, struct fopts *o)
{
	struct tsr_fs_stat st;
	uint64_t parent;
	char name[256];

	if (o->nargs != 3)
		return cli_usage_err("fs", "ln", "TARGET and PATH");
	if (tsr_fs_walk_parent(fs, NULL, o->args[2], &parent, name) < 0)
		return cli_fail("fs", "ln", "%s: %s", o->args[2], tsr_fs_why());
	if (o->symbolic) {
		if (tsr_fs_symlink(fs, NULL, parent, name, o->args[1], NULL) < 0)
			return cli_fail("fs", "ln", "%s: %s", o->args[2], tsr_fs_why());
		return 0;
	}
	if (tsr_fs_walk(fs, NULL, o->args[1], 1, &st) < 0 ||
	    tsr_fs_link(fs, NULL, st.ino, parent, name, NULL) < 0)
		return cli_fail("fs", "ln", "%s -> %s: %s", o->args[1], o->args[2],
				tsr_fs_why());
	return 0;
}

static int
cmd_put(struct tsr_fs *fs, struct fopts *o)
{
	const char *local = o->nargs > 1 ? o->args[1] : NULL;
	struct tsr_file *f;
	uint64_t parent, off = 0;
	char name[256];
	uint8_t *buf;
	int fd, rc = 0;

	if (o->nargs != 3)
		return cli_usage_err("fs", "put", "LOCAL and PATH");
	fd = strcmp(local, "-") == 0 ? 0 : open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("fs", "put", "%s: %s", local, strerror(errno));
	if (tsr_fs_walk_parent(fs, NULL, o->args[2], &parent, name) < 0 ||
	    tsr_fs_create(fs, NULL, parent, name, 0644, O_WRONLY | O_TRUNC, &f, NULL) < 0) {
		rc = cli_fail("fs", "put", "%s: %s", o->args[2], tsr_fs_why());
		if (fd > 0)
			close(fd);
		return rc;
	}
	buf = tsr_xcalloc(1, CHUNK);
	for (;;) {
		ssize_t r = read(fd, buf, CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = cli_fail("fs", "put", "reading %s: %s", local, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		if (tsr_fs_write(f, buf, (size_t)r, off) < 0) {
			rc = cli_fail("fs", "put", "%s: %s", o->args[2], tsr_fs_why());
			break;
		}
		off += (uint64_t)r;
	}
	if (tsr_fs_close(f) < 0 && rc == 0)
		rc = cli_fail("fs", "put", "%s: %s", o->args[2], tsr_fs_why());
	free(buf);
	if (fd > 0)
		close(fd);
	return rc;
}

static int
cmd_get(struct tsr_fs *fs, struct fopts *o, const char *cmd)
{
	const char *local = o->nargs > 2 ? o->args[2] : "-";
	struct tsr_fs_stat st;
	struct tsr_file *f;
	uint64_t off = 0;
	uint8_t *buf;
	int fd, rc = 0;

	if (o->nargs < 2 || o->nargs > 3)
		return cli_usage_err("fs", cmd, "PATH [LOCAL]");
	if (tsr_fs_walk(fs, NULL, o->args[1], 0, &st) < 0 ||
	    tsr_fs_open(fs, NULL, st.ino, O_RDONLY, &f) < 0)
		return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
	fd = strcmp(local, "-") == 0 ? 1 : open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
						0644);
	if (fd < 0) {
		tsr_fs_close(f);
		return cli_fail("fs", cmd, "%s: %s", local, strerror(errno));
	}
	buf = tsr_xcalloc(1, CHUNK);
	for (;;) {
		ssize_t n = tsr_fs_read(f, buf, CHUNK, off);
		if (n < 0) {
			rc = cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
			break;
		}
		if (n == 0)
			break;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(fd, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				rc = cli_fail("fs", cmd, "writing %s: %s", local, strerror(errno));
				break;
			}
			w += k;
		}
		if (rc)
			break;
		off += (uint64_t)n;
	}
	tsr_fs_close(f);
	free(buf);
	if (fd > 1 && close(fd) < 0 && rc == 0)
		rc = cli_fail("fs", cmd, "%s: %s", local, strerror(errno));
	return rc;
}

static int
cmd_xattr(struct tsr_fs *fs, struct fopts *o, int set)
{
	const char *cmd = set ? "setfattr" : "getfattr";
	struct tsr_fs_stat st;
	char buf[65536 + 1];
	ssize_t n;

	if (o->nargs != (set ? 4 : 3))
		return cli_usage_err("fs", cmd, set ? "PATH NAME VALUE" : "PATH NAME");
	if (tsr_fs_walk(fs, NULL, o->args[1], 1, &st) < 0)
		return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
	if (set) {
		if (tsr_fs_setxattr(fs, NULL, st.ino, o->args[2], o->args[3],
				    strlen(o->args[3]), 0) < 0)
			return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
		return 0;
	}
	if ((n = tsr_fs_getxattr(fs, NULL, st.ino, o->args[2], buf, sizeof(buf) - 1)) < 0)
		return cli_fail("fs", cmd, "%s: %s", o->args[1], tsr_fs_why());
	buf[n] = '\0';
	printf("%s\n", buf);
	return 0;
}

static int
fs_run(int argc, char **argv)
{
	struct tsr_client *c = NULL;
	struct tsr_fs *fs = NULL;
	struct fopts o;
	char err[1024];
	int rc;

	if ((rc = parse(argc, argv, &o)) != 0)
		return rc < 0 ? 0 : rc;
	if (o.nargs == 0)
		return cli_usage_err("fs", NULL, "a command (ls, stat, mkdir, rm, rmdir, mv, "
				     "ln, put, get, cat, getfattr, setfattr)");
	const char *cmd = o.args[0];
	static const char *const known[] = { "ls", "stat", "mkdir", "rm", "rmdir", "mv",
					     "ln", "put", "get", "cat", "getfattr",
					     "setfattr", NULL };
	int ok = 0;
	for (int i = 0; known[i]; i++)
		ok |= strcmp(cmd, known[i]) == 0;
	if (!ok)
		return cli_usage_err("fs", NULL, "unknown command \"%s\"", cmd);
	tsr_log_set_level(TSR_SUB_MSG, TSR_LOG_ERROR);
	if (tsr_client_connect(o.conf, o.who, o.timeout_ms, &c, err, sizeof(err)) < 0)
		return cli_fail("fs", cmd, "%s", err);
	if (tsr_fs_mount(c, o.timeout_ms, &fs, err, sizeof(err)) < 0) {
		tsr_client_shutdown(c);
		return cli_fail("fs", cmd, "%s", err);
	}
	if (strcmp(cmd, "ls") == 0)
		rc = cmd_ls(fs, &o);
	else if (strcmp(cmd, "stat") == 0)
		rc = cmd_stat(fs, &o);
	else if (strcmp(cmd, "mkdir") == 0)
		rc = o.nargs != 2 ? cli_usage_err("fs", "mkdir", "one PATH")
		     : mkdir_p(fs, o.args[1], o.parents) < 0
			     ? cli_fail("fs", "mkdir", "%s: %s", o.args[1], tsr_fs_why())
			     : 0;
	else if (strcmp(cmd, "rm") == 0)
		rc = cmd_rm(fs, &o, 0);
	else if (strcmp(cmd, "rmdir") == 0)
		rc = cmd_rm(fs, &o, 1);
	else if (strcmp(cmd, "mv") == 0)
		rc = cmd_mv(fs, &o);
	else if (strcmp(cmd, "ln") == 0)
		rc = cmd_ln(fs, &o);
	else if (strcmp(cmd, "put") == 0)
		rc = cmd_put(fs, &o);
	else if (strcmp(cmd, "get") == 0 || strcmp(cmd, "cat") == 0)
		rc = cmd_get(fs, &o, cmd);
	else
		rc = cmd_xattr(fs, &o, strcmp(cmd, "setfattr") == 0);
	tsr_fs_unmount(fs);
	tsr_client_shutdown(c);
	return rc;
}

const struct cli_cmd cli_fs_cmds[] = {
	{ "fs", "ls|stat|mkdir|rm|rmdir|mv|ln|put|get|cat|getfattr|setfattr ...",
	  "the file system without a mount: list, make, move, copy in and out", fs_run,
	  fs_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
