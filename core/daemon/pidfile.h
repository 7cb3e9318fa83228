/* pidfile.h — a pid file that is locked for as long as its daemon lives.
 *
 * The lock (an open-file-description lock, fcntl F_OFD_SETLK, on the whole
 * file) is what says "running", not the file's existence: the kernel drops
 * it when the process dies however it dies, so a file left by a crash is
 * recognised as stale and reused, while a second daemon with the same
 * identity is refused.  An OFD lock, unlike a classic POSIX lock, belongs
 * to our descriptor, so some other part of the process opening and closing
 * the same file cannot release it by accident.
 */
#ifndef TSR_PIDFILE_H
#define TSR_PIDFILE_H

#include <tessera/common.h>

struct tsr_pidfile;

/* Create and lock path, writing our pid.  -EEXIST (with the other pid in
 * the message) if a live process holds it.  *stale_pid gets the pid a stale
 * file named, or 0. */
TSR_API int tsr_pidfile_create(const char *path, struct tsr_pidfile **out,
			       long *stale_pid, char *err, size_t errlen);
/* Remove the file and release the lock. */
TSR_API void tsr_pidfile_remove(struct tsr_pidfile *pf);
/* The pid of the live process holding path (as it wrote it in the file),
 * 0 if none holds it, or a negative errno (-EAGAIN: locked, but the pid is
 * not written yet). */
TSR_API long tsr_pidfile_holder(const char *path);

#endif
