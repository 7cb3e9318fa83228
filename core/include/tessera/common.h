/* tessera/common.h — definitions shared by every public Tessera header.
 *
 * Conventions that hold across the whole API:
 *   - Functions that can fail return 0 or a negative errno value.  The
 *     human-readable reason goes to a caller-supplied buffer (err, errlen)
 *     when the function takes one; such a buffer may be NULL.
 *   - Object names, keys and data travel as (pointer, length) pairs and are
 *     not NUL-terminated.  Names of plugins, options and sections are C
 *     strings.
 *   - Whoever calls a _create/_open function owns what it returns and
 *     releases it with the matching _destroy/_close.
 */
#ifndef TESSERA_COMMON_H
#define TESSERA_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
#define TSR_BEGIN_DECLS extern "C" {
#define TSR_END_DECLS }
#else
#define TSR_BEGIN_DECLS
#define TSR_END_DECLS
#endif

/* The core is built with -fvisibility=hidden and marks its external
 * functions TSR_API.  libtessera-core.so exports only those of them declared
 * in these installed headers, under the symbol version TESSERA_0.1 (its
 * linker version script, core/libtessera-core.sym, says which); the TSR_API
 * functions of the core's internal headers are for the programs built in
 * the source tree, which link the core statically. */
#define TSR_API __attribute__((visibility("default")))

/* A plugin's single exported symbol is marked with this. */
#define TSR_PLUGIN_EXPORT __attribute__((visibility("default")))

#define TSR_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))

/* Log levels, shared by the core logger and the plugin host table. */
#define TSR_LOG_LEVEL_MAP(X) \
	X(ERROR, error, 0)   \
	X(WARN, warn, 1)     \
	X(INFO, info, 2)     \
	X(DEBUG, debug, 3)   \
	X(TRACE, trace, 4)

enum tsr_log_level {
#define X(up, low, val) TSR_LOG_##up = val,
	TSR_LOG_LEVEL_MAP(X)
#undef X
};

#endif
