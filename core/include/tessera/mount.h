/* tessera/mount.h — the mount plugin kind: a front end (FUSE, later others)
 * that presents a Tessera file system to local programs.
 *
 * The mount plugin sits on top of the client library: the `tessera-mount`
 * program connects a client (maps, MDS sessions, OSD I/O), then hands it to
 * the plugin, which serves requests until the file system is unmounted or
 * stop() is called.  The client handle is opaque here; the plugin calls the
 * client library's public API with it (the mount plugin is the one kind that
 * links against the client library).
 *
 * Threads: serve() blocks on the calling thread and may start its own; it
 * runs at most once at a time per instance.  stop() may be called from any
 * thread while serve() runs — typically the thread that reads signals from
 * a signalfd; never from inside a signal handler — and makes serve()
 * return soon with 0.  destroy() runs alone, after serve() has returned.
 *
 * PROVISIONAL.  No program uses this kind yet (tessera-mount will): until
 * one does, its ABI may change in any release, unlike the backend and
 * placement kinds, which follow the growth rules of tessera/plugin.h.  The
 * ops table says which version of this header a plugin was built for
 * (abi_version); the loader refuses a plugin built for another one.  A
 * plugin of this kind must expect to be rebuilt for every release.
 *
 *   version 1: this layout.
 */
#ifndef TESSERA_MOUNT_H
#define TESSERA_MOUNT_H

#include <tessera/plugin.h>

TSR_BEGIN_DECLS

struct tsr_client; /* the client library's connection handle */

struct tsr_mount_args {
	uint32_t size;             /* sizeof(struct tsr_mount_args) */
	const char *mountpoint;    /* existing directory */
	const char *subdir;        /* path inside the file system to mount */
	int foreground;            /* stay attached to the terminal */
	int argc;                  /* front-end specific arguments (e.g. -o */
	char **argv;               /*   options for FUSE), argv[0] included */
};

/* The version of this header's ops table (see PROVISIONAL above). */
#define TSR_MOUNT_ABI_VERSION 1

struct tsr_mount_ops {
	uint32_t size; /* sizeof(struct tsr_mount_ops) as built */
	uint32_t abi_version; /* TSR_MOUNT_ABI_VERSION as built */

	/* Serve the file system at args->mountpoint until unmounted or
	 * stopped.  Returns 0 on a clean unmount. */
	int (*serve)(void *inst, struct tsr_client *client,
		     const struct tsr_mount_args *args, char *err,
		     size_t errlen);
	void (*stop)(void *inst);

	/* Version 1 ends here.  Provisional: not frozen (see above). */
};

TSR_END_DECLS

#endif
