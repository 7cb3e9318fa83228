/* client_int.h — what the file client (fs.c) reaches inside the object
 * client (client.c): its messenger, loop and map subscription, which the
 * file client shares for its MDS session.  Not part of the library's API. */
#ifndef TSR_CLIENT_INT_H
#define TSR_CLIENT_INT_H

#include <stdint.h>

struct tsr_client;
struct tsr_loop;
struct tsr_mapsub;
struct tsr_msgr;

struct tsr_msgr *tsr_client_msgr_(struct tsr_client *c);
struct tsr_loop *tsr_client_loop_(struct tsr_client *c);
struct tsr_mapsub *tsr_client_mapsub_(struct tsr_client *c);
/* The client's id (its request ids' client part; never 0). */
uint64_t tsr_client_id_(struct tsr_client *c);
/* client_dirty_max, in bytes. */
uint64_t tsr_client_dirty_max_(struct tsr_client *c);
/* client_mds_timeout, in ms (0: not read, as in the MDS's own client). */
uint64_t tsr_client_mds_timeout_(struct tsr_client *c);
/* The file system's session is one per client (the MDS knows a session
 * by the client's id): 0 and claimed, or -EBUSY; let go at unmount. */
int tsr_client_fs_claim_(struct tsr_client *c);
void tsr_client_fs_release_(struct tsr_client *c);
/* client_readahead_max, in bytes. */
uint64_t tsr_client_readahead_max_(struct tsr_client *c);
/* client_op_timeout, in ms. */
uint64_t tsr_client_timeout_ms_(struct tsr_client *c);
struct tsr_op;
/* op's deadline: ms instead of client_op_timeout (the timer answers it
 * -ETIMEDOUT then, whatever an OSD does later). */
void tsr_op_timeout_(struct tsr_op *op, uint64_t ms);
struct tsr_monc;
struct tsr_monc *tsr_client_monc_(struct tsr_client *c);

#endif
