/* monc.h — a monitor client: send a command to the monitor cluster and
 * wait for the answer.
 *
 * The client tries the monitors of mon_members in turn, starting at a
 * random one, and follows a "the leader is at ADDR" answer at once.  A
 * monitor that does not answer within a try's time (or refuses the
 * connection) is passed over; the command is sent again, with the same
 * (client, tid), so a change is applied once however often it is sent.
 * After the deadline the error names what each monitor said last.
 */
#ifndef TSR_MON_MONC_H
#define TSR_MON_MONC_H

#include "mon/members.h"
#include "msg/msgr.h"

struct tsr_monc;
struct tsr_conf;

/* What a client of the monitors takes from a resolved configuration: the
 * monitors (mon_members; errors name where it was set) and the messenger
 * settings (ms_*, fsid).  0, or a negative errno with the reason. */
TSR_API int tsr_monc_conf(struct tsr_conf *conf, struct tsr_mon_members *members,
			  struct tsr_msgr_opts *opts, char *err, size_t errlen);

/* opts: fsid and the ms_* settings (the entity and bind are set here). */
TSR_API int tsr_monc_create(const struct tsr_mon_members *members,
			    const struct tsr_msgr_opts *opts,
			    struct tsr_monc **out, char *err, size_t errlen);
TSR_API void tsr_monc_destroy(struct tsr_monc *c);

/* Run argv on the cluster.  Returns the command's status (0 or a negative
 * errno) with *text (malloc'd) its JSON result or its one-line error
 * (-EINVAL: its words are wrong, a usage error; state.h).  When no
 * monitor able to serve it answered within timeout_ms, *text says what
 * each monitor answered last, and the status tells what may have become
 * of a change:
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
