/* tessera/crc32c.h — CRC32C (Castagnoli), the checksum of frames and stored
 * data.
 *
 * The polynomial is 0x1EDC6F41 (reflected 0x82F63B78), initial value and
 * final XOR 0xFFFFFFFF, as in iSCSI (RFC 3720) and ext4.  The running value
 * follows zlib's crc32() convention: start with 0 and feed the previous
 * result back in, so
 *     tsr_crc32c(tsr_crc32c(0, a, n), b, m) == tsr_crc32c(0, a||b, n+m).
 * The SSE4.2 crc32 instruction is used when the CPU has it, a table-driven
 * implementation otherwise; both give identical results.
 */
#ifndef TESSERA_CRC32C_H
#define TESSERA_CRC32C_H

#include <tessera/common.h>

TSR_BEGIN_DECLS

TSR_API uint32_t tsr_crc32c(uint32_t crc, const void *buf, size_t len);
/* The CRC of a||b from crc1 = tsr_crc32c(0, a, n), crc2 = tsr_crc32c(0, b,
 * len2), without the bytes: a hundred-odd operations whatever the lengths,
 * four table lookups when len2 is 4096.  So checksums already known (a
 * stored block's) need no second pass over their data. */
TSR_API uint32_t tsr_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* Which implementation tsr_crc32c uses: "sse4.2" or "table". */
TSR_API const char *tsr_crc32c_impl(void);

TSR_END_DECLS

#endif
