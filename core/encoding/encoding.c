/* encoding.c — little-endian, bounds-checked encoder and decoder with
 * versioned envelopes (see tessera/encoding.h for the wire layout). */
#include <tessera/encoding.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Doubles travel as their IEEE-754 bit pattern in a u64. */
_Static_assert(sizeof(double) == sizeof(uint64_t), "double must be 64-bit");

/* version u8 + compat u8 + length u32 */
#define ENVELOPE_HDR 6
#define ENC_MIN_CAP 64

/* ---- Encoder ------------------------------------------------------------*/

void
tsr_enc_init(struct tsr_enc *e)
{
	e->buf = NULL;
	e->len = 0;
	e->cap = 0;
	e->err = 0;
}

void
tsr_enc_release(struct tsr_enc *e)
{
	free(e->buf);
	tsr_enc_init(e);
}

uint8_t *
tsr_enc_take(struct tsr_enc *e, size_t *len)
{
	uint8_t *buf = e->buf;
	size_t n = e->len;

	if (e->err != 0) {
		/* A failed encoding is incomplete; never hand it out.  The
		 * error stays so a caller checking afterwards still sees it. */
		int err = e->err;

		tsr_enc_release(e);
		e->err = err;
		buf = NULL;
		n = 0;
	} else {
		tsr_enc_init(e);
	}
	if (len != NULL)
		*len = n;
	return buf;
}

int
tsr_enc_error(const struct tsr_enc *e)
{
	return e->err;
}

static void
enc_fail(struct tsr_enc *e, int err)
{
	if (e->err == 0)
		e->err = err;
}

/* Make room for n more bytes; false (and the encoder failed) if not. */
static bool
enc_reserve(struct tsr_enc *e, size_t n)
{
	size_t need, cap;
	uint8_t *nb;

	if (e->err != 0)
		return false;
	if (n > SIZE_MAX - e->len) {
		enc_fail(e, -ENOMEM);
		return false;
	}
	need = e->len + n;
	if (need <= e->cap)
		return true;
	/* Doubling keeps appends amortised O(1); once doubling would wrap,
	 * ask for exactly what is needed. */
	cap = e->cap != 0 ? e->cap : ENC_MIN_CAP;
	while (cap < need)
		cap = cap <= SIZE_MAX / 2 ? cap * 2 : need;
	nb = realloc(e->buf, cap);
	if (nb == NULL) {
		enc_fail(e, -ENOMEM);
		return false;
	}
	e->buf = nb;
	e->cap = cap;
	return true;
}

static void
enc_le(struct tsr_enc *e, uint64_t v, size_t width)
{
	if (!enc_reserve(e, width))
		return;
	for (size_t i = 0; i < width; i++)
		e->buf[e->len + i] = (uint8_t)(v >> (8 * i));
	e->len += width;
}

void
tsr_enc_u8(struct tsr_enc *e, uint8_t v)
{
	enc_le(e, v, 1);
}

void
tsr_enc_u16(struct tsr_enc *e, uint16_t v)
{
	enc_le(e, v, 2);
}

void
tsr_enc_u32(struct tsr_enc *e, uint32_t v)
{
	enc_le(e, v, 4);
}

void
tsr_enc_u64(struct tsr_enc *e, uint64_t v)
{
	enc_le(e, v, 8);
}

void
tsr_enc_i32(struct tsr_enc *e, int32_t v)
{
	/* Conversion to unsigned is defined as two's complement. */
	enc_le(e, (uint32_t)v, 4);
}

void
tsr_enc_i64(struct tsr_enc *e, int64_t v)
{
	enc_le(e, (uint64_t)v, 8);
}

void
tsr_enc_double(struct tsr_enc *e, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	enc_le(e, bits, 8);
}

void
tsr_enc_raw(struct tsr_enc *e, const void *p, size_t n)
{
	if (n == 0 || !enc_reserve(e, n))
		return;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

void
tsr_enc_bytes(struct tsr_enc *e, const void *p, size_t n)
{
#if SIZE_MAX > UINT32_MAX
	/* Checked before p is touched: the prefix could not describe it. */
	if (n > UINT32_MAX) {
		enc_fail(e, -EOVERFLOW);
		return;
	}
#endif
	tsr_enc_u32(e, (uint32_t)n);
	tsr_enc_raw(e, p, n);
}

void
tsr_enc_str(struct tsr_enc *e, const char *s)
{
	if (s == NULL)
		s = "";
	tsr_enc_bytes(e, s, strlen(s));
}

size_t
tsr_enc_begin_struct(struct tsr_enc *e, uint8_t version, uint8_t compat)
{
	size_t mark = e->len;

	tsr_enc_u8(e, version);
	tsr_enc_u8(e, compat);
	/* Placeholder; tsr_enc_end_struct knows the body length. */
	tsr_enc_u32(e, 0);
	return mark;
}

void
tsr_enc_end_struct(struct tsr_enc *e, size_t mark)
{
	size_t body;

	if (e->err != 0)
		return;
	/* A mark that tsr_enc_begin_struct did not return is a caller bug;
	 * fail rather than write outside the envelope. */
	if (mark > e->len || e->len - mark < ENVELOPE_HDR) {
		enc_fail(e, -EINVAL);
		return;
	}
	body = e->len - mark - ENVELOPE_HDR;
#if SIZE_MAX > UINT32_MAX
	if (body > UINT32_MAX) {
		enc_fail(e, -EOVERFLOW);
		return;
	}
#endif
	for (size_t i = 0; i < 4; i++)
		e->buf[mark + 2 + i] = (uint8_t)(body >> (8 * i));
}

/* ---- Decoder ------------------------------------------------------------*/

void
tsr_dec_init(struct tsr_dec *d, const void *buf, size_t len)
{
	d->err = 0;
	if (buf == NULL) {
		/* Avoid NULL + len; a NULL buffer with bytes in it is bogus. */
		d->p = d->end = NULL;
		if (len != 0)
			d->err = -EBADMSG;
		return;
	}
	d->p = buf;
	d->end = d->p + len;
}

int
tsr_dec_error(const struct tsr_dec *d)
{
	return d->err;
}

size_t
tsr_dec_remaining(const struct tsr_dec *d)
{
	/* A failed decoder has nothing left to read, so loops driven by
	 * the remaining length stop. */
	if (d->err != 0 || d->p == d->end)
		return 0;
	return (size_t)(d->end - d->p);
}

void
tsr_dec_fail(struct tsr_dec *d, int err)
{
	/* err must read as a failure; anything else is a caller slip. */
	if (err >= 0)
		err = -EBADMSG;
	if (d->err == 0)
		d->err = err;
}

/* Claim n bytes: a pointer to them, or NULL with the decoder failed. */
static const uint8_t *
dec_take(struct tsr_dec *d, size_t n)
{
	const uint8_t *p;

	if (d->err != 0)
		return NULL;
	if (n > tsr_dec_remaining(d)) {
		d->err = -EBADMSG;
		return NULL;
	}
	p = d->p;
	d->p += n;
	return p;
}

static uint64_t
dec_le(struct tsr_dec *d, size_t width)
{
	const uint8_t *p = dec_take(d, width);
	uint64_t v = 0;

	if (p == NULL)
		return 0;
	for (size_t i = 0; i < width; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

uint8_t
tsr_dec_u8(struct tsr_dec *d)
{
	return (uint8_t)dec_le(d, 1);
}

uint16_t
tsr_dec_u16(struct tsr_dec *d)
{
	return (uint16_t)dec_le(d, 2);
}

uint32_t
tsr_dec_u32(struct tsr_dec *d)
{
	return (uint32_t)dec_le(d, 4);
}

uint64_t
tsr_dec_u64(struct tsr_dec *d)
{
	return dec_le(d, 8);
}

/* Unsigned-to-signed conversion of out-of-range values is implementation
 * defined, so rebuild negative values arithmetically. */
int32_t
tsr_dec_i32(struct tsr_dec *d)
{
	uint32_t u = tsr_dec_u32(d);

	if (u <= INT32_MAX)
		return (int32_t)u;
	return -(int32_t)(UINT32_MAX - u) - 1;
}

int64_t
tsr_dec_i64(struct tsr_dec *d)
{
	uint64_t u = tsr_dec_u64(d);

	if (u <= INT64_MAX)
		return (int64_t)u;
	return -(int64_t)(UINT64_MAX - u) - 1;
}

double
tsr_dec_double(struct tsr_dec *d)
{
	uint64_t bits = tsr_dec_u64(d);
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

void
tsr_dec_raw(struct tsr_dec *d, void *out, size_t n)
{
	const uint8_t *p;

	if (n == 0)
		return;
	p = dec_take(d, n);
	if (p == NULL)
		memset(out, 0, n);
	else
		memcpy(out, p, n);
}

void
tsr_dec_bytes(struct tsr_dec *d, const void **p, size_t *n, size_t max)
{
	uint32_t len = tsr_dec_u32(d);
	const uint8_t *b = NULL;

	*p = NULL;
	*n = 0;
	if (d->err != 0)
		return;
	if (len > max) {
		d->err = -EBADMSG;
		return;
	}
	b = dec_take(d, len);
	if (b == NULL)
		return;
	*p = b;
	*n = len;
}

void
tsr_dec_str(struct tsr_dec *d, char *out, size_t outlen)
{
	uint32_t len = tsr_dec_u32(d);
	const uint8_t *b;

	if (d->err != 0)
		goto fail;
	/* Room for the NUL too. */
	if (len >= outlen) {
		d->err = -EBADMSG;
		goto fail;
	}
	b = dec_take(d, len);
	if (b == NULL)
		goto fail;
	/* An embedded NUL would silently truncate the name a C caller sees. */
	if (len > 0 && memchr(b, '\0', len) != NULL) {
		d->err = -EBADMSG;
		goto fail;
	}
	if (len > 0)
		memcpy(out, b, len);
	out[len] = '\0';
	return;
fail:
	if (outlen > 0)
		memset(out, 0, outlen);
}

int
tsr_dec_begin_struct(struct tsr_dec *d, uint8_t supported, uint8_t *version,
		     struct tsr_dec *sub)
{
	uint8_t ver = tsr_dec_u8(d);
	uint8_t compat = tsr_dec_u8(d);
	uint32_t len = tsr_dec_u32(d);
	const uint8_t *body;

	*version = 0;
	/* Until the envelope checks out, sub is empty and carries the
	 * failure, so reads from it fail too. */
	sub->p = sub->end = NULL;
	sub->err = 0;
	if (d->err == 0) {
		if (compat > ver)
			d->err = -EBADMSG;	/* writer claims a layout it lacks */
		else if (len > tsr_dec_remaining(d))
			d->err = -EBADMSG;
		else if (compat > supported)
			d->err = -EOPNOTSUPP;
	}
	/* Consume the whole envelope now: whatever the caller reads from sub,
	 * d lands exactly on what follows, skipping fields from newer writers. */
	body = dec_take(d, len);
	if (body == NULL) {
		sub->err = d->err;
		return d->err;
	}
	sub->p = body;
	sub->end = body + len;
	*version = ver;
	return 0;
}

int
tsr_dec_end_struct(struct tsr_dec *d, struct tsr_dec *sub)
{
	if (sub->err != 0)
		tsr_dec_fail(d, sub->err);
	return d->err;
}
