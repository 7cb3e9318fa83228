/* crc32c_impl.h — the two CRC32C implementations behind tsr_crc32c(),
 * exposed (hidden, not exported) so the unit tests can check each one
 * against the published vectors and against the other.
 *
 * Same conventions as tsr_crc32c(): pass 0 to start, feed the previous
 * result back in to continue.  tsr_crc32c_hw() executes the SSE4.2 crc32
 * instruction and must only be called when tsr_crc32c_impl() says
 * "sse4.2"; on other architectures it is the table version.
 */
#ifndef TSR_CRC32C_IMPL_H
#define TSR_CRC32C_IMPL_H

#include <tessera/common.h>

uint32_t tsr_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t tsr_crc32c_hw(uint32_t crc, const void *buf, size_t len);

#endif
