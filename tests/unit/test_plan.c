/* Unit tests for reconcile/plan.c: one test per row of DESIGN.md's action table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/failure.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "state/state.h"
#include "util/buf.h"

#define HASH_A "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000"
#define HASH_B "bbbbbbbbbbbb0000000000000000000000000000000000000000000000000000"
#define JOB1 "projects/p/locations/us-central1/customJobs/1"
#define JOB2 "projects/p/locations/us-central1/customJobs/2"
#define LINEAGE "0123456789ab"

static const char *const on_capacity[] = { "stockout", "preempted" };

static struct plan_decl decl(const char *hash)
{
	struct plan_decl d = {
		.address = "job.train", .name = "train", .project = "p", .region = "us-central1",
		.spec_hash = hash, .shape = "a3-highgpu-8g ×1, 8×H100 80GB", .run = 1,
		.resubmit_on = on_capacity, .nresubmit_on = 2, .max_attempts = 3,
	};
	return d;
}

static struct vx_label *labels(const char *job, const char *shorthash, const char *run, const char *att,
			       const char *lineage)
{
	struct vx_label *l = calloc(6, sizeof(*l));

	l[0].key = strdup("vx-stack"); l[0].value = strdup("research");
	l[1].key = strdup("vx-job"); l[1].value = strdup(job);
	l[2].key = strdup("vx-spec"); l[2].value = strdup(shorthash);
	l[3].key = strdup("vx-run"); l[3].value = strdup(run);
	l[4].key = strdup("vx-attempt"); l[4].value = strdup(att);
	if (lineage) {
		l[5].key = strdup("vx-lineage");
		l[5].value = strdup(lineage);
	}
	return l;
}

/* A live job of another state (lineage), or of none (NULL). */
static void add_live_of(struct live_jobs *js, const char *name, const char *state, int code,
			const char *msg, const char *job, const char *shorthash, const char *run,
			const char *att, int64_t created, const char *lineage)
{
	struct live_job j = { 0 };

	j.name = strdup(name);
	j.region = strdup("us-central1");
	j.state = strdup(state);
	j.error_code = code;
	j.error_message = msg ? strdup(msg) : NULL;
	j.labels = labels(job, shorthash, run, att, lineage);
	j.nlabels = lineage ? 6 : 5;
	j.create_ms = created;
	j.end_ms = 1795341926000;
	assert_int_equal(live_jobs_push(js, &j), 0);
	live_job_release(&j);
}

static void add_live(struct live_jobs *js, const char *name, const char *state, int code,
		     const char *msg, const char *job, const char *shorthash, const char *run,
		     const char *att, int64_t created)
{
	add_live_of(js, name, state, code, msg, job, shorthash, run, att, created, LINEAGE);
}

static void build(struct plan *p, const struct plan_decl *d, size_t nd, const struct plan_record *r,
		  size_t nr, const struct live_jobs *live)
{
	struct plan_input in = { .stack = "research", .lineage = LINEAGE, .decls = d, .ndecls = nd,
				 .records = r, .nrecords = nr, .live = live };
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
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	assert_string_equal(p.actions[0].reason, "new job");
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 1);
	assert_true(plan_has_changes(&p));
	plan_release(&p);

	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_false(plan_has_changes(&p));
	plan_release(&p);
	live_jobs_release(&live);
}

/*
 * The policy the watcher acts on (issue 31): a declaration whose policy is
 * not the record's is an update naming each field that differs; a record
 * without one (an older vx) is an update that records it; an equal one is
 * no change. The watcher's wording of the same difference uses arrows.
 */
static void test_policy_update(void **state)
{
	char stockout[] = "stockout", preempted[] = "preempted", prep[] = "job.prep", train[] = "job.train";
	char abc[] = "abc", abd[] = "abd";
	char *on_applied[] = { stockout }, *on_declared[] = { stockout, preempted };
	char *after[] = { prep, train };
	struct state_policy applied = { .resubmit_on = on_applied, .nresubmit_on = 1, .max_attempts = 2,
					.delay_ms = 30000, .after = after, .nafter = 2, .max_parallel = 1 };
	struct state_policy declared = applied;
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run,
				 .applied = &applied };
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	d.policy = &declared;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);

	declared.resubmit_on = on_declared;
	declared.nresubmit_on = 2;
	declared.max_attempts = 10;
	declared.delay_ms = 120000;
	declared.fallback_rungs = 1;
	declared.fallback_hash = abc;
	declared.nafter = 1;
	declared.after = after + 1;
	declared.max_parallel = 6;
	declared.max_failed = 3;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_UPDATE);
	assert_string_equal(p.actions[0].reason,
			    "resubmit.on: [stockout] -> [stockout, preempted]; resubmit.maxAttempts: 2 -> 10; "
			    "resubmit.delay: 30s -> 2m; resubmit.fallback: none -> 1 rung; "
			    "after: [job.prep, job.train] -> [job.train]; maxParallel: 1 -> 6; maxFailed: none -> 3");
	assert_true(plan_has_changes(&p));
	plan_release(&p);

	assert_int_equal(policy_diff(&b, &applied, &declared, 0), 1);
	assert_string_equal(vx_buf_str(&b),
			    "resubmit.on [stockout] \xe2\x86\x92 [stockout, preempted], resubmit.maxAttempts 2 \xe2\x86\x92 10, "
			    "resubmit.delay 30s \xe2\x86\x92 2m, resubmit.fallback none \xe2\x86\x92 1 rung, "
			    "after [job.prep, job.train] \xe2\x86\x92 [job.train], maxParallel 1 \xe2\x86\x92 6, "
			    "maxFailed none \xe2\x86\x92 3");
	vx_buf_reset(&b);
	/* The same number of rungs, another ladder; a delay of 90 s. */
	applied = declared;
	applied.fallback_hash = abd;
	applied.delay_ms = 90000;
	assert_int_equal(policy_diff(&b, &applied, &declared, 1), 1);
	assert_string_equal(vx_buf_str(&b), "resubmit.delay: 1m30s -> 2m; resubmit.fallback: 1 rung -> 1 rung, edited");
	vx_buf_reset(&b);
	assert_int_equal(policy_diff(&b, &declared, &declared, 0), 0);
	assert_int_equal(b.len, 0);
	vx_buf_release(&b);

	/* A record from an older vx: recorded by the next apply. */
	r.applied = NULL;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_UPDATE);
	assert_string_equal(p.actions[0].reason, "records the policy applied (resubmit, after:, the sweep's limits): "
			    "the state holds none, it was written by an older vx");
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
	assert_int_equal(p.actions[0].op, PLAN_ADOPT);
	assert_string_equal(job_action_of(&p.actions[0])->adopt_name, JOB1);
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
	assert_int_equal(p.actions[0].op, PLAN_REPLACE);
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	assert_string_equal(p.actions[0].reason, "spec changed while running");
	plan_release(&p);

	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_SUCCEEDED");
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RERUN);
	assert_null(job_action_of(&p.actions[0])->cancel_name);
	assert_string_equal(p.actions[0].reason, "spec changed after the last run succeeded");
	plan_release(&p);

	/* run bump of an unchanged spec */
	d = decl(HASH_A);
	d.run = 2;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RERUN);
	assert_string_equal(p.actions[0].reason, "run bumped 1 -> 2 after the last run succeeded");
	assert_int_equal(job_action_of(&p.actions[0])->run, 2);
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
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
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
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "stockout");
	assert_non_null(strstr(p.actions[0].reason, "attempt 2/3 after stockout at "));
	assert_int_equal(job_action_of(&p.actions[0])->error_code, 8);
	assert_string_equal(job_action_of(&p.actions[0])->error_message, "Resources are insufficient in region: us-central1.");
	plan_release(&p);

	run.attempt = 3;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_non_null(strstr(p.actions[0].reason, "resubmit budget exhausted (3/3 attempts)"));
	plan_release(&p);

	/* user-error is not in resubmit.on */
	run.attempt = 1;
	free(live.items[0].error_message);
	live.items[0].error_message = strdup("The replica workerpool0-0 exited with a non-zero status of 1.");
	live.items[0].error_code = 3;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "user-error");
	assert_non_null(strstr(p.actions[0].reason, "not resubmitted"));
	plan_release(&p);

	/* a message no rule knows: unknown, not resubmitted, and the plan says why */
	free(live.items[0].error_message);
	live.items[0].error_message = strdup("Something Google never said before.");
	live.items[0].error_code = 0;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "unknown");
	assert_string_equal(job_action_of(&p.actions[0])->error_message, "Something Google never said before.");
	assert_non_null(strstr(p.actions[0].reason, "; not resubmitted: no rule of vx knows this message, so it may "
						    "fail the same way again (list unknown in resubmit.on to resubmit "
						    "such failures)"));
	plan_release(&p);
	live_jobs_release(&live);
}

/*
 * Google reports a reclaimed Spot VM as a STOCKOUT: the planner derives the
 * preemption from the job (SPOT, started), so resubmit.on [preempted] acts.
 */
static void test_spot_started_stockout_plans_preempted(void **state)
{
	static const char *const on_preempted[] = { "preempted" };
	static const struct plan_rung_id spot[] = { { "us-central1", "SPOT", "g2-standard-4", NULL } };
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	d.resubmit_on = on_preempted;
	d.nresubmit_on = 1;
	d.rung_ids = spot;
	add_live(&live, JOB1, "JOB_STATE_FAILED", 8, "Resources are insufficient in region: us-central1.",
		 "train", "aaaaaaaaaaaa", "1", "1", 1);
	live.items[0].start_ms = 1795341000000;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "preempted");
	plan_release(&p);

	/* Never started: a stockout, which resubmit.on does not list. */
	live.items[0].start_ms = 0;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "stockout");
	plan_release(&p);

	/* Without a live listing, the start the state recorded decides. */
	run.state = "JOB_STATE_FAILED";
	run.error_code = 8;
	run.error_message = "Resources are insufficient in region: us-central1.";
	run.started_ms = 1795341000000;
	build(&p, &d, 1, &r, 1, NULL);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "preempted");
	plan_release(&p);
	live_jobs_release(&live);
}

/* A refused create is an attempt: resubmit.on, maxAttempts and a backoff decide the next. */
static void test_refused_create_is_an_attempt(void **state)
{
	static const char *const on_refused[] = { "refused" };
	static const char *const replace[] = { "job.train" };
	struct plan_decl d = decl(HASH_A);
	struct plan_record r = { .address = "job.train",
		.refusal = { .n = 1, .spec_hash = HASH_A, .run = 1, .attempt = 1, .at_ms = 1795341000000,
			     .cls = "refused", .message = "vertex: creating job: PERMISSION_DENIED: no" } };
	struct plan_input in = { .stack = "research", .lineage = LINEAGE, .decls = &d, .ndecls = 1,
				 .records = &r, .nrecords = 1, .now_ms = 1795341000000 + 30000 };
	struct vx_err err = VX_ERR_INIT;
	struct plan p;

	(void)state;
	/* not listed: shown, never asked again */
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "refused");
	assert_string_equal(job_action_of(&p.actions[0])->error_message, "vertex: creating job: PERMISSION_DENIED: no");
	assert_string_equal(p.actions[0].reason, "the create was refused (refused at 2026-11-22 09:50Z, attempt 1); "
			    "not asked again: refused is not in resubmit.on; fix the cause, then vxapply -replace job.train");
	plan_release(&p);

	/* listed: not before resubmit.delay (at least a minute) has passed */
	d.resubmit_on = on_refused;
	d.nresubmit_on = 1;
	d.retry_delay_ms = 1000;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_int_equal(job_action_of(&p.actions[0])->not_before_ms, 1795341000000 + 60000);
	assert_string_equal(p.actions[0].reason, "the create was refused (refused at 2026-11-22 09:50Z, 1 in a row); "
			    "attempt 2/3 not before 2026-11-22 09:51:00Z (backoff)");
	plan_release(&p);
	/* doubling per refusal in a row */
	r.refusal.n = 3;
	in.now_ms = 1795341000000 + 200000;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(job_action_of(&p.actions[0])->not_before_ms, 1795341000000 + 240000);
	plan_release(&p);

	/* past it: the next attempt */
	in.now_ms = 1795341000000 + 240000;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
	assert_string_equal(p.actions[0].reason, "attempt 2/3 after the create was refused (refused at 2026-11-22 09:50Z)");
	plan_release(&p);

	/* the budget counts refusals */
	r.refusal.attempt = 3;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_non_null(strstr(p.actions[0].reason, "resubmit budget exhausted (3/3 attempts)"));
	plan_release(&p);

	/* -replace asks again at once */
	in.replaces = replace;
	in.nreplaces = 1;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 4);
	plan_release(&p);

	/* a refusal of another spec is not this one's */
	in.nreplaces = 0;
	r.refusal.spec_hash = HASH_B;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 1);
	plan_release(&p);
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
	assert_int_equal(p.actions[0].op, PLAN_ADOPT);
	assert_string_equal(job_action_of(&p.actions[0])->adopt_name, JOB2);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
	plan_release(&p);
	live_jobs_release(&live);
}

/*
 * A state rewound to an older version forgot attempts 2 and 3 (the state
 * says attempt 1 failed); attempt 2's job was deleted since, attempt 3's
 * is still listed. The next attempt never takes a number a live job of
 * (spec, run) carries, and maxAttempts counts it: 3 of 3 are spent.
 */
#define JOB3 "projects/p/locations/us-central1/customJobs/3"
static void test_resubmit_counts_attempts_the_state_forgot(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_FAILED", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_FAILED", 8, "Resources are insufficient in region: us-central1.",
		 "train", "aaaaaaaaaaaa", "1", "1", 1);
	add_live(&live, JOB3, "JOB_STATE_FAILED", 8, "Resources are insufficient in region: us-central1.",
		 "train", "aaaaaaaaaaaa", "1", "3", 3);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(p.actions[0].reason,
			    "failed (stockout at 2026-11-22 10:05Z); resubmit budget exhausted (3/3 attempts); "
			    "attempt 3 is " JOB3 " (failed), which the state does not record");
	plan_release(&p);
	/* With a budget left, the next attempt is 4, not 2. */
	d.max_attempts = 5;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 4);
	assert_string_equal(p.actions[0].reason,
			    "attempt 4/5 after stockout at 2026-11-22 10:05Z; attempt 3 is " JOB3
			    " (failed), which the state does not record");
	plan_release(&p);
	/* A run of another spec does not count. */
	free(live.items[1].labels[2].value);
	live.items[1].labels[2].value = strdup("bbbbbbbbbbbb");
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
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
	assert_int_equal(p.actions[0].op, PLAN_CANCEL);
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	plan_release(&p);

	r.protect = 1;
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.errors.n, 1);
	plan_release(&p);
	r.protect = 0;

	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_SUCCEEDED");
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_FORGET);
	plan_release(&p);

	/* cancelled behind vx's back: drift, and not resubmitted unless listed */
	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_CANCELLED");
	live.items[0].error_code = 1;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(p.actions[0].drift, "run " JOB1 " was cancelled outside vx");
	assert_int_equal(p.drifts, 1);
	plan_release(&p);

	/* the state's run has vanished from the API */
	live_jobs_release(&live);
	build(&p, &d, 1, &r, 1, &live);
	assert_string_equal(p.actions[0].drift, "run " JOB1 " was deleted outside vx");
	plan_release(&p);
}

/*
 * A job made by hand and imported without vx's labels is forgotten, left
 * running, when its declaration is removed; onRemove: cancel cancels it. A
 * run vx started is cancelled whatever onRemove says (forgotten, the next
 * plan would cancel it as untracked). onRemove is recorded like protect.
 */
static void test_removed_import_is_forgotten(void **state)
{
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1,
				.region = "us-central1" };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run,
				 .unlabelled_import = 1 };
	struct plan_decl d = decl(HASH_A);
	struct live_job j = { 0 };

	(void)state;
	j.name = strdup(JOB1);
	j.region = strdup("us-central1");
	j.state = strdup("JOB_STATE_RUNNING");
	assert_int_equal(live_jobs_push(&live, &j), 0);
	live_job_release(&j);
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_FORGET);
	assert_null(job_action_of(&p.actions[0])->cancel_name);
	assert_string_equal(p.actions[0].reason, "no longer declared; run " JOB1 " is running: it was "
			    "imported (vx import) without vx's labels, so vx forgets it and leaves it running "
			    "(onRemove: cancel cancels it)");
	plan_release(&p);
	/* protected, and forgotten: nothing to refuse */
	r.protect = 1;
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.errors.n, 0);
	assert_int_equal(p.actions[0].op, PLAN_FORGET);
	plan_release(&p);
	r.protect = 0;
	r.on_remove = PLAN_ON_REMOVE_FORGET;
	build(&p, NULL, 0, &r, 1, &live);
	assert_string_equal(p.actions[0].reason, "no longer declared; run " JOB1 " is running: onRemove is "
			    "forget, so vx forgets it and leaves it running");
	plan_release(&p);
	r.on_remove = PLAN_ON_REMOVE_CANCEL;
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_CANCEL);
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	plan_release(&p);
	/* a run vx started: cancelled, with why onRemove: forget does not apply */
	r.unlabelled_import = 0;
	r.on_remove = PLAN_ON_REMOVE_FORGET;
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_CANCEL);
	assert_string_equal(p.actions[0].reason, "no longer declared; run " JOB1 " is running (onRemove: "
			    "forget leaves only a job imported without vx's labels: this run carries this "
			    "stack's labels, and vx cancels every such job no declaration accounts for)");
	plan_release(&p);
	/* declared with another onRemove than recorded: an update, as for protect */
	r.on_remove = PLAN_ON_REMOVE_DEFAULT;
	d.on_remove = PLAN_ON_REMOVE_CANCEL;
	d.protect = 1;
	build(&p, &d, 1, &r, 1, NULL);
	assert_int_equal(p.actions[0].op, PLAN_UPDATE);
	assert_string_equal(p.actions[0].reason, "protect: false -> true; onRemove: unset -> cancel");
	plan_release(&p);
	live_jobs_release(&live);
}

static void test_untracked_job_cancelled(void **state)
{
	struct live_jobs live = { 0 };
	struct plan p;

	(void)state;
	add_live(&live, JOB2, "JOB_STATE_RUNNING", 0, NULL, "gone", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, NULL, 0, NULL, 0, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_CANCEL);
	assert_string_equal(p.actions[0].address, "job.gone");
	assert_non_null(p.actions[0].drift);
	plan_release(&p);
	live_jobs_release(&live);
}

/* Issue 8 item 3: a job with this stack's name but another state's identity,
 * or none, is foreign: never cancelled, never adopted; shown as a warning.
 * One that carries an address this plan creates is a plan error instead
 * (test_other_lineage_never_runs_a_job_twice). */
static void test_foreign_jobs_left_alone(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;

	(void)state;
	add_live_of(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "other", "aaaaaaaaaaaa", "1", "1", 1,
		    "fedcba987654");
	add_live_of(&live, JOB2, "JOB_STATE_RUNNING", 0, NULL, "other", "aaaaaaaaaaaa", "1", "1", 1, NULL);
	build(&p, &d, 1, NULL, 0, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	assert_int_equal(p.counts[PLAN_CANCEL], 0);
	assert_int_equal(p.counts[PLAN_ADOPT], 0);
	assert_int_equal(p.errors.n, 0);
	assert_int_equal(p.warnings.n, 2);
	assert_string_equal(p.warnings.items[0].msg,
		"job.other: live job " JOB1 " (running) is labelled vx-stack=research but belongs to "
		"another state (vx-lineage=fedcba987654); vx leaves it alone. If another repository uses "
		"the stack name research, rename one of the two stacks; if it is a leftover of this one, "
		"cancel it with 'gcloud ai custom-jobs cancel " JOB1 "'");
	assert_string_equal(p.warnings.items[1].msg,
		"job.other: live job " JOB2 " (running) is labelled vx-stack=research but carries no "
		"state identity (vx-lineage); vx leaves it alone. If another repository uses the stack "
		"name research, rename one of the two stacks; if it is a leftover of this one, cancel it "
		"with 'gcloud ai custom-jobs cancel " JOB2 "'");
	plan_release(&p);
	live_jobs_release(&live);
}

/*
 * A state that was not found (serial 0) must not plan a create beside each
 * job another lineage of this stack runs: a plan error naming a few of
 * them, the lineage, the cause and the fix; -allow-other-lineage creates.
 * With a state, the same create beside another state's run is refused too.
 */
static void test_other_lineage_never_runs_a_job_twice(void **state)
{
	static const char *const names[] = { "e", "d", "c", "b", "a" };
	struct plan_decl d[5];
	struct live_jobs live = { 0 };
	struct plan p;
	struct vx_err err = VX_ERR_INIT;
	struct plan_input in = { .stack = "research", .lineage = LINEAGE, .decls = d, .ndecls = 5,
				 .live = &live, .state_is_new = 1,
				 .state_lost_hint = "Likely cause: X. Fix: Y." };
	char addr[5][8], job[64];

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		d[i] = decl(HASH_A);
		snprintf(addr[i], sizeof(addr[i]), "job.%s", names[i]);
		d[i].address = addr[i];
		d[i].name = names[i];
		snprintf(job, sizeof(job), "projects/p/locations/us-central1/customJobs/%zu", 10 + i);
		/* Listed in any order: the error lists them by address. */
		add_live_of(&live, job, "JOB_STATE_RUNNING", 0, NULL, names[i], "aaaaaaaaaaaa", "1", "1", 1,
			    "fedcba987654");
	}
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.counts[PLAN_CREATE], 5);
	assert_int_equal(p.errors.n, 1);
	assert_string_equal(p.errors.items[0].msg,
		"the state of stack research was not found (none was loaded: serial 0), but live jobs of "
		"this stack from another state (vx-lineage fedcba987654) carry 5 of the addresses this plan "
		"would create: job.a (projects/p/locations/us-central1/customJobs/14, running), job.b "
		"(projects/p/locations/us-central1/customJobs/13, running), job.c "
		"(projects/p/locations/us-central1/customJobs/12, running) and 2 more. Creating them would "
		"run these jobs a second time. Likely cause: X. Fix: Y. To create them anyway (they are not this "
		"stack's), re-run with -allow-other-lineage");
	/* the error says it all: no warning repeats it */
	assert_int_equal(p.warnings.n, 0);
	plan_release(&p);

	/* the flag: created, each foreign job a warning as before */
	in.allow_other_lineage = 1;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.counts[PLAN_CREATE], 5);
	assert_int_equal(p.errors.n, 0);
	assert_int_equal(p.warnings.n, 5);
	plan_release(&p);

	/* a state that exists: refused as well, with the fix for two stacks of one name */
	in.allow_other_lineage = 0;
	in.state_is_new = 0;
	in.ndecls = 1;
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.errors.n, 1);
	assert_string_equal(p.errors.items[0].msg,
		"active jobs of stack research from another state (vx-lineage fedcba987654) run 1 of the jobs "
		"this plan would create: job.e (projects/p/locations/us-central1/customJobs/10, running). "
		"Creating them would run each job twice. If another repository uses the stack name "
		"research, rename one of the two stacks; if they are leftovers of this one, cancel them "
		"('gcloud ai custom-jobs cancel NAME'); to create anyway, re-run with -allow-other-lineage");
	/* the four others are not created: warnings, as before */
	assert_int_equal(p.warnings.n, 4);
	plan_release(&p);
	live_jobs_release(&live);
}

/* Issue 8 item 1: an untracked copy is cancelled by an action that has no
 * record, so the apply can never touch the declared job's record. */
static void test_untracked_copy_has_no_record(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	add_live(&live, JOB2, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "2", "1", 2);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_int_equal(p.actions[1].op, PLAN_CANCEL);
	assert_string_equal(job_action_of(&p.actions[1])->cancel_name, JOB2);
	assert_null(job_action_of(&p.actions[1])->record);
	plan_release(&p);
	live_jobs_release(&live);
}

/* Issue 8 item 4: a run left in the old project or region is seen there and
 * replaced, never taken for deleted. */
static void test_move_is_a_replace(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .project = "old-project", .region = "us-central1",
				.state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_REPLACE);
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	assert_string_equal(p.actions[0].reason, "moved from old-project/us-central1 to p/us-central1 while running");
	assert_null(p.actions[0].drift);
	plan_release(&p);

	run.project = "p";
	d.region = "europe-west4";
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_REPLACE);
	assert_string_equal(p.actions[0].reason, "moved from p/us-central1 to p/europe-west4 while running");
	plan_release(&p);

	/* finished where it was: a new run in the new place */
	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_SUCCEEDED");
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_RERUN);
	assert_null(job_action_of(&p.actions[0])->cancel_name);
	plan_release(&p);
	live_jobs_release(&live);
}

/* Issue 8 item 5: protect is taken from the declaration and recorded by an update. */
static void test_protect_change_is_an_update(void **state)
{
	struct plan_decl d = decl(HASH_A);
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_RUNNING", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .protect = 1,
				 .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_RUNNING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_UPDATE);
	assert_string_equal(p.actions[0].reason, "protect: true -> false");
	assert_int_equal(p.counts[PLAN_UPDATE], 1);
	assert_int_equal(p.counts[PLAN_NOOP], 0);
	assert_true(plan_has_changes(&p));
	plan_release(&p);

	d.protect = 1;
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_false(plan_has_changes(&p));
	plan_release(&p);
	live_jobs_release(&live);
}

/* A removed job whose cancel is under way is forgotten only once it has ended. */
static void test_removed_cancelling_waits(void **state)
{
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .state = "JOB_STATE_CANCELLING", .attempt = 1,
				.cancelled_by_vx = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_CANCELLING", 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1);
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_false(plan_has_changes(&p));
	plan_release(&p);
	free(live.items[0].state);
	live.items[0].state = strdup("JOB_STATE_CANCELLED");
	build(&p, NULL, 0, &r, 1, &live);
	assert_int_equal(p.actions[0].op, PLAN_FORGET);
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
	assert_int_equal(p.actions[0].op, PLAN_CREATE);
	plan_release(&p);

	in.ntargets = 0;
	in.replaces = replaces;
	in.nreplaces = 1;
	/* refresh off: live is NULL, last seen state SUCCEEDED -> rerun on -replace */
	assert_int_equal(plan_build(&p, &in, &err), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.actions[1].address, "job.train");
	assert_int_equal(p.actions[1].op, PLAN_RERUN);
	assert_non_null(strstr(p.actions[1].reason, "replacement requested"));
	plan_release(&p);
}

static void test_ladder_next_rung(void **state)
{
	(void)state;
	/* no capacity: one rung down, never past the last */
	assert_int_equal(plan_next_rung(0, "stockout", 4), 1);
	assert_int_equal(plan_next_rung(1, "wait-timeout", 4), 2);
	assert_int_equal(plan_next_rung(2, "preempted", 4), 3);
	assert_int_equal(plan_next_rung(3, "stockout", 4), 3);
	assert_int_equal(plan_next_rung(9, "stockout", 4), 3);
	/* anything else stays on its rung */
	assert_int_equal(plan_next_rung(1, "user-error", 4), 1);
	assert_int_equal(plan_next_rung(2, "quota", 4), 2);
	assert_int_equal(plan_next_rung(0, "internal", 4), 0);
	assert_int_equal(plan_next_rung(2, "cancelled-outside", 4), 2);
	/* a run that waited out resubmit.maxQueued found no capacity either */
	assert_int_equal(plan_next_rung(0, "queue-timeout", 4), 1);
	assert_int_equal(plan_next_rung(3, "queue-timeout", 4), 3);
	assert_int_equal(plan_next_rung(2, NULL, 4), 2);
	/* no ladder: always rung 0 */
	assert_int_equal(plan_next_rung(0, "stockout", 0), 0);
	assert_int_equal(plan_next_rung(0, "stockout", 1), 0);
}

static const char *const ladder_on[] = { "stockout", "preempted", "wait-timeout", "user-error" };
static const char *const ladder_regions[] = { "us-central1", "us-central1", "us-east5" };
static const char *const moved_regions[] = { "europe-west4", "europe-west4", "us-east5" };
static const char *const ladder_shapes[] = { "S0 SPOT", "S1 FLEX_START", "S2 SPOT" };
static const struct plan_rung_id ladder_ids[] = {
	{ "us-central1", "SPOT", "m0", NULL }, { "us-central1", "FLEX_START", "m1", NULL },
	{ "us-east5", "SPOT", "m2", NULL },
};

static struct plan_decl ladder_decl(void)
{
	struct plan_decl d = decl(HASH_A);

	d.resubmit_on = ladder_on;
	d.nresubmit_on = 4;
	d.max_attempts = 6;
	d.shape = ladder_shapes[0];
	d.rung_regions = ladder_regions;
	d.rung_shapes = ladder_shapes;
	d.nrungs = 3;
	d.rung_ids = ladder_ids;
	return d;
}

/* The plan for the current run (rung, region, attempt) that ended as live says. */
static void ladder_case(struct plan *p, const struct plan_decl *d, int64_t rung, const char *region,
			int64_t attempt, const char *live_state, int code, const char *msg)
{
	struct live_jobs live = { 0 };
	struct plan_run run = { .name = JOB1, .region = region, .state = live_state, .attempt = attempt,
				.rung = rung };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };
	char att[8];

	snprintf(att, sizeof(att), "%lld", (long long)attempt);
	add_live(&live, JOB1, live_state, code, msg, "train", "aaaaaaaaaaaa", "1", att, 1);
	build(p, d, 1, &r, 1, &live);
	live_jobs_release(&live);
}

#define STOCKOUT "The resources are insufficient in region: us-central1."
/* A flex-start wait that ran out: FAILED, never started, no published text. */
#define WAITED ""
#define USER_ERROR "The replica workerpool0-0 exited with a non-zero status of 1."

/* The plan for a current run on rung 0, in live_state (started at started_ms, 0: never), created at T0. */
static void queued_case(struct plan *p, const struct plan_decl *d, const char *live_state, int64_t started_ms,
			int64_t now_ms)
{
	struct live_jobs live = { 0 };
	struct plan_run run = { .name = JOB1, .region = "us-central1", .state = "JOB_STATE_QUEUED", .attempt = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run,
				 .applied = d->policy };
	struct plan_input in = { .stack = "research", .lineage = LINEAGE, .decls = d, .ndecls = 1,
				 .records = &r, .nrecords = 1, .live = &live, .now_ms = now_ms };
	struct vx_err err = VX_ERR_INIT;

	add_live(&live, JOB1, live_state, 0, NULL, "train", "aaaaaaaaaaaa", "1", "1", 1795341000000);
	live.items[0].start_ms = started_ms;
	live.items[0].end_ms = 0;
	assert_int_equal(plan_build(p, &in, &err), 0);
	live_jobs_release(&live);
}

static void test_max_queued(void **state)
{
	struct state_policy pol = { .max_queued_ms = 2 * 3600 * 1000 };
	struct plan_decl d = ladder_decl();
	int64_t t0 = 1795341000000, limit = t0 + 2 * 3600 * 1000;
	struct plan p;

	(void)state;
	d.policy = &pol;
	/* queued past the limit: cancelled, and the next attempt on the next rung */
	queued_case(&p, &d, "JOB_STATE_QUEUED", 0, limit + 183000);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_string_equal(job_action_of(&p.actions[0])->failure_class, "queue-timeout");
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
	assert_int_equal(job_action_of(&p.actions[0])->queued_ms, 2 * 3600 * 1000 + 183000);
	assert_string_equal(p.actions[0].reason, "attempt 2/6 on rung 1 (region us-central1) after queue-timeout in "
						 "us-central1: queued 2h 3m without starting (maxQueued 2h)");
	plan_release(&p);
	/* PENDING counts as waiting too; a day and more reads so */
	queued_case(&p, &d, "JOB_STATE_PENDING", 0, t0 + 90000000);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_string_equal(p.actions[0].reason, "attempt 2/6 on rung 1 (region us-central1) after queue-timeout in "
						 "us-central1: queued 1d 1h without starting (maxQueued 2h)");
	plan_release(&p);
	/* not yet, started (even if the state still says queued), or running: left alone */
	queued_case(&p, &d, "JOB_STATE_QUEUED", 0, limit - 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	queued_case(&p, &d, "JOB_STATE_PENDING", limit - 60000, limit + 60000);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	queued_case(&p, &d, "JOB_STATE_RUNNING", limit - 60000, limit + 60000);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	/* no attempt left: it stays queued, and the plan says why */
	d.max_attempts = 1;
	queued_case(&p, &d, "JOB_STATE_QUEUED", 0, limit);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(p.actions[0].reason, "queued 2h without starting (maxQueued 2h); left queued: resubmit "
						 "budget exhausted (1/1 attempts)");
	plan_release(&p);
	/* vx's cancel after maxQueued ended it, even though it started just before: queue-timeout */
	{
		struct live_jobs live = { 0 };
		struct plan_run run = { .name = JOB1, .region = "us-central1", .state = "JOB_STATE_CANCELLING",
					.attempt = 1, .cancelled_by_vx = 1, .failure = "queue-timeout" };
		struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run,
					 .applied = d.policy };

		add_live(&live, JOB1, "JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "train", "aaaaaaaaaaaa",
			 "1", "1", t0);
		live.items[0].start_ms = limit - 1000;
		d.max_attempts = 6;
		build(&p, &d, 1, &r, 1, &live);
		assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
		assert_string_equal(job_action_of(&p.actions[0])->failure_class, "queue-timeout");
		assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
		assert_null(job_action_of(&p.actions[0])->cancel_name);
		plan_release(&p);
		live_jobs_release(&live);
	}
	/* without maxQueued: never */
	d.max_attempts = 6;
	pol.max_queued_ms = 0;
	queued_case(&p, &d, "JOB_STATE_QUEUED", 0, t0 + 30LL * 86400000);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
}

static void test_ladder_plan(void **state)
{
	struct plan_decl d = ladder_decl();
	struct plan p;

	(void)state;
	/* stockout on the declared job: rung 1, same region */
	ladder_case(&p, &d, 0, "us-central1", 1, "JOB_STATE_FAILED", 8, STOCKOUT);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 2);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
	assert_string_equal(p.actions[0].region, "us-central1");
	assert_string_equal(p.actions[0].shape, "S1 FLEX_START");
	assert_string_equal(p.actions[0].reason,
			    "attempt 2/6 on rung 1 (region us-central1) after stockout in us-central1");
	plan_release(&p);

	/* the FLEX_START rung waited out: rung 2, another region */
	ladder_case(&p, &d, 1, "us-central1", 2, "JOB_STATE_FAILED", 8, WAITED);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 2);
	assert_string_equal(p.actions[0].region, "us-east5");
	assert_string_equal(p.actions[0].shape, "S2 SPOT");
	assert_string_equal(p.actions[0].reason,
			    "attempt 3/6 on rung 2 (region us-east5) after wait-timeout in us-central1");
	plan_release(&p);

	/* past the last rung, attempts stay on it */
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_FAILED", 8, STOCKOUT);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 2);
	assert_string_equal(p.actions[0].reason,
			    "attempt 4/6 on rung 2 (region us-east5) after stockout in us-east5");
	plan_release(&p);

	/* user-error (listed) is resubmitted on its own rung */
	ladder_case(&p, &d, 1, "us-central1", 2, "JOB_STATE_FAILED", 3, USER_ERROR);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
	assert_string_equal(p.actions[0].reason,
			    "attempt 3/6 on rung 1 (region us-central1) after user-error in us-central1");
	plan_release(&p);

	/* maxAttempts bounds the whole ladder */
	ladder_case(&p, &d, 2, "us-east5", 6, "JOB_STATE_FAILED", 8, STOCKOUT);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_non_null(strstr(p.actions[0].reason, "resubmit budget exhausted (6/6 attempts)"));
	plan_release(&p);

	/* a run that succeeded on rung 2 stays there: no "moved" replace */
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_SUCCEEDED", 0, NULL);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_null(p.actions[0].reason);
	plan_release(&p);

	/* ... and one running there stays too */
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);

	/* the ladder loses rung 2 (or is removed): the run stays where it ran */
	d.nrungs = 2;
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_SUCCEEDED", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	d.nrungs = 0;
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	/* but rung 1's region is the job's: moving the job moves a run on rung 1 */
	d.nrungs = 3;
	d.region = "europe-west4";
	d.rung_regions = moved_regions;
	ladder_case(&p, &d, 1, "us-central1", 2, "JOB_STATE_SUCCEEDED", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_RERUN);
	assert_string_equal(p.actions[0].reason, "moved from p/us-central1 to p/europe-west4 after the "
			    "last run succeeded");
	plan_release(&p);
	d.region = "us-central1";
	d.rung_regions = ladder_regions;

	/* a run bump starts again at rung 0 */
	d.run = 2;
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_SUCCEEDED", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_RERUN);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 1);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 0);
	assert_string_equal(p.actions[0].region, "us-central1");
	assert_string_equal(p.actions[0].shape, "S0 SPOT");
	plan_release(&p);

	/* a spec change while running on rung 2 replaces it with rung 0 */
	d.run = 1;
	d.spec_hash = HASH_B;
	ladder_case(&p, &d, 2, "us-east5", 3, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_REPLACE);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 0);
	assert_string_equal(p.actions[0].region, "us-central1");
	plan_release(&p);
}

/* Rungs by what they are: SPOT, FLEX_START in the job's region; SPOT in us-east5. */
static const struct plan_rung_id rung_spot = { "us-central1", "SPOT", "g2-standard-4", NULL };
static const struct plan_rung_id rung_flex = { "us-central1", "FLEX_START", "g2-standard-4", NULL };
static const struct plan_rung_id rung_east = { "us-east5", "SPOT", "g2-standard-4", NULL };

/* The plan for a run recorded on rung (by position) with rung_east's identity. */
static void east_case(struct plan *p, const struct plan_decl *d, int64_t rung, const char *live_state,
		      int code, const char *msg)
{
	struct live_jobs live = { 0 };
	struct plan_run run = { .name = JOB1, .region = "us-east5", .state = live_state, .attempt = 3,
				.rung = rung, .rung_id = { NULL, "SPOT", "g2-standard-4", NULL } };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	add_live(&live, JOB1, live_state, code, msg, "train", "aaaaaaaaaaaa", "1", "3", 1);
	build(p, d, 1, &r, 1, &live);
	live_jobs_release(&live);
}

/*
 * A run is known by what its rung is, not by its position: reordering or
 * removing other rungs keeps it (its attempt count too), and one whose
 * rung left the ladder is replaced like a spec change, as the next attempt,
 * on rung 0 where the plan says.
 */
static void test_ladder_edit_keeps_the_run(void **state)
{
	static const struct plan_rung_id reordered[] = { rung_spot, rung_east, rung_flex };
	static const char *const reordered_regions[] = { "us-central1", "us-east5", "us-central1" };
	static const char *const reordered_shapes[] = { "S0 SPOT", "S2 SPOT", "S1 FLEX_START" };
	static const struct plan_rung_id without_east[] = { rung_spot, rung_flex };
	struct plan_decl d = ladder_decl();
	struct plan p;

	(void)state;
	d.rung_ids = reordered;
	d.rung_regions = reordered_regions;
	d.rung_shapes = reordered_shapes;
	/* running on rung 2 (us-east5), now rung 1: kept, shown where it runs */
	east_case(&p, &d, 2, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_null(p.actions[0].reason);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
	assert_string_equal(p.actions[0].region, "us-east5");
	assert_string_equal(p.actions[0].shape, "S2 SPOT");
	plan_release(&p);
	/* when it stocks out, the attempt count carries and the next rung is the one after it now */
	east_case(&p, &d, 2, "JOB_STATE_FAILED", 8, STOCKOUT);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 4);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 2);
	assert_string_equal(p.actions[0].region, "us-central1");
	assert_string_equal(p.actions[0].reason,
			    "attempt 4/6 on rung 2 (region us-central1) after stockout in us-east5");
	plan_release(&p);

	/* its rung removed: replaced like a spec change, the next attempt, on rung 0 */
	d.rung_ids = without_east;
	d.rung_regions = ladder_regions;
	d.rung_shapes = ladder_shapes;
	d.nrungs = 2;
	east_case(&p, &d, 2, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_REPLACE);
	assert_string_equal(job_action_of(&p.actions[0])->cancel_name, JOB1);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 4);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 0);
	assert_string_equal(p.actions[0].region, "us-central1");
	assert_string_equal(p.actions[0].shape, "S0 SPOT");
	assert_string_equal(p.actions[0].reason, "its rung (SPOT g2-standard-4 in us-east5) is no longer on "
			    "the ladder while running");
	plan_release(&p);
	/* ... with onChange honoured */
	d.on_change = PLAN_ON_CHANGE_AFTER_FINISH;
	east_case(&p, &d, 2, "JOB_STATE_RUNNING", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	assert_string_equal(p.actions[0].reason, "its rung (SPOT g2-standard-4 in us-east5) is no longer on "
			    "the ladder; the current run " JOB1 " is running and onChange is after-finish: "
			    "a new run starts when it ends");
	plan_release(&p);
	d.on_change = PLAN_ON_CHANGE_REPLACE;
	/* one that succeeded there stays where it ran */
	east_case(&p, &d, 2, "JOB_STATE_SUCCEEDED", 0, NULL);
	assert_int_equal(p.actions[0].op, PLAN_NOOP);
	plan_release(&p);
	/* one that failed: the next attempt goes where the ladder now says, the count carried */
	east_case(&p, &d, 2, "JOB_STATE_FAILED", 8, STOCKOUT);
	assert_int_equal(p.actions[0].op, PLAN_RESUBMIT);
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 4);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 1);
	assert_string_equal(p.actions[0].region, "us-central1");
	plan_release(&p);
}

static void test_ladder_adopts_crashed_rung(void **state)
{
	struct plan_decl d = ladder_decl();
	struct live_jobs live = { 0 };
	struct plan p;
	struct plan_run run = { .name = JOB1, .region = "us-central1", .state = "JOB_STATE_FAILED",
				.attempt = 2, .rung = 1 };
	struct plan_record r = { .address = "job.train", .spec_hash = HASH_A, .run = 1, .current = &run };

	(void)state;
	add_live(&live, JOB1, "JOB_STATE_FAILED", 8, WAITED, "train", "aaaaaaaaaaaa", "1", "2", 1);
	/* attempt 3 was created on rung 2 (us-east5) by an apply that died before writing state */
	add_live(&live, "projects/p/locations/us-east5/customJobs/3", "JOB_STATE_PENDING", 0, NULL,
		 "train", "aaaaaaaaaaaa", "1", "3", 2);
	build(&p, &d, 1, &r, 1, &live);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.actions[0].op, PLAN_ADOPT);
	assert_string_equal(job_action_of(&p.actions[0])->adopt_name, "projects/p/locations/us-east5/customJobs/3");
	assert_int_equal(job_action_of(&p.actions[0])->attempt, 3);
	assert_int_equal(job_action_of(&p.actions[0])->rung, 2);
	assert_string_equal(p.actions[0].region, "us-east5");
	plan_release(&p);
	live_jobs_release(&live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_then_noop),
		cmocka_unit_test(test_policy_update),
		cmocka_unit_test(test_adopt_after_crash),
		cmocka_unit_test(test_replace_and_rerun),
		cmocka_unit_test(test_on_change_after_finish_and_protect),
		cmocka_unit_test(test_resubmit_budget),
		cmocka_unit_test(test_spot_started_stockout_plans_preempted),
		cmocka_unit_test(test_refused_create_is_an_attempt),
		cmocka_unit_test(test_resubmit_adopts_crashed_attempt),
		cmocka_unit_test(test_resubmit_counts_attempts_the_state_forgot),
		cmocka_unit_test(test_removed_cancel_forget_and_drift),
		cmocka_unit_test(test_removed_import_is_forgotten),
		cmocka_unit_test(test_untracked_job_cancelled),
		cmocka_unit_test(test_foreign_jobs_left_alone),
		cmocka_unit_test(test_other_lineage_never_runs_a_job_twice),
		cmocka_unit_test(test_untracked_copy_has_no_record),
		cmocka_unit_test(test_move_is_a_replace),
		cmocka_unit_test(test_protect_change_is_an_update),
		cmocka_unit_test(test_removed_cancelling_waits),
		cmocka_unit_test(test_targets_replace_refresh_off),
		cmocka_unit_test(test_ladder_next_rung),
		cmocka_unit_test(test_max_queued),
		cmocka_unit_test(test_ladder_plan),
		cmocka_unit_test(test_ladder_adopts_crashed_rung),
		cmocka_unit_test(test_ladder_edit_keeps_the_run),
	};
	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
