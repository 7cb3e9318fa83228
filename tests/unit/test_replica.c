/* test_replica.c — the `replica` redundancy plugin (plugins/
 * redundancy-replica), loaded as the monitors and OSDs load it: its
 * option schema, and its operations against the contract of
 * tessera/redundancy.h (whole copies, any one reads or rebuilds). */
#include "plugin/host.h"
#include "plugin/registry.h"

#include <tessera/redundancy.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];
static struct tsr_registry *reg;
static const struct tsr_plugin *plug;
static struct tsr_core_host host;

static void
setup(void)
{
	const char *dir = getenv("PLUGIN_DIR");
	char path[512];

	ck_assert_msg(dir != NULL, "PLUGIN_DIR is not set");
	snprintf(path, sizeof(path), "%s/replica.so", dir);
	reg = tsr_registry_create();
	ck_assert_msg(tsr_registry_load_file(reg, path, &plug, err, sizeof(err)) == 0,
		      "%s", err);
	tsr_core_host_init(&host, "test/redundancy", NULL, NULL);
}

static void
teardown(void)
{
	tsr_registry_destroy(reg);
}

static struct tsr_instance *
make(const char *copies)
{
	struct tsr_srcval v = { .name = "copies", .kind = TSR_SRC_TEXT, .s = copies,
				.where = "test" };
	struct tsr_instance *inst = NULL;

	ck_assert_msg(tsr_instance_create(plug, &host.host, copies ? &v : NULL,
					  copies ? 1 : 0, &inst, err, sizeof(err)) == 0,
		      "%s", err);
	return inst;
}

START_TEST(schema)
{
	struct tsr_srcval v = { .name = "copies", .kind = TSR_SRC_TEXT, .s = "17",
				.where = "test" };
	struct tsr_instance *inst = NULL;
	struct tsr_redundancy_info info = { .size = sizeof(info) };

	ck_assert_uint_eq(tsr_plugin_desc(plug)->kind, TSR_KIND_REDUNDANCY);
	ck_assert_str_eq(tsr_plugin_desc(plug)->name, "replica");
	/* three copies unless told */
	inst = make(NULL);
	((const struct tsr_redundancy_ops *)tsr_instance_ops(inst))->info(
		tsr_instance_handle(inst), &info);
	ck_assert_uint_eq(info.nshards, 3);
	ck_assert_uint_eq(info.ndata, 1);
	ck_assert_uint_eq(info.stripe_unit, 0);
	ck_assert_uint_eq(info.flags, TSR_REDUNDANCY_SHARES_INPUT);
	tsr_instance_destroy(inst);
	/* a pool has at most 16 copies, and no options but this one */
	ck_assert_int_eq(tsr_instance_create(plug, &host.host, &v, 1, &inst, err,
					     sizeof(err)), -ERANGE);
	ck_assert_msg(strstr(err, "17 is out of range [1, 16]"), "%s", err);
	v.name = "k";
	v.s = "2";
	ck_assert_int_eq(tsr_instance_create(plug, &host.host, &v, 1, &inst, err,
					     sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "unknown option 'k' (known options: copies)"), "%s", err);
}
END_TEST

/* Regression: encode, decode and repair took no error buffer (redundancy
 * ABI before version 2), so a refused call said nothing of which copy or
 * buffer was wrong.  Each refusal now names it, and err may be NULL. */
START_TEST(errors_name_the_copy)
{
	struct tsr_instance *inst = make("3");
	const struct tsr_redundancy_ops *ops = tsr_instance_ops(inst);
	void *h = tsr_instance_handle(inst);
	char b[3][64], out[64];
	struct tsr_shard_buf sh[3];

	memset(b, 'x', sizeof(b));
	for (int i = 0; i < 3; i++)
		sh[i] = (struct tsr_shard_buf){ b[i], sizeof(b[i]) };
	ck_assert_uint_eq(ops->abi_version, TSR_REDUNDANCY_ABI_VERSION);

	err[0] = '\0';
	ck_assert_int_eq(ops->decode(h, 0, 1u << 7, sh, out, sizeof(out), err,
				     sizeof(err)), -EIO);
	ck_assert_msg(strstr(err, "no copy to read: none of the shards given "
			     "(0x80) is one of the 3 copies"), "%s", err);
	sh[1].len = 10;
	ck_assert_int_eq(ops->decode(h, 0, 1u << 1, sh, out, sizeof(out), err,
				     sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "cannot read 64 bytes from copy 1: it holds "
			     "10"), "%s", err);
	ck_assert_int_eq(ops->repair(h, 1u << 0, 1u << 1, sh, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "cannot repair copy 1: its buffer holds 10 "
			     "bytes, copy 0 holds 64"), "%s", err);
	ck_assert_int_eq(ops->repair(h, 1u << 0, 1u << 5, sh, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "shard 5 wanted, but there are 3 copies "
			     "(0 to 2)"), "%s", err);
	ck_assert_int_eq(ops->repair(h, 0, 1u << 1, sh, err, sizeof(err)), -EIO);
	ck_assert_msg(strstr(err, "no copy to repair from"), "%s", err);
	sh[0].data = NULL;
	ck_assert_int_eq(ops->repair(h, 1u << 0, 1u << 2, sh, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "cannot repair from copy 0: 64 bytes long but "
			     "no buffer"), "%s", err);
	/* no buffer for the reason: the same answers */
	ck_assert_int_eq(ops->decode(h, 0, 0, sh, out, sizeof(out), NULL, 0),
			 -EIO);
	ck_assert_int_eq(ops->repair(h, 1u << 0, 1u << 2, sh, NULL, 0), -EINVAL);
	tsr_instance_destroy(inst);
}
END_TEST

START_TEST(copies)
{
	struct tsr_instance *inst = make("4");
	const struct tsr_redundancy_ops *ops = tsr_instance_ops(inst);
	void *h = tsr_instance_handle(inst);
	char data[100], out[100], b[4][100];
	struct tsr_shard_buf sh[4];
	tsr_shard_set need;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	ck_assert_uint_eq(ops->shard_size(h, 12345), 12345);
	/* encode: every shard is the input */
	memset(sh, 0, sizeof(sh));
	ck_assert_int_eq(ops->encode(h, 0, data, sizeof(data), sh, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_ptr_eq(sh[i].data, data);
		ck_assert_uint_eq(sh[i].len, sizeof(data));
	}
	/* decode from any one: here shard 2 alone */
	memset(b, 0, sizeof(b));
	memcpy(b[2], data, sizeof(data));
	for (int i = 0; i < 4; i++)
		sh[i] = (struct tsr_shard_buf){ b[i], sizeof(b[i]) };
	ck_assert_int_eq(ops->decode(h, 0, 1u << 2, sh, out, sizeof(out), err,
				     sizeof(err)), 0);
	ck_assert_int_eq(memcmp(out, data, sizeof(data)), 0);
	ck_assert_int_eq(ops->decode(h, 0, 0, sh, out, sizeof(out), err, sizeof(err)),
			 -EIO);
	/* a shard beyond the copies does not count */
	ck_assert_int_eq(ops->decode(h, 0, 1u << 5, sh, out, sizeof(out), err,
				     sizeof(err)), -EIO);
	/* repair 0 and 3 from 2; 1 is left alone */
	ck_assert_int_eq(ops->repair(h, 1u << 2, 1u << 0 | 1u << 3, sh, err,
				     sizeof(err)), 0);
	ck_assert_int_eq(memcmp(b[0], data, sizeof(data)), 0);
	ck_assert_int_eq(memcmp(b[3], data, sizeof(data)), 0);
	ck_assert_int_eq(b[1][1], 0);
	ck_assert_int_eq(ops->repair(h, 0, 1u << 0, sh, err, sizeof(err)), -EIO);
	ck_assert_int_eq(ops->repair(h, 1u << 2, 1u << 4, sh, err, sizeof(err)),
			 -EINVAL);
	/* a buffer too small for a copy is refused, not overrun */
	sh[1].len = 10;
	ck_assert_int_eq(ops->repair(h, 1u << 2, 1u << 1, sh, err, sizeof(err)),
			 -EINVAL);
	/* the lowest available copy is the one to read */
	ck_assert_int_eq(ops->minimum_to_read(h, 1u << 0, 1u << 1 | 1u << 3, &need), 0);
	ck_assert_uint_eq(need, 1u << 1);
	ck_assert_int_eq(ops->minimum_to_read(h, 0, 0, &need), 0);
	ck_assert_uint_eq(need, 0);
	ck_assert_int_eq(ops->minimum_to_read(h, 1u << 0, 0, &need), -EIO);
	ck_assert_int_eq(ops->minimum_to_read(h, 1u << 4, 1u << 0, &need), -EINVAL);
	tsr_instance_destroy(inst);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("replica");
	TCase *tc = tcase_create("replica");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, schema);
	tcase_add_test(tc, copies);
	tcase_add_test(tc, errors_name_the_copy);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
