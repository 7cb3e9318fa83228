/* test_pidfile.c — pid file locking across processes, stale files, removal. */
#include "daemon/pidfile.h"
#include "util/util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* fcntl locks belong to a process: a second create from the process that
 * holds the lock would succeed (and closing its descriptor would drop the
 * first lock).  So every "somebody else" below is a forked child. */

static char tmpdir[256];

static void
tmp_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", tmpdir, name);

	ck_assert(n > 0 && (size_t)n < len);
}

static char *
slurp(const char *path)
{
	char *buf = malloc(256);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	ck_assert_ptr_nonnull(buf);
	if (fd >= 0) {
		n = read(fd, buf, 255);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
spit(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Careful: closing any descriptor of a file drops this process's fcntl lock
 * on it, so a test that holds the pid file calls this only just before it
 * removes the file anyway (or when a child holds it). */
static void
assert_holds_pid(const char *path, long pid)
{
	char want[32];
	char *text = slurp(path);

	snprintf(want, sizeof(want), "%ld\n", pid);
	ck_assert_str_eq(text, want);
	free(text);
}

/* ---- Children ----------------------------------------------------------- */

/* What a child reports back through a pipe. */
struct report {
	int rc;
	long stale;
	long holder;
	long pid;
	char err[512];
};

enum op { OP_CREATE, OP_HOLDER, OP_CREATE_AND_HOLD };

struct child {
	pid_t pid;
	int rfd;  /* reports from the child */
	int wfd;  /* closing it tells a holding child to exit */
};

static bool
read_full(int fd, void *buf, size_t len, int ms)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) != 1)
			return false;
		ssize_t r = read(fd, (char *)buf + off, len - off);
		if (r <= 0)
			return false;
		off += (size_t)r;
	}
	return true;
}

/* Runs in the child; never returns. */
static void
child_main(enum op op, const char *path, int wfd, int rfd)
{
	struct report rep;
	struct tsr_pidfile *pf = NULL;

	memset(&rep, 0, sizeof(rep));
	rep.pid = (long)getpid();
	if (op == OP_HOLDER) {
		rep.holder = tsr_pidfile_holder(path);
	} else {
		rep.stale = -1;
		rep.rc = tsr_pidfile_create(path, &pf, &rep.stale, rep.err,
					    sizeof(rep.err));
	}
	if (write(wfd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(2);
	if (op == OP_CREATE_AND_HOLD && rep.rc == 0) {
		/* hold until the parent closes its end (or kills us); bounded
		 * so that a lost parent does not leave us behind */
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		poll(&p, 1, 5000);
		tsr_pidfile_remove(pf);
	} else if (pf != NULL) {
		tsr_pidfile_remove(pf);
	}
	_exit(0);
}

static void
child_start(struct child *c, enum op op, const char *path)
{
	int up[2], down[2];

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		close(up[0]);
		close(down[1]);
		child_main(op, path, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	c->rfd = up[0];
	c->wfd = down[1];
}

static void
child_report(struct child *c, struct report *rep)
{
	ck_assert_msg(read_full(c->rfd, rep, sizeof(*rep), 2000),
		      "no report from child %ld", (long)c->pid);
	ck_assert_int_eq(rep->pid, c->pid);
}

/* Wait for the child (at most 2 s, then kill it); returns its status. */
static int
child_reap(struct child *c)
{
	int status = -1;

	close(c->wfd);
	close(c->rfd);
	for (int i = 0; i < 200; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			return status;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	ck_abort_msg("child %ld did not exit", (long)c->pid);
	return status;
}

/* Run op in a child and collect its report. */
static void
in_child(enum op op, const char *path, struct report *rep)
{
	struct child c;
	int status;

	child_start(&c, op, path);
	child_report(&c, rep);
	status = child_reap(&c);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- Tests -------------------------------------------------------------- */

START_TEST(test_create_writes_pid)
{
	struct tsr_pidfile *pf = NULL;
	char path[512], err[256] = "";
	long stale = -1;
	struct stat st;

	tmp_path(path, sizeof(path), "own.pid");
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(pf);
	ck_assert_int_eq(stale, 0);
	ck_assert_str_eq(err, "");
	assert_holds_pid(path, (long)getpid());
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0022, 0);
	tsr_pidfile_remove(pf);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	tsr_pidfile_remove(NULL);
}
END_TEST

START_TEST(test_second_create_refused)
{
	struct tsr_pidfile *pf = NULL;
	struct report rep;
	char path[512], want[768];
	long stale;

	tmp_path(path, sizeof(path), "twice.pid");
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, NULL, 0), 0);
	in_child(OP_CREATE, path, &rep);
	ck_assert_int_eq(rep.rc, -EEXIST);
	ck_assert_int_eq(rep.stale, 0);
	snprintf(want, sizeof(want),
		 "already running as pid %ld (pid file %s is locked)",
		 (long)getpid(), path);
	ck_assert_str_eq(rep.err, want);
	/* the refused process left the file alone */
	assert_holds_pid(path, (long)getpid());
	tsr_pidfile_remove(pf);
}
END_TEST

START_TEST(test_holder)
{
	struct tsr_pidfile *pf = NULL;
	struct report rep;
	char path[512], missing[512];
	long stale;

	tmp_path(path, sizeof(path), "held.pid");
	tmp_path(missing, sizeof(missing), "no-dir/x.pid");
	/* nobody, and no file at all */
	ck_assert_int_eq(tsr_pidfile_holder(path), 0);
	ck_assert_int_eq(tsr_pidfile_holder(missing), 0);
	/* a file nobody locks */
	spit(path, "12345\n");
	in_child(OP_HOLDER, path, &rep);
	ck_assert_int_eq(rep.holder, 0);

	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, NULL, 0), 0);
	ck_assert_int_eq(stale, 12345);
	in_child(OP_HOLDER, path, &rep);
	ck_assert_int_eq(rep.holder, (long)getpid());
	tsr_pidfile_remove(pf);
	in_child(OP_HOLDER, path, &rep);
	ck_assert_int_eq(rep.holder, 0);
}
END_TEST

/* After remove, the file is gone and anyone may create it afresh. */
START_TEST(test_remove_then_other_creates)
{
	struct tsr_pidfile *pf = NULL;
	struct report rep;
	char path[512];
	long stale;

	tmp_path(path, sizeof(path), "handover.pid");
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, NULL, 0), 0);
	tsr_pidfile_remove(pf);
	ck_assert_int_eq(access(path, F_OK), -1);
	in_child(OP_CREATE, path, &rep);
	ck_assert_int_eq(rep.rc, 0);
	ck_assert_int_eq(rep.stale, 0);
	/* the child removed it on exit */
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_stale_file)
{
	static const struct {
		const char *content;
		long stale;
	} cases[] = {
		{ "999999\n", 999999 },
		{ "4194304999\n", 4194304999L }, /* longer than any pid */
		{ "42", 42 },
		{ "", 0 },
		{ "\n", 0 },
		{ "garbage\n", 0 },
		{ "12abc\n", 0 },
		{ "-5\n", 0 },
		{ "0\n", 0 },
	};
	char path[512];

	tmp_path(path, sizeof(path), "stale.pid");
	for (size_t i = 0; i < TSR_ARRAY_SIZE(cases); i++) {
		struct tsr_pidfile *pf = NULL;
		long stale = -1;
		char err[256] = "";

		spit(path, cases[i].content);
		ck_assert_msg(tsr_pidfile_create(path, &pf, &stale, err, sizeof(err)) == 0,
			      "\"%s\": %s", cases[i].content, err);
		ck_assert_msg(stale == cases[i].stale, "\"%s\": stale %ld, want %ld",
			      cases[i].content, stale, cases[i].stale);
		/* replaced whole, not overwritten in place */
		assert_holds_pid(path, (long)getpid());
		tsr_pidfile_remove(pf);
	}
}
END_TEST

/* A holder killed outright leaves its file behind; the lock dies with it,
 * so the next create takes the file over and names the dead pid. */
START_TEST(test_crashed_holder)
{
	struct tsr_pidfile *pf = NULL;
	struct child c;
	struct report rep;
	char path[512], err[768] = "", want[768];
	long stale = -1;
	int status;

	tmp_path(path, sizeof(path), "crash.pid");
	child_start(&c, OP_CREATE_AND_HOLD, path);
	child_report(&c, &rep);
	ck_assert_int_eq(rep.rc, 0);
	assert_holds_pid(path, rep.pid);

	ck_assert_int_eq(tsr_pidfile_holder(path), rep.pid);
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, err, sizeof(err)),
			 -EEXIST);
	ck_assert_ptr_null(pf);
	ck_assert_int_eq(stale, 0);
	snprintf(want, sizeof(want),
		 "already running as pid %ld (pid file %s is locked)", rep.pid, path);
	ck_assert_str_eq(err, want);
	assert_holds_pid(path, rep.pid);

	ck_assert_int_eq(kill(c.pid, SIGKILL), 0);
	status = child_reap(&c);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(tsr_pidfile_holder(path), 0);

	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, err, sizeof(err)), 0);
	ck_assert_int_eq(stale, rep.pid);
	assert_holds_pid(path, (long)getpid());
	tsr_pidfile_remove(pf);
}
END_TEST

/* A holder that exits cleanly removes its file. */
START_TEST(test_clean_exit_removes)
{
	struct child c;
	struct report rep;
	char path[512];
	int status;

	tmp_path(path, sizeof(path), "clean.pid");
	child_start(&c, OP_CREATE_AND_HOLD, path);
	child_report(&c, &rep);
	ck_assert_int_eq(rep.rc, 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	status = child_reap(&c); /* closing its pipe tells it to exit */
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_unopenable)
{
	struct tsr_pidfile *pf = NULL;
	char path[512], err[768] = "", want[768];
	long stale = -1;

	tmp_path(path, sizeof(path), "no-such-dir/x.pid");
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(pf);
	ck_assert_int_eq(stale, 0);
	snprintf(want, sizeof(want), "cannot open pid file %s: %s", path,
		 strerror(ENOENT));
	ck_assert_str_eq(err, want);
	/* err may be NULL */
	ck_assert_int_eq(tsr_pidfile_create(path, &pf, &stale, NULL, 0), -ENOENT);
}
END_TEST

/* Regression: remove() unlinks and then unlocks.  A process that opened
 * the file just before the unlink could lock the orphaned inode just after,
 * and believe it held the pid file while the path named another file (or
 * none), so two daemons could run under one identity.  Two processes race
 * create/remove on one path; whoever gets in must find its own pid at the
 * path. */
static void
race_main(const char *path, uint64_t until, int wfd)
{
	long wins = 0, bad = 0;
	char want[32];

	snprintf(want, sizeof(want), "%ld\n", (long)getpid());
	while (tsr_mono_ns() < until) {
		struct tsr_pidfile *pf = NULL;
		long stale;
		char got[32] = "";

		if (tsr_pidfile_create(path, &pf, &stale, NULL, 0) != 0)
			continue;
		wins++;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, got, sizeof(got) - 1);
			got[n > 0 ? n : 0] = '\0';
		}
		bad += strcmp(got, want) != 0;
		tsr_pidfile_remove(pf);
		/* only now: closing any descriptor of a file drops the
		 * process's lock on it */
		if (fd >= 0)
			close(fd);
	}
	long out[2] = { wins, bad };
	_exit(write(wfd, out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 2);
}

START_TEST(test_remove_race)
{
	enum { NPROC = 3 };
	pid_t pids[NPROC];
	int fds[NPROC];
	char path[512];
	uint64_t until = tsr_mono_ns() + 400ull * 1000 * 1000;
	long wins = 0, bad = 0;

	tmp_path(path, sizeof(path), "race.pid");
	for (int i = 0; i < NPROC; i++) {
		int p[2];

		ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			close(p[0]);
			race_main(path, until, p[1]);
		}
		close(p[1]);
		fds[i] = p[0];
	}
	for (int i = 0; i < NPROC; i++) {
		long out[2] = { 0, 0 };
		int status;
		bool got = read_full(fds[i], out, sizeof(out), 3000);

		close(fds[i]);
		if (!got)
			kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		ck_assert_msg(got, "racer %d did not report", i);
		wins += out[0];
		bad += out[1];
	}
	ck_assert_int_gt(wins, 0);
	ck_assert_msg(bad == 0, "%ld of %ld creates held a pid file not at the path",
		      bad, wins);
}
END_TEST

static Suite *
pidfile_suite(void)
{
	Suite *s = suite_create("pidfile");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_create_writes_pid);
	tcase_add_test(tc, test_second_create_refused);
	tcase_add_test(tc, test_holder);
	tcase_add_test(tc, test_remove_then_other_creates);
	tcase_add_test(tc, test_stale_file);
	tcase_add_test(tc, test_crashed_holder);
	tcase_add_test(tc, test_clean_exit_removes);
	tcase_add_test(tc, test_unopenable);
	tcase_add_test(tc, test_remove_race);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	const char *base = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	snprintf(tmpdir, sizeof(tmpdir), "%s/tsr-test-pidfile.XXXXXX",
		 base && *base ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(pidfile_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rm_rf(tmpdir);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
