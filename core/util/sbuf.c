/* sbuf.c — growable string buffer and JSON string escaping. */
#include "util/sbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
tsr_sbuf_init(struct tsr_sbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void
tsr_sbuf_release(struct tsr_sbuf *sb)
{
	free(sb->buf);
	tsr_sbuf_init(sb);
}

void
tsr_sbuf_reset(struct tsr_sbuf *sb)
{
	sb->len = 0;
	sb->err = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

const char *
tsr_sbuf_str(const struct tsr_sbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

int
tsr_sbuf_error(const struct tsr_sbuf *sb)
{
	return sb->err;
}

static bool
reserve(struct tsr_sbuf *sb, size_t n)
{
	if (sb->err)
		return false;
	if (n > SIZE_MAX - sb->len - 1) {
		sb->err = -ENOMEM;
		return false;
	}
	if (sb->len + n + 1 <= sb->cap)
		return true;
	size_t cap = sb->cap ? sb->cap : 256;
	while (cap < sb->len + n + 1)
		cap = cap > SIZE_MAX / 2 ? sb->len + n + 1 : cap * 2;
	char *b = realloc(sb->buf, cap);
	if (b == NULL) {
		sb->err = -ENOMEM;
		return false;
	}
	sb->buf = b;
	sb->cap = cap;
	return true;
}

void
tsr_sbuf_add(struct tsr_sbuf *sb, const void *p, size_t n)
{
	if (!reserve(sb, n))
		return;
	memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void
tsr_sbuf_printf(struct tsr_sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void
tsr_sbuf_json_str(struct tsr_sbuf *sb, const char *s)
{
	tsr_sbuf_add(sb, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': tsr_sbuf_add(sb, "\\\"", 2); break;
		case '\\': tsr_sbuf_add(sb, "\\\\", 2); break;
		case '\n': tsr_sbuf_add(sb, "\\n", 2); break;
		case '\r': tsr_sbuf_add(sb, "\\r", 2); break;
		case '\t': tsr_sbuf_add(sb, "\\t", 2); break;
		default:
			if (*p < 0x20)
				tsr_sbuf_printf(sb, "\\u%04x", *p);
			else
				tsr_sbuf_add(sb, p, 1);
		}
	}
	tsr_sbuf_add(sb, "\"", 1);
}
