#include "util/pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/banned.h"

struct pool {
	void (*fn)(void *ud, size_t i);
	void *ud;
	size_t n, next;
	pthread_mutex_t lock; /* next */
};

/* A worker: takes the next item until none is left. */
static void *worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		i = p->next < p->n ? p->next++ : p->n;
		pthread_mutex_unlock(&p->lock);
		if (i == p->n)
			return NULL;
		p->fn(p->ud, i);
	}
}

void vx_pool_run(size_t n, size_t nthreads, void (*fn)(void *ud, size_t i), void *ud)
{
	struct pool p = { fn, ud, n, 0, PTHREAD_MUTEX_INITIALIZER };
	size_t helpers = nthreads < n ? nthreads : n, started = 0;
	pthread_t *th;

	if (n == 0)
		return;
	helpers = helpers > 1 ? helpers - 1 : 0; /* the caller is a worker too */
	th = helpers ? calloc(helpers, sizeof(*th)) : NULL;
	while (th && started < helpers && pthread_create(&th[started], NULL, worker, &p) == 0)
		started++;
	worker(&p);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&p.lock);
}
