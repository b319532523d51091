/* Unit tests for reconcile/prefetch.c: lists made ahead are handed over once, then forwarded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "reconcile/kind_job.h"
#include "reconcile/prefetch.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/stack.h"
#include "util/buf.h"

/* A provider that counts its list calls; "bad" regions fail. */
struct counting {
	struct provider base;
	pthread_mutex_t lock;
	int jobs_calls;
	int infos_calls;
	int serial;       /* stamped into each answer, so a test sees which call it got */
	/* The last cancel and quota create: the provider each was called on, and what it was asked. */
	struct provider *cancelled_on, *created_on;
	char cancelled[96];
	const struct provider_fence *cancelled_fence;
	const struct provider_quota_request *created;
	/* gate > 0: each list of jobs waits (at most 30 s) until gate of them
	 * have started; met stays 1 while each saw them all in flight */
	pthread_cond_t cond;
	int gate, inflight, met;
};

/* Waits, under c->lock, for c->gate lists in flight at once: 1 when they were. */
static int wait_gate(struct counting *c)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	c->inflight++;
	pthread_cond_broadcast(&c->cond);
	while (c->inflight < c->gate && rc == 0)
		rc = pthread_cond_timedwait(&c->cond, &c->lock, &until);
	return c->inflight >= c->gate;
}

static int c_list_jobs(struct provider *p, const char *project, const char *region, const char *stack,
		       struct live_jobs *out, struct vx_err *err)
{
	struct counting *c = (struct counting *)p;
	struct live_job j;
	char name[128];
	int n, rc;

	(void)stack;
	pthread_mutex_lock(&c->lock);
	c->jobs_calls++;
	n = ++c->serial;
	if (c->gate && !wait_gate(c))
		c->met = 0;
	pthread_mutex_unlock(&c->lock);
	if (!strcmp(region, "bad"))
		return vx_err_set(err, VX_EIO, "list in bad: boom");
	memset(&j, 0, sizeof(j));
	snprintf(name, sizeof(name), "projects/%s/locations/%s/customJobs/%d", project, region, n);
	j.name = name;
	rc = live_jobs_push(out, &j);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "oom") : 0;
}

static int c_list_infos(struct provider *p, const char *project, const char *service,
			struct live_quota_limits *out, struct vx_err *err)
{
	struct counting *c = (struct counting *)p;
	struct live_quota_limit l;

	(void)project;
	pthread_mutex_lock(&c->lock);
	c->infos_calls++;
	pthread_mutex_unlock(&c->lock);
	memset(&l, 0, sizeof(l));
	l.service = (char *)(uintptr_t)service;
	l.quota_id = (char *)(uintptr_t)"Q";
	l.location = (char *)(uintptr_t)"r1";
	l.value = 8;
	return live_quota_limits_push(out, &l) < 0 ? vx_err_set(err, VX_ENOMEM, "oom") : 0;
}

static int c_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
		    struct vx_err *err)
{
	struct counting *c = (struct counting *)p;

	c->cancelled_on = p;
	snprintf(c->cancelled, sizeof(c->cancelled), "%s", name);
	c->cancelled_fence = fence;
	return strstr(name, "/gone") ? vx_err_set(err, VX_ENOTFOUND, "vertex: %s: not found", name) : 0;
}

/* A quota create answers with the id asked for. */
static int c_create_quota(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
			  struct vx_err *err)
{
	struct counting *c = (struct counting *)p;

	c->created_on = p;
	c->created = req;
	memset(out, 0, sizeof(*out));
	return (out->id = vx_strdup(req->id)) ? 0 : vx_err_set(err, VX_ENOMEM, "oom");
}

/* Jobs and quota limits as the prefetch reads them, and two operations it never changes. */
static const struct provider_job_ops counting_jobs = { .list = c_list_jobs, .cancel = c_cancel };
static const struct provider_quota_ops counting_quotas = { .create = c_create_quota, .list_infos = c_list_infos };
static const struct provider_table counting_tables[] = {
	{ &provider_kind_job, &counting_jobs },
	{ &provider_kind_quota, &counting_quotas },
};

struct fixture {
	struct counting prov;
	struct stack st;
	struct stack_job jobs[3];
	struct spec_pool pool;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const char *const regions[3] = { "r1", "r2", "bad" };

	pthread_mutex_init(&f->prov.lock, NULL);
	pthread_cond_init(&f->prov.cond, NULL);
	PROVIDER_SET_TABLES(&f->prov.base, counting_tables);
	f->st.name = (char *)(uintptr_t)"s";
	f->st.project = (char *)(uintptr_t)"p";
	*stack_slot(&f->st, &kind_job) = (struct stack_kind_decls){ .items = f->jobs, .n = 3 };
	f->pool.accelerator_type = (char *)(uintptr_t)"NVIDIA_L4";
	f->pool.accelerator_count = 1;
	for (int i = 0; i < 3; i++) {
		f->jobs[i].region = (char *)(uintptr_t)regions[i];
		f->jobs[i].spec.pools = &f->pool;
		f->jobs[i].spec.npools = 1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	pthread_mutex_destroy(&f->prov.lock);
	pthread_cond_destroy(&f->prov.cond);
	free(f);
	return 0;
}

static const char *list_one(struct provider *p, const char *region, struct live_jobs *js, int *rc,
			    struct vx_err *err)
{
	memset(js, 0, sizeof(*js));
	*rc = provider_job_list(p, "p", region, "s", js, err);
	return js->n ? js->items[0].name : NULL;
}

/* Each declared place is listed once, ahead; the reader hands that answer
 * over once and sends a second call, or an undeclared place, to the cloud. */
static void test_answers_once_then_forwards(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_jobs js;
	struct provider *r;
	char *first;
	int rc;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	r = prefetch_reader(pf);
	assert_int_equal(f->prov.jobs_calls, 3);          /* r1, r2, bad: made ahead */
	assert_int_equal(f->prov.infos_calls, 1);         /* GPUs: Vertex's quota limits */
	first = vx_strdup(list_one(r, "r1", &js, &rc, &err));
	assert_int_equal(rc, 0);
	assert_non_null(first);
	assert_int_equal(f->prov.jobs_calls, 3);          /* answered from the prefetch */
	live_jobs_release(&js);
	assert_non_null(list_one(r, "r1", &js, &rc, &err));
	assert_int_equal(rc, 0);
	assert_string_not_equal(js.items[0].name, first); /* a fresh call, not the same answer */
	assert_int_equal(f->prov.jobs_calls, 4);
	live_jobs_release(&js);
	assert_non_null(list_one(r, "r9", &js, &rc, &err));
	assert_int_equal(f->prov.jobs_calls, 5);
	live_jobs_release(&js);
	free(first);
	prefetch_free(pf);
}

/*
 * A region named ahead of the load (prefetch_add_jobs) is listed at once,
 * beside the Stack's default region, and once however often it is named;
 * the reader hands its answer over, as any other.
 */
static void test_add_jobs(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_jobs js;
	int rc;

	f->prov.gate = 2;
	f->prov.met = 1;
	assert_int_equal(prefetch_start_jobs(&pf, &f->prov.base, "p", "r1", "s", &err), 0);
	prefetch_add_jobs(pf, "p", "r2", "s");
	prefetch_add_jobs(pf, "p", "r2", "s");
	prefetch_add_jobs(pf, "p", "r1", "s");
	(void)prefetch_reader(pf);
	assert_int_equal(f->prov.jobs_calls, 2);
	assert_true(f->prov.met);
	f->prov.gate = 0;
	assert_non_null(list_one(prefetch_reader(pf), "r2", &js, &rc, &err));
	assert_int_equal(rc, 0);
	assert_int_equal(f->prov.jobs_calls, 2);          /* answered from the prefetch */
	live_jobs_release(&js);
	prefetch_free(pf);
}

/* A failed list ahead is that call's failure, message and all. */
static void test_error_is_kept(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_jobs js;
	int rc;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	assert_null(list_one(prefetch_reader(pf), "bad", &js, &rc, &err));
	assert_int_equal(rc, VX_EIO);
	assert_string_equal(vx_err_msg(&err), "list in bad: boom");
	assert_int_equal(f->prov.jobs_calls, 3);
	vx_err_release(&err);
	live_jobs_release(&js);
	prefetch_free(pf);
}

/* Discarded (the state moved since the lists started): every call goes out. */
static void test_discarded_forwards(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_jobs js;
	int rc;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	prefetch_discard(pf);
	assert_non_null(list_one(prefetch_reader(pf), "r1", &js, &rc, &err));
	assert_int_equal(f->prov.jobs_calls, 4);
	live_jobs_release(&js);
	prefetch_free(pf);
}

/* After the refresh, a list left over is stale (an apply may have created
 * jobs since): not handed out. The quota limits are, once. */
static void test_leftovers_not_used_after_refresh(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limits l = { 0 };
	struct live_jobs js;
	struct provider *r;
	int rc;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	r = prefetch_reader(pf);
	prefetch_refreshed(pf);
	assert_non_null(list_one(r, "r2", &js, &rc, &err));
	assert_int_equal(f->prov.jobs_calls, 4);
	live_jobs_release(&js);
	assert_int_equal(provider_quota_list_infos(r, "p", "aiplatform.googleapis.com", &l, &err), 0);
	assert_int_equal(f->prov.infos_calls, 1);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.items[0].service, "aiplatform.googleapis.com");
	assert_int_equal(provider_quota_list_infos(r, "p", "aiplatform.googleapis.com", &l, &err), 0);
	assert_int_equal(f->prov.infos_calls, 2);
	assert_int_equal(l.n, 2);                         /* appended, as the real call does */
	live_quota_limits_release(&l);
	prefetch_free(pf);
}

/* Freed without being read: the thread is joined, nothing leaks (ASan). */
static void test_free_unread(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	prefetch_free(pf);
	assert_int_equal(f->prov.jobs_calls, 3);
}

/* A plan starts with the Stack's default region alone, then adds the whole
 * stack: r1 is listed once (not again by the addition), r2 and bad by it. */
static void test_default_region_then_the_stack(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct live_jobs js;
	struct provider *r;
	int rc;

	assert_int_equal(prefetch_start_jobs(&pf, &f->prov.base, "p", "r1", "s", &err), 0);
	assert_int_equal(prefetch_add(pf, &f->st, &err), 0);
	r = prefetch_reader(pf);
	assert_int_equal(f->prov.jobs_calls, 3);          /* r1 once, r2, bad */
	assert_int_equal(f->prov.infos_calls, 1);
	assert_non_null(list_one(r, "r1", &js, &rc, &err));
	assert_int_equal(rc, 0);
	live_jobs_release(&js);
	assert_non_null(list_one(r, "r2", &js, &rc, &err));
	live_jobs_release(&js);
	assert_int_equal(f->prov.jobs_calls, 3);          /* both answered from the prefetch */
	/* A second addition has no thread left. */
	assert_int_equal(prefetch_add(pf, &f->st, &err), VX_EIO);
	vx_err_release(&err);
	prefetch_free(pf);
}

/* No default region to list yet: nothing is called until the stack is added. */
static void test_nothing_until_added(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(prefetch_start_jobs(&pf, &f->prov.base, "p", NULL, "s", &err), 0);
	(void)prefetch_reader(pf);
	assert_int_equal(f->prov.jobs_calls, 0);
	assert_int_equal(prefetch_add(pf, &f->st, &err), 0);
	(void)prefetch_reader(pf);
	assert_int_equal(f->prov.jobs_calls, 3);
	prefetch_free(pf);
}

/*
 * What the reader does not change is the real provider's: a job cancel and
 * a quota create (tables whose lists the reader answers) reach the real
 * one's functions called on the real provider, never on the reader, with
 * the caller's arguments, and their answers come back as they were. What the
 * real provider lacks, the reader lacks.
 */
static void test_other_operations_are_the_real_ones(void **state)
{
	struct fixture *f = *state;
	struct prefetch *pf = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct provider_fence fence = { NULL, NULL };
	struct provider_quota_request q;
	struct live_quota got;
	struct provider *r;

	assert_int_equal(prefetch_start(&pf, &f->prov.base, &f->st, &err), 0);
	r = prefetch_reader(pf);
	assert_ptr_not_equal(r, &f->prov.base);
	assert_int_equal(provider_job_cancel(r, "projects/p/locations/r1/customJobs/7", &fence, &err), 0);
	assert_ptr_equal(f->prov.cancelled_on, &f->prov.base);
	assert_string_equal(f->prov.cancelled, "projects/p/locations/r1/customJobs/7");
	assert_ptr_equal(f->prov.cancelled_fence, &fence);
	assert_int_equal(provider_job_cancel(r, "projects/p/locations/r1/gone", NULL, &err), VX_ENOTFOUND);
	assert_string_equal(vx_err_msg(&err), "vertex: projects/p/locations/r1/gone: not found");
	vx_err_release(&err);
	memset(&q, 0, sizeof(q));
	q.project = "p";
	q.id = "gpus";
	assert_int_equal(provider_quota_create(r, &q, &got, &err), 0);
	assert_ptr_equal(f->prov.created_on, &f->prov.base);
	assert_ptr_equal(f->prov.created, &q);
	assert_string_equal(got.id, "gpus");
	live_quota_release(&got);
	/* Lacking in the real provider: lacking here. */
	assert_false(PROVIDER_HAS(r, job, create));
	assert_false(PROVIDER_HAS(r, job, get));
	assert_false(PROVIDER_HAS(r, quota, list));
	assert_false(PROVIDER_HAS(r, quota, update));
	assert_false(PROVIDER_HAS(r, reservation, create));
	assert_false(PROVIDER_HAS(r, reservation, resize));
	assert_false(PROVIDER_HAS(r, reservation, del));
	assert_false(PROVIDER_HAS(r, reservation, list));
	assert_int_equal(f->prov.jobs_calls, 3);          /* only the lists made ahead */
	prefetch_free(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answers_once_then_forwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_is_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discarded_forwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_not_used_after_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_unread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_region_then_the_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_until_added, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_operations_are_the_real_ones, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
