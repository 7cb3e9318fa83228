/* wbuf.c — one file's writes held back (wbuf.h). */
#include "wbuf.h"

#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void
wb_init(struct wbuf *wb, int64_t pool, uint64_t ino)
{
	memset(wb, 0, sizeof(*wb));
	wb->pool = pool;
	wb->ino = ino;
}

static void
free_exts(struct wb_ext *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].data);
	free(v);
}

static int
free_obj(void *arg, uint64_t key, void *val)
{
	struct wb_obj *o = val;

	(void)arg;
	(void)key;
	free_exts(o->dirty, o->ndirty);
	free_exts(o->sending, o->nsending);
	free(o);
	return 0;
}

void
wb_free(struct wbuf *wb)
{
	tsr_u64map_each(&wb->objs, free_obj, NULL);
	tsr_u64map_free(&wb->objs);
	memset(&wb->objs, 0, sizeof(wb->objs));
	wb->bytes = wb->dirty_bytes = 0;
}

/* The first range of v[0..n) that ends at or past off (n: none). */
static size_t
first_reaching(const struct wb_ext *v, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].off + v[mid].len < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t
wb_put(struct wbuf *wb, uint64_t objno, uint64_t off, const void *data, size_t len,
       uint64_t now)
{
	struct wb_obj *o = tsr_u64map_get(&wb->objs, objno + 1);
	uint64_t end = off + len, grew;
	size_t i, j;

	if (len == 0)
		return 0;
	if (o == NULL) {
		o = tsr_xcalloc(1, sizeof(*o));
		o->objno = objno;
		if (tsr_u64map_put(&wb->objs, objno + 1, o) < 0)
			abort();
	}
	if (wb->dirty_bytes == 0)
		wb->dirty_since = now ? now : 1;
	if (o->ndirty == 0)
		o->dirty_gen = wb->gen + 1;
	wb->gen++;
	/* [i, j): the ranges that overlap or touch [off, end) */
	i = first_reaching(o->dirty, o->ndirty, off);
	for (j = i; j < o->ndirty && o->dirty[j].off <= end; j++)
		;
	if (i == j) { /* apart from every other: a range of its own */
		if (o->ndirty == o->capdirty) {
			o->capdirty = o->capdirty ? o->capdirty * 2 : 8;
			o->dirty = tsr_xrealloc(o->dirty, o->capdirty * sizeof(*o->dirty));
		}
		memmove(o->dirty + i + 1, o->dirty + i, (o->ndirty - i) * sizeof(*o->dirty));
		o->dirty[i] = (struct wb_ext){ .off = off, .len = len, .cap = len,
					       .data = tsr_xrealloc(NULL, len) };
		memcpy(o->dirty[i].data, data, len);
		o->ndirty++;
		grew = len;
	} else if (j == i + 1 && o->dirty[i].off <= off) {
		/* within or past the end of one range: grown in place */
		struct wb_ext *e = &o->dirty[i];
		uint64_t old_end = e->off + e->len, new_end = end > old_end ? end : old_end;
		if (new_end - e->off > e->cap) {
			size_t cap = e->cap * 2;
			if (cap < new_end - e->off)
				cap = (size_t)(new_end - e->off);
			e->data = tsr_xrealloc(e->data, cap);
			e->cap = cap;
		}
		memcpy(e->data + (off - e->off), data, len);
		e->len = (size_t)(new_end - e->off);
		grew = new_end - old_end;
	} else { /* several, or one that starts after off: one new range */
		uint64_t start = off < o->dirty[i].off ? off : o->dirty[i].off;
		uint64_t last = o->dirty[j - 1].off + o->dirty[j - 1].len;
		uint64_t stop = end > last ? end : last, had = 0;
		uint8_t *buf = tsr_xrealloc(NULL, (size_t)(stop - start));
		for (size_t k = i; k < j; k++) {
			memcpy(buf + (o->dirty[k].off - start), o->dirty[k].data, o->dirty[k].len);
			had += o->dirty[k].len;
			free(o->dirty[k].data);
		}
		memcpy(buf + (off - start), data, len);
		o->dirty[i] = (struct wb_ext){ .off = start, .len = (size_t)(stop - start),
					       .cap = (size_t)(stop - start), .data = buf };
		memmove(o->dirty + i + 1, o->dirty + j, (o->ndirty - j) * sizeof(*o->dirty));
		o->ndirty -= j - i - 1;
		grew = (stop - start) - had;
	}
	wb->bytes += grew;
	wb->dirty_bytes += grew;
	return grew;
}

/* 1 when some range of v[0..n) meets [off, end). */
static int
meets(const struct wb_ext *v, size_t n, uint64_t off, uint64_t end)
{
	size_t k = first_reaching(v, n, off + 1);

	return k < n && v[k].off < end;
}

int
wb_get(const struct wbuf *wb, uint64_t objno, uint64_t off, size_t len, void *out)
{
	const struct wb_obj *o = tsr_u64map_get(&wb->objs, objno + 1);
	uint64_t end = off + len;
	size_t k;

	if (o == NULL || len == 0)
		return WB_NONE;
	k = first_reaching(o->dirty, o->ndirty, off + 1);
	if (k < o->ndirty && o->dirty[k].off <= off &&
	    o->dirty[k].off + o->dirty[k].len >= end) {
		memcpy(out, o->dirty[k].data + (off - o->dirty[k].off), len);
		return WB_COVERED;
	}
	if (meets(o->dirty, o->ndirty, off, end) || meets(o->sending, o->nsending, off, end))
		return WB_PARTIAL;
	return WB_NONE;
}

struct ready_ctx {
	uint64_t *out;
	size_t max, n;
};

static int
ready_one(void *arg, uint64_t key, void *val)
{
	struct ready_ctx *x = arg;
	const struct wb_obj *o = val;

	(void)key;
	if (o->ndirty && o->inflight == 0)
		x->out[x->n++] = o->objno;
	return x->n == x->max;
}

size_t
wb_ready(const struct wbuf *wb, uint64_t only, uint64_t *out, size_t max)
{
	struct ready_ctx x = { .out = out, .max = max };

	if (max == 0)
		return 0;
	if (only) {
		const struct wb_obj *o = tsr_u64map_get(&wb->objs, only);
		if (o && o->ndirty && o->inflight == 0)
			out[x.n++] = o->objno;
		return x.n;
	}
	tsr_u64map_each(&wb->objs, ready_one, &x);
	return x.n;
}

struct wb_obj *
wb_take(struct wbuf *wb, uint64_t objno)
{
	struct wb_obj *o = tsr_u64map_get(&wb->objs, objno + 1);
	uint64_t n = 0;

	if (o == NULL || o->ndirty == 0 || o->inflight || o->nsending)
		return NULL;
	for (size_t i = 0; i < o->ndirty; i++)
		n += o->dirty[i].len;
	o->sending = o->dirty;
	o->nsending = o->ndirty;
	o->sending_gen = o->dirty_gen;
	o->dirty = NULL;
	o->ndirty = o->capdirty = 0;
	wb->dirty_bytes -= n;
	if (wb->dirty_bytes == 0)
		wb->dirty_since = 0;
	return o;
}

uint64_t
wb_sent(struct wbuf *wb, struct wb_obj *o, int result)
{
	uint64_t n = 0;

	if (result < 0) {
		wb->err = result;
		wb->err_seq++;
	}
	if (o->inflight == 0 || --o->inflight > 0)
		return 0;
	for (size_t i = 0; i < o->nsending; i++)
		n += o->sending[i].len;
	free_exts(o->sending, o->nsending);
	o->sending = NULL;
	o->nsending = 0;
	wb->bytes -= n;
	if (o->ndirty == 0) {
		tsr_u64map_del(&wb->objs, o->objno + 1);
		free(o);
	}
	return n;
}

struct flight_ctx {
	int any;
};

static int
flight_one(void *arg, uint64_t key, void *val)
{
	const struct wb_obj *o = val;

	(void)key;
	((struct flight_ctx *)arg)->any = o->inflight > 0;
	return o->inflight > 0;
}

int
wb_in_flight(const struct wbuf *wb, uint64_t only)
{
	struct flight_ctx x = { 0 };

	if (only) {
		const struct wb_obj *o = tsr_u64map_get(&wb->objs, only);
		return o && o->inflight > 0;
	}
	tsr_u64map_each(&wb->objs, flight_one, &x);
	return x.any;
}

struct pending_ctx {
	uint64_t upto;
	int any;
};

static int
obj_pending(const struct wb_obj *o, uint64_t upto)
{
	return (o->ndirty && o->dirty_gen <= upto) || (o->nsending && o->sending_gen <= upto);
}

static int
pending_one(void *arg, uint64_t key, void *val)
{
	struct pending_ctx *x = arg;

	(void)key;
	x->any = obj_pending(val, x->upto);
	return x->any;
}

int
wb_pending(const struct wbuf *wb, uint64_t only, uint64_t upto)
{
	struct pending_ctx x = { .upto = upto };

	if (only) {
		const struct wb_obj *o = tsr_u64map_get(&wb->objs, only);
		return o && obj_pending(o, upto);
	}
	tsr_u64map_each(&wb->objs, pending_one, &x);
	return x.any;
}
