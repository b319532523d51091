/* Unit tests for reconcile/out/report.c: runs from a hand-built history, priced, summed and grouped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "reconcile/capacity.h"
#include "reconcile/out/report.h"
#include "state/backend.h"
#include "state/state.h"
#include "util/buf.h"

static const char PRICES[] =
	"{\"source\":\"test table\",\"date\":\"2025-01-01\",\"currency\":\"USD\",\"regions\":{"
	"\"r1\":{\"machines\":{\"n1-standard-4\":{\"on_demand\":0.2,\"spot\":0.1},"
	"\"a2-highgpu-1g\":{\"on_demand\":4,\"spot\":1.5}},"
	"\"accelerators\":{\"NVIDIA_TESLA_T4\":{\"on_demand\":0.35,\"spot\":0.15}}}}}";

#define MIN INT64_C(60000)
#define HOUR (60 * MIN)
/* Monday 2026-11-23T00:00:00Z */
#define T0 INT64_C(1795392000000)

static struct state_run run(const char *resource, const char *strategy, int64_t replicas, int64_t gpus,
			    int64_t created, int64_t started, int64_t ended, const char *state, const char *cls)
{
	struct state_run r;

	memset(&r, 0, sizeof(r));
	r.resource = resource ? strdup(resource) : NULL;
	r.region = strdup("r1");
	r.action = strdup("create");
	r.spec_hash = strdup("h");
	r.attempt = 1;
	if (strategy) {
		r.machine_type = strdup("n1-standard-4");
		r.accelerator_type = gpus ? strdup("NVIDIA_TESLA_T4") : NULL;
		r.accelerator_count = gpus;
		r.replicas = replicas;
		r.strategy = strdup(strategy);
	}
	r.created_ms = created;
	r.started_ms = started;
	r.ended_ms = ended;
	r.state = state ? strdup(state) : NULL;
	r.failure = cls ? strdup(cls) : NULL;
	return r;
}

static struct state_record *record(const char *address, size_t nhistory)
{
	struct state_record *r = calloc(1, sizeof(*r));

	r->address = strdup(address);
	r->kind = strdup("CustomJob");
	r->spec_hash = strdup("other");
	r->history = calloc(nhistory ? nhistory : 1, sizeof(*r->history));
	r->nhistory = nhistory;
	return r;
}

struct fixture {
	struct state_history_entry h[6];
	size_t n;
	struct prices prices;
};

/*
 * The history, newest first:
 *   job.train   run 1: SPOT, 2 replicas of n1-standard-4 + 1 T4 each (2 GPUs),
 *               created T0, started T0+10m, preempted at T0+1h10m
 *               run 2: STANDARD on rung 1, created T0+1h10m, started T0+1h20m,
 *               succeeded at T0+3h20m
 *   job.sweep[lr=1]  SPOT, 1 replica + 1 T4, created T0, started T0+5m, running
 *   job.old     forgotten at T0+2h (its last version, earlier, holds a run without
 *               machine fields, started T0, not ended): unpriced
 *   job.bad     a create the server refused at T0+30m
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct vx_err err = VX_ERR_INIT;
	struct state_record *train = record("job.train", 1), *sweep = record("job.sweep[lr=1]", 0);
	struct state_record *old = record("job.old", 0), *bad = record("job.bad", 1);

	assert_int_equal(prices_parse(&f->prices, PRICES, strlen(PRICES), "t", &err), 0);
	train->history[0] = run("projects/p/locations/r1/customJobs/1", "SPOT", 2, 2, T0, T0 + 10 * MIN,
				T0 + 70 * MIN, "JOB_STATE_FAILED", "preempted");
	train->history[0].error_message = strdup("The replica workerpool0-0 was preempted.\nmore");
	train->current = malloc(sizeof(*train->current));
	*train->current = run("projects/p/locations/r1/customJobs/2", "STANDARD", 2, 2, T0 + 70 * MIN,
			      T0 + 80 * MIN, T0 + 200 * MIN, "JOB_STATE_SUCCEEDED", NULL);
	train->current->rung = 1;
	train->current->attempt = 2;
	sweep->current = malloc(sizeof(*sweep->current));
	*sweep->current = run("projects/p/locations/r1/customJobs/3", "SPOT", 1, 1, T0, T0 + 5 * MIN, 0,
			      "JOB_STATE_RUNNING", NULL);
	old->current = malloc(sizeof(*old->current));
	*old->current = run("projects/p/locations/r1/customJobs/4", NULL, 0, 0, T0, T0, 0, "JOB_STATE_RUNNING",
			    NULL);
	bad->history[0] = run(NULL, "SPOT", 1, 1, T0 + 30 * MIN, 0, T0 + 30 * MIN, NULL, "refused");
	bad->history[0].error_message = strdup("permission denied");
	f->h[0] = (struct state_history_entry){ .address = strdup("job.train"), .time_ms = T0 + 200 * MIN,
						 .record = train };
	f->h[1] = (struct state_history_entry){ .address = strdup("job.old"), .time_ms = T0 + 120 * MIN };
	f->h[2] = (struct state_history_entry){ .address = strdup("job.sweep[lr=1]"), .time_ms = T0 + 10 * MIN,
						 .record = sweep };
	f->h[3] = (struct state_history_entry){ .address = strdup("job.old"), .time_ms = T0 + 1 * MIN,
						 .record = old };
	f->h[4] = (struct state_history_entry){ .address = strdup("job.bad"), .time_ms = T0 + 30 * MIN,
						 .record = bad };
	/* An older version of job.train (only run 1, not yet ended): not counted again. */
	f->h[5] = (struct state_history_entry){ .address = strdup("job.train"), .time_ms = T0 + 1 * MIN,
						 .record = record("job.train", 0) };
	f->h[5].record->current = malloc(sizeof(*f->h[5].record->current));
	*f->h[5].record->current = run("projects/p/locations/r1/customJobs/1", "SPOT", 2, 2, T0, 0, 0,
				       "JOB_STATE_PENDING", NULL);
	f->n = 6;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < f->n; i++) {
		if (f->h[i].record) {
			state_record_release(f->h[i].record);
			free(f->h[i].record);
			f->h[i].record = NULL;
		}
		state_history_entry_release(&f->h[i]);
	}
	prices_release(&f->prices);
	free(f);
	return 0;
}

static const struct report_run *find(const struct report *r, const char *address, int64_t attempt)
{
	for (size_t i = 0; i < r->nruns; i++)
		if (!strcmp(r->runs[i].address, address) && r->runs[i].attempt == attempt)
			return &r->runs[i];
	fail_msg("no run %s attempt %lld", address, (long long)attempt);
	return NULL;
}

static void test_figures(void **state)
{
	struct fixture *f = *state;
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;
	const struct report_run *x;

	memset(&r, 0, sizeof(r));
	assert_int_equal(report_input_add_history(&in, "team-a", f->h, f->n), 0);
	assert_int_equal(in.n, 5);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 4 * HOUR, T0 + 4 * HOUR, &err), 0);
	assert_int_equal(r.nruns, 5);
	/* Ordered by created, then address. */
	assert_string_equal(r.runs[0].address, "job.old");
	assert_string_equal(r.runs[1].address, "job.sweep[lr=1]");
	assert_string_equal(r.runs[2].address, "job.train");
	assert_string_equal(r.runs[3].address, "job.bad");
	assert_string_equal(r.runs[4].address, "job.train");

	/* SPOT: 2 x 0.1 (machines) + 2 x 0.15 (T4) = 0.50/h x 1 h = 0.50, preempted: wasted. */
	x = find(&r, "job.train", 1);
	assert_string_equal(x->outcome, "preempted");
	assert_int_equal(x->queued_s, 600);
	assert_int_equal(x->running_s, 3600);
	assert_true(x->priced);
	assert_true(x->estimate);
	assert_true(x->usd == 0.5);
	assert_true(x->wasted);
	assert_string_equal(x->message, "The replica workerpool0-0 was preempted.");
	/* STANDARD: 2 x 0.2 + 2 x 0.35 = 1.10/h x 2 h = 2.20. */
	x = find(&r, "job.train", 2);
	assert_string_equal(x->outcome, "succeeded");
	assert_int_equal(x->rung, 1);
	assert_int_equal(x->queued_s, 600);
	assert_int_equal(x->running_s, 7200);
	assert_true(x->usd == 2.2);
	assert_false(x->wasted);
	/* SPOT 0.1 + 0.15 = 0.25/h, running T0+5m to until (T0+4h): 14100 s -> 0.979 -> 0.98. */
	x = find(&r, "job.sweep[lr=1]", 1);
	assert_string_equal(x->outcome, "running");
	assert_string_equal(x->group, "job.sweep");
	assert_int_equal(x->running_s, 14100);
	assert_true(x->usd == 0.98);
	/* Forgotten at T0+2h: ended then; no machines, no spec: unpriced. */
	x = find(&r, "job.old", 1);
	assert_int_equal(x->ended_ms, T0 + 120 * MIN);
	assert_int_equal(x->running_s, 7200);
	assert_false(x->priced);
	assert_false(x->estimate);
	assert_string_equal(x->unpriced_reason,
			    "the run predates vx recording its machines, and its spec is no longer recorded");
	x = find(&r, "job.bad", 1);
	assert_string_equal(x->outcome, "refused");
	assert_true(x->priced);
	assert_true(x->usd == 0);

	assert_true(r.usd == 3.68);
	assert_true(r.usd_wasted == 0.5);
	assert_int_equal(r.nby_job, 4);
	assert_string_equal(r.by_job[0].key, "job.train");
	assert_true(r.by_job[0].usd == 2.7);
	assert_true(r.by_job[0].usd_wasted == 0.5);
	assert_int_equal(r.by_job[0].runs, 2);
	assert_string_equal(r.by_job[1].key, "job.sweep");
	assert_int_equal(r.nby_week, 1);
	assert_string_equal(r.by_week[0].key, "2026-11-23");
	assert_int_equal(r.by_week[0].runs, 5);
	assert_string_equal(r.by_strategy[0].key, "STANDARD");
	assert_true(r.by_strategy[0].usd == 2.2);
	assert_string_equal(r.by_strategy[1].key, "SPOT");
	assert_true(r.by_strategy[1].usd == 1.48);
	assert_int_equal(r.by_strategy[1].runs, 3);

	/* Waiting, nearest rank: SPOT r1 [300, 600] -> median 300, p90 600. */
	assert_int_equal(r.nwaiting, 3);
	assert_string_equal(r.waiting[0].strategy, "SPOT");
	assert_int_equal(r.waiting[0].runs, 2);
	assert_int_equal(r.waiting[0].median_s, 300);
	assert_int_equal(r.waiting[0].p90_s, 600);
	assert_string_equal(r.waiting[1].strategy, "STANDARD");
	assert_string_equal(r.waiting[2].strategy, "unknown");

	/* Failures by class (runs, then name), messages grouped. */
	assert_int_equal(r.nfailures, 2);
	assert_string_equal(r.failures[0].cls, "preempted");
	assert_string_equal(r.failures[1].cls, "refused");
	assert_string_equal(r.failures[1].messages[0].message, "permission denied");
	assert_string_equal(r.failures[1].messages[0].addresses[0], "job.bad");

	report_release(&r);
	report_input_release(&in);
	vx_err_release(&err);
}

/* A window after T0+2h: run 1 of job.train and job.old ended before it; the sweep's running time is clipped. */
static void test_window(void **state)
{
	struct fixture *f = *state;
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;

	memset(&r, 0, sizeof(r));
	assert_int_equal(report_input_add_history(&in, "team-a", f->h, f->n), 0);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 + 2 * HOUR, T0 + 3 * HOUR, T0 + 5 * HOUR, &err), 0);
	assert_int_equal(r.nruns, 2);
	assert_string_equal(r.runs[0].address, "job.sweep[lr=1]");
	assert_int_equal(r.runs[0].running_s, 3600);
	assert_true(r.runs[0].usd == 0.25);
	/* job.train attempt 2: T0+2h to T0+3h of its run: 1.10 */
	assert_int_equal(r.runs[1].running_s, 3600);
	assert_true(r.runs[1].usd == 1.1);
	assert_true(r.usd == 1.35);
	report_release(&r);
	report_input_release(&in);
	vx_err_release(&err);
}

static void test_json_and_csv(void **state)
{
	struct fixture *f = *state;
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf csv = VX_BUF_INIT;
	cJSON *doc = NULL;
	char *text;
	const char *line;

	memset(&r, 0, sizeof(r));
	assert_int_equal(report_input_add_history(&in, "team-a", f->h, f->n), 0);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 4 * HOUR, T0 + 4 * HOUR, &err), 0);
	assert_int_equal(report_to_json(&r, &doc, &err), 0);
	text = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 2));
	assert_string_equal(text,
			    "{\"stack\":\"team-a\",\"address\":\"job.train\",\"group\":\"job.train\",\"attempt\":1,"
			    "\"rung\":0,\"region\":\"r1\",\"strategy\":\"SPOT\",\"machine_type\":\"n1-standard-4\","
			    "\"accelerator_type\":\"NVIDIA_TESLA_T4\",\"accelerator_count\":2,\"replicas\":2,"
			    "\"state\":\"JOB_STATE_FAILED\",\"class\":\"preempted\",\"outcome\":\"preempted\","
			    "\"created\":\"2026-11-23T00:00:00Z\",\"started\":\"2026-11-23T00:10:00Z\","
			    "\"ended\":\"2026-11-23T01:10:00Z\",\"queued_seconds\":600,\"running_seconds\":3600,"
			    "\"usd\":0.5,\"estimate\":true,\"unpriced_reason\":null,"
			    "\"resource\":\"projects/p/locations/r1/customJobs/1\","
			    "\"message\":\"The replica workerpool0-0 was preempted.\",\"note\":null}");
	cJSON_free(text);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "prices"));
	assert_non_null(strstr(text, "{\"source\":\"test table\",\"date\":\"2025-01-01\",\"note\":\"estimate: "));
	cJSON_free(text);
	cJSON_Delete(doc);

	assert_int_equal(report_to_csv(&r, &csv, &err), 0);
	line = vx_buf_str(&csv);
	assert_memory_equal(line,
			    "stack,address,group,attempt,rung,region,strategy,machine_type,accelerator_type,"
			    "accelerator_count,replicas,state,class,outcome,created,started,ended,queued_seconds,"
			    "running_seconds,usd,estimate,unpriced_reason,resource,message,note\r\n"
			    "team-a,job.old,job.old,1,0,r1,,,,0,0,JOB_STATE_RUNNING,,running,2026-11-23T00:00:00Z,"
			    "2026-11-23T00:00:00Z,2026-11-23T02:00:00Z,0,7200,,false,"
			    "\"the run predates vx recording its machines, and its spec is no longer recorded\","
			    "projects/p/locations/r1/customJobs/4,,\r\n",
			    strlen("stack,address,group,attempt,rung,region,strategy,machine_type,accelerator_type,"
				   "accelerator_count,replicas,state,class,outcome,created,started,ended,queued_seconds,"
				   "running_seconds,usd,estimate,unpriced_reason,resource,message,note\r\n"
				   "team-a,job.old,job.old,1,0,r1,,,,0,0,JOB_STATE_RUNNING,,running,2026-11-23T00:00:00Z,"
				   "2026-11-23T00:00:00Z,2026-11-23T02:00:00Z,0,7200,,false,"
				   "\"the run predates vx recording its machines, and its spec is no longer recorded\","
				   "projects/p/locations/r1/customJobs/4,,\r\n"));
	vx_buf_release(&csv);
	report_release(&r);
	report_input_release(&in);
	vx_err_release(&err);
}

/*
 * A failure message a spreadsheet would take for a formula is neutralised
 * (OWASP's CSV injection guidance): a single quote before a cell that starts
 * with =, +, -, @, a tab or a carriage return, inside the quotes when the
 * cell needs them.
 */
static void test_csv_cells_are_never_formulas(void **state)
{
	struct fixture *f = *state;
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf csv = VX_BUF_INIT;
	struct state_run *preempted = &f->h[0].record->history[0], *refused = &f->h[4].record->history[0];
	static const char *const texts[][2] = {
		{ "=HYPERLINK(\"http://evil\",\"x\")", "\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\"" },
		{ "+1+1", "'+1+1" },
		{ "-2+3", "'-2+3" },
		{ "@SUM(A1:A9)", "'@SUM(A1:A9)" },
		/* The report cleans a message of control characters first: a space. */
		{ "\t=1+1", " =1+1" },
		/* ... and keeps its first line. */
		{ "\r=1+1", "" },
		{ "a=1", "a=1" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *want;

		free(preempted->error_message);
		preempted->error_message = strdup(texts[i][0]);
		free(refused->error_message);
		refused->error_message = strdup("-1");
		memset(&r, 0, sizeof(r));
		assert_int_equal(report_input_add_history(&in, "team-a", f->h, f->n), 0);
		assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 4 * HOUR, T0 + 4 * HOUR,
					      &err), 0);
		assert_int_equal(report_to_csv(&r, &csv, &err), 0);
		want = vx_asprintf("team-a,job.train,job.train,1,0,r1,SPOT,n1-standard-4,NVIDIA_TESLA_T4,2,2,"
				   "JOB_STATE_FAILED,preempted,preempted,2026-11-23T00:00:00Z,2026-11-23T00:10:00Z,"
				   "2026-11-23T01:10:00Z,600,3600,0.5,true,,projects/p/locations/r1/customJobs/1,%s,\r\n",
				   texts[i][1]);
		assert_non_null(strstr(vx_buf_str(&csv), want));
		/* The refused create's message, and its usd of 0 (a number, not a text). */
		assert_non_null(strstr(vx_buf_str(&csv), ",'-1,"));
		free(want);
		vx_buf_release(&csv);
		report_release(&r);
		report_input_release(&in);
	}
	vx_err_release(&err);
}

static void test_parse_when(void **unused)
{
	struct vx_err err = VX_ERR_INIT;
	int64_t t;

	(void)unused;
	assert_int_equal(report_parse_when("since", "30d", T0, &t, &err), 0);
	assert_int_equal(t, T0 - 30 * 24 * HOUR);
	assert_int_equal(report_parse_when("since", "12h", T0, &t, &err), 0);
	assert_int_equal(t, T0 - 12 * HOUR);
	assert_int_equal(report_parse_when("since", "2w", T0, &t, &err), 0);
	assert_int_equal(t, T0 - 14 * 24 * HOUR);
	assert_int_equal(report_parse_when("until", "2026-11-23", T0, &t, &err), 0);
	assert_int_equal(t, T0);
	assert_int_equal(report_parse_when("until", "2026-11-23T01:00:00Z", T0, &t, &err), 0);
	assert_int_equal(t, T0 + HOUR);
	assert_int_equal(report_parse_when("since", "30x", T0, &t, &err), VX_EINVAL);
	assert_string_equal(err.msg, "-since: \"30x\" is not a duration (30d, 12h, 2w, 90m), a date (2026-11-01) or "
				     "an RFC 3339 UTC time (2026-11-01T09:00:00Z)");
	vx_err_release(&err);
}

/* vx log's figure: the whole run, or its rate while it runs. */
static void test_run_cost(void **state)
{
	struct fixture *f = *state;
	struct vx_buf b = VX_BUF_INIT;
	const struct state_record *train = f->h[0].record;

	assert_int_equal(report_run_cost(&b, train, &train->history[0], &f->prices), 0);
	assert_string_equal(vx_buf_str(&b), "$0.50");
	vx_buf_reset(&b);
	assert_int_equal(report_run_cost(&b, train, train->current, &f->prices), 0);
	assert_string_equal(vx_buf_str(&b), "$2.20");
	vx_buf_reset(&b);
	assert_int_equal(report_run_cost(&b, f->h[2].record, f->h[2].record->current, &f->prices), 0);
	assert_string_equal(vx_buf_str(&b), "$0.25/h");
	vx_buf_reset(&b);
	assert_int_equal(report_run_cost(&b, f->h[3].record, f->h[3].record->current, &f->prices), 0);
	assert_string_equal(vx_buf_str(&b), "unknown");
	vx_buf_release(&b);
}

/*
 * A reservation: 2 VMs from T0, 1 from T0+2h, to until (T0+4h): 2 x 2 + 1 x 2 = 6 VM-hours
 * x a2-highgpu-1g's 4.00/h (its GPU comes with it) = 24.00; a run on it for 1 h uses 1 VM-hour.
 */
static void test_reservation(void **state)
{
	struct fixture *f = *state;
	struct state_record *res = record("reservation.a100", 2), *job = record("job.r", 0);
	struct state_history_entry h[2];
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;

	memset(&r, 0, sizeof(r));
	free(res->kind);
	res->kind = strdup("Reservation");
	res->spec_json = strdup("{\"zone\":\"r1-a\",\"machineType\":\"a2-highgpu-1g\",\"acceleratorType\":"
				"\"nvidia-tesla-a100\",\"acceleratorCount\":1,\"count\":1}");
	res->history[0] = run("projects/p/zones/r1-a/reservations/a100", NULL, 0, 0, T0, 0, 0, "READY", NULL);
	res->history[0].has_value = 1;
	res->history[0].value = 2;
	res->history[1] = run("projects/p/zones/r1-a/reservations/a100", NULL, 0, 0, T0 + 2 * HOUR, 0, 0, "READY",
			      NULL);
	res->history[1].has_value = 1;
	res->history[1].value = 1;
	free(res->history[1].action);
	res->history[1].action = strdup("update");
	free(res->history[0].region);
	res->history[0].region = strdup("r1-a");
	free(res->history[1].region);
	res->history[1].region = strdup("r1-a");
	job->current = malloc(sizeof(*job->current));
	*job->current = run("projects/p/locations/r1/customJobs/9", "STANDARD", 1, 1, T0, T0, T0 + HOUR,
			    "JOB_STATE_SUCCEEDED", NULL);
	job->current->reservation = strdup("a100");
	h[0] = (struct state_history_entry){ .address = strdup("reservation.a100"), .record = res };
	h[1] = (struct state_history_entry){ .address = strdup("job.r"), .record = job };
	assert_int_equal(report_input_add_history(&in, "team-a", h, 2), 0);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 4 * HOUR, T0 + 4 * HOUR, &err), 0);
	assert_int_equal(r.nruns, 1);
	assert_string_equal(r.runs[0].strategy, "RESERVATION");
	assert_true(r.runs[0].usd == 0);
	assert_string_equal(r.runs[0].note, "on a reservation: the reservation's VM-hours are its cost");
	assert_int_equal(r.nreservations, 1);
	assert_string_equal(r.reservations[0].machine_type, "a2-highgpu-1g");
	assert_string_equal(r.reservations[0].accelerator_type, "NVIDIA_TESLA_A100");
	assert_int_equal(r.reservations[0].count, 1);
	assert_int_equal(r.reservations[0].from_ms, T0);
	assert_int_equal(r.reservations[0].to_ms, T0 + 4 * HOUR);
	assert_true(r.reservations[0].vm_hours == 6);
	assert_true(r.reservations[0].used_vm_hours == 1);
	assert_true(r.reservations[0].usd == 24);
	assert_true(r.usd == 24);
	assert_string_equal(r.by_strategy[0].key, "RESERVATION");
	assert_true(r.by_strategy[0].usd == 24);
	report_release(&r);
	report_input_release(&in);
	for (int i = 0; i < 2; i++) {
		state_record_release(h[i].record);
		free(h[i].record);
		h[i].record = NULL;
		state_history_entry_release(&h[i]);
	}
	vx_err_release(&err);
}

/* A record of a held kind: one run holding value VMs from created, in place. */
static struct state_record *held(const char *address, const char *spec, const char *place, int64_t value,
				 int64_t created, const char *state)
{
	struct state_record *r = record(address, 0);

	r->spec_json = strdup(spec);
	r->current = malloc(sizeof(*r->current));
	*r->current = run(NULL, NULL, 0, 0, created, 0, 0, state, NULL);
	free(r->current->region);
	r->current->region = strdup(place);
	r->current->has_value = 1;
	r->current->value = value;
	return r;
}

/*
 * The newer held kinds through their held_record slots, T0 to T0+3h:
 *   persistent_resource.pool: 4 machines in two pools, 1 x (n1-standard-4 + 1 T4) = 0.55/h and
 *     3 x n1-standard-4 = 0.60/h: 0.2875 per machine; 12 machine-hours = 3.45, of which a job
 *     on it used 1 (1 replica, 1 h): idle 11/12 x 3.45 = 3.1625 -> 3.16. The job costs nothing.
 *   future_reservation.gpus: 2 a2-highgpu-1g (4.00/h), booked from T0-1d, its window T0+1h to
 *     T0+2h: 2 VM-hours = 8.00, all idle.
 *   future_reservation.no: declined: nothing.
 */
static void test_held_kinds(void **state)
{
	struct fixture *f = *state;
	struct state_record *recs[4];
	struct state_history_entry h[4];
	struct report_input in = REPORT_INPUT_INIT;
	struct report r;
	struct vx_err err = VX_ERR_INIT;
	const char *booking = "{\"zone\":\"r1-a\",\"mode\":\"calendar\",\"start\":\"2026-11-23T01:00:00Z\","
			      "\"end\":\"2026-11-23T02:00:00Z\",\"totalCount\":2,\"machineType\":\"a2-highgpu-1g\","
			      "\"acceleratorType\":\"nvidia-tesla-a100\",\"acceleratorCount\":1}";

	memset(&r, 0, sizeof(r));
	recs[0] = held("persistent_resource.pool",
		       "{\"region\":\"r1\",\"spec\":{\"resourcePools\":[{\"id\":\"a\",\"machineSpec\":{\"machineType\":"
		       "\"n1-standard-4\",\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":1},"
		       "\"replicaCount\":\"1\"},{\"id\":\"b\",\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
		       "\"replicaCount\":\"3\"}]}}",
		       "r1", 4, T0, "RUNNING");
	recs[1] = held("future_reservation.gpus", booking, "r1-a", 2, T0 - 24 * HOUR, "FULFILLED");
	recs[2] = held("future_reservation.no", booking, "r1-a", 2, T0 - 24 * HOUR, "DECLINED");
	recs[3] = record("job.e", 0);
	free(recs[3]->spec_hash);
	recs[3]->spec_hash = strdup("h");
	recs[3]->spec_json = strdup("{\"persistentResourceId\":\"pool\",\"workerPoolSpecs\":[]}");
	recs[3]->current = malloc(sizeof(*recs[3]->current));
	*recs[3]->current = run("projects/p/locations/r1/customJobs/9", "STANDARD", 1, 1, T0, T0, T0 + HOUR,
				"JOB_STATE_SUCCEEDED", NULL);
	for (int i = 0; i < 4; i++)
		h[i] = (struct state_history_entry){ .address = strdup(recs[i]->address), .record = recs[i] };
	assert_int_equal(report_input_add_history(&in, "team-a", h, 4), 0);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 3 * HOUR, T0 + 3 * HOUR, &err), 0);
	assert_int_equal(r.nruns, 1);
	assert_true(r.runs[0].usd == 0);
	assert_string_equal(r.runs[0].note, "on a persistent resource: the resource's VM-hours are its cost");
	assert_int_equal(r.nreservations, 2);
	assert_string_equal(r.reservations[0].address, "future_reservation.gpus");
	assert_string_equal(r.reservations[0].accelerator_type, "NVIDIA_TESLA_A100");
	assert_int_equal(r.reservations[0].from_ms, T0 + HOUR);
	assert_int_equal(r.reservations[0].to_ms, T0 + 2 * HOUR);
	assert_true(r.reservations[0].vm_hours == 2 && r.reservations[0].usd == 8 && r.reservations[0].usd_idle == 8);
	assert_false(r.reservations[0].unused);
	assert_string_equal(r.reservations[1].address, "persistent_resource.pool");
	assert_string_equal(r.reservations[1].machine_type, "n1-standard-4");
	assert_string_equal(r.reservations[1].accelerator_type, "NVIDIA_TESLA_T4");
	assert_true(r.reservations[1].vm_hours == 12 && r.reservations[1].used_vm_hours == 1);
	assert_true(r.reservations[1].usd == 3.45 && r.reservations[1].usd_idle == 3.16);
	assert_false(r.reservations[1].unused);
	assert_true(r.usd == 11.45 && r.usd_wasted == 11.16);
	report_release(&r);
	report_input_release(&in);
	/* No job of the state names the pool: flagged. */
	assert_int_equal(report_input_add_history(&in, "team-a", h, 3), 0);
	assert_int_equal(report_build(&r, &in, &f->prices, T0 - 24 * HOUR, T0 + 3 * HOUR, T0 + 3 * HOUR, &err), 0);
	assert_true(r.reservations[1].unused && r.reservations[1].usd_idle == 3.45);
	report_release(&r);
	report_input_release(&in);
	for (int i = 0; i < 4; i++) {
		state_record_release(h[i].record);
		free(h[i].record);
		h[i].record = NULL;
		state_history_entry_release(&h[i]);
	}
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_figures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_and_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csv_cells_are_never_formulas, setup, teardown),
		cmocka_unit_test(test_parse_when),
		cmocka_unit_test_setup_teardown(test_run_cost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reservation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_kinds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
