/* fsops.c — metadata operations per second on a mounted file system, for
 * bench/fs.sh:
 *
 *     fsops DIR NFILES NPROCS
 *
 * NPROCS processes, each in a directory of its own under DIR, create
 * NFILES / NPROCS empty files, stat each, rename each, and unlink each;
 * every phase starts together (a pipe as a barrier) and is timed from the
 * first start to the last finish.  One line per phase: "create 1234.5"
 * (operations per second, all processes together).  Exit 1 on any
 * failed call, naming it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CREATE, STAT, RENAME, UNLINK, NPHASES };
static const char *const names[NPHASES] = { "create", "stat", "rename", "unlink" };

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int
phase(const char *dir, int p, int n)
{
	char a[4200], b[4200];
	struct stat st;

	for (int i = 0; i < n; i++) {
		int rc = 0;
		snprintf(a, sizeof(a), "%s/f%06d", dir, i);
		snprintf(b, sizeof(b), "%s/r%06d", dir, i);
		switch (p) {
		case CREATE: {
			int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
			rc = fd < 0 ? -1 : close(fd);
			break;
		}
		case STAT: rc = stat(a, &st); break;
		case RENAME: rc = rename(a, b); break;
		case UNLINK: rc = unlink(b); break;
		}
		if (rc < 0) {
			fprintf(stderr, "fsops: %s %s: %s\n", names[p], a, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	int nfiles, nprocs, go[NPHASES][2], done[2];
	double t0[NPHASES], t1[NPHASES];
	pid_t pids[64];
	int failed = 0;

	if (argc != 4 || (nfiles = atoi(argv[2])) <= 0 || (nprocs = atoi(argv[3])) <= 0 ||
	    nprocs > 64) {
		fprintf(stderr, "usage: fsops DIR NFILES NPROCS (NPROCS <= 64)\n");
		return 2;
	}
	for (int p = 0; p < NPHASES; p++)
		if (pipe(go[p]) < 0)
			return 1;
	if (pipe(done) < 0)
		return 1;
	for (int k = 0; k < nprocs; k++) {
		if ((pids[k] = fork()) == 0) {
			char dir[4096], c;
			snprintf(dir, sizeof(dir), "%s/p%02d", argv[1], k);
			int ok = mkdir(dir, 0755) == 0 || errno == EEXIST;
			if (!ok)
				perror(dir);
			for (int p = 0; p < NPHASES; p++)
				close(go[p][1]); /* the parent's close alone starts a phase */
			for (int p = 0; ok && p < NPHASES; p++) {
				ok = read(go[p][0], &c, 1) == 0 && /* EOF: go */
				     phase(dir, p, nfiles / nprocs) == 0;
				if (ok && write(done[1], "x", 1) != 1)
					_exit(1);
			}
			/* a failure ends the parent's wait for this phase */
			if (!ok && write(done[1], "f", 1) != 1)
				_exit(1);
			_exit(ok ? 0 : 1);
		}
	}
	for (int p = 0; p < NPHASES; p++) {
		char c;
		t0[p] = now();
		close(go[p][1]); /* every child's read returns */
		for (int k = 0; k < nprocs; k++)
			if (read(done[0], &c, 1) != 1 || c != 'x') {
				failed = 1;
				break;
			}
		t1[p] = now();
		if (failed)
			break;
	}
	for (int k = 0; k < nprocs; k++) {
		int st;
		if (failed)
			kill(pids[k], SIGKILL); /* (the others wait for a phase) */
		waitpid(pids[k], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	if (failed)
		return 1;
	for (int p = 0; p < NPHASES; p++)
		printf("%s %.1f\n", names[p],
		       (double)(nfiles / nprocs * nprocs) / (t1[p] - t0[p]));
	return 0;
}
