/* tessera/plugin.h — the plugin ABI: descriptor, option schema, host table.
 *
 * A Tessera plugin is a shared object that exports exactly one symbol,
 * named by TSR_PLUGIN_SYMBOL, holding a const struct tsr_plugin_desc:
 *
 *     TSR_PLUGIN_EXPORT const struct tsr_plugin_desc tessera_plugin = {
 *         .abi_major = TSR_PLUGIN_ABI_MAJOR,
 *         .abi_minor = TSR_PLUGIN_ABI_MINOR,
 *         .desc_size = sizeof(struct tsr_plugin_desc),
 *         .kind      = TSR_KIND_PLACEMENT,
 *         .name      = "crush",
 *         ...
 *     };
 *
 * The core loads it with dlopen(RTLD_NOW | RTLD_LOCAL) and refuses it, with a
 * message naming the file and the reason, when
 *   - the symbol is missing,
 *   - abi_major differs from the core's, or abi_minor is newer than the core's,
 *   - the kind is unknown, or the kind's ops table is too small or lacks a
 *     mandatory operation,
 *   - the name is malformed or already taken by another plugin of that kind,
 *   - the option schema is malformed (bad name, unknown type, duplicate,
 *     a default that does not parse or breaks its own bounds).
 *
 * Lifetime: the core validates the options a user configured against the
 * plugin's schema, then calls create() with the resulting values and a host
 * table; every further call passes the instance handle create() returned;
 * destroy() releases it.  A plugin keeps no global mutable state, so one
 * process may hold several instances of the same plugin at once.
 *
 * Threads.  create() may run on any thread, and several create() calls (of
 * one plugin or several) may run at once: each makes its own instance.
 * Which calls on one instance may overlap is the kind's rule, written in
 * the kind's header (backend.h, placement.h, redundancy.h, partitioner.h,
 * mount.h); destroy() always runs alone, after every other call on the
 * instance has returned and every callback it made has returned.  A plugin
 * may start threads of its own (a backend's commit thread); it joins them
 * before destroy() returns.  Every service of the host table is
 * thread-safe (below), so a plugin calls it from any of these threads
 * without a lock of its own.
 *
 * Provisional kinds.  The redundancy, partitioner and mount kinds are
 * provisional until a daemon uses them: their ops tables may change in any
 * release, and each carries the version of its own header (abi_version,
 * checked by the loader, which refuses another version with a message
 * naming both).  A plugin of a provisional kind must expect to be rebuilt
 * for each release.  The growth rules below hold for the descriptor, the
 * host table and the backend and placement kinds.
 *
 * Growth rules (ABI minor bumps):
 *   - The descriptor, the host table and every kind's ops table carry their
 *     own size and only ever grow at the end.  A reader checks the size
 *     before touching a member added after the first release; operations
 *     appended after 1.0 are optional.
 *   - Structures passed as arrays or embedded by value (tsr_opt_def,
 *     tsr_opt_val, tsr_txn_op, tsr_topo_item, tsr_topo_rule, tsr_part_load,
 *     tsr_shard_buf, ...) are frozen for the whole major version: their
 *     stride must not change.  Where growth is likely they hold reserved
 *     members that must be zero; otherwise a later minor adds a new
 *     structure and a new operation that takes it.
 *   - Removing or reordering anything needs a major bump.
 */
#ifndef TESSERA_PLUGIN_H
#define TESSERA_PLUGIN_H

#include <stdarg.h>
#include <tessera/common.h>

TSR_BEGIN_DECLS

#define TSR_PLUGIN_ABI_MAJOR 1
#define TSR_PLUGIN_ABI_MINOR 1

/* The one symbol every plugin exports. */
#define TSR_PLUGIN_SYMBOL "tessera_plugin"

/* Plugin kinds: enum value, name used in configuration and by the CLI, and a
 * one-line description.  The numeric values are part of the ABI. */
#define TSR_PLUGIN_KIND_MAP(X)                                              \
	X(BACKEND, backend, 1, "object store behind an OSD")                 \
	X(PLACEMENT, placement, 2, "maps placement groups to OSDs")         \
	X(REDUNDANCY, redundancy, 3, "replication or erasure coding")       \
	X(PARTITIONER, partitioner, 4, "splits the namespace among MDS ranks") \
	X(MOUNT, mount, 5, "front end that mounts the file system")

enum tsr_plugin_kind {
	TSR_KIND_NONE = 0,
#define X(up, low, val, desc) TSR_KIND_##up = val,
	TSR_PLUGIN_KIND_MAP(X)
#undef X
};

/* ---- Option schema ------------------------------------------------------
 *
 * A plugin declares the options it accepts in a table ending with an entry
 * whose name is NULL.  Defaults and bounds are written as text, parsed by the
 * core according to the type, so one schema entry reads like documentation:
 *
 *     { .name = "path", .type = TSR_OPT_STRING, .flags = TSR_OPT_REQUIRED,
 *       .help = "directory holding the objects" },
 *     { .name = "cache_size", .type = TSR_OPT_SIZE, .def = "64M",
 *       .min = "1M", .max = "64G", .help = "..." },
 *
 * Types:
 *   BOOL    true/false
 *   INT     signed 64-bit integer
 *   DOUBLE  floating point
 *   STRING  text; .choices restricts it to a NULL-terminated list of words
 *   SIZE    byte count: an integer, or text with a K, M, G, T suffix (powers
 *           of 1024), e.g. "4M"
 *   DURATION  time in milliseconds: an integer, or text with an ms, s, m or h
 *           suffix, e.g. "30s"
 */
#define TSR_OPT_TYPE_MAP(X)        \
	X(BOOL, bool, 1)           \
	X(INT, int, 2)             \
	X(DOUBLE, double, 3)       \
	X(STRING, string, 4)       \
	X(SIZE, size, 5)           \
	X(DURATION, duration, 6)

enum tsr_opt_type {
	TSR_OPT_NONE = 0,
#define X(up, low, val) TSR_OPT_##up = val,
	TSR_OPT_TYPE_MAP(X)
#undef X
};

/* Option flags. */
#define TSR_OPT_REQUIRED 0x1u /* no default: the user must set it */

struct tsr_opt_def {
	const char *name;   /* [a-z][a-z0-9_]*, at most 63 characters */
	uint32_t type;      /* enum tsr_opt_type */
	uint32_t flags;     /* TSR_OPT_* */
	const char *def;    /* default as text; NULL only with TSR_OPT_REQUIRED */
	const char *min;    /* inclusive bounds as text (INT, DOUBLE, SIZE, */
	const char *max;    /*   DURATION); NULL means unbounded */
	const char *const *choices; /* STRING only; NULL-terminated, or NULL */
	const char *help;   /* one line, shown by `tessera plugins check` */
};

/* A validated value, one per schema entry, in schema order. */
struct tsr_opt_val {
	uint32_t type;  /* copy of the schema entry's type */
	uint32_t isset; /* 1: from the user's configuration, 0: the default */
	int64_t i;      /* BOOL (0/1), INT, SIZE (bytes), DURATION (ms) */
	double d;       /* DOUBLE */
	const char *s;  /* STRING; owned by the core, valid until destroy() */
};

struct tsr_opts {
	uint32_t count;                  /* number of schema entries */
	const struct tsr_opt_def *defs;  /* the plugin's own schema */
	const struct tsr_opt_val *vals;  /* vals[i] belongs to defs[i] */
};

/* ---- Host table ---------------------------------------------------------
 *
 * Everything a plugin needs from the process that loads it.  Plugins call
 * these rather than reaching for core globals, which is what lets a test run
 * a plugin against a fake core and one process hold two instances.  Every
 * function takes host->ctx as its first argument.
 *
 * Threads.  Every function of the table may be called from any thread —
 * the caller's, the plugin's own, a callback's — concurrently, with no lock
 * of the plugin's (the core's table: logv writes each line with one
 * write(2), so concurrent lines never interleave, and filters by an atomic
 * level; alloc/realloc/free are malloc's; the clocks are clock_gettime;
 * timer_add and timer_cancel lock the event loop's timer heap; conf_get
 * reads a configuration that does not change while instances live).  Memory
 * from alloc may be freed on another thread.  None of them may be called
 * from a signal handler.  A host of another program (a test's fake core)
 * must give the same guarantees.
 */
struct tsr_host {
	uint32_t size;       /* sizeof(struct tsr_host) as built by the core */
	uint32_t abi_minor;  /* the core's TSR_PLUGIN_ABI_MINOR */
	void *ctx;
	const char *instance; /* e.g. "osd-3/backend": prefix for log lines */

	/* Logging; level is enum tsr_log_level.  Thread-safe (above); a call
	 * may write to disk, so a hot path logs at DEBUG or below, which costs
	 * one atomic load when filtered out. */
	void (*logv)(void *ctx, int level, const char *fmt, va_list ap);

	/* Allocation; alloc and realloc return NULL on failure.  Thread-safe;
	 * what one thread allocates another may free. */
	void *(*alloc)(void *ctx, size_t size);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);

	/* Time in nanoseconds: wall clock and a monotonic clock. */
	uint64_t (*now_ns)(void *ctx);
	uint64_t (*mono_ns)(void *ctx);

	/* One-shot timers on the host's event loop.  -ENOTSUP when the host runs
	 * none (a command-line tool).  The callback runs on the loop thread.
	 * Cancelling on the loop thread is final: the callback will not run.
	 * From another thread, -ENOENT means it already ran or is running
	 * now, so free its argument only once you know it finished. */
	int (*timer_add)(void *ctx, uint64_t delay_ns, void (*cb)(void *arg),
			 void *arg, uint64_t *timer_id);
	int (*timer_cancel)(void *ctx, uint64_t timer_id);

	/* Read-only view of the daemon's configuration outside the plugin's own
	 * options (e.g. "run_dir", "fsid"): the value, as text, that the
	 * daemon's section chain resolves the key to.  -ENOENT when unset and
	 * without default, -ERANGE when buf is too small. */
	int (*conf_get)(void *ctx, const char *key, char *buf, size_t buflen);

	/* ABI 1.0 ends here; members added later go below and are read only
	 * when size says they are present. */
};

static inline TSR_PRINTF(3, 4) void
tsr_host_log(const struct tsr_host *host, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	host->logv(host->ctx, level, fmt, ap);
	va_end(ap);
}

/* ---- Descriptor ---------------------------------------------------------*/

struct tsr_plugin_desc {
	uint32_t abi_major;  /* TSR_PLUGIN_ABI_MAJOR the plugin was built with */
	uint32_t abi_minor;  /* TSR_PLUGIN_ABI_MINOR the plugin was built with */
	uint32_t desc_size;  /* sizeof(struct tsr_plugin_desc) as built */
	uint32_t kind;       /* enum tsr_plugin_kind */
	const char *name;    /* [a-z][a-z0-9_-]*, at most 31; unique per kind */
	const char *version; /* the plugin's own version, e.g. "1.2.0" */
	const char *summary; /* one line */
	const struct tsr_opt_def *options; /* NULL-name terminated; may be NULL */

	/* Make an instance.  opts holds one validated value per schema entry.
	 * On failure returns a negative errno and writes the reason to err. */
	int (*create)(const struct tsr_host *host, const struct tsr_opts *opts,
		      void **instance, char *err, size_t errlen);
	void (*destroy)(void *instance);

	/* The kind's operations: a struct tsr_<kind>_ops whose first member is
	 * its size (see the kind's header). */
	const void *ops;

	/* ABI 1.0 ends here. */
};

TSR_END_DECLS

#endif
