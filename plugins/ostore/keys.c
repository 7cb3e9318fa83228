/* keys.c — the object-store engine's LevelDB key layout (drawn in
 * ostore.h): collections, onodes, attributes, omap entries, chunk maps. */
#include "ostore_int.h"

#include <string.h>

void
os_cid_put(uint8_t *b, const struct tsr_coll_id *c)
{
	be64(b, c->pool);
	be32(b + 8, c->pg);
	be32(b + 12, (uint32_t)c->shard ^ 0x80000000u);
}

void
os_cid_get(const uint8_t *b, struct tsr_coll_id *c)
{
	c->pool = get_be64(b);
	c->pg = get_be32(b + 8);
	c->shard = (int32_t)(get_be32(b + 12) ^ 0x80000000u);
}

size_t
os_key_coll(uint8_t *k, const struct tsr_coll_id *c)
{
	k[0] = 'L';
	os_cid_put(k + 1, c);
	return 1 + CID_LEN;
}

size_t
os_key_obj(uint8_t *k, const struct tsr_coll_id *c, const void *oid, size_t n)
{
	k[0] = 'O';
	os_cid_put(k + 1, c);
	if (n) /* the collection's prefix when n is 0 (oid may be NULL) */
		memcpy(k + 1 + CID_LEN, oid, n);
	return 1 + CID_LEN + n;
}

/* 'A'/'M' id key, or with key NULL the prefix; 'C' id chunk. */
size_t
os_key_sub(uint8_t *k, char tag, uint64_t objid, const void *key, size_t n)
{
	k[0] = (uint8_t)tag;
	be64(k + 1, objid);
	if (n)
		memcpy(k + 9, key, n);
	return 9 + n;
}

size_t
os_key_chunk(uint8_t *k, uint64_t objid, uint32_t cno)
{
	k[0] = 'C';
	be64(k + 1, objid);
	be32(k + 9, cno);
	return 13;
}

int
os_key_is_chunk(const void *k, size_t kl, uint64_t *objid, uint32_t *cno)
{
	const uint8_t *b = k;

	if (kl != 13 || b[0] != 'C')
		return 0;
	*objid = get_be64(b + 1);
	*cno = get_be32(b + 9);
	return 1;
}

/* The key just past every key starting with prefix (prefix's last byte
 * incremented; the prefixes used here never end in 0xff runs that matter:
 * ids and tags are below 0xff in their top byte for the life of a store,
 * and where they are not, the carry is propagated). */
size_t
os_key_after(uint8_t *k, const uint8_t *prefix, size_t n)
{
	memcpy(k, prefix, n);
	while (n > 0) {
		if (k[n - 1] != 0xff) {
			k[n - 1]++;
			return n;
		}
		n--;
	}
	k[0] = 0xff; /* unreachable for our tags */
	return 1;
}
