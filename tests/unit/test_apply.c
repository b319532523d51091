/*
 * Unit tests for reconcile/apply.c against an in-memory provider: the
 * order of calls, uncertain creates resolved by listing, journaling before
 * creating, and interrupts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "reconcile/apply.h"
#include "reconcile/plan.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/planner.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/diag.h"

/* ---- an in-memory cloud ---- */

struct memcloud {
	struct provider base;
	struct live_jobs jobs;
	int next_id;
	int uncertain_creates;   /* this many creates report VX_EUNCERTAIN... */
	int uncertain_lands;     /* ...having created the job (1) or not (0) */
	int fail_creates;        /* this many creates fail with VX_EAPI */
	int creates, cancels, lists;
	char calls[4096];        /* "list,create,cancel,..." */
	char create_regions[64][32]; /* the region of each create, in the order they came */
	volatile sig_atomic_t *interrupt_after_create; /* set it after the first create */
	pthread_mutex_t lock;    /* apply calls the provider from several threads */
	/* Lists by region (the refresh tests): only that region's jobs, and these fail. */
	int by_region;
	const char *fail_lists[2];
	/* A list waits (a bounded time) until this many lists are in flight at once. */
	int list_gate;
	int lists_inflight, lists_max_inflight;
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
};

static void note(struct memcloud *m, const char *what)
{
	size_t n = strlen(m->calls);

	snprintf(m->calls + n, sizeof(m->calls) - n, "%s%s", n ? "," : "", what);
}

static int mem_list_locked(struct provider *p, const char *project, const char *region, const char *stack,
		    struct live_jobs *out, struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;

	(void)project; (void)stack;
	m->lists++;
	note(m, "list");
	memset(out, 0, sizeof(*out));
	for (size_t k = 0; k < 2; k++)
		if (m->by_region && m->fail_lists[k] && !strcmp(m->fail_lists[k], region))
			return vx_err_set(err, VX_EAPI, "vertex: listing jobs: PERMISSION_DENIED: %s", region);
	for (size_t i = 0; i < m->jobs.n; i++)
		if (!m->by_region || !strcmp(m->jobs.items[i].region, region))
			assert_int_equal(live_jobs_push(out, &m->jobs.items[i]), 0);
	return 0;
}

static int mem_create_locked(struct provider *p, const struct provider_job_request *req, struct live_job *out,
		      struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;
	struct live_job j;
	char name[128];
	int lands = 1, uncertain = 0;

	if (m->creates < 64)
		snprintf(m->create_regions[m->creates], sizeof(m->create_regions[0]), "%s", req->region);
	m->creates++;
	note(m, "create");
	if (m->fail_creates > 0) {
		m->fail_creates--;
		return vx_err_set(err, VX_EAPI, "vertex: creating job: INVALID_ARGUMENT: no");
	}
	if (m->uncertain_creates > 0) {
		m->uncertain_creates--;
		uncertain = 1;
		lands = m->uncertain_lands;
	}
	if (lands) {
		memset(&j, 0, sizeof(j));
		snprintf(name, sizeof(name), "projects/p/locations/%s/customJobs/%d", req->region, ++m->next_id);
		j.name = name;
		j.region = (char *)(uintptr_t)req->region;
		j.state = (char *)(uintptr_t)"JOB_STATE_QUEUED";
		j.labels = (struct vx_label *)(uintptr_t)req->labels;
		j.nlabels = req->nlabels;
		j.create_ms = m->next_id;
		assert_int_equal(live_jobs_push(&m->jobs, &j), 0);
	}
	if (m->interrupt_after_create)
		*m->interrupt_after_create = 1;
	if (uncertain)
		return vx_err_set(err, VX_EUNCERTAIN, "vertex: creating job: outcome unknown");
	return live_job_copy(out, &m->jobs.items[m->jobs.n - 1]);
}

static int mem_cancel_locked(struct provider *p, const char *name, struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;

	(void)err;
	m->cancels++;
	note(m, "cancel");
	for (size_t i = 0; i < m->jobs.n; i++)
		if (!strcmp(m->jobs.items[i].name, name)) {
			free(m->jobs.items[i].state);
			m->jobs.items[i].state = strdup("JOB_STATE_CANCELLING");
			return 0;
		}
	return vx_err_set(err, VX_ENOTFOUND, "no such job");
}

static int mem_list(struct provider *p, const char *project, const char *region, const char *stack,
		    struct live_jobs *out, struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;
	int rc;

	if (m->list_gate) {
		struct timespec until;

		/* The bound only ends a failing test; a passing one never waits it out. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;
		pthread_mutex_lock(&m->gate_lock);
		if (++m->lists_inflight > m->lists_max_inflight)
			m->lists_max_inflight = m->lists_inflight;
		pthread_cond_broadcast(&m->gate_cond);
		while (m->lists_max_inflight < m->list_gate &&
		       pthread_cond_timedwait(&m->gate_cond, &m->gate_lock, &until) == 0)
			;
		m->lists_inflight--;
		pthread_mutex_unlock(&m->gate_lock);
	}
	pthread_mutex_lock(&m->lock);
	rc = mem_list_locked(p, project, region, stack, out, err);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int mem_create(struct provider *p, const struct provider_job_request *req, struct live_job *out,
		      struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (req->fence && (rc = req->fence->check(req->fence->ud, err)) != 0)
		return rc;
	pthread_mutex_lock(&m->lock);
	rc = mem_create_locked(p, req, out, err);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int mem_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
		      struct vx_err *err)
{
	struct memcloud *m = (struct memcloud *)p;
	int rc;

	/* As a provider must: the fence right before sending, nothing sent when it refuses. */
	if (fence && (rc = fence->check(fence->ud, err)) != 0)
		return rc;
	pthread_mutex_lock(&m->lock);
	rc = mem_cancel_locked(p, name, err);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static const struct provider_job_ops mem_jobs = { .list = mem_list, .create = mem_create, .cancel = mem_cancel };
static const struct provider_table mem_tables[] = { { &provider_kind_job, &mem_jobs } };

static void mem_init(struct memcloud *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->gate_lock, NULL);
	pthread_cond_init(&m->gate_cond, NULL);
	PROVIDER_SET_TABLES(&m->base, mem_tables);
}

/* ---- hooks ---- */

struct sink {
	int persists;
	int journaled_before_create; /* the first persist happened with a journal entry */
	struct memcloud *cloud;
	int creates_at_first_journal;
	struct vx_buf messages;
};

static int persist(void *ud, struct state *st, const char *message, struct vx_err *err)
{
	struct sink *s = ud;

	(void)err;
	if (st->njournal && !s->journaled_before_create) {
		s->journaled_before_create = 1;
		s->creates_at_first_journal = s->cloud->creates;
	}
	s->persists++;
	st->serial++;
	assert_int_equal(vx_buf_printf(&s->messages, "%s\n---\n", message), 0);
	return 0;
}

/* ---- fixtures ---- */

static const char stack_yaml[] =
	"kind: Stack\nname: research\nproject: my-project\nregion: us-central1\nlabels: {team: nlp}\n";

static char *job_doc(const char *name, const char *epochs)
{
	return vx_asprintf("---\nkind: CustomJob\nname: %s\nspec:\n  workerPoolSpecs:\n"
			   "    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
			   "      containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1, args: [\"%s\"]}\n", name, epochs);
}

static struct stack *load(const char *jobs_text)
{
	struct stack_source files[2] = { { "stack.yaml", stack_yaml, sizeof(stack_yaml) - 1 },
					 { "jobs.yaml", jobs_text, strlen(jobs_text) } };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	int rc = stack_load_mem(&st, ".", files, jobs_text[0] ? 2 : 1, NULL, &d, &err);

	if (rc < 0)
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "%s\n", d.items[i].msg);
	assert_int_equal(rc, 0);
	vx_diags_release(&d);
	return st;
}

static int64_t clock_ms;
static int64_t fake_now(void *ud) { (void)ud; return clock_ms; }
static void fake_sleep(void *ud, int64_t ms) { (void)ud; clock_ms += ms; }

static void ctx_init(struct vx_ctx *ctx)
{
	vx_ctx_init(ctx);
	clock_ms = 1795341926000;
	ctx->clock.now_ms = fake_now;
	ctx->clock.mono_ms = fake_now;
	ctx->clock.sleep_ms = fake_sleep;
	ctx->seed = 42;
}

struct world {
	struct vx_ctx ctx;
	struct memcloud cloud;
	struct state state;
	struct stack *st;
	struct sink sink;
	struct apply_hooks hooks;
	struct apply_options opts;
	struct apply_result res;
};

static void world_init(struct world *w, const char *jobs_text)
{
	struct vx_err err = VX_ERR_INIT;

	memset(w, 0, sizeof(*w));
	ctx_init(&w->ctx);
	mem_init(&w->cloud);
	w->st = load(jobs_text);
	assert_int_equal(state_new(&w->state, "research", &w->ctx, &err), 0);
	w->sink.cloud = &w->cloud;
	w->hooks.persist = persist;
	w->hooks.ud = &w->sink;
	w->opts.parallelism = 4;
	w->opts.project = "my-project";
}

/* Plans against the cloud as it is now and applies. */
/* ls with the jobs listed (live) as the job kind's slot, through jl. */
static const struct live_set *live_of_jobs(struct live_set *ls, struct job_live *jl, const struct live_jobs *live)
{
	memset(ls, 0, sizeof(*ls));
	memset(jl, 0, sizeof(*jl));
	jl->listed = *live;
	ls->of[kind_index(&kind_job)] = jl;
	return ls;
}

static void plan_and_apply(struct world *w)
{
	struct planner pl;
	struct live_jobs live = { 0 };
	struct job_live jl;
	struct live_set ls;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(mem_list(&w->cloud.base, NULL, NULL, NULL, &live, &err), 0);
	assert_int_equal(planner_run(&pl, w->st, &w->state, live_of_jobs(&ls, &jl, &live), NULL, &err), 0);
	apply_result_release(&w->res);
	assert_int_equal(apply_run(&w->res, &w->ctx, &pl.plan, w->st, &w->state, &w->cloud.base,
				   &w->opts, &w->hooks, &err), 0);
	planner_release(&pl);
	live_jobs_release(&live);
}

static void world_release(struct world *w)
{
	apply_result_release(&w->res);
	state_release(&w->state);
	stack_free(w->st);
	live_jobs_release(&w->cloud.jobs);
	pthread_mutex_destroy(&w->cloud.lock);
	pthread_mutex_destroy(&w->cloud.gate_lock);
	pthread_cond_destroy(&w->cloud.gate_cond);
	vx_buf_release(&w->sink.messages);
}

/* ---- tests ---- */

static void test_create_journals_first_and_records_run(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1"), *b = job_doc("b", "1"), *both = vx_asprintf("%s%s", a, b);
	const struct state_record *r;

	(void)unused;
	world_init(&w, both);
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 2);
	assert_int_equal(w.res.ok, 2);
	assert_int_equal(w.res.failed, 0);
	assert_true(w.sink.journaled_before_create);
	assert_int_equal(w.sink.creates_at_first_journal, 0);
	assert_int_equal(w.state.njournal, 0);
	r = state_find(&w.state, "job.a");
	assert_non_null(r);
	assert_non_null(r->current);
	assert_string_equal(vx_labels_get(r->current->labels, r->current->nlabels, "vx-stack"), "research");
	assert_string_equal(vx_labels_get(r->current->labels, r->current->nlabels, "team"), "nlp");
	assert_string_equal(r->current->action, "create");
	assert_non_null(strstr(vx_buf_str(&w.sink.messages), "+ job.a create projects/p/locations/us-central1/customJobs/"));
	/* A second apply changes nothing. */
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 2);
	world_release(&w);
	free(a); free(b); free(both);
}

static void test_uncertain_create_that_landed_is_adopted(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");

	(void)unused;
	world_init(&w, a);
	w.cloud.uncertain_creates = 1;
	w.cloud.uncertain_lands = 1;
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 1);
	assert_int_equal(w.cloud.jobs.n, 1);
	assert_int_equal(w.res.ok, 1);
	assert_non_null(state_find(&w.state, "job.a")->current);
	assert_string_equal(w.cloud.calls, "list,create,list");
	world_release(&w);
	free(a);
}

static void test_uncertain_create_that_did_not_land_is_retried_once(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");

	(void)unused;
	world_init(&w, a);
	w.cloud.uncertain_creates = 1;
	w.cloud.uncertain_lands = 0;
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 2);
	assert_int_equal(w.cloud.jobs.n, 1);
	assert_string_equal(w.cloud.calls, "list,create,list,create");
	world_release(&w);
	free(a);
}

static void test_uncertain_twice_leaves_intent(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");

	(void)unused;
	world_init(&w, a);
	w.cloud.uncertain_creates = 2;
	w.cloud.uncertain_lands = 0;
	plan_and_apply(&w);
	/* create, list (absent), create again (uncertain), list (absent): never a third create */
	assert_int_equal(w.cloud.creates, 2);
	assert_int_equal(w.res.failed, 1);
	/* the message says it was sent twice, not "not sent again" alone */
	assert_string_equal(w.res.failures.items[0].msg,
			    "job.a: create: sent twice: the first create's outcome was unknown and no job "
			    "carried its labels, so it was sent once more; that one: vertex: creating job: "
			    "outcome unknown");
	assert_int_equal(w.state.njournal, 1);
	assert_null(state_find(&w.state, "job.a"));
	world_release(&w);
	free(a);
}

static void test_interrupted_uncertain_create_is_not_sent_again(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");
	volatile sig_atomic_t stop = 0;

	(void)unused;
	world_init(&w, a);
	w.ctx.interrupted = &stop;
	w.cloud.interrupt_after_create = &stop;
	w.cloud.uncertain_creates = 1;
	w.cloud.uncertain_lands = 0;
	plan_and_apply(&w);
	/* Asked to stop: no listing and no second create; the intent waits for the next apply. */
	assert_string_equal(w.cloud.calls, "list,create");
	assert_int_equal(w.state.njournal, 1);
	assert_int_equal(w.res.failed, 1);
	world_release(&w);
	free(a);
}

static volatile sig_atomic_t *stop_on_sleep;

static void sleep_then_interrupt(void *ud, int64_t ms)
{
	fake_sleep(ud, ms);
	*stop_on_sleep = 1;
}

static void test_interrupt_while_settling_keeps_the_intent(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");
	volatile sig_atomic_t stop = 0;

	(void)unused;
	world_init(&w, a);
	w.cloud.uncertain_creates = 2;
	w.cloud.uncertain_lands = 0;
	plan_and_apply(&w);
	assert_int_equal(w.state.njournal, 1);
	/* The next apply waits for that create to appear, and is interrupted meanwhile. */
	stop_on_sleep = &stop;
	w.ctx.interrupted = &stop;
	w.ctx.clock.sleep_ms = sleep_then_interrupt;
	w.cloud.calls[0] = 0;
	plan_and_apply(&w);
	assert_string_equal(w.cloud.calls, "list,list,list");
	assert_true(w.res.interrupted);
	assert_int_equal(w.res.skipped, 1);
	assert_int_equal(w.state.njournal, 1);  /* still unconfirmed: kept for the next run */
	world_release(&w);
	free(a);
}

static void test_failed_create_reported(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1");

	(void)unused;
	world_init(&w, a);
	w.cloud.fail_creates = 1;
	plan_and_apply(&w);
	assert_int_equal(w.res.failed, 1);
	assert_int_equal(w.res.failures.n, 1);
	assert_non_null(strstr(w.res.failures.items[0].msg, "job.a: create: vertex: creating job: INVALID_ARGUMENT"));
	assert_int_equal(w.state.njournal, 0);
	world_release(&w);
	free(a);
}

static void test_replace_cancels_before_creating(void **unused)
{
	struct world w;
	char *a1 = job_doc("a", "1"), *a2 = job_doc("a", "2");
	const struct state_record *r;

	(void)unused;
	world_init(&w, a1);
	plan_and_apply(&w);
	stack_free(w.st);
	w.st = load(a2);
	w.cloud.calls[0] = '\0';
	plan_and_apply(&w);
	assert_string_equal(w.cloud.calls, "list,cancel,create");
	r = state_find(&w.state, "job.a");
	assert_int_equal(r->nhistory, 1);
	assert_true(r->history[0].cancelled_by_vx);
	assert_string_equal(r->current->action, "replace");
	world_release(&w);
	free(a1); free(a2);
}

static void test_interrupt_stops_new_batches(void **unused)
{
	struct world w;
	struct vx_buf jobs = VX_BUF_INIT;
	volatile sig_atomic_t stop = 0;

	(void)unused;
	for (int i = 0; i < 6; i++) {
		char name[16], *d;

		snprintf(name, sizeof(name), "j%d", i);
		d = job_doc(name, "1");
		assert_int_equal(vx_buf_adds(&jobs, d), 0);
		free(d);
	}
	world_init(&w, vx_buf_str(&jobs));
	w.opts.parallelism = 2;
	w.ctx.interrupted = &stop;
	w.cloud.interrupt_after_create = &stop;
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 2);   /* the first batch finishes */
	assert_true(w.res.interrupted);
	assert_int_equal(w.res.ok, 2);
	assert_int_equal(w.res.skipped, 4);
	assert_int_equal(w.state.njournal, 0);  /* what ran is recorded */
	world_release(&w);
	vx_buf_release(&jobs);
}

/*
 * Creates over several regions go out interleaved, so every batch draws on
 * every region's rate limit: with parallelism 2, a1..a4 in us-central1 and
 * b1..b4 in europe-west4 (plan order a1..a4, b1..b4), each batch of two
 * holds one create of each region.
 */
static void test_creates_interleave_regions(void **unused)
{
	struct world w;
	struct vx_buf jobs = VX_BUF_INIT;
	static const char *const order[] = { "job.a1", "job.b1", "job.a2", "job.b2",
					     "job.a3", "job.b3", "job.a4", "job.b4" };
	const char *msgs, *at;

	(void)unused;
	for (int i = 1; i <= 4; i++) {
		char name[16], *d;

		snprintf(name, sizeof(name), "a%d", i);
		d = job_doc(name, "1");
		assert_int_equal(vx_buf_adds(&jobs, d), 0);
		free(d);
		snprintf(name, sizeof(name), "b%d", i);
		d = job_doc(name, "1");
		assert_int_equal(vx_buf_printf(&jobs, "%sregion: europe-west4\n", d), 0);
		free(d);
	}
	world_init(&w, vx_buf_str(&jobs));
	w.opts.parallelism = 2;
	plan_and_apply(&w);
	assert_int_equal(w.cloud.creates, 8);
	assert_int_equal(w.res.ok, 8);
	/* Within a batch the two threads race: each pair holds both regions. */
	for (int k = 0; k < 8; k += 2)
		assert_string_not_equal(w.cloud.create_regions[k], w.cloud.create_regions[k + 1]);
	/* The results are recorded batch by batch, in the interleaved order. */
	msgs = vx_buf_str(&w.sink.messages);
	at = msgs;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		char *line = vx_asprintf("+ %s create projects/p/locations/%s/customJobs/", order[i],
					 order[i][4] == 'a' ? "us-central1" : "europe-west4");

		at = strstr(at, line);
		assert_non_null(at);
		free(line);
	}
	assert_int_equal(w.state.njournal, 0);
	world_release(&w);
	vx_buf_release(&jobs);
}

/* Three jobs, one in each of three regions, and a live job in each region. */
static void refresh_world(struct world *w)
{
	static const char *const regions[] = { "asia-southeast1", "europe-west4", "us-central1" };
	struct vx_buf jobs = VX_BUF_INIT;

	for (int i = 0; i < 3; i++) {
		char name[16], *d;

		snprintf(name, sizeof(name), "r%d", i);
		d = job_doc(name, "1");
		assert_int_equal(vx_buf_printf(&jobs, "%sregion: %s\n", d, regions[i]), 0);
		free(d);
	}
	world_init(w, vx_buf_str(&jobs));
	w->cloud.by_region = 1;
	for (int i = 0; i < 3; i++) {
		char name[32];
		struct live_job j;

		memset(&j, 0, sizeof(j));
		snprintf(name, sizeof(name), "live-%d", i);
		j.name = name;
		j.region = (char *)(uintptr_t)regions[i];
		j.state = (char *)(uintptr_t)"JOB_STATE_RUNNING";
		assert_int_equal(live_jobs_push(&w->cloud.jobs, &j), 0);
	}
	vx_buf_release(&jobs);
}

/*
 * The regions are listed side by side (each list waits until all three are
 * in flight; listed one after another, the first would wait in vain), and
 * merged in place order, as if listed one after another.
 */
static void test_refresh_lists_regions_in_parallel(void **unused)
{
	struct world w;
	struct live_store ls;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	refresh_world(&w);
	w.cloud.list_gate = 3;
	memset(&ls, 0, sizeof(ls));
	assert_int_equal(kind_job.refresh(&ls, &w.cloud.base, w.st, NULL, &err), 0);
	assert_int_equal(w.cloud.lists_max_inflight, 3);
	assert_int_equal(w.cloud.lists, 3);
	assert_int_equal(ls.nread, 3);
	assert_string_equal(ls.read[0], "asia-southeast1");
	assert_string_equal(ls.read[1], "europe-west4");
	assert_string_equal(ls.read[2], "us-central1");
	assert_int_equal(kind_job_listed(&ls)->n, 3);
	assert_string_equal(kind_job_listed(&ls)->items[0].name, "live-0");
	assert_string_equal(kind_job_listed(&ls)->items[1].name, "live-1");
	assert_string_equal(kind_job_listed(&ls)->items[2].name, "live-2");
	live_store_release(&ls);
	world_release(&w);
}

/* When several places fail, the first in place order is the error, named by its place. */
static void test_refresh_first_failure_in_place_order(void **unused)
{
	struct world w;
	struct live_store ls;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	refresh_world(&w);
	w.cloud.fail_lists[0] = "us-central1";
	w.cloud.fail_lists[1] = "europe-west4";
	memset(&ls, 0, sizeof(ls));
	assert_int_equal(kind_job.refresh(&ls, &w.cloud.base, w.st, NULL, &err), VX_EAPI);
	assert_string_equal(err.msg, "reading live jobs in europe-west4: vertex: listing jobs: "
			    "PERMISSION_DENIED: europe-west4");
	vx_err_release(&err);
	live_store_release(&ls);
	world_release(&w);
}

/* A fence that passes `allow` checks, then refuses; and a heartbeat noted among the calls. */
struct lease {
	struct sink *sink;
	int allow;
	int checks;
	pthread_mutex_t lock; /* checks come from worker threads */
};

static int lease_fence(void *ud, struct vx_err *err)
{
	struct lease *l = ud;
	int ok;

	pthread_mutex_lock(&l->lock);
	ok = ++l->checks <= l->allow;
	pthread_mutex_unlock(&l->lock);
	return ok ? 0 : vx_err_set(err, VX_ECONFLICT, "the lease is gone");
}

static int lease_persist(void *ud, struct state *st, const char *message, struct vx_err *err)
{
	return persist(((struct lease *)ud)->sink, st, message, err);
}

static int lease_heartbeat(void *ud, struct vx_err *err)
{
	struct lease *l = ud;

	(void)err;
	pthread_mutex_lock(&l->sink->cloud->lock);
	note(l->sink->cloud, "heartbeat");
	pthread_mutex_unlock(&l->sink->cloud->lock);
	return 0;
}

static void lease_hooks(struct world *w, struct lease *l, int allow)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->sink = &w->sink;
	l->allow = allow;
	w->hooks.persist = lease_persist;
	w->hooks.heartbeat = lease_heartbeat;
	w->hooks.fence = lease_fence;
	w->hooks.ud = l;
}

/* Applies, expecting the fence to stop it. */
static void plan_and_apply_fenced(struct world *w)
{
	struct planner pl;
	struct live_jobs live = { 0 };
	struct job_live jl;
	struct live_set ls;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(mem_list(&w->cloud.base, NULL, NULL, NULL, &live, &err), 0);
	assert_int_equal(planner_run(&pl, w->st, &w->state, live_of_jobs(&ls, &jl, &live), NULL, &err), 0);
	apply_result_release(&w->res);
	assert_int_equal(apply_run(&w->res, &w->ctx, &pl.plan, w->st, &w->state, &w->cloud.base,
				   &w->opts, &w->hooks, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "the lease is gone");
	assert_true(w->res.fenced);
	vx_err_release(&err);
	planner_release(&pl);
	live_jobs_release(&live);
}

/* The lease renews right before each batch, the fence is asked before each create. */
static void test_heartbeat_before_each_batch_and_fence_per_create(void **unused)
{
	struct world w;
	struct lease l;
	char *a = job_doc("a", "1"), *b = job_doc("b", "1"), *both = vx_asprintf("%s%s", a, b);

	(void)unused;
	world_init(&w, both);
	lease_hooks(&w, &l, 100);
	w.opts.parallelism = 1;
	plan_and_apply(&w);
	assert_string_equal(w.cloud.calls, "list,heartbeat,create,heartbeat,heartbeat,create,heartbeat");
	assert_int_equal(l.checks, 2);
	assert_int_equal(w.res.ok, 2);
	assert_false(w.res.fenced);
	pthread_mutex_destroy(&l.lock);
	world_release(&w);
	free(a); free(b); free(both);
}

/*
 * A batch's results are saved with the next batch's intents, in one write:
 * every create still has its intent saved before it is sent, and a large
 * apply makes half the saves it did (each costs every record's bytes).
 */
static void test_results_saved_with_next_intents(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1"), *b = job_doc("b", "1"), *c = job_doc("c", "1");
	char *all = vx_asprintf("%s%s%s", a, b, c);

	(void)unused;
	world_init(&w, all);
	w.opts.parallelism = 1;
	plan_and_apply(&w);
	assert_int_equal(w.res.ok, 3);
	assert_int_equal(w.sink.persists, 4);
	assert_string_equal(vx_buf_str(&w.sink.messages),
		"vx apply: intent + job.a\n\nintent job.a create\n\n---\n"
		"vx apply: + job.a, intent + job.b\n\n"
		"+ job.a create projects/p/locations/us-central1/customJobs/1\nintent job.b create\n\n---\n"
		"vx apply: + job.b, intent + job.c\n\n"
		"+ job.b create projects/p/locations/us-central1/customJobs/2\nintent job.c create\n\n---\n"
		"vx apply: + job.c\n\n+ job.c create projects/p/locations/us-central1/customJobs/3\n\n---\n");
	world_release(&w);
	free(a); free(b); free(c); free(all);
}

/*
 * Once the fence refuses, nothing is sent and nothing more recorded: the
 * batch that ran before is recorded, the refused batch's intents stay
 * journaled (the next apply settles them by listing), no later batch starts.
 */
static void test_fence_refusal_stops_the_apply(void **unused)
{
	struct world w;
	struct lease l;
	struct vx_buf jobs = VX_BUF_INIT;

	(void)unused;
	for (int i = 0; i < 6; i++) {
		char name[16], *d;

		snprintf(name, sizeof(name), "j%d", i);
		d = job_doc(name, "1");
		assert_int_equal(vx_buf_adds(&jobs, d), 0);
		free(d);
	}
	world_init(&w, vx_buf_str(&jobs));
	lease_hooks(&w, &l, 2);
	w.opts.parallelism = 2;
	plan_and_apply_fenced(&w);
	assert_int_equal(w.cloud.creates, 2);   /* the first batch, before the lease ran out */
	assert_int_equal(w.cloud.jobs.n, 2);
	assert_int_equal(l.checks, 4);          /* the second batch asked and was refused */
	assert_int_equal(w.res.ok, 2);
	assert_int_equal(w.state.nrecords, 2);
	assert_int_equal(w.state.njournal, 2);  /* the refused batch's intents stay */
	assert_non_null(state_find(&w.state, "job.j0"));
	assert_non_null(state_find(&w.state, "job.j1"));
	/* The first batch's intents, then its results with the second batch's
	 * intents: no result written for the refused batch. */
	assert_int_equal(w.sink.persists, 2);
	pthread_mutex_destroy(&l.lock);
	world_release(&w);
	vx_buf_release(&jobs);
}

/* A cancel is fenced too: refused, not sent, and the create after it never starts. */
static void test_fence_refusal_stops_a_cancel(void **unused)
{
	struct world w;
	struct lease l;
	char *a1 = job_doc("a", "1"), *a2 = job_doc("a", "2");

	(void)unused;
	world_init(&w, a1);
	plan_and_apply(&w);
	stack_free(w.st);
	w.st = load(a2);
	w.cloud.calls[0] = '\0';
	lease_hooks(&w, &l, 0);
	plan_and_apply_fenced(&w);
	assert_string_equal(w.cloud.calls, "list,heartbeat");
	assert_int_equal(w.cloud.cancels, 0);
	assert_int_equal(w.cloud.creates, 1);
	assert_int_equal(l.checks, 1);
	assert_false(state_find(&w.state, "job.a")->current->cancelled_by_vx);
	pthread_mutex_destroy(&l.lock);
	world_release(&w);
	free(a1); free(a2);
}

static void test_refresh_state_records_end(void **unused)
{
	struct world w;
	char *a = job_doc("a", "1"), *summary = NULL;
	struct live_jobs live = { 0 };
	struct vx_err err = VX_ERR_INIT;
	const struct state_record *r;

	(void)unused;
	world_init(&w, a);
	plan_and_apply(&w);
	free(w.cloud.jobs.items[0].state);
	w.cloud.jobs.items[0].state = strdup("JOB_STATE_FAILED");
	w.cloud.jobs.items[0].error_code = 8;
	w.cloud.jobs.items[0].error_message = strdup("The resources are insufficient in region: us-central1.");
	w.cloud.jobs.items[0].end_ms = 1795341999000;
	assert_int_equal(mem_list(&w.cloud.base, NULL, NULL, NULL, &live, &err), 0);
	assert_int_equal(apply_refresh_state(&w.state, &live, NULL, &summary), 1);
	assert_string_equal(summary, "job.a: queued -> failed (stockout)\n");
	r = state_find(&w.state, "job.a");
	assert_string_equal(r->current->failure, "stockout");
	assert_int_equal(r->current->ended_ms, 1795341999000);
	assert_int_equal(apply_refresh_state(&w.state, &live, NULL, NULL), 0);
	free(summary);
	live_jobs_release(&live);
	world_release(&w);
	free(a);
}

/* The subject of a state commit: what each line did, cut at about 72 bytes. */
static void test_commit_subject(void **state)
{
	static const struct {
		const char *prefix, *lines, *want;
	} cases[] = {
		{ "vx apply: ", "+ job.a create projects/p/locations/r/customJobs/1\n"
		  "~ reservation.pool resize 2 -> 3\n- job.old cancel projects/p/locations/r/customJobs/0\n"
		  "- job.old forget\n~ quota.l4 update preferredValue 8 -> 16\n",
		  "vx apply: + job.a, ~ reservation.pool (2 \xe2\x86\x92 3), - job.old and 1 more" },
		{ "vx apply: ", "~ quota.l4 update preferredValue 8 -> 16\n~ quota.h100 adopt\n",
		  "vx apply: ~ quota.l4 (8 \xe2\x86\x92 16), ~ quota.h100" },
		{ "vx apply: ", "intent job.a create\nintent job.b replace\n", "vx apply: intent + job.a, ~ job.b" },
		{ "vx apply: ", "+ job.a create X\nintent job.b create\n", "vx apply: + job.a, intent + job.b" },
		{ "vx apply: ", "~ job.a update machineType n1 -> a2\n", "vx apply: ~ job.a" },
		{ "vx apply: ", "+ job.aaaaaaaaaaaaaaaaaaaa x\n+ job.bbbbbbbbbbbbbbbbbbbb x\n"
		  "+ job.cccccccccccccccccccc x\n+ job.d x\n",
		  "vx apply: + job.aaaaaaaaaaaaaaaaaaaa, + job.bbbbbbbbbbbbbbbbbbbb and 2 more" },
		{ "vx refresh: ", "job.a: queued -> running\njob.b (earlier run projects/p/x): running -> "
		  "failed (stockout)\n",
		  "vx refresh: job.a queued \xe2\x86\x92 running, job.b running \xe2\x86\x92 failed" },
		{ "vx apply: ", "nothing that names an address\n", NULL },
		{ "vx apply: ", "", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = apply_subject(cases[i].prefix, cases[i].lines);

		if (cases[i].want)
			assert_string_equal(got, cases[i].want);
		else
			assert_null(got);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_subject),
		cmocka_unit_test(test_create_journals_first_and_records_run),
		cmocka_unit_test(test_interrupted_uncertain_create_is_not_sent_again),
		cmocka_unit_test(test_interrupt_while_settling_keeps_the_intent),
		cmocka_unit_test(test_uncertain_create_that_landed_is_adopted),
		cmocka_unit_test(test_uncertain_create_that_did_not_land_is_retried_once),
		cmocka_unit_test(test_uncertain_twice_leaves_intent),
		cmocka_unit_test(test_failed_create_reported),
		cmocka_unit_test(test_replace_cancels_before_creating),
		cmocka_unit_test(test_interrupt_stops_new_batches),
		cmocka_unit_test(test_creates_interleave_regions),
		cmocka_unit_test(test_refresh_lists_regions_in_parallel),
		cmocka_unit_test(test_refresh_first_failure_in_place_order),
		cmocka_unit_test(test_refresh_state_records_end),
		cmocka_unit_test(test_heartbeat_before_each_batch_and_fence_per_create),
		cmocka_unit_test(test_results_saved_with_next_intents),
		cmocka_unit_test(test_fence_refusal_stops_the_apply),
		cmocka_unit_test(test_fence_refusal_stops_a_cancel),
	};
	return cmocka_run_group_tests_name("apply", tests, NULL, NULL);
}
