/* registry.h — the plugin loader and registry.
 *
 * A registry holds loaded plugins, at most one per (kind, name).  Plugins
 * come from shared objects (tsr_registry_load_file/_dir) or are linked into
 * the program (tsr_registry_add_builtin); both go through the same checks
 * (tsr_plugin_desc_check) and are found the same way.
 *
 * Every refusal names the file and the reason, in one line a plugin author
 * can act on: "tests/plugins/.libs/bad_abi.so: built for plugin ABI 2.0,
 * this core speaks 1.0".
 *
 * Ownership: plugins are owned by the registry and live until it is
 * destroyed.  Instances (tsr_instance_create) must be destroyed before the
 * registry that loaded their plugin.  A registry is not thread-safe while
 * loading; finding and instantiating may run concurrently once loading is
 * done.
 */
#ifndef TSR_REGISTRY_H
#define TSR_REGISTRY_H

#include <tessera/plugin.h>
#include "config/options.h"

struct tsr_registry;
struct tsr_plugin;
struct tsr_instance;

TSR_API struct tsr_registry *tsr_registry_create(void);
TSR_API void tsr_registry_destroy(struct tsr_registry *reg);

/* Load one shared object.  On success *out (may be NULL) is the plugin. */
TSR_API int tsr_registry_load_file(struct tsr_registry *reg, const char *path,
				   const struct tsr_plugin **out, char *err,
				   size_t errlen);
/* Load every *.so directly in dir, in name order.  A file that is refused
 * is reported to refused(arg, path, reason) — or logged as a warning when
 * refused is NULL — and does not stop the scan.  Returns the number loaded,
 * or a negative errno when dir cannot be read. */
TSR_API int tsr_registry_load_dir(struct tsr_registry *reg, const char *dir,
				  void (*refused)(void *arg, const char *path,
						  const char *reason),
				  void *arg, char *err, size_t errlen);
TSR_API int tsr_registry_add_builtin(struct tsr_registry *reg,
				     const struct tsr_plugin_desc *desc,
				     char *err, size_t errlen);

TSR_API const struct tsr_plugin *tsr_registry_find(const struct tsr_registry *reg,
						   uint32_t kind,
						   const char *name);
TSR_API size_t tsr_registry_count(const struct tsr_registry *reg);
TSR_API const struct tsr_plugin *tsr_registry_at(const struct tsr_registry *reg,
						 size_t i);

TSR_API const struct tsr_plugin_desc *tsr_plugin_desc(const struct tsr_plugin *p);
/* The file it came from, or "(built-in)". */
TSR_API const char *tsr_plugin_path(const struct tsr_plugin *p);

/* Kind names ("backend") <-> enum tsr_plugin_kind; parse returns 0 for an
 * unknown name. */
TSR_API const char *tsr_plugin_kind_name(uint32_t kind);
TSR_API uint32_t tsr_plugin_kind_parse(const char *name);
/* The ops-table version this core speaks for a provisional kind
 * (redundancy, partitioner, mount: tessera/plugin.h), 0 for a frozen or
 * unknown kind. */
TSR_API uint32_t tsr_plugin_kind_provisional(uint32_t kind);

/* Everything the loader checks about a descriptor, without loading. */
TSR_API int tsr_plugin_desc_check(const struct tsr_plugin_desc *d, char *err,
				  size_t errlen);

/* Make an instance: check the user's option values (srcs) against the
 * plugin's schema, then call its create() with host.  host must outlive the
 * instance. */
TSR_API int tsr_instance_create(const struct tsr_plugin *p,
				const struct tsr_host *host,
				const struct tsr_srcval *srcs, size_t nsrc,
				struct tsr_instance **out, char *err,
				size_t errlen);
TSR_API void tsr_instance_destroy(struct tsr_instance *inst);
TSR_API void *tsr_instance_handle(const struct tsr_instance *inst);
TSR_API const void *tsr_instance_ops(const struct tsr_instance *inst);
TSR_API const struct tsr_opts *tsr_instance_opts(const struct tsr_instance *inst);
TSR_API const struct tsr_plugin *tsr_instance_plugin(const struct tsr_instance *inst);

#endif
