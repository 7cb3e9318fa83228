/* workq.c — a worker thread that runs posted work in order (workq.h). */
#include "event/workq.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct item {
	struct item *next;
	void (*fn)(void *);
	void *arg;
};

struct tsr_workq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct item *head, **tail;
	size_t pending;              /* posted, not finished */
	int sleeping;                /* the worker waits on cv */
	int busy;                    /* an item runs (worker or in place) */
	atomic_int posters;          /* in tsr_workq_post or running in
				      * place (destroy waits) */
	int stopping;
	pthread_t thread;
};

/* The worker takes everything queued at once and runs it without the
 * lock, so posters and the worker meet on the mutex once a batch, not
 * twice an item (each meeting on a contended mutex is a futex call and
 * often a context switch). */
static void *
run(void *arg)
{
	struct tsr_workq *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct item *batch = q->head;
		size_t n = 0;

		if (batch == NULL || q->busy) {
			/* (one running in place: it wakes us when done) */
			if (batch == NULL && !q->busy && q->stopping)
				break;
			q->sleeping = 1;
			pthread_cond_wait(&q->cv, &q->mu);
			q->sleeping = 0;
			continue;
		}
		q->head = NULL;
		q->tail = &q->head;
		q->busy = 1;
		pthread_mutex_unlock(&q->mu);
		while (batch != NULL) {
			struct item *it = batch;
			batch = it->next;
			it->fn(it->arg);
			free(it);
			n++;
		}
		pthread_mutex_lock(&q->mu);
		q->pending -= n;
		q->busy = 0;
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int
tsr_workq_create(const char *name, struct tsr_workq **out)
{
	struct tsr_workq *q = calloc(1, sizeof(*q));
	char n16[16];
	int rc;

	*out = NULL;
	if (q == NULL)
		return -ENOMEM;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->tail = &q->head;
	if ((rc = pthread_create(&q->thread, NULL, run, q)) != 0) {
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
		free(q);
		return -rc;
	}
	if (name) {
		size_t n = strlen(name) < sizeof(n16) - 1 ? strlen(name) : sizeof(n16) - 1;
		memcpy(n16, name, n);
		n16[n] = '\0';
		pthread_setname_np(q->thread, n16);
	}
	*out = q;
	return 0;
}

int
tsr_workq_post(struct tsr_workq *q, void (*fn)(void *arg), void *arg)
{
	struct item *it = malloc(sizeof(*it));
	int rc = 0, wake = 0;

	if (it == NULL)
		return -ENOMEM;
	it->next = NULL;
	it->fn = fn;
	it->arg = arg;
	atomic_fetch_add(&q->posters, 1);
	pthread_mutex_lock(&q->mu);
	if (q->stopping) {
		rc = -ESHUTDOWN;
	} else {
		*q->tail = it;
		q->tail = &it->next;
		q->pending++;
		/* only a sleeping worker needs the signal, and once: it is
		 * sent after the unlock so that the worker does not wake
		 * into a mutex still held */
		wake = q->sleeping && !q->busy; /* (busy: leave wakes it) */
		if (wake)
			q->sleeping = 0;
	}
	pthread_mutex_unlock(&q->mu);
	if (wake)
		pthread_cond_signal(&q->cv);
	atomic_fetch_sub(&q->posters, 1); /* q may go after this */
	if (rc < 0)
		free(it);
	return rc;
}

int
tsr_workq_enter(struct tsr_workq *q)
{
	int ok;

	atomic_fetch_add(&q->posters, 1);
	pthread_mutex_lock(&q->mu);
	ok = !q->stopping && q->head == NULL && !q->busy;
	if (ok) {
		q->busy = 1;
		q->pending++;
	}
	pthread_mutex_unlock(&q->mu);
	if (!ok)
		atomic_fetch_sub(&q->posters, 1);
	return ok;
}

void
tsr_workq_leave(struct tsr_workq *q)
{
	(void)tsr_workq_leave_first(q, NULL, NULL);
}

int
tsr_workq_leave_first(struct tsr_workq *q, void (*fn)(void *arg), void *arg)
{
	struct item *it = NULL;
	int wake, rc = 0;

	if (fn != NULL && (it = malloc(sizeof(*it))) == NULL)
		rc = -ENOMEM;
	pthread_mutex_lock(&q->mu);
	if (it != NULL && q->stopping) {
		rc = -ESHUTDOWN;
	} else if (it != NULL) {
		/* ahead of what was posted while the caller ran in place */
		it->fn = fn;
		it->arg = arg;
		it->next = q->head;
		if (q->head == NULL)
			q->tail = &it->next;
		q->head = it;
		q->pending++;
		it = NULL;
	}
	q->busy = 0;
	q->pending--;
	/* what was posted meanwhile, or a destroy waiting to finish */
	wake = q->sleeping && (q->head != NULL || q->stopping);
	if (wake)
		q->sleeping = 0;
	pthread_mutex_unlock(&q->mu);
	if (wake)
		pthread_cond_signal(&q->cv);
	atomic_fetch_sub(&q->posters, 1); /* q may go after this */
	free(it); /* (refused) */
	return rc;
}

size_t
tsr_workq_pending(struct tsr_workq *q)
{
	size_t n;

	pthread_mutex_lock(&q->mu);
	n = q->pending;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void
tsr_workq_destroy(struct tsr_workq *q)
{
	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	q->stopping = 1;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	/* a post racing destroy may still be unlocking or signalling (its
	 * item ran, or it was refused) */
	while (atomic_load(&q->posters) > 0)
		sched_yield();
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}
