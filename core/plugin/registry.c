/* registry.c — loading, checking and instantiating plugins. */
#include "plugin/registry.h"
#include "plugin/elfcheck.h"
#include "log/log.h"
#include "util/util.h"

#include <tessera/backend.h>
#include <tessera/mount.h>
#include <tessera/partitioner.h>
#include <tessera/placement.h>
#include <tessera/redundancy.h>

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NAME_MAX_LEN 31
#define OPS_SIZE_LIMIT 65536 /* far above any real table: catches garbage */

/* The size of struct tsr_plugin_desc in ABI 1.0: what every plugin of
 * major 1 provides at the least. */
#define DESC_SIZE_1_0 (offsetof(struct tsr_plugin_desc, ops) + sizeof(void *))

/* Operations every plugin of a kind must provide, per kind.  The first
 * release made every operation mandatory; members appended later are
 * optional and absent when the plugin's ops size stops short of them. */
struct op_slot {
	const char *name;
	size_t off;
};

#define SLOT(type, m) { #m, offsetof(struct type, m) }

static const struct op_slot backend_slots[] = {
	SLOT(tsr_backend_ops, mkfs), SLOT(tsr_backend_ops, mount),
	SLOT(tsr_backend_ops, umount), SLOT(tsr_backend_ops, submit),
	SLOT(tsr_backend_ops, flush), SLOT(tsr_backend_ops, read),
	SLOT(tsr_backend_ops, stat), SLOT(tsr_backend_ops, getattr),
	SLOT(tsr_backend_ops, getattrs), SLOT(tsr_backend_ops, omap_get),
	SLOT(tsr_backend_ops, omap_iter), SLOT(tsr_backend_ops, list_colls),
	SLOT(tsr_backend_ops, list_objects), SLOT(tsr_backend_ops, statfs),
	SLOT(tsr_backend_ops, fsck),
};
static const struct op_slot placement_slots[] = {
	SLOT(tsr_placement_ops, encode), SLOT(tsr_placement_ops, compile),
	SLOT(tsr_placement_ops, decompile), SLOT(tsr_placement_ops, load),
	SLOT(tsr_placement_ops, map), SLOT(tsr_placement_ops, max_devices),
	SLOT(tsr_placement_ops, rule_width),
};
static const struct op_slot redundancy_slots[] = {
	SLOT(tsr_redundancy_ops, info), SLOT(tsr_redundancy_ops, shard_size),
	SLOT(tsr_redundancy_ops, encode), SLOT(tsr_redundancy_ops, decode),
	SLOT(tsr_redundancy_ops, repair),
	SLOT(tsr_redundancy_ops, minimum_to_read),
};
static const struct op_slot partitioner_slots[] = {
	SLOT(tsr_partitioner_ops, where), SLOT(tsr_partitioner_ops, balance),
	SLOT(tsr_partitioner_ops, fragment),
};
static const struct op_slot mount_slots[] = {
	SLOT(tsr_mount_ops, serve), SLOT(tsr_mount_ops, stop),
};

struct kind_info {
	uint32_t kind;
	const char *name;
	size_t ops_size_1_0;
	const struct op_slot *slots;
	size_t nslots;
	/* A provisional kind (tessera/plugin.h): the version of its ops table
	 * this core speaks and where a plugin states its own; 0 for the
	 * frozen kinds. */
	uint32_t abi_version;
	size_t abi_off;
};

/* The 1.0 size of an ops table is fixed forever at the end of its last 1.0
 * member, not sizeof(): when a member is appended, plugins built before it
 * must still load.  (For a provisional kind it is the size of the current
 * version's table, which abi_version pins.) */
#define SIZE_TO(type, last) (offsetof(struct type, last) + sizeof(((struct type *)0)->last))
#define KIND(k, type, last, slots) { k, NULL, SIZE_TO(type, last), slots, TSR_ARRAY_SIZE(slots), 0, 0 }
#define PROVISIONAL(k, type, last, slots, version) \
	{ k, NULL, SIZE_TO(type, last), slots, TSR_ARRAY_SIZE(slots), version, \
	  offsetof(struct type, abi_version) }

static const struct kind_info kinds[] = {
	KIND(TSR_KIND_BACKEND, tsr_backend_ops, fsck, backend_slots),
	KIND(TSR_KIND_PLACEMENT, tsr_placement_ops, rule_width, placement_slots),
	PROVISIONAL(TSR_KIND_REDUNDANCY, tsr_redundancy_ops, minimum_to_read,
		    redundancy_slots, TSR_REDUNDANCY_ABI_VERSION),
	PROVISIONAL(TSR_KIND_PARTITIONER, tsr_partitioner_ops, fragment,
		    partitioner_slots, TSR_PARTITIONER_ABI_VERSION),
	PROVISIONAL(TSR_KIND_MOUNT, tsr_mount_ops, stop, mount_slots,
		    TSR_MOUNT_ABI_VERSION),
};

const char *
tsr_plugin_kind_name(uint32_t kind)
{
	switch (kind) {
#define X(up, low, val, desc) case TSR_KIND_##up: return #low;
	TSR_PLUGIN_KIND_MAP(X)
#undef X
	}
	return NULL;
}

uint32_t
tsr_plugin_kind_parse(const char *name)
{
#define X(up, low, val, desc) if (strcmp(name, #low) == 0) return TSR_KIND_##up;
	TSR_PLUGIN_KIND_MAP(X)
#undef X
	return 0;
}

static const struct kind_info *
kind_info(uint32_t kind)
{
	for (size_t i = 0; i < TSR_ARRAY_SIZE(kinds); i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

uint32_t
tsr_plugin_kind_provisional(uint32_t kind)
{
	const struct kind_info *ki = kind_info(kind);

	return ki ? ki->abi_version : 0;
}

static bool
plugin_name_ok(const char *s)
{
	size_t n;

	if (s == NULL || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (n = 0; s[n]; n++)
		if (!(islower((unsigned char)s[n]) || isdigit((unsigned char)s[n]) ||
		      s[n] == '_' || s[n] == '-'))
			return false;
	return n <= NAME_MAX_LEN;
}

static int
check_ops(const struct tsr_plugin_desc *d, char *err, size_t errlen)
{
	const struct kind_info *ki = kind_info(d->kind);
	uint32_t size;

	if (d->ops == NULL)
		return tsr_errf(err, errlen, -EINVAL,
				"%s plugin '%s' has no operations table (ops is NULL)",
				tsr_plugin_kind_name(d->kind), d->name);
	memcpy(&size, d->ops, sizeof(size));
	/* A provisional kind's version first, before the size (which another
	 * version may change) and before any slot is read (another version
	 * may hold other functions there, or the same with other
	 * arguments). */
	if (ki->abi_version != 0 && size >= ki->abi_off + sizeof(uint32_t) &&
	    size <= OPS_SIZE_LIMIT) {
		uint32_t v;

		memcpy(&v, (const char *)d->ops + ki->abi_off, sizeof(v));
		if (v != ki->abi_version)
			return tsr_errf(err, errlen, -EPROTO,
					"%s plugin '%s': built for %s ABI version %u, this core speaks %u (%s is a provisional kind: its ABI changes until a daemon uses it; rebuild the plugin against this Tessera's headers)",
					tsr_plugin_kind_name(d->kind), d->name,
					tsr_plugin_kind_name(d->kind), v,
					ki->abi_version,
					tsr_plugin_kind_name(d->kind));
	}
	if (size < ki->ops_size_1_0 || size > OPS_SIZE_LIMIT)
		return tsr_errf(err, errlen, -EINVAL,
				"%s plugin '%s': operations table size %u is wrong (ABI 1.0 needs at least %zu bytes; is its first member the size?)",
				tsr_plugin_kind_name(d->kind), d->name, size,
				ki->ops_size_1_0);
	for (size_t i = 0; i < ki->nslots; i++) {
		void *fn;
		memcpy(&fn, (const char *)d->ops + ki->slots[i].off, sizeof(fn));
		if (fn == NULL)
			return tsr_errf(err, errlen, -EINVAL,
					"%s plugin '%s': mandatory operation '%s' is NULL",
					tsr_plugin_kind_name(d->kind), d->name,
					ki->slots[i].name);
	}
	return 0;
}

int
tsr_plugin_desc_check(const struct tsr_plugin_desc *d, char *err,
		      size_t errlen)
{
	char why[512];

	if (d->abi_major != TSR_PLUGIN_ABI_MAJOR)
		return tsr_errf(err, errlen, -EPROTO,
				"built for plugin ABI %u.%u, this core speaks %d.%d (the major versions must match)",
				d->abi_major, d->abi_minor, TSR_PLUGIN_ABI_MAJOR,
				TSR_PLUGIN_ABI_MINOR);
	if (d->abi_minor > TSR_PLUGIN_ABI_MINOR)
		return tsr_errf(err, errlen, -EPROTO,
				"built for plugin ABI %u.%u, newer than this core's %d.%d; upgrade Tessera or rebuild the plugin against these headers",
				d->abi_major, d->abi_minor, TSR_PLUGIN_ABI_MAJOR,
				TSR_PLUGIN_ABI_MINOR);
	if (d->desc_size < DESC_SIZE_1_0)
		return tsr_errf(err, errlen, -EINVAL,
				"descriptor is %u bytes, ABI 1.0 needs at least %zu (set desc_size = sizeof(struct tsr_plugin_desc))",
				d->desc_size, (size_t)DESC_SIZE_1_0);
	if (kind_info(d->kind) == NULL) {
		char known[128] = "";
		size_t n = 0;
		for (size_t i = 0; i < TSR_ARRAY_SIZE(kinds); i++) {
			int w = snprintf(known + n, sizeof(known) - n, "%s%s",
					 i ? ", " : "",
					 tsr_plugin_kind_name(kinds[i].kind));
			if (w > 0 && (size_t)w < sizeof(known) - n)
				n += (size_t)w;
		}
		return tsr_errf(err, errlen, -EINVAL,
				"unknown plugin kind %u (known kinds: %s)",
				d->kind, known);
	}
	if (!plugin_name_ok(d->name))
		return tsr_errf(err, errlen, -EINVAL,
				"plugin name \"%s\" is not of the form [a-z][a-z0-9_-]* (at most %d characters)",
				d->name ? d->name : "(null)", NAME_MAX_LEN);
	if (d->version == NULL || d->version[0] == '\0')
		return tsr_errf(err, errlen, -EINVAL,
				"%s plugin '%s' has no version string",
				tsr_plugin_kind_name(d->kind), d->name);
	if (d->create == NULL || d->destroy == NULL)
		return tsr_errf(err, errlen, -EINVAL,
				"%s plugin '%s' lacks %s()",
				tsr_plugin_kind_name(d->kind), d->name,
				d->create == NULL ? "create" : "destroy");
	int rc = check_ops(d, err, errlen);
	if (rc < 0)
		return rc;
	if (tsr_opt_schema_check(d->options, why, sizeof(why)) < 0)
		return tsr_errf(err, errlen, -EINVAL,
				"%s plugin '%s': bad option schema: %s",
				tsr_plugin_kind_name(d->kind), d->name, why);
	return 0;
}

/* ---- The registry ---------------------------------------------------------*/

struct tsr_plugin {
	const struct tsr_plugin_desc *desc;
	char *path;     /* NULL for built-ins */
	void *dl;       /* dlopen handle, NULL for built-ins */
};

struct tsr_registry {
	struct tsr_plugin **plugins;
	size_t n;
};

struct tsr_registry *
tsr_registry_create(void)
{
	return calloc(1, sizeof(struct tsr_registry));
}

void
tsr_registry_destroy(struct tsr_registry *reg)
{
	if (reg == NULL)
		return;
	for (size_t i = 0; i < reg->n; i++) {
		if (reg->plugins[i]->dl)
			dlclose(reg->plugins[i]->dl);
		free(reg->plugins[i]->path);
		free(reg->plugins[i]);
	}
	free(reg->plugins);
	free(reg);
}

const struct tsr_plugin *
tsr_registry_find(const struct tsr_registry *reg, uint32_t kind,
		  const char *name)
{
	for (size_t i = 0; i < reg->n; i++)
		if (reg->plugins[i]->desc->kind == kind &&
		    strcmp(reg->plugins[i]->desc->name, name) == 0)
			return reg->plugins[i];
	return NULL;
}

size_t
tsr_registry_count(const struct tsr_registry *reg)
{
	return reg->n;
}

const struct tsr_plugin *
tsr_registry_at(const struct tsr_registry *reg, size_t i)
{
	return i < reg->n ? reg->plugins[i] : NULL;
}

const struct tsr_plugin_desc *
tsr_plugin_desc(const struct tsr_plugin *p)
{
	return p->desc;
}

const char *
tsr_plugin_path(const struct tsr_plugin *p)
{
	return p->path ? p->path : "(built-in)";
}

/* Check desc and add it; on success the registry owns dl and path. */
static int
add(struct tsr_registry *reg, const struct tsr_plugin_desc *desc, void *dl,
    const char *path, const struct tsr_plugin **out, char *err, size_t errlen)
{
	const struct tsr_plugin *dup;
	struct tsr_plugin *p, **np;
	int rc;

	rc = tsr_plugin_desc_check(desc, err, errlen);
	if (rc < 0)
		return rc;
	dup = tsr_registry_find(reg, desc->kind, desc->name);
	if (dup != NULL)
		return tsr_errf(err, errlen, -EEXIST,
				"duplicate plugin: %s plugin '%s' is already provided by %s",
				tsr_plugin_kind_name(desc->kind), desc->name,
				tsr_plugin_path(dup));
	p = calloc(1, sizeof(*p));
	np = realloc(reg->plugins, (reg->n + 1) * sizeof(*np));
	if (p == NULL || np == NULL) {
		free(p);
		if (np)
			reg->plugins = np;
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	reg->plugins = np;
	p->desc = desc;
	p->dl = dl;
	p->path = path ? strdup(path) : NULL;
	if (path && p->path == NULL) {
		free(p);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	reg->plugins[reg->n++] = p;
	if (out)
		*out = p;
	return 0;
}

int
tsr_registry_add_builtin(struct tsr_registry *reg,
			 const struct tsr_plugin_desc *desc, char *err,
			 size_t errlen)
{
	return add(reg, desc, NULL, NULL, NULL, err, errlen);
}

int
tsr_registry_load_file(struct tsr_registry *reg, const char *path,
		       const struct tsr_plugin **out, char *err, size_t errlen)
{
	const struct tsr_plugin_desc *desc;
	char why[768], dlpath[4096];
	void *dl;
	int rc;

	/* A file cut short would map and then kill us with SIGBUS when
	 * touched: check its headers against its size first (elfcheck.h). */
	rc = tsr_elf_check_file(path, why, sizeof(why));
	if (rc < 0)
		return tsr_errf(err, errlen, rc == -ENOMEM ? rc : -ENOEXEC,
				"%s: cannot load: %s", path, why);
	/* dlopen searches the library path for a name without a '/': load
	 * the very file that was checked */
	if (snprintf(dlpath, sizeof(dlpath), "%s%s", strchr(path, '/') ? "" : "./",
		     path) >= (int)sizeof(dlpath))
		return tsr_errf(err, errlen, -ENAMETOOLONG,
				"%s: cannot load: the path is too long", path);
	/* RTLD_NOW: an unresolved symbol is found here, with a message, not
	 * later as a crash inside a daemon.  RTLD_LOCAL: plugins cannot see
	 * each other's symbols, so two plugins may use the same names. */
	dl = dlopen(dlpath, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL) {
		const char *e = dlerror();
		return tsr_errf(err, errlen, -ENOEXEC, "%s: cannot load: %s",
				path, e ? e : "unknown dlopen error");
	}
	dlerror();
	desc = dlsym(dl, TSR_PLUGIN_SYMBOL);
	if (desc == NULL) {
		dlclose(dl);
		return tsr_errf(err, errlen, -ENOEXEC,
				"%s: not a Tessera plugin: it exports no '%s' descriptor symbol",
				path, TSR_PLUGIN_SYMBOL);
	}
	rc = add(reg, desc, dl, path, out, why, sizeof(why));
	if (rc < 0) {
		/* a duplicate of an already loaded file shares its handle:
		 * dlclose only drops our reference */
		dlclose(dl);
		return tsr_errf(err, errlen, rc, "%s: %s", path, why);
	}
	/* An accepted plugin stays mapped until the process exits, even
	 * after its registry is destroyed (RTLD_NODELETE on the loaded
	 * object): the libraries it brought may keep threads and static
	 * state that cannot be unloaded — LevelDB's default environment
	 * starts a compaction thread that lives as long as the process. */
	void *again = dlopen(dlpath, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD | RTLD_NODELETE);
	if (again != NULL)
		dlclose(again); /* drops the reference just taken, not the mapping */
	return 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
tsr_registry_load_dir(struct tsr_registry *reg, const char *dir,
		      void (*refused)(void *arg, const char *path,
				      const char *reason),
		      void *arg, char *err, size_t errlen)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int loaded = 0;
	DIR *d = opendir(dir);

	if (d == NULL)
		return tsr_errf(err, errlen, -errno,
				"plugin directory %s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 3, ".so") != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (nn == NULL)
				break;
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	/* name order: which of two duplicates wins does not depend on the
	 * file system's directory order */
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char path[4096], why[1024];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		free(names[i]);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (tsr_registry_load_file(reg, path, NULL, why, sizeof(why)) == 0) {
			loaded++;
		} else if (refused) {
			refused(arg, path, why);
		} else {
			tsr_logf(TSR_SUB_PLUGIN, TSR_LOG_WARN, "refused %s", why);
		}
	}
	free(names);
	return loaded;
}

/* ---- Instances ------------------------------------------------------------*/

struct tsr_instance {
	const struct tsr_plugin *plugin;
	struct tsr_optset *opts;
	void *handle;
};

int
tsr_instance_create(const struct tsr_plugin *p, const struct tsr_host *host,
		    const struct tsr_srcval *srcs, size_t nsrc,
		    struct tsr_instance **out, char *err, size_t errlen)
{
	const struct tsr_plugin_desc *d = p->desc;
	struct tsr_instance *inst;
	char what[128], why[768];
	int rc;

	snprintf(what, sizeof(what), "%s plugin '%s'",
		 tsr_plugin_kind_name(d->kind), d->name);
	inst = calloc(1, sizeof(*inst));
	if (inst == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	inst->plugin = p;
	rc = tsr_optset_build(d->options, srcs, nsrc, what, &inst->opts, err,
			      errlen);
	if (rc < 0) {
		free(inst);
		return rc;
	}
	why[0] = '\0';
	rc = d->create(host, tsr_optset_opts(inst->opts), &inst->handle, why,
		       sizeof(why));
	if (rc < 0 || (rc == 0 && inst->handle == NULL)) {
		tsr_optset_destroy(inst->opts);
		free(inst);
		if (rc == 0)
			rc = -EINVAL;
		return tsr_errf(err, errlen, rc, "%s (%s): create failed: %s",
				what, tsr_plugin_path(p),
				why[0] ? why : strerror(-rc));
	}
	*out = inst;
	return 0;
}

void
tsr_instance_destroy(struct tsr_instance *inst)
{
	if (inst == NULL)
		return;
	inst->plugin->desc->destroy(inst->handle);
	tsr_optset_destroy(inst->opts);
	free(inst);
}

void *
tsr_instance_handle(const struct tsr_instance *inst)
{
	return inst->handle;
}

const void *
tsr_instance_ops(const struct tsr_instance *inst)
{
	return inst->plugin->desc->ops;
}

const struct tsr_opts *
tsr_instance_opts(const struct tsr_instance *inst)
{
	return tsr_optset_opts(inst->opts);
}

const struct tsr_plugin *
tsr_instance_plugin(const struct tsr_instance *inst)
{
	return inst->plugin;
}
