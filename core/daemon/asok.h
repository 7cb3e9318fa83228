/* asok.h — the admin socket: a unix socket answering text commands.
 *
 * Every daemon listens on one (config key admin_socket).  A client sends
 * one command and reads one reply; the server then closes the connection.
 *
 *   request:  words separated by spaces, ending in '\n', at most
 *             TSR_ASOK_MAX_REQUEST bytes in all:   "log level osd debug\n"
 *   reply:    +-----------------+--------------------------------+
 *             | status (i32 LE) | body: text, usually JSON ...EOF |
 *             +-----------------+--------------------------------+
 *             status is 0 or a negative errno; on error the body is the
 *             reason, one line.
 *
 * Commands are found by their longest registered word prefix ("log level"
 * before "log"); the handler gets the words after the prefix.  A client
 * that has not finished within TSR_ASOK_TIMEOUT_MS, or sends more than the maximum,
 * is disconnected; others are served meanwhile (the socket lives on the
 * daemon's event loop and never blocks it).  TSR_ASOK_TIMEOUT_MS is a
 * deadline from the moment of accept for the whole exchange, request and
 * reply.  Error replies are one line of plain text; successful replies of
 * the built-in commands are JSON.
 */
#ifndef TSR_ASOK_H
#define TSR_ASOK_H

#include <tessera/common.h>
#include "util/sbuf.h"

#define TSR_ASOK_MAX_REQUEST 4096
#define TSR_ASOK_TIMEOUT_MS 10000
#define TSR_ASOK_MAX_CLIENTS 64

struct tsr_asok;
struct tsr_loop;

/* Handlers append their reply to out and return 0 or a negative errno (then
 * out holds the reason). */
typedef int (*tsr_asok_fn)(void *arg, int argc, char **argv,
			   struct tsr_sbuf *out);

/* Bind path (replacing a stale socket file nobody listens on; refusing one
 * that answers).  Always answers "help". */
TSR_API int tsr_asok_create(struct tsr_loop *loop, const char *path,
			    struct tsr_asok **out, char *err, size_t errlen);
/* Stop listening, drop clients, remove the socket file. */
TSR_API void tsr_asok_destroy(struct tsr_asok *a);
TSR_API int tsr_asok_register(struct tsr_asok *a, const char *prefix,
			      const char *help, tsr_asok_fn fn, void *arg);

/* Client side: send cmd, wait up to timeout_ms for the whole reply. */
TSR_API int tsr_asok_request(const char *path, const char *cmd,
			     int timeout_ms, int *status,
			     struct tsr_sbuf *reply, char *err, size_t errlen);

#endif
