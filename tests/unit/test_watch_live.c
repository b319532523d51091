/* Unit tests for reconcile/watch_live.c: what vx watch lists each cycle. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/watch_live.h"
#include "util/ctx.h"

#define P "projects/p1/locations/us-central1/customJobs/"

/* A cloud of a few jobs, and what was asked of it. */
struct cloud {
	struct provider base;
	struct live_job jobs[8];
	size_t n;
	int full, active, gets, fail_active;
	char got[8][96];
	/* The last reservation resize: the provider it was called on, and its arguments. */
	struct provider *resized_on;
	char resized[96];
	int64_t resized_count;
	const struct provider_fence *resized_fence;
};

static struct cloud *cl(struct provider *p)
{
	return (struct cloud *)(void *)p;
}

static int push_if(struct live_jobs *out, const struct live_job *j, int active_only)
{
	if (active_only && job_state_is_terminal(j->state))
		return 0;
	return live_jobs_push(out, j);
}

static int c_list(struct provider *p, const char *project, const char *region, const char *stack,
		  struct live_jobs *out, struct vx_err *err)
{
	(void)project, (void)region, (void)stack, (void)err;
	memset(out, 0, sizeof(*out));
	cl(p)->full++;
	for (size_t i = 0; i < cl(p)->n; i++)
		assert_int_equal(push_if(out, &cl(p)->jobs[i], 0), 0);
	return 0;
}

static int c_list_active(struct provider *p, const char *project, const char *region, const char *stack,
			 struct live_jobs *out, struct vx_err *err)
{
	(void)project, (void)region, (void)stack;
	memset(out, 0, sizeof(*out));
	cl(p)->active++;
	if (cl(p)->fail_active)
		return vx_err_set(err, VX_ERETRY, "503");
	for (size_t i = 0; i < cl(p)->n; i++)
		assert_int_equal(push_if(out, &cl(p)->jobs[i], 1), 0);
	return 0;
}

static int c_get(struct provider *p, const char *name, struct live_job *out, char **spec, struct vx_err *err)
{
	struct cloud *c = cl(p);

	(void)spec;
	snprintf(c->got[c->gets++ % 8], sizeof(c->got[0]), "%s", name);
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->jobs[i].name, name))
			return live_job_copy(out, &c->jobs[i]);
	return vx_err_set(err, VX_ENOTFOUND, "not found");
}

/* A resize, recorded; a count of 7 fails, so a test sees the answer come back. */
static int c_resize(struct provider *p, const char *project, const char *zone, const char *name, int64_t count,
		    const struct provider_fence *fence, struct vx_err *err)
{
	struct cloud *c = cl(p);

	c->resized_on = p;
	snprintf(c->resized, sizeof(c->resized), "%s/%s/%s", project, zone, name);
	c->resized_count = count;
	c->resized_fence = fence;
	return count == 7 ? vx_err_set(err, VX_ECONFLICT, "compute: resizing \"%s\": conflict", name) : 0;
}

/* The jobs a watcher reads, and one reservation operation it never changes. */
static const struct provider_job_ops cloud_jobs = { .list = c_list, .list_active = c_list_active, .get = c_get };
static const struct provider_reservation_ops cloud_reservations = { .resize = c_resize };

static void add(struct cloud *c, const char *id, const char *state)
{
	struct live_job *j = &c->jobs[c->n++];

	memset(j, 0, sizeof(*j));
	j->name = strdup(id);
	j->region = strdup("us-central1");
	j->state = strdup(state);
}

static void set_state(struct cloud *c, const char *id, const char *state)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->jobs[i].name, id)) {
			free(c->jobs[i].state);
			c->jobs[i].state = strdup(state);
		}
}

static void drop(struct cloud *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->jobs[i].name, id)) {
			live_job_release(&c->jobs[i]);
			c->jobs[i] = c->jobs[--c->n];
		}
}

static int64_t mono;
static int64_t now_fn(void *ud) { (void)ud; return mono; }

static const struct provider_table cloud_tables[] = {
	{ &provider_kind_job, &cloud_jobs },
	{ &provider_kind_reservation, &cloud_reservations },
};

static void setup(struct cloud *c, struct vx_ctx *ctx)
{
	memset(c, 0, sizeof(*c));
	PROVIDER_SET_TABLES(&c->base, cloud_tables);
	vx_ctx_init(ctx);
	ctx->clock.now_ms = now_fn;
	ctx->clock.mono_ms = now_fn;
	mono = 1000;
}

static void teardown_cloud(struct cloud *c)
{
	for (size_t i = 0; i < c->n; i++)
		live_job_release(&c->jobs[i]);
}

/* The names in a list, sorted, as one string. */
static char *names(const struct live_jobs *js)
{
	static char buf[512];
	const char *v[16];
	size_t n = js->n;

	assert_true(n < 16);
	for (size_t i = 0; i < n; i++)
		v[i] = js->items[i].name + strlen(P);
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
			const char *t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	buf[0] = '\0';
	for (size_t i = 0, len = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "", v[i]);
	return buf;
}

static void cycle(struct watch_live *w, const char *const *expect, size_t nexpect, const char *want)
{
	struct provider *p = watch_live_provider(w);
	struct live_jobs js;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(watch_live_expect(w, expect, nexpect), 0);
	assert_int_equal(provider_job_list(p, "p1", "us-central1", "s", &js, &err), 0);
	assert_string_equal(names(&js), want);
	live_jobs_release(&js);
}

/*
 * The first cycle lists everything; then only the active jobs, plus the
 * final ones kept; a job that ended since is read once by name, and kept.
 */
static void test_active_then_kept(void **unused)
{
	struct cloud c;
	struct vx_ctx ctx;
	struct watch_live *w;
	struct watch_live_stats st;
	struct vx_err err = VX_ERR_INIT;
	const char *exp[] = { P "2", P "3" };

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_SUCCEEDED");
	add(&c, P "2", "JOB_STATE_RUNNING");
	add(&c, P "3", "JOB_STATE_QUEUED");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	cycle(w, exp, 2, "1 2 3");
	assert_int_equal(c.full, 1);
	assert_int_equal(c.active, 0);
	/* Nothing changed: one active list, no get. */
	cycle(w, exp, 2, "1 2 3");
	assert_int_equal(c.full, 1);
	assert_int_equal(c.active, 1);
	assert_int_equal(c.gets, 0);
	/* Job 2 was preempted: the active list no longer shows it; it is read by name. */
	set_state(&c, P "2", "JOB_STATE_FAILED");
	cycle(w, exp, 2, "1 2 3");
	assert_int_equal(c.gets, 1);
	assert_string_equal(c.got[0], P "2");
	/* The state now holds 2 as failed: not expected, and kept without a get. */
	cycle(w, exp + 1, 1, "1 2 3");
	assert_int_equal(c.gets, 1);
	assert_int_equal(c.full, 1);
	watch_live_stats(w, &st);
	assert_int_equal(st.kept, 2);
	assert_int_equal(st.full_lists, 1);
	assert_int_equal(st.active_lists, 3);
	assert_int_equal(st.gets, 1);
	/* A new run appears (a resubmission): the active list shows it. */
	add(&c, P "4", "JOB_STATE_PENDING");
	cycle(w, exp + 1, 1, "1 2 3 4");
	watch_live_free(w);
	teardown_cloud(&c);
}

/* A job the state holds as running that was deleted: gone, as a full list would show. */
static void test_deleted_while_running(void **unused)
{
	struct cloud c;
	struct vx_ctx ctx;
	struct watch_live *w;
	struct vx_err err = VX_ERR_INIT;
	const char *exp[] = { P "2" };

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_SUCCEEDED");
	add(&c, P "2", "JOB_STATE_RUNNING");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	cycle(w, exp, 1, "1 2");
	drop(&c, P "2");
	cycle(w, exp, 1, "1");
	assert_int_equal(c.gets, 1);
	watch_live_free(w);
	teardown_cloud(&c);
}

/* Every full_every_ms, and after invalidate or an error, a full list: deleted final jobs go. */
static void test_full_again(void **unused)
{
	struct cloud c;
	struct vx_ctx ctx;
	struct watch_live *w;
	struct provider *p;
	struct live_jobs js;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_SUCCEEDED");
	add(&c, P "2", "JOB_STATE_CANCELLED");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	p = watch_live_provider(w);
	cycle(w, NULL, 0, "1 2");
	drop(&c, P "1");
	cycle(w, NULL, 0, "1 2");
	mono += 600000;
	cycle(w, NULL, 0, "2");
	assert_int_equal(c.full, 2);
	cycle(w, NULL, 0, "2");
	assert_int_equal(c.full, 2);
	watch_live_invalidate(w);
	cycle(w, NULL, 0, "2");
	assert_int_equal(c.full, 3);
	c.fail_active = 1;
	assert_int_equal(provider_job_list(p, "p1", "us-central1", "s", &js, &err), VX_ERETRY);
	assert_int_equal(js.n, 0);
	vx_err_release(&err);
	c.fail_active = 0;
	cycle(w, NULL, 0, "2");
	assert_int_equal(c.full, 4);
	watch_live_free(w);
	teardown_cloud(&c);
}

/* Google names projects by number in answers: such a name is still read when it ends. */
static void test_project_number(void **unused)
{
	struct cloud c;
	struct vx_ctx ctx;
	struct watch_live *w;
	struct vx_err err = VX_ERR_INIT;
	const char *exp[] = { "projects/123456/locations/us-central1/customJobs/9",
			      "projects/123456/locations/europe-west4/customJobs/8" };

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_RUNNING");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	cycle(w, exp, 2, "1");
	cycle(w, exp, 2, "1");
	/* Read once, in its own region only. */
	assert_int_equal(c.gets, 1);
	assert_string_equal(c.got[0], exp[0]);
	watch_live_free(w);
	teardown_cloud(&c);
}

/* The digest: the same jobs in any order are the same; any field that changes, not. */
static void test_digest(void **unused)
{
	struct cloud a, b;
	struct vx_ctx ctx;
	struct live_jobs la = { a.jobs, 0 }, lb = { b.jobs, 0 };
	uint64_t d;

	(void)unused;
	setup(&a, &ctx);
	setup(&b, &ctx);
	add(&a, P "1", "JOB_STATE_RUNNING");
	add(&a, P "2", "JOB_STATE_QUEUED");
	add(&b, P "2", "JOB_STATE_QUEUED");
	add(&b, P "1", "JOB_STATE_RUNNING");
	la.n = a.n;
	lb.n = b.n;
	d = watch_live_digest(&la);
	assert_true(d == watch_live_digest(&lb));
	set_state(&b, P "1", "JOB_STATE_FAILED");
	assert_true(d != watch_live_digest(&lb));
	set_state(&b, P "1", "JOB_STATE_RUNNING");
	b.jobs[0].start_ms = 5;
	assert_true(d != watch_live_digest(&lb));
	b.jobs[0].start_ms = 0;
	lb.n = 1;
	assert_true(d != watch_live_digest(&lb));
	lb.n = 0;
	la.n = 0;
	assert_true(watch_live_digest(&la) == watch_live_digest(&lb));
	teardown_cloud(&a);
	teardown_cloud(&b);
}

/*
 * The idle check: never before a list was made; then one active
 * list, which the cycle's refresh takes instead of listing again; a run
 * that ends, a new one, an expected run missing or a full list due: not idle.
 */
static void test_idle(void **unused)
{
	struct cloud c;
	struct vx_ctx ctx;
	struct watch_live *w;
	struct vx_err err = VX_ERR_INIT;
	const char *exp[] = { P "2" }, *gone[] = { P "9" };
	int same = 1;

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_SUCCEEDED");
	add(&c, P "2", "JOB_STATE_RUNNING");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0); /* no place yet */
	cycle(w, exp, 1, "1 2");
	watch_live_cycle_end(w);
	/* Nothing changed since the full list (its jobs that are not final): idle, one active list. */
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 1);
	assert_int_equal(c.active, 1);
	watch_live_cycle_end(w);
	cycle(w, exp, 1, "1 2");
	assert_int_equal(c.active, 2);
	watch_live_cycle_end(w);
	/* A run that the state holds as active and no list shows: not idle. */
	assert_int_equal(watch_live_expect(w, gone, 1), 0);
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0);
	watch_live_cycle_end(w);
	assert_int_equal(watch_live_expect(w, exp, 1), 0);
	/* A new run: not idle, and the refresh takes the list made. */
	add(&c, P "3", "JOB_STATE_PENDING");
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0);
	assert_int_equal(c.active, 4);
	cycle(w, exp, 1, "1 2 3");
	assert_int_equal(c.active, 4);
	watch_live_cycle_end(w);
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 1);
	watch_live_cycle_end(w);
	/* A run ends: not idle. */
	set_state(&c, P "2", "JOB_STATE_FAILED");
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0);
	cycle(w, exp, 1, "1 2 3");
	watch_live_cycle_end(w);
	/* A full list due: not idle, without listing. */
	mono += 600000;
	c.active = 0;
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0);
	assert_int_equal(c.active, 0);
	/* A list that fails: an error, and a full list next. */
	mono -= 600000;
	c.fail_active = 1;
	assert_int_not_equal(watch_live_idle(w, &same, &err), 0);
	vx_err_release(&err);
	c.fail_active = 0;
	assert_int_equal(watch_live_idle(w, &same, &err), 0);
	assert_int_equal(same, 0);
	watch_live_free(w);
	teardown_cloud(&c);
}

/*
 * What the watcher does not change is the real provider's: a reservation
 * resize reaches the real one's function called on the real provider (never
 * the watcher), with the caller's arguments, and its answer comes back as
 * it was; a job read goes the same way. What the real provider lacks, the
 * watcher lacks. After watch_live_set_real, the new real provider answers.
 */
static void test_other_operations_are_the_real_ones(void **unused)
{
	struct cloud c, c2;
	struct vx_ctx ctx, ctx2;
	struct watch_live *w;
	struct provider *p;
	struct provider_fence fence = { NULL, NULL };
	struct live_job lj;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	setup(&c, &ctx);
	add(&c, P "1", "JOB_STATE_RUNNING");
	assert_int_equal(watch_live_new(&w, &c.base, &ctx, 600000, &err), 0);
	p = watch_live_provider(w);
	assert_ptr_not_equal(p, &c.base);
	assert_int_equal(provider_reservation_resize(p, "p1", "us-central1-a", "r1", 3, &fence, &err), 0);
	assert_ptr_equal(c.resized_on, &c.base);
	assert_string_equal(c.resized, "p1/us-central1-a/r1");
	assert_int_equal(c.resized_count, 3);
	assert_ptr_equal(c.resized_fence, &fence);
	assert_int_equal(provider_reservation_resize(p, "p1", "us-central1-a", "r2", 7, NULL, &err), VX_ECONFLICT);
	assert_string_equal(vx_err_msg(&err), "compute: resizing \"r2\": conflict");
	assert_null(c.resized_fence);
	vx_err_release(&err);
	memset(&lj, 0, sizeof(lj));
	assert_int_equal(provider_job_get(p, P "1", &lj, NULL, &err), 0);
	assert_string_equal(lj.state, "JOB_STATE_RUNNING");
	assert_int_equal(c.gets, 1);
	live_job_release(&lj);
	/* Lacking in the real provider: lacking here. */
	assert_false(PROVIDER_HAS(p, job, create));
	assert_false(PROVIDER_HAS(p, job, cancel));
	assert_false(PROVIDER_HAS(p, reservation, list));
	assert_false(PROVIDER_HAS(p, quota, create));
	assert_false(PROVIDER_HAS(p, quota, update));
	assert_false(PROVIDER_HAS(p, quota, list_infos));
	assert_false(PROVIDER_HAS(p, quota, list));
	assert_true(PROVIDER_HAS(p, reservation, resize));
	/* A provider made anew. */
	setup(&c2, &ctx2);
	watch_live_set_real(w, &c2.base);
	assert_int_equal(provider_reservation_resize(p, "p2", "us-east4-b", "r3", 2, NULL, &err), 0);
	assert_ptr_equal(c2.resized_on, &c2.base);
	assert_string_equal(c2.resized, "p2/us-east4-b/r3");
	assert_string_equal(c.resized, "p1/us-central1-a/r2");
	watch_live_free(w);
	teardown_cloud(&c);
	teardown_cloud(&c2);
}

/* live_jobs_take moves every job to the end, nothing copied, and leaves the source empty. */
static void test_jobs_take(void **unused)
{
	struct live_jobs a = { NULL, 0 }, b = { NULL, 0 }, none = { NULL, 0 };
	char state[] = "JOB_STATE_RUNNING", n1[] = "projects/p/locations/r/customJobs/1",
	     n2[] = "projects/p/locations/r/customJobs/2", n3[] = "projects/p/locations/r/customJobs/3";
	struct live_job j;
	const char *name_b;

	(void)unused;
	memset(&j, 0, sizeof(j));
	j.state = state;
	j.name = n1;
	assert_int_equal(live_jobs_push(&a, &j), 0);
	/* Into an empty set: the source's array itself. */
	assert_int_equal(live_jobs_take(&none, &a), 0);
	assert_int_equal(none.n, 1);
	assert_int_equal(a.n, 0);
	assert_null(a.items);
	j.name = n2;
	assert_int_equal(live_jobs_push(&b, &j), 0);
	j.name = n3;
	assert_int_equal(live_jobs_push(&b, &j), 0);
	name_b = b.items[0].name;
	assert_int_equal(live_jobs_take(&none, &b), 0);
	assert_int_equal(none.n, 3);
	assert_int_equal(b.n, 0);
	assert_null(b.items);
	/* Moved, not copied: the same string. */
	assert_ptr_equal(none.items[1].name, name_b);
	assert_string_equal(none.items[0].name, "projects/p/locations/r/customJobs/1");
	assert_string_equal(none.items[2].name, "projects/p/locations/r/customJobs/3");
	/* Nothing to take: nothing changes. */
	assert_int_equal(live_jobs_take(&none, &b), 0);
	assert_int_equal(none.n, 3);
	live_jobs_release(&none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_active_then_kept),
		cmocka_unit_test(test_deleted_while_running),
		cmocka_unit_test(test_full_again),
		cmocka_unit_test(test_project_number),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_other_operations_are_the_real_ones),
		cmocka_unit_test(test_jobs_take),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
