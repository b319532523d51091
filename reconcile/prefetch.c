#include "reconcile/prefetch.h"

#include <pthread.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/stack.h"
#include "util/buf.h"
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

struct prefetch {
	struct provider reader;       /* first: the provider handed out */
	struct provider *real;        /* borrowed */
	const struct stack *st;       /* borrowed */
	pthread_t thread;
	int running;                  /* the thread is to be joined */
	int recording;                /* the thread's calls are stored, not answered */
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

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A new answer for a call being recorded, or NULL (out of memory: noted). */
static struct pf_answer *answer_new(struct prefetch *pf, enum pf_op op, const char *project,
				    const char *where, const char *stack)
{
	struct pf_answer *a = calloc(1, sizeof(*a));

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
	if (!a) {
		pthread_mutex_lock(&pf->lock);
		pf->oom = 1;
		pthread_mutex_unlock(&pf->lock);
	}
	return a;
}

static void answer_keep(struct prefetch *pf, struct pf_answer *a)
{
	struct pf_answer **arr;

	pthread_mutex_lock(&pf->lock);
	arr = realloc(pf->answers, (pf->n + 1) * sizeof(*arr));
	if (arr) {
		pf->answers = arr;
		pf->answers[pf->n++] = a;
		a = NULL;
	} else {
		pf->oom = 1;
	}
	pthread_mutex_unlock(&pf->lock);
	answer_free(a);
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
		    same(a->project, project) && same(a->where, where) &&
		    same(a->stack, stack)) {
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

/*
 * The list calls. While recording (on the prefetch's thread) the real
 * call's result is stored and the caller, a refresh whose store is thrown
 * away, gets nothing; afterwards a stored result is handed over once.
 */
static int pf_list_jobs(struct provider *p, const char *project, const char *region, const char *stack,
			struct live_jobs *out, struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (pf->recording) {
		if ((a = answer_new(pf, PF_JOBS, project, region, stack))) {
			a->rc = pf->real->list_jobs(pf->real, project, region, stack, &a->jobs, &a->err);
			answer_keep(pf, a);
		}
		return 0;
	}
	if (!(a = answer_take(pf, PF_JOBS, project, region, stack)))
		return pf->real->list_jobs(pf->real, project, region, stack, out, err);
	*out = a->jobs;
	memset(&a->jobs, 0, sizeof(a->jobs));
	return answer_rc(a, err);
}

static int pf_list_reservations(struct provider *p, const char *project, const char *zone,
				struct live_reservations *out, struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (pf->recording) {
		if ((a = answer_new(pf, PF_RESERVATIONS, project, zone, NULL))) {
			a->rc = pf->real->list_reservations(pf->real, project, zone, &a->reservations, &a->err);
			answer_keep(pf, a);
		}
		return 0;
	}
	if (!(a = answer_take(pf, PF_RESERVATIONS, project, zone, NULL)))
		return pf->real->list_reservations(pf->real, project, zone, out, err);
	*out = a->reservations;
	memset(&a->reservations, 0, sizeof(a->reservations));
	return answer_rc(a, err);
}

static int pf_list_quotas(struct provider *p, const char *project, struct live_quotas *out,
			  struct vx_err *err)
{
	struct prefetch *pf = pf_of(p);
	struct pf_answer *a;

	if (pf->recording) {
		if ((a = answer_new(pf, PF_QUOTAS, project, NULL, NULL))) {
			a->rc = pf->real->list_quotas(pf->real, project, &a->quotas, &a->err);
			answer_keep(pf, a);
		}
		return 0;
	}
	if (!(a = answer_take(pf, PF_QUOTAS, project, NULL, NULL)))
		return pf->real->list_quotas(pf->real, project, out, err);
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
		return pf->real->list_quota_infos(pf->real, project, service, out, err);
	rc = answer_rc(a, err);
	for (size_t i = 0; i < a->limits.n && rc == 0; i++)
		if (live_quota_limits_push(out, &a->limits.items[i]) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	return rc;
}

/* Everything else goes to the real provider. */
static int pf_create_job(struct provider *p, const struct provider_job_request *req, struct live_job *out,
			 struct vx_err *err)
{
	return pf_of(p)->real->create_job(pf_of(p)->real, req, out, err);
}

static int pf_cancel_job(struct provider *p, const char *name, const struct provider_fence *fence,
			 struct vx_err *err)
{
	return pf_of(p)->real->cancel_job(pf_of(p)->real, name, fence, err);
}

static int pf_create_reservation(struct provider *p, const struct provider_reservation_request *req,
				 struct live_reservation *out, struct vx_err *err)
{
	return pf_of(p)->real->create_reservation(pf_of(p)->real, req, out, err);
}

static int pf_resize_reservation(struct provider *p, const char *project, const char *zone,
				 const char *name, int64_t count, const struct provider_fence *fence,
				 struct vx_err *err)
{
	return pf_of(p)->real->resize_reservation(pf_of(p)->real, project, zone, name, count, fence, err);
}

static int pf_delete_reservation(struct provider *p, const char *project, const char *zone,
				 const char *name, const struct provider_fence *fence, struct vx_err *err)
{
	return pf_of(p)->real->delete_reservation(pf_of(p)->real, project, zone, name, fence, err);
}

static int pf_create_quota(struct provider *p, const struct provider_quota_request *req,
			   struct live_quota *out, struct vx_err *err)
{
	return pf_of(p)->real->create_quota(pf_of(p)->real, req, out, err);
}

static int pf_update_quota(struct provider *p, const struct provider_quota_request *req,
			   struct live_quota *out, struct vx_err *err)
{
	return pf_of(p)->real->update_quota(pf_of(p)->real, req, out, err);
}

static int pf_get_job(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		      struct vx_err *err)
{
	return pf_of(p)->real->get_job(pf_of(p)->real, name, out, spec_json, err);
}

/* Never called: prefetch_free() frees the prefetch, not its reader. */
static void pf_free(struct provider *p)
{
	(void)p;
}

/* The quota limits the capacity check reads (cmd/planning.c), ahead. */
static void record_quota_infos(struct prefetch *pf, const char *service)
{
	struct pf_answer *a = answer_new(pf, PF_QUOTA_INFOS, pf->st->project, service, NULL);

	if (a) {
		a->rc = pf->real->list_quota_infos(pf->real, pf->st->project, service, &a->limits, &a->err);
		answer_keep(pf, a);
	}
}

static void *prefetch_main(void *arg)
{
	struct prefetch *pf = arg;
	struct live_store scratch;
	struct vx_err e = VX_ERR_INIT;

	memset(&scratch, 0, sizeof(scratch));
	/* Without a state, each kind lists exactly the places declared. While
	 * recording every list call succeeds (its own result is kept), so an
	 * error here is only the scratch store's: nothing to act on. */
	if (kind_refresh_all(&scratch, &pf->reader, pf->st, NULL, &e) < 0)
		vx_err_release(&e);
	live_store_release(&scratch);
	vx_err_release(&e);
	if (pf->real->list_quota_infos && capacity_wanted(pf->st)) {
		record_quota_infos(pf, "aiplatform.googleapis.com");
		if (pf->st->nreservations)
			record_quota_infos(pf, "compute.googleapis.com");
	}
	/* The token exchange may have signed here (RSA takes a thread-local
	 * random generator): freed now, as OpenSSL asks of threads it did not
	 * start (LeakSanitizer saw it left otherwise). */
	OPENSSL_thread_stop();
	return NULL;
}

int prefetch_start(struct prefetch **out, struct provider *real, const struct stack *st,
		   struct vx_err *err)
{
	struct prefetch *pf = calloc(1, sizeof(*pf));

	*out = NULL;
	if (!pf)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* An operation the real provider lacks stays NULL here too. */
#define PF_OP(op) pf->reader.op = real->op ? pf_##op : NULL
	PF_OP(list_jobs);
	PF_OP(create_job);
	PF_OP(cancel_job);
	PF_OP(list_reservations);
	PF_OP(create_reservation);
	PF_OP(resize_reservation);
	PF_OP(delete_reservation);
	PF_OP(list_quotas);
	PF_OP(create_quota);
	PF_OP(update_quota);
	PF_OP(list_quota_infos);
	PF_OP(get_job);
#undef PF_OP
	pf->reader.free = pf_free;
	pf->real = real;
	pf->st = st;
	pf->recording = 1;
	pthread_mutex_init(&pf->lock, NULL);
	if (pthread_create(&pf->thread, NULL, prefetch_main, pf) != 0) {
		pthread_mutex_destroy(&pf->lock);
		free(pf);
		return vx_err_set(err, VX_EIO, "prefetch: no thread");
	}
	pf->running = 1;
	*out = pf;
	return 0;
}

static void prefetch_join(struct prefetch *pf)
{
	if (pf->running) {
		pthread_join(pf->thread, NULL);
		pf->running = 0;
	}
	pf->recording = 0;
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
	for (size_t i = 0; i < pf->n; i++)
		answer_free(pf->answers[i]);
	free(pf->answers);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}
