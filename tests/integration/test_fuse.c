/* test_fuse.c — the FUSE mount end to end: real monitors, OSDs and MDSs on
 * loopback, tessera-fuse mounting the file system on directories of the
 * test's own, and programs using it through the kernel.
 *
 *   posix      one case per system call and errno, times, permissions and
 *              ownership for a user who is not root (a child that drops to
 *              uid 1000), sticky and setgid directories, xattrs, the
 *              virtual ones, symlinks, hard links, FIFOs, large sparse
 *              files, O_APPEND, O_EXCL, O_TRUNC
 *   workloads  a source tree copied and compared, a C project built with
 *              make, SQLite with its integrity check, git commits and
 *              fsck, a tar round trip keeping modes, times and links
 *   coherence  two mounts: what one writes and closes the other reads; a
 *              stat after the other's write shows its size and mtime;
 *              POSIX and flock locks held through one are met through the
 *              other, and granted once let go
 *   failover   the active MDS SIGKILLed while a child creates and renames
 *              through the mount: it goes on, and every change is there
 *   fsx        random writes, reads, truncates, holes, fallocate, mmap
 *              writes and reads, fsyncs and reopens, each checked against
 *              a reference in memory (FSX_OPS, FSX_SEED)
 *   osd_kill   an OSD SIGKILLed while a child writes and fsyncs files
 *              through the mount: every fsynced file reads back whole
 *
 * Each case unmounts (fusermount3 -u) and stops its daemons, failing or
 * not.  Without /dev/fuse the cases are skipped.
 */
#include "cluster/cluster.h"
#include "cluster/tc_check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define FAST_MDS                                                               \
	"backend_options = \"journal_size=8M\"; osd_beacon_interval = \"300ms\"; " \
	"mds_beacon_interval = \"200ms\"; mon_mds_beacon_grace = \"2s\"; "     \
	"mds_writeback_interval = \"200ms\";"

struct mnt {
	char dir[300];
	char errpath[400];           /* its stderr */
	pid_t pid;
};

static int
is_mounted(const char *dir)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[1024];
	int yes = 0;

	if (f == NULL)
		return 0;
	while (!yes && fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');
		if (sp && strncmp(sp + 1, dir, strlen(dir)) == 0 &&
		    sp[1 + strlen(dir)] == ' ' && strstr(line, "fuse.tessera"))
			yes = 1;
	}
	fclose(f);
	return yes;
}

/* tessera-fuse in the foreground on c->dir/name, with extra -o options. */
static void
mount_fs(struct tc_cluster *c, struct mnt *m, const char *name, const char *opts)
{
	const char *prog = getenv("TESSERA_FUSE");
	char o[1024], errpath[400];
	uint64_t t0;

	ck_assert_ptr_nonnull(prog);
	snprintf(m->dir, sizeof(m->dir), "%s/%s", c->dir, name);
	ck_assert_int_eq(mkdir(m->dir, 0755), 0);
	snprintf(o, sizeof(o), "conf=%s%s%s", c->conf, opts ? "," : "", opts ? opts : "");
	snprintf(errpath, sizeof(errpath), "%s/log/fuse-%s.stderr", c->dir, name);
	snprintf(m->errpath, sizeof(m->errpath), "%s", errpath);
	m->pid = fork();
	ck_assert_int_ge(m->pid, 0);
	if (m->pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		/* it unmounts when the test that started it dies */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd >= 0)
			dup2(fd, 2);
		execl(prog, prog, m->dir, "-f", "-o", o, (char *)NULL);
		_exit(127);
	}
	t0 = tc_now_ms();
	while (!is_mounted(m->dir) && tc_now_ms() - t0 < 30000) {
		int st;
		ck_assert_msg(waitpid(m->pid, &st, WNOHANG) == 0, "tessera-fuse ended (%x): "
			      "see %s", st, errpath);
		tc_sleep_ms(50);
	}
	ck_assert_msg(is_mounted(m->dir), "%s not mounted after 30 s", m->dir);
}

static void
umount_fs(struct mnt *m)
{
	int st = 0;
	uint64_t t0 = tc_now_ms();
	pid_t um;

	if (m->pid <= 0)
		return;
	/* lazily: a test that failed may leave a file open */
	if ((um = fork()) == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", m->dir, (char *)NULL);
		_exit(127);
	}
	while (waitpid(m->pid, &st, WNOHANG) == 0 && tc_now_ms() - t0 < 15000)
		tc_sleep_ms(50);
	if (tc_now_ms() - t0 >= 15000) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, &st, 0);
	}
	if (um > 0)
		waitpid(um, NULL, 0);
	m->pid = 0;
	/* a clean unmount ends it with 0, and nothing from the sanitizers
	 * (a leak report at exit, under ASan) */
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tessera-fuse on %s ended with "
		      "status %x", m->dir, st);
	{
		FILE *f = fopen(m->errpath, "r");
		char line[512];
		while (f && fgets(line, sizeof(line), f))
			ck_assert_msg(strstr(line, "Sanitizer") == NULL &&
				      strstr(line, "runtime error") == NULL,
				      "tessera-fuse on %s: %s", m->dir, line);
		if (f)
			fclose(f);
	}
}

static char *
path(const struct mnt *m, const char *rel)
{
	static char p[4][600];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", m->dir, rel);
	return p[k];
}

/* call must fail with errno e. */
#define FAILS(call, e)                                                          \
	do {                                                                   \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		ck_assert_msg(r_ == -1 && errno == (e), "%s: %ld, errno %d (%s), not %s", \
			      #call, r_, errno, strerror(errno), strerror(e)); \
	} while (0)
#define WORKS(call)                                                             \
	do {                                                                   \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		ck_assert_msg(r_ >= 0, "%s: %ld (%s)", #call, r_, strerror(errno)); \
	} while (0)

static int
fuse_usable(void)
{
	return access("/dev/fuse", R_OK | W_OK) == 0;
}

/* As uid/gid 1000 in a child: run fn, which returns an exit code (0 ok). */
static int
as_user(int (*fn)(const struct mnt *), const struct mnt *m)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		gid_t g = 1000;
		if (setgroups(1, &g) < 0 || setgid(1000) < 0 || setuid(1000) < 0)
			_exit(100);
		_exit(fn(m));
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

/* Step n failed: say how, and return n. */
static int
step(int n, const char *what)
{
	fprintf(stderr, "as uid 1000, step %d (%s): errno %d (%s)\n", n, what, errno,
		strerror(errno));
	return n;
}

static int
user_checks(const struct mnt *m)
{
	int fd;

	/* the root of the mount is root's 0755 */
	if (mkdir(path(m, "u"), 0755) == 0 || errno != EACCES)
		return step(1, "see the test");
	/* a sticky 1777 directory: make, but not remove root's file */
	if ((fd = open(path(m, "tmp/mine"), O_CREAT | O_WRONLY | O_EXCL, 0600)) < 0)
		return step(2, "see the test");
	close(fd);
	if (unlink(path(m, "tmp/roots")) == 0 || errno != EPERM)
		return step(3, "see the test");
	if (rename(path(m, "tmp/roots"), path(m, "tmp/x")) == 0 || errno != EPERM)
		return step(4, "see the test");
	/* root's 0600 file: neither read nor chmod */
	if (open(path(m, "tmp/roots"), O_RDONLY) >= 0 || errno != EACCES)
		return step(5, "see the test");
	if (chmod(path(m, "tmp/roots"), 0777) == 0 || errno != EPERM)
		return step(6, "see the test");
	if (chown(path(m, "tmp/mine"), 0, 0) == 0 || errno != EPERM)
		return step(7, "see the test");
	/* times: only the owner sets them, anyone with write sets "now" */
	struct timespec ts[2] = { { 5, 0 }, { 5, 0 } };
	if (utimensat(AT_FDCWD, path(m, "tmp/roots"), ts, 0) == 0 || errno != EPERM)
		return step(8, "see the test");
	if (utimensat(AT_FDCWD, path(m, "tmp/mine"), ts, 0) < 0)
		return step(9, "see the test");
	/* a setgid directory of group 4242: new entries take its group */
	if ((fd = open(path(m, "sgid/f"), O_CREAT | O_WRONLY, 0644)) < 0)
		return step(10, "see the test");
	close(fd);
	struct stat st;
	if (stat(path(m, "sgid/f"), &st) < 0 || st.st_gid != 4242 || st.st_uid != 1000)
		return step(11, "see the test");
	if (unlink(path(m, "tmp/mine")) < 0)
		return step(12, "see the test");
	/* trusted xattrs are root's */
	if (setxattr(path(m, "sgid/f"), "trusted.x", "1", 1, 0) == 0 || errno != EPERM)
		return step(13, "see the test");
	/* a file made read-only by the open that makes it is writable through
	 * that open (git writes its objects so) */
	if ((fd = open(path(m, "tmp/ro"), O_CREAT | O_EXCL | O_RDWR, 0444)) < 0)
		return step(14, "open(O_CREAT, 0444)");
	if (write(fd, "ro", 2) != 2)
		return step(15, "write to a new 0444 file");
	close(fd);
	if ((fd = open(path(m, "tmp/ro2"), O_CREAT | O_EXCL | O_RDWR, 0444)) < 0 ||
	    ftruncate(fd, 10) < 0)
		return step(19, "ftruncate through the open that made a 0444 file");
	close(fd);
	if (unlink(path(m, "tmp/ro2")) < 0)
		return step(20, "unlink");
	if (open(path(m, "tmp/ro"), O_WRONLY) >= 0 || errno != EACCES)
		return step(16, "a 0444 file opened again for writing");
	if (truncate(path(m, "tmp/roots"), 0) == 0 || errno != EACCES)
		return step(17, "truncate of root's 0600 file");
	if (unlink(path(m, "tmp/ro")) < 0)
		return step(18, "unlink");
	return 0;
}

START_TEST(posix)
{
	struct tc_cluster c;
	struct mnt m = { 0 };
	struct stat st, st2;
	char buf[8192];
	int fd;

	if (!fuse_usable()) {
		fprintf(stderr, "posix: no /dev/fuse here: skipped\n");
		return;
	}
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS), 0);
	ck_assert_msg(tc_fs_start(&c, 1) == 0, "the file system did not start");
	mount_fs(&c, &m, "mnt", "attr_timeout=0,entry_timeout=0");

	/* mkdir, rmdir */
	WORKS(mkdir(path(&m, "d"), 0755));
	FAILS(mkdir(path(&m, "d"), 0755), EEXIST);
	FAILS(mkdir(path(&m, "nope/x"), 0755), ENOENT);
	WORKS(mkdir(path(&m, "d/e"), 0755));
	FAILS(rmdir(path(&m, "d")), ENOTEMPTY);
	FAILS(rename(path(&m, "d"), path(&m, "d/e/f")), EINVAL);
	{
		char long_name[700];
		size_t n = (size_t)snprintf(long_name, sizeof(long_name), "%s/", m.dir);
		memset(long_name + n, 'n', 256);
		long_name[n + 256] = '\0';
		FAILS(mkdir(long_name, 0755), ENAMETOOLONG);
	}
	/* files: O_EXCL, O_TRUNC, O_APPEND, ENOTDIR, EISDIR */
	WORKS(fd = open(path(&m, "d/f"), O_CREAT | O_EXCL | O_WRONLY, 0644));
	WORKS(write(fd, "hello", 5));
	WORKS(close(fd));
	FAILS(open(path(&m, "d/f"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	FAILS(mkdir(path(&m, "d/f/x"), 0755), ENOTDIR);
	FAILS(open(path(&m, "d"), O_WRONLY), EISDIR);
	FAILS(unlink(path(&m, "d/e")), EISDIR);
	FAILS(rmdir(path(&m, "d/f")), ENOTDIR);
	WORKS(fd = open(path(&m, "d/f"), O_WRONLY | O_APPEND));
	WORKS(write(fd, " world", 6));
	WORKS(close(fd));
	WORKS(fd = open(path(&m, "d/f"), O_RDONLY));
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 11);
	ck_assert_int_eq(memcmp(buf, "hello world", 11), 0);
	WORKS(close(fd));
	WORKS(fd = open(path(&m, "d/f"), O_WRONLY | O_TRUNC));
	WORKS(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 0);
	WORKS(close(fd));
	/* a sparse file past 4 GiB */
	WORKS(fd = open(path(&m, "big"), O_CREAT | O_RDWR, 0644));
	ck_assert_int_eq(pwrite(fd, "end", 3, (5ll << 30)), 3);
	WORKS(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, (5ll << 30) + 3);
	ck_assert_int_eq(pread(fd, buf, 100, 3ll << 30), 100);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(buf[i], 0);
	ck_assert_int_eq(pread(fd, buf, 10, 5ll << 30), 3);
	ck_assert_int_eq(memcmp(buf, "end", 3), 0);
	WORKS(ftruncate(fd, 1000));
	WORKS(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1000);
	WORKS(close(fd));
	/* unlinked while open: the data stays until the last close */
	{
		char got[16];
		struct dirent *de;
		DIR *dp;
		int hidden = 0;
		WORKS(fd = open(path(&m, "gone"), O_CREAT | O_RDWR, 0644));
		ck_assert_int_eq(write(fd, "still here", 10), 10);
		WORKS(unlink(path(&m, "gone")));
		FAILS(stat(path(&m, "gone"), &st), ENOENT);
		ck_assert_int_eq(pread(fd, got, sizeof(got), 0), 10);
		ck_assert_int_eq(memcmp(got, "still here", 10), 0);
		WORKS(close(fd));
		ck_assert_ptr_nonnull(dp = opendir(m.dir));
		while ((de = readdir(dp)) != NULL)
			hidden += strncmp(de->d_name, ".tessera_hidden", 15) == 0;
		closedir(dp);
		ck_assert_msg(hidden == 0, "a hidden name outlived the last close");
	}
	/* two appenders on one file: every byte lands */
	{
		int a, b;
		WORKS(a = open(path(&m, "log"), O_CREAT | O_WRONLY | O_APPEND, 0644));
		WORKS(b = open(path(&m, "log"), O_WRONLY | O_APPEND));
		for (int i = 0; i < 20; i++) {
			ck_assert_int_eq(write(i % 2 ? a : b, "0123456789", 10), 10);
		}
		WORKS(close(a));
		WORKS(close(b));
		WORKS(stat(path(&m, "log"), &st));
		ck_assert_int_eq(st.st_size, 200);
	}
	/* a truncate below what this mount wrote and has not closed: the
	 * bytes cut read as zeros when the file grows again */
	{
		static char big[1 << 20];
		memset(big, 'x', sizeof(big));
		WORKS(fd = open(path(&m, "cut"), O_CREAT | O_RDWR, 0644));
		for (int i = 0; i < 6; i++)
			ck_assert_int_eq(write(fd, big, sizeof(big)), (int)sizeof(big));
		WORKS(ftruncate(fd, 4096));
		ck_assert_int_eq(pwrite(fd, "y", 1, 6 << 20), 1);
		ck_assert_int_eq(pread(fd, big, sizeof(big), 1 << 20), (int)sizeof(big));
		for (size_t i = 0; i < sizeof(big); i++)
			ck_assert_msg(big[i] == 0, "byte %zu after the cut reads %d", i + (1 << 20),
				      big[i]);
		WORKS(close(fd));
	}
	/* fallocate: the default mode grows the file, a punched hole reads
	 * as zeros and keeps the size */
	{
		char got[300];
		WORKS(fd = open(path(&m, "falloc"), O_CREAT | O_RDWR, 0644));
		ck_assert_int_eq(write(fd, "abcdefghijklmnopqrstuvwxyz", 26), 26);
		WORKS(fallocate(fd, 0, 0, 300));
		WORKS(fstat(fd, &st));
		ck_assert_int_eq(st.st_size, 300);
		WORKS(fstat(fd, &st2));
		tc_sleep_ms(10);
		WORKS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5, 10));
		WORKS(fstat(fd, &st));
		ck_assert_int_eq(st.st_size, 300);
		ck_assert_msg(st.st_mtim.tv_sec > st2.st_mtim.tv_sec ||
			      (st.st_mtim.tv_sec == st2.st_mtim.tv_sec &&
			       st.st_mtim.tv_nsec > st2.st_mtim.tv_nsec),
			      "a punched hole left mtime as it was");
		ck_assert_int_eq(pread(fd, got, sizeof(got), 0), 300);
		ck_assert_int_eq(memcmp(got, "abcde", 5), 0);
		for (int i = 5; i < 15; i++)
			ck_assert_int_eq(got[i], 0);
		ck_assert_int_eq(memcmp(got + 15, "pqrstuvwxyz", 11), 0);
		for (int i = 26; i < 300; i++)
			ck_assert_int_eq(got[i], 0);
		FAILS(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096), EOPNOTSUPP);
		WORKS(close(fd));
	}
	/* times: mtime moves with a write, ctime with chmod; ns kept */
	{
		struct timespec ts[2] = { { 1000000000, 123456789 }, { 1000000001, 987654321 } };
		WORKS(utimensat(AT_FDCWD, path(&m, "big"), ts, 0));
		WORKS(stat(path(&m, "big"), &st));
		ck_assert_int_eq(st.st_atim.tv_sec, 1000000000);
		ck_assert_int_eq(st.st_atim.tv_nsec, 123456789);
		ck_assert_int_eq(st.st_mtim.tv_nsec, 987654321);
		WORKS(chmod(path(&m, "big"), 0600));
		WORKS(stat(path(&m, "big"), &st2));
		ck_assert_int_ge(st2.st_ctim.tv_sec, st.st_ctim.tv_sec);
		ck_assert_int_eq(st2.st_mode & 07777, 0600);
		ck_assert_int_eq(st2.st_mtim.tv_sec, 1000000001); /* chmod leaves it */
		WORKS(fd = open(path(&m, "big"), O_WRONLY));
		WORKS(write(fd, "x", 1));
		WORKS(close(fd));
		WORKS(stat(path(&m, "big"), &st2));
		ck_assert_int_gt(st2.st_mtim.tv_sec, 1000000001);
	}
	/* symlinks, hard links, FIFOs */
	WORKS(symlink("d/f", path(&m, "l")));
	ck_assert_int_eq(readlink(path(&m, "l"), buf, sizeof(buf)), 3);
	WORKS(symlink("loop", path(&m, "loop")));
	FAILS(open(path(&m, "loop"), O_RDONLY), ELOOP);
	WORKS(link(path(&m, "d/f"), path(&m, "hard")));
	WORKS(stat(path(&m, "d/f"), &st));
	ck_assert_int_eq(st.st_nlink, 2);
	FAILS(link(path(&m, "d"), path(&m, "dl")), EPERM);
	WORKS(mkfifo(path(&m, "fifo"), 0644));
	WORKS(lstat(path(&m, "fifo"), &st));
	ck_assert(S_ISFIFO(st.st_mode));
	/* rename: replacing, across directories */
	WORKS(rename(path(&m, "hard"), path(&m, "d/e/moved")));
	/* two links of one file: rename does nothing (POSIX) */
	WORKS(rename(path(&m, "d/e/moved"), path(&m, "d/f")));
	WORKS(stat(path(&m, "d/e/moved"), &st));
	ck_assert_int_eq(st.st_nlink, 2);
	WORKS(unlink(path(&m, "d/e/moved")));
	WORKS(stat(path(&m, "d/f"), &st));
	ck_assert_int_eq(st.st_nlink, 1);
	/* xattrs, user and virtual */
	WORKS(setxattr(path(&m, "d/f"), "user.k", "v", 1, XATTR_CREATE));
	FAILS(setxattr(path(&m, "d/f"), "user.k", "v", 1, XATTR_CREATE), EEXIST);
	ck_assert_int_eq(getxattr(path(&m, "d/f"), "user.k", buf, sizeof(buf)), 1);
	FAILS(getxattr(path(&m, "d/f"), "user.none", buf, sizeof(buf)), ENODATA);
	WORKS(removexattr(path(&m, "d/f"), "user.k"));
	{
		ssize_t n = getxattr(path(&m, "d"), "tessera.dir.rfiles", buf, sizeof(buf) - 1);
		ck_assert_int_gt(n, 0);
		buf[n] = '\0';
		ck_assert_str_eq(buf, "1");
		n = getxattr(m.dir, "tessera.dir.rsubdirs", buf, sizeof(buf) - 1);
		ck_assert_int_gt(n, 0);
		buf[n] = '\0';
		ck_assert_str_eq(buf, "2");
	}
	/* statfs: the cluster's space, a third of it for 3 copies */
	{
		struct statvfs sv;
		WORKS(statvfs(m.dir, &sv));
		ck_assert_uint_gt(sv.f_blocks, 0);
		ck_assert_uint_le(sv.f_bfree, sv.f_blocks);
		ck_assert_uint_gt(sv.f_files, 5);
		ck_assert_uint_eq(sv.f_namemax, 255);
	}
	/* readdir: ".", "..", and every name once */
	{
		DIR *dp = opendir(path(&m, "d"));
		struct dirent *de;
		int dot = 0, dotdot = 0, f = 0, e = 0, other = 0;
		ck_assert_ptr_nonnull(dp);
		while ((de = readdir(dp)) != NULL) {
			if (strcmp(de->d_name, ".") == 0)
				dot++;
			else if (strcmp(de->d_name, "..") == 0)
				dotdot++;
			else if (strcmp(de->d_name, "f") == 0)
				f++;
			else if (strcmp(de->d_name, "e") == 0)
				e++;
			else
				other++;
		}
		ck_assert_msg(dot == 1 && dotdot == 1 && f == 1 && e == 1 && other == 0,
			      ". %d .. %d f %d e %d other %d", dot, dotdot, f, e, other);
		/* the end seen is kept by the open directory (the kernel asks
		 * from there once more); a rewind lists again: a name made
		 * since shows */
		WORKS(fd = open(path(&m, "d/g"), O_CREAT | O_WRONLY, 0644));
		WORKS(close(fd));
		rewinddir(dp);
		int g = 0;
		while ((de = readdir(dp)) != NULL)
			g += strcmp(de->d_name, "g") == 0;
		closedir(dp);
		ck_assert_int_eq(g, 1);
		WORKS(unlink(path(&m, "d/g")));
	}
	/* as a user who is not root */
	WORKS(mkdir(path(&m, "tmp"), 01777));
	WORKS(chmod(path(&m, "tmp"), 01777));
	WORKS(fd = open(path(&m, "tmp/roots"), O_CREAT | O_WRONLY, 0600));
	WORKS(close(fd));
	WORKS(mkdir(path(&m, "sgid"), 0777));
	WORKS(chown(path(&m, "sgid"), 0, 4242));
	WORKS(chmod(path(&m, "sgid"), 02777));
	/* the way to the mount point is open to the user (mkdtemp makes 0700) */
	ck_assert_ptr_nonnull(getenv("TC_ROOT"));
	WORKS(chmod(getenv("TC_ROOT"), 0755));
	WORKS(chmod(c.dir, 0755));
	{
		int rc = as_user(user_checks, &m);
		ck_assert_msg(rc == 0, "the non-root checks failed at step %d", rc);
	}
	umount_fs(&m);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

static int
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "workloads: \"%s\" ended with %x\n", cmd, st);
	return st;
}

START_TEST(workloads)
{
	struct tc_cluster c;
	struct mnt m = { 0 };
	const char *src = getenv("TOP_SRCDIR");

	if (!fuse_usable()) {
		fprintf(stderr, "workloads: no /dev/fuse here: skipped\n");
		return;
	}
	ck_assert_ptr_nonnull(src);
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS), 0);
	ck_assert_msg(tc_fs_start(&c, 1) == 0, "the file system did not start");
	mount_fs(&c, &m, "mnt", NULL);
	/* a source tree, copied and compared, modes and times too (cp -a
	 * sets a file's mode through system.posix_acl_access, then falls
	 * back to fchmod where ACLs are not supported) */
	ck_assert_int_eq(sh("cp -a '%s/core' '%s/core' && diff -r '%s/core' '%s/core' && "
			    "test \"$(cd '%s' && find core -printf '%%m %%T@ %%p\\n' | sort)\" = "
			    "\"$(cd '%s' && find core -printf '%%m %%T@ %%p\\n' | sort)\"", src,
			    m.dir, src, m.dir, src, m.dir), 0);
	/* a small C project built with make */
	ck_assert_int_eq(sh("mkdir '%s/proj' && cd '%s/proj' && "
			    "printf '#include <stdio.h>\\nint main(void){puts(\"built\");"
			    "return 0;}\\n' > main.c && "
			    "printf 'prog: main.o\\n\\tcc -o prog main.o\\n' > Makefile && "
			    "make -s >/dev/null && ./prog | grep -q built", m.dir, m.dir), 0);
	/* SQLite, and its integrity check */
	ck_assert_int_eq(sh("cd '%s' && sqlite3 t.db 'create table t(a, b); "
			    "with recursive n(i) as (select 1 union all select i + 1 from n "
			    "where i < 5000) insert into t select i, hex(randomblob(50)) from n; "
			    "create index ti on t(b); delete from t where a %% 3 = 0;' && "
			    "test \"$(sqlite3 t.db 'pragma integrity_check')\" = ok && "
			    "test \"$(sqlite3 t.db 'select count(*) from t')\" = 3334", m.dir), 0);
	/* git: commits and fsck */
	ck_assert_int_eq(sh("cd '%s' && git init -q repo && cd repo && cp -a '%s/core/util' . "
			    "&& git add -A && git -c user.email=t@t -c user.name=t commit -qm 1 "
			    "&& echo more >> util/util.c && git -c user.email=t@t "
			    "-c user.name=t commit -qam 2 && git fsck --strict --no-dangling && "
			    "test $(git rev-list --count HEAD) = 2", m.dir, src), 0);
	/* tar: modes, times and hard links kept; 200 times over, as what
	 * is held back (mode, times) is told while answers are in flight
	 * (a stat answered before a tell and handled after it once showed
	 * the mode before the chmod; a tell's ctime once moved under tar) */
	ck_assert_int_eq(sh("cd '%s' && for i in $(seq 200); do mkdir tar$i && cd tar$i && "
			    "mkdir t && echo a > t/a && chmod 0751 t/a && "
			    "ln t/a t/b && ln -s a t/s && touch -d 2001-02-03 t/a && "
			    "tar cf '%s/t.tar' t && mkdir back && tar xpf '%s/t.tar' -C back && "
			    "test \"$(stat -c '%%a %%h %%Y' back/t/a)\" = "
			    "\"$(stat -c '%%a %%h %%Y' t/a)\" && test -L back/t/s && cd .. || "
			    "{ echo \"tar round trip $i: $(stat -c '%%a %%h %%Y' back/t/a) "
			    "against $(stat -c '%%a %%h %%Y' t/a)\" >&2; exit 1; }; done",
			    m.dir, c.dir, c.dir), 0);
	/* rsync -a of the result back out */
	ck_assert_int_eq(sh("rsync -a '%s/core/' '%s/rsynced/' && diff -r '%s/core' "
			    "'%s/rsynced'", m.dir, c.dir, src, c.dir), 0);
	umount_fs(&m);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

START_TEST(coherence)
{
	struct tc_cluster c;
	struct mnt a = { 0 }, b = { 0 };
	struct stat st;
	char buf[64];
	int fd;

	if (!fuse_usable()) {
		fprintf(stderr, "coherence: no /dev/fuse here: skipped\n");
		return;
	}
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS), 0);
	ck_assert_msg(tc_fs_start(&c, 1) == 0, "the file system did not start");
	mount_fs(&c, &a, "a", "attr_timeout=0,entry_timeout=0");
	mount_fs(&c, &b, "b", "attr_timeout=0,entry_timeout=0");
	WORKS(fd = open(path(&a, "f"), O_CREAT | O_WRONLY, 0644));
	WORKS(write(fd, "written on a", 12));
	WORKS(close(fd));
	WORKS(fd = open(path(&b, "f"), O_RDONLY));
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 12);
	ck_assert_int_eq(memcmp(buf, "written on a", 12), 0);
	WORKS(close(fd));
	/* b writes more: a's stat shows the size and mtime after b's close */
	WORKS(stat(path(&a, "f"), &st));
	WORKS(fd = open(path(&b, "f"), O_WRONLY | O_APPEND));
	tc_sleep_ms(20);
	WORKS(write(fd, " and b", 6));
	WORKS(close(fd));
	{
		struct stat st2;
		WORKS(stat(path(&a, "f"), &st2));
		ck_assert_int_eq(st2.st_size, 18);
		ck_assert(st2.st_mtim.tv_sec > st.st_mtim.tv_sec ||
			  (st2.st_mtim.tv_sec == st.st_mtim.tv_sec &&
			   st2.st_mtim.tv_nsec > st.st_mtim.tv_nsec));
	}
	/* the page cache: a file only one mount reads stays cached across
	 * its opens (it holds CACHE); b's write drops it from that cache at
	 * once, even under a descriptor opened before — on a mount whose
	 * attributes the kernel keeps 30 s (a and b keep none, so the kernel
	 * would notice the new mtime at every read by itself) */
	struct mnt a30 = { 0 };
	mount_fs(&c, &a30, "a30", "attr_timeout=30,entry_timeout=30");
	{
		static char page[8192], back[8192];
		unsigned char vec[2];
		int fa;
		void *map;
		memset(page, 'p', sizeof(page));
		WORKS(fd = open(path(&a30, "pc"), O_CREAT | O_WRONLY, 0644));
		ck_assert_int_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
		WORKS(close(fd));
		WORKS(fa = open(path(&a30, "pc"), O_RDONLY));
		ck_assert_int_eq(read(fa, back, sizeof(back)), (ssize_t)sizeof(back));
		WORKS(close(fa));
		WORKS(fa = open(path(&a30, "pc"), O_RDONLY));
		ck_assert((map = mmap(NULL, sizeof(page), PROT_READ, MAP_SHARED, fa, 0)) !=
			  MAP_FAILED);
		WORKS(mincore(map, sizeof(page), vec));
		ck_assert_msg((vec[0] & 1) && (vec[1] & 1), "a's pages were dropped at its "
			      "open (%d %d)", vec[0] & 1, vec[1] & 1);
		WORKS(munmap(map, sizeof(page)));
		ck_assert_int_eq(pread(fa, back, sizeof(back), 0), (ssize_t)sizeof(back));
		memset(page, 'q', sizeof(page));
		WORKS(fd = open(path(&b, "pc"), O_WRONLY));
		ck_assert_int_eq(pwrite(fd, page, sizeof(page), 0), (ssize_t)sizeof(page));
		WORKS(close(fd));
		ck_assert_int_eq(pread(fa, back, sizeof(back), 0), (ssize_t)sizeof(back));
		ck_assert_msg(memcmp(back, page, sizeof(page)) == 0, "a read what it cached "
			      "before b's write ('%c')", back[0]);
		WORKS(close(fa));
		WORKS(fa = open(path(&a30, "pc"), O_RDONLY));
		ck_assert_int_eq(read(fa, back, sizeof(back)), (ssize_t)sizeof(back));
		ck_assert_int_eq(memcmp(back, page, sizeof(page)), 0);
		WORKS(close(fa));
	}
	umount_fs(&a30);
	/* locks across the two mounts: a child holds a POSIX write lock on
	 * [0, 100) and a flock through a; this process, through b, meets
	 * both, then gets them once the child lets go */
	{
		int go[2], ready[2], lfd, fd2;
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
				    .l_len = 100 };
		pid_t child;
		char ch;
		ck_assert_int_eq(pipe(go), 0);
		ck_assert_int_eq(pipe(ready), 0);
		if ((child = fork()) == 0) {
			int cfd = open(path(&a, "f"), O_RDWR), ffd = open(path(&a, "f"), O_RDONLY);
			if (cfd < 0 || ffd < 0 || fcntl(cfd, F_SETLK, &fl) < 0 ||
			    flock(ffd, LOCK_EX) < 0)
				_exit(1);
			if (write(ready[1], "r", 1) != 1 || read(go[0], &ch, 1) != 1)
				_exit(2);
			_exit(0); /* its closes release both */
		}
		ck_assert_int_eq(read(ready[0], &ch, 1), 1);
		WORKS(lfd = open(path(&b, "f"), O_RDWR));
		WORKS(fd2 = open(path(&b, "f"), O_RDONLY));
		fl.l_start = 50;
		fl.l_len = 10;
		FAILS(fcntl(lfd, F_SETLK, &fl), EAGAIN);
		WORKS(fcntl(lfd, F_GETLK, &fl));
		ck_assert_int_eq(fl.l_type, F_WRLCK);
		ck_assert_int_eq(fl.l_start, 0);
		ck_assert_int_eq(fl.l_len, 100);
		ck_assert_int_eq(fl.l_pid, child);
		fl.l_type = F_RDLCK;
		fl.l_start = 200; /* beside it: granted */
		fl.l_len = 100;
		WORKS(fcntl(lfd, F_SETLK, &fl));
		FAILS(flock(fd2, LOCK_EX | LOCK_NB), EWOULDBLOCK);
		ck_assert_int_eq(write(go[1], "g", 1), 1);
		{
			int status;
			waitpid(child, &status, 0);
			ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the locker: %x",
				      status);
		}
		fl.l_type = F_WRLCK;
		fl.l_start = 0;
		fl.l_len = 100;
		WORKS(fcntl(lfd, F_SETLKW, &fl)); /* released by the child's exit */
		/* the child's flock goes with FUSE's RELEASE, which the kernel
		 * sends after close returns (asynchronously): wait for it,
		 * bounded, instead of racing it */
		{
			int r = -1;
			for (int i = 0; i < 500 && r < 0; i++)
				if ((r = flock(fd2, LOCK_EX | LOCK_NB)) < 0) {
					ck_assert_int_eq(errno, EWOULDBLOCK);
					usleep(10000);
				}
			ck_assert_msg(r == 0, "the child's flock still held 5 s after its exit");
		}
		WORKS(close(lfd));
		WORKS(close(fd2));
		close(go[0]);
		close(go[1]);
		close(ready[0]);
		close(ready[1]);
	}
	/* names: made on one, seen and removed on the other */
	WORKS(mkdir(path(&a, "dir"), 0755));
	WORKS(rename(path(&b, "dir"), path(&b, "dir2")));
	FAILS(stat(path(&a, "dir"), &st), ENOENT);
	WORKS(rmdir(path(&a, "dir2")));
	FAILS(stat(path(&b, "dir2"), &st), ENOENT);
	umount_fs(&a);
	umount_fs(&b);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

static volatile sig_atomic_t storm_stop;

static void
on_term(int sig)
{
	(void)sig;
	storm_stop = 1;
}

START_TEST(failover)
{
	struct tc_cluster c;
	struct mnt m = { 0 };
	pid_t child;
	int first, st = 0, made = 0;
	char name[64];

	if (!fuse_usable()) {
		fprintf(stderr, "failover: no /dev/fuse here: skipped\n");
		return;
	}
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS), 0);
	ck_assert_msg(tc_fs_start(&c, 2) == 0, "the file system did not start");
	mount_fs(&c, &m, "mnt", NULL);
	WORKS(mkdir(path(&m, "storm"), 0755));
	first = tc_mds_active(&c);
	/* a child makes and renames files until told to stop; it writes how
	 * many it made (all acknowledged) to a file */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int i;
		signal(SIGTERM, on_term);
		for (i = 0; !storm_stop && i < 100000; i++) {
			char a[600], b[600];
			int fd;
			snprintf(a, sizeof(a), "%s/storm/f%05d", m.dir, i);
			snprintf(b, sizeof(b), "%s/storm/r%05d", m.dir, i);
			if ((fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644)) < 0)
				_exit(10);
			close(fd);
			if (i % 2 && rename(a, b) < 0)
				_exit(11);
		}
		FILE *f = fopen(path(&m, "../made"), "w");
		fprintf(f, "%d\n", i);
		fclose(f);
		_exit(0);
	}
	tc_sleep_ms(1500);
	ck_assert_int_eq(tc_mds_signal(&c, (size_t)first, SIGKILL), SIGKILL);
	ck_assert_msg(tc_await_mds_active(&c, first, 30000) >= 0, "no successor in 30 s");
	tc_sleep_ms(1500);
	kill(child, SIGTERM);
	waitpid(child, &st, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the storm failed (%x)", st);
	{
		FILE *f = fopen(path(&m, "../made"), "r");
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fscanf(f, "%d", &made), 1);
		fclose(f);
	}
	ck_assert_int_gt(made, 10);
	for (int i = 0; i < made; i++) {
		struct stat s;
		snprintf(name, sizeof(name), "storm/%c%05d", i % 2 ? 'r' : 'f', i);
		ck_assert_msg(stat(path(&m, name), &s) == 0, "%s acknowledged, then lost", name);
	}
	umount_fs(&m);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

/* ---- fsx: random operations against a reference ---- */

#define FSX_MAX (6u << 20)           /* the file stays below this */

struct fsx {
	int fd;
	uint8_t *ref;                /* what the file must hold */
	uint64_t size;
	uint64_t rng;
	char log[16][96];            /* the last operations, for a failure */
	unsigned nlog;
};

static uint64_t
fsx_rnd(struct fsx *x, uint64_t n)
{
	x->rng ^= x->rng << 13;
	x->rng ^= x->rng >> 7;
	x->rng ^= x->rng << 17;
	return n ? x->rng % n : 0;
}

static void
fsx_note(struct fsx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
fsx_note(struct fsx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->log[x->nlog++ % 16], sizeof(x->log[0]), fmt, ap);
	va_end(ap);
}

static void
fsx_fail(struct fsx *x, const char *what)
{
	for (unsigned i = x->nlog > 16 ? x->nlog - 16 : 0; i < x->nlog; i++)
		fprintf(stderr, "fsx op %u: %s\n", i, x->log[i % 16]);
	ck_abort_msg("fsx: %s (seed in FSX_SEED; the last operations above)", what);
}

/* The file's bytes [off, off + len) must be the reference's. */
static void
fsx_check(struct fsx *x, uint64_t off, size_t len)
{
	static uint8_t got[1 << 20];
	struct stat st;
	ssize_t n;

	if (fstat(x->fd, &st) < 0 || (uint64_t)st.st_size != x->size) {
		char why[128];
		snprintf(why, sizeof(why), "size %lld, the reference %llu",
			 (long long)st.st_size, (unsigned long long)x->size);
		fsx_fail(x, why);
	}
	if (off >= x->size)
		return;
	if (len > sizeof(got))
		len = sizeof(got);
	if (off + len > x->size)
		len = (size_t)(x->size - off);
	n = pread(x->fd, got, len, (off_t)off);
	if (n != (ssize_t)len)
		fsx_fail(x, "a short read");
	for (size_t i = 0; i < len; i++)
		if (got[i] != x->ref[off + i]) {
			char why[128];
			snprintf(why, sizeof(why), "byte %llu is %#x, the reference %#x",
				 (unsigned long long)(off + i), got[i], x->ref[off + i]);
			fsx_fail(x, why);
		}
}

static void
fsx_resize(struct fsx *x, uint64_t size)
{
	if (size > x->size)
		memset(x->ref + x->size, 0, size - x->size);
	x->size = size;
}

/* Random writes, reads, truncates, holes, fallocate, mmap writes and
 * reads, fsync and reopen through the mount, each checked against a
 * reference in memory: FSX_OPS operations (default 1200, at most 60 s),
 * seeded by FSX_SEED. */
START_TEST(fsx)
{
	struct tc_cluster c;
	struct mnt m = { 0 };
	struct fsx x = { 0 };
	uint64_t t0, ops = 1200, done = 0;
	static uint8_t buf[256 << 10];
	const char *e;

	if (!fuse_usable()) {
		fprintf(stderr, "fsx: no /dev/fuse here: skipped\n");
		return;
	}
	if ((e = getenv("FSX_OPS")) != NULL)
		ops = strtoull(e, NULL, 10);
	x.rng = (e = getenv("FSX_SEED")) != NULL ? strtoull(e, NULL, 0) : 0x5eed1234abcdull;
	x.rng |= 1;
	fprintf(stderr, "fsx: seed %#llx, %llu operations\n", (unsigned long long)x.rng,
		(unsigned long long)ops);
	x.ref = calloc(1, FSX_MAX);
	ck_assert_ptr_nonnull(x.ref);
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS), 0);
	ck_assert_msg(tc_fs_start(&c, 1) == 0, "the file system did not start");
	mount_fs(&c, &m, "mnt", NULL);
	/* small objects, so operations cross them */
	WORKS(mkdir(path(&m, "d"), 0755));
	WORKS(setxattr(path(&m, "d"), "tessera.dir.layout.stripe_unit", "65536", 5, 0));
	WORKS(setxattr(path(&m, "d"), "tessera.dir.layout.object_size", "65536", 5, 0));
	WORKS(x.fd = open(path(&m, "d/f"), O_CREAT | O_RDWR, 0644));
	t0 = tc_now_ms();
	for (; done < ops && tc_now_ms() - t0 < 60000; done++) {
		uint64_t off = fsx_rnd(&x, FSX_MAX - sizeof(buf));
		size_t len = 1 + (size_t)fsx_rnd(&x, fsx_rnd(&x, 4) ? 8192 : sizeof(buf));
		switch (fsx_rnd(&x, 11)) {
		case 0: case 1: case 2: /* write */
			if (fsx_rnd(&x, 2) && x.size)
				off = fsx_rnd(&x, x.size); /* mostly inside */
			fsx_note(&x, "write %zu at %llu", len, (unsigned long long)off);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)fsx_rnd(&x, 256);
			if (pwrite(x.fd, buf, len, (off_t)off) != (ssize_t)len)
				fsx_fail(&x, "write failed");
			if (off + len > x.size)
				fsx_resize(&x, off + len);
			memcpy(x.ref + off, buf, len);
			break;
		case 3: case 4: /* read */
			off = x.size ? fsx_rnd(&x, x.size) : 0;
			fsx_note(&x, "read %zu at %llu", len, (unsigned long long)off);
			fsx_check(&x, off, len);
			break;
		case 5: { /* truncate */
			uint64_t size = fsx_rnd(&x, 3) ? fsx_rnd(&x, x.size + 1)
						       : fsx_rnd(&x, FSX_MAX);
			fsx_note(&x, "truncate to %llu", (unsigned long long)size);
			if (ftruncate(x.fd, (off_t)size) < 0)
				fsx_fail(&x, "ftruncate failed");
			if (size < x.size)
				memset(x.ref + size, 0, x.size - size);
			fsx_resize(&x, size);
			break;
		}
		case 6: /* a hole */
			if (x.size == 0)
				break;
			off = fsx_rnd(&x, x.size);
			fsx_note(&x, "punch %zu at %llu", len, (unsigned long long)off);
			if (fallocate(x.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)off, (off_t)len) < 0)
				fsx_fail(&x, "punching a hole failed");
			memset(x.ref + off, 0, off + len > x.size ? x.size - off : len);
			break;
		case 7: /* fallocate: grows the size */
			fsx_note(&x, "fallocate %zu at %llu", len, (unsigned long long)off);
			if (fallocate(x.fd, 0, (off_t)off, (off_t)len) < 0)
				fsx_fail(&x, "fallocate failed");
			if (off + len > x.size)
				fsx_resize(&x, off + len);
			break;
		case 8: { /* mmap: write, then read, within the size */
			long pg = sysconf(_SC_PAGESIZE);
			if (x.size < (uint64_t)pg)
				break;
			uint64_t at = fsx_rnd(&x, x.size) & ~(uint64_t)(pg - 1);
			size_t span = (size_t)(x.size - at < len ? x.size - at : len);
			uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, x.fd,
					  (off_t)at);
			fsx_note(&x, "mmap %zu at %llu", span, (unsigned long long)at);
			if (p == MAP_FAILED)
				fsx_fail(&x, "mmap failed");
			for (size_t i = 0; i < span; i++)
				if (p[i] != x.ref[at + i])
					fsx_fail(&x, "mmap read a byte the reference lacks");
			for (size_t i = 0; i < span; i += 1 + fsx_rnd(&x, 64)) {
				p[i] = (uint8_t)fsx_rnd(&x, 256);
				x.ref[at + i] = p[i];
			}
			if (msync(p, span, MS_SYNC) < 0)
				fsx_fail(&x, "msync failed");
			munmap(p, span);
			break;
		}
		case 9: /* fsync */
			fsx_note(&x, "fsync");
			if (fsync(x.fd) < 0)
				fsx_fail(&x, "fsync failed");
			break;
		default: /* close and open again: the data from the OSDs */
			fsx_note(&x, "reopen");
			close(x.fd);
			if ((x.fd = open(path(&m, "d/f"), O_RDWR)) < 0)
				fsx_fail(&x, "reopen failed");
			fsx_check(&x, x.size ? fsx_rnd(&x, x.size) : 0, 1 << 20);
			break;
		}
	}
	/* all of it, at the end */
	for (uint64_t at = 0; at < x.size; at += 1 << 20)
		fsx_check(&x, at, 1 << 20);
	fprintf(stderr, "fsx: %llu operations in %llu ms, the file %llu bytes\n",
		(unsigned long long)done, (unsigned long long)(tc_now_ms() - t0),
		(unsigned long long)x.size);
	ck_assert_uint_gt(done, 100);
	close(x.fd);
	free(x.ref);
	umount_fs(&m);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* SIGKILL an OSD while a child writes files through the mount, each
 * fsynced: every file it fsynced reads back whole, from another mount. */
START_TEST(osd_kill)
{
	struct tc_cluster c;
	struct mnt m = { 0 }, r = { 0 };
	static uint8_t buf[1 << 20], got[1 << 20];
	int made = 0, st = 0;
	pid_t child;

	if (!fuse_usable()) {
		fprintf(stderr, "osd_kill: no /dev/fuse here: skipped\n");
		return;
	}
	/* OSDs find a dead peer in about 1.5 s */
	ck_assert_int_eq(tc_create(&c, 1, FAST_MDS " osd_heartbeat_interval = \"200ms\"; "
				   "osd_heartbeat_grace = \"1500ms\";"), 0);
	ck_assert_msg(tc_fs_start(&c, 1) == 0, "the file system did not start");
	mount_fs(&c, &m, "mnt", NULL);
	WORKS(mkdir(path(&m, "w"), 0755));
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int i;
		signal(SIGTERM, on_term);
		for (i = 0; !storm_stop && i < 2000; i++) {
			char p[600];
			int fd;
			for (size_t k = 0; k < sizeof(buf); k++)
				buf[k] = (uint8_t)(i * 131 + k * 7);
			snprintf(p, sizeof(p), "%s/w/f%04d", m.dir, i);
			if ((fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644)) < 0 ||
			    write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
			    fsync(fd) < 0 || close(fd) < 0)
				_exit(10);
		}
		FILE *f = fopen(path(&m, "../made"), "w");
		fprintf(f, "%d\n", i);
		fclose(f);
		_exit(0);
	}
	tc_sleep_ms(2000);
	ck_assert_int_eq(tc_osd_signal(&c, 1, SIGKILL), SIGKILL);
	int at_kill = count_entries(path(&m, "w"));
	/* the writes go on once the PGs of the dead OSD are served again */
	uint64_t t0 = tc_now_ms();
	while (count_entries(path(&m, "w")) < at_kill + 10 && tc_now_ms() - t0 < 30000)
		tc_sleep_ms(200);
	fprintf(stderr, "osd_kill: writes going on %llu ms after the kill\n",
		(unsigned long long)(tc_now_ms() - t0));
	kill(child, SIGTERM);
	waitpid(child, &st, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer failed (%x)", st);
	{
		FILE *f = fopen(path(&m, "../made"), "r");
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fscanf(f, "%d", &made), 1);
		fclose(f);
	}
	/* the writer went on past the kill */
	ck_assert_msg(made >= at_kill + 10, "%d files at the kill, %d at the end", at_kill,
		      made);
	/* a second mount: nothing from the first one's caches */
	mount_fs(&c, &r, "r", NULL);
	for (int i = 0; i < made; i++) {
		char name[64];
		int fd;
		snprintf(name, sizeof(name), "w/f%04d", i);
		WORKS(fd = open(path(&r, name), O_RDONLY));
		ck_assert_int_eq(read(fd, got, sizeof(got)), (int)sizeof(got));
		close(fd);
		for (size_t k = 0; k < sizeof(buf); k++)
			buf[k] = (uint8_t)(i * 131 + k * 7);
		ck_assert_msg(memcmp(got, buf, sizeof(buf)) == 0, "%s fsynced, then "
			      "read back otherwise", name);
	}
	fprintf(stderr, "osd_kill: %d files of 1 MiB fsynced across the kill, all whole\n",
		made);
	umount_fs(&r);
	umount_fs(&m);
	ck_assert_int_eq(tc_destroy(&c), 0);
}
END_TEST

int
main(void)
{
	const struct tc_case cases[] = {
		{ "posix", posix, NULL },
		{ "workloads", workloads, NULL },
		{ "coherence", coherence, NULL },
		{ "failover", failover, NULL },
		{ "fsx", fsx, NULL },
		{ "osd_kill", osd_kill, NULL },
	};

	return tc_check_main("fuse", cases, TC_NCASES(cases));
}
