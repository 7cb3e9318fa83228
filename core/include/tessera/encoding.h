/* tessera/encoding.h — versioned, little-endian, bounds-checked encoding.
 *
 * Everything that crosses a socket or lands on disk is encoded with these
 * helpers.  Integers are little-endian and fixed width; byte strings are a
 * u32 length followed by the bytes.  A structure that may evolve is wrapped
 * in a versioned envelope:
 *
 *     +---------+---------+-----------------+---------------------+
 *     | version | compat  | length (u32 LE) | body (length bytes) |
 *     |   u8    |   u8    |                 |                     |
 *     +---------+---------+-----------------+---------------------+
 *
 *   version  the layout the writer used;
 *   compat   the oldest layout a reader must understand to decode the
 *            body (new fields are only ever appended, so compat stays put
 *            until a field is removed or changes meaning);
 *   length   the body's size, so an old reader skips fields it does not
 *            know and lands exactly on whatever follows the envelope.
 *
 * Encoding (struct tsr_enc) appends to a growable heap buffer.  Failure is
 * sticky: after the first error (-ENOMEM when allocation fails, -EOVERFLOW
 * for a length that does not fit its u32 field, -EINVAL for a bad struct
 * mark) every later put is a no-op and tsr_enc_error() reports it; the
 * caller checks once at the end.  tsr_enc_take() on a failed encoder frees
 * the buffer and returns NULL.
 *
 * Decoding (struct tsr_dec) reads from a borrowed buffer and never reads
 * past its end.  Errors are sticky as well: the first short or malformed
 * read sets dec->err (-EBADMSG, or -EOPNOTSUPP for a compat version newer
 * than the reader, or whatever the caller passed to tsr_dec_fail), every
 * later read fails without touching memory and yields zeros, remaining()
 * becomes 0, and tsr_dec_error() reports the first failure.  An envelope
 * whose compat exceeds its own version is malformed (-EBADMSG).  So a decoder
 * may read a whole structure and check once, and a hostile buffer can cost
 * at most its own length in work.
 */
#ifndef TESSERA_ENCODING_H
#define TESSERA_ENCODING_H

#include <tessera/common.h>

TSR_BEGIN_DECLS

/* ---- Encoder ------------------------------------------------------------*/

struct tsr_enc {
	uint8_t *buf;   /* heap, owned by the encoder until tsr_enc_take() */
	size_t len;     /* bytes written */
	size_t cap;
	int err;        /* 0 or the first error, sticky */
};

/* Start empty; no allocation until the first put. */
TSR_API void tsr_enc_init(struct tsr_enc *e);
/* Free the buffer (if not taken). */
TSR_API void tsr_enc_release(struct tsr_enc *e);
/* Hand the buffer to the caller (free() it); the encoder is left empty. */
TSR_API uint8_t *tsr_enc_take(struct tsr_enc *e, size_t *len);
TSR_API int tsr_enc_error(const struct tsr_enc *e);

TSR_API void tsr_enc_u8(struct tsr_enc *e, uint8_t v);
TSR_API void tsr_enc_u16(struct tsr_enc *e, uint16_t v);
TSR_API void tsr_enc_u32(struct tsr_enc *e, uint32_t v);
TSR_API void tsr_enc_u64(struct tsr_enc *e, uint64_t v);
TSR_API void tsr_enc_i32(struct tsr_enc *e, int32_t v);
TSR_API void tsr_enc_i64(struct tsr_enc *e, int64_t v);
TSR_API void tsr_enc_double(struct tsr_enc *e, double v);
/* Raw bytes, no length prefix. */
TSR_API void tsr_enc_raw(struct tsr_enc *e, const void *p, size_t n);
/* u32 length + bytes (n must fit in u32, else the encoder fails -EOVERFLOW). */
TSR_API void tsr_enc_bytes(struct tsr_enc *e, const void *p, size_t n);
/* A C string as u32 length + bytes (no NUL); NULL encodes as "". */
TSR_API void tsr_enc_str(struct tsr_enc *e, const char *s);

/* Open a versioned envelope; returns the offset to pass to
 * tsr_enc_end_struct, which fills in the length. */
TSR_API size_t tsr_enc_begin_struct(struct tsr_enc *e, uint8_t version,
				    uint8_t compat);
TSR_API void tsr_enc_end_struct(struct tsr_enc *e, size_t mark);

/* ---- Decoder ------------------------------------------------------------*/

struct tsr_dec {
	const uint8_t *p;    /* next byte */
	const uint8_t *end;  /* one past the last readable byte */
	int err;             /* 0 or the first error, sticky */
};

TSR_API void tsr_dec_init(struct tsr_dec *d, const void *buf, size_t len);
TSR_API int tsr_dec_error(const struct tsr_dec *d);
TSR_API size_t tsr_dec_remaining(const struct tsr_dec *d);
/* Fail the decoder with err (e.g. a value out of range found by the
 * caller); keeps the first error. */
TSR_API void tsr_dec_fail(struct tsr_dec *d, int err);

TSR_API uint8_t tsr_dec_u8(struct tsr_dec *d);
TSR_API uint16_t tsr_dec_u16(struct tsr_dec *d);
TSR_API uint32_t tsr_dec_u32(struct tsr_dec *d);
TSR_API uint64_t tsr_dec_u64(struct tsr_dec *d);
TSR_API int32_t tsr_dec_i32(struct tsr_dec *d);
TSR_API int64_t tsr_dec_i64(struct tsr_dec *d);
TSR_API double tsr_dec_double(struct tsr_dec *d);
/* Copy n raw bytes into out (zero-filled on failure). */
TSR_API void tsr_dec_raw(struct tsr_dec *d, void *out, size_t n);
/* A length-prefixed byte string, borrowed from the input buffer: *p points
 * into it (NULL on failure) and *n gets its length.  Fails if the prefix
 * exceeds max or the remaining input. */
TSR_API void tsr_dec_bytes(struct tsr_dec *d, const void **p, size_t *n,
			   size_t max);
/* A length-prefixed string copied into out[outlen] with a NUL; fails if it
 * does not fit, or holds a NUL byte. */
TSR_API void tsr_dec_str(struct tsr_dec *d, char *out, size_t outlen);

/* Open a versioned envelope written by tsr_enc_begin_struct.  supported is
 * the newest version this reader knows; a compat above it fails with
 * -EOPNOTSUPP.  On success *version gets the writer's version (the caller
 * decodes the fields that version has) and *sub is a decoder limited to the
 * body; d is already past the whole envelope.  On failure *version is 0
 * and *sub is empty and failed.  Returns 0 or the decoder's error. */
TSR_API int tsr_dec_begin_struct(struct tsr_dec *d, uint8_t supported,
				 uint8_t *version, struct tsr_dec *sub);
/* Close the envelope: any unread tail of sub (fields from a newer writer)
 * is skipped, and an error in sub becomes d's error. */
TSR_API int tsr_dec_end_struct(struct tsr_dec *d, struct tsr_dec *sub);

TSR_END_DECLS

#endif
