/* hello.c — the worked example of doc/client.md: store an object with an
 * attribute in one atomic operation, read both back in another, list the
 * pool.  Build: make (it finds the library with pkg-config tessera-client).
 * Run: ./hello POOL   (with TESSERA_CONF naming the cluster's
 * configuration, and client.admin's keyring where it says). */
#include <tessera/client.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int
print_name(void *arg, const void *name, size_t len)
{
	(void)arg;
	printf("  %.*s\n", (int)len, (const char *)name);
	return 0;
}

int
main(int argc, char **argv)
{
	struct tsr_client *c;
	struct tsr_op *op;
	struct tsr_objver ver;
	struct tsr_list_cursor cursor;
	char err[1024], data[64], who[64];
	uint64_t got = 0;
	size_t wlen = 0;
	int64_t pool;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s POOL\n", argv[0]);
		return 2;
	}
	/* the configuration from $TESSERA_CONF, as client.admin */
	if (tsr_client_connect(NULL, NULL, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "connect: %s\n", err);
		return 1;
	}
	if (tsr_client_pool(c, argv[1], &pool) < 0) {
		fprintf(stderr, "%s\n", tsr_client_why());
		tsr_client_shutdown(c);
		return 1;
	}

	/* one operation, applied whole: the data and an attribute */
	op = tsr_op_create();
	tsr_op_write_full(op, "hello, objects\n", 15);
	tsr_op_setxattr(op, "written-by", "hello.c", 7);
	rc = tsr_op_run(c, pool, "greeting", 8, op, &ver);
	if (rc < 0)
		fprintf(stderr, "write: %s\n", tsr_op_why(op));
	tsr_op_destroy(op);
	if (rc < 0)
		goto out;
	printf("wrote greeting, version %llu'%llu\n", (unsigned long long)ver.epoch,
	       (unsigned long long)ver.ver);

	/* only if nobody changed it since: a guard on the version */
	op = tsr_op_create();
	tsr_op_assert_version(op, ver.epoch, ver.ver);
	tsr_op_read(op, 0, sizeof(data), data, &got, NULL);
	tsr_op_getxattr(op, "written-by", who, sizeof(who), &wlen, NULL);
	rc = tsr_op_run(c, pool, "greeting", 8, op, NULL);
	if (rc == -ECANCELED)
		fprintf(stderr, "read: somebody changed it meanwhile\n");
	else if (rc < 0)
		fprintf(stderr, "read: %s\n", tsr_op_why(op));
	tsr_op_destroy(op);
	if (rc < 0)
		goto out;
	printf("read %.*s(written by %.*s)\n", (int)got, data, (int)wlen, who);

	printf("objects of %s:\n", argv[1]);
	memset(&cursor, 0, sizeof(cursor));
	if ((rc = tsr_client_list(c, pool, &cursor, 0, print_name, NULL)) < 0)
		fprintf(stderr, "list: %s\n", tsr_client_why());
out:
	tsr_client_shutdown(c);
	return rc < 0 ? 1 : 0;
}
