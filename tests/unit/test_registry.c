/* test_registry.c — the plugin loader: every refusal reason, duplicates,
 * directory scans, built-ins, option validation before create, two
 * independent instances of one plugin in one process, and truncated or
 * foreign shared objects refused before dlopen could crash on them. */
#include "plugin/host.h"
#include "plugin/registry.h"
#include "log/log.h"

#include <tessera/partitioner.h>
#include <tessera/redundancy.h>

#include <check.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#ifndef TEST_PLUGIN_DIR
#error TEST_PLUGIN_DIR must name the directory of the built test plugins
#endif

static char err[2048];

/* A scratch directory made by main(); tests put their files here and
 * remove them, and main() removes whatever a failed test left. */
static char scratch[64];

static const char *
plugin_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s.so", TEST_PLUGIN_DIR, name);
	return path;
}

/* Load name.so into a fresh registry and return the rc; err holds the
 * reason. */
static int
load_one(const char *name)
{
	struct tsr_registry *reg = tsr_registry_create();
	int rc;

	err[0] = '\0';
	rc = tsr_registry_load_file(reg, plugin_path(name), NULL, err, sizeof(err));
	tsr_registry_destroy(reg);
	return rc;
}

/* Load path into a fresh registry and return the rc; err holds the
 * reason. */
static int
load_path(const char *path)
{
	struct tsr_registry *reg = tsr_registry_create();
	int rc;

	err[0] = '\0';
	rc = tsr_registry_load_file(reg, path, NULL, err, sizeof(err));
	tsr_registry_destroy(reg);
	return rc;
}

START_TEST(good_plugin_loads)
{
	struct tsr_registry *reg = tsr_registry_create();
	const struct tsr_plugin *p = NULL;

	ck_assert_int_eq(tsr_registry_load_file(reg, plugin_path("good"), &p, err,
						sizeof(err)), 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(tsr_plugin_desc(p)->name, "good");
	ck_assert_uint_eq(tsr_plugin_desc(p)->kind, TSR_KIND_PARTITIONER);
	ck_assert_str_eq(tsr_plugin_path(p), plugin_path("good"));
	ck_assert_ptr_eq(tsr_registry_find(reg, TSR_KIND_PARTITIONER, "good"), p);
	ck_assert_ptr_null(tsr_registry_find(reg, TSR_KIND_BACKEND, "good"));
	ck_assert_ptr_null(tsr_registry_find(reg, TSR_KIND_PARTITIONER, "bad"));
	tsr_registry_destroy(reg);
}
END_TEST

/* Each broken variant is refused, with the file and the precise reason. */
static const struct {
	const char *file;
	int rc;
	const char *reason;
} refusals[] = {
	{ "bad_abi", -EPROTO, "built for plugin ABI 2.1, this core speaks 1.1" },
	{ "newer_minor", -EPROTO, "built for plugin ABI 1.8, newer than this core's 1.1" },
	{ "bad_kind", -EINVAL, "unknown plugin kind 99 (known kinds: backend, placement, redundancy, partitioner, mount)" },
	{ "no_desc", -ENOEXEC, "it exports no 'tessera_plugin' descriptor symbol" },
	{ "bad_opt_type", -EINVAL, "bad option schema: option 'label': unknown type 42" },
	{ "bad_opt_range", -EINVAL, "bad option schema: option 'split_size': default \"5000000\" is invalid: 5000000 is out of range [16, 1000000]" },
	{ "bad_ops", -EINVAL, "mandatory operation 'balance' is NULL" },
	{ "bad_name", -EINVAL, "plugin name \"Bad Name\" is not of the form" },
};

START_TEST(broken_plugin_refused)
{
	int rc = load_one(refusals[_i].file);

	ck_assert_int_eq(rc, refusals[_i].rc);
	ck_assert_contains(err, plugin_path(refusals[_i].file));
	ck_assert_contains(err, refusals[_i].reason);
}
END_TEST

START_TEST(not_a_shared_object)
{
	char path[128];
	int fd;
	struct tsr_registry *reg = tsr_registry_create();

	/* in the scratch directory, which main() removes even when this fails */
	snprintf(path, sizeof(path), "%s/notso-XXXXXX", scratch);
	fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	close(fd);
	ck_assert_int_eq(tsr_registry_load_file(reg, path, NULL, err, sizeof(err)),
			 -ENOEXEC);
	ck_assert_contains(err, path);
	ck_assert_contains(err, "cannot load: not an ELF file (5 bytes, without the ELF magic number)");
	unlink(path);
	ck_assert_int_eq(tsr_registry_load_file(reg, "/nonexistent/x.so", NULL, err,
						sizeof(err)), -ENOEXEC);
	ck_assert_contains(err, "/nonexistent/x.so");
	tsr_registry_destroy(reg);
}
END_TEST

START_TEST(duplicate_name_refused)
{
	struct tsr_registry *reg = tsr_registry_create();

	ck_assert_int_eq(tsr_registry_load_file(reg, plugin_path("good"), NULL, err,
						sizeof(err)), 0);
	ck_assert_int_eq(tsr_registry_load_file(reg, plugin_path("good_twin"), NULL,
						err, sizeof(err)), -EEXIST);
	ck_assert_contains(err, plugin_path("good_twin"));
	ck_assert_contains(err, "duplicate plugin: partitioner plugin 'good' is already provided by");
	ck_assert_contains(err, plugin_path("good"));
	/* the same file twice is a duplicate too, and the first stays usable */
	ck_assert_int_eq(tsr_registry_load_file(reg, plugin_path("good"), NULL, err,
						sizeof(err)), -EEXIST);
	ck_assert_uint_eq(tsr_registry_count(reg), 1);
	ck_assert_ptr_nonnull(tsr_registry_find(reg, TSR_KIND_PARTITIONER, "good"));
	tsr_registry_destroy(reg);
}
END_TEST

struct refused_list {
	int n;
	char names[32][4096];
	char reasons[32][1024];
};

static void
collect(void *arg, const char *path, const char *reason)
{
	struct refused_list *r = arg;

	ck_assert_contains(reason, path);
	if (r->n < 32) {
		snprintf(r->reasons[r->n], sizeof(r->reasons[0]), "%s", reason);
		snprintf(r->names[r->n++], sizeof(r->names[0]), "%s", path);
	}
}

START_TEST(directory_scan)
{
	struct tsr_registry *reg = tsr_registry_create();
	struct refused_list r = { 0 };
	int n;

	n = tsr_registry_load_dir(reg, TEST_PLUGIN_DIR, collect, &r, err,
				  sizeof(err));
	/* good.so loads; good_twin.so sorts after it and is the duplicate;
	 * the eight broken variants are refused */
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(r.n, 9);
	ck_assert_ptr_nonnull(tsr_registry_find(reg, TSR_KIND_PARTITIONER, "good"));
	ck_assert_str_eq(tsr_plugin_path(tsr_registry_at(reg, 0)), plugin_path("good"));
	bool twin = false;
	for (int i = 0; i < r.n; i++)
		twin |= strcmp(r.names[i], plugin_path("good_twin")) == 0;
	ck_assert(twin);
	tsr_registry_destroy(reg);

	reg = tsr_registry_create();
	ck_assert_int_eq(tsr_registry_load_dir(reg, "/nonexistent-dir", NULL, NULL,
					       err, sizeof(err)), -ENOENT);
	ck_assert_contains(err, "/nonexistent-dir");
	tsr_registry_destroy(reg);
}
END_TEST

/* ---- Truncated and foreign files -------------------------------------------
 *
 * A half-copied plugin (a package upgrade, `make install`) used to map and
 * then kill the loading process with SIGBUS; each of these cases crashed
 * the test process before the ELF check (the fork per test reports it as
 * "received signal 7"). */


/* Write the first n bytes of good.so to scratch/name; returns the path. */
static const char *
truncated_copy(const char *name, size_t n, char *path, size_t pathlen)
{
	static char buf[1 << 20];
	FILE *in = fopen(plugin_path("good"), "rb");
	FILE *out;
	size_t got;

	snprintf(path, pathlen, "%s/%s", scratch, name);
	ck_assert_ptr_nonnull(in);
	got = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	ck_assert_uint_gt(got, 0);
	ck_assert_uint_lt(got, sizeof(buf));
	ck_assert_uint_le(n, got);
	out = fopen(path, "wb");
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	ck_assert_int_eq(fclose(out), 0);
	return path;
}

static size_t
good_size(void)
{
	struct stat st;

	ck_assert_int_eq(stat(plugin_path("good"), &st), 0);
	return (size_t)st.st_size;
}

START_TEST(truncated_plugin_refused)
{
	size_t size = good_size();
	size_t cuts[64];
	size_t n = 0;
	char path[4096];

	/* every header boundary region, every 2 KiB, and one byte short */
	static const size_t fixed[] = { 0, 1, 4, 63, 64, 65, 100, 1024, 4096 };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i] < size)
			cuts[n++] = fixed[i];
	for (size_t c = 2048; c < size && n < sizeof(cuts) / sizeof(cuts[0]) - 1; c += 2048)
		cuts[n++] = c;
	cuts[n++] = size - 1;

	for (size_t i = 0; i < n; i++) {
		struct tsr_registry *reg = tsr_registry_create();
		truncated_copy("cut.so", cuts[i], path, sizeof(path));
		err[0] = '\0';
		int rc = tsr_registry_load_file(reg, path, NULL, err, sizeof(err));
		ck_assert_msg(rc == -ENOEXEC, "cut at %zu: rc %d (%s)", cuts[i], rc, err);
		ck_assert_contains(err, path);
		/* the reason says what is wrong, with the file's size */
		if (cuts[i] < 4) {
			ck_assert_contains(err, "not an ELF file");
		} else {
			char has[64];
			snprintf(has, sizeof(has), ", file has %zu", cuts[i]);
			ck_assert_contains(err, "cannot load: truncated: ");
			ck_assert_contains(err, has);
		}
		ck_assert_uint_eq(tsr_registry_count(reg), 0);
		tsr_registry_destroy(reg);
		unlink(path);
	}
	/* and the whole file still loads */
	struct tsr_registry *reg = tsr_registry_create();
	truncated_copy("whole.so", size, path, sizeof(path));
	ck_assert_msg(tsr_registry_load_file(reg, path, NULL, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_registry_destroy(reg);
	unlink(path);
}
END_TEST

/* The reason names the segment that reaches past the end: cut good.so
 * inside its second loadable segment. */
START_TEST(truncated_names_segment)
{
	char path[4096], want[128];
	FILE *f = fopen(plugin_path("good"), "rb");
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph[32];
	int seg = -1, loads = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(&eh, sizeof(eh), 1, f), 1);
	ck_assert_uint_le(eh.e_phnum, 32);
	ck_assert_int_eq(fseek(f, (long)eh.e_phoff, SEEK_SET), 0);
	ck_assert_uint_eq(fread(ph, sizeof(ph[0]), eh.e_phnum, f), eh.e_phnum);
	fclose(f);
	for (int i = 0; i < eh.e_phnum && seg < 0; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset > 0 && ++loads == 1)
			seg = i;
	ck_assert_int_ge(seg, 0);
	size_t cut = (size_t)(ph[seg].p_offset + ph[seg].p_filesz / 2);
	truncated_copy("seg.so", cut, path, sizeof(path));
	ck_assert_int_eq(load_path(path), -ENOEXEC);
	snprintf(want, sizeof(want), "truncated: segment %d ends at byte %llu, file has %zu",
		 seg, (unsigned long long)(ph[seg].p_offset + ph[seg].p_filesz), cut);
	ck_assert_contains(err, want);
	unlink(path);
}
END_TEST

/* A whole ELF file that is not a shared object of this machine. */
#define HALF(field) offsetof(ElfW(Ehdr), field), 2 /* an ElfW(Half), host order */
static const struct {
	size_t off, width; /* what to change in the ELF header */
	uint16_t val;
	const char *reason;
} foreign[] = {
	{ EI_CLASS, 1, __SIZEOF_POINTER__ == 8 ? ELFCLASS32 : ELFCLASS64,
	  "-bit machines, this one is" },
	{ EI_DATA, 1, 3, "built for unknown-endian machines" },
	{ HALF(e_type), ET_REL, "not a shared object: it is an object file" },
	{ HALF(e_type), ET_EXEC, "not a shared object: it is an executable" },
	{ HALF(e_machine), 0xfe, "built for another architecture (ELF machine 254" },
	{ HALF(e_phentsize), 7, "program header entries of 7 bytes" },
};

START_TEST(foreign_elf_refused)
{
	size_t size = good_size();
	char path[4096];
	int fd;

	truncated_copy("foreign.so", size, path, sizeof(path));
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	uint8_t byte = (uint8_t)foreign[_i].val;
	const void *val = foreign[_i].width == 1 ? (const void *)&byte
						  : (const void *)&foreign[_i].val;
	ck_assert_int_eq(pwrite(fd, val, foreign[_i].width, (off_t)foreign[_i].off),
			 (ssize_t)foreign[_i].width);
	close(fd);
	ck_assert_int_eq(load_path(path), -ENOEXEC);
	ck_assert_contains(err, path);
	ck_assert_contains(err, foreign[_i].reason);
	unlink(path);
}
END_TEST

/* Neither a directory nor a FIFO named *.so may block or crash the loader. */
START_TEST(not_a_regular_file_refused)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/fifo.so", scratch);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(load_path(path), -ENOEXEC);
	ck_assert_contains(err, "cannot load: a FIFO, not a shared object file");
	unlink(path);
	snprintf(path, sizeof(path), "%s/dir.so", scratch);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(load_path(path), -ENOEXEC);
	ck_assert_contains(err, "cannot load: a directory, not a shared object file");
	rmdir(path);
}
END_TEST

/* One truncated file beside good ones: the scan loads the good ones and
 * reports the truncated one, as a daemon's start-up scan must. */
START_TEST(directory_scan_with_truncated_file)
{
	struct tsr_registry *reg = tsr_registry_create();
	struct refused_list r = { 0 };
	char a[4096], b[4096], g[4096], h[4096];
	int n;

	/* a half copy sorting before the good one, another after it, and a
	 * text file: the good one loads whichever comes first */
	truncated_copy("a-half.so", 4096, a, sizeof(a));
	truncated_copy("good.so", good_size(), g, sizeof(g));
	truncated_copy("z-half.so", 1024, b, sizeof(b));
	snprintf(h, sizeof(h), "%s/text.so", scratch);
	FILE *f = fopen(h, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not a plugin\n", f);
	fclose(f);

	n = tsr_registry_load_dir(reg, scratch, collect, &r, err, sizeof(err));
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_nonnull(tsr_registry_find(reg, TSR_KIND_PARTITIONER, "good"));
	ck_assert_str_eq(tsr_plugin_path(tsr_registry_at(reg, 0)), g);
	ck_assert_int_eq(r.n, 3);
	ck_assert_str_eq(r.names[0], a);
	ck_assert_contains(r.reasons[0], "cannot load: truncated: ");
	ck_assert_contains(r.reasons[0], ", file has 4096");
	ck_assert_str_eq(r.names[1], h);
	ck_assert_contains(r.reasons[1], "cannot load: not an ELF file");
	ck_assert_str_eq(r.names[2], b);
	ck_assert_contains(r.reasons[2], ", file has 1024");
	tsr_registry_destroy(reg);
	unlink(a);
	unlink(b);
	unlink(g);
	unlink(h);
}
END_TEST

/* ---- Built-ins go through the same checks -------------------------------*/

static int
bi_create(const struct tsr_host *host, const struct tsr_opts *opts,
	  void **instance, char *e, size_t elen)
{
	(void)host;
	(void)opts;
	(void)e;
	(void)elen;
	*instance = (void *)1;
	return 0;
}

static void
bi_destroy(void *instance)
{
	(void)instance;
}

static int
bi_where(void *i, const struct tsr_part_dir *d, uint32_t n, int32_t *rank)
{
	(void)i;
	(void)d;
	(void)n;
	*rank = 0;
	return 0;
}

static int
bi_balance(void *i, const struct tsr_part_load *l, uint32_t n, uint32_t r,
	   tsr_part_move_cb cb, void *arg)
{
	(void)i; (void)l; (void)n; (void)r; (void)cb; (void)arg;
	return 0;
}

static int
bi_fragment(void *i, const struct tsr_part_fragstat *st, int *action)
{
	(void)i;
	(void)st;
	*action = 0;
	return 0;
}

static const struct tsr_partitioner_ops bi_ops = {
	.size = sizeof(struct tsr_partitioner_ops),
	.abi_version = TSR_PARTITIONER_ABI_VERSION,
	.where = bi_where, .balance = bi_balance, .fragment = bi_fragment,
};

START_TEST(builtin_same_registry)
{
	struct tsr_plugin_desc d = {
		.abi_major = TSR_PLUGIN_ABI_MAJOR, .abi_minor = TSR_PLUGIN_ABI_MINOR,
		.desc_size = sizeof(struct tsr_plugin_desc),
		.kind = TSR_KIND_PARTITIONER, .name = "good", .version = "0.1",
		.create = bi_create, .destroy = bi_destroy, .ops = &bi_ops,
	};
	struct tsr_registry *reg = tsr_registry_create();

	ck_assert_int_eq(tsr_registry_add_builtin(reg, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(tsr_plugin_path(tsr_registry_at(reg, 0)), "(built-in)");
	/* a file claiming a built-in's name is a duplicate */
	ck_assert_int_eq(tsr_registry_load_file(reg, plugin_path("good"), NULL, err,
						sizeof(err)), -EEXIST);
	ck_assert_contains(err, "already provided by (built-in)");

	/* and a broken built-in is refused like a broken file */
	struct tsr_plugin_desc bad = d;
	bad.name = "other";
	bad.abi_major = 3;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &bad, err, sizeof(err)), -EPROTO);
	bad.abi_major = TSR_PLUGIN_ABI_MAJOR;
	struct tsr_partitioner_ops small = bi_ops;
	small.size = 8;
	bad.ops = &small;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &bad, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "operations table size 8 is wrong");
	bad.ops = &bi_ops;
	bad.desc_size = 16;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &bad, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "descriptor is 16 bytes");
	bad.desc_size = sizeof(struct tsr_plugin_desc);
	bad.create = NULL;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &bad, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "lacks create()");
	ck_assert_uint_eq(tsr_registry_count(reg), 1);
	tsr_registry_destroy(reg);
}
END_TEST

/* A redundancy plugin built for version 1 of its provisional ABI (encode and
 * decode without an error buffer) would be called with two arguments it
 * does not take.  The regression: the loader checked only the plugin ABI
 * major and the table's size, which did not change, and loaded it.  Every
 * provisional kind states its version; another one is refused, naming
 * both, before any slot of the table is read. */
static int
old_encode(void *i, uint64_t off, const void *d, size_t len,
	   struct tsr_shard_buf *sh)
{
	(void)i; (void)off; (void)d; (void)len; (void)sh;
	return 0;
}

START_TEST(provisional_kind_other_version_refused)
{
	/* an ops table laid out as version 1 was: abi_version not set */
	struct tsr_redundancy_ops red;
	struct tsr_partitioner_ops part = bi_ops;
	struct tsr_plugin_desc d = {
		.abi_major = TSR_PLUGIN_ABI_MAJOR, .abi_minor = TSR_PLUGIN_ABI_MINOR,
		.desc_size = sizeof(struct tsr_plugin_desc),
		.kind = TSR_KIND_REDUNDANCY, .name = "oldred", .version = "0.1",
		.create = bi_create, .destroy = bi_destroy, .ops = &red,
	};
	struct tsr_registry *reg = tsr_registry_create();
	void (*slot)(void) = (void (*)(void))old_encode; /* any non-NULL */

	memset(&red, 0, sizeof(red));
	red.size = sizeof(red);
	/* every mandatory slot set: only the version can refuse it */
	for (size_t off = offsetof(struct tsr_redundancy_ops, info);
	     off + sizeof(slot) <= sizeof(red); off += sizeof(slot))
		memcpy((char *)&red + off, &slot, sizeof(slot));
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &d, err, sizeof(err)),
			 -EPROTO);
	ck_assert_contains(err, "redundancy plugin 'oldred': built for "
			   "redundancy ABI version 0, this core speaks 2 "
			   "(redundancy is a provisional kind");
	red.abi_version = TSR_REDUNDANCY_ABI_VERSION - 1;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &d, err, sizeof(err)),
			 -EPROTO);
	ck_assert_contains(err, "built for redundancy ABI version 1, this core "
			   "speaks 2");
	red.abi_version = TSR_REDUNDANCY_ABI_VERSION;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &d, err, sizeof(err)), 0);

	/* the partitioner kind too */
	d.kind = TSR_KIND_PARTITIONER;
	d.name = "newpart";
	d.ops = &part;
	part.abi_version = TSR_PARTITIONER_ABI_VERSION + 1;
	ck_assert_int_eq(tsr_registry_add_builtin(reg, &d, err, sizeof(err)),
			 -EPROTO);
	ck_assert_contains(err, "partitioner plugin 'newpart': built for "
			   "partitioner ABI version 2, this core speaks 1");
	ck_assert_uint_eq(tsr_registry_count(reg), 1);
	tsr_registry_destroy(reg);
}
END_TEST

/* ---- Instances: options are checked before create ---------------------------*/

static struct tsr_registry *reg_good;
static const struct tsr_plugin *good;
static struct tsr_core_host host;

static void
setup_good(void)
{
	reg_good = tsr_registry_create();
	ck_assert_int_eq(tsr_registry_load_file(reg_good, plugin_path("good"), &good,
						err, sizeof(err)), 0);
	tsr_core_host_init(&host, "test/partitioner", NULL, NULL);
	tsr_log_set_level(-1, TSR_LOG_WARN);
}

static void
teardown_good(void)
{
	tsr_registry_destroy(reg_good);
}

#define SRC_TEXT(n, v) { .name = (n), .kind = TSR_SRC_TEXT, .s = (v), .where = "test:1" }

START_TEST(instance_with_defaults_and_values)
{
	struct tsr_srcval srcs[] = { SRC_TEXT("salt", "42"), SRC_TEXT("spread", "true") };
	struct tsr_instance *inst;
	const struct tsr_opts *o;

	ck_assert_int_eq(tsr_instance_create(good, &host.host, srcs, 2, &inst, err,
					     sizeof(err)), 0);
	o = tsr_instance_opts(inst);
	ck_assert_uint_eq(o->count, 5);
	ck_assert_int_eq(o->vals[0].i, 42);
	ck_assert_uint_eq(o->vals[0].isset, 1);
	ck_assert_int_eq(o->vals[1].i, 1);
	ck_assert_double_eq(o->vals[2].d, 0.25);
	ck_assert_uint_eq(o->vals[2].isset, 0);
	ck_assert_str_eq(o->vals[4].s, "alpha");
	ck_assert_ptr_eq(tsr_instance_plugin(inst), good);

	/* the instance answers through the kind's ops */
	const struct tsr_partitioner_ops *ops = tsr_instance_ops(inst);
	struct tsr_part_dir dir = { .df = { .ino = 1234 }, .pin = 3, .parent_rank = -1 };
	int32_t rank = -1;
	ck_assert_int_eq(ops->where(tsr_instance_handle(inst), &dir, 8, &rank), 0);
	ck_assert_int_eq(rank, 3);
	ck_assert_int_eq(ops->where(tsr_instance_handle(inst), &dir, 0, &rank), -EINVAL);
	struct tsr_part_fragstat st = { .entries = 20000 };
	int action = 0;
	ck_assert_int_eq(ops->fragment(tsr_instance_handle(inst), &st, &action), 0);
	ck_assert_int_eq(action, 1);
	tsr_instance_destroy(inst);
}
END_TEST

static const struct {
	const char *key, *value, *reason;
} bad_values[] = {
	{ "salt", "abc", "option 'salt': expected an integer, got text \"abc\"" },
	{ "salt", "-1", "option 'salt': -1 is out of range [0, 1000000]" },
	{ "salt", "1000001", "option 'salt': 1000001 is out of range [0, 1000000]" },
	{ "threshold", "11", "option 'threshold': 11 is out of range [0, 10]" },
	{ "spread", "maybe", "option 'spread': expected a boolean (true or false), got text \"maybe\"" },
	{ "label", "gamma", "option 'label': \"gamma\" is not one of: alpha, beta" },
	{ "colour", "red", "unknown option 'colour' (known options: salt, spread, threshold, split_size, label)" },
};

/* A host that counts the plugin's "created:" log lines: proof of whether
 * create() ran. */
static int creates;

static void
counting_logv(void *ctx, int level, const char *fmt, va_list ap)
{
	(void)ctx;
	(void)level;
	(void)ap;
	if (strncmp(fmt, "created:", 8) == 0)
		creates++;
}

START_TEST(instance_bad_option_refused)
{
	struct tsr_srcval srcs[] = { SRC_TEXT(bad_values[_i].key, bad_values[_i].value) };
	struct tsr_instance *inst = NULL;
	struct tsr_host counting = host.host;

	counting.logv = counting_logv;
	creates = 0;
	ck_assert_int_lt(tsr_instance_create(good, &counting, srcs, 1, &inst, err,
					     sizeof(err)), 0);
	ck_assert_ptr_null(inst);
	/* the options were refused before the plugin's create() ran */
	ck_assert_int_eq(creates, 0);
	ck_assert_int_eq(tsr_instance_create(good, &counting, NULL, 0, &inst, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(creates, 1);
	tsr_instance_destroy(inst);
	ck_assert_contains(err, "test:1: partitioner plugin 'good': ");
	ck_assert_contains(err, bad_values[_i].reason);
}
END_TEST

START_TEST(typed_source_of_wrong_type)
{
	/* what a config file gives: a quoted string where an int is wanted */
	struct tsr_srcval s = { .name = "salt", .kind = TSR_SRC_STRING, .s = "5",
				.where = "cluster.conf:7" };
	struct tsr_instance *inst = NULL;

	ck_assert_int_eq(tsr_instance_create(good, &host.host, &s, 1, &inst, err,
					     sizeof(err)), -EINVAL);
	ck_assert_contains(err, "cluster.conf:7: partitioner plugin 'good': option 'salt': expected an integer, got a string \"5\"");
}
END_TEST

START_TEST(two_instances_are_independent)
{
	struct tsr_srcval a[] = { SRC_TEXT("salt", "1"), SRC_TEXT("spread", "yes") };
	struct tsr_srcval b[] = { SRC_TEXT("salt", "2"), SRC_TEXT("spread", "yes") };
	struct tsr_instance *i1, *i2;
	int differ = 0;

	ck_assert_int_eq(tsr_instance_create(good, &host.host, a, 2, &i1, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_instance_create(good, &host.host, b, 2, &i2, err, sizeof(err)), 0);
	ck_assert_ptr_ne(tsr_instance_handle(i1), tsr_instance_handle(i2));
	const struct tsr_partitioner_ops *ops = tsr_instance_ops(i1);
	for (uint64_t ino = 1; ino <= 64; ino++) {
		struct tsr_part_dir d = { .df = { .ino = ino }, .pin = -1, .parent_rank = -1 };
		int32_t r1 = -1, r2 = -1, again = -1;
		ck_assert_int_eq(ops->where(tsr_instance_handle(i1), &d, 16, &r1), 0);
		ck_assert_int_eq(ops->where(tsr_instance_handle(i2), &d, 16, &r2), 0);
		ck_assert_int_ge(r1, 0);
		ck_assert_int_lt(r1, 16);
		/* same instance, same answer: deterministic */
		ck_assert_int_eq(ops->where(tsr_instance_handle(i1), &d, 16, &again), 0);
		ck_assert_int_eq(r1, again);
		differ += r1 != r2;
	}
	/* different salts in each instance give different placements */
	ck_assert_int_gt(differ, 16);
	tsr_instance_destroy(i1);
	/* i2 still works after i1 is gone */
	struct tsr_part_dir d = { .df = { .ino = 7 }, .pin = 5, .parent_rank = -1 };
	int32_t r = -1;
	ck_assert_int_eq(ops->where(tsr_instance_handle(i2), &d, 16, &r), 0);
	ck_assert_int_eq(r, 5);
	tsr_instance_destroy(i2);
}
END_TEST

START_TEST(kind_names)
{
	ck_assert_str_eq(tsr_plugin_kind_name(TSR_KIND_BACKEND), "backend");
	ck_assert_str_eq(tsr_plugin_kind_name(TSR_KIND_MOUNT), "mount");
	ck_assert_ptr_null(tsr_plugin_kind_name(0));
	ck_assert_uint_eq(tsr_plugin_kind_parse("placement"), TSR_KIND_PLACEMENT);
	ck_assert_uint_eq(tsr_plugin_kind_parse("redundancy"), TSR_KIND_REDUNDANCY);
	ck_assert_uint_eq(tsr_plugin_kind_parse("partitioner"), TSR_KIND_PARTITIONER);
	ck_assert_uint_eq(tsr_plugin_kind_parse("nonsense"), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("registry");
	TCase *load = tcase_create("load");
	TCase *inst = tcase_create("instances");
	SRunner *sr;
	int failed;

	tcase_add_test(load, good_plugin_loads);
	tcase_add_loop_test(load, broken_plugin_refused, 0,
			    (int)(sizeof(refusals) / sizeof(refusals[0])));
	tcase_add_test(load, not_a_shared_object);
	tcase_add_test(load, duplicate_name_refused);
	tcase_add_test(load, directory_scan);
	tcase_add_test(load, builtin_same_registry);
	tcase_add_test(load, provisional_kind_other_version_refused);
	tcase_add_test(load, kind_names);
	suite_add_tcase(s, load);

	TCase *cut = tcase_create("truncated");
	tcase_add_test(cut, truncated_plugin_refused);
	tcase_add_test(cut, truncated_names_segment);
	tcase_add_loop_test(cut, foreign_elf_refused, 0,
			    (int)(sizeof(foreign) / sizeof(foreign[0])));
	tcase_add_test(cut, not_a_regular_file_refused);
	tcase_add_test(cut, directory_scan_with_truncated_file);
	suite_add_tcase(s, cut);

	tcase_add_checked_fixture(inst, setup_good, teardown_good);
	tcase_add_test(inst, instance_with_defaults_and_values);
	tcase_add_loop_test(inst, instance_bad_option_refused, 0,
			    (int)(sizeof(bad_values) / sizeof(bad_values[0])));
	tcase_add_test(inst, typed_source_of_wrong_type);
	tcase_add_test(inst, two_instances_are_independent);
	suite_add_tcase(s, inst);

	snprintf(scratch, sizeof(scratch), "/tmp/tsr-registry-XXXXXX");
	if (mkdtemp(scratch) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rm_rf(scratch);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
