/* pidfile.c — locked pid files with stale-file detection. */
#include "daemon/pidfile.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tsr_pidfile {
	int fd;
	char *path;
};

static long
read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

long
tsr_pidfile_holder(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long pid;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0) {
		pid = -errno;
	} else if (fl.l_type == F_UNLCK) {
		pid = 0;
	} else {
		/* open file description locks do not report an owner pid
		 * (l_pid is -1): the holder wrote it into the file */
		pid = read_pid(fd);
		if (pid == 0)
			pid = -EAGAIN; /* locked, pid not written yet */
	}
	close(fd);
	return pid;
}

int
tsr_pidfile_create(const char *path, struct tsr_pidfile **out, long *stale_pid,
		   char *err, size_t errlen)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct tsr_pidfile *pf;
	struct stat locked, named;
	char buf[32];
	int fd, n, rc;

	*stale_pid = 0;
	for (int tries = 0;; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return tsr_errf(err, errlen, -errno,
					"cannot open pid file %s: %s", path,
					strerror(errno));
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
			rc = errno;
			long other = read_pid(fd);
			close(fd);
			if (rc == EAGAIN || rc == EACCES)
				return tsr_errf(err, errlen, -EEXIST,
						"already running as pid %ld (pid file %s is locked)",
						other, path);
			return tsr_errf(err, errlen, -rc,
					"cannot lock pid file %s: %s", path,
					strerror(rc));
		}
		/* A holder exiting unlinks the file and then unlocks it.  If
		 * that fell between our open and our lock, we hold a lock on
		 * an orphan while the path names a new file (or none) that
		 * another daemon can lock too: start again. */
		if (fstat(fd, &locked) == 0 && stat(path, &named) == 0 &&
		    locked.st_dev == named.st_dev && locked.st_ino == named.st_ino)
			break;
		close(fd);
		if (tries == 100)
			return tsr_errf(err, errlen, -EAGAIN,
					"pid file %s keeps being replaced; giving up",
					path);
	}
	*stale_pid = read_pid(fd);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		rc = -errno;
		close(fd);
		return tsr_errf(err, errlen, rc ? rc : -EIO,
				"cannot write pid file %s: %s", path,
				strerror(rc ? -rc : EIO));
	}
	pf = tsr_xcalloc(1, sizeof(*pf));
	pf->fd = fd;
	pf->path = tsr_xstrdup(path);
	*out = pf;
	return 0;
}

void
tsr_pidfile_remove(struct tsr_pidfile *pf)
{
	if (pf == NULL)
		return;
	/* unlink while still holding the lock: whoever locks the file after
	 * us then finds the path no longer names it (see create) and starts
	 * again, instead of running on a file we are about to remove */
	unlink(pf->path);
	close(pf->fd);
	free(pf->path);
	free(pf);
}
