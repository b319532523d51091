/* Unit tests for reconcile/capacity.c: quota sums per region x GPU x class, and cost arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/kind_job.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/kind_future.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/load/machines.h"
#include "reconcile/kind_quota.h"
#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/stack.h"
#include "util/alloc.h"
#include "util/buf.h"

static const char PRICES[] =
	"{\"source\":\"test\",\"date\":\"2025-01-01\",\"currency\":\"USD\",\"regions\":{"
	"\"r1\":{\"machines\":{\"a3-highgpu-8g\":{\"on_demand\":80,\"spot\":30},"
	"\"n1-standard-4\":{\"on_demand\":0.2,\"spot\":0.1}},"
	"\"accelerators\":{\"NVIDIA_TESLA_T4\":{\"on_demand\":0.35,\"spot\":0.15}}},"
	"\"*\":{\"machines\":{\"a3-highgpu-8g\":{\"on_demand\":100,\"flex_start\":50,\"estimate\":[\"flex_start\"]}}}}}";

struct fixture {
	struct stack st;
	struct stack_job jobs[3];
	struct spec_pool pools[3][2];
	struct plan plan;
	struct plan_action acts[3];
	struct job_action jacts[3]; /* acts[i]'s job fields (payload) */
	struct plan_decl decls[3];
	struct prices prices;
};

static void job(struct fixture *f, int i, const char *name, const char *region, const char *strategy,
		enum plan_op kind, const char *live_state)
{
	struct stack_job *j = &f->jobs[i];

	j->d.name = (char *)(uintptr_t)name;
	j->d.address = vx_asprintf("job.%s", name);
	j->region = (char *)(uintptr_t)region;
	j->spec.strategy = (char *)(uintptr_t)strategy;
	j->spec.timeout_s = -1;
	j->spec.pools = f->pools[i];
	j->max_attempts = 1;
	f->acts[i].kdecl = j;
	f->acts[i].op = kind;
	f->acts[i].kind_of = &kind_job;
	f->acts[i].address = j->d.address;
	f->acts[i].payload = &f->jacts[i];
	job_action_mut(&f->acts[i])->decl = &f->decls[i];
	job_action_mut(&f->acts[i])->live_state = (char *)(uintptr_t)live_state;
	job_action_mut(&f->acts[i])->attempt = 1;
}

static void pool(struct fixture *f, int i, const char *machine, const char *accel, int64_t count, int64_t replicas)
{
	struct spec_pool *p = &f->pools[i][f->jobs[i].spec.npools++];

	p->machine_type = (char *)(uintptr_t)machine;
	p->accelerator_type = (char *)(uintptr_t)accel;
	p->accelerator_count = count;
	p->replica_count = replicas;
}

static void setup(struct fixture *f, size_t njobs)
{
	struct vx_err err = VX_ERR_INIT;

	*stack_slot(&f->st, &kind_job) = (struct stack_kind_decls){ .items = f->jobs, .n = njobs };
	f->plan.actions = f->acts;
	f->plan.n = njobs;
	assert_int_equal(prices_parse(&f->prices, PRICES, strlen(PRICES), "t", &err), 0);
}

static void teardown(struct fixture *f)
{
	for (size_t i = 0; i < stack_count(&f->st, &kind_job); i++)
		free(f->jobs[i].d.address);
	prices_release(&f->prices);
}

static void limit(struct live_quota_limit *l, const char *quota_id, int64_t value)
{
	l->service = (char *)(uintptr_t)"aiplatform.googleapis.com";
	l->quota_id = (char *)(uintptr_t)quota_id;
	l->location = (char *)(uintptr_t)"r1";
	l->dimensions = NULL;
	l->value = value;
}

static struct live_quota_limits limits_of(struct live_quota_limit *items, size_t n)
{
	struct live_quota_limits l = { items, n };

	return l;
}

/* Three FLEX_START 8xH100 jobs against a preemptible limit of 16: the third does not fit. */
static void test_flex_start_sum(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limit lim[1];
	struct live_quota_limits l = limits_of(lim, 1);
	struct capacity_input in = { &f.st, &f.plan, NULL, &l, &f.prices, NULL, 0, 0 };

	(void)unused;
	memset(&f, 0, sizeof(f));
	limit(lim, "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion", 16);
	job(&f, 0, "a", "r1", "FLEX_START", PLAN_CREATE, NULL);
	job(&f, 1, "b", "r1", "FLEX_START", PLAN_CREATE, NULL);
	job(&f, 2, "c", "r1", "FLEX_START", PLAN_CREATE, NULL);
	for (int i = 0; i < 3; i++)
		pool(&f, i, "a3-highgpu-8g", "NVIDIA_H100_80GB", 8, 1);
	setup(&f, 3);
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.nrows, 1);
	assert_string_equal(r.rows[0].quota_id, "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion");
	assert_int_equal(r.rows[0].cls, CAPACITY_PREEMPTIBLE);
	assert_int_equal(r.rows[0].adds, 24);
	assert_int_equal(r.rows[0].limit, 16);
	assert_false(r.rows[0].fits);
	assert_int_equal(r.misfits.n, 1);
	assert_string_equal(r.misfits.items[0].msg, "job.c: does not fit: needs 8 preemptible H100 80GB in r1, "
			    "limit 16, 16 in use or started before it: 0 free");
	/* r1 has no flex_start for a3: on-demand, marked an upper bound */
	assert_true(r.costs[0].upper_bound);
	assert_true(r.costs[0].usd_per_hour == 80.0);
	assert_true(r.costs[0].usd_max == 80.0 * 24 * 7);
	assert_true(r.delta_per_hour == 240.0);
	capacity_release(&r);
	teardown(&f);
}

/* Multi-pool job: replicas x GPUs per pool, machine + GPUs per replica; a running job counts in use. */
static void test_multi_pool_and_running(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limit lim[1];
	struct live_quota_limits l = limits_of(lim, 1);
	struct capacity_input in = { &f.st, &f.plan, NULL, &l, &f.prices, NULL, 0, 0 };

	(void)unused;
	memset(&f, 0, sizeof(f));
	limit(lim, "CustomModelTrainingT4GPUsPerProjectPerRegion", 100);
	job(&f, 0, "multi", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 2, 3);  /* 6 T4 */
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 4);  /* 4 T4 */
	job(&f, 1, "run", "r1", "STANDARD", PLAN_NOOP, "JOB_STATE_RUNNING");
	pool(&f, 1, "n1-standard-4", "NVIDIA_TESLA_T4", 4, 1);
	job(&f, 2, "done", "r1", "STANDARD", PLAN_NOOP, "JOB_STATE_SUCCEEDED");
	pool(&f, 2, "n1-standard-4", "NVIDIA_TESLA_T4", 4, 1);
	f.jobs[0].max_attempts = 3;
	f.jobs[0].spec.timeout_s = 3600;
	job_action_mut(&f.acts[0])->attempt = 2; /* attempts left: 2 */
	setup(&f, 3);
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(r.rows[0].adds, 10);
	assert_int_equal(r.rows[0].in_use, 4);
	assert_true(r.rows[0].fits);
	assert_int_equal(r.ncosts, 2);
	{
		const struct capacity_cost *c = capacity_cost_of(&r, "job.multi");
		double rate = 3 * (0.2 + 2 * 0.35) + 4 * (0.2 + 0.35);

		assert_non_null(c);
		assert_true(c->starts);
		assert_true(c->usd_per_hour > rate - 1e-9 && c->usd_per_hour < rate + 1e-9);
		assert_true(c->usd_max > 2 * rate - 1e-9 && c->usd_max < 2 * rate + 1e-9);
	}
	assert_null(capacity_cost_of(&r, "job.done"));
	capacity_release(&r);
	teardown(&f);
}

/* A price not in the table is unknown, never zero; a quota not returned is unknown, never fitting. */
static void test_unknown(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limits l = { NULL, 0 };
	struct capacity_input in = { &f.st, &f.plan, NULL, &l, &f.prices, NULL, 0, 0 };
	struct vx_buf b = VX_BUF_INIT;

	(void)unused;
	memset(&f, 0, sizeof(f));
	job(&f, 0, "x", "r1", "SPOT", PLAN_CREATE, NULL);
	pool(&f, 0, "g2-standard-4", "NVIDIA_L4", 1, 1);
	setup(&f, 1);
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_false(r.costs[0].known);
	assert_false(r.delta_known);
	assert_false(r.rows[0].has_limit);
	assert_false(r.rows[0].fits);
	assert_int_equal(r.misfits.n, 1);
	assert_string_equal(r.misfits.items[0].msg, "preemptible L4 GPUs in r1: Cloud Quotas returned no limit for "
			    "CustomModelTrainingPreemptibleL4GPUsPerProjectPerRegion: unknown, not counted as fitting");
	capacity_release(&r);
	assert_int_equal(capacity_money(&b, "USD", 16517.4, 0), 0);
	assert_int_equal(capacity_money(&b, "USD", -1, 2), 0);
	assert_string_equal(vx_buf_str(&b), "$16,517unknown");
	vx_buf_release(&b);
	teardown(&f);
}

/*
 * A declared preference for the row's quota whose request is pending:
 * reconciling and no grantedValue, as Cloud Quotas serves it until it
 * decides. A job that fits the limit in force and the value asked for fits
 * whatever the decision; one that fits only if Google grants is neither
 * fitting nor short but unknown, with the reason; once decided, the row is
 * counted as before.
 */
static void test_pending_grant_is_unknown(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limit lim[1];
	struct live_quota_limits l = limits_of(lim, 1);
	struct vx_label region = { (char *)(uintptr_t)"region", (char *)(uintptr_t)"r1" };
	struct stack_quota q;
	struct live_quota lq;
	struct live_quotas lqs = { &lq, 1 };
	struct live_set live = { { NULL } };
	struct capacity_input in = { &f.st, &f.plan, &live, &l, &f.prices, NULL, 0, 0 };

	(void)unused;
	live.of[kind_index(&kind_quota)] = &lqs;
	memset(&f, 0, sizeof(f));
	memset(&q, 0, sizeof(q));
	memset(&lq, 0, sizeof(lq));
	limit(lim, "CustomModelTrainingT4GPUsPerProjectPerRegion", 1);
	q.d.name = (char *)(uintptr_t)"t4";
	q.d.address = (char *)(uintptr_t)"quota.t4";
	q.service = (char *)(uintptr_t)"aiplatform.googleapis.com";
	q.quota_id = (char *)(uintptr_t)"CustomModelTrainingT4GPUsPerProjectPerRegion";
	q.dimensions.items = &region;
	q.dimensions.n = 1;
	q.preferred_value = 16;
	lq.id = (char *)(uintptr_t)"t4";
	lq.preferred = 16;
	lq.reconciling = 1;
	job(&f, 0, "a", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	job(&f, 1, "b", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 1, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	setup(&f, 2);
	*stack_slot(&f.st, &kind_quota) = (struct stack_kind_decls){ .items = &q, .n = 1 };
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(r.rows[0].adds, 2);
	assert_false(r.rows[0].fits);
	assert_true(r.rows[0].pending);
	assert_false(r.rows[0].has_granted);
	assert_string_equal(r.rows[0].unknown, "quota.t4 asks for 16 and Google has not decided (no grantedValue yet)");
	/* job.a fits the 1 in force either way: only job.b waits on the decision */
	assert_int_equal(r.misfits.n, 1);
	assert_string_equal(r.misfits.items[0].msg, "job.b: fit unknown: needs 1 on-demand T4 in r1, limit 1 in force, "
			    "1 in use or started before it; quota.t4 asks for 16 and Google has not decided (no "
			    "grantedValue yet)");
	capacity_release(&r);

	/* Asking for less than both jobs need: short whatever Google decides. */
	lq.preferred = 1;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_null(r.rows[0].unknown);
	assert_int_equal(r.misfits.n, 1);
	assert_string_equal(r.misfits.items[0].msg, "job.b: does not fit: needs 1 on-demand T4 in r1, limit 1, "
			    "1 in use or started before it: 0 free");
	capacity_release(&r);

	/* Decided (granted, not reconciling): counted against the limit in force as any row. */
	lq.preferred = 16;
	lq.reconciling = 0;
	lq.has_granted = 1;
	lq.granted = 1;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_null(r.rows[0].unknown);
	assert_int_equal(r.misfits.n, 1);
	assert_string_equal(r.misfits.items[0].msg, "job.b: does not fit: needs 1 on-demand T4 in r1, limit 1, "
			    "1 in use or started before it: 0 free");
	capacity_release(&r);
	teardown(&f);
}

/* Limits that could not be read (a 403, a 404): every quota row unknown with the reason, no misfit per row. */
static void test_limits_not_read(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct capacity_input in = { &f.st, &f.plan, NULL, NULL, &f.prices, "quotas: PERMISSION_DENIED: no", 0, 0 };

	(void)unused;
	memset(&f, 0, sizeof(f));
	job(&f, 0, "a", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	job(&f, 1, "b", "r1", "SPOT", PLAN_CREATE, NULL);
	pool(&f, 1, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	setup(&f, 2);
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.nrows, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_false(r.rows[i].has_limit);
		assert_false(r.rows[i].fits);
		assert_string_equal(r.rows[i].unknown, "quota limits not read: quotas: PERMISSION_DENIED: no");
	}
	assert_int_equal(r.misfits.n, 0);
	assert_true(r.costs[0].known);
	capacity_release(&r);
	teardown(&f);
}

/* "*" applies where a region has no entry; its estimate marks follow the figure used. */
static void test_prices_star(void **unused)
{
	struct prices p;
	struct vx_err err = VX_ERR_INIT;
	int ub = 0, est = 0;

	(void)unused;
	assert_int_equal(prices_parse(&p, PRICES, strlen(PRICES), "t", &err), 0);
	assert_true(prices_rate(&p, "r2", "a3-highgpu-8g", 0, 1, PRICES_FLEX_START, &ub, &est) == 50.0);
	assert_false(ub);
	assert_true(est);
	assert_true(prices_rate(&p, "r2", "NVIDIA_TESLA_T4", 1, 1, PRICES_ON_DEMAND, &ub, &est) < 0);
	prices_release(&p);
	assert_int_equal(prices_parse(&p, "{\"regions\":{\"r\":{\"machines\":{\"m\":{\"spot\":-1}}}}}", 48, "t",
				      &err), VX_EINVAL);
	vx_err_release(&err);
	/* the shipped table parses */
	assert_int_equal(prices_parse(&p, prices_default_json, strlen(prices_default_json), "t", &err), 0);
	assert_true(prices_rate(&p, "us-central1", "a3-highgpu-8g", 0, 1, PRICES_ON_DEMAND, &ub, &est) > 0);
	prices_release(&p);
}

/*
 * Lookups go through the table's index: a region's entry before "*", a name
 * whose bytes run into the region's never matches another entry, and a name
 * longer than the lookup's stack buffer is still found.
 */
static void test_prices_index(void **unused)
{
	char long_name[300], json[1024];
	struct prices p;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	memset(long_name, 'm', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	snprintf(json, sizeof(json),
		 "{\"regions\":{\"r\":{\"machines\":{\"m\":{\"on_demand\":1},\"%s\":{\"on_demand\":7}},"
		 "\"vertex_machines\":{\"m\":{\"on_demand\":2}}},"
		 "\"1r\":{\"machines\":{\"m\":{\"on_demand\":3}}},"
		 "\"*\":{\"machines\":{\"m\":{\"on_demand\":4}},\"accelerators\":{\"m\":{\"on_demand\":5}}}}}",
		 long_name);
	assert_int_equal(prices_parse(&p, json, strlen(json), "t", &err), 0);
	assert_true(prices_rate(&p, "r", "m", 0, 1, PRICES_ON_DEMAND, NULL, NULL) == 2.0);
	assert_true(prices_rate(&p, "r", "m", 0, 0, PRICES_ON_DEMAND, NULL, NULL) == 1.0);
	assert_true(prices_rate(&p, "1r", "m", 0, 1, PRICES_ON_DEMAND, NULL, NULL) == 3.0);
	assert_true(prices_rate(&p, "elsewhere", "m", 0, 0, PRICES_ON_DEMAND, NULL, NULL) == 4.0);
	assert_true(prices_rate(&p, NULL, "m", 1, 0, PRICES_ON_DEMAND, NULL, NULL) == 5.0);
	assert_true(prices_rate(&p, "r", long_name, 0, 0, PRICES_ON_DEMAND, NULL, NULL) == 7.0);
	/* "m" + "1r" and "m1" + "r" are different entries */
	assert_true(prices_rate(&p, "r", "m1", 0, 0, PRICES_ON_DEMAND, NULL, NULL) < 0);
	assert_true(prices_rate(&p, "r", NULL, 0, 0, PRICES_ON_DEMAND, NULL, NULL) < 0);
	prices_release(&p);
}

/*
 * The lookup the index replaced: a walk over every row, a region's first
 * entry winning and the last "*" standing in where the region has none.
 * Kept here as the reference the hashed lookup must agree with.
 */
static const struct prices_entry *walk_one(const struct prices *p, const char *region, const char *name,
					   int accelerator, int vertex)
{
	const struct prices_entry *star = NULL;

	for (size_t i = 0; name && i < p->n; i++) {
		const struct prices_entry *e = &p->items[i];

		if (e->accelerator != accelerator || e->vertex != vertex || strcmp(e->name, name) != 0)
			continue;
		if (region && !strcmp(e->region, region))
			return e;
		if (!strcmp(e->region, "*"))
			star = e;
	}
	return star;
}

/* prices_rate as the walk answers it: a Vertex figure first, then the plain one. */
static double walk_rate(const struct prices *p, const char *region, const char *name, int accelerator,
			int want_vertex, enum prices_class c, int *upper_bound, int *estimate)
{
	const struct prices_entry *e = want_vertex ? walk_one(p, region, name, accelerator, 1) : NULL;
	enum prices_class used = c;

	if (!e)
		e = walk_one(p, region, name, accelerator, 0);
	if (!e)
		return -1;
	if (c == PRICES_FLEX_START && e->rate[c] < 0) {
		used = PRICES_ON_DEMAND;
		if (e->rate[used] >= 0)
			*upper_bound = 1;
	}
	if (e->rate[used] >= 0 && (e->estimate & (1u << used)))
		*estimate = 1;
	return e->rate[used];
}

/* One lookup both ways, every class and both preferences: same figure, same marks. */
static void assert_same_rate(const struct prices *p, const char *region, const char *name, int accelerator)
{
	for (int vertex = 0; vertex < 2; vertex++)
		for (int c = 0; c < PRICES_NCLASSES; c++) {
			int ub = 0, est = 0, wub = 0, west = 0;
			double got = prices_rate(p, region, name, accelerator, vertex, (enum prices_class)c, &ub,
						 &est);
			double want = walk_rate(p, region, name, accelerator, vertex, (enum prices_class)c, &wub,
						&west);

			if (got != want || ub != wub || est != west)
				fail_msg("%s %s accelerator=%d vertex=%d class=%d: index %g (%d %d), walk %g (%d %d)",
					 region ? region : "(none)", name, accelerator, vertex, c, got, ub, est, want,
					 wub, west);
		}
}

/*
 * The shipped table, every row: the index answers what the walk over all
 * rows answers, for the row's own region, for regions the table lacks or
 * spells differently, for no region, and for names one byte off (misses).
 */
static void test_prices_index_whole_table(void **unused)
{
	struct prices p;
	struct vx_err err = VX_ERR_INIT;
	size_t misses = 0;

	(void)unused;
	assert_int_equal(prices_parse(&p, prices_default_json, strlen(prices_default_json), "t", &err), 0);
	assert_true(p.n > 1000);
	for (size_t i = 0; i < p.n; i++) {
		const struct prices_entry *e = &p.items[i];
		char *longer = vx_asprintf("%sx", e->name), *shorter = vx_strdup(e->name);
		char *region_up = vx_asprintf("%s1", e->region);

		assert_non_null(longer);
		assert_non_null(shorter);
		assert_non_null(region_up);
		shorter[strlen(shorter) - 1] = '\0';
		assert_same_rate(&p, e->region, e->name, e->accelerator);
		assert_same_rate(&p, e->region, e->name, !e->accelerator);
		assert_same_rate(&p, "nowhere1", e->name, e->accelerator);
		assert_same_rate(&p, region_up, e->name, e->accelerator);
		assert_same_rate(&p, NULL, e->name, e->accelerator);
		assert_same_rate(&p, e->region, longer, e->accelerator);
		assert_same_rate(&p, e->region, shorter, e->accelerator);
		misses += prices_rate(&p, e->region, longer, e->accelerator, 1, PRICES_ON_DEMAND, NULL, NULL) < 0;
		free(longer);
		free(shorter);
		free(region_up);
	}
	/* the one-byte-off names are mostly not in the table: the misses were checked */
	assert_true(misses > p.n / 2);
	prices_release(&p);
}

static int near(double a, double b)
{
	return a > b - 1e-9 && a < b + 1e-9;
}

/* "src" names an entry of "sources"; "management_fee": "excluded" is read; old tables load without either. */
static void test_prices_sources(void **unused)
{
	static const char good[] = "{\"management_fee\":\"excluded\",\"sources\":{\"ce\":{\"date\":\"d\"}},"
				   "\"regions\":{\"r\":{\"machines\":{\"m\":{\"on_demand\":1,\"src\":\"ce\"},"
				   "\"n\":{\"on_demand\":1,\"src\":{\"on_demand\":\"ce\"}}}}}}";
	static const char bad[] = "{\"sources\":{\"ce\":{}},\"regions\":{\"r\":{\"machines\":{\"m\":"
				  "{\"on_demand\":1,\"src\":\"cd\"}}}}}";
	static const char bad2[] = "{\"sources\":{\"ce\":{}},\"regions\":{\"r\":{\"machines\":{\"m\":"
				   "{\"on_demand\":1,\"src\":{\"spot\":7}}}}}}";
	struct prices p;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	assert_int_equal(prices_parse(&p, good, strlen(good), "t.json", &err), 0);
	assert_true(p.fee_excluded);
	prices_release(&p);
	assert_int_equal(prices_parse(&p, PRICES, strlen(PRICES), "t.json", &err), 0);
	assert_false(p.fee_excluded);
	prices_release(&p);
	assert_int_equal(prices_parse(&p, bad, strlen(bad), "t.json", &err), VX_EINVAL);
	assert_string_equal(err.msg, "t.json: regions.r.machines.m.src: \"cd\" is not in \"sources\"");
	vx_err_release(&err);
	assert_int_equal(prices_parse(&p, bad2, strlen(bad2), "t.json", &err), VX_EINVAL);
	assert_string_equal(err.msg, "t.json: regions.r.machines.m.src.spot must name an entry of \"sources\"");
	vx_err_release(&err);
}

/* The shipped table, parsed; figures from data/prices-src/compute-machines-2026-07-30.json. */
static double shipped(const char *region, const char *name, int accelerator, int vertex, enum prices_class c,
		      int *est)
{
	struct prices p;
	struct vx_err err = VX_ERR_INIT;
	int ub = 0;
	double r;

	*est = 0;
	assert_int_equal(prices_parse(&p, prices_default_json, strlen(prices_default_json), "t", &err), 0);
	r = prices_rate(&p, region, name, accelerator, vertex, c, &ub, est);
	assert_false(ub);
	prices_release(&p);
	return r;
}

/* Every region its own published figure, never us-central1's. */
static void test_prices_region_own_figure(void **unused)
{
	int est;

	(void)unused;
	assert_true(near(shipped("europe-west4", "a2-highgpu-1g", 0, 1, PRICES_ON_DEMAND, &est), 3.747972));
	assert_false(est);
	assert_true(near(shipped("europe-west4", "a2-highgpu-1g", 0, 1, PRICES_SPOT, &est), 1.692835));
	assert_false(est);
	assert_true(near(shipped("us-central1", "a2-highgpu-1g", 0, 1, PRICES_ON_DEMAND, &est), 3.673385));
}

/* g2-standard-16 in us-central1: the published $1.147208, not the typed-in $1.2942. */
static void test_prices_g2_standard_16_published(void **unused)
{
	int est;

	(void)unused;
	assert_true(near(shipped("us-central1", "g2-standard-16", 0, 1, PRICES_ON_DEMAND, &est), 1.147208));
	assert_false(est);
}

/* A region with no row has no price: a3-megagpu-8g is not published for us-central1. */
static void test_prices_no_row_no_price(void **unused)
{
	int est;

	(void)unused;
	assert_true(shipped("us-central1", "a3-megagpu-8g", 0, 1, PRICES_ON_DEMAND, &est) < 0);
	assert_true(shipped("mars-north1", "a2-highgpu-1g", 0, 1, PRICES_ON_DEMAND, &est) < 0);
	assert_true(near(shipped("europe-west4", "a3-megagpu-8g", 0, 1, PRICES_ON_DEMAND, &est), 118.236831));
}

/* Derived figures: N1 on Vertex AI is 1.15 x Compute Engine; flex-start 0.5 x on-demand, an estimate. */
static void test_prices_derived(void **unused)
{
	int est;

	(void)unused;
	assert_true(near(shipped("us-central1", "n1-standard-4", 0, 1, PRICES_ON_DEMAND, &est), 0.218499));
	assert_false(est);
	assert_true(near(shipped("us-central1", "n1-standard-4", 0, 0, PRICES_ON_DEMAND, &est), 0.189999));
	assert_true(near(shipped("us-central1", "NVIDIA_TESLA_T4", 1, 1, PRICES_ON_DEMAND, &est), 0.4025));
	assert_true(near(shipped("us-central1", "NVIDIA_TESLA_T4", 1, 0, PRICES_SPOT, &est), 0.175));
	assert_true(shipped("europe-west4", "NVIDIA_TESLA_T4", 1, 1, PRICES_ON_DEMAND, &est) < 0);
	assert_true(near(shipped("europe-west4", "a2-highgpu-1g", 0, 1, PRICES_FLEX_START, &est), 1.873986));
	assert_true(est);
	assert_true(near(shipped("us-central1", "a3-ultragpu-8g", 0, 1, PRICES_ON_DEMAND, &est), 86.7596));
	assert_true(est);
	assert_true(shipped("us-central1", "a3-ultragpu-8g", 0, 1, PRICES_SPOT, &est) < 0);
}

/*
 * The change in hourly spend: runs started, minus the active runs a replace
 * or cancel stops (priced from their recorded spec, not the declared one),
 * plus reservations made or deleted (count change x the VM's rate).
 */
static void test_delta_stops_and_reservations(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limits l = { NULL, 0 };
	struct capacity_input in = { &f.st, &f.plan, NULL, &l, &f.prices, NULL, 0, 0 };
	struct plan_record old = { 0 }, gone = { 0 };
	struct stack_reservation sr;
	struct stack_accelerator acc = { (char *)(uintptr_t)"nvidia-tesla-t4", 1 };
	struct live_reservation lr;
	struct plan_action all[5];

	(void)unused;
	memset(&f, 0, sizeof(f));
	memset(&sr, 0, sizeof(sr));
	memset(&lr, 0, sizeof(lr));
	memset(all, 0, sizeof(all));
	job(&f, 0, "new", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);                /* starts 0.55/h */
	job(&f, 1, "old", "r1", "STANDARD", PLAN_REPLACE, "JOB_STATE_RUNNING");
	pool(&f, 1, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);                /* starts 0.55/h */
	/* the run it replaces was SPOT with 2 replicas x (n1-standard-4 + 2 T4): stops 2 x (0.1 + 2 x 0.15) */
	old.spec_json = "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\","
			"\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":2},\"replicaCount\":\"2\"}],"
			"\"scheduling\":{\"strategy\":\"SPOT\"}}";
	job_action_mut(&f.acts[1])->record = &old;
	job_action_mut(&f.acts[1])->cancel_name = (char *)(uintptr_t) "projects/p/locations/r1/customJobs/1";
	job(&f, 2, "gone", "r1", "STANDARD", PLAN_CANCEL, "JOB_STATE_PENDING");
	/* no longer declared: an on-demand a3-highgpu-8g, stops 80/h */
	gone.spec_json = "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"a3-highgpu-8g\","
			 "\"acceleratorType\":\"NVIDIA_H100_80GB\",\"acceleratorCount\":8},\"replicaCount\":\"1\"}]}";
	job_action_mut(&f.acts[2])->record = &gone;
	job_action_mut(&f.acts[2])->decl = NULL;
	f.acts[2].kdecl = NULL;
	f.acts[2].region = NULL;
	job_action_mut(&f.acts[2])->cancel_name = (char *)(uintptr_t) "projects/p/locations/r1/customJobs/2";
	setup(&f, 3);
	memcpy(all, f.acts, sizeof(f.acts));
	/* a reservation made: 2 x (n1-standard-4 + 1 T4) = +1.10/h */
	sr.zone = (char *)(uintptr_t)"r1-a";
	sr.machine_type = (char *)(uintptr_t)"n1-standard-4";
	sr.accelerators = &acc;
	sr.naccelerators = 1;
	all[3].op = PLAN_CREATE;
	all[3].address = (char *)(uintptr_t)"reservation.made";
	all[3].kind_of = &kind_reservation;
	all[3].kdecl = &sr;
	all[3].has_values = 1;
	all[3].old_value = -2;
	all[3].new_value = 2;
	/* a reservation deleted: 1 x a3-highgpu-8g (GPUs bundled) = -80/h */
	lr.zone = (char *)(uintptr_t)"r1-b";
	lr.machine_type = (char *)(uintptr_t)"a3-highgpu-8g";
	lr.accelerator_type = (char *)(uintptr_t)"nvidia-h100-80gb";
	lr.accelerator_count = 8;
	lr.count = 1;
	all[4].op = PLAN_DELETE;
	all[4].address = (char *)(uintptr_t)"reservation.dropped";
	all[4].kind_of = &kind_reservation;
	all[4].klive = &lr;
	all[4].has_values = 1;
	all[4].old_value = 1;
	all[4].new_value = -2;
	f.plan.actions = all;
	f.plan.n = 5;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_true(r.delta_known);
	assert_true(near(r.started_per_hour, 1.1));
	assert_true(near(r.stopped_per_hour, 2 * (0.1 + 2 * 0.15) + 80));
	assert_true(near(r.reservations_per_hour, 2 * (0.2 + 0.35) - 80));
	assert_true(near(r.delta_per_hour, 1.1 - 80.8 + 1.1 - 80));
	/* the most this apply can cost is what it starts: 7 days of 1.10/h */
	assert_true(near(r.max_total, 1.1 * 24 * 7));
	capacity_release(&r);
	/* a stopped run whose spec vx never recorded: unknown, never zero */
	job_action_mut(&all[2])->record = NULL;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_false(r.delta_known);
	capacity_release(&r);
	teardown(&f);
}

/*
 * What is held by the newer kinds, through their rows' held and capacity
 * slots: a persistent resource in r1 (n1-standard-4 + 1 T4, 2 machines,
 * autoscaling 1..4) counts its max, 4 T4, in r1's on-demand quota and costs
 * 2 x (0.2 + 0.35) = 1.10/h (0.55 .. 2.20 as it scales); a job on it draws
 * and costs nothing; a booking of 2 a3-highgpu-8g (8 H100 bundled) for 10 h
 * costs 2 x 80 x 10 = 1600 for its window, and holds its 16 H100 only inside it.
 */
static void test_held_kinds(void **unused)
{
	struct fixture f;
	struct capacity_report r;
	struct vx_err err = VX_ERR_INIT;
	struct live_quota_limit lim[1];
	struct live_quota_limits l = limits_of(lim, 1);
	struct capacity_input in = { &f.st, &f.plan, NULL, &l, &f.prices, NULL, 0, 0 };
	struct stack_persistent pr;
	struct stack_persistent_pool pp;
	struct stack_future fr;
	struct plan_action all[4];
	const int64_t t = INT64_C(1767862800000), hour = 3600000;
	const struct capacity_cost *c;

	(void)unused;
	memset(&f, 0, sizeof(f));
	memset(&pr, 0, sizeof(pr));
	memset(&pp, 0, sizeof(pp));
	memset(&fr, 0, sizeof(fr));
	memset(all, 0, sizeof(all));
	limit(lim, machines_quota_id(machines_gpu_by_vertex("NVIDIA_TESLA_T4"), "STANDARD"), 16);
	job(&f, 0, "ev", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 0, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	f.jobs[0].spec.held_ref = (char *)(uintptr_t) "pool";
	job(&f, 1, "plain", "r1", "STANDARD", PLAN_CREATE, NULL);
	pool(&f, 1, "n1-standard-4", "NVIDIA_TESLA_T4", 1, 1);
	setup(&f, 2);
	pp.id = (char *)(uintptr_t) "t4s";
	pp.machine_type = (char *)(uintptr_t) "n1-standard-4";
	pp.accelerator_type = (char *)(uintptr_t) "NVIDIA_TESLA_T4";
	pp.accelerator_count = 1;
	pp.replica_count = 2;
	pp.has_autoscaling = 1;
	pp.min_replica_count = 1;
	pp.max_replica_count = 4;
	pr.d.name = (char *)(uintptr_t) "pool";
	pr.d.address = (char *)(uintptr_t) "persistent_resource.pool";
	pr.region = (char *)(uintptr_t) "r1";
	pr.pools = &pp;
	pr.npools = 1;
	fr.d.name = (char *)(uintptr_t) "gpus";
	fr.d.address = (char *)(uintptr_t) "future_reservation.gpus";
	fr.zone = (char *)(uintptr_t) "r1-a";
	fr.machine_type = (char *)(uintptr_t) "a3-highgpu-8g";
	fr.accelerator = (char *)(uintptr_t) "nvidia-h100-80gb";
	fr.accelerator_count = 8;
	fr.total_count = 2;
	fr.start_ms = t;
	fr.end_ms = t + 10 * hour;
	*stack_slot(&f.st, &kind_persistent) = (struct stack_kind_decls){ .items = &pr, .n = 1 };
	*stack_slot(&f.st, &kind_future) = (struct stack_kind_decls){ .items = &fr, .n = 1 };
	memcpy(all, f.acts, 2 * sizeof(*all));
	all[2] = (struct plan_action){ .op = PLAN_CREATE, .address = pr.d.address, .kind_of = &kind_persistent, .kdecl = &pr, .has_values = 1, .old_value = -2, .new_value = 2 };
	all[3] = (struct plan_action){ .op = PLAN_CREATE, .address = fr.d.address, .kind_of = &kind_future, .kdecl = &fr, .has_values = 1, .old_value = -2, .new_value = 2 };
	f.plan.actions = all;
	f.plan.n = 4;
	in.now_ms = t - hour;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.nrows, 2);
	assert_string_equal(r.rows[0].region, "r1");
	assert_string_equal(r.rows[0].accelerator, "NVIDIA_TESLA_T4");
	assert_int_equal(r.rows[0].cls, CAPACITY_ON_DEMAND);
	assert_int_equal(r.rows[0].in_use, 0);
	assert_int_equal(r.rows[0].adds, 5);
	assert_int_equal(r.rows[0].limit, 16);
	assert_string_equal(r.rows[1].reservation, "future_reservation.gpus");
	assert_int_equal(r.rows[1].limit, 0);
	assert_int_equal(r.rows[1].window_end_ms, t + 10 * hour);
	assert_int_equal(r.misfits.n, 0);
	assert_non_null(c = capacity_cost_of(&r, "job.ev"));
	assert_true(c->known && near(c->usd_per_hour, 0) && near(c->usd_max, 0));
	assert_non_null(c = capacity_cost_of(&r, "persistent_resource.pool"));
	assert_true(c->known && c->held && c->has_range);
	assert_true(near(c->usd_per_hour, 1.1) && near(c->usd_min, 0.55) && near(c->usd_max_per_hour, 2.2));
	assert_int_equal(c->vms_max, 4);
	assert_null(c->note);
	assert_non_null(c = capacity_cost_of(&r, "future_reservation.gpus"));
	assert_true(c->known && c->estimate && near(c->window_hours, 10) && near(c->usd_window, 1600));
	assert_int_equal(c->gpus, 16);
	assert_true(near(r.reservations_per_hour, 1.1));
	assert_true(near(r.bookings_total, 1600));
	assert_true(near(r.delta_per_hour, 0.55 + 1.1));
	assert_true(near(r.max_total, 0.55 * 24 * 7));
	capacity_release(&r);
	/* Inside the window the booking holds its 16 H100; no job names the pool now: said. */
	in.now_ms = t + hour;
	f.jobs[0].spec.held_ref = NULL;
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.rows[1].limit, 16);
	assert_string_equal(capacity_cost_of(&r, "persistent_resource.pool")->note, "no declared job runs on it");
	capacity_release(&r);
	/* A quota too small for the pool's max: the pool is the misfit. */
	lim[0].value = 3;
	f.jobs[0].spec.held_ref = (char *)(uintptr_t) "pool";
	assert_int_equal(capacity_build(&r, &in, &err), 0);
	assert_int_equal(r.misfits.n, 2);
	assert_string_equal(r.misfits.items[0].msg, "persistent_resource.pool: does not fit: needs 4 on-demand T4 "
						    "in r1, limit 3, 0 in use or started before it: 3 free");
	capacity_release(&r);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flex_start_sum),
		cmocka_unit_test(test_multi_pool_and_running),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_pending_grant_is_unknown),
		cmocka_unit_test(test_limits_not_read),
		cmocka_unit_test(test_prices_star),
		cmocka_unit_test(test_prices_index),
		cmocka_unit_test(test_prices_index_whole_table),
		cmocka_unit_test(test_prices_sources),
		cmocka_unit_test(test_prices_region_own_figure),
		cmocka_unit_test(test_prices_g2_standard_16_published),
		cmocka_unit_test(test_prices_no_row_no_price),
		cmocka_unit_test(test_prices_derived),
		cmocka_unit_test(test_delta_stops_and_reservations),
		cmocka_unit_test(test_held_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
