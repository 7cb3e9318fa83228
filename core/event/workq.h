/* workq.h — a worker thread that runs posted work in order.
 *
 * Work that may block (a backend's submit or reads, backend.h) must not
 * run on an I/O thread or the daemon's loop; a daemon hands it to a
 * work queue instead: one thread, one FIFO of (fn, arg).  Items run one
 * at a time in the order posted, so work posted to one queue needs no
 * lock against itself (an OSD gives each PG one queue of a shard).
 *
 * Threads: post from any thread, a worker included (its own queue: the
 * item runs after the current one).  destroy runs what was posted before
 * it, then joins the thread; posting after destroy began is refused
 * (-ESHUTDOWN), so an item that posts a follow-up to its own queue while
 * the queue is being destroyed must handle that.
 *
 * Running in place.  A thread that would post and then have nothing to
 * do (a messenger's I/O thread handing over a request) may instead run
 * the work itself when the queue is idle: tsr_workq_enter says yes only
 * when nothing is queued or running, and until tsr_workq_leave the
 * worker starts nothing, so the queue's items still run one at a time in
 * the order they came.  That saves the hand-over (a wake-up and a
 * context switch each, often the larger part of a small request's cost).
 * What runs in place must not wait for the entering thread's own work
 * (an I/O thread's answers), and what it posts runs after it, as on the
 * worker.
 */
#ifndef TSR_EVENT_WORKQ_H
#define TSR_EVENT_WORKQ_H

#include <tessera/common.h>

#include <stddef.h>

struct tsr_workq;

/* Start a queue whose thread is named name (at most 15 bytes kept):
 * 0, or -errno. */
TSR_API int tsr_workq_create(const char *name, struct tsr_workq **out);
/* Run fn(arg) on the queue's thread after what was posted before:
 * 0, -ENOMEM, or -ESHUTDOWN once destroy began. */
TSR_API int tsr_workq_post(struct tsr_workq *q, void (*fn)(void *arg), void *arg);
/* 1 when the caller may run one item in place now (the queue idle: no
 * item queued or running, not being destroyed), then tsr_workq_leave
 * when it is done; 0 when it must post instead. */
TSR_API int tsr_workq_enter(struct tsr_workq *q);
TSR_API void tsr_workq_leave(struct tsr_workq *q);
/* Leave, with fn(arg) to run next on the queue's thread: ahead of what
 * was posted while the caller ran in place (work the in-place item
 * could not finish there, which must come before those).  0; or
 * -ENOMEM, -ESHUTDOWN (destroy began): fn(arg) will not run, and the
 * queue was left all the same. */
TSR_API int tsr_workq_leave_first(struct tsr_workq *q, void (*fn)(void *arg), void *arg);
/* Items posted and not yet finished (one running in place counts). */
TSR_API size_t tsr_workq_pending(struct tsr_workq *q);
/* Run what was posted, then stop the thread and free the queue. */
TSR_API void tsr_workq_destroy(struct tsr_workq *q);

#endif
