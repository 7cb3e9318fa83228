/* loop.h — a small epoll event loop: file descriptors, timers, wake-ups.
 *
 * One thread runs tsr_loop_run(); callbacks run on that thread, one at a
 * time.  tsr_loop_stop() and the timer functions may be called from any
 * thread (and stop from a signal handler): they wake the loop through an
 * eventfd.  fd registration is for the loop thread (or before run()).
 *
 * Timers are one-shot and kept in a binary heap ordered by deadline on the
 * monotonic clock; a cancelled timer never fires, even when it was already
 * due in the same iteration.
 */
#ifndef TSR_LOOP_H
#define TSR_LOOP_H

#include <tessera/common.h>

struct tsr_loop;

#define TSR_EV_READ 0x1u
#define TSR_EV_WRITE 0x2u
#define TSR_EV_ERROR 0x4u /* reported only: hang-up or error on the fd */

typedef void (*tsr_fd_cb)(struct tsr_loop *loop, int fd, uint32_t events,
			  void *arg);

TSR_API int tsr_loop_create(struct tsr_loop **out);
/* Does not close registered fds. */
TSR_API void tsr_loop_destroy(struct tsr_loop *loop);

TSR_API int tsr_loop_fd_add(struct tsr_loop *loop, int fd, uint32_t events,
			    tsr_fd_cb cb, void *arg);
TSR_API int tsr_loop_fd_mod(struct tsr_loop *loop, int fd, uint32_t events);
/* Safe from inside any callback, including the fd's own. */
TSR_API int tsr_loop_fd_del(struct tsr_loop *loop, int fd);

TSR_API int tsr_loop_timer_add(struct tsr_loop *loop, uint64_t delay_ns,
			       void (*cb)(void *arg), void *arg,
			       uint64_t *id);
/* -ENOENT if the timer already fired or was cancelled. */
TSR_API int tsr_loop_timer_cancel(struct tsr_loop *loop, uint64_t id);

/* Run until tsr_loop_stop(); returns 0, or a negative errno if epoll
 * fails. */
TSR_API int tsr_loop_run(struct tsr_loop *loop);
TSR_API void tsr_loop_stop(struct tsr_loop *loop);

#endif
