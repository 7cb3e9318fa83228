/* monmsg.h — messages to and between monitors, and their encodings.
 *
 *   MON_RAFT       monitor -> monitor: one Raft message
 *       envelope v1 { u32 members_fp, u32 type, u64 from, to, term,
 *                     log_term, index, commit, u8 reject, u64 match, ctx,
 *                     u32 n, n x { u64 term, u64 index, bytes data } }
 *   MON_CMD        anyone -> a monitor: a command, as words
 *       envelope v1 { u64 client, u64 tid, u32 argc, argc x string }
 *   MON_CMD_REPLY  the monitor's answer
 *       envelope v1 { u64 tid, i32 status, string text, string leader }
 *
 * A command's (client, tid) names it across retries: a client that sends
 * the same change again (its monitor died, or lost the leadership before
 * answering) gets the first result, and the change is applied once.
 * status is 0 or a negative errno; text is the JSON result, or on error
 * one line saying why.  leader, when set, is the address of the monitor
 * that leads (status -EAGAIN: ask it instead).
 *
 * Decoding treats the input as hostile: counts and lengths are bounded
 * (TSR_MONMSG_*) before anything is allocated.
 */
#ifndef TSR_MON_MONMSG_H
#define TSR_MON_MONMSG_H

#include "msg/frame.h"
#include "raft/raft.h"

#include <tessera/encoding.h>

enum {
	TSR_MSG_MON_RAFT = TSR_MSG_USER + 0,
	TSR_MSG_MON_CMD = TSR_MSG_USER + 1,
	TSR_MSG_MON_CMD_REPLY = TSR_MSG_USER + 2,
};

#define TSR_MONMSG_MAX_ENTRIES 4096
#define TSR_MONMSG_MAX_ENTRY (1u << 20)
#define TSR_MONMSG_MAX_ARGS 64
#define TSR_MONMSG_MAX_ARG 1024
#define TSR_MONMSG_MAX_TEXT (1u << 20)

/* Raft messages.  Decoded entries borrow from the input buffer; the array
 * is malloc'd (tsr_monmsg_raft_free). */
TSR_API int tsr_monmsg_raft_encode(struct tsr_enc *e, uint32_t fp,
				   const struct tsr_raft_msg *m);
TSR_API int tsr_monmsg_raft_decode(const void *buf, size_t len, uint32_t *fp,
				   struct tsr_raft_msg *m, char *err,
				   size_t errlen);
TSR_API void tsr_monmsg_raft_free(struct tsr_raft_msg *m);

struct tsr_mon_cmd {
	uint64_t client, tid;
	uint32_t argc;
	char **argv;           /* argc strings, NULL-terminated array */
};

TSR_API int tsr_monmsg_cmd_encode(struct tsr_enc *e, const struct tsr_mon_cmd *c);
/* argv and its strings are malloc'd: tsr_monmsg_cmd_free. */
TSR_API int tsr_monmsg_cmd_decode(const void *buf, size_t len,
				  struct tsr_mon_cmd *c, char *err,
				  size_t errlen);
TSR_API void tsr_monmsg_cmd_free(struct tsr_mon_cmd *c);

struct tsr_mon_reply {
	uint64_t tid;
	int32_t status;
	char *text;            /* malloc'd when decoded */
	char leader[64];
};

TSR_API int tsr_monmsg_reply_encode(struct tsr_enc *e, const struct tsr_mon_reply *r);
TSR_API int tsr_monmsg_reply_decode(const void *buf, size_t len,
				    struct tsr_mon_reply *r, char *err,
				    size_t errlen);

#endif
