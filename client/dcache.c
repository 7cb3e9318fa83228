/* dcache.c — the file client's cache of names and attributes (dcache.h). */
#include "dcache.h"

#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dc_dent {
	struct dc_dent *hnext;       /* in its hash chain */
	struct dc_dent *dnext, *dprev;  /* in its directory's list */
	struct dc_dir *dir;
	uint64_t hash;
	int absent;
	struct tsr_fs_stat st;       /* present */
	char name[];
};

struct dc_dir {
	uint64_t ino;
	uint64_t seq;                /* the grant */
	int complete;                /* every name it has is here: others are
					absent (we made it, empty) */
	struct dc_dent *ents;
	size_t n;
	struct dc_dir *older, *newer;
};

static uint64_t
hash_of(uint64_t dir, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (dir * 0x9e3779b97f4a7c15ull);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

void
dc_init(struct dc *c)
{
	memset(c, 0, sizeof(*c));
	c->ntab = 1024;
	c->tab = tsr_xcalloc(c->ntab, sizeof(*c->tab));
}

static struct dc_dent **
slot(struct dc *c, uint64_t dir, const char *name, uint64_t h)
{
	struct dc_dent **pp = &c->tab[h & (c->ntab - 1)];

	while (*pp && ((*pp)->hash != h || (*pp)->dir->ino != dir ||
		       strcmp((*pp)->name, name) != 0))
		pp = &(*pp)->hnext;
	return pp;
}

static void
dent_free(struct dc *c, struct dc_dent *e)
{
	struct dc_dent **pp = slot(c, e->dir->ino, e->name, e->hash);
	struct dc_dir *d = e->dir;

	if (*pp == e)
		*pp = e->hnext;
	if (e->dprev)
		e->dprev->dnext = e->dnext;
	else
		d->ents = e->dnext;
	if (e->dnext)
		e->dnext->dprev = e->dprev;
	d->n--;
	c->n--;
	if (!e->absent && tsr_u64map_get(&c->byino, e->st.ino) == e)
		tsr_u64map_del(&c->byino, e->st.ino);
	free(e);
}

static void
dir_drop(struct dc *c, struct dc_dir *d)
{
	while (d->ents)
		dent_free(c, d->ents);
	if (d->older)
		d->older->newer = d->newer;
	else
		c->oldest = d->newer;
	if (d->newer)
		d->newer->older = d->older;
	else
		c->newest = d->older;
	tsr_u64map_del(&c->dirs, d->ino);
	free(d);
}

void
dc_clear(struct dc *c)
{
	while (c->oldest)
		dir_drop(c, c->oldest);
}

void
dc_free(struct dc *c)
{
	dc_clear(c);
	free(c->tab);
	free(c->dropped);
	tsr_u64map_free(&c->dirs);
	tsr_u64map_free(&c->byino);
	memset(c, 0, sizeof(*c));
}

/* Past the bound: the oldest directory goes, and is given back. */
static void
bound(struct dc *c)
{
	while (c->oldest && (c->n > DC_MAX_DENTS || c->dirs.n > DC_MAX_DIRS)) {
		struct dc_dir *d = c->oldest;
		c->dropped = realloc(c->dropped, (c->ndropped + 1) * 2 * sizeof(uint64_t));
		if (c->dropped == NULL)
			abort();
		c->dropped[2 * c->ndropped] = d->ino;
		c->dropped[2 * c->ndropped + 1] = d->seq;
		c->ndropped++;
		dir_drop(c, d);
	}
}

void
dc_grant(struct dc *c, uint64_t dir, uint64_t seq)
{
	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);

	if (d) {
		if (seq > d->seq)
			d->seq = seq;
		return;
	}
	d = tsr_xcalloc(1, sizeof(*d));
	d->ino = dir;
	d->seq = seq;
	if (tsr_u64map_put(&c->dirs, dir, d) < 0) {
		free(d);
		return;
	}
	d->older = c->newest;
	if (c->newest)
		c->newest->newer = d;
	else
		c->oldest = d;
	c->newest = d;
	bound(c);
}

int
dc_revoke(struct dc *c, uint64_t dir, uint64_t *seq)
{
	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);

	if (d == NULL)
		return 0;
	*seq = d->seq;
	dir_drop(c, d);
	return 1;
}

void
dc_complete(struct dc *c, uint64_t dir)
{
	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);

	if (d)
		d->complete = 1;
}

int
dc_held(const struct dc *c, uint64_t dir)
{
	return tsr_u64map_get(&c->dirs, dir) != NULL;
}

static void
grow(struct dc *c)
{
	size_t n = c->ntab * 2;
	struct dc_dent **tab = tsr_xcalloc(n, sizeof(*tab));

	for (size_t i = 0; i < c->ntab; i++)
		while (c->tab[i]) {
			struct dc_dent *e = c->tab[i];
			c->tab[i] = e->hnext;
			e->hnext = tab[e->hash & (n - 1)];
			tab[e->hash & (n - 1)] = e;
		}
	free(c->tab);
	c->tab = tab;
	c->ntab = n;
}

void
dc_put(struct dc *c, uint64_t dir, const char *name, const struct tsr_fs_stat *st)
{
	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);
	uint64_t h = hash_of(dir, name);
	struct dc_dent **pp, *e;
	size_t len = strlen(name);

	if (d == NULL)
		return;
	if (*(pp = slot(c, dir, name, h)) != NULL)
		dent_free(c, *pp);
	if (st && st->ino && (e = tsr_u64map_get(&c->byino, st->ino)) != NULL) {
		/* one place per inode: it moved (what its old name names now
		 * is not known) */
		e->dir->complete = 0;
		dent_free(c, e);
	}
	e = tsr_xcalloc(1, sizeof(*e) + len + 1);
	memcpy(e->name, name, len + 1);
	e->hash = h;
	e->dir = d;
	e->absent = st == NULL;
	if (st)
		e->st = *st;
	e->hnext = c->tab[h & (c->ntab - 1)];
	c->tab[h & (c->ntab - 1)] = e;
	e->dnext = d->ents;
	if (d->ents)
		d->ents->dprev = e;
	d->ents = e;
	d->n++;
	c->n++;
	if (st && (S_ISDIR(st->mode) || st->nlink <= 1) &&
	    tsr_u64map_put(&c->byino, st->ino, e) < 0) {
		d->complete = 0; /* (the name is not known now) */
		dent_free(c, e);
	}
	if (c->n > 2 * c->ntab)
		grow(c);
	bound(c);
}

void
dc_forget_name(struct dc *c, uint64_t dir, const char *name)
{
	struct dc_dent **pp;

	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);

	if (d == NULL)
		return;
	d->complete = 0; /* (the name is no longer known absent or present) */
	if (*(pp = slot(c, dir, name, hash_of(dir, name))) != NULL)
		dent_free(c, *pp);
}

void
dc_set_attr(struct dc *c, const struct tsr_fs_stat *st)
{
	struct dc_dent *e = tsr_u64map_get(&c->byino, st->ino);

	if (e == NULL)
		return;
	if (!S_ISDIR(st->mode) && st->nlink > 1) {
		e->dir->complete = 0;
		dent_free(c, e); /* linked elsewhere too: not kept */
	}
	else
		e->st = *st;
}

void
dc_forget_ino(struct dc *c, uint64_t ino)
{
	struct dc_dent *e = tsr_u64map_get(&c->byino, ino);

	if (e) {
		e->dir->complete = 0;
		dent_free(c, e);
	}
}

int
dc_lookup(struct dc *c, uint64_t dir, const char *name, struct tsr_fs_stat *st)
{
	struct dc_dent *e;

	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);

	if (d == NULL) {
		c->misses++;
		return 0;
	}
	if ((e = *slot(c, dir, name, hash_of(dir, name))) == NULL) {
		if (d->complete) {
			c->hits++;
			return 2;
		}
		c->misses++;
		return 0;
	}
	c->hits++;
	if (e->absent)
		return 2;
	*st = e->st;
	return 1;
}

int
dc_getattr(struct dc *c, uint64_t ino, struct tsr_fs_stat *st)
{
	struct dc_dent *e = tsr_u64map_get(&c->byino, ino);

	if (e == NULL) {
		c->misses++;
		return 0;
	}
	c->hits++;
	*st = e->st;
	return 1;
}

ssize_t
dc_list(struct dc *c, uint64_t dir, struct dc_entry **out)
{
	struct dc_dir *d = tsr_u64map_get(&c->dirs, dir);
	size_t n = 0, bytes = 0;
	struct dc_entry *v;
	char *names;

	if (d == NULL || !d->complete) {
		c->misses++;
		return -1;
	}
	for (struct dc_dent *e = d->ents; e; e = e->dnext) {
		if (e->absent)
			continue;
		if (!S_ISDIR(e->st.mode) && e->st.nlink > 1) {
			c->misses++;
			return -1;
		}
		n++;
		bytes += strlen(e->name) + 1;
	}
	v = tsr_xcalloc(1, n * sizeof(*v) + bytes + 1);
	names = (char *)(v + n);
	n = 0;
	for (struct dc_dent *e = d->ents; e; e = e->dnext) {
		if (e->absent)
			continue;
		size_t len = strlen(e->name) + 1;
		memcpy(names, e->name, len);
		v[n].name = names;
		v[n].st = e->st;
		names += len;
		n++;
	}
	c->hits++;
	*out = v;
	return (ssize_t)n;
}

uint64_t *
dc_take_dropped(struct dc *c, size_t *n)
{
	uint64_t *v = c->dropped;

	*n = c->ndropped;
	c->dropped = NULL;
	c->ndropped = 0;
	return v;
}
