/* Unit tests for reconcile/status.c: the state's runs joined with the live
 * listing, times and cost so far, whether a failed run resubmits or vx gave
 * up, and the rows of jobs never applied and of jobs the state does not know;
 * the table and the JSON compared whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/kind_quota.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/stack.h"
#include "reconcile/status.h"
#include "reconcile/out/status_render.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

/* 2026-01-01T00:00:00Z */
#define T0 1767225600000LL
#define MIN 60000LL
#define R "projects/my-proj/locations/us-central1/customJobs/"
#define LINEAGE "0123456789abcdef-0000-4000-8000-000000000000"

/* n1-standard-4 at $0.20/h plus a T4 at $0.35/h: $0.55/h per replica. */
/* ls with jl as the job kind's slot (what its refresh would have listed). */
static const struct live_set *live_of_jobs(struct live_set *ls, struct job_live *jl)
{
	ls->of[kind_index(&kind_job)] = jl;
	return ls;
}

static const char PRICES[] =
	"{\"source\":\"test\",\"date\":\"2026-01-01\",\"currency\":\"USD\",\"regions\":{"
	"\"us-central1\":{\"machines\":{\"n1-standard-4\":{\"on_demand\":0.2,\"spot\":0.1}},"
	"\"accelerators\":{\"NVIDIA_TESLA_T4\":{\"on_demand\":0.35,\"spot\":0.15}}}}}";

static const char STACK[] =
	"kind: Stack\nname: s\nproject: my-proj\nregion: us-central1\n";

#define JOB(name, extra) \
	"---\nkind: CustomJob\nname: " name "\nspec:\n  workerPoolSpecs:\n" \
	"    - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n" \
	"      replicaCount: 2\n      containerSpec: {imageUri: \"us-docker.pkg.dev/p/r/t:1\"}\n" extra

static const char JOBS[] =
	JOB("run", "resubmit: {on: [stockout], maxAttempts: 3}\n")
	JOB("queue", "")
	JOB("done", "")
	JOB("bad", "resubmit: {on: [stockout], maxAttempts: 3}\n")
	JOB("retry", "resubmit: {on: [stockout], maxAttempts: 3}\n")
	JOB("spent", "resubmit: {on: [stockout], maxAttempts: 2}\n")
	JOB("new", "");

/* The recorded spec of every run: what the cost is priced from. */
static const char SPEC[] =
	"{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\","
	"\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":1},\"replicaCount\":\"2\"}]}";

struct fx {
	struct stack *st;
	struct state state;
	struct live_jobs live;
	struct prices prices;
	struct status_report rep;
};

static void record(struct fx *f, const char *name, int64_t attempt, const char *state, int64_t created)
{
	struct vx_err err = VX_ERR_INIT;
	struct state_record *r;
	struct state_run run;
	char address[64];

	snprintf(address, sizeof(address), "job.%s", name);
	assert_int_equal(state_add_record(&f->state, address, "CustomJob", &r, &err), 0);
	r->spec_json = strdup(SPEC);
	memset(&run, 0, sizeof(run));
	run.resource = vx_asprintf(R "%s", name);
	run.region = strdup("us-central1");
	run.attempt = attempt;
	run.state = strdup(state);
	run.created_ms = created;
	assert_int_equal(state_record_start_run(r, &run, &err), 0);
	vx_err_release(&err);
}

static struct live_job *live(struct fx *f, const char *id, const char *state, int64_t created, int64_t started,
			     int64_t ended)
{
	struct live_job j;
	char *name = vx_asprintf(R "%s", id);

	memset(&j, 0, sizeof(j));
	j.name = name;
	j.region = (char *)(uintptr_t)"us-central1";
	j.state = (char *)(uintptr_t)state;
	j.create_ms = created;
	j.start_ms = started;
	j.end_ms = ended;
	assert_int_equal(live_jobs_push(&f->live, &j), 0);
	free(name);
	return &f->live.items[f->live.n - 1];
}

static void fail_with(struct live_job *j, int code, const char *msg)
{
	j->error_code = code;
	j->error_message = strdup(msg);
}

/* vx's labels on a live job; attempt NULL: none (another tool's job). */
static void label(struct live_job *j, const char *job, const char *lineage, const char *attempt)
{
	struct vx_label l[4] = { { (char *)(uintptr_t)"vx-job", (char *)(uintptr_t)job },
				 { (char *)(uintptr_t)"vx-lineage", (char *)(uintptr_t)lineage },
				 { (char *)(uintptr_t)"vx-stack", (char *)(uintptr_t)"s" },
				 { (char *)(uintptr_t)"vx-attempt", (char *)(uintptr_t)attempt } };

	assert_int_equal(vx_labels_copy(&j->labels, &j->nlabels, l, attempt ? 4 : 3), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct stack_source src[] = { { "jobs.yaml", JOBS, sizeof(JOBS) - 1 }, { "stack.yaml", STACK, sizeof(STACK) - 1 } };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;

	assert_non_null(f);
	if (stack_load_mem(&f->st, "t", src, 2, NULL, &d, &err) != 0) {
		for (size_t i = 0; i < d.n; i++)
			print_error("%s\n", d.items[i].msg);
		fail_msg("the stack did not load: %s", err.msg ? err.msg : "");
	}
	vx_diags_release(&d);
	assert_int_equal(prices_parse(&f->prices, PRICES, strlen(PRICES), "test", &err), 0);
	f->state.stack = strdup("s");
	f->state.lineage = strdup(LINEAGE);
	f->state.serial = 7;
	/* running: created T0, started T0+5m, now T0+65m. */
	record(f, "run", 1, "JOB_STATE_QUEUED", T0);
	live(f, "run", "JOB_STATE_RUNNING", T0, T0 + 5 * MIN, 0);
	/* queued: created T0+50m, not started. */
	record(f, "queue", 1, "JOB_STATE_QUEUED", T0 + 50 * MIN);
	live(f, "queue", "JOB_STATE_PENDING", T0 + 50 * MIN, 0, 0);
	/* succeeded: ran 30 minutes. */
	record(f, "done", 1, "JOB_STATE_RUNNING", T0);
	live(f, "done", "JOB_STATE_SUCCEEDED", T0, T0 + MIN, T0 + 31 * MIN);
	/* failed, user-error not in resubmit.on: gave up. */
	record(f, "bad", 1, "JOB_STATE_RUNNING", T0);
	fail_with(live(f, "bad", "JOB_STATE_FAILED", T0, T0 + MIN, T0 + 11 * MIN), 3,
		  "The replica workerpool0-0 exited with a non-zero status of 1.\n\033[2Jsecond line");
	/* failed with a stockout at attempt 1 of 3: the next apply resubmits. */
	record(f, "retry", 1, "JOB_STATE_PENDING", T0);
	fail_with(live(f, "retry", "JOB_STATE_FAILED", T0, 0, T0 + 2 * MIN), 8,
		  "The resources are insufficient in region: us-central1.");
	/* failed with a stockout at attempt 2 of 2: gave up. */
	record(f, "spent", 2, "JOB_STATE_PENDING", T0);
	fail_with(live(f, "spent", "JOB_STATE_FAILED", T0, 0, T0 + 2 * MIN), 8,
		  "The resources are insufficient in region: us-central1.");
	/* job.new: declared, never applied. An untracked run of this state, a foreign one. */
	label(live(f, "9001", "JOB_STATE_RUNNING", T0, T0 + MIN, 0), "orphan", "0123456789ab", "2");
	label(live(f, "9002", "JOB_STATE_QUEUED", T0 + 60 * MIN, 0, 0), "stray", "ffffffffffff", NULL);
	vx_err_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	status_release(&f->rep);
	prices_release(&f->prices);
	live_jobs_release(&f->live);
	state_release(&f->state);
	stack_free(f->st);
	free(f);
	return 0;
}

static void build(struct fx *f, int with_prices)
{
	struct job_live jl = { f->live, { NULL, 0 } };
	struct live_set ls = { { NULL } };
	const char *const listed[] = { "us-central1" };
	struct status_input in = {
		.st = f->st, .state = &f->state, .live = live_of_jobs(&ls, &jl), .listed = listed, .nlisted = 1,
		.prices = with_prices ? &f->prices : NULL, .now_ms = T0 + 65 * MIN,
	};
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(status_build(&f->rep, &in, &err), 0);
	vx_err_release(&err);
}

static void test_rows_exact(void **state)
{
	struct fx *f = *state;
	struct vx_buf b = VX_BUF_INIT;

	build(f, 1);
	assert_int_equal(status_render_human(&b, &f->rep, 0), 0);
	/* Cost: 2 replicas x $0.55/h: run 60m $1.10, done 30m $0.55, bad 10m $0.18. */
	assert_string_equal(vx_buf_str(&b),
		"Stack s, project my-proj, state serial 7, as of 2026-01-01T01:05:00Z\n"
		"Jobs listed in us-central1\n"
		"\n"
		"ADDRESS     STATE        ATTEMPT  RUNG  REGION       QUEUED  RUNNING  COST SO FAR  NOTE\n"
		"job.bad     FAILED       1/3      0     us-central1  1m00s   10m00s   $0.18        gave up: user-error: "
		"The replica workerpool0-0 exited with a non-zero status of 1.\n"
		"job.done    SUCCEEDED    1/1      0     us-central1  1m00s   30m00s   $0.55\n"
		"job.new     not applied  -        -     us-central1  -       -        -\n"
		"job.orphan  RUNNING      2/-      0     us-central1  1m00s   1h04m    unknown      "
		"untracked (not in the state): " R "9001\n"
		"job.queue   PENDING      1/1      0     us-central1  15m00s  0s       $0.00\n"
		"job.retry   FAILED       1/3      0     us-central1  2m00s   0s       $0.00        "
		"resubmits on the next apply: stockout: The resources are insufficient in region: us-central1.\n"
		"job.run     RUNNING      1/3      0     us-central1  5m00s   1h00m    $1.10\n"
		"job.spent   FAILED       2/2      0     us-central1  2m00s   0s       $0.00        "
		"gave up: stockout: The resources are insufficient in region: us-central1.\n"
		"job.stray   QUEUED       -        -     us-central1  5m00s   0s       $0.00        "
		"foreign (another state's job): " R "9002\n");
	/* In colour: the state only, the columns still aligned on the text. */
	vx_buf_reset(&b);
	assert_int_equal(status_render_human(&b, &f->rep, 1), 0);
	assert_non_null(strstr(vx_buf_str(&b), "\njob.run     \033[32mRUNNING\033[0m      1/3      0     "));
	assert_non_null(strstr(vx_buf_str(&b), "\njob.bad     \033[31mFAILED\033[0m       1/3      0     "));
	assert_non_null(strstr(vx_buf_str(&b), "\nADDRESS     STATE        ATTEMPT  "));
	vx_buf_release(&b);
}

/* Without a price table a run that ran costs "unknown", never $0.00; one that never ran costs nothing. */
static void test_no_prices_unknown(void **state)
{
	struct fx *f = *state;

	build(f, 0);
	for (size_t i = 0; i < f->rep.n; i++) {
		const struct status_row *r = &f->rep.rows[i];

		if (!strcmp(r->address, "job.run") || !strcmp(r->address, "job.done") ||
		    !strcmp(r->address, "job.bad") || !strcmp(r->address, "job.orphan"))
			assert_false(r->cost_known);
		else if (r->tracking != STATUS_NOT_APPLIED)
			assert_true(r->cost_known && r->cost == 0);
	}
}

/* A run the listing did not return: the state's last seen, times unknown, said so. */
static void test_not_listed_last_seen(void **state)
{
	struct fx *f = *state;
	struct vx_buf b = VX_BUF_INIT;
	const char *line;

	/* job.run's live job goes missing from the listing. */
	live_job_release(&f->live.items[0]);
	f->live.items[0].name = strdup(R "gone");
	build(f, 1);
	assert_int_equal(status_render_human(&b, &f->rep, 0), 0);
	line = strstr(vx_buf_str(&b), "job.run ");
	assert_non_null(line);
	assert_memory_equal(line, "job.run     QUEUED       1/3      0     us-central1  -       -        unknown      "
			    "not listed: as last seen\n",
			    strlen("job.run     QUEUED       1/3      0     us-central1  -       -        unknown      "
				   "not listed: as last seen\n"));
	vx_buf_release(&b);
}

static void test_json(void **state)
{
	struct fx *f = *state;
	struct vx_buf b = VX_BUF_INIT;
	const char *p;

	build(f, 1);
	assert_int_equal(status_render_json(&b, &f->rep), 0);
	p = vx_buf_str(&b);
	assert_memory_equal(p, "{\"format_version\":1,\"stack\":\"s\",\"project\":\"my-proj\",\"state_serial\":\"7\","
			    "\"as_of\":\"2026-01-01T01:05:00Z\",\"currency\":\"USD\",\"regions\":[\"us-central1\"],"
			    "\"addresses\":[{\"address\":\"job.bad\",\"kind\":\"job\",\"tracking\":\"tracked\","
			    "\"declared\":true,\"listed\":true,\"state\":\"FAILED\",\"resource\":\"" R "bad\","
			    "\"region\":\"us-central1\",\"attempt\":1,\"max_attempts\":3,\"rung\":0,"
			    "\"create_time\":\"2026-01-01T00:00:00Z\",\"start_time\":\"2026-01-01T00:01:00Z\","
			    "\"end_time\":\"2026-01-01T00:11:00Z\",\"queued_seconds\":60,\"running_seconds\":600,"
			    "\"cost_so_far\":0.18,\"failure\":{\"class\":\"user-error\",\"message\":\"The replica "
			    "workerpool0-0 exited with a non-zero status of 1.\",\"resubmits\":false,\"gave_up\":true}},",
			    strlen("{\"format_version\":1,\"stack\":\"s\",\"project\":\"my-proj\",\"state_serial\":\"7\","
				   "\"as_of\":\"2026-01-01T01:05:00Z\",\"currency\":\"USD\",\"regions\":[\"us-central1\"],"
				   "\"addresses\":[{\"address\":\"job.bad\",\"kind\":\"job\",\"tracking\":\"tracked\","
				   "\"declared\":true,\"listed\":true,\"state\":\"FAILED\",\"resource\":\"" R "bad\","
				   "\"region\":\"us-central1\",\"attempt\":1,\"max_attempts\":3,\"rung\":0,"
				   "\"create_time\":\"2026-01-01T00:00:00Z\",\"start_time\":\"2026-01-01T00:01:00Z\","
				   "\"end_time\":\"2026-01-01T00:11:00Z\",\"queued_seconds\":60,\"running_seconds\":600,"
				   "\"cost_so_far\":0.18,\"failure\":{\"class\":\"user-error\",\"message\":\"The replica "
				   "workerpool0-0 exited with a non-zero status of 1.\",\"resubmits\":false,\"gave_up\":true}},"));
	assert_non_null(strstr(p, "{\"address\":\"job.new\",\"kind\":\"job\",\"tracking\":\"not applied\","
				  "\"declared\":true,\"listed\":false,\"state\":null,\"resource\":null,"
				  "\"region\":\"us-central1\",\"attempt\":null,\"max_attempts\":1,\"rung\":null,"
				  "\"create_time\":null,\"start_time\":null,\"end_time\":null,\"queued_seconds\":null,"
				  "\"running_seconds\":null,\"cost_so_far\":null,\"failure\":null}"));
	assert_string_equal(p + b.len - 2, "]}");
	vx_buf_release(&b);
}

/* Reservations and quota preferences: one row each, their live status and values, or not applied. */
static void test_reservations_and_quotas(void **state)
{
	static const char OTHER[] =
		"---\nkind: Reservation\nname: pool\nzone: us-central1-a\nmachineType: g2-standard-8\n"
		"accelerators: [{type: nvidia-l4, count: 1}]\ncount: 2\n"
		"---\nkind: Reservation\nname: spare\nzone: us-central1-b\nmachineType: g2-standard-8\n"
		"accelerators: [{type: nvidia-l4, count: 1}]\ncount: 1\n"
		"---\nkind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
		"quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: us-central1}\n"
		"preferredValue: 16\ncontactEmail: ml@example.com\n";
	struct stack_source src[] = { { "other.yaml", OTHER, sizeof(OTHER) - 1 },
				      { "stack.yaml", STACK, sizeof(STACK) - 1 } };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	struct live_reservation lr;
	struct live_quota lq;
	struct live_reservations rs = { &lr, 1 };
	struct live_quotas qs = { &lq, 1 };
	struct live_set ls = { { NULL } };
	struct status_input in;
	struct status_report rep;
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(stack_load_mem(&st, "t", src, 2, NULL, &d, &err), 0);
	memset(&lr, 0, sizeof(lr));
	lr.name = (char *)(uintptr_t)"pool";
	lr.zone = (char *)(uintptr_t)"us-central1-a";
	lr.status = (char *)(uintptr_t)"READY";
	lr.count = 2;
	lr.in_use = 1;
	memset(&lq, 0, sizeof(lq));
	lq.name = (char *)(uintptr_t)"projects/123/locations/global/quotaPreferences/l4";
	lq.id = (char *)(uintptr_t)"l4";
	lq.preferred = 16;
	lq.has_granted = 1;
	lq.granted = 8;
	memset(&in, 0, sizeof(in));
	in.st = st;
	ls.of[kind_index(&kind_reservation)] = &rs;
	ls.of[kind_index(&kind_quota)] = &qs;
	in.live = &ls;
	in.now_ms = T0;
	assert_int_equal(status_build(&rep, &in, &err), 0);
	assert_int_equal(status_render_human(&b, &rep, 0), 0);
	assert_string_equal(vx_buf_str(&b),
		"Stack s, project my-proj, state serial 0, as of 2026-01-01T00:00:00Z\n"
		"\n"
		"ADDRESS            STATE        ATTEMPT  RUNG  REGION         QUEUED  RUNNING  COST SO FAR  NOTE\n"
		"reservation.pool   READY        -        -     us-central1-a  -       -        -            "
		"count 2, in use 1\n"
		"reservation.spare  not applied  -        -     us-central1-b  -       -        -\n"
		"quota.l4           PENDING      -        -     global         -       -        -            "
		"preferred 16, granted 8\n");
	vx_buf_reset(&b);
	assert_int_equal(status_render_json(&b, &rep), 0);
	assert_non_null(strstr(vx_buf_str(&b), ",\"state\":\"READY\",\"resource\":\"pool\","
					       "\"region\":\"us-central1-a\",\"count\":2,\"in_use\":1}"));
	assert_non_null(strstr(vx_buf_str(&b), ",\"region\":\"global\",\"preferred\":16,\"granted\":8}"));
	vx_buf_release(&b);
	status_release(&rep);
	stack_free(st);
	vx_diags_release(&d);
	vx_err_release(&err);
}

/* 10,000 recorded runs, all listed, and 10 jobs the state does not know: joined by name. */
static void test_many_runs_joined(void **state)
{
	struct fx *f = *state;
	struct job_live jl = { f->live, { NULL, 0 } };
	struct live_set ls = { { NULL } };
	struct status_input in;
	struct vx_err err = VX_ERR_INIT;
	size_t listed = 0, untracked = 0;

	state_release(&f->state);
	live_jobs_release(&f->live);
	f->state.stack = strdup("s");
	f->state.lineage = strdup(LINEAGE);
	for (int i = 0; i < 10000; i++) {
		char name[16];

		snprintf(name, sizeof(name), "j%05d", i);
		record(f, name, 1, "JOB_STATE_QUEUED", T0);
		live(f, name, "JOB_STATE_RUNNING", T0, T0 + MIN, 0);
	}
	for (int i = 0; i < 10; i++) {
		char name[16];

		snprintf(name, sizeof(name), "x%d", i);
		label(live(f, name, "JOB_STATE_QUEUED", T0, 0, 0), name, "0123456789ab", "1");
	}
	memset(&in, 0, sizeof(in));
	in.st = f->st;
	in.state = &f->state;
	jl.listed = f->live;
	in.live = live_of_jobs(&ls, &jl);
	in.prices = &f->prices;
	in.now_ms = T0 + 61 * MIN;
	assert_int_equal(status_build(&f->rep, &in, &err), 0);
	for (size_t i = 0; i < f->rep.n; i++) {
		const struct status_row *r = &f->rep.rows[i];

		listed += r->tracking == STATUS_TRACKED && r->listed && r->running_ms == 60 * MIN;
		untracked += r->tracking == STATUS_UNTRACKED;
	}
	/* The stack's 7 declared jobs are not in this state: not applied. */
	assert_int_equal(f->rep.n, 10000 + 10 + 7);
	assert_int_equal(listed, 10000);
	assert_int_equal(untracked, 10);
	vx_err_release(&err);
}

static void test_duration(void **state)
{
	char d[24];

	(void)state;
	status_duration(d, -1);
	assert_string_equal(d, "-");
	status_duration(d, 59999);
	assert_string_equal(d, "59s");
	status_duration(d, 60000);
	assert_string_equal(d, "1m00s");
	status_duration(d, 3600000 + 5 * 60000 + 59000);
	assert_string_equal(d, "1h05m");
	status_duration(d, 2 * 86400000LL + 3 * 3600000);
	assert_string_equal(d, "2d03h");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_rows_exact),
		T(test_no_prices_unknown),
		T(test_not_listed_last_seen),
		T(test_json),
		T(test_many_runs_joined),
		cmocka_unit_test(test_reservations_and_quotas),
		cmocka_unit_test(test_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
