/* topo_text.c — the text form of the topology model: the placement-map
 * compiler (one pass, errors naming a line) and decompiler (grammar in topo.h). */
#include "topo_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Weights in text --------------------------------------------------------
 *
 * Integer arithmetic only, so every host prints and parses alike.  Printing
 * rounds to the nearest 1e-5; a decimal step is smaller than a 16.16 step
 * (1/65536 ~ 1.53e-5), so the printed value lies within 0.5e-5 of the exact
 * one, nearer than half a 16.16 step (0.76e-5), and parsing it back rounds
 * to the weight printed.  Parsing takes any number of decimals and rounds
 * to the nearest 16.16 value, halves up. */

#define WEIGHT_TEXT_MAX 24 /* "%u.%05u" of two u32, and the NUL */

static void
weight_format(uint32_t w, char *buf, size_t n)
{
	/* (w & 0xffff) / 65536 in units of 1e-5, rounded; at most 99998, so
	 * the integer part never needs a carry. */
	uint32_t frac = (uint32_t)(((uint64_t)(w & 0xffffu) * 100000u +
				    0x8000u) >> 16);

	snprintf(buf, n, "%u.%05u", (unsigned)(w >> 16), (unsigned)frac);
}

enum weight_parse_result { WEIGHT_OK, WEIGHT_BAD, WEIGHT_NOT_POSITIVE,
			   WEIGHT_TOO_BIG };

static enum weight_parse_result
weight_parse(const char *s, size_t n, uint32_t *w)
{
	uint64_t ip = 0, half_units = 0, v;
	bool neg = false;
	size_t i = 0, start;

	if (i < n && s[i] == '-') {
		neg = true;
		i++;
	}
	start = i;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		if (ip <= 65536)	/* beyond that it is too big anyway */
			ip = ip * 10 + (uint64_t)(s[i] - '0');
	if (i == start)
		return WEIGHT_BAD;
	if (i < n) {
		size_t fstart;

		if (s[i] != '.')
			return WEIGHT_BAD;
		fstart = ++i;
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == fstart || i != n)
			return WEIGHT_BAD;
		/* floor(fraction * 2^17) exactly: long multiplication of the
		 * decimal digits by 2^17, least significant digit first; the
		 * final carry is the integer part.  It stays below 2^17. */
		for (size_t k = n; k > fstart; k--)
			half_units = ((uint64_t)(s[k - 1] - '0') * 131072u +
				      half_units) / 10;
	}
	/* round(fraction * 2^16) = floor((floor(fraction * 2^17) + 1) / 2),
	 * ties up. */
	v = (ip << 16) + ((half_units + 1) >> 1);
	if (neg || v == 0)
		return WEIGHT_NOT_POSITIVE;
	if (v > UINT32_MAX)
		return WEIGHT_TOO_BIG;
	*w = (uint32_t)v;
	return WEIGHT_OK;
}

/* ---- Decompile ------------------------------------------------------------*/

struct strbuf {
	char *buf;
	size_t len, cap;
	int err;
};

static void sb_printf(struct strbuf *b, const char *fmt, ...) TSR_PRINTF(2, 3);

static void
sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err != 0)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->buf != NULL ? b->buf + b->len : NULL, room,
			      fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap != 0 ? b->cap : 4096;
			char *nb;

			while (cap - b->len <= (size_t)n) {
				if (cap > SIZE_MAX / 2) {
					b->err = -ENOMEM;
					return;
				}
				cap *= 2;
			}
			nb = realloc(b->buf, cap);
			if (nb == NULL) {
				b->err = -ENOMEM;
				return;
			}
			b->buf = nb;
			b->cap = cap;
		}
	}
}

static const char *
mode_word(uint32_t mode)
{
	return mode == TSR_RULE_CHOOSELEAF ? "chooseleaf" : "choose";
}

int
topo_decompile(const struct topo *t, char **text, size_t *len)
{
	struct strbuf sb = { NULL, 0, 0, 0 };
	uint32_t nb, *start = NULL, *fill = NULL;
	const char **kids = NULL;
	size_t nkids = 0;
	int rc = -EINVAL;

	if (t == NULL || text == NULL || len == NULL)
		return -EINVAL;
	*text = NULL;
	*len = 0;
	nb = t->nbuckets;

	/* Each bucket's items, devices by id then buckets in canonical order:
	 * one counting pass, then devices and buckets filled in array order. */
	start = calloc((size_t)nb + 1, sizeof(*start));
	fill = calloc((size_t)nb + 1, sizeof(*fill));
	if (start == NULL || fill == NULL)
		goto nomem;
	for (uint32_t i = 0; i < t->ndevices; i++) {
		if (t->devices[i].parent != 0) {
			uint32_t s = topo_slot(t, t->devices[i].parent);

			if (s >= nb)
				goto out;
			start[s + 1]++;
			nkids++;
		}
	}
	for (uint32_t i = 0; i < nb; i++) {
		if (t->buckets[i].parent != 0) {
			uint32_t s = topo_slot(t, t->buckets[i].parent);

			if (s >= nb)
				goto out;
			start[s + 1]++;
			nkids++;
		}
		if (t->buckets[i].type >= t->ntypes)
			goto out;
	}
	for (uint32_t i = 0; i < nb; i++)
		start[i + 1] += start[i];
	memcpy(fill, start, ((size_t)nb + 1) * sizeof(*fill));
	kids = malloc((nkids > 0 ? nkids : 1) * sizeof(*kids));
	if (kids == NULL)
		goto nomem;
	for (uint32_t i = 0; i < t->ndevices; i++)
		if (t->devices[i].parent != 0)
			kids[fill[topo_slot(t, t->devices[i].parent)]++] =
				t->devices[i].name;
	for (uint32_t i = 0; i < nb; i++)
		if (t->buckets[i].parent != 0)
			kids[fill[topo_slot(t, t->buckets[i].parent)]++] =
				t->buckets[i].name;

	sb_printf(&sb, "types {\n");
	for (uint32_t i = 0; i < t->ntypes; i++)
		sb_printf(&sb, "\t%u %s\n", i, t->types[i]);
	sb_printf(&sb, "}\n");
	for (uint32_t i = 0; i < t->ndevices; i++) {
		char w[WEIGHT_TEXT_MAX];

		weight_format(t->devices[i].weight, w, sizeof(w));
		sb_printf(&sb, "device %d %s weight %s\n", t->devices[i].id,
			  t->devices[i].name, w);
	}
	for (uint32_t i = 0; i < nb; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		sb_printf(&sb, "bucket %s {\n\tid %d\n\ttype %s\n", b->name,
			  b->id, t->types[b->type]);
		for (uint32_t k = start[i]; k < start[i + 1]; k++)
			sb_printf(&sb, "\titem %s\n", kids[k]);
		sb_printf(&sb, "}\n");
	}
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];
		uint32_t s = topo_slot(t, r->root);

		if (s >= nb || r->domain_type >= t->ntypes)
			goto out;
		sb_printf(&sb, "rule %s {\n\tid %u\n\ttake %s\n\t%s %s\n}\n",
			  r->name, r->id, t->buckets[s].name,
			  mode_word(r->mode), t->types[r->domain_type]);
	}
	if (sb.err != 0) {
		rc = sb.err;
		goto out;
	}
	*text = sb.buf;
	*len = sb.len;
	sb.buf = NULL;
	rc = 0;
	goto out;
nomem:
	rc = -ENOMEM;
out:
	free(sb.buf);
	free(start);
	free(fill);
	free(kids);
	return rc;
}

/* ---- Compile ----------------------------------------------------------------
 *
 * One pass.  Everything a bucket lists is defined above it, so at a
 * bucket's closing brace its whole subtree is known: its weight and the
 * types under it are computed there, and every error is found where its
 * line is at hand. */

struct tok {
	const char *p;
	size_t n;       /* 0 at the end of the input */
	size_t line;
};

/* At most this much of a token is quoted in a message. */
#define TOKQ 64
#define TOKF(t) (int)((t)->n < TOKQ ? (t)->n : TOKQ), (t)->p

struct pdev {
	int32_t id;
	uint32_t weight;
	uint32_t parent;        /* bucket index + 1; 0 for none */
	char *name;
};

struct pbkt {
	int32_t id;
	uint32_t type;
	uint32_t parent;        /* bucket index + 1; 0 for none */
	uint32_t below;         /* bit k: a type-k item is under it */
	uint64_t weight;
	size_t line;
	char *name;
};

struct prule {
	uint32_t id;
	uint32_t root;          /* bucket index */
	uint32_t domain;
	uint32_t mode;
	char *name;
};

/* Name -> item: ref >= 0 is a device index, ref < 0 bucket index -1 - ref.
 * A text map is written by an administrator, so a plain hash is enough
 * here; decode (hostile input) sorts instead. */
struct hslot {
	const char *name;       /* NULL: empty; borrowed from the item */
	size_t len;
	int64_t ref;
};

struct parser {
	const char *s, *end;
	size_t line;            /* line of s */
	size_t last;            /* line of the last token read */
	char *err;
	size_t errlen;

	bool have_types;
	uint32_t ntypes;
	char *types[TOPO_MAX_TYPES];

	struct pdev *dev;
	uint32_t ndev, capdev;
	struct pbkt *bkt;
	uint32_t nbkt, capbkt;
	struct prule *rule;
	uint32_t nrule, caprule;

	struct hslot *ht;
	size_t htcap, htn;
	uint8_t *dev_ids;       /* bitmaps of ids taken, by id and -1 - id, */
	uint8_t *bkt_ids;       /* grown to the largest seen */
	size_t ndev_ids, nbkt_ids;
	uint8_t rule_ids[TOPO_MAX_RULES / 8];
};

static int perr(struct parser *p, size_t line, const char *fmt, ...)
	TSR_PRINTF(3, 4);

/* "line N: <reason>"; always -EINVAL. */
static int
perr(struct parser *p, size_t line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err == NULL || p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "line %zu: ", line);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		verrf(p->err + n, p->errlen - (size_t)n, -EINVAL, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int
pnomem(struct parser *p)
{
	return errf(p->err, p->errlen, -ENOMEM, "out of memory");
}

static bool
bit_test(const uint8_t *m, size_t n, uint32_t i)
{
	return i / 8 < n && ((m[i / 8] >> (i % 8)) & 1u);
}

/* Set bit i, growing the map (doubling, zero-filled) to hold it. */
static int
bit_set(uint8_t **m, size_t *n, uint32_t i)
{
	if (i / 8 >= *n) {
		size_t want = *n != 0 ? *n : 64;
		uint8_t *nm;

		while (want <= i / 8)
			want *= 2;
		nm = realloc(*m, want);
		if (nm == NULL)
			return -ENOMEM;
		memset(nm + *n, 0, want - *n);
		*m = nm;
		*n = want;
	}
	(*m)[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* Grow *arr (of elements of size el) to hold one more than n. */
static int
grow(void **arr, uint32_t *cap, uint32_t n, size_t el)
{
	uint32_t c;
	void *na;

	if (n < *cap)
		return 0;
	c = *cap != 0 ? *cap * 2 : 16;
	na = realloc(*arr, (size_t)c * el);
	if (na == NULL)
		return -ENOMEM;
	*arr = na;
	*cap = c;
	return 0;
}

static uint64_t
hash_name(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct hslot *
ht_find(const struct parser *p, const char *s, size_t n)
{
	size_t i;

	if (p->htcap == 0)
		return NULL;
	for (i = hash_name(s, n) & (p->htcap - 1); p->ht[i].name != NULL;
	     i = (i + 1) & (p->htcap - 1))
		if (p->ht[i].len == n && memcmp(p->ht[i].name, s, n) == 0)
			return &p->ht[i];
	return NULL;
}

static int
ht_add(struct parser *p, const char *s, size_t n, int64_t ref)
{
	size_t i;

	if ((p->htn + 1) * 2 > p->htcap) {
		size_t cap = p->htcap != 0 ? p->htcap * 2 : 64;
		struct hslot *old = p->ht, *nt = calloc(cap, sizeof(*nt));

		if (nt == NULL)
			return -ENOMEM;
		for (size_t k = 0; k < p->htcap; k++) {
			if (old[k].name == NULL)
				continue;
			for (i = hash_name(old[k].name, old[k].len) & (cap - 1);
			     nt[i].name != NULL; i = (i + 1) & (cap - 1))
				;
			nt[i] = old[k];
		}
		free(old);
		p->ht = nt;
		p->htcap = cap;
	}
	for (i = hash_name(s, n) & (p->htcap - 1); p->ht[i].name != NULL;
	     i = (i + 1) & (p->htcap - 1))
		;
	p->ht[i] = (struct hslot){ s, n, ref };
	p->htn++;
	return 0;
}

/* The next token: a word of name characters, '{' or '}', or n == 0 at the
 * end.  Anything else is an error: so every token quoted in a message is
 * printable ASCII. */
static int
lex(struct parser *p, struct tok *t)
{
	unsigned char c;

	while (p->s < p->end) {
		c = (unsigned char)*p->s;
		if (c == '\n') {
			p->line++;
			p->s++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
			   c == '\v') {
			p->s++;
		} else if (c == '#') {
			while (p->s < p->end && *p->s != '\n')
				p->s++;
		} else {
			break;
		}
	}
	t->p = p->s;
	t->n = 0;
	t->line = p->line;
	if (p->s == p->end)
		return 0;
	c = (unsigned char)*p->s;
	if (c == '{' || c == '}') {
		p->s++;
	} else if (topo_name_char(c)) {
		while (p->s < p->end && topo_name_char((unsigned char)*p->s))
			p->s++;
	} else if (c > ' ' && c < 0x7f) {
		return perr(p, p->line, "unexpected character '%c'", c);
	} else {
		return perr(p, p->line, "unexpected byte 0x%02x", c);
	}
	t->n = (size_t)(p->s - t->p);
	p->last = t->line;
	return 0;
}

static bool
tok_is(const struct tok *t, const char *word)
{
	size_t n = strlen(word);

	return t->n == n && memcmp(t->p, word, n) == 0;
}

static bool
tok_brace(const struct tok *t)
{
	return t->n == 1 && (t->p[0] == '{' || t->p[0] == '}');
}

/* The next token must be a word; what names it for the error. */
static int
want_word(struct parser *p, struct tok *t, const char *what)
{
	int rc = lex(p, t);

	if (rc != 0)
		return rc;
	if (t->n == 0)
		return perr(p, p->last, "unexpected end of input (expected %s)",
			    what);
	if (tok_brace(t))
		return perr(p, t->line, "expected %s, got '%c'", what,
			    t->p[0]);
	return 0;
}

static int
want_open(struct parser *p)
{
	struct tok t;
	int rc = lex(p, &t);

	if (rc != 0)
		return rc;
	if (t.n == 0)
		return perr(p, p->last, "unexpected end of input "
			    "(expected '{')");
	if (!tok_is(&t, "{"))
		return perr(p, t.line, "expected '{', got '%.*s'", TOKF(&t));
	return 0;
}

/* A word used as a name: its characters are name characters already. */
static int
want_name(struct parser *p, struct tok *t, const char *what)
{
	int rc = want_word(p, t, what);

	if (rc != 0)
		return rc;
	if (t->n > TOPO_NAME_MAX)
		return perr(p, t->line, "name '%.*s...' is longer than %u "
			    "characters", TOKF(t), TOPO_NAME_MAX);
	return 0;
}

/* A decimal integer with an optional '-'.  Magnitudes beyond 10^12 are
 * clamped: they are outside every range anyway. */
static bool
tok_int(const struct tok *t, int64_t *v)
{
	size_t i = 0;
	int64_t x = 0;
	bool neg = false;

	if (t->n > 0 && t->p[0] == '-') {
		neg = true;
		i++;
	}
	if (i == t->n)
		return false;
	for (; i < t->n; i++) {
		if (t->p[i] < '0' || t->p[i] > '9')
			return false;
		if (x < 1000000000000LL)
			x = x * 10 + (t->p[i] - '0');
	}
	*v = neg ? -x : x;
	return true;
}

static int
find_type(const struct parser *p, const struct tok *t)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (tok_is(t, p->types[i]))
			return (int)i;
	return -1;
}

static int
parse_types(struct parser *p, const struct tok *kw)
{
	bool seen[TOPO_MAX_TYPES] = { false };
	uint32_t n = 0;
	struct tok t, name;
	int64_t v;
	int rc;

	if (p->have_types)
		return perr(p, kw->line, "duplicate types block");
	if ((rc = want_open(p)) != 0)
		return rc;
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last,
				    "unexpected end of input in types");
		if (tok_is(&t, "}"))
			break;
		if (!tok_int(&t, &v))
			return perr(p, t.line, "bad type number '%.*s'",
				    TOKF(&t));
		if (v < 0 || v >= TOPO_MAX_TYPES)
			return perr(p, t.line, "type number %lld out of range "
				    "(0..%u)", (long long)v,
				    TOPO_MAX_TYPES - 1);
		if (seen[v])
			return perr(p, t.line, "duplicate type number %lld",
				    (long long)v);
		if ((rc = want_name(p, &name, "a type name")) != 0)
			return rc;
		for (uint32_t i = 0; i < TOPO_MAX_TYPES; i++)
			if (p->types[i] != NULL && tok_is(&name, p->types[i]))
				return perr(p, name.line,
					    "duplicate type name '%.*s'",
					    TOKF(&name));
		p->types[v] = topo_strndup(name.p, name.n);
		if (p->types[v] == NULL)
			return pnomem(p);
		seen[v] = true;
		if ((uint32_t)v + 1 > n)
			n = (uint32_t)v + 1;
	}
	/* types[] is indexed by number, so the numbers leave no gaps. */
	if (n == 0)
		return perr(p, t.line, "type 0 (the device type) is missing");
	for (uint32_t i = 0; i < n; i++)
		if (!seen[i])
			return perr(p, t.line, "type %u is missing (types are "
				    "numbered from 0 without gaps)", i);
	p->ntypes = n;
	p->have_types = true;
	return 0;
}

static int
parse_device(struct parser *p)
{
	struct tok t, name;
	struct pdev *d;
	int64_t v;
	uint32_t w = 0;
	int rc;

	if ((rc = want_word(p, &t, "a device id")) != 0)
		return rc;
	if (!tok_int(&t, &v))
		return perr(p, t.line, "bad device id '%.*s'", TOKF(&t));
	if (v < 0 || v >= TOPO_MAX_DEVICES)
		return perr(p, t.line, "device id %lld out of range (0..%u)",
			    (long long)v, TOPO_MAX_DEVICES - 1);
	if (bit_test(p->dev_ids, p->ndev_ids, (uint32_t)v)) {
		for (uint32_t i = 0; i < p->ndev; i++)
			if (p->dev[i].id == v)
				return perr(p, t.line, "duplicate device id "
					    "%lld (device %s)", (long long)v,
					    p->dev[i].name);
	}
	if ((rc = want_name(p, &name, "a device name")) != 0)
		return rc;
	if (ht_find(p, name.p, name.n) != NULL)
		return perr(p, name.line, "duplicate name '%.*s'",
			    TOKF(&name));
	if ((rc = want_word(p, &t, "'weight'")) != 0)
		return rc;
	if (!tok_is(&t, "weight"))
		return perr(p, t.line, "expected 'weight', got '%.*s'",
			    TOKF(&t));
	if ((rc = want_word(p, &t, "a weight")) != 0)
		return rc;
	switch (weight_parse(t.p, t.n, &w)) {
	case WEIGHT_OK:
		break;
	case WEIGHT_BAD:
		return perr(p, t.line, "device %.*s: bad weight '%.*s'",
			    TOKF(&name), TOKF(&t));
	case WEIGHT_NOT_POSITIVE:
		return perr(p, t.line, "device %.*s: weight must be > 0",
			    TOKF(&name));
	case WEIGHT_TOO_BIG:
		return perr(p, t.line, "device %.*s: weight '%.*s' is too "
			    "large (at most 65535.99998)", TOKF(&name),
			    TOKF(&t));
	}
	if (grow((void **)&p->dev, &p->capdev, p->ndev, sizeof(*p->dev)) != 0)
		return pnomem(p);
	if (bit_set(&p->dev_ids, &p->ndev_ids, (uint32_t)v) != 0)
		return pnomem(p);
	d = &p->dev[p->ndev];
	d->name = topo_strndup(name.p, name.n);
	if (d->name == NULL)
		return pnomem(p);
	d->id = (int32_t)v;
	d->weight = w;
	d->parent = 0;
	p->ndev++;
	if (ht_add(p, d->name, name.n, (int64_t)p->ndev - 1) != 0)
		return pnomem(p);
	return 0;
}

/* item NAME inside bucket j. */
static int
bucket_item(struct parser *p, uint32_t j, const struct tok *name)
{
	struct pbkt *b = &p->bkt[j];
	const struct hslot *h = ht_find(p, name->p, name->n);
	uint32_t *parent;

	if (h == NULL)
		return perr(p, name->line, "unknown item '%.*s' in bucket %s",
			    TOKF(name), b->name);
	parent = h->ref >= 0 ? &p->dev[h->ref].parent
			     : &p->bkt[-1 - h->ref].parent;
	if (*parent == j + 1)
		return perr(p, name->line, "bucket %s lists '%.*s' twice",
			    b->name, TOKF(name));
	if (*parent != 0)
		return perr(p, name->line, "item '%.*s' is already in bucket "
			    "%s", TOKF(name), p->bkt[*parent - 1].name);
	*parent = j + 1;
	if (h->ref >= 0) {
		b->weight += p->dev[h->ref].weight;
		b->below |= 1u;
	} else {
		const struct pbkt *c = &p->bkt[-1 - h->ref];

		b->weight += c->weight;
		b->below |= c->below | (1u << c->type);
	}
	return 0;
}

static int
parse_bucket(struct parser *p, const struct tok *kw)
{
	bool has_id = false, has_type = false;
	struct tok name, t;
	struct pbkt *b;
	uint32_t j;
	int64_t v;
	int rc, ty;

	if ((rc = want_name(p, &name, "a bucket name")) != 0)
		return rc;
	if (ht_find(p, name.p, name.n) != NULL)
		return perr(p, name.line, "duplicate name '%.*s'",
			    TOKF(&name));
	if ((rc = want_open(p)) != 0)
		return rc;
	if (grow((void **)&p->bkt, &p->capbkt, p->nbkt, sizeof(*p->bkt)) != 0)
		return pnomem(p);
	j = p->nbkt;
	b = &p->bkt[j];
	memset(b, 0, sizeof(*b));
	b->line = kw->line;
	b->name = topo_strndup(name.p, name.n);
	if (b->name == NULL)
		return pnomem(p);
	p->nbkt++;
	/* b stays valid: no bucket is added until this one is closed. */
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last, "unexpected end of input in "
				    "bucket %s", b->name);
		if (tok_is(&t, "}"))
			break;
		if (tok_is(&t, "id")) {
			if ((rc = want_word(p, &t, "a bucket id")) != 0)
				return rc;
			if (has_id)
				return perr(p, t.line, "bucket %s: id given "
					    "twice", b->name);
			if (!tok_int(&t, &v))
				return perr(p, t.line, "bucket %s: bad id "
					    "'%.*s'", b->name, TOKF(&t));
			if (v >= 0 || v < -(int64_t)TOPO_MAX_BUCKETS)
				return perr(p, t.line, "bucket %s: id %lld out "
					    "of range (-1..-%u)", b->name,
					    (long long)v, TOPO_MAX_BUCKETS);
			if (bit_test(p->bkt_ids, p->nbkt_ids,
				     (uint32_t)(-v - 1))) {
				for (uint32_t i = 0; i < j; i++)
					if (p->bkt[i].id == v)
						return perr(p, t.line,
							    "duplicate bucket "
							    "id %lld (bucket "
							    "%s)",
							    (long long)v,
							    p->bkt[i].name);
			}
			if (bit_set(&p->bkt_ids, &p->nbkt_ids,
				    (uint32_t)(-v - 1)) != 0)
				return pnomem(p);
			b->id = (int32_t)v;
			has_id = true;
		} else if (tok_is(&t, "type")) {
			if ((rc = want_word(p, &t, "a type name")) != 0)
				return rc;
			if (has_type)
				return perr(p, t.line, "bucket %s: type given "
					    "twice", b->name);
			ty = find_type(p, &t);
			if (ty < 0)
				return perr(p, t.line, "unknown type '%.*s' in "
					    "bucket %s", TOKF(&t), b->name);
			if (ty == 0)
				return perr(p, t.line, "bucket %s: type '%s' is "
					    "the device type", b->name,
					    p->types[0]);
			b->type = (uint32_t)ty;
			has_type = true;
		} else if (tok_is(&t, "item")) {
			if ((rc = want_word(p, &t, "an item name")) != 0)
				return rc;
			if ((rc = bucket_item(p, j, &t)) != 0)
				return rc;
		} else {
			return perr(p, t.line, "unexpected '%.*s' in bucket %s",
				    TOKF(&t), b->name);
		}
	}
	if (!has_id)
		return perr(p, b->line, "bucket %s has no id", b->name);
	if (!has_type)
		return perr(p, b->line, "bucket %s has no type", b->name);
	if (b->weight == 0)
		return perr(p, b->line, "bucket %s has no device under it",
			    b->name);
	/* Only now may later buckets list it (and nothing above can). */
	if (ht_add(p, b->name, name.n, -1 - (int64_t)j) != 0)
		return pnomem(p);
	return 0;
}

static int
parse_rule(struct parser *p, const struct tok *kw)
{
	bool has_id = false, has_take = false, has_step = false;
	size_t step_line = 0;
	const struct hslot *h;
	struct tok name, t;
	struct prule *r;
	int64_t v;
	int rc, ty;

	if ((rc = want_name(p, &name, "a rule name")) != 0)
		return rc;
	for (uint32_t i = 0; i < p->nrule; i++)
		if (tok_is(&name, p->rule[i].name))
			return perr(p, name.line, "duplicate rule name '%.*s'",
				    TOKF(&name));
	if ((rc = want_open(p)) != 0)
		return rc;
	if (grow((void **)&p->rule, &p->caprule, p->nrule,
		 sizeof(*p->rule)) != 0)
		return pnomem(p);
	r = &p->rule[p->nrule];
	memset(r, 0, sizeof(*r));
	r->name = topo_strndup(name.p, name.n);
	if (r->name == NULL)
		return pnomem(p);
	p->nrule++;
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last, "unexpected end of input in "
				    "rule %s", r->name);
		if (tok_is(&t, "}"))
			break;
		if (tok_is(&t, "id")) {
			if ((rc = want_word(p, &t, "a rule id")) != 0)
				return rc;
			if (has_id)
				return perr(p, t.line, "rule %s: id given "
					    "twice", r->name);
			if (!tok_int(&t, &v))
				return perr(p, t.line, "rule %s: bad id '%.*s'",
					    r->name, TOKF(&t));
			if (v < 0 || v >= TOPO_MAX_RULES)
				return perr(p, t.line, "rule %s: id %lld out of "
					    "range (0..%u)", r->name,
					    (long long)v, TOPO_MAX_RULES - 1);
			if (bit_test(p->rule_ids, sizeof(p->rule_ids),
				     (uint32_t)v)) {
				for (uint32_t i = 0; i + 1 < p->nrule; i++)
					if (p->rule[i].id == v)
						return perr(p, t.line,
							    "duplicate rule id "
							    "%lld (rule %s)",
							    (long long)v,
							    p->rule[i].name);
			}
			p->rule_ids[v / 8] |= (uint8_t)(1u << (v % 8));
			r->id = (uint32_t)v;
			has_id = true;
		} else if (tok_is(&t, "take")) {
			if ((rc = want_word(p, &t, "a bucket name")) != 0)
				return rc;
			if (has_take)
				return perr(p, t.line, "rule %s: take given "
					    "twice", r->name);
			h = ht_find(p, t.p, t.n);
			if (h == NULL)
				return perr(p, t.line, "rule %s: unknown "
					    "bucket '%.*s'", r->name, TOKF(&t));
			if (h->ref >= 0)
				return perr(p, t.line, "rule %s: '%.*s' is a "
					    "device, not a bucket", r->name,
					    TOKF(&t));
			r->root = (uint32_t)(-1 - h->ref);
			has_take = true;
		} else if (tok_is(&t, "chooseleaf") || tok_is(&t, "choose")) {
			bool leaf = tok_is(&t, "chooseleaf");

			if ((rc = want_word(p, &t, "a type name")) != 0)
				return rc;
			if (has_step)
				return perr(p, t.line, "rule %s: more than one "
					    "choose or chooseleaf step",
					    r->name);
			ty = find_type(p, &t);
			if (ty < 0)
				return perr(p, t.line, "rule %s: unknown type "
					    "'%.*s'", r->name, TOKF(&t));
			if (leaf && ty == 0)
				return perr(p, t.line, "rule %s: chooseleaf "
					    "needs a failure domain type, not "
					    "the device type '%s'", r->name,
					    p->types[0]);
			if (!leaf && ty != 0)
				return perr(p, t.line, "rule %s: choose picks "
					    "devices; its type must be '%s'",
					    r->name, p->types[0]);
			r->mode = leaf ? TSR_RULE_CHOOSELEAF : TSR_RULE_CHOOSE;
			r->domain = (uint32_t)ty;
			step_line = t.line;
			has_step = true;
		} else {
			return perr(p, t.line, "unexpected '%.*s' in rule %s",
				    TOKF(&t), r->name);
		}
	}
	if (!has_id)
		return perr(p, kw->line, "rule %s has no id", r->name);
	if (!has_take)
		return perr(p, kw->line, "rule %s has no take", r->name);
	if (!has_step)
		return perr(p, kw->line, "rule %s has no choose or chooseleaf "
			    "step", r->name);
	if ((p->bkt[r->root].below & (1u << r->domain)) == 0)
		return perr(p, step_line, "rule %s: bucket %s holds no %s",
			    r->name, p->bkt[r->root].name,
			    p->types[r->domain]);
	return 0;
}

static void
parser_free(struct parser *p)
{
	for (uint32_t i = 0; i < TOPO_MAX_TYPES; i++)
		free(p->types[i]);
	for (uint32_t i = 0; i < p->ndev; i++)
		free(p->dev[i].name);
	for (uint32_t i = 0; i < p->nbkt; i++)
		free(p->bkt[i].name);
	for (uint32_t i = 0; i < p->nrule; i++)
		free(p->rule[i].name);
	free(p->dev);
	free(p->bkt);
	free(p->rule);
	free(p->ht);
	free(p->dev_ids);
	free(p->bkt_ids);
}

/* Move the parsed map into a new topo (names change owner). */
static struct topo *
parser_take(struct parser *p)
{
	struct topo *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->types = calloc(p->ntypes, sizeof(*t->types));
	t->devices = calloc(p->ndev > 0 ? p->ndev : 1, sizeof(*t->devices));
	t->buckets = calloc(p->nbkt > 0 ? p->nbkt : 1, sizeof(*t->buckets));
	t->rules = calloc(p->nrule > 0 ? p->nrule : 1, sizeof(*t->rules));
	if (t->types == NULL || t->devices == NULL || t->buckets == NULL ||
	    t->rules == NULL) {
		topo_free(t);
		return NULL;
	}
	t->ntypes = p->ntypes;
	for (uint32_t i = 0; i < p->ntypes; i++) {
		t->types[i] = p->types[i];
		p->types[i] = NULL;
	}
	t->ndevices = p->ndev;
	for (uint32_t i = 0; i < p->ndev; i++) {
		const struct pdev *d = &p->dev[i];

		t->devices[i] = (struct topo_device){
			d->id, d->name, d->weight,
			d->parent != 0 ? p->bkt[d->parent - 1].id : 0
		};
	}
	t->nbuckets = p->nbkt;
	for (uint32_t i = 0; i < p->nbkt; i++) {
		const struct pbkt *b = &p->bkt[i];

		t->buckets[i] = (struct topo_bucket){
			b->id, b->type, b->name,
			b->parent != 0 ? p->bkt[b->parent - 1].id : 0, 0
		};
	}
	t->nrules = p->nrule;
	for (uint32_t i = 0; i < p->nrule; i++) {
		const struct prule *r = &p->rule[i];

		t->rules[i] = (struct topo_rule){
			r->id, r->name, p->bkt[r->root].id, r->domain, r->mode
		};
	}
	/* The topo owns the names now. */
	p->ndev = p->nbkt = p->nrule = 0;
	return t;
}

int
topo_compile(const char *text, size_t len, struct topo **out, char *err,
	     size_t errlen)
{
	struct parser p;
	struct topo *t = NULL;
	struct tok kw;
	int rc = 0;

	if (out == NULL)
		return errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	if (text == NULL && len > 0)
		return errf(err, errlen, -EINVAL, "no text");
	memset(&p, 0, sizeof(p));
	p.s = text != NULL ? text : "";
	p.end = p.s + len;
	p.line = p.last = 1;
	p.err = err;
	p.errlen = errlen;
	for (;;) {
		if ((rc = lex(&p, &kw)) != 0)
			goto out;
		if (kw.n == 0)
			break;
		if (tok_is(&kw, "types"))
			rc = parse_types(&p, &kw);
		else if (tok_is(&kw, "device"))
			rc = parse_device(&p);
		else if (tok_is(&kw, "bucket"))
			rc = parse_bucket(&p, &kw);
		else if (tok_is(&kw, "rule"))
			rc = parse_rule(&p, &kw);
		else
			rc = perr(&p, kw.line, "unexpected '%.*s'", TOKF(&kw));
		if (rc != 0)
			goto out;
	}
	if (!p.have_types) {
		rc = perr(&p, p.last, "no types block");
		goto out;
	}
	t = parser_take(&p);
	if (t == NULL) {
		rc = pnomem(&p);
		goto out;
	}
	{
		/* Everything was checked above with its line; a failure here
		 * is a bug in this file, reported against the last line. */
		char why[256];

		rc = topo_finish(t, true, why, sizeof(why));
		if (rc != 0) {
			errf(err, errlen, rc, "line %zu: %s", p.last, why);
			topo_free(t);
			t = NULL;
			goto out;
		}
	}
	*out = t;
out:
	parser_free(&p);
	return rc;
}
