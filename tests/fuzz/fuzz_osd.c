/* fuzz_osd.c — libFuzzer target for the decoders of what OSDs send each
 * other about placement groups (core/osd/pgsm.h, pgmsg.c; pglog.h), and
 * of a client's operation on an object and its reply (objop.h): every
 * input is a PG message as it would arrive, a push's payload (an
 * object's whole state, pgpush.h), an operation and a reply (as their
 * checks take them: a u32 little-endian front length, the front, the
 * data).  Whatever decodes must encode again and decode to the same
 * (tsr_pgmsg_check, tsr_pgpush_check, tsr_objop_check,
 * tsr_objop_reply_check: -EPROTO is a bug); nothing may read out of
 * bounds, leak or trip UBSan; a refusal always says why.
 *
 * Built with clang -fsanitize=fuzzer,address,undefined when configure
 * finds it (tests/local.mk); tests/fuzz/run.sh runs it briefly on the
 * seed corpus in tests/fuzz/corpus/osd (messages the simulation sent:
 * tests/sim/pgsim --dump-corpus; push-0, a payload; op-0 and op-reply-0,
 * an operation of several sub-operations and a reply; pg-repair-0,
 * pg-scrub-* and pg-scrub-map-0, made by hand as the OSD fills them: the
 * simulation does not scrub).
 */
#include "osd/objop.h"
#include "osd/pgpush.h"
#include "osd/pgsm.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	int rc = tsr_pgmsg_check(data, size, err, sizeof(err));

	if (rc == -EPROTO)
		abort();        /* decodes, but does not round-trip */
	if (rc == -EBADMSG && err[0] == '\0')
		abort();        /* a refusal without a reason */
	err[0] = '\0';
	rc = tsr_pgpush_check(data, size, err, sizeof(err));
	if (rc == -EPROTO)
		abort();
	if (rc == -EBADMSG && err[0] == '\0')
		abort();
	err[0] = '\0';
	rc = tsr_objop_check(data, size, err, sizeof(err));
	if (rc == -EPROTO)
		abort();
	if (rc == -EBADMSG && err[0] == '\0')
		abort();
	err[0] = '\0';
	rc = tsr_objop_reply_check(data, size, err, sizeof(err));
	if (rc == -EPROTO)
		abort();
	if (rc == -EBADMSG && err[0] == '\0')
		abort();
	return 0;
}
