/* loop.h — a small epoll event loop: file descriptors, timers, wake-ups.
 *
 * One thread runs tsr_loop_run(); callbacks run on that thread, one at a
 * time.  tsr_loop_stop(), tsr_loop_post() and the timer functions may be
 * called from any thread (and stop from a signal handler): they wake the
 * loop through an eventfd.  fd registration is for the loop thread (or
 * before run()).
 *
 * Timers are one-shot and kept in a binary heap ordered by deadline on the
 * monotonic clock; a cancelled timer never fires, even when it was already
 * due in the same iteration.  Adding and cancelling are O(log n) in the
 * number of pending timers: an id names the timer's slot, which knows the
 * timer's place in the heap.  Ids are never 0 and are not reused while the
 * loop lives (a slot would have to be reused 2^32 times).
 *
 * tsr_loop_post() queues fn(arg) to run on the loop thread; posts run in the
 * order they were queued (so per posting thread, in that thread's order),
 * each exactly once, at the top of a loop pass, before timers and fds.  A
 * post made by a post callback runs on the next pass.  Each post costs one
 * small allocation, freed once fn has run.  Posts still pending when
 * tsr_loop_destroy() is called are RUN by destroy, on the destroying thread,
 * in order (with any they post), so an arg that owns memory is always handed
 * back; no thread may post once destroy has begun.
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
/* Does not close registered fds.  Runs the posts still pending (see above);
 * pending timers are dropped without running. */
TSR_API void tsr_loop_destroy(struct tsr_loop *loop);

TSR_API int tsr_loop_fd_add(struct tsr_loop *loop, int fd, uint32_t events,
			    tsr_fd_cb cb, void *arg);
TSR_API int tsr_loop_fd_mod(struct tsr_loop *loop, int fd, uint32_t events);
/* Safe from inside any callback, including the fd's own. */
TSR_API int tsr_loop_fd_del(struct tsr_loop *loop, int fd);

TSR_API int tsr_loop_timer_add(struct tsr_loop *loop, uint64_t delay_ns,
			       void (*cb)(void *arg), void *arg,
			       uint64_t *id);
/* -ENOENT if the timer already fired or was cancelled (or id is 0 or
 * unknown).  O(log n). */
TSR_API int tsr_loop_timer_cancel(struct tsr_loop *loop, uint64_t id);

/* Any thread: run fn(arg) on the loop thread, after earlier posts.  0, or
 * -EINVAL (fn is NULL), -ENOMEM (the queue node could not be allocated; fn
 * will not run). */
TSR_API int tsr_loop_post(struct tsr_loop *loop, void (*fn)(void *arg),
			  void *arg);

/* Run until tsr_loop_stop(); returns 0, or a negative errno if epoll
 * fails. */
TSR_API int tsr_loop_run(struct tsr_loop *loop);
TSR_API void tsr_loop_stop(struct tsr_loop *loop);

/* The loop whose tsr_loop_run() (or tsr_loop_destroy(), while it runs the
 * pending posts) the calling thread is in, or NULL.  Modules built on a
 * loop use it to refuse a blocking call from the thread that would have to
 * answer it, and the messenger to never wait on a loop's thread. */
TSR_API struct tsr_loop *tsr_loop_current(void);

/* A loop run by a thread of its own, for programs that block on what the
 * loop does (the CLI, tests); daemons run theirs on the main thread.
 * stop stops the loop and joins the thread (not from that thread); the
 * loop is the caller's to destroy after. */
struct tsr_loop_thread;
TSR_API int tsr_loop_thread_start(struct tsr_loop *loop,
				  struct tsr_loop_thread **out);
TSR_API void tsr_loop_thread_stop(struct tsr_loop_thread *t);

#endif
