/* monc.h — the monitor client: commands to the monitor cluster, a module on
 * a messenger and an event loop its caller gives (a daemon's one runtime).
 *
 * A command tries the monitors of mon_members in turn, starting at the one
 * that last answered (at first a random one), and follows a "the leader
 * is at ADDR" answer at once.  A monitor that does not answer within a
 * try's time (3 s; or whose session fails) is passed over; the command is
 * sent again, with the same (client, tid), so a change is applied once
 * however often it is sent.  After the deadline the error names what each
 * monitor said last.  A round of monitors that all failed is followed by
 * a pause (200 ms) before the next: timers on the loop, no thread waits.
 *
 * Sessions.  The client keeps one lossy session per monitor it talks to,
 * opened when first needed and shared by the commands in flight; a
 * session that fails, or whose monitor stays silent past a try, is
 * closed, and every command on it tries again elsewhere.  Only the
 * session to the monitor that answered last is kept while idle.
 *
 * Threads.  Everything runs on the loop's thread: create and destroy it
 * there (or while the loop does not run), call tsr_monc_send() and
 * tsr_monc_cancel() there; done callbacks run there.  The messenger's
 * threads only post what they receive to the loop.  tsr_monc_command() is
 * the blocking form, for a thread that is not the loop's (the CLI, tests):
 * the loop must be running elsewhere (event/loop.h: tsr_loop_thread_start).
 */
#ifndef TSR_MON_MONC_H
#define TSR_MON_MONC_H

#include "mon/members.h"
#include "msg/msgr.h"

struct tsr_monc;
struct tsr_conf;
struct tsr_loop;

/* What a client of the monitors takes from a resolved configuration: the
 * monitors (mon_members; errors name where it was set) and the messenger
 * settings (ms_*, fsid).  0, or a negative errno with the reason. */
TSR_API int tsr_monc_conf(struct tsr_conf *conf, struct tsr_mon_members *members,
			  struct tsr_msgr_opts *opts, char *err, size_t errlen);

/* A client on msgr and loop (both borrowed: they outlive it).  Its
 * connections carry the messenger's identity and key (target names each
 * monitor, auth/auth.h). */
TSR_API int tsr_monc_create(struct tsr_msgr *msgr, struct tsr_loop *loop,
			    const struct tsr_mon_members *members,
			    struct tsr_monc **out, char *err, size_t errlen);
/* Commands still pending are dropped: their done callbacks do not run.
 * Not from a done callback.  What the messenger still has to hand over is
 * released on the loop (memory goes once the loop has run its posts, or
 * at tsr_loop_destroy). */
TSR_API void tsr_monc_destroy(struct tsr_monc *c);

/* The answer to a command: status as for tsr_monc_command(), text its JSON
 * result or its one-line error (never NULL; valid during the call). */
typedef void (*tsr_monc_done)(void *arg, int status, const char *text);

/* Send argv (copied) to the cluster; done(arg, ...) runs once, on the
 * loop, later — never from within this call.  *id (may be NULL) names the
 * command for tsr_monc_cancel.  The words go as they are (the monitors
 * judge them).  0, or a negative errno (-EINVAL: no words or no done;
 * -ESHUTDOWN: destroyed; -ENOMEM) and done never runs. */
TSR_API int tsr_monc_send(struct tsr_monc *c, int argc, char *const *argv,
			  uint64_t timeout_ms, tsr_monc_done done, void *arg,
			  uint64_t *id);
/* A typed message (monmsg.h: a daemon's boot or beacon) instead of words:
 * enc(e, client, tid, body) encodes it with this client's id and the tid
 * the client gives it (again on every try: the same tid), and the
 * monitors answer it with MON_CMD_REPLY, as a command.  -EINVAL for a type
 * not in the registry or a body enc refuses. */
struct tsr_enc;
typedef int (*tsr_monc_encode)(struct tsr_enc *e, uint64_t client, uint64_t tid,
			       const void *body);
TSR_API int tsr_monc_send_typed(struct tsr_monc *c, uint32_t type, tsr_monc_encode enc,
				const void *body, uint64_t timeout_ms,
				tsr_monc_done done, void *arg, uint64_t *id);
/* Forget a command: its done will not run.  -ENOENT if it already ran. */
TSR_API int tsr_monc_cancel(struct tsr_monc *c, uint64_t id);

/* The blocking form, from any thread but the loop's (-EDEADLK there).
 * Returns the command's status (0 or a negative errno) with *text
 * (malloc'd) its JSON result or its one-line error (-EINVAL: its words
 * are wrong, a usage error; state.h).  When no monitor able to serve it
 * answered within timeout_ms, *text says what each monitor answered last,
 * and the status tells what may have become of a change:
 *   -ETIMEDOUT    no monitor had it, or each that had it said it did not
 *                 take it (not the leader, no quorum): it was not applied;
 *   -EINPROGRESS  some monitor had it and did not say what became of it
 *                 (a leader logged it and no majority confirmed it, or
 *                 the session ended, or went silent, after the command
 *                 was sent): it may or may not have been applied, and
 *                 may still be.  Only the maps can tell. */
TSR_API int tsr_monc_command(struct tsr_monc *c, int argc, char **argv,
			     uint64_t timeout_ms, char **text);

#endif
