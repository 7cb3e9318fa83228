/* fuzz_frame.c — libFuzzer target for the messenger's decoders.
 *
 * The input is read the way a connection reads its socket: a stream of
 * frames, each a 48-byte header (checked and decoded first, lengths
 * bounded before anything is sized by them), a body of front_len +
 * data_len bytes and a 4-byte CRC32C footer.  A hello body goes through
 * the handshake decoder; the authentication steps run as both sides of
 * the handshake would (auth/auth.h): a CHALLENGE's nonce is answered with
 * a connector's proof, an AUTH frame's proof is checked as an acceptor
 * holding a fixed secret checks it — and must never pass.  Any accepted
 * header must encode back to the same bytes; nothing may read out of
 * bounds, leak or trip UBSan.
 *
 * Built with clang -fsanitize=fuzzer,address,undefined when configure
 * finds it (tests/local.mk); tests/fuzz/run.sh runs it briefly on the
 * seed corpus in tests/fuzz/corpus/.
 */
#include "msg/frame.h"
#include "auth/auth.h"

#include <tessera/crc32c.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRONT (1u << 16)
#define MAX_DATA (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fsid[16] = "tessera-test-fs";
static const uint8_t secret[TSR_AUTH_KEY_LEN] = "a fixed secret for the fuzzer..";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	/* what the handshake carries from one frame to the next */
	char name[TSR_AUTH_NAME_MAX] = "osd.3", target[TSR_AUTH_NAME_MAX] = "mon.a";
	uint8_t cnonce[TSR_AUTH_NONCE_LEN] = { 0 }, snonce[TSR_AUTH_NONCE_LEN] = { 1 };

	while (size - pos >= TSR_FRAME_HDR) {
		struct tsr_frame_hdr h;
		const char *why = NULL;
		uint8_t again[TSR_FRAME_HDR];
		size_t body;
		uint32_t crc, foot;

		if (tsr_frame_hdr_decode(data + pos, MAX_FRONT, MAX_DATA, &h, &why) < 0) {
			if (why == NULL)
				abort(); /* a refusal always has a reason */
			return 0;
		}
		tsr_frame_hdr_encode(&h, again);
		if (memcmp(again, data + pos, TSR_FRAME_HDR) != 0)
			abort(); /* decode and encode disagree */
		pos += TSR_FRAME_HDR;
		body = (size_t)h.front_len + h.data_len;
		if (size - pos < body + TSR_FRAME_FOOTER)
			return 0; /* a connection would wait for more */
		crc = tsr_crc32c(0, data + pos, body);
		foot = (uint32_t)data[pos + body] | (uint32_t)data[pos + body + 1] << 8 |
		       (uint32_t)data[pos + body + 2] << 16 |
		       (uint32_t)data[pos + body + 3] << 24;
		if (crc != foot)
			return 0; /* the connection is cut here */
		if (h.type == TSR_MSG_HELLO) {
			struct tsr_hello hello;
			uint8_t *front = malloc(h.front_len ? h.front_len : 1);

			/* a copy of exactly front_len bytes: ASan sees any
			 * read past it */
			if (front == NULL)
				return 0;
			memcpy(front, data + pos, h.front_len);
			why = NULL;
			if (tsr_hello_decode(front, h.front_len, &hello, &why) == 0) {
				struct tsr_enc e;
				struct tsr_hello back;

				if (why != NULL || memchr(hello.addr, '\0', sizeof(hello.addr)) == NULL ||
				    memchr(hello.auth_name, '\0', sizeof(hello.auth_name)) == NULL ||
				    memchr(hello.auth_target, '\0', sizeof(hello.auth_target)) == NULL ||
				    (hello.auth_name[0] && !tsr_auth_name_valid(hello.auth_name, NULL)) ||
				    (hello.auth_target[0] && !tsr_auth_name_valid(hello.auth_target, NULL)))
					abort();
				if (hello.auth_name[0]) {
					memcpy(name, hello.auth_name, sizeof(name));
					memcpy(target, hello.auth_target, sizeof(target));
					memcpy(cnonce, hello.auth_nonce, sizeof(cnonce));
				}
				tsr_enc_init(&e);
				tsr_hello_encode(&hello, &e);
				if (tsr_enc_error(&e) ||
				    tsr_hello_decode(e.buf, e.len, &back, &why) != 0 ||
				    memcmp(&back, &hello, sizeof(back)) != 0)
					abort(); /* round trip of what was accepted */
				tsr_enc_release(&e);
			} else if (why == NULL) {
				abort();
			}
			free(front);
		}
		if (h.type == TSR_MSG_CHALLENGE && h.front_len == TSR_AUTH_NONCE_LEN) {
			/* the connector's side: prove over the peer's nonce */
			struct tsr_auth *a;
			uint8_t key[TSR_AUTH_KEY_LEN], proof[TSR_AUTH_PROOF_LEN];
			memcpy(snonce, data + pos, sizeof(snonce));
			tsr_auth_derive(secret, name, key);
			if (tsr_auth_from_key(name, key, &a) == 0) {
				struct tsr_auth_hs hs = { fsid, name, target, cnonce, snonce };
				tsr_auth_connector_proof(a, &hs, proof);
				tsr_auth_destroy(a);
			}
		} else if (h.type == TSR_MSG_AUTH && h.front_len == TSR_AUTH_PROOF_LEN) {
			/* the acceptor's side: a proof from the input is wrong */
			struct tsr_auth *a;
			uint8_t reply[TSR_AUTH_PROOF_LEN];
			if (tsr_auth_from_secret(secret, "mon.a", &a) == 0) {
				struct tsr_auth_hs hs = { fsid, name, target, cnonce, snonce };
				if (tsr_auth_accept(a, &hs, data + pos, reply) == 0)
					abort(); /* a forged proof passed */
				tsr_auth_destroy(a);
			}
		}
		pos += body + TSR_FRAME_FOOTER;
	}
	return 0;
}
