/* auth.h — who a peer is: the cluster secret, entity keys, keyring files,
 * and the proofs of the messenger's challenge-response handshake.
 *
 * The cryptography is libsodium's (BLAKE2b, keyed; its random source;
 * its constant-time compare): see doc/architecture.md, "Authentication",
 * for why that library and why this scheme.
 *
 * Names.  Every entity that talks to the cluster has a name TYPE.ID:
 * mon.a, osd.3, mds.x, client.admin.  TYPE is one of mon, osd, mds,
 * client; ID is 1 to 48 of [A-Za-z0-9_-] (an OSD's is its number).
 *
 * Keys.  The cluster secret S is 32 random bytes made when the cluster is
 * created; only the monitors hold it.  Every entity's key is derived from
 * it, so the monitors need no database of keys and an entity holds only
 * its own:
 *
 *     K(name) = BLAKE2b-256(key = S, "tessera entity key v1" 0x00 name)
 *
 * A stolen OSD key lets its holder be that OSD, nobody else.
 *
 * Keyring files are text, one entry a line, '#' starts a comment:
 *
 *     secret <64 hex digits>            the cluster secret (monitors)
 *     key <NAME> <64 hex digits>        the key of NAME
 *
 * A file readable or writable by group or others is refused, as is one
 * longer than 64 KiB.  A keyring may hold two secrets while the secret is
 * rotated: the first is current (it derives this side's own key), both
 * are accepted from peers (doc/operations.md, "Keys").
 *
 * The handshake (core/msg/handshake.c; frame.h draws it).  The connector
 * sends its name and a random nonce Nc in its hello; the acceptor answers
 * with a random nonce Ns (CHALLENGE); the connector proves it holds K(name)
 * (AUTH), the acceptor checks that proof and proves the same in its
 * hello.  With the transcript
 *
 *     T = "tessera auth v1" 0x00 fsid[16] len(name) name
 *         len(target) target Nc[32] Ns[32]
 *
 * (target: the name of the entity the connector meant to reach, which
 * the acceptor checks is its own) the proofs are BLAKE2b-256(key =
 * K(name), ROLE 0x00 T) with ROLE "connector" or "acceptor": fresh
 * nonces on both sides make a recorded proof worthless, the role word
 * keeps one side's proof from being reflected as the other's, and the
 * target keeps a proof made for one monitor from being relayed to
 * another by whoever squats an address the connector dials.
 *
 * Conventions: functions return 0 or a negative errno; the reason goes to
 * err, naming the file and line.  A struct tsr_auth is immutable once
 * made and may be shared by threads.
 */
#ifndef TSR_AUTH_AUTH_H
#define TSR_AUTH_AUTH_H

#include <tessera/common.h>

#include <stdbool.h>

#define TSR_AUTH_KEY_LEN 32
#define TSR_AUTH_NONCE_LEN 32
#define TSR_AUTH_PROOF_LEN 32
#define TSR_AUTH_NAME_MAX 56        /* with the NUL */
#define TSR_AUTH_MAX_SECRETS 2
#define TSR_AUTH_KEYRING_MAX (64u << 10)

struct tsr_auth;

/* Is name a valid entity name (TYPE.ID as above)?  why (may be NULL)
 * gets what is wrong. */
TSR_API bool tsr_auth_name_valid(const char *name, const char **why);

/* A new random cluster secret. */
TSR_API void tsr_auth_secret_new(uint8_t out[TSR_AUTH_KEY_LEN]);
/* K(name) from the secret (name must be valid). */
TSR_API void tsr_auth_derive(const uint8_t secret[TSR_AUTH_KEY_LEN],
			     const char *name, uint8_t out[TSR_AUTH_KEY_LEN]);

/* Load the keyring at path as name: the key of name, or the secret(s)
 * from which it derives.  -ENOENT (no such file), -EACCES (mode too
 * open), -EINVAL (malformed; err names the line), -ENOKEY (neither a
 * secret nor name's key in it). */
TSR_API int tsr_auth_load(const char *path, const char *name,
			  struct tsr_auth **out, char *err, size_t errlen);
/* The same from memory (tests, tools that made the key). */
TSR_API int tsr_auth_from_secret(const uint8_t secret[TSR_AUTH_KEY_LEN],
				 const char *name, struct tsr_auth **out);
TSR_API int tsr_auth_from_key(const char *name,
			      const uint8_t key[TSR_AUTH_KEY_LEN],
			      struct tsr_auth **out);
TSR_API void tsr_auth_destroy(struct tsr_auth *a);
/* Load name's keyring from the path a resolved configuration gives
 * (`keyring`); errors also say where that path was set. */
struct tsr_conf;
TSR_API int tsr_auth_conf(struct tsr_conf *conf, const char *name,
			  struct tsr_auth **out, char *err, size_t errlen);

/* Who we are. */
TSR_API const char *tsr_auth_name(const struct tsr_auth *a);
/* Does a hold the cluster secret (can it check any entity)? */
TSR_API bool tsr_auth_has_secret(const struct tsr_auth *a);

/* The handshake's transcript inputs. */
struct tsr_auth_hs {
	const uint8_t *fsid;                      /* 16 bytes */
	const char *name;                         /* the connector's */
	const char *target;                       /* whom it meant to reach */
	const uint8_t *cnonce, *snonce;           /* 32 bytes each */
};

/* Connector: our proof of K(our name). */
TSR_API void tsr_auth_connector_proof(const struct tsr_auth *a,
				      const struct tsr_auth_hs *hs,
				      uint8_t out[TSR_AUTH_PROOF_LEN]);
/* Connector: check the acceptor's proof.  0 or -EACCES. */
TSR_API int tsr_auth_check_acceptor(const struct tsr_auth *a,
				    const struct tsr_auth_hs *hs,
				    const uint8_t proof[TSR_AUTH_PROOF_LEN]);
/* Acceptor: can a check hs->name at all (it holds the secret, or the
 * name is its own)?  0, or -ENOKEY with why. */
TSR_API int tsr_auth_can_check(const struct tsr_auth *a, const char *name,
			       const char **why);
/* Acceptor: check the connector's proof of K(hs->name) under each key a
 * may hold for it; on success write our own proof (made with the key
 * that matched).  0 or -EACCES. */
TSR_API int tsr_auth_accept(const struct tsr_auth *a, const struct tsr_auth_hs *hs,
			    const uint8_t proof[TSR_AUTH_PROOF_LEN],
			    uint8_t reply[TSR_AUTH_PROOF_LEN]);

/* ---- Service keys: how OSDs check each other -------------------------
 *
 * Only the monitors hold the cluster secret, so only they can check an
 * entity's K(name).  Two OSDs meet in the OSDs' domain instead: the
 * monitors derive the OSDs' service secret S = BLAKE2b(key = secret,
 * "tessera service key v1" 0 "osd") (one per cluster secret, so it
 * rotates with it: current first, the previous still accepted) and give
 * it to each OSD sealed under that OSD's own key (XChaCha20-Poly1305
 * keyed by BLAKE2b(K(osd.N), "tessera service key wrap v1"), the name as
 * associated data; one copy under K(osd.N) from each cluster secret the
 * monitors hold, as the OSD's key may come from either during a
 * rotation): only osd.N opens it.  A handshake whose connector
 * and target are both OSDs proves BLAKE2b(key = S, "tessera entity key
 * v1" 0 name) instead of K(name), on both sides; every other handshake
 * is as above.  So any OSD can check any other; a stolen OSD's keys
 * still let its thief be any OSD toward other OSDs (as with Ceph's
 * rotating service keys), but never a monitor, an MDS or a client.
 *
 * Clients and MDSs reach OSDs the same way: a handshake from client.X or
 * mds.X to an OSD proves K_S(name) = BLAKE2b(key = S, "tessera entity
 * key v1" 0 name).  The OSD derives it from S; the client holds only its
 * own, which the monitors seal for it (one per service secret) as they
 * seal S for an OSD.  A stolen client key lets its thief be that client
 * alone.
 *
 * The MDSs' domain is the same with the MDSs' service secret S_mds =
 * BLAKE2b(key = secret, "tessera service key v1" 0 "mds"): a client or an
 * MDS toward an MDS proves K_Smds(name).  What the monitors seal for a
 * client or an MDS carries, after its OSD-domain keys, a second key set:
 * a client's own K_Smds(client.X), an MDS the secrets S_mds (so it checks
 * clients).  A stolen MDS key lets its thief be any client toward MDSs,
 * never toward an OSD.
 *
 *   sealed plain text = u8 n, n x key (OSDs' domain)
 *                       [u8 m, m x key (MDSs' domain): not for an OSD] */
/* u8 copies, then per monitor secret a copy (24-byte nonce, the sealed
 * u8 count and keys, a 16-byte tag) under the OSD's key from it. */
#define TSR_AUTH_SEALED_MAX \
	(1 + TSR_AUTH_MAX_SECRETS * (24 + 16 + 2 + 2 * TSR_AUTH_MAX_SECRETS * TSR_AUTH_KEY_LEN))
/* S for a daemon type ("osd") from one cluster secret. */
TSR_API void tsr_auth_service_derive(const uint8_t secret[TSR_AUTH_KEY_LEN],
				     const char *type, uint8_t out[TSR_AUTH_KEY_LEN]);
/* A monitor (a holds the secrets): the OSDs' service keys sealed for name
 * (an OSD), or name's own keys in the OSDs' domain (a client, an MDS),
 * into out[cap >= TSR_AUTH_SEALED_MAX]; *len gets the size.  -EINVAL when
 * a holds no secret or name is none of those. */
TSR_API int tsr_auth_service_seal(const struct tsr_auth *a, const char *name,
				  uint8_t *out, size_t cap, size_t *len);
/* An OSD (a client, an MDS): open what the monitors sealed for it and
 * use those keys from now on (any thread; handshakes on other threads see them at once: the
 * service keys are the one part of an auth that changes, under a lock of
 * their own, so a is const here as everywhere it is shared).
 * -EACCES (not sealed for us), -EBADMSG (malformed), with err. */
TSR_API int tsr_auth_service_open(const struct tsr_auth *a, const uint8_t *in,
				  size_t len, char *err, size_t errlen);
/* How many OSD service keys a can prove or check with (0: none yet). */
TSR_API int tsr_auth_service_count(const struct tsr_auth *a);
/* The same in the MDSs' domain. */
TSR_API int tsr_auth_service_count_mds(const struct tsr_auth *a);
/* Open the keys in a monitor's answer to MON_SVC_KEYS ({"service_keys":
 * "<hex>"}, text): as tsr_auth_service_open, -EBADMSG when text holds
 * none. */
TSR_API int tsr_auth_service_open_answer(const struct tsr_auth *a, const char *text,
					 char *err, size_t errlen);

/* Random bytes for nonces. */
TSR_API void tsr_auth_random(void *buf, size_t len);

/* The secrets a holds, current first: their number (0 to
 * TSR_AUTH_MAX_SECRETS), copied to out. */
TSR_API int tsr_auth_secrets(const struct tsr_auth *a,
			     uint8_t out[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN]);

/* Write a keyring file: created with mode 0600, refused if path exists
 * (-EEXIST) unless overwrite.  nsecrets secrets (current first; may be
 * 0), and name's key unless name is NULL. */
TSR_API int tsr_auth_keyring_write(const char *path,
				   const uint8_t (*secrets)[TSR_AUTH_KEY_LEN],
				   int nsecrets, const char *name,
				   const uint8_t *key, bool overwrite,
				   char *err, size_t errlen);

/* ---- What a name may do (the monitors' rules) -------------------------
 *
 * Until per-client capabilities exist, a name's type says what it may do:
 *   mon.*         everything, and Raft between monitors (the monitors
 *                 also require the name to be one of mon_members)
 *   client.admin  read the maps and change them
 *   other client  read the maps
 *   osd.N         read the maps; boot and beacon as osd.N only
 *   mds.X         read the maps; beacon as mds.X only
 */
enum tsr_auth_cap {
	TSR_CAP_READ,        /* status, maps, subscriptions */
	TSR_CAP_CHANGE,      /* change the maps (pool create, osd out, ...) */
	TSR_CAP_MON,         /* Raft between monitors */
};
/* name (NULL: unauthenticated, allowed nothing) may do cap? */
TSR_API bool tsr_auth_may(const char *name, enum tsr_auth_cap cap);
/* Is name exactly TYPE.ID (e.g. "osd", "3"), or of TYPE at all (id NULL)? */
TSR_API bool tsr_auth_is(const char *name, const char *type, const char *id);

#endif
