/* tessera/mount.h — the mount plugin kind: a front end (FUSE, later others)
 * that presents a Tessera file system to local programs.
 *
 * The plugin sits on top of the file client (tessera/fs.h): the program
 * that loads it (tessera-fuse) connects the client and opens the file
 * system, then hands the plugin a table of the file client's calls
 * (struct tsr_mount_fs) — the plugin links no Tessera library itself, so
 * a test may give it another table, and the one copy of the client in the
 * process is the program's.  serve() presents the file system at the
 * mount point until it is unmounted or stop() is called.
 *
 * Threads: serve() blocks on the calling thread and may start its own
 * (FUSE's workers call the table from many threads at once: every call of
 * tessera/fs.h may be); it runs at most once at a time per instance.
 * stop() may be called from any thread while serve() runs — typically the
 * thread that reads signals — never from inside a signal handler, and
 * makes serve() return soon with 0.  destroy() runs alone, after serve()
 * has returned.
 *
 * PROVISIONAL (tessera/plugin.h): until a release freezes it, this ABI may
 * change in any release.  The ops table says which version of this header
 * a plugin was built for (abi_version); the loader refuses another.
 *
 *   version 1: serve(inst, client, args) — never used by a program.
 *   version 2: serve(inst, fs table, args); the table below.
 *   version 3: the table ends with keep_cache and set_inval (a page
 *              cache kept across opens while the client holds CACHE).
 *   version 4: the table ends with flush and fsyncdir (the MDS answers
 *              changes before its journal holds them: close(2) need
 *              not wait for it, fsync(2) of a directory does).
 */
#ifndef TESSERA_MOUNT_H
#define TESSERA_MOUNT_H

#include <tessera/plugin.h>
#include <tessera/fs.h>

TSR_BEGIN_DECLS

struct tsr_mount_args {
	uint32_t size;             /* sizeof(struct tsr_mount_args) */
	const char *mountpoint;    /* existing directory */
	uint64_t root;             /* the inode shown as the mount's root (the
	                              file system's root, or a subdirectory) */
	int foreground;            /* stay attached to the terminal */
	int argc;                  /* front-end specific arguments (e.g. -o */
	char **argv;               /*   options for FUSE), argv[0] included */
	/* called once the file system is mounted (NULL: nobody waits): the
	 * program tells whoever started it that the mount is there */
	void (*mounted)(void *arg);
	void *mounted_arg;
};

/* The file client's calls (tessera/fs.h), for the plugin to call with fs. */
struct tsr_mount_fs {
	uint32_t size;             /* sizeof(struct tsr_mount_fs) as built */
	struct tsr_fs *fs;
	const char *(*why)(void);
	int (*lookup)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		      struct tsr_fs_stat *);
	int (*getattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
		       struct tsr_fs_stat *);
	int (*setattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
		       const struct tsr_fs_stat *, unsigned, struct tsr_fs_stat *);
	int (*mknod)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		     uint32_t, uint64_t, struct tsr_fs_stat *);
	int (*mkdir)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		     uint32_t, struct tsr_fs_stat *);
	int (*symlink)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		       const char *, struct tsr_fs_stat *);
	ssize_t (*readlink)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, char *,
			    size_t);
	int (*unlink)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *);
	int (*rmdir)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *);
	int (*rename)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		      uint64_t, const char *, unsigned);
	int (*link)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, uint64_t,
		    const char *, struct tsr_fs_stat *);
	int (*readdir)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, uint64_t,
		       uint32_t, tsr_fs_dirent_fn, void *);
	ssize_t (*getxattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
			    const char *, void *, size_t);
	int (*setxattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
			const void *, size_t, int);
	ssize_t (*listxattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, char *,
			     size_t);
	int (*removexattr)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
			   const char *);
	int (*open)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, int,
		    struct tsr_file **);
	int (*create)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t, const char *,
		      uint32_t, int, struct tsr_file **, struct tsr_fs_stat *);
	ssize_t (*read)(struct tsr_file *, void *, size_t, uint64_t);
	ssize_t (*write)(struct tsr_file *, const void *, size_t, uint64_t);
	int (*fsync)(struct tsr_file *, int);
	int (*close)(struct tsr_file *);
	int (*fallocate)(struct tsr_file *, int, uint64_t, uint64_t);
	int (*getlk)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
		     struct tsr_fs_lock *);
	int (*setlk)(struct tsr_fs *, const struct tsr_fs_cred *, uint64_t,
		     const struct tsr_fs_lock *, int);
	int (*statfs)(struct tsr_fs *, struct tsr_fs_statfs *);
	int (*fsetattr)(struct tsr_file *, const struct tsr_fs_stat *, unsigned,
			struct tsr_fs_stat *);
	int (*keep_cache)(struct tsr_file *);
	void (*set_inval)(struct tsr_fs *, void (*)(void *, uint64_t), void *);
	int (*flush)(struct tsr_file *);
	int (*fsyncdir)(struct tsr_fs *, uint64_t);
};

/* The version of this header's ops table (see PROVISIONAL above). */
#define TSR_MOUNT_ABI_VERSION 4

struct tsr_mount_ops {
	uint32_t size; /* sizeof(struct tsr_mount_ops) as built */
	uint32_t abi_version; /* TSR_MOUNT_ABI_VERSION as built */

	/* Serve fs at args->mountpoint until unmounted or stopped.  Returns 0
	 * on a clean unmount, or an error with the reason in err. */
	int (*serve)(void *inst, const struct tsr_mount_fs *fs,
		     const struct tsr_mount_args *args, char *err, size_t errlen);
	void (*stop)(void *inst);

	/* Version 4 ends here.  Provisional: not frozen (see above). */
};

TSR_END_DECLS

#endif
