/* dcache.h — the file client's cache of names and attributes, kept per
 * directory while the MDS lets it (the DCACHE capability, mdsmsg.h).
 *
 * A directory is "held" from a grant (a LOOKUP, READDIR or make answered
 * with dcache_seq) until a revoke (MDS_CAP REVOKE_DIR), which another
 * client's change to it brings first.  While held, its cached names —
 * present ones with their inodes' attributes, and absent ones — answer
 * lookups and getattrs without the MDS.  Every change goes in in the
 * order the messages came (the session's messenger thread), so what the
 * cache holds is what the MDS held at some point since the grant: a
 * revoke empties the directory before any answer that follows it is
 * taken in.
 *
 * Not thread-safe: the file client calls it under its lock.  Bounded:
 * past DC_MAX_DENTS names or DC_MAX_DIRS directories the oldest
 * directory goes (dc_take_dropped says which, to give back).
 */
#ifndef TSR_CLIENT_DCACHE_H
#define TSR_CLIENT_DCACHE_H

#include "util/u64map.h"

#include <tessera/fs.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DC_MAX_DENTS 262144
#define DC_MAX_DIRS 16384

struct dc_dent;
struct dc_dir;

struct dc {
	struct tsr_u64map dirs;      /* dir ino -> struct dc_dir (held) */
	struct tsr_u64map byino;     /* ino -> struct dc_dent (present, one
					link) */
	struct dc_dent **tab;        /* names, hashed by (dir, name) */
	size_t ntab, n;
	struct dc_dir *oldest, *newest;  /* the held directories, by grant */
	uint64_t *dropped;           /* (dir, seq) pairs dropped by the bound,
					to give back */
	size_t ndropped;
	uint64_t hits, misses;
};

void dc_init(struct dc *c);
void dc_free(struct dc *c);
/* Drop everything (a new session: the new MDS granted nothing). */
void dc_clear(struct dc *c);

/* A grant of DCACHE on dir numbered seq: held from now. */
void dc_grant(struct dc *c, uint64_t dir, uint64_t seq);
/* A revoke: dir's names go.  1 if it was held (with *seq its grant). */
int dc_revoke(struct dc *c, uint64_t dir, uint64_t *seq);
int dc_held(const struct dc *c, uint64_t dir);
/* Every name of dir is cached (it was made empty here): a name not
 * cached is absent, while dir is held. */
void dc_complete(struct dc *c, uint64_t dir);

/* Name in dir is st (NULL: absent), if dir is held.  Inodes with more
 * than one link (not directories) are not kept by ino. */
void dc_put(struct dc *c, uint64_t dir, const char *name, const struct tsr_fs_stat *st);
void dc_forget_name(struct dc *c, uint64_t dir, const char *name);
/* New attributes of ino, where it is kept; forget: it is not kept. */
void dc_set_attr(struct dc *c, const struct tsr_fs_stat *st);
void dc_forget_ino(struct dc *c, uint64_t ino);

/* 1: present (*st), 2: absent, 0: not known. */
int dc_lookup(struct dc *c, uint64_t dir, const char *name, struct tsr_fs_stat *st);
/* 1 with *st, or 0. */
int dc_getattr(struct dc *c, uint64_t ino, struct tsr_fs_stat *st);

/* The names of dir, when it is held and complete (every name cached):
 * the present ones with their attributes, malloc'd (*out, n of them;
 * each name in the same block), or -1 when the cache cannot say (not
 * held, not complete, or a file linked more than once: its attributes
 * change without this directory). */
struct dc_entry {
	const char *name;
	struct tsr_fs_stat st;
};
ssize_t dc_list(struct dc *c, uint64_t dir, struct dc_entry **out);

/* The (dir, seq) pairs the bound dropped since the last call (malloc'd,
 * *n pairs), to give back to the MDS. */
uint64_t *dc_take_dropped(struct dc *c, size_t *n);

#endif
