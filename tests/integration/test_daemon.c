/* test_daemon.c — the shared daemon life cycle, end to end: tsr-testd is
 * started as a real process (in the foreground and detached), driven through
 * its admin socket and signals, killed on purpose, and restarted.
 *
 * Every daemon a test starts lives under one temporary root; main() kills
 * whatever still runs from there and removes the root after the suite, so
 * a failed or timed-out test leaves nothing behind. */
#include "daemon/asok.h"
#include "util/sbuf.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef TESTD
#error TESTD must name the tsr-testd program
#endif
#ifndef TEST_PLUGIN_DIR
#error TEST_PLUGIN_DIR must name the directory of the built test plugins
#endif

static char root[256];   /* the suite's temporary root */
static char dir[512];    /* this test's directory */
static char conf[600], asok[600], pidf[600], logpath[600];

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A fresh directory per test, and the paths the config below uses. */
static void
new_dir(void)
{
	static int n;
	snprintf(dir, sizeof(dir), "%s/t%d-%d", root, (int)getpid(), n++);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(conf, sizeof(conf), "%s/tessera.conf", dir);
	snprintf(asok, sizeof(asok), "%s/run/testd-1.asok", dir);
	snprintf(pidf, sizeof(pidf), "%s/run/testd-1.pid", dir);
	snprintf(logpath, sizeof(logpath), "%s/log/testd-1.log", dir);
}

/* Write the cluster file: a global section pointing every path into the
 * test directory, then extra text. */
static void
write_conf(const char *extra)
{
	FILE *f = fopen(conf, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"global = {\n"
		"  run_dir = \"%s/run\";\n"
		"  plugin_dir = \"%s\";\n"
		"  log_file = \"%s/log/$name.log\";\n"
		"};\n"
		"%s",
		dir, TEST_PLUGIN_DIR, dir, extra);
	fclose(f);
}

/* Run testd with args; capture stderr into buf.  When wait_exit, wait for
 * it (bounded) and return its exit status; otherwise return its pid. */
static int
run_testd(bool wait_exit, char *errbuf, size_t errlen, ...)
{
	char *argv[16] = { (char *)TESTD };
	int argc = 1, p[2];
	va_list ap;
	pid_t pid;

	va_start(ap, errlen);
	for (char *a; argc < 15 && (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* a foreground daemon dies with the test that started it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(TESTD, argv);
		_exit(127);
	}
	close(p[1]);
	if (!wait_exit) {
		close(p[0]);
		return pid;
	}
	/* read stderr until every writer is gone (a detached daemon drops
	 * it once started), for at most 10 s */
	size_t n = 0;
	for (int i = 0; i < 1000 && n < errlen - 1; i++) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		ssize_t r = read(p[0], errbuf + n, errlen - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	errbuf[n] = '\0';
	close(p[0]);
	int status = 0;
	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	ck_abort_msg("tsr-testd did not exit within 10 s");
	return -1;
}

/* Send cmd to the admin socket; returns the status, reply in out. */
static int
admin(const char *cmd, struct tsr_sbuf *out)
{
	char err[512];
	int status = 0;

	tsr_sbuf_reset(out);
	int rc = tsr_asok_request(asok, cmd, 5000, &status, out, err, sizeof(err));
	ck_assert_msg(rc == 0, "admin %s: %s", cmd, err);
	return status;
}

/* Wait (bounded) until the admin socket answers status. */
static void
wait_up(void)
{
	struct tsr_sbuf out;
	char err[512];
	int status;

	tsr_sbuf_init(&out);
	for (int i = 0; i < 500; i++) {
		tsr_sbuf_reset(&out);
		if (tsr_asok_request(asok, "status", 1000, &status, &out, err,
				     sizeof(err)) == 0 && status == 0) {
			tsr_sbuf_release(&out);
			return;
		}
		sleep_ms(20);
	}
	tsr_sbuf_release(&out);
	ck_abort_msg("daemon did not answer on %s within 10 s", asok);
}

static bool
alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

/* Wait for a child to exit; returns its exit status. */
static int
wait_child(pid_t pid, int timeout_ms)
{
	int status;

	for (int i = 0; i < timeout_ms / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(10);
	}
	ck_abort_msg("pid %d did not exit within %d ms", (int)pid, timeout_ms);
	return -1;
}

/* Wait for a process that is not our child to disappear. */
static void
wait_gone(pid_t pid, int timeout_ms)
{
	for (int i = 0; i < timeout_ms / 10; i++) {
		if (!alive(pid))
			return;
		sleep_ms(10);
	}
	ck_abort_msg("pid %d still running after %d ms", (int)pid, timeout_ms);
}

static char *
slurp(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return strcpy(buf, "");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static long
pid_in_file(void)
{
	return strtol(slurp(pidf), NULL, 10);
}

static bool
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- Tests ----------------------------------------------------------------*/

START_TEST(foreground_start_status_stop)
{
	struct tsr_sbuf out;

	new_dir();
	write_conf("testd = { greeting = \"hi there\"; tick = \"20ms\"; };\n");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("status", &out), 0);
	ck_assert_contains(out.buf, "\"name\": \"testd-1\"");
	char want[64];
	snprintf(want, sizeof(want), "\"pid\": %d,", (int)pid);
	ck_assert_contains(out.buf, want);
	ck_assert_int_eq(pid_in_file(), pid);
	ck_assert_int_eq(admin("ping", &out), 0);
	ck_assert_str_eq(out.buf, "{\"pong\": \"hi there\"}\n");
	/* the tick timer runs on the loop: status shows it moving */
	sleep_ms(200);
	ck_assert_int_eq(admin("status", &out), 0);
	ck_assert_msg(strstr(out.buf, "\"ticks\": 0,") == NULL, "%s", out.buf);

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
	ck_assert(!exists(pidf));
	ck_assert(!exists(asok));
	ck_assert_contains(slurp(logpath), "SIGTERM from pid");
	ck_assert_contains(slurp(logpath), "testd-1 stopped");
	tsr_sbuf_release(&out);
}
END_TEST

START_TEST(detached_start_and_stop)
{
	char err[4096];
	struct tsr_sbuf out;

	new_dir();
	write_conf("");
	/* the launching process returns only once the daemon is up */
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-i", "1", "-c", conf, NULL), 0);
	long pid = pid_in_file();
	ck_assert_int_gt(pid, 1);
	ck_assert(alive((pid_t)pid));
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("version", &out), 0);
	ck_assert_contains(out.buf, "\"plugin_abi\": \"1.1\"");
	ck_assert_int_eq(kill((pid_t)pid, SIGINT), 0);
	wait_gone((pid_t)pid, 10000);
	ck_assert(!exists(pidf));
	ck_assert(!exists(asok));
	ck_assert_contains(slurp(logpath), "SIGINT from pid");
	tsr_sbuf_release(&out);
}
END_TEST

START_TEST(second_instance_refused)
{
	char err[4096];

	new_dir();
	write_conf("");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-f", "-i", "1", "-c", conf,
				   NULL), 1);
	char want[128];
	snprintf(want, sizeof(want), "already running as pid %d", (int)pid);
	ck_assert_contains(err, want);
	ck_assert_contains(err, pidf);
	/* the same refusal when detaching: the launcher reports failure */
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-i", "1", "-c", conf, NULL), 1);
	ck_assert_contains(err, want);
	/* the first one is untouched */
	ck_assert_int_eq(pid_in_file(), pid);
	wait_up();
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
}
END_TEST

START_TEST(restart_after_sigkill)
{
	struct tsr_sbuf out;

	new_dir();
	write_conf("");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	kill(pid, SIGKILL);
	ck_assert_int_eq(wait_child(pid, 10000), 128 + SIGKILL);
	/* a crash leaves both files behind */
	ck_assert(exists(pidf));
	ck_assert(exists(asok));
	pid_t pid2 = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	ck_assert_int_eq(pid_in_file(), pid2);
	char want[128];
	snprintf(want, sizeof(want), "named pid %d, which is not running: replaced it",
		 (int)pid);
	ck_assert_contains(slurp(logpath), want);
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("ping", &out), 0);
	kill(pid2, SIGTERM);
	ck_assert_int_eq(wait_child(pid2, 10000), 0);
	tsr_sbuf_release(&out);
}
END_TEST

START_TEST(sighup_reopens_log)
{
	struct tsr_sbuf out;
	char rotated[700];

	new_dir();
	write_conf("");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	snprintf(rotated, sizeof(rotated), "%s.1", logpath);
	ck_assert_int_eq(rename(logpath, rotated), 0);
	kill(pid, SIGHUP);
	/* the line about SIGHUP goes to the old file; wait for the new one */
	for (int i = 0; i < 500 && !exists(logpath); i++)
		sleep_ms(10);
	ck_assert(exists(logpath));
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("log level debug", &out), 0);
	ck_assert_contains(slurp(rotated), "SIGHUP: reopening the log file");
	ck_assert_contains(slurp(rotated), "testd-1 running");
	ck_assert_contains(slurp(logpath), "log level of every subsystem set to debug");
	ck_assert_msg(strstr(slurp(logpath), "testd-1 running") == NULL,
		      "the new file holds only lines written after the reopen");
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
	tsr_sbuf_release(&out);
}
END_TEST

START_TEST(admin_commands)
{
	struct tsr_sbuf out;
	char want[1024];

	new_dir();
	write_conf("testd = {\n  greeting = \"yo\";\n};\n");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("help", &out), 0);
	ck_assert_contains(out.buf, "\"command\": \"config show\"");
	ck_assert_contains(out.buf, "\"command\": \"ping\"");

	ck_assert_int_eq(admin("config show", &out), 0);
	snprintf(want, sizeof(want),
		 "\"greeting\": {\"value\": \"yo\", \"from\": \"%s:7\"}", conf);
	ck_assert_contains(out.buf, want);
	snprintf(want, sizeof(want), "\"admin_socket\": {\"value\": \"%s\", \"from\": \"default\"}",
		 asok);
	ck_assert_contains(out.buf, want);

	ck_assert_int_eq(admin("log level daemon debug", &out), 0);
	ck_assert_int_eq(admin("log level", &out), 0);
	ck_assert_contains(out.buf, "\"daemon\": \"debug\"");
	ck_assert_contains(out.buf, "\"osd\": \"info\"");
	ck_assert_int_eq(admin("log level nosuch debug", &out), -EINVAL);
	ck_assert_contains(out.buf, "unknown log subsystem \"nosuch\"");
	ck_assert_int_eq(admin("log level loud", &out), -EINVAL);
	ck_assert_int_eq(admin("frobnicate now", &out), -EINVAL);
	ck_assert_contains(out.buf, "unknown command \"frobnicate\"");
	ck_assert_int_eq(admin("where 5 4", &out), -ENOENT);
	ck_assert_contains(out.buf, "no partitioner is configured");
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
	tsr_sbuf_release(&out);
}
END_TEST

/* Bad configurations: the daemon refuses to start, naming file, line, key. */
static const struct {
	const char *text;
	const char *reason; /* follows the config path */
} bad_confs[] = {
	{ "testd-1 = {\n  colour = \"red\";\n};\n",
	  ":7: section 'testd-1': unknown key 'colour' for a testd daemon" },
	{ "testd = {\n  tick = true;\n};\n",
	  ":7: testd-1: option 'tick': expected a duration (an integer number of milliseconds, or text such as \"30s\"), got a boolean" },
	{ "testd = {\n  tick = \"5ms\";\n};\n",
	  ":7: testd-1: option 'tick': 5ms is out of range [10ms, 1h]" },
	{ "testd = { log_level = \"loud\"; };\n",
	  ":6: testd-1: option 'log_level': \"loud\" is not one of: error, warn, info, debug, trace" },
	{ "testdd = { };\n",
	  ":6: unknown section 'testdd'" },
	{ "testd = {\n  tick = ;\n};\n",
	  ":7: syntax error" },
	{ "testd = { partitioner = { salt = 1; }; };\n",
	  ":6: section 'testd': group 'partitioner' needs a string member 'plugin' naming the plugin" },
	{ "testd = {\n  partitioner = {\n    plugin = \"good\";\n    salt = \"x\";\n  };\n};\n",
	  ":9: partitioner plugin 'good': option 'salt': expected an integer, got a string \"x\"" },
	{ "testd = {\n  partitioner = {\n    plugin = \"good\";\n    salt = 2000000;\n  };\n};\n",
	  ":9: partitioner plugin 'good': option 'salt': 2000000 is out of range [0, 1000000]" },
	{ "testd = { partitioner = { plugin = \"nope\"; }; };\n",
	  ": partitioner plugin 'nope' was not found in " TEST_PLUGIN_DIR },
};

START_TEST(bad_config_refused)
{
	char err[4096], want[1024];

	new_dir();
	write_conf(bad_confs[_i].text);
	snprintf(want, sizeof(want), "%s%s", conf, bad_confs[_i].reason);
	/* in the foreground and detached alike */
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-f", "-i", "1", "-c", conf,
				   NULL), 1);
	ck_assert_contains(err, want);
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-i", "1", "-c", conf, NULL), 1);
	ck_assert_contains(err, want);
	ck_assert(!exists(pidf));
	ck_assert(!exists(asok));
}
END_TEST

START_TEST(plugin_from_config)
{
	struct tsr_sbuf out;

	new_dir();
	write_conf("testd = { partitioner = { plugin = \"good\"; salt = 7; spread = true; }; };\n"
		   "testd-2 = { partitioner = { plugin = \"good\"; salt = 8; }; };\n");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("status", &out), 0);
	ck_assert_contains(out.buf, "\"partitioner\": \"good\"");
	ck_assert_int_eq(admin("where 1234 8", &out), 0);
	ck_assert_contains(out.buf, "{\"ino\": 1234, \"rank\": ");
	ck_assert_int_eq(admin("where x 8", &out), -EINVAL);
	/* the plugin logs through the host table, prefixed with its instance */
	ck_assert_contains(slurp(logpath),
			   "plugin: testd-1/partitioner: created: salt 7 spread 1 threshold 0.25 split_size 10000 label alpha");
	/* the broken plugins in the same directory are named and skipped */
	ck_assert_contains(slurp(logpath), "bad_abi.so: built for plugin ABI 2.1");
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
	tsr_sbuf_release(&out);
}
END_TEST

START_TEST(missing_plugin_dir_is_not_fatal)
{
	struct tsr_sbuf out;

	new_dir();
	write_conf("testd-1 = { plugin_dir = \"/nonexistent-plugins\"; };\n");
	pid_t pid = run_testd(false, NULL, 0, "-f", "-i", "1", "-c", conf, NULL);
	wait_up();
	tsr_sbuf_init(&out);
	ck_assert_int_eq(admin("status", &out), 0);
	ck_assert_contains(out.buf, "\"plugins_loaded\": 0");
	ck_assert_contains(slurp(logpath),
			   "plugin directory /nonexistent-plugins: No such file or directory; continuing without plugins");
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_child(pid, 10000), 0);
	tsr_sbuf_release(&out);
}
END_TEST

/* Started with stdin and stdout closed, a detached daemon must not hand
 * those numbers to its log and then point them at /dev/null. */
START_TEST(detach_with_closed_stdio)
{
	new_dir();
	write_conf("");
	pid_t launcher = fork();
	ck_assert_int_ge(launcher, 0);
	if (launcher == 0) {
		close(0);
		close(1);
		execl(TESTD, TESTD, "-i", "1", "-c", conf, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(wait_child(launcher, 10000), 0);
	long pid = pid_in_file();
	ck_assert_int_gt(pid, 1);
	wait_up();
	kill((pid_t)pid, SIGTERM);
	wait_gone((pid_t)pid, 10000);
	ck_assert_contains(slurp(logpath), "SIGTERM from pid");
	ck_assert_contains(slurp(logpath), "testd-1 stopped");
}
END_TEST

START_TEST(command_line)
{
	char err[4096];

	ck_assert_int_eq(run_testd(true, err, sizeof(err), "--bogus", NULL), 2);
	ck_assert_contains(err, "Usage:");
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-f", NULL), 2);
	ck_assert_contains(err, "--id is required");
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-i", "a/b", NULL), 2);
	ck_assert_contains(err, "--id 'a/b'");
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-i", "1", "extra", NULL), 2);
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "-f", "-i", "1", "-c",
				   "/nonexistent/tessera.conf", NULL), 1);
	ck_assert_contains(err, "/nonexistent/tessera.conf: cannot read configuration file: No such file or directory");
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "--help", NULL), 0);
	ck_assert_int_eq(run_testd(true, err, sizeof(err), "--version", NULL), 0);
}
END_TEST

/* ---- Suite and cleanup ----------------------------------------------------*/

/* Kill every process whose command line mentions the root (bounded: one
 * pass over /proc). */
static void
kill_strays(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[300], cmd[4096];
		long pid = strtol(de->d_name, NULL, 10);
		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[n] = '\0';
		if (strstr(cmd, root) != NULL) {
			fprintf(stderr, "test_daemon: killing stray pid %ld: %s\n", pid, cmd);
			kill((pid_t)pid, SIGKILL);
		}
	}
	closedir(d);
}

int
main(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("lifecycle");
	SRunner *sr;
	int failed;

	snprintf(root, sizeof(root), "/tmp/tsr-daemon-test-XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, foreground_start_status_stop);
	tcase_add_test(tc, detached_start_and_stop);
	tcase_add_test(tc, second_instance_refused);
	tcase_add_test(tc, restart_after_sigkill);
	tcase_add_test(tc, sighup_reopens_log);
	tcase_add_test(tc, admin_commands);
	tcase_add_loop_test(tc, bad_config_refused, 0,
			    (int)(sizeof(bad_confs) / sizeof(bad_confs[0])));
	tcase_add_test(tc, plugin_from_config);
	tcase_add_test(tc, command_line);
	tcase_add_test(tc, missing_plugin_dir_is_not_fatal);
	tcase_add_test(tc, detach_with_closed_stdio);
	suite_add_tcase(s, tc);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	kill_strays();
	if (tu_rm_rf(root) != 0)
		fprintf(stderr, "test_daemon: could not remove %s\n", root);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
