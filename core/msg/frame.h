/* frame.h — the messenger's wire format: frames and the handshake.
 *
 * Everything a peer sends is a frame.  The codec here is pure (no sockets,
 * no allocation beyond what a caller asks for), so the fuzz target and the
 * unit tests drive exactly the code a connection runs.
 *
 *   0       4       6       8              12             16
 *   +-------+-------+-------+--------------+--------------+
 *   | magic | vers  | flags | type         | front_len    |
 *   | "TSRM"| u16   | u16   | u32          | u32          |
 *   +-------+-------+-------+--------------+--------------+
 *   16             20             24                     32
 *   +--------------+--------------+----------------------+
 *   | data_len     | data_raw_len | seq (u64)            |
 *   +--------------+--------------+----------------------+
 *   32                     40             44             48
 *   +----------------------+--------------+--------------+
 *   | ack (u64)            | reserved = 0 | header crc   |
 *   +----------------------+--------------+--------------+
 *   then front_len bytes of front, data_len bytes of data, and a u32
 *   CRC32C of front || data (the footer).  All integers little-endian.
 *
 *   magic        the bytes "TSRM": a peer speaking something else is cut
 *                off at its first frame
 *   vers         the framing version, TSR_FRAME_VERSION (1)
 *   flags        TSR_FRAME_F_*; unknown bits are refused
 *   type         message type: control types below TSR_MSG_USER, the
 *                application's from there (see msgr.h)
 *   front_len    the message's encoded fields (tessera/encoding.h)
 *   data_len     its bulk bytes as sent (raw, or zstd with F_ZSTD)
 *   data_raw_len the bulk bytes' length once decompressed (== data_len
 *                without F_ZSTD); never above the receiver's maximum
 *   seq          the sender's sequence number of a message on this
 *                session (1, 2, ...); 0 on control frames
 *   ack          the highest sequence the sender has received in order
 *                from the peer: everything up to it may be forgotten
 *   header crc   CRC32C of bytes 0..43, checked before any length is
 *                believed, so a corrupt length never sizes an allocation
 *
 * A frame larger than the receiver's maximum, with a bad magic, version,
 * flag, reserved word or checksum closes the connection (msgr.c logs the
 * peer and the reason).
 *
 * The handshake is the first frame each way, type TSR_MSG_HELLO, whose
 * front is struct tsr_hello (encoded in a versioned envelope); the
 * accepting side answers with its own hello, or with TSR_MSG_REFUSE whose
 * front is a reason string, and closes.  With authentication (auth/auth.h)
 * a challenge and a proof come between:
 *
 *   connector                                  acceptor
 *     HELLO  {..., name, target, Nc}    ->
 *                                       <-     CHALLENGE {Ns}
 *     AUTH   {proof: connector, K(name)} ->     checks it
 *                                       <-     HELLO {..., proof: acceptor}
 *     checks it; the session opens
 *
 * CHALLENGE's front is Ns (32 bytes); AUTH's is the 32-byte proof.  An
 * acceptor that requires authentication refuses a hello without a name,
 * an unknown name, and a wrong proof; a connector with a key refuses an
 * acceptor that does not prove it holds the key too (it would be talking
 * to an impostor).  Until the session opens, a frame may announce at most
 * TSR_FRAME_HANDSHAKE_MAX bytes, so an unauthenticated peer pins no
 * memory.
 */
#ifndef TSR_MSG_FRAME_H
#define TSR_MSG_FRAME_H

#include <tessera/common.h>
#include <tessera/encoding.h>

#define TSR_FRAME_MAGIC "TSRM"
#define TSR_FRAME_VERSION 1
#define TSR_FRAME_HDR 48
#define TSR_FRAME_FOOTER 4

#define TSR_FRAME_F_ZSTD 0x1u   /* data is zstd-compressed */
#define TSR_FRAME_F_KNOWN 0x1u

/* Control message types; application types start at TSR_MSG_USER. */
#define TSR_MSG_CONTROL_MAP(X)                                               \
	X(HELLO, hello, 1)         /* handshake: struct tsr_hello */         \
	X(REFUSE, refuse, 2)       /* handshake refused: reason string */    \
	X(ACK, ack, 3)             /* only the header's ack field */         \
	X(KEEPALIVE, keepalive, 4) /* are you there? (front: u64 stamp) */   \
	X(KEEPALIVE_ACK, keepalive_ack, 5) /* yes (the stamp echoed) */ \
	X(CHALLENGE, challenge, 6) /* acceptor's nonce (32 bytes) */         \
	X(AUTH, auth, 7)           /* connector's proof (32 bytes) */

enum {
#define X(up, low, val) TSR_MSG_##up = val,
	TSR_MSG_CONTROL_MAP(X)
#undef X
	TSR_MSG_USER = 64
};

/* Who is at the other end. */
#define TSR_ENTITY_MAP(X) \
	X(MON, mon, 1)    \
	X(OSD, osd, 2)    \
	X(MDS, mds, 3)    \
	X(CLIENT, client, 4) \
	X(TOOL, tool, 5)

enum tsr_entity_type {
#define X(up, low, val) TSR_ENTITY_##up = val,
	TSR_ENTITY_MAP(X)
#undef X
};

/* Protocol versions this build speaks (the handshake picks the highest
 * both do) and the feature bits it knows. */
#define TSR_PROTO_MIN 1
#define TSR_PROTO_MAX 1
#define TSR_FEATURE_ZSTD 0x1ull   /* may send F_ZSTD frames */
#define TSR_FEATURE_AUTH 0x2ull   /* the hello carries auth fields */
/* reserved, not yet spoken: encryption on the wire after the handshake
 * (0x4), capabilities limited to pools and paths (0x8) */
#define TSR_FEATURE_SECURE 0x4ull
#define TSR_FEATURE_CAPS 0x8ull
#define TSR_FEATURES_KNOWN 0x3ull

/* The most a frame may announce (front + data) before the handshake is
 * done: a hello, a challenge, a proof or a refusal fit in far less. */
#define TSR_FRAME_HANDSHAKE_MAX 4096u

struct tsr_frame_hdr {
	uint16_t version;
	uint16_t flags;
	uint32_t type;
	uint32_t front_len;
	uint32_t data_len;
	uint32_t data_raw_len;
	uint64_t seq;
	uint64_t ack;
};

/* Write the 48 header bytes (crc included). */
void tsr_frame_hdr_encode(const struct tsr_frame_hdr *h,
			  uint8_t out[TSR_FRAME_HDR]);

/* Check and decode 48 header bytes.  max_front and max_data bound the
 * lengths (data_raw_len too).  0, or -EBADMSG with the reason in why. */
int tsr_frame_hdr_decode(const uint8_t in[TSR_FRAME_HDR], uint32_t max_front,
			 uint32_t max_data, struct tsr_frame_hdr *h,
			 const char **why);

/* The footer's four bytes (little-endian CRC32C). */
void tsr_frame_footer_put(uint8_t out[TSR_FRAME_FOOTER], uint32_t crc);
uint32_t tsr_frame_footer_get(const uint8_t in[TSR_FRAME_FOOTER]);

/* The handshake's content. */
struct tsr_hello {
	uint8_t fsid[16];        /* cluster id: must match */
	uint8_t entity_type;     /* enum tsr_entity_type */
	uint64_t entity_id;      /* osd.3 -> 3; clients: a random id */
	uint64_t nonce;          /* this process instance (changes on restart) */
	uint16_t proto_min, proto_max;
	uint64_t features;       /* TSR_FEATURE_* the sender offers */
	uint8_t lossless;        /* the connector's policy */
	uint64_t session;        /* connector: the session it resumes (0: new);
	                          * acceptor: the session id it assigned */
	uint64_t in_seq;         /* last seq received in order on the session */
	char addr[64];           /* where the sender listens ("" if nowhere) */
	/* version 2: authentication (auth/auth.h).  Connector: its name
	 * ("" for none) and nonce Nc; acceptor: its proof (has_proof) */
	char auth_name[56];
	char auth_target[56];    /* connector: whom it meant to reach */
	uint8_t auth_nonce[32];
	uint8_t has_proof;
	uint8_t auth_proof[32];
};

/* Encode h as a hello front. */
void tsr_hello_encode(const struct tsr_hello *h, struct tsr_enc *e);
/* Decode a hello front: 0, or -EBADMSG (why says what was wrong). */
int tsr_hello_decode(const void *buf, size_t len, struct tsr_hello *h,
		     const char **why);

const char *tsr_entity_type_name(unsigned type);
const char *tsr_msg_control_name(unsigned type);

#endif
