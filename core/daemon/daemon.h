/* daemon.h — the life cycle every Tessera daemon shares.
 *
 * A daemon's main() is one call:
 *
 *     int main(int argc, char **argv) { return tsr_daemon_main(argc, argv, &osd_def); }
 *
 * tsr_daemon_main parses the uniform options (--conf, --id, --foreground,
 * --help, --version, and --mkfs for types with a store), loads and checks
 * the configuration, detaches (unless
 * --foreground) with the parent waiting until the child has started or
 * failed, opens the log, takes the pid file, creates the event loop, the
 * admin socket and the plugin registry, calls def->start, and runs the loop
 * until SIGTERM or SIGINT.  SIGHUP reopens the log file.  Then def->stop
 * runs and everything is torn down in reverse order.
 *
 * Exit status: 0 after a clean stop, 1 when start-up fails (the reason is
 * printed on stderr and logged), 2 for a usage error.
 */
#ifndef TSR_DAEMON_H
#define TSR_DAEMON_H

#include <tessera/common.h>
#include "config/config.h"
#include "daemon/asok.h"

struct tsr_daemon;
struct tsr_loop;
struct tsr_registry;

struct tsr_daemon_def {
	const char *type;       /* "osd": section type, program tessera-<type> */
	const char *summary;    /* one line for --help */
	/* Options of a daemon type the core's table does not have (NULL-name
	 * terminated; NULL for none). */
	const struct tsr_conf_opt *options;
	/* Set up: register fds, timers and admin commands.  Runs in the
	 * (detached) daemon process before the loop starts. */
	int (*start)(struct tsr_daemon *d, char *err, size_t errlen);
	/* Tear down after the loop stopped, and also after start failed (so
	 * it must cope with a partial start); may be NULL. */
	void (*stop)(struct tsr_daemon *d);
	/* Extra fields for the admin "status" reply, appended as JSON members
	 * (",\n  \"key\": value" each); may be NULL. */
	void (*status)(struct tsr_daemon *d, struct tsr_sbuf *out);
	/* `--mkfs`: prepare the daemon's store and return (NULL: the type has
	 * none).  Runs in the foreground with the configuration and the
	 * plugin registry, but no loop, log file or admin socket; on success
	 * err may hold one line to print (what was made). */
	int (*mkfs)(struct tsr_daemon *d, char *err, size_t errlen);
	const char *mkfs_help;  /* a paragraph for --help (may be NULL) */
};

TSR_API int tsr_daemon_main(int argc, char **argv,
			    const struct tsr_daemon_def *def);

TSR_API struct tsr_loop *tsr_daemon_loop(struct tsr_daemon *d);
TSR_API struct tsr_conf *tsr_daemon_conf(struct tsr_daemon *d);
TSR_API struct tsr_registry *tsr_daemon_registry(struct tsr_daemon *d);
TSR_API struct tsr_asok *tsr_daemon_asok(struct tsr_daemon *d); /* may be NULL */
/* The daemon's key (auth/auth.h), loaded from `keyring` before start for
 * types mon, osd and mds (NULL for other types). */
struct tsr_auth;
TSR_API const struct tsr_auth *tsr_daemon_auth(struct tsr_daemon *d);
TSR_API const char *tsr_daemon_name(const struct tsr_daemon *d);
TSR_API const char *tsr_daemon_id(const struct tsr_daemon *d);
TSR_API void tsr_daemon_set_priv(struct tsr_daemon *d, void *priv);
TSR_API void *tsr_daemon_priv(struct tsr_daemon *d);
/* Ask the daemon to stop, as SIGTERM does (any thread). */
TSR_API void tsr_daemon_request_stop(struct tsr_daemon *d);

#endif
