/* host.h — the core's implementation of the plugin host table.
 *
 * A struct tsr_core_host wraps a struct tsr_host whose services are the
 * core's: the process logger (with the instance name as prefix), malloc,
 * the system clocks, the daemon's event loop for timers (when it has one)
 * and its resolved configuration for conf_get (when it has one).
 */
#ifndef TSR_HOST_H
#define TSR_HOST_H

#include <tessera/plugin.h>

struct tsr_conf;
struct tsr_loop;

struct tsr_core_host {
	struct tsr_host host;   /* what plugins see */
	char instance[96];
	struct tsr_conf *conf;  /* may be NULL */
	struct tsr_loop *loop;  /* may be NULL */
};

/* Fill h; conf and loop may be NULL.  h must outlive every instance made
 * with &h->host. */
TSR_API void tsr_core_host_init(struct tsr_core_host *h, const char *instance,
				struct tsr_conf *conf, struct tsr_loop *loop);

#endif
