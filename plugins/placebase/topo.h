/* topo.h — the topology model shared by Tessera's placement plugins: types,
 * devices, buckets and rules; their text form (compile/decompile), their
 * binary form (encode/decode) and validation.  Compiled into each placement
 * plugin (a convenience library, not part of the core): the plugins differ
 * in how they map inputs to devices, not in how a map is written down.
 *
 * ---- Text form ----------------------------------------------------------
 *
 *     # comments run from '#' to the end of the line
 *     types {
 *         0 osd               # type 0 is always the device type
 *         1 host
 *         2 root
 *     }
 *     device 0 osd.0 weight 1.00000
 *     device 1 osd.1 weight 2.50000
 *     bucket host-a {
 *         id -2
 *         type host
 *         item osd.0
 *         item osd.1
 *     }
 *     bucket default {
 *         id -1
 *         type root
 *         item host-a
 *     }
 *     rule replicated {
 *         id 0
 *         take default
 *         chooseleaf host     # N distinct hosts, one device in each
 *     }
 *     rule flat {
 *         id 1
 *         take default
 *         choose osd          # N distinct devices, anywhere under default
 *     }
 *
 * Tokens are separated by blanks and newlines; names are
 * [A-Za-z0-9_.-]{1,63} and unique across devices, buckets (and, separately,
 * types and rules).  Device ids are 0..TOPO_MAX_DEVICES-1, bucket ids are
 * -1 down to -TOPO_MAX_BUCKETS, rule ids 0..TOPO_MAX_RULES-1.  A bucket
 * may list a device or a bucket defined above it; every item has at most
 * one parent (the hierarchy is a forest).  Weights are written with up to
 * five decimals and held as 16.16 fixed point (TSR_WEIGHT_ONE is 1.0); a
 * device weight must be > 0; a bucket's weight is the sum of its devices'.
 *
 * decompile() writes the canonical text: types by number; devices by id;
 * buckets children first (a bucket after every bucket it lists), ties by
 * id descending (-2 before -3): the next bucket is always the one with
 * the highest id among those whose listed buckets are all written already;
 * items inside a bucket devices first by id,
 * then buckets in the canonical bucket order; rules by id; weights with
 * exactly five decimals; one tab of indent.  compile(decompile(m)) gives m
 * again, and decompile(compile(t)) is the canonical form of t.
 *
 * ---- Binary form ---------------------------------------------------------
 *
 *     envelope v2 compat 2 {                  (the core's, encoding.h)
 *         u32 magic "TPM1" (0x314d5054)
 *         u32 ntypes;    ntypes  x { str name }
 *         u32 ndevices;  ndevices x { i32 id, str name, u32 weight, i32 parent }
 *         u32 nbuckets;  nbuckets x { i32 id, u32 type, str name, i32 parent }
 *         u32 nrules;    nrules   x { u32 id, str name, i32 root,
 *                                     u32 domain_type, u32 mode }
 *     }
 *     u32 crc32c                              of every byte before it
 *
 *      0      1      2        6                           len-4    len
 *     +------+------+--------+---------------------------+--------+
 *     | ver  |compat| length | body (length bytes)        | crc32c |
 *     +------+------+--------+---------------------------+--------+
 *
 * Devices are in id order, buckets in the canonical order above, rules in
 * id order; parent is a bucket id, or 0 for none.  Encoding the same model
 * always gives the same bytes, and decode() rejects records out of that
 * order, so encode(decode(b)) == b for every accepted b (up to fields a
 * newer writer appended inside the envelope, which decode() skips; bytes
 * between the envelope and the checksum are an error).
 *
 * The checksum (CRC32C, tessera/crc32c.h, little-endian) is checked
 * before anything else is read: a map damaged anywhere, a flipped bit in
 * a name included, is refused as damaged rather than read as another
 * valid map.  Version 1 (until the checksum came) had the envelope alone,
 * v1 compat 1; such a map is refused with that said: its text form
 * (decompile with the version that wrote it) compiles into version 2.
 * Past the checksum, decode() still treats its input as hostile: every
 * count is checked against the bytes left and against the TOPO_MAX_*
 * limits before anything is allocated, and the result is validated like
 * compiled text.
 *
 * ---- Validation (both paths) -------------------------------------------
 *
 * Errors name the offending item and, from text, the line: unknown type,
 * bucket or item; duplicate id or name; a device of a non-device type or a
 * bucket of type 0; a bucket under another of its own type (failure
 * domains never nest); an item listed by two buckets; a cycle; a zero or
 * negative device weight; a bucket with no device under it; a rule whose
 * root is not a bucket, whose domain type is unknown (or is the device type
 * with chooseleaf), or whose root holds no item of its domain type.  choose
 * picks devices, so its type is the device type (`choose osd`, domain_type
 * 0); topo_from_generic() ignores a CHOOSE rule's domain_type, as
 * placement.h documents it for CHOOSELEAF only.
 */
#ifndef TSR_TOPO_H
#define TSR_TOPO_H

#include <tessera/placement.h>

#define TOPO_MAX_TYPES 32
#define TOPO_MAX_DEVICES (1u << 20)
#define TOPO_MAX_BUCKETS (1u << 18)
#define TOPO_MAX_RULES 256
#define TOPO_NAME_MAX 63
#define TOPO_MAGIC 0x314d5054u /* "TPM1" little-endian */
#define TOPO_VERSION 2           /* the envelope's version and compat */
#define TOPO_ENVELOPE_HDR 6      /* u8 version, u8 compat, u32 length */
#define TOPO_CRC_LEN 4           /* the u32 crc32c after the envelope */

struct topo_device {
	int32_t id;         /* >= 0 */
	char *name;
	uint32_t weight;    /* 16.16, > 0 */
	int32_t parent;     /* bucket id, or 0 when unattached */
};

struct topo_bucket {
	int32_t id;         /* < 0 */
	uint32_t type;      /* index into types, >= 1 */
	char *name;
	int32_t parent;     /* bucket id, or 0 for a root */
	uint64_t weight;    /* derived: sum of the weights of its devices */
};

struct topo_rule {
	uint32_t id;
	char *name;
	int32_t root;       /* bucket id */
	uint32_t domain_type;
	uint32_t mode;      /* enum tsr_rule_mode */
};

struct topo {
	uint32_t ntypes;
	char **types;                   /* types[0] is the device type */
	uint32_t ndevices;
	struct topo_device *devices;    /* sorted by id */
	uint32_t nbuckets;
	struct topo_bucket *buckets;    /* canonical order (children first) */
	uint32_t nrules;
	struct topo_rule *rules;        /* sorted by id */
	uint32_t max_devices;           /* largest device id + 1 */
	/* Private index for topo_bucket(), built by the constructors: bucket
	 * id -1 - i is buckets[bucket_slot[i]] for i < nslots (UINT32_MAX:
	 * no such bucket).  NULL in a hand-built topo: lookups then scan. */
	uint32_t nslots;
	uint32_t *bucket_slot;
};

/* All functions return 0 or a negative errno with the reason in err.
 * A struct topo is owned by the caller and freed with topo_free. */
int topo_from_generic(const struct tsr_topology *g, struct topo **out,
		      char *err, size_t errlen);
int topo_compile(const char *text, size_t len, struct topo **out, char *err,
		 size_t errlen);
/* The canonical text, NUL-terminated, malloc'd; *len excludes the NUL. */
int topo_decompile(const struct topo *t, char **text, size_t *len);
/* The binary form, malloc'd. */
int topo_encode(const struct topo *t, uint8_t **buf, size_t *len);
int topo_decode(const void *buf, size_t len, struct topo **out, char *err,
		size_t errlen);
void topo_free(struct topo *t);

/* Lookups (binary search / index; NULL when absent). */
const struct topo_device *topo_device(const struct topo *t, int32_t id);
const struct topo_bucket *topo_bucket(const struct topo *t, int32_t id);
const struct topo_rule *topo_rule(const struct topo *t, uint32_t id);

#endif
