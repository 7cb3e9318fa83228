/* sbuf.h — a growable string buffer, with the few JSON helpers the admin
 * socket and the CLI's --format json need.
 *
 * Allocation failure is sticky (like the encoder): later appends are
 * dropped and tsr_sbuf_error() reports -ENOMEM. */
#ifndef TSR_SBUF_H
#define TSR_SBUF_H

#include <tessera/common.h>

struct tsr_sbuf {
	char *buf;   /* NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
	int err;
};

TSR_API void tsr_sbuf_init(struct tsr_sbuf *sb);
TSR_API void tsr_sbuf_release(struct tsr_sbuf *sb);
TSR_API void tsr_sbuf_reset(struct tsr_sbuf *sb);
/* The text so far ("" when empty). */
TSR_API const char *tsr_sbuf_str(const struct tsr_sbuf *sb);
TSR_API int tsr_sbuf_error(const struct tsr_sbuf *sb);
TSR_API void tsr_sbuf_add(struct tsr_sbuf *sb, const void *p, size_t n);
TSR_API void tsr_sbuf_printf(struct tsr_sbuf *sb, const char *fmt, ...)
	TSR_PRINTF(2, 3);
/* s as a JSON string literal, quotes included. */
TSR_API void tsr_sbuf_json_str(struct tsr_sbuf *sb, const char *s);

#endif
