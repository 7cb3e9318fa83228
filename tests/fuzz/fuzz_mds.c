/* fuzz_mds.c — libFuzzer target for the MDS's decoders: what clients send
 * it (sessions, requests), what it answers (replies), and what it reads
 * back from the metadata pool (journal events, directory entries,
 * inodes).  The first byte picks the decoder (modulo 7: session, request,
 * reply, event, dentry, inode, cap), the rest is its input.  Whatever decodes
 * must encode again to the same bytes (-EPROTO from tsr_mdsmsg_check is a
 * bug); nothing may read out of bounds, leak or trip UBSan; a refusal
 * always says why.
 *
 * Built with clang -fsanitize=fuzzer,address,undefined when configure
 * finds it (tests/local.mk); tests/fuzz/run.sh runs it briefly on the
 * seed corpus in tests/fuzz/corpus/mds (one valid input of each kind,
 * made with the encoders).
 */
#include "mds/fsmeta.h"
#include "mds/mdsmsg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
must_say_why(int rc, const char *err)
{
	if (rc == -EPROTO)
		abort();        /* decodes, but does not round-trip */
	if (rc == -EBADMSG && err[0] == '\0')
		abort();        /* a refusal without a reason */
}

/* Decode, encode, decode, encode: the encodings must agree. */
static void
event_round_trip(const uint8_t *p, size_t n)
{
	struct tsr_fs_event a, b;
	struct tsr_enc e1, e2;
	char err[256] = "";
	int rc = tsr_fs_event_decode(p, n, &a, err, sizeof(err));

	must_say_why(rc, err);
	if (rc < 0)
		return;
	tsr_enc_init(&e1);
	tsr_enc_init(&e2);
	if (tsr_fs_event_encode(&e1, &a) < 0 ||
	    tsr_fs_event_decode(e1.buf, e1.len, &b, err, sizeof(err)) < 0)
		abort();
	if (tsr_fs_event_encode(&e2, &b) < 0 || e1.len != e2.len ||
	    memcmp(e1.buf, e2.buf, e1.len) != 0)
		abort();
	tsr_fs_event_free(&a);
	tsr_fs_event_free(&b);
	tsr_enc_release(&e1);
	tsr_enc_release(&e2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	int rc;

	if (size == 0)
		return 0;
	switch (data[0] % 7) {
	case 0:
		must_say_why(tsr_mdsmsg_check(TSR_MSG_MDS_SESSION, p, n, err, sizeof(err)), err);
		break;
	case 1:
		must_say_why(tsr_mdsmsg_check(TSR_MSG_MDS_REQUEST, p, n, err, sizeof(err)), err);
		break;
	case 2:
		must_say_why(tsr_mdsmsg_check(TSR_MSG_MDS_REPLY, p, n, err, sizeof(err)), err);
		break;
	case 3:
		event_round_trip(p, n);
		break;
	case 4: {
		struct tsr_dentry de;
		rc = tsr_dentry_decode(p, n, &de, err, sizeof(err));
		must_say_why(rc, err);
		if (rc == 0)
			tsr_dentry_free(&de);
		break;
	}
	case 5: {
		struct tsr_inode in;
		rc = tsr_inode_decode(p, n, &in, err, sizeof(err));
		must_say_why(rc, err);
		if (rc == 0) {
			char *names;
			size_t len;
			if (tsr_inode_xattr_list(&in, &names, &len) == 0)
				free(names);
			tsr_inode_free(&in);
		}
		break;
	}
	case 6:
		must_say_why(tsr_mdsmsg_check(TSR_MSG_MDS_CAP, p, n, err, sizeof(err)), err);
		break;
	}
	return 0;
}
