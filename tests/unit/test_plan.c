/* Unit tests for reconcile/plan.c: one test per row of DESIGN.md's action table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/failure.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"

#define HASH_A "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000"
#define HASH_B "bbbbbbbbbbbb0000000000000000000000000000000000000000000000000000"
#define JOB1 "projects/p/locations/us-central1/customJobs/1"
#define JOB2 "projects/p/locations/us-central1/customJobs/2"

static const char *const on_capacity[] = { "stockout", "preempted" };

static struct plan_decl decl(const char *hash)
{
	struct plan_decl d = {
		.address = "job.train", .name = "train", .region = "us-central1",
		.spec_hash = hash, .shape = "a3-highgpu-8g ×1, 8×H100 80GB", .run = 1,
		.resubmit_on = on_capacity, .nresubmit_on = 2, .max_attempts = 3,
	};
	return d;
}

static struct vx_label *labels(const char *job, const char *shorthash, const char *run, const char *att)
{
	struct vx_label *l = calloc(5, sizeof(*l));

	l[0].key = strdup("vx-stack"); l[0].value = strdup("research");
	l[1].key = strdup("vx-job"); l[1].value = strdup(job);
	l[2].key = strdup("vx-spec"); l[2].value = strdup(shorthash);
	l[3].key = strdup("vx-run"); l[3].value = strdup(run);
	l[4].key = strdup("vx-attempt"); l[4].value = strdup(att);
	return l;
}

static void add_live(struct live_jobs *js, const char *name, const char *state, int code,
		     const char *msg, const char *job, const char *shorthash, const char *run,
		     const char *att, int64_t created)
{
	struct live_job j = { 0 };

	j.name = strdup(name);
	j.region = strdup("us-central1");
	j.state = strdup(state);
	j.error_code = code;
	j.error_message = msg ? strdup(msg) : NULL;
	j.labels = labels(job, shorthash, run, att);
	j.nlabels = 5;
	j.create_ms = created;
	j.end_ms = 1795341926000;
	assert_int_equal(live_jobs_push(js, &j), 0);
	live_job_release(&j);
}

static void build(struct plan *p, const struct plan_decl *d, size_t nd, const struct plan_record *r,
		  size_t nr, const struct live_jobs *live)
{
	struct plan_input in = { .stack = "research", .decls = d, .ndecls = nd, .records = r,
				 .nrecords = nr, .live = live };
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(plan_build(p, &in, &err), 0);
}

static void test_create_then_noop(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	build(&p, &d, 1, NULL, 0, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].kind, PLAN_CREATE);
	assert_string_equal(p.actions[0].reason, "new job");
	assert_int_equal(p.actions[0].attempt, 1);
	assert_true(plan_has_changes(&p));
	plan_release(&p);

	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].kind, PLAN_NOOP);
	assert_false(plan_has_changes(&p));
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_adopt_after_crash(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;

	(void)state;
	/* A crashed apply created the job but never wrote state. */
	add_live(&live, JOB1, "JOB_STATE_QUEUED", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, NULL, 0, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].kind, PLAN_ADOPT);
	assert_string_equal(p.actions[0].adopt_name, JOB1);
	assert_int_equal(p.counts[PLAN_CANCEL], 0);
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_replace_and_rerun(void **state)
{
	struct plan_decl d = decl(HASH_B);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_REPLACE);
	assert_string_equal(p.actions[0].cancel_name, JOB1);
	assert_string_equal(p.actions[0].reason, "spec changed while running");
	plan_release(&p);

	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_SUCCEEDED");
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_RERUN);
	assert_null(p.actions[0].cancel_name);
	assert_string_equal(p.actions[0].reason, "spec changed after the last run succeeded");
	plan_release(&p);

	/* run bump of an unchanged spec */
	d = decl(HASH_A);
	d.run = 2;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_RERUN);
	assert_string_equal(p.actions[0].reason, "run bumped 1 -> 2 after the last run succeeded");
	assert_int_equal(p.actions[0].run, 2);
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_on_change_after_finish_and_protect(void **state)
{
	struct plan_decl d = decl(HASH_B);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };
	char *line;

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	d.on_change = PLAN_ON_CHANGE_AFTER_FINISH;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_NOOP);
	assert_non_null(strstr(p.actions[0].reason, "after-finish"));
	plan_release(&p);

	d.on_change = PLAN_ON_CHANGE_REPLACE;
	d.protect = 1;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.errors.n, 1);
	line = vx_diag_format(&p.errors.items[0]);
	assert_non_null(strstr(line, "job.train is protected (protect: true)"));
	assert_non_null(strstr(line, JOB1));
	free(line);
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_resubmit_budget(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_FAILED", 8, "Resources are insufficient in region: us-central1.",
		 "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_RESUBMIT);
	assert_int_equal(p.actions[0].attempt, 2);
	assert_string_equal(p.actions[0].failure_class, "stockout");
	assert_non_null(strstr(p.actions[0].reason, "attempt 2/3 after stockout at "));
	plan_release(&p);

	run.attempt = 3;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_NOOP);
	assert_non_null(strstr(p.actions[0].reason, "resubmit budget exhausted (3/3 attempts)"));
	plan_release(&p);

	/* user-error is not in resubmit.on */
	run.attempt = 1;
	free(live.items[0].error_message);
	live.items[0].error_message = strdup("The replica workerpool0-0 exited with a non-zero status of 1.");
	live.items[0].error_code = 3;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_NOOP);
	assert_string_equal(p.actions[0].failure_class, "user-error");
	assert_non_null(strstr(p.actions[0].reason, "not resubmitted"));
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_resubmit_adopts_crashed_attempt(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_FAILED", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_FAILED", 8, "Resources are insufficient in region: us-central1.",
		 "train", "aaaaaaaaaaaa", "1", "1", 1);
	/* attempt 2 was created by an apply that died before writing state */
	add_live(&live, JOB2, "JOB_STATE_PENDING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "2", 2);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].kind, PLAN_ADOPT);
	assert_string_equal(p.actions[0].adopt_name, JOB2);
	assert_int_equal(p.actions[0].attempt, 2);
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_removed_cancel_forget_and_drift(void **state)
{
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };
	struct plan_decl d = decl(HASH_A);

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_CANCEL);
	assert_string_equal(p.actions[0].cancel_name, JOB1);
	plan_release(&p);

	r.protect = 1;
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.errors.n, 1);
	plan_release(&p);
	r.protect = 0;

	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_SUCCEEDED");
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_FORGET);
	plan_release(&p);

	/* cancelled behind vx's back: drift, and not resubmitted unless listed */
	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_CANCELLED");
	live.items[0].error_code = 1;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].kind, PLAN_NOOP);
	assert_string_equal(p.actions[0].drift, "run " JOB1 " was cancelled outside vx");
	assert_int_equal(p.drifts, 1);
	plan_release(&p);

	/* the state's run has vanished from the API */
	live_jobs_release(&live);
	build(&p, &d, 1, &r, 1, &live);
	assert_string_equal(p.actions[0].drift, "run " JOB1 " was deleted outside vx");
	plan_release(&p);
}

static void test_untracked_job_cancelled(void **state)
{
	struct live_jobs live = { 0 };
	struct plan p;

	(void)state;
	add_live(&live, JOB2, "JOB_STATE_RUNNING", 0, NULL, "gone", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, NULL, 0, NULL, 0, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].kind, PLAN_CANCEL);
	assert_string_equal(p.actions[0].address, "job.gone");
	assert_non_null(p.actions[0].drift);
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_targets_replace_refresh_off(void **state)
{
	struct plan_decl ds[2] = { decl(HASH_A), decl(HASH_A) };
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_SUCCEEDED", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };
	const char *targets[] = { "job.other" };
	const char *replaces[] = { "job.train" };
	struct plan_input in = { .stack = "research", .decls = ds, .ndecls = 2, .records = &r, .nrecords = 1 };
	struct vx_err err = VX_ERR_INIT;
	struct plan p;

	(void)state;
	ds[1].address = "job.other";
	ds[1].name = "other";
	in.targets = targets;
	in.ntargets = 1;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.actions[0].address, "job.other");
	assert_int_equal(p.actions[0].kind, PLAN_CREATE);
	plan_release(&p);

	in.ntargets = 0;
	in.replaces = replaces;
	in.nreplaces = 1;
	/* refresh off: live is NULL, last seen state SUCCEEDED -> rerun on -replace */
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.actions[1].address, "job.train");
	assert_int_equal(p.actions[1].kind, PLAN_RERUN);
	assert_non_null(strstr(p.actions[1].reason, "replacement requested"));
	plan_release(&p);
}

static void test_failure_classes(void **state)
{
	(void)state;
	assert_null(failure_classify("JOB_STATE_SUCCEEDED", 0, NULL, 0));
	assert_null(failure_classify("JOB_STATE_RUNNING", 0, NULL, 0));
	assert_null(failure_classify("JOB_STATE_CANCELLED", 1, "cancelled", 1));
	assert_string_equal(failure_classify("JOB_STATE_CANCELLED", 1, "x", 0), "cancelled-outside");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 8,
		"Resources are insufficient in region: us-central1.", 0), "stockout");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 8,
		"The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus", 0), "quota");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 3,
		"The replica workerpool0-0 exited with a non-zero status of 1.", 0), "user-error");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 14, "The VM was preempted.", 0), "preempted");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 4,
		"Job could not be scheduled within the max wait duration.", 0), "wait-timeout");
	assert_string_equal(failure_classify("JOB_STATE_FAILED", 13, "Internal error occurred.", 0), "internal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_then_noop),
		cmocka_unit_test(test_adopt_after_crash),
		cmocka_unit_test(test_replace_and_rerun),
		cmocka_unit_test(test_on_change_after_finish_and_protect),
		cmocka_unit_test(test_resubmit_budget),
		cmocka_unit_test(test_resubmit_adopts_crashed_attempt),
		cmocka_unit_test(test_removed_cancel_forget_and_drift),
		cmocka_unit_test(test_untracked_job_cancelled),
		cmocka_unit_test(test_targets_replace_refresh_off),
		cmocka_unit_test(test_failure_classes),
	};
	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
