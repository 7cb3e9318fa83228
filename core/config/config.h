/* config.h — the cluster configuration file and one daemon's view of it.
 *
 * One libconfig file describes a cluster.  Top-level groups are sections:
 *
 *     global = { run_dir = "/run/tessera"; };   # every daemon
 *     osd    = { log_level = "debug"; };         # every OSD
 *     osd-3  = { log_file = "/var/log/osd-3"; }; # OSD 3 only
 *
 * A daemon of type T and id I resolves each option from the most specific
 * section that sets it: T-I, then T, then global, then the built-in default.
 * Every section that applies to the daemon is checked in full: an unknown
 * key, a wrong type or an out-of-range value is an error naming the file,
 * line and key.  Sections for other daemon types must at least have a known
 * type name, so a misspelt section is never silently ignored.
 *
 * String values may refer to other settings: $name (T-I), $type, $id, and
 * $<key> or ${<key>} for any string option (e.g. "$run_dir/$name.asok");
 * "$$" is a literal '$'.  Any other $word is an error naming the file, the
 * line, the key and the variable, never literal text.
 *
 * The file must be a regular file of at most TSR_CONF_MAX_SIZE bytes and
 * TSR_CONF_MAX_SETTINGS settings (libconfig takes time in the square of the
 * settings of one group and of the length of one string), without
 * @include: a cluster is described by one file.
 *
 * A plugin is chosen by a group naming it, whose other members are the
 * plugin's options, checked against its schema when it is loaded:
 *
 *     osd = { backend = { plugin = "file"; path = "/srv/osd-$id"; }; };
 */
#ifndef TSR_CONFIG_H
#define TSR_CONFIG_H

#include <tessera/plugin.h>
#include "config/options.h"

/* Section types an option may appear in. */
#define TSR_SEC_GLOBAL 0x01u
#define TSR_SEC_MON 0x02u
#define TSR_SEC_OSD 0x04u
#define TSR_SEC_MDS 0x08u
#define TSR_SEC_CLIENT 0x10u
#define TSR_SEC_EXTRA 0x20u /* the type a daemon registered itself */
#define TSR_SEC_ALL 0x3fu

/* An option of the core or of one daemon type.  plugin_kind != 0 makes the
 * key a plugin group of that kind instead of a scalar. */
struct tsr_conf_opt {
	struct tsr_opt_def def;
	uint32_t sections;
	uint32_t plugin_kind;
};

/* Limits of a configuration file.  Far above any real cluster's (a few KiB,
 * some hundred settings), low enough that a damaged or hostile file is
 * refused at once instead of taking minutes to parse. */
#define TSR_CONF_MAX_SIZE (1024 * 1024)
#define TSR_CONF_MAX_SETTINGS 10000

struct tsr_conf;

/* Parse a file (or, for tests, text with a name for messages).  Anything
 * but a regular file (a directory, a FIFO: never waited on) is refused, and
 * so is a file above the limits above. */
TSR_API int tsr_conf_load(const char *path, struct tsr_conf **out, char *err,
			  size_t errlen);
TSR_API int tsr_conf_load_string(const char *text, const char *name,
				 struct tsr_conf **out, char *err,
				 size_t errlen);
TSR_API void tsr_conf_destroy(struct tsr_conf *conf);
TSR_API const char *tsr_conf_path(const struct tsr_conf *conf);

/* Resolve and check the options of daemon type-id.  extra (terminated by an
 * entry with a NULL name, may be NULL) adds options of a daemon type the
 * core does not know (tests' daemons); its entries use TSR_SEC_EXTRA. */
TSR_API int tsr_conf_resolve(struct tsr_conf *conf, const char *type,
			     const char *id, const struct tsr_conf_opt *extra,
			     char *err, size_t errlen);
/* Check every section of the file against every known daemon type: the view
 * of each type (mon, osd, mds, client) and of each TYPE-ID section.  Once
 * every view has resolved, check (may be NULL) is called on each, resolved
 * again, with the type and the id (NULL for a type's view), to run what a
 * daemon of that type checks at start; its error stops the walk.  The conf
 * is left resolved as the last view checked. */
typedef int (*tsr_conf_check_fn)(void *arg, struct tsr_conf *conf,
				 const char *type, const char *id, char *err,
				 size_t errlen);
TSR_API int tsr_conf_check_all(struct tsr_conf *conf, tsr_conf_check_fn check,
			       void *arg, char *err, size_t errlen);

/* Typed accessors of a resolved configuration.  The key must be in the
 * schema (asking for an unknown key is a programming error: it logs and
 * returns 0 / ""). */
TSR_API int64_t tsr_conf_int(const struct tsr_conf *conf, const char *key);
TSR_API bool tsr_conf_bool(const struct tsr_conf *conf, const char *key);
TSR_API double tsr_conf_double(const struct tsr_conf *conf, const char *key);
/* With $variables expanded; valid until conf is destroyed. */
TSR_API const char *tsr_conf_str(struct tsr_conf *conf, const char *key);
/* Any option as text (for `config show` and the plugin host's conf_get).
 * -ENOENT for an unknown key, -ERANGE if buf is too small. */
TSR_API int tsr_conf_get_text(struct tsr_conf *conf, const char *key,
			      char *buf, size_t buflen);
/* Where the value in effect came from: "file:line" or "default". */
TSR_API const char *tsr_conf_where(const struct tsr_conf *conf,
				   const char *key);
/* Visit every resolved option: name, value as text, origin. */
TSR_API void tsr_conf_foreach(struct tsr_conf *conf,
			      void (*cb)(void *arg, const char *key,
					 const char *value, const char *where),
			      void *arg);

/* A plugin group: the plugin's name and its options as source values
 * (valid until conf is destroyed).  -ENOENT when the group is not set. */
TSR_API int tsr_conf_plugin(struct tsr_conf *conf, const char *key,
			    const char **plugin, const struct tsr_srcval **srcs,
			    size_t *nsrc, char *err, size_t errlen);

/* The core's option table (terminated by a NULL name), for documentation
 * (`tessera config options`). */
TSR_API const struct tsr_conf_opt *tsr_conf_core_options(void);
TSR_API const char *tsr_conf_section_names(uint32_t sections, char *buf,
					   size_t buflen);

/* The build's default plugin directory ($(pkglibdir)/plugins). */
TSR_API const char *tsr_conf_default_plugin_dir(void);

#endif
