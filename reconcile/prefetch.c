#include "reconcile/prefetch.h"

#include <pthread.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* Which list call an answer is for. */
enum pf_op { PF_JOBS, PF_RESERVATIONS, PF_QUOTAS, PF_QUOTA_INFOS };

/* One list call made ahead, and its result until the reader hands it over. */
struct pf_answer {
	enum pf_op op;
	char *project;
	char *where;  /* region (jobs), zone (reservations), service (quota infos); NULL: quotas */
	char *stack;  /* jobs only */
	int rc;
	struct vx_err err;
	struct live_jobs jobs;
	struct live_reservations reservations;
	struct live_quotas quotas;
	struct live_quota_limits limits;
	int taken;
};

#define PF_THREADS 2

/* One thread of lists: the refresh of one stack, run against a recorder. */
struct pf_thread {
	struct provider rec;          /* first: the provider that thread's refresh calls */
	struct provider_table rec_tables[3]; /* rec's: the lists real has */
	struct prefetch *pf;
	const struct stack *st;       /* borrowed; NULL: the one list below */
	char *project, *region, *stack; /* owned: the jobs to list when st is NULL */
	pthread_t thread;
	int running;                  /* to be joined */
};

/*
 * At most this many lists named ahead (prefetch_add_jobs) run on threads of
 * their own at once; past it, one runs on the thread that named it.
 */
#define PF_CALLS 32

/* One list call on its own thread. */
struct pf_call {
	struct prefetch *pf;
	struct pf_answer *a;
	pthread_t thread;
};

struct prefetch {
	/* first: the provider handed out, wrapping real's (prefetch_new) */
	struct provider reader;
	struct provider *real;        /* borrowed */
	struct pf_thread threads[PF_THREADS];
	size_t nthreads;
	struct pf_call calls[PF_CALLS]; /* prefetch_add_jobs's, under lock */
	size_t ncalls;
	int discarded;
	int refreshed;                /* the refresh took its lists: the rest is stale */
	pthread_mutex_t lock;         /* answers, n */
	struct pf_answer **answers;
	size_t n;
	int oom;                      /* an answer could not be stored: forward everything */
};

static struct prefetch *pf_of(struct provider *p)
{
	return (struct prefetch *)p;
}

static void answer_free(struct pf_answer *a)
{
	if (!a)
		return;
	free(a->project);
	free(a->where);
	free(a->stack);
	vx_err_release(&a->err);
	live_jobs_release(&a->jobs);
	live_reservations_release(&a->reservations);
	live_quotas_release(&a->quotas);
	live_quota_limits_release(&a->limits);
	free(a);
}

/*
 * A new answer for a call about to be recorded, kept at once so that
 * another thread asking for the same call skips it; NULL when the call
 * was already claimed (or memory ran out: noted, and everything is then
 * forwarded). The claiming thread alone fills the answer; readers see it
 * only after the threads are joined.
 */
static struct pf_answer *answer_claim(struct prefetch *pf, enum pf_op op, const char *project,
				      const char *where, const char *stack)
{
	struct pf_answer *a = calloc(1, sizeof(*a)), **arr;

	if (a) {
		a->op = op;
		a->project = vx_strdup(project);
		a->where = where ? vx_strdup(where) : NULL;
		a->stack = stack ? vx_strdup(stack) : NULL;
		if (!a->project || (where && !a->where) || (stack && !a->stack)) {
			answer_free(a);
			a = NULL;
		}
	}
	pthread_mutex_lock(&pf->lock);
	for (size_t i = 0; a && i < pf->n; i++) {
		const struct pf_answer *o = pf->answers[i];

		if (o->op == op && vx_text_same(o->project, project) && vx_text_same(o->where, where) &&
		    vx_text_same(o->stack, stack)) {
			answer_free(a);
			a = NULL;
			pthread_mutex_unlock(&pf->lock);
			return NULL;
		}
	}
	arr = a ? realloc(pf->answers, (pf->n + 1) * sizeof(*arr)) : NULL;
	if (arr) {
		pf->answers = arr;
		pf->answers[pf->n++] = a;
	} else {
		answer_free(a);
		a = NULL;
		pf->oom = 1;
	}
	pthread_mutex_unlock(&pf->lock);
	return a;
}

/* The untaken answer for this call, now taken; NULL: make the call. */
static struct pf_answer *answer_take(struct prefetch *pf, enum pf_op op, const char *project,
				     const char *where, const char *stack)
{
	struct pf_answer *found = NULL;

	pthread_mutex_lock(&pf->lock);
	for (size_t i = 0; i < pf->n && !pf->discarded && !pf->oom; i++) {
		struct pf_answer *a = pf->answers[i];

		if (!a->taken && a->op == op && (op == PF_QUOTA_INFOS || !pf->refreshed) &&
		    vx_text_same(a->project, project) && vx_text_same(a->where, where) &&
		    vx_text_same(a->stack, stack)) {
			a->taken = 1;
			found = a;
			break;
		}
	}
	pthread_mutex_unlock(&pf->lock);
	return found;
}

/* An answer's error, as the call itself would have set it. */
static int answer_rc(struct pf_answer *a, struct vx_err *err)
{
	if (a->rc < 0)
		return vx_err_set(err, a->rc, "%s", vx_err_msg(&a->err));
	return 0;
}

/* The reader's list calls: a stored result is handed over once; any other call is made. */
static int pf_list_jobs(struct provider *p, const char *project, const char *region, const char *stack,
			struct live_jobs *out, struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (!(a = answer_take(pf, PF_JOBS, project, region, stack)))
		return provider_job_list(pf->real, project, region, stack, out, err);
	*out = a->jobs;
	memset(&a->jobs, 0, sizeof(a->jobs));
	return answer_rc(a, err);
}

static int pf_list_reservations(struct provider *p, const char *project, const char *zone,
				struct live_reservations *out, struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (!(a = answer_take(pf, PF_RESERVATIONS, project, zone, NULL)))
		return provider_reservation_list(pf->real, project, zone, out, err);
	*out = a->reservations;
	memset(&a->reservations, 0, sizeof(a->reservations));
	return answer_rc(a, err);
}

static int pf_list_quotas(struct provider *p, const char *project, struct live_quotas *out,
			  struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (!(a = answer_take(pf, PF_QUOTAS, project, NULL, NULL)))
		return provider_quota_list(pf->real, project, out, err);
	*out = a->quotas;
	memset(&a->quotas, 0, sizeof(a->quotas));
	return answer_rc(a, err);
}

/* Appends to *out, as the real call does. */
static int pf_list_quota_infos(struct provider *p, const char *project, const char *service,
			       struct live_quota_limits *out, struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a = answer_take(pf, PF_QUOTA_INFOS, project, service, NULL);
	int rc;

	if (!a)
		return provider_quota_list_infos(pf->real, project, service, out, err);
	rc = answer_rc(a, err);
	for (size_t i = 0; i < a->limits.n && rc == 0; i++)
		if (live_quota_limits_push(out, &a->limits.items[i]) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	return rc;
}

/* The reader's tables: only the lists it answers (the rest is real's). */
static const struct provider_job_ops pf_job_ops = { .list = pf_list_jobs };
static const struct provider_reservation_ops pf_reservation_ops = { .list = pf_list_reservations };
static const struct provider_quota_ops pf_quota_ops = { .list = pf_list_quotas, .list_infos = pf_list_quota_infos };
static const struct provider_table pf_tables[] = {
	{ &provider_kind_job, &pf_job_ops },
	{ &provider_kind_reservation, &pf_reservation_ops },
	{ &provider_kind_quota, &pf_quota_ops },
};

/* Never called: prefetch_free() frees the prefetch, not its reader. */
static void pf_free(struct provider *p)
{
	(void)p;
}

/*
 * The recorder's list calls, on a prefetch thread: the real call's result
 * is stored and the caller, a refresh whose store is thrown away, gets
 * nothing. A call another thread already made is not made again.
 */
static struct pf_thread *rec_of(struct provider *p)
{
	return (struct pf_thread *)p;
}

/* A list of jobs named ahead (prefetch_add_jobs), on its own thread: its result is kept in its answer. */
static void call_make(struct prefetch *pf, struct pf_answer *a)
{
	a->rc = provider_job_list(pf->real, a->project, a->where, a->stack, &a->jobs, &a->err);
}

static void *call_main(void *arg)
{
	struct pf_call *c = arg;

	call_make(c->pf, c->a);
	/* As prefetch_main: a token exchange may have signed on this thread. */
	OPENSSL_thread_stop();
	return NULL;
}

/*
 * Starts the call a claimed answer is for on a thread of its own, or makes
 * it here when PF_CALLS are running or no thread could be made. The answer
 * is read only after prefetch_join has joined every call.
 */
static void call_start(struct prefetch *pf, struct pf_answer *a)
{
	struct pf_call *c = NULL;

	pthread_mutex_lock(&pf->lock);
	if (pf->ncalls < PF_CALLS) {
		c = &pf->calls[pf->ncalls];
		c->pf = pf;
		c->a = a;
		if (pthread_create(&c->thread, NULL, call_main, c) == 0)
			pf->ncalls++;
		else
			c = NULL;
	}
	pthread_mutex_unlock(&pf->lock);
	if (!c)
		call_make(pf, a);
}

static int rec_list_jobs(struct provider *p, const char *project, const char *region, const char *stack,
			 struct live_jobs *out, struct vx_err *err)
{
	struct prefetch *pf = rec_of(p)->pf;
	struct pf_answer *a = answer_claim(pf, PF_JOBS, project, region, stack);

	(void)out;
	(void)err;
	if (a)
		a->rc = provider_job_list(pf->real, project, region, stack, &a->jobs, &a->err);
	return 0;
}

static int rec_list_reservations(struct provider *p, const char *project, const char *zone,
				 struct live_reservations *out, struct vx_err *err)
{
	struct prefetch *pf = rec_of(p)->pf;
	struct pf_answer *a = answer_claim(pf, PF_RESERVATIONS, project, zone, NULL);

	(void)out;
	(void)err;
	if (a)
		a->rc = provider_reservation_list(pf->real, project, zone, &a->reservations, &a->err);
	return 0;
}

static int rec_list_quotas(struct provider *p, const char *project, struct live_quotas *out,
			   struct vx_err *err)
{
	struct prefetch *pf = rec_of(p)->pf;
	struct pf_answer *a = answer_claim(pf, PF_QUOTAS, project, NULL, NULL);

	(void)out;
	(void)err;
	if (a)
		a->rc = provider_quota_list(pf->real, project, &a->quotas, &a->err);
	return 0;
}

static const struct provider_job_ops rec_job_ops = { .list = rec_list_jobs };
static const struct provider_reservation_ops rec_reservation_ops = { .list = rec_list_reservations };
static const struct provider_quota_ops rec_quota_ops = { .list = rec_list_quotas };

/* The quota limits the capacity check reads (workflow/planning.c), ahead. */
static void record_quota_infos(struct pf_thread *t, const char *service)
{
	struct prefetch *pf = t->pf;
	struct pf_answer *a = answer_claim(pf, PF_QUOTA_INFOS, t->st->project, service, NULL);

	if (a)
		a->rc = provider_quota_list_infos(pf->real, t->st->project, service, &a->limits, &a->err);
}

static void *prefetch_main(void *arg)
{
	struct pf_thread *t = arg;
	struct prefetch *pf = t->pf;
	struct live_store scratch;
	struct vx_err e = VX_ERR_INIT;

	memset(&scratch, 0, sizeof(scratch));
	if (!t->st) {
		struct live_jobs jobs;

		memset(&jobs, 0, sizeof(jobs));
		if (PROVIDER_HAS(pf->real, job, list))
			(void)rec_list_jobs(&t->rec, t->project, t->region, t->stack, &jobs, &e);
		OPENSSL_thread_stop();
		return NULL;
	}
	/* Without a state, each kind lists exactly the places declared. Every
	 * recorded call succeeds (its own result is kept), so an error here is
	 * only the scratch store's: nothing to act on. */
	if (kind_refresh_all(&scratch, &t->rec, t->st, NULL, &e) < 0)
		vx_err_release(&e);
	live_store_release(&scratch);
	vx_err_release(&e);
	if (PROVIDER_HAS(pf->real, quota, list_infos) && capacity_wanted(t->st)) {
		const char *services[KIND_MAX];
		size_t n = capacity_limit_services(t->st, services);

		for (size_t i = 0; i < n; i++)
			record_quota_infos(t, services[i]);
	}
	/* The token exchange may have signed here (RSA takes a thread-local
	 * random generator): freed now, as OpenSSL asks of threads it did not
	 * start (LeakSanitizer saw it left otherwise). */
	OPENSSL_thread_stop();
	return NULL;
}

static void thread_release(struct pf_thread *t)
{
	free(t->project);
	free(t->region);
	free(t->stack);
}

/* Starts thread nthreads on st, or on the one list (project, region, stack) when st is NULL. */
static int thread_start(struct prefetch *pf, const struct stack *st, const char *project,
			const char *region, const char *stack, struct vx_err *err)
{
	struct pf_thread *t;

	if (pf->nthreads == PF_THREADS)
		return vx_err_set(err, VX_EIO, "prefetch: no thread");
	t = &pf->threads[pf->nthreads];
	memset(t, 0, sizeof(*t));
	t->pf = pf;
	t->st = st;
	if (!st && (!(t->project = vx_strdup(project)) || !(t->region = vx_strdup(region)) ||
		    !(t->stack = vx_strdup(stack)))) {
		thread_release(t);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	/* Only the lists, and those real has: a refresh makes no other call.
	 * The recorder wraps nothing (no inner): it lacks every other operation. */
	if (PROVIDER_HAS(pf->real, job, list))
		t->rec_tables[t->rec.ntables++] = (struct provider_table){ &provider_kind_job, &rec_job_ops };
	if (PROVIDER_HAS(pf->real, reservation, list))
		t->rec_tables[t->rec.ntables++] = (struct provider_table){ &provider_kind_reservation, &rec_reservation_ops };
	if (PROVIDER_HAS(pf->real, quota, list))
		t->rec_tables[t->rec.ntables++] = (struct provider_table){ &provider_kind_quota, &rec_quota_ops };
	t->rec.tables = t->rec_tables;
	t->rec.free = pf_free;
	if (pthread_create(&t->thread, NULL, prefetch_main, t) != 0) {
		thread_release(t);
		return vx_err_set(err, VX_EIO, "prefetch: no thread");
	}
	t->running = 1;
	pf->nthreads++;
	return 0;
}

int prefetch_add(struct prefetch *pf, const struct stack *st, struct vx_err *err)
{
	return thread_start(pf, st, NULL, NULL, NULL, err);
}

void prefetch_add_jobs(struct prefetch *pf, const char *project, const char *region, const char *stack)
{
	struct pf_answer *a;

	if (!PROVIDER_HAS(pf->real, job, list))
		return;
	if ((a = answer_claim(pf, PF_JOBS, project, region, stack)) != NULL)
		call_start(pf, a);
}

/* The prefetch without its first thread; NULL when out of memory. */
static struct prefetch *prefetch_new(struct provider *real)
{
	struct prefetch *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	/* The lists answer from what was prefetched; every other operation is
	 * real's (the reader wraps it), and one real lacks the reader lacks. */
	pf->reader.inner = real;
	PROVIDER_SET_TABLES(&pf->reader, pf_tables);
	pf->reader.free = pf_free;
	pf->real = real;
	pthread_mutex_init(&pf->lock, NULL);
	return pf;
}

static int prefetch_begin(struct prefetch **out, struct provider *real, const struct stack *st,
			  const char *project, const char *region, const char *stack, struct vx_err *err)
{
	struct prefetch *pf = prefetch_new(real);
	int rc;

	*out = NULL;
	if (!pf)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((st || region) && (rc = thread_start(pf, st, project, region, stack, err)) < 0) {
		pthread_mutex_destroy(&pf->lock);
		free(pf);
		return rc;
	}
	*out = pf;
	return 0;
}

int prefetch_start_jobs(struct prefetch **out, struct provider *real, const char *project,
			const char *region, const char *stack, struct vx_err *err)
{
	return prefetch_begin(out, real, NULL, project, region, stack, err);
}

int prefetch_start(struct prefetch **out, struct provider *real, const struct stack *st,
		   struct vx_err *err)
{
	return prefetch_begin(out, real, st, NULL, NULL, NULL, err);
}

/* Joins the refresh threads, then the lists named ahead. */
static void prefetch_join(struct prefetch *pf)
{
	for (size_t i = 0; i < pf->nthreads; i++) {
		if (pf->threads[i].running) {
			pthread_join(pf->threads[i].thread, NULL);
			pf->threads[i].running = 0;
		}
	}
	pthread_mutex_lock(&pf->lock);
	for (size_t i = 0; i < pf->ncalls; i++)
		pthread_join(pf->calls[i].thread, NULL);
	pf->ncalls = 0;
	pthread_mutex_unlock(&pf->lock);
}

void prefetch_discard(struct prefetch *pf)
{
	pthread_mutex_lock(&pf->lock);
	pf->discarded = 1;
	pthread_mutex_unlock(&pf->lock);
}

void prefetch_refreshed(struct prefetch *pf)
{
	pthread_mutex_lock(&pf->lock);
	pf->refreshed = 1;
	pthread_mutex_unlock(&pf->lock);
}

struct provider *prefetch_reader(struct prefetch *pf)
{
	prefetch_join(pf);
	return &pf->reader;
}

void prefetch_free(struct prefetch *pf)
{
	if (!pf)
		return;
	prefetch_join(pf);
	for (size_t i = 0; i < pf->nthreads; i++)
		thread_release(&pf->threads[i]);
	for (size_t i = 0; i < pf->n; i++)
		answer_free(pf->answers[i]);
	free(pf->answers);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}
