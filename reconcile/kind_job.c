/*
 * The job kind: Vertex AI CustomJobs. Its three-way diff is reconcile/plan.c
 * (pure, over plain structs, fed by planner.c), its executor the batched,
 * journaled creates of reconcile/apply.c; this file is its row of the kind
 * table.
 */
#include "reconcile/kind.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "reconcile/planner.h"
#include "util/banned.h"

/* How many places are listed at once: regions are few, and Google's read
 * quota is per region, so more threads would only wait. */
#define JOB_LIST_THREADS 8

/* One place's list, filled by whichever thread takes it. */
struct job_list_slot {
	const struct planner_place *place;
	struct live_jobs js;
	struct vx_err err;
	int rc;
};

struct job_list_pool {
	struct provider *p;
	const char *stack;
	struct job_list_slot *slots;
	size_t n;
	size_t next;          /* the next slot to take, under lock */
	pthread_mutex_t lock;
};

static void *job_list_worker(void *arg)
{
	struct job_list_pool *pool = arg;

	for (;;) {
		struct job_list_slot *s;

		pthread_mutex_lock(&pool->lock);
		s = pool->next < pool->n ? &pool->slots[pool->next++] : NULL;
		pthread_mutex_unlock(&pool->lock);
		if (!s)
			return NULL;
		s->rc = pool->p->list_jobs(pool->p, s->place->project, s->place->region, pool->stack,
					   &s->js, &s->err);
	}
}

/*
 * One filtered list per place a declared job or a current run lives in.
 * The places are listed side by side, on up to JOB_LIST_THREADS threads
 * (the calling thread is one; providers are thread-safe, provider.h), so
 * N regions cost the round trips of the largest, not their sum. The
 * results are merged in place order, so the live set and the plan header
 * are as if listed one after another; the first failure in place order
 * is the one reported, naming its place.
 */
static int job_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err)
{
	struct planner_place *places = NULL;
	struct job_list_pool pool;
	pthread_t th[JOB_LIST_THREADS];
	size_t n = 0, nth = 0;
	int rc = planner_places(st, state, &places, &n);

	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	memset(&pool, 0, sizeof(pool));
	pool.p = p;
	pool.stack = st->name;
	pool.n = n;
	pool.slots = calloc(n ? n : 1, sizeof(*pool.slots));
	if (!pool.slots) {
		free(places);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		pool.slots[i].place = &places[i];
	pthread_mutex_init(&pool.lock, NULL);
	/* Helpers for all places but the one this thread takes; none to be had: fewer. */
	while (nth + 1 < n && nth + 1 < JOB_LIST_THREADS &&
	       pthread_create(&th[nth], NULL, job_list_worker, &pool) == 0)
		nth++;
	(void)job_list_worker(&pool);
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&pool.lock);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct job_list_slot *s = &pool.slots[i];
		char *where = strcmp(places[i].project, st->project)
			? vx_asprintf("%s/%s", places[i].project, places[i].region)
			: vx_strdup(places[i].region);

		if (!where || live_store_note(out, 1, where) < 0) {
			free(where);
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		if (s->rc < 0) {
			rc = vx_err_wrap(&s->err, "reading live jobs in %s", where);
			rc = vx_err_set(err, rc, "%s", vx_err_msg(&s->err));
		}
		for (size_t k = 0; k < s->js.n && rc == 0; k++)
			if (live_jobs_push(&out->jobs, &s->js.items[k]) < 0)
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		free(where);
	}
	for (size_t i = 0; i < n; i++) {
		live_jobs_release(&pool.slots[i].js);
		vx_err_release(&pool.slots[i].err);
	}
	free(pool.slots);
	free(places);
	return rc;
}

static int job_apply(struct applier *a, int removals, struct vx_err *err)
{
	return removals ? apply_job_removals(a, err) : apply_job_changes(a, err);
}

const struct kind kind_job = {
	.name = "CustomJob",
	.prefix = "job",
	.phase = 2,
	.refresh = job_refresh,
	.plan = planner_plan_jobs,
	.apply = job_apply,
	.describe = NULL,
};
