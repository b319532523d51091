/* Unit tests for state/state.c: the model and its JSON form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"

static int64_t fixed_now(void *ud)
{
	return *(int64_t *)ud;
}

static void ctx_fixed(struct vx_ctx *ctx, int64_t *now)
{
	vx_ctx_init(ctx);
	ctx->clock.now_ms = fixed_now;
	ctx->clock.mono_ms = fixed_now;
	ctx->clock.ud = now;
	ctx->seed = 42;
}

/* A state with one job that ran twice. */
static void sample(struct state *st, struct vx_ctx *ctx)
{
	struct state_record *r = NULL;
	struct state_run run;
	struct state_intent in;
	char addr[] = "job.b", op[] = "create";

	assert_int_equal(state_new(st, "research", ctx, NULL), 0);
	assert_int_equal(state_add_record(st, "job.b", "CustomJob", NULL, NULL), 0);
	assert_int_equal(state_add_record(st, "job.a", "CustomJob", &r, NULL), 0);
	r->spec_hash = strdup("abc123");
	r->spec_json = strdup("{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"}],\"n\":8}");
	r->run = 1;
	r->attempts = 2;
	memset(&run, 0, sizeof(run));
	run.resource = strdup("projects/p/locations/us-central1/customJobs/1");
	run.region = strdup("us-central1");
	run.action = strdup("create");
	run.spec_hash = strdup("abc123");
	run.run = 1;
	run.attempt = 1;
	assert_int_equal(vx_labels_set(&run.labels, &run.nlabels, "vx-stack", "research"), 0);
	assert_int_equal(vx_labels_set(&run.labels, &run.nlabels, "vx-job", "a"), 0);
	run.state = strdup("JOB_STATE_FAILED");
	run.failure = strdup("stockout");
	run.error_code = 8;
	run.error_message = strdup("no capacity \"here\"\n");
	run.created_ms = INT64_C(1795341720000);
	run.ended_ms = INT64_C(1795341780123);
	run.config_commit = strdup("0123456789abcdef0123456789abcdef01234567");
	assert_int_equal(state_record_start_run(r, &run, NULL), 0);
	memset(&run, 0, sizeof(run));
	run.resource = strdup("projects/p/locations/us-central1/customJobs/2");
	run.action = strdup("resubmit");
	run.attempt = 2;
	run.run = 1;
	assert_int_equal(state_record_start_run(r, &run, NULL), 0);
	memset(&in, 0, sizeof(in));
	in.address = addr;
	in.op = op;
	in.started_ms = INT64_C(1795341720000);
	assert_int_equal(state_journal_add(st, &in, NULL), 0);
}

static void test_round_trip(void **unused)
{
	struct vx_ctx ctx;
	int64_t now = INT64_C(1795341720000);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *a = NULL, *b = NULL;

	(void)unused;
	ctx_fixed(&ctx, &now);
	sample(&st, &ctx);
	assert_int_equal(st.nrecords, 2);
	assert_string_equal(st.records[0].address, "job.a"); /* kept sorted */
	assert_non_null(state_find(&st, "job.b"));
	assert_null(state_find(&st, "job.c"));
	assert_int_equal(st.records[0].nhistory, 1);
	assert_string_equal(st.records[0].current->resource,
			    "projects/p/locations/us-central1/customJobs/2");
	assert_int_equal(state_to_json(&st, &a, &err), 0);
	assert_int_equal(state_from_json(&back, a, strlen(a), &err), 0);
	assert_int_equal(state_to_json(&back, &b, &err), 0);
	assert_string_equal(a, b);
	assert_string_equal(back.records[0].history[0].error_message, "no capacity \"here\"\n");
	assert_int_equal(back.records[0].history[0].ended_ms, INT64_C(1795341780123));
	assert_string_equal(back.records[0].spec_json,
			    "{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"}],\"n\":8}");
	assert_string_equal(vx_labels_get(back.records[0].history[0].labels,
					     back.records[0].history[0].nlabels, "vx-job"), "a");
	assert_string_equal(back.lineage, st.lineage);
	assert_int_equal(state_journal_remove(&back, "job.b"), 0);
	assert_int_equal(state_journal_remove(&back, "job.b"), VX_ENOTFOUND);
	assert_int_equal(state_remove_record(&back, "job.b"), 0);
	assert_int_equal(back.nrecords, 1);
	free(a);
	free(b);
	state_release(&st);
	state_release(&back);
	vx_err_release(&err);
}

/* The exact bytes: fixed key order, a stable format. */
static void test_record_json_exact(void **unused)
{
	struct state_record r;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, addr[] = "job.a", kind[] = "CustomJob";

	(void)unused;
	memset(&r, 0, sizeof(r));
	r.address = addr;
	r.kind = kind;
	r.run = 3;
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_string_equal(text, "{\n"
				  "\t\"version\":\t1,\n"
				  "\t\"address\":\t\"job.a\",\n"
				  "\t\"kind\":\t\"CustomJob\",\n"
				  "\t\"specHash\":\tnull,\n"
				  "\t\"spec\":\tnull,\n"
				  "\t\"run\":\t3,\n"
				  "\t\"attempts\":\t0,\n"
				  "\t\"protect\":\tfalse,\n"
				  "\t\"current\":\tnull,\n"
				  "\t\"history\":\t[]\n"
				  "}\n");
	free(text);
	vx_err_release(&err);
}

/* A run written before launchedBy existed still loads; a new one round-trips it. */
/* rung (issue 14): absent in older runs (0); written only when not 0, after
 * attempt; round-trips, copies, and is checked on read. */
static void test_run_rung(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/r/customJobs/1\",\"region\":\"r\",\"action\":\"create\","
		"\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},\"state\":null,\"failure\":null,"
		"\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,\"createdAt\":null,"
		"\"endedAt\":null,\"configCommit\":null},\"history\":[]}";
	struct state_record r, back;
	struct state_run copy;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *bad;

	(void)unused;
	memset(&r, 0, sizeof(r));
	memset(&back, 0, sizeof(back));
	assert_int_equal(state_record_from_json(&r, old, sizeof(old) - 1, &err), 0);
	assert_int_equal(r.current->rung, 0);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "rung"));
	free(text);
	r.current->rung = 2;
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\"attempt\":\t1,\n\t\t\"rung\":\t2,\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.current->rung, 2);
	assert_int_equal(state_run_copy(&copy, back.current), 0);
	assert_int_equal(copy.rung, 2);
	state_run_release(&copy);
	free(text);
	state_record_release(&back);
	bad = vx_asprintf("%.*s\"rung\":-1,%s", (int)(strstr(old, "\"labels\"") - old), old,
			  strstr(old, "\"labels\""));
	assert_int_equal(state_record_from_json(&back, bad, strlen(bad), &err), VX_EINVAL);
	assert_non_null(strstr(vx_err_msg(&err), "rung"));
	free(bad);
	state_record_release(&r);
	state_record_release(&back);
	vx_err_release(&err);
}

/*
 * A run's exitCode and a policy's onExitCodes (issue 37): absent in older
 * records (0, none) and written only when set, so those keep their bytes;
 * they round-trip, copy, and bad values are refused naming the path.
 */
static void test_exit_codes(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/r/customJobs/1\",\"region\":\"r\",\"action\":\"create\","
		"\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},\"state\":null,\"failure\":null,"
		"\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,\"createdAt\":null,"
		"\"endedAt\":null,\"configCommit\":null%s},\"history\":[]%s}";
	static const char pol[] = ",\"applied\":{\"resubmitOn\":[],\"maxAttempts\":1,\"delayMs\":0,"
				  "\"fallbackRungs\":0,\"fallbackHash\":null,\"after\":[],\"maxParallel\":0,"
				  "\"maxFailed\":0%s}";
	struct state_record r, back, copy;
	struct vx_err err = VX_ERR_INIT;
	char json[2048], p[512], *text = NULL;

	(void)unused;
	snprintf(p, sizeof(p), pol, "");
	snprintf(json, sizeof(json), old, "", p);
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.current->exit_code, 0);
	assert_int_equal(r.applied->on_exit_codes[2], 0);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "xitCode"));
	free(text);
	r.current->exit_code = 137;
	r.current->timeout_ms = 3600000;
	r.applied->on_exit_codes[2] |= UINT64_C(1) << (137 % 64) | UINT64_C(1) << (143 % 64);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"exitCode\":\t137,\n\t\t\"timeoutMs\":\t3600000,\n"));
	assert_non_null(strstr(text, "\t\t\"maxFailed\":\t0,\n\t\t\"onExitCodes\":\t[137, 143]\n\t}"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(state_record_copy(&copy, &back), 0);
	assert_int_equal(copy.current->exit_code, 137);
	assert_int_equal(copy.current->timeout_ms, 3600000);
	assert_true(copy.applied->on_exit_codes[2] == (UINT64_C(1) << 9 | UINT64_C(1) << 15));
	state_record_release(&copy);
	state_record_release(&back);
	free(text);
	state_record_release(&r);
	snprintf(json, sizeof(json), old, ",\"exitCode\":256", p);
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_non_null(strstr(vx_err_msg(&err), "current.exitCode: 256 is out of range [1, 255]"));
	vx_err_release(&err);
	/* resubmit.on's map form and resubmit.within (written only when set). */
	snprintf(json, sizeof(json), old, "",
		 ",\"applied\":{\"resubmitOn\":[\"stockout\",\"preempted\"],\"maxAttempts\":1,\"delayMs\":0,"
		 "\"fallbackRungs\":0,\"fallbackHash\":null,\"after\":[],\"maxParallel\":0,\"maxFailed\":0,"
		 "\"resubmitBudgets\":[6,20],\"withinMs\":43200000,\"returnAfterMs\":21600000,"
		 "\"maxQueuedMs\":7200000}");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.applied->within_ms, 43200000);
	assert_int_equal(r.applied->return_after_ms, 21600000);
	assert_int_equal(r.applied->max_queued_ms, 7200000);
	assert_int_equal(r.applied->resubmit_budgets[1], 20);
	assert_int_equal(state_record_copy(&copy, &r), 0);
	assert_int_equal(copy.applied->resubmit_budgets[0], 6);
	assert_int_equal(state_record_to_json(&copy, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"resubmitBudgets\":\t[6, 20],\n\t\t\"withinMs\":\t43200000,\n"
				     "\t\t\"returnAfterMs\":\t21600000,\n\t\t\"maxQueuedMs\":\t7200000\n"));
	free(text);
	state_record_release(&copy);
	state_record_release(&r);
	snprintf(p, sizeof(p), pol, ",\"resubmitBudgets\":[1]");
	snprintf(json, sizeof(json), old, "", p);
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_non_null(strstr(vx_err_msg(&err), "applied.resubmitBudgets: expected one number per resubmitOn class"));
	vx_err_release(&err);
	snprintf(p, sizeof(p), pol, ",\"onExitCodes\":[137,0]");
	snprintf(json, sizeof(json), old, "", p);
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_non_null(strstr(vx_err_msg(&err), "applied.onExitCodes[1]: expected an exit status (1 to 255)"));
	vx_err_release(&err);
}

static void test_run_launched_by_optional(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/r/customJobs/1\",\"region\":\"r\",\"action\":\"create\","
		"\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},\"state\":null,\"failure\":null,"
		"\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,\"createdAt\":null,"
		"\"endedAt\":null,\"configCommit\":null},\"history\":[]}";
	struct state_record r, back;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, who[] = "alice@ci-3";

	(void)unused;
	memset(&r, 0, sizeof(r));
	memset(&back, 0, sizeof(back));
	assert_int_equal(state_record_from_json(&r, old, sizeof(old) - 1, &err), 0);
	assert_null(r.current->launched_by);
	r.current->launched_by = strdup(who);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\"launchedBy\":\t\"alice@ci-3\""));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_string_equal(back.current->launched_by, who);
	free(text);
	state_record_release(&r);
	state_record_release(&back);
	vx_err_release(&err);
}

/*
 * configDirty and declHash (issue 8): a run started from uncommitted YAML says
 * so. Older runs, without the keys, load as clean; the keys are written in a
 * fixed place; they round-trip, copy, and are checked on read.
 */
static void test_run_config_dirty(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/r/customJobs/1\",\"region\":\"r\",\"action\":\"create\","
		"\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},\"state\":null,\"failure\":null,"
		"\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,\"createdAt\":null,"
		"\"endedAt\":null,\"configCommit\":\"c0ffee\"%s},\"history\":[]}";
	struct state_record r, back;
	struct state_run copy;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, json[1024];

	(void)unused;
	memset(&r, 0, sizeof(r));
	memset(&back, 0, sizeof(back));
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.current->config_dirty, 0);
	assert_null(r.current->decl_hash);
	/* Clean runs are written with the keys too: false and null, after configCommit. */
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"configCommit\":\t\"c0ffee\",\n"
				     "\t\t\"configDirty\":\tfalse,\n"
				     "\t\t\"declHash\":\tnull,\n"
				     "\t\t\"launchedBy\":\tnull\n"));
	free(text);
	text = NULL;
	r.current->config_dirty = 1;
	r.current->decl_hash = strdup("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"configCommit\":\t\"c0ffee\",\n"
				     "\t\t\"configDirty\":\ttrue,\n"
				     "\t\t\"declHash\":\t\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.current->config_dirty, 1);
	assert_string_equal(back.current->decl_hash, r.current->decl_hash);
	assert_int_equal(state_run_copy(&copy, back.current), 0);
	assert_int_equal(copy.config_dirty, 1);
	assert_string_equal(copy.decl_hash, r.current->decl_hash);
	state_run_release(&copy);
	state_record_release(&back);
	/* Wrong types are refused, naming the key. */
	snprintf(json, sizeof(json), old, ",\"configDirty\":\"yes\"");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: current.configDirty: expected true or false");
	vx_err_release(&err);
	snprintf(json, sizeof(json), old, ",\"declHash\":5");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: current.declHash: expected a string or null");
	vx_err_release(&err);
	snprintf(json, sizeof(json), old, ",\"configDirty\":true,\"configDirty\":true");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: current: duplicate key \"configDirty\"");
	free(text);
	state_record_release(&r);
	vx_err_release(&err);
}

/* A run of a ladder records what its rung is; a state without it reads as before. */
static void test_run_rung_identity(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":3,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/us-east5/customJobs/1\",\"region\":\"us-east5\","
		"\"action\":\"resubmit\",\"specHash\":\"ab\",\"run\":1,\"attempt\":3,\"rung\":2,\"labels\":{},"
		"\"state\":null,\"failure\":null,\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,"
		"\"createdAt\":null,\"endedAt\":null,\"configCommit\":null%s},\"history\":[]}";
	struct state_record r, back;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, json[1024];

	(void)unused;
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.current->rung, 2);
	assert_null(r.current->rung_scheduling);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "rungScheduling"));
	free(text);
	r.current->rung_scheduling = strdup("SPOT");
	r.current->rung_machine = strdup("g2-standard-4");
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"rung\":\t2,\n"
				     "\t\t\"rungScheduling\":\t\"SPOT\",\n"
				     "\t\t\"rungMachine\":\t\"g2-standard-4\",\n"
				     "\t\t\"rungReservation\":\tnull,\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_string_equal(back.current->rung_scheduling, "SPOT");
	assert_string_equal(back.current->rung_machine, "g2-standard-4");
	assert_null(back.current->rung_reservation);
	state_record_release(&back);
	free(text);
	snprintf(json, sizeof(json), old, ",\"rungScheduling\":7");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	state_record_release(&r);
	vx_err_release(&err);
}

/*
 * What a run was created with (for its cost): written only when the machine
 * type is known, so runs recorded before keep their bytes, and read back.
 */
static void test_run_machines(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/us-east5/customJobs/1\",\"region\":\"us-east5\","
		"\"action\":\"create\",\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},"
		"\"state\":null,\"failure\":null,\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,"
		"\"createdAt\":null,\"endedAt\":null,\"configCommit\":null%s},\"history\":[]}";
	struct state_record r, back;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, json[1024];

	(void)unused;
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_null(r.current->machine_type);
	assert_int_equal(r.current->replicas, 0);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "machineType"));
	assert_null(strstr(text, "replicas"));
	free(text);
	r.current->machine_type = strdup("a2-highgpu-1g");
	r.current->accelerator_type = strdup("NVIDIA_TESLA_A100");
	r.current->accelerator_count = 4;
	r.current->replicas = 4;
	r.current->strategy = strdup("SPOT");
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"machineType\":\t\"a2-highgpu-1g\",\n"
				     "\t\t\"acceleratorType\":\t\"NVIDIA_TESLA_A100\",\n"
				     "\t\t\"acceleratorCount\":\t4,\n"
				     "\t\t\"replicas\":\t4,\n"
				     "\t\t\"strategy\":\t\"SPOT\",\n"
				     "\t\t\"reservation\":\tnull\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_string_equal(back.current->machine_type, "a2-highgpu-1g");
	assert_string_equal(back.current->accelerator_type, "NVIDIA_TESLA_A100");
	assert_int_equal(back.current->accelerator_count, 4);
	assert_int_equal(back.current->replicas, 4);
	assert_string_equal(back.current->strategy, "SPOT");
	assert_null(back.current->reservation);
	state_record_release(&back);
	free(text);
	snprintf(json, sizeof(json), old, ",\"replicas\":-1");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: current.replicas: -1 is out of range [0, 1000000]");
	state_record_release(&r);
	vx_err_release(&err);
}

/* after:'s follow record: written only when set, read back sorted, refused when not an object. */
static void test_run_follows(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.e\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/us-east5/customJobs/9\",\"region\":\"us-east5\","
		"\"action\":\"create\",\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{}%s,"
		"\"state\":null,\"failure\":null,\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,"
		"\"createdAt\":null,\"endedAt\":null,\"configCommit\":null},\"history\":[]}";
	struct state_record r, back;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, json[1024];

	(void)unused;
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.current->nfollows, 0);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "follows"));
	free(text);
	state_record_release(&r);
	snprintf(json, sizeof(json), old, ",\"follows\":{\"job.t\":\"projects/p/locations/r/customJobs/2\","
		 "\"job.s[a=1]\":\"projects/p/locations/r/customJobs/1\"}");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_int_equal(r.current->nfollows, 2);
	assert_string_equal(r.current->follows[0].key, "job.s[a=1]");
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"follows\":\t{\n"
				     "\t\t\t\"job.s[a=1]\":\t\"projects/p/locations/r/customJobs/1\",\n"
				     "\t\t\t\"job.t\":\t\"projects/p/locations/r/customJobs/2\"\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_string_equal(vx_labels_get(back.current->follows, back.current->nfollows, "job.t"),
			    "projects/p/locations/r/customJobs/2");
	state_record_release(&back);
	free(text);
	state_record_release(&r);
	snprintf(json, sizeof(json), old, ",\"follows\":[]");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: current.follows: expected an object");
	vx_err_release(&err);
}

/*
 * applied (issue 31): the policy an apply recorded. Written only when set,
 * so a record from before keeps its bytes and loads without one; it
 * round-trips, copies, and bad values are refused naming the path.
 */
static struct state_policy *full_policy(void);
static void whole_state_carries_applied(void);

static void test_record_applied(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.e\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":null,\"history\":[]%s}";
	struct state_record r, back, copy;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *again = NULL, json[1024];

	(void)unused;
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_null(r.applied);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "applied"));
	free(text);
	r.applied = full_policy();
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\"applied\":\t{\n\t\t\"resubmitOn\":\t[\"stockout\", \"preempted\"],\n"
				     "\t\t\"maxAttempts\":\t3,\n\t\t\"delayMs\":\t300000,\n\t\t\"fallbackRungs\":\t1,\n"
				     "\t\t\"fallbackHash\":\t\"0123abcd\",\n\t\t\"after\":\t[\"job.train\"],\n"
				     "\t\t\"maxParallel\":\t2,\n\t\t\"maxFailed\":\t4\n\t}\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(state_record_copy(&copy, &back), 0);
	assert_int_equal(state_record_to_json(&copy, &again, &err), 0);
	assert_string_equal(again, text);
	assert_string_equal(copy.applied->after[0], "job.train");
	assert_int_equal(copy.applied->max_failed, 4);
	state_record_release(&copy);
	state_record_release(&back);
	free(again);
	free(text);
	state_record_release(&r);
	snprintf(json, sizeof(json), old, ",\"applied\":{\"resubmitOn\":[],\"maxAttempts\":0,\"delayMs\":0,"
		 "\"fallbackRungs\":0,\"fallbackHash\":null,\"after\":[],\"maxParallel\":0,\"maxFailed\":0}");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: applied.maxAttempts: 0 is out of range [1, 2147483648]");
	vx_err_release(&err);
	snprintf(json, sizeof(json), old, ",\"applied\":{\"resubmitOn\":[1],\"maxAttempts\":1,\"delayMs\":0,"
		 "\"fallbackRungs\":0,\"fallbackHash\":null,\"after\":[],\"maxParallel\":0,\"maxFailed\":0}");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: applied.resubmitOn[0]: expected a non-empty string "
			    "(at most 1024 bytes)");
	vx_err_release(&err);
	snprintf(json, sizeof(json), old, ",\"applied\":{\"maxAttempts\":1}");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: applied: missing key \"resubmitOn\"");
	vx_err_release(&err);
	whole_state_carries_applied();
}

/* The whole state's form (the file and gcs backends) carries it as a record does (git). */
static void whole_state_carries_applied(void)
{
	struct vx_ctx ctx;
	int64_t now = INT64_C(1795341720000);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL;

	ctx_fixed(&ctx, &now);
	sample(&st, &ctx);
	state_edit(&st, "job.a")->applied = full_policy();
	assert_int_equal(state_to_json(&st, &text, &err), 0);
	assert_int_equal(state_from_json(&back, text, strlen(text), &err), 0);
	assert_non_null(state_find(&back, "job.a")->applied);
	assert_int_equal(state_find(&back, "job.a")->applied->max_parallel, 2);
	assert_string_equal(state_find(&back, "job.a")->applied->resubmit_on[1], "preempted");
	assert_null(state_find(&back, "job.b")->applied);
	free(text);
	state_release(&st);
	state_release(&back);
}

/*
 * plannedBy, pullRequest and pullRequestUrl (issue 11): written only when
 * set (so a record without them keeps its bytes), after launchedBy; they
 * round-trip and copy, and a pull request number out of range is refused.
 */
static void test_run_planned_by_and_pull_request(void **unused)
{
	static const char old[] =
		"{\"version\":1,\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":\"ab\","
		"\"spec\":null,\"run\":1,\"attempts\":1,\"protect\":false,\"current\":"
		"{\"resource\":\"projects/p/locations/r/customJobs/1\",\"region\":\"r\",\"action\":\"create\","
		"\"specHash\":\"ab\",\"run\":1,\"attempt\":1,\"labels\":{},\"state\":null,\"failure\":null,"
		"\"errorCode\":0,\"errorMessage\":null,\"cancelledByVx\":false,\"createdAt\":null,"
		"\"endedAt\":null,\"configCommit\":null,\"launchedBy\":\"bob\"%s},\"history\":[]}";
	struct state_record r, back;
	struct state_run copy;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, json[1024];

	(void)unused;
	memset(&r, 0, sizeof(r));
	memset(&back, 0, sizeof(back));
	snprintf(json, sizeof(json), old, "");
	assert_int_equal(state_record_from_json(&r, json, strlen(json), &err), 0);
	assert_null(r.current->planned_by);
	assert_int_equal(r.current->pr_number, 0);
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_null(strstr(text, "planned"));
	assert_null(strstr(text, "pullRequest"));
	free(text);
	r.current->planned_by = strdup("alice");
	r.current->pr_number = 7;
	r.current->pr_url = strdup("https://github.com/o/r/pull/7");
	assert_int_equal(state_record_to_json(&r, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\"launchedBy\":\t\"bob\",\n"
				     "\t\t\"plannedBy\":\t\"alice\",\n"
				     "\t\t\"pullRequest\":\t7,\n"
				     "\t\t\"pullRequestUrl\":\t\"https://github.com/o/r/pull/7\"\n"));
	assert_int_equal(state_record_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(state_run_copy(&copy, back.current), 0);
	assert_string_equal(copy.planned_by, "alice");
	assert_int_equal(copy.pr_number, 7);
	assert_string_equal(copy.pr_url, "https://github.com/o/r/pull/7");
	state_run_release(&copy);
	state_record_release(&back);
	snprintf(json, sizeof(json), old, ",\"pullRequest\":0");
	assert_int_equal(state_record_from_json(&back, json, strlen(json), &err), VX_EINVAL);
	vx_err_release(&err);
	free(text);
	state_record_release(&r);
	vx_err_release(&err);
}

/* Replaces *s with a different string (NULL with one, one with another). */
static void restr(char **s)
{
	char *old = *s;

	*s = strdup(old && strcmp(old, "Z") == 0 ? "Y" : "Z");
	free(old);
}

/* Changes field k of run (0..); 0 when k is past the last. */
static int mutate_run(struct state_run *r, int k)
{
	switch (k) {
	case 0: restr(&r->resource); return 1;
	case 1: restr(&r->project); return 1;
	case 2: restr(&r->region); return 1;
	case 3: restr(&r->action); return 1;
	case 4: restr(&r->spec_hash); return 1;
	case 5: r->run++; return 1;
	case 6: r->attempt++; return 1;
	case 7: r->rung++; return 1;
	case 8: restr(&r->labels[0].value); return 1;
	case 9: restr(&r->labels[0].key); return 1;
	case 10: assert_int_equal(vx_labels_set(&r->labels, &r->nlabels, "zz", "1"), 0); return 1;
	case 11: restr(&r->state); return 1;
	case 12: restr(&r->failure); return 1;
	case 13: r->error_code++; return 1;
	case 14: restr(&r->error_message); return 1;
	case 15: r->cancelled_by_vx = !r->cancelled_by_vx; return 1;
	case 16: r->created_ms += 1000; return 1;
	case 17: r->ended_ms += 1000; return 1;
	case 18: restr(&r->config_commit); return 1;
	case 19: r->config_dirty = !r->config_dirty; return 1;
	case 20: restr(&r->decl_hash); return 1;
	case 21: restr(&r->launched_by); return 1;
	case 22: restr(&r->planned_by); return 1;
	case 23: r->pr_number++; return 1;
	case 24: restr(&r->pr_url); return 1;
	case 25: r->has_value = !r->has_value; return 1;
	case 26: r->value++; return 1;
	case 27: restr(&r->rung_scheduling); return 1;
	case 28: restr(&r->rung_machine); return 1;
	case 29: restr(&r->rung_reservation); return 1;
	case 30: r->started_ms += 1000; return 1;
	case 31: restr(&r->follows[0].value); return 1;
	case 32: restr(&r->follows[0].key); return 1;
	case 33: assert_int_equal(vx_labels_set(&r->follows, &r->nfollows, "job.zz", "1"), 0); return 1;
	case 34: restr(&r->machine_type); return 1;
	case 35: restr(&r->accelerator_type); return 1;
	case 36: r->accelerator_count++; return 1;
	case 37: r->replicas++; return 1;
	case 38: restr(&r->strategy); return 1;
	case 39: restr(&r->reservation); return 1;
	case 40: restr(&r->policy_commit); return 1;
	case 41: r->exit_code = r->exit_code == 137 ? 143 : 137; return 1;
	case 42: r->timeout_ms += 60000; return 1;
	default: return 0;
	}
}

static int mutate_record(struct state_record *r, int k)
{
	switch (k) {
	case 0: restr(&r->address); return 1;
	case 1: restr(&r->kind); return 1;
	case 2: restr(&r->spec_hash); return 1;
	case 3:
		free(r->spec_json);
		r->spec_json = strdup("{\"n\":9}");
		return 1;
	case 4: r->run++; return 1;
	case 5: r->attempts++; return 1;
	case 6: r->protect = !r->protect; return 1;
	case 9: r->on_remove = r->on_remove == 1 ? 2 : 1; return 1;
	case 7:
		state_run_release(r->current);
		free(r->current);
		r->current = NULL;
		return 1;
	case 8: state_run_release(&r->history[--r->nhistory]); return 1;
	case 10: state_policy_free(r->applied); r->applied = NULL; return 1;
	case 11: r->applied->max_attempts++; return 1;
	case 12: r->applied->delay_ms++; return 1;
	case 13: r->applied->fallback_rungs++; return 1;
	case 14: restr(&r->applied->fallback_hash); return 1;
	case 15: r->applied->max_parallel++; return 1;
	case 16: r->applied->max_failed++; return 1;
	case 17: free(r->applied->resubmit_on[--r->applied->nresubmit_on]); return 1;
	case 18: restr(&r->applied->after[0]); return 1;
	case 19: r->applied->on_exit_codes[2] ^= UINT64_C(1) << 15; return 1;
	case 20: r->applied->within_ms += 60000; return 1;
	case 22: r->applied->return_after_ms += 60000; return 1;
	case 23: r->applied->max_queued_ms += 60000; return 1;
	case 21:
		if (r->applied->resubmit_budgets) {
			free(r->applied->resubmit_budgets);
			r->applied->resubmit_budgets = NULL;
		} else {
			r->applied->resubmit_budgets = calloc(r->applied->nresubmit_on, sizeof(int64_t));
			assert_non_null(r->applied->resubmit_budgets);
		}
		return 1;
	default: return 0;
	}
}

/* A policy with every field set (two resubmit classes, one after:). */
static struct state_policy *full_policy(void)
{
	struct state_policy *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->resubmit_on = calloc(2, sizeof(char *));
	p->after = calloc(1, sizeof(char *));
	assert_non_null(p->resubmit_on);
	assert_non_null(p->after);
	p->resubmit_on[0] = strdup("stockout");
	p->resubmit_on[1] = strdup("preempted");
	p->nresubmit_on = 2;
	p->after[0] = strdup("job.train");
	p->nafter = 1;
	p->max_attempts = 3;
	p->delay_ms = 300000;
	p->fallback_rungs = 1;
	p->fallback_hash = strdup("0123abcd");
	p->max_parallel = 2;
	p->max_failed = 4;
	return p;
}

/* Every field set, in the current run and in the history. */
static void fill_run(struct state_run *r)
{
	restr(&r->project);
	r->rung = 2;
	r->cancelled_by_vx = 1;
	r->config_dirty = 1;
	restr(&r->decl_hash);
	restr(&r->launched_by);
	restr(&r->planned_by);
	r->pr_number = 7;
	restr(&r->pr_url);
	r->has_value = 1;
	r->value = 3;
	restr(&r->rung_scheduling);
	restr(&r->rung_machine);
	restr(&r->rung_reservation);
	restr(&r->machine_type);
	restr(&r->accelerator_type);
	r->accelerator_count = 8;
	r->replicas = 2;
	restr(&r->strategy);
	restr(&r->reservation);
	r->exit_code = 137;
	r->timeout_ms = 3600000;
	if (!r->nlabels)
		assert_int_equal(vx_labels_set(&r->labels, &r->nlabels, "vx-job", "a"), 0);
	if (!r->nfollows)
		assert_int_equal(vx_labels_set(&r->follows, &r->nfollows, "job.train",
					       "projects/p/locations/r/customJobs/1"), 0);
}

/*
 * Equal fingerprints must mean equal JSON (the git backend skips a record
 * whose fingerprint is unchanged). Each field of the record, of its
 * current run and of a past run is changed in turn: the JSON changes, and
 * the fingerprint must change too.
 */
static void test_fingerprint_covers_every_field(void **unused)
{
	struct state st = STATE_INIT;
	struct vx_ctx ctx;
	struct vx_buf base_fp = VX_BUF_INIT, fp = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct state_record base, r;
	char *base_json = NULL, *json = NULL;
	int64_t now = INT64_C(1795341720000);
	int k, where, n = 0;

	(void)unused;
	ctx_fixed(&ctx, &now);
	sample(&st, &ctx);
	assert_int_equal(state_record_copy(&base, state_find(&st, "job.a")), 0);
	base.protect = 1;
	base.applied = full_policy();
	fill_run(base.current);
	fill_run(&base.history[0]);
	assert_int_equal(state_record_to_json(&base, &base_json, &err), 0);
	assert_int_equal(state_record_fingerprint(&base, &base_fp, &err), 0);

	/* A copy has the same fingerprint. */
	assert_int_equal(state_record_copy(&r, &base), 0);
	assert_int_equal(state_record_fingerprint(&r, &fp, &err), 0);
	assert_int_equal(fp.len, base_fp.len);
	assert_memory_equal(fp.data, base_fp.data, fp.len);
	state_record_release(&r);

	for (where = 0; where < 3; where++) {
		for (k = 0;; k++) {
			int changed;

			assert_int_equal(state_record_copy(&r, &base), 0);
			if (where == 0)
				changed = mutate_record(&r, k);
			else
				changed = mutate_run(where == 1 ? r.current : &r.history[0], k);
			if (!changed) {
				state_record_release(&r);
				break;
			}
			assert_int_equal(state_record_to_json(&r, &json, &err), 0);
			assert_int_equal(state_record_fingerprint(&r, &fp, &err), 0);
			if (strcmp(json, base_json) == 0)
				fail_msg("change %d of part %d does not show in the JSON", k, where);
			if (fp.len == base_fp.len && memcmp(fp.data, base_fp.data, fp.len) == 0)
				fail_msg("change %d of part %d does not show in the fingerprint", k, where);
			free(json);
			json = NULL;
			state_record_release(&r);
			n++;
		}
	}
	assert_int_equal(n, 24 + 43 + 43);
	free(base_json);
	vx_buf_release(&base_fp);
	vx_buf_release(&fp);
	state_record_release(&base);
	state_release(&st);
	vx_err_release(&err);
}

static void expect_bad(const char *json, const char *msg)
{
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(state_from_json(&st, json, strlen(json), &err), VX_EINVAL);
	assert_string_equal(err.msg, msg);
	assert_null(st.stack);
	vx_err_release(&err);
}

#define HDR "{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":" \
	    "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,\"journal\":[],"

static void test_hostile(void **unused)
{
	struct state_record r;
	struct vx_err err = VX_ERR_INIT;
	char *big;

	(void)unused;
	expect_bad("", "invalid state JSON: 1:1: not valid JSON");
	expect_bad("{\n  \"version\": 1,\n  x}", "invalid state JSON: 3:4: not valid JSON");
	expect_bad("[]", "invalid state JSON: (top): expected an object");
	expect_bad(HDR "\"records\":[]} x", "invalid state JSON: 1:125: not valid JSON");
	expect_bad("{\"version\":2}", "invalid state JSON: missing key \"stack\"");
	expect_bad(HDR "\"records\":[],\"extra\":1}", "invalid state JSON: unknown key \"extra\"");
	expect_bad(HDR "\"records\":[],\"journal\":[]}",
		   "invalid state JSON: duplicate key \"journal\"");
	expect_bad("{\"version\":2,\"stack\":\"s\",\"serial\":1,\"lineage\":\"x\",\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: unsupported state version 2 (this vx reads version 1)");
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1.5,\"lineage\":\"x\",\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: serial: expected an integer");
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":-1,\"lineage\":\"x\",\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: serial: -1 is out of range [0, 9007199254740992]");
	expect_bad("{\"version\":1,\"stack\":\"../x\",\"serial\":1,\"lineage\":\"x\",\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: stack: bad stack name \"../x\"");
	expect_bad(HDR "\"records\":[{\"address\":\"job.a\"}]}",
		   "invalid state JSON: records[0]: missing key \"kind\"");
	expect_bad(HDR "\"records\":[{\"address\":\"job.a/../b\",\"kind\":\"CustomJob\",\"specHash\":"
		       "null,\"spec\":null,\"run\":1,\"attempts\":0,\"protect\":false,\"current\":null,"
		       "\"history\":[]}]}",
		   "invalid state JSON: records[0].address: bad address \"job.a/../b\": want "
		   "KIND.NAME with KIND of 1-32 lowercase letters, digits or '_' (a letter first) "
		   "and NAME of 1-128 letters, digits, '_', '-' or '.'");
	expect_bad(HDR "\"records\":[{\"address\":\"Job.a\",\"kind\":\"CustomJob\",\"specHash\":"
		       "null,\"spec\":null,\"run\":1,\"attempts\":0,\"protect\":false,\"current\":null,"
		       "\"history\":[]}]}",
		   "invalid state JSON: records[0].address: bad address \"Job.a\": want "
		   "KIND.NAME with KIND of 1-32 lowercase letters, digits or '_' (a letter first) "
		   "and NAME of 1-128 letters, digits, '_', '-' or '.'");
	expect_bad(HDR "\"records\":[{\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":"
		       "null,\"spec\":null,\"run\":1,\"attempts\":0,\"protect\":false,\"current\":"
		       "{\"resource\":1},\"history\":[]}]}",
		   "invalid state JSON: records[0].current: missing key \"region\"");
	expect_bad(HDR "\"records\":[{\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":"
		       "null,\"spec\":null,\"run\":1,\"attempts\":0,\"protect\":false,\"current\":"
		       "null,\"history\":[]},{\"address\":\"job.a\",\"kind\":\"CustomJob\",\"specHash\":"
		       "null,\"spec\":null,\"run\":1,\"attempts\":0,\"protect\":false,\"current\":"
		       "null,\"history\":[]}]}",
		   "invalid state JSON: records: job.a appears twice");
	expect_bad("{\"a\":\"\xff\"}", "invalid state JSON: invalid UTF-8 or a non-finite number");
	expect_bad("{\"a\":1e999}", "invalid state JSON: invalid UTF-8 or a non-finite number");
	expect_bad("{\"\xc3\":1}", "invalid state JSON: invalid UTF-8 or a non-finite number");
	expect_bad("{\"a\":[{\"b\":\"\xed\xa0\x80\"}]}", "invalid state JSON: invalid UTF-8 or a non-finite number");
	/* Judged as parsed: escapes are whole characters, and a string ends at a \u0000. */
	expect_bad("{\"\xc3\xa9\":\"\\ud83d\\ude00\"}", "invalid state JSON: unknown key \"\xc3\xa9\"");
	expect_bad("{\"a\":\"\\u0000\xff\"}", "invalid state JSON: unknown key \"a\"");
	/* Nesting past cJSON's limit, and a NUL byte. */
	big = malloc(5001);
	memset(big, '[', 5000);
	big[5000] = '\0';
	{
		struct state st = STATE_INIT;

		assert_int_equal(state_from_json(&st, big, 5000, &err), VX_EINVAL);
		vx_err_release(&err);
		assert_int_equal(state_from_json(&st, "{}\0{}", 5, &err), VX_EINVAL);
		assert_string_equal(err.msg, "invalid state JSON: contains a NUL byte");
		vx_err_release(&err);
		assert_int_equal(state_from_json(&st, big, STATE_MAX_JSON + 1, &err), VX_EINVAL);
		assert_string_equal(err.msg, "invalid state JSON: 67108865 bytes is over the limit "
					     "of 67108864");
		vx_err_release(&err);
	}
	free(big);
	assert_int_equal(state_record_from_json(&r, "{\"version\":1}", 13, &err), VX_EINVAL);
	assert_string_equal(err.msg, "invalid state record JSON: missing key \"address\"");
	vx_err_release(&err);
}

static void test_time(void **unused)
{
	char t[STATE_TIME_MAX];
	int64_t ms;

	(void)unused;
	state_time_format(INT64_C(1795341720000), t);
	assert_string_equal(t, "2026-11-22T10:02:00Z");
	state_time_format(INT64_C(1795341720007), t);
	assert_string_equal(t, "2026-11-22T10:02:00.007Z");
	assert_int_equal(state_time_parse("2026-11-22T10:02:00Z", &ms), 0);
	assert_true(ms == INT64_C(1795341720000));
	assert_int_equal(state_time_parse("2024-02-29T00:00:00.5Z", &ms), 0);
	assert_true(ms == INT64_C(1709164800500));
	assert_int_equal(state_time_parse("2023-02-29T00:00:00Z", &ms), VX_EINVAL);
	assert_int_equal(state_time_parse("2026-11-22T10:02:00", &ms), VX_EINVAL);
	assert_int_equal(state_time_parse("2026-11-22T10:02:00+01:00", &ms), VX_EINVAL);
	assert_int_equal(state_time_parse("2026-11-22T24:00:00Z", &ms), VX_EINVAL);
}

static void test_address_and_ids(void **unused)
{
	struct vx_ctx ctx;
	int64_t now = 1000;
	const char *name;
	char a[37], b[37], dir[STATE_DIR_SIZE];

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_address_split("job.gemma2-lora", dir, &name, NULL), 0);
	assert_string_equal(dir, "jobs");
	assert_string_equal(name, "gemma2-lora");
	assert_int_equal(state_address_split("quota.h100", dir, &name, NULL), 0);
	assert_string_equal(dir, "quotas");
	assert_int_equal(state_address_split("job.a.b", dir, &name, NULL), 0);
	assert_string_equal(dir, "jobs");
	assert_string_equal(name, "a.b");
	assert_int_equal(state_address_split("job..x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("job.", NULL, NULL, NULL), VX_EINVAL);
	/*
	 * Any well-formed prefix: which are kinds is the reconcile layer's
	 * business, and a record of a kind this vx does not know (a newer vx
	 * wrote it) is kept, not refused.
	 */
	assert_int_equal(state_address_split("bucket.x", dir, &name, NULL), 0);
	assert_string_equal(dir, "buckets");
	assert_int_equal(state_address_split("persistent_resource.p-1", dir, &name, NULL), 0);
	assert_string_equal(dir, "persistent_resources");
	assert_string_equal(name, "p-1");
	assert_int_equal(state_address_split("a23456789012345678901234567890_2.x", dir, NULL, NULL), 0);
	assert_string_equal(dir, "a23456789012345678901234567890_2s");
	/* A prefix is 1-32 of [a-z0-9_], a letter first. */
	assert_int_equal(state_address_split("a234567890123456789012345678901_3.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split(".x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("Job.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("1job.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("_job.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("jo-b.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("jo/b.x", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("job", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split("", NULL, NULL, NULL), VX_EINVAL);
	assert_int_equal(state_address_split(NULL, NULL, NULL, NULL), VX_EINVAL);
	/* A folder is a prefix and an "s"; nothing else of a state tree is one. */
	assert_int_equal(state_dir_prefix("jobs"), 3);
	assert_int_equal(state_dir_prefix("widgets"), 6);
	assert_int_equal(state_dir_prefix("ss"), 1);
	assert_int_equal(state_dir_prefix("s"), 0);
	assert_int_equal(state_dir_prefix("job"), 0);
	assert_int_equal(state_dir_prefix("stack.json"), 0);
	assert_int_equal(state_dir_prefix("Jobs"), 0);
	assert_int_equal(state_dir_prefix(".jobs"), 0);
	assert_int_equal(state_dir_prefix(""), 0);
	{
		/* A record is added with its kind: there is no default one. */
		struct state st;

		assert_int_equal(state_new(&st, "s", &ctx, NULL), 0);
		assert_int_equal(state_add_record(&st, "job.x", NULL, NULL, NULL), VX_EINVAL);
		assert_int_equal(st.nrecords, 0);
		state_release(&st);
	}
	assert_int_equal(state_random_uuid(&ctx, "s", a, NULL), 0);
	assert_int_equal(state_random_uuid(&ctx, "s", b, NULL), 0);
	assert_string_equal(a, b); /* seeded: deterministic */
	assert_int_equal(a[14], '4');
	ctx.seed = 0;
	assert_int_equal(state_random_uuid(&ctx, "s", b, NULL), 0);
	assert_string_not_equal(a, b);
}

/* The salt: made with a new state, in the header after the lineage, optional on read. */
static void test_salt(void **unused)
{
	static const char salt[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
	static const char old[] = HDR "\"records\":[]}";
	struct vx_ctx ctx;
	int64_t now = 1000;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *made;

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_new(&st, "s", &ctx, &err), 0);
	assert_non_null(st.salt);
	assert_true(state_salt_ok(st.salt));
	assert_int_equal(state_ensure_salt(&st, &ctx, &err), 0); /* has one: kept */
	made = strdup(st.salt);
	free(st.salt);
	st.salt = strdup(salt);
	free(st.lineage);
	st.lineage = strdup("0a3b1c2d-0000-4000-8000-000000000000");
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_string_equal(text, "{\n"
				  "\t\"version\":\t1,\n"
				  "\t\"stack\":\t\"s\",\n"
				  "\t\"serial\":\t0,\n"
				  "\t\"lineage\":\t\"0a3b1c2d-0000-4000-8000-000000000000\",\n"
				  "\t\"salt\":\t\"" "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" "\",\n"
				  "\t\"lock\":\tnull,\n"
				  "\t\"journal\":\t[]\n"
				  "}\n");
	assert_int_equal(state_header_from_json(&back, text, strlen(text), &err), 0);
	assert_string_equal(back.salt, salt);
	state_release(&back);
	free(text);
	/* The two halves of a made salt are different draws. */
	assert_memory_not_equal(made, made + 32, 32);
	free(made);

	/* A state written before salts loads without one, and gets one when asked. */
	assert_int_equal(state_from_json(&back, old, strlen(old), &err), 0);
	assert_null(back.salt);
	assert_int_equal(state_to_json(&back, &text, &err), 0);
	assert_null(strstr(text, "salt"));
	free(text);
	assert_int_equal(state_ensure_salt(&back, &ctx, &err), 1);
	assert_true(state_salt_ok(back.salt));
	assert_int_equal(state_to_json(&back, &text, &err), 0);
	assert_non_null(strstr(text, back.salt));
	free(text);
	state_release(&back);

	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"salt\":\"ABCD\",\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: salt: not 64 lowercase hex digits");
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"salt\":null,\"lock\":null,"
		   "\"journal\":[],\"records\":[]}",
		   "invalid state JSON: salt: expected a string");
	assert_false(state_salt_ok("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"));
	assert_false(state_salt_ok(""));
	state_release(&st);
	vx_err_release(&err);
}

/* The notifications delivered: recorded once, kept a week, written only when there are some. */
/* A delivery kept until a time (a budget threshold's period end): not forgotten after a week. */
static void test_notified_until(void **unused)
{
	static const char k1[] = "evt_0123456789abcdef0123456789abcdef:0011aabb";
	static const char k2[] = "evt_ffffffffffffffffffffffffffffffff:0011aabb";
	static const char k3[] = "evt_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee:0011aabb";
	int64_t now = 1795000000000, day = 24 * 3600 * 1000;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct vx_ctx ctx;
	char *text = NULL;

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_new(&st, "s", &ctx, &err), 0);
	assert_int_equal(state_notified_add_until(&st, k1, now, now + 30 * day), 0);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_non_null(strstr(text, "\t\t\t\"at\":\t\"2026-11-18T11:06:40Z\",\n\t\t\t\"until\":\t\"2026-12-18T11:06:40Z\"\n"));
	assert_int_equal(state_header_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.notified[0].until_ms, now + 30 * day);
	state_release(&back);
	free(text);
	/* Eight days on it stays; once its time has passed, the next record forgets it. */
	assert_int_equal(state_notified_add(&st, k2, now + 8 * day), 0);
	assert_true(state_notified_has(&st, k1));
	assert_int_equal(state_notified_add(&st, k3, now + 31 * day), 0);
	assert_false(state_notified_has(&st, k1));
	assert_false(state_notified_has(&st, k2));
	assert_true(state_notified_has(&st, k3));
	state_release(&st);
}

static void test_notified(void **unused)
{
	static const char k1[] = "evt_0123456789abcdef0123456789abcdef:0011aabb";
	static const char k2[] = "evt_ffffffffffffffffffffffffffffffff:0011aabb";
	struct vx_ctx ctx;
	int64_t now = 1795000000000, day = 24 * 3600 * 1000;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL;

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_new(&st, "s", &ctx, &err), 0);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_null(strstr(text, "notified"));
	free(text);
	assert_false(state_notified_has(&st, k1));
	assert_int_equal(state_notified_add(&st, k1, now), 0);
	assert_int_equal(state_notified_add(&st, k1, now + 1000), 0);
	assert_int_equal(st.nnotified, 1);
	assert_true(state_notified_has(&st, k1));
	assert_int_equal(state_notified_add(&st, "evt_x:1", now), VX_EINVAL);
	assert_int_equal(state_notified_add(&st, "EVT_0123456789abcdef0123456789abcdef:0011aabb", now), VX_EINVAL);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_non_null(strstr(text, "\t\"notified\":\t[{\n\t\t\t\"key\":\t\"evt_0123456789abcdef0123456789abcdef:0011aabb\",\n"
				     "\t\t\t\"at\":\t\"2026-11-18T11:06:40Z\"\n\t\t}]"));
	assert_int_equal(state_header_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.nnotified, 1);
	assert_string_equal(back.notified[0].key, k1);
	assert_int_equal(back.notified[0].at_ms, now);
	state_release(&back);
	free(text);
	/* A week later, the first is forgotten when the next is recorded. */
	assert_int_equal(state_notified_add(&st, k2, now + 8 * day), 0);
	assert_int_equal(st.nnotified, 1);
	assert_false(state_notified_has(&st, k1));
	assert_true(state_notified_has(&st, k2));
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,"
		   "\"journal\":[],\"notified\":[{\"key\":\"x\",\"at\":\"2026-11-18T11:06:40Z\"}],\"records\":[]}",
		   "invalid state JSON: notified[0].key: not a notification key");
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,"
		   "\"journal\":[],\"notified\":{},\"records\":[]}",
		   "invalid state JSON: notified: expected an array");
	state_release(&st);
	vx_err_release(&err);
}

/* vx state rm's released jobs: kept sorted and unique, written only when some, read back strictly. */
static void test_released(void **unused)
{
	static const char j1[] = "projects/p/locations/us-central1/customJobs/1";
	static const char j2[] = "projects/p/locations/us-central1/customJobs/0";
	struct vx_ctx ctx;
	int64_t now = 1795000000000;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL;

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_new(&st, "s", &ctx, &err), 0);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_null(strstr(text, "released"));
	free(text);
	assert_int_equal(state_released_add(&st, j1), 0);
	assert_int_equal(state_released_add(&st, j2), 0);
	assert_int_equal(state_released_add(&st, j1), 0);
	assert_int_equal(state_released_add(&st, ""), VX_EINVAL);
	assert_int_equal(st.nreleased, 2);
	assert_string_equal(st.released[0], j2);
	assert_true(state_released_has(&st, j1));
	assert_false(state_released_has(&st, "projects/p/locations/us-central1/customJobs/2"));
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_non_null(strstr(text, "\t\"released\":\t[\"projects/p/locations/us-central1/customJobs/0\", "
				     "\"projects/p/locations/us-central1/customJobs/1\"]"));
	assert_int_equal(state_header_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.nreleased, 2);
	assert_true(state_released_has(&back, j2));
	state_release(&back);
	free(text);
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,"
		   "\"journal\":[],\"released\":[\"b\",\"a\"],\"records\":[]}",
		   "invalid state JSON: released[1]: not sorted or not unique");
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,"
		   "\"journal\":[],\"released\":[\"a\\u001b[2J\"],\"records\":[]}",
		   "invalid state JSON: released[0]: expected a job's resource name");
	state_release(&st);
	vx_err_release(&err);
}

/* The notify targets applied: a set of digests, written only when some, read back strictly. */
static void test_notify_targets(void **unused)
{
	static const char d1[] = "a686c9a6fc81dde210b6fb67beddc3b1";
	static const char d2[] = "0123456789abcdef0123456789abcdef";
	const char *two[] = { d1, d2, d1 }, *bad[] = { "A686C9A6FC81DDE210B6FB67BEDDC3B1" };
	struct vx_ctx ctx;
	int64_t now = 1795000000000;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL;
	int changed = -1;

	(void)unused;
	ctx_fixed(&ctx, &now);
	assert_int_equal(state_new(&st, "s", &ctx, &err), 0);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_null(strstr(text, "notifyTargets"));
	free(text);
	assert_int_equal(state_notify_targets_set(&st, two, 3, &changed), 0);
	assert_int_equal(changed, 1);
	assert_int_equal(st.nnotify_targets, 2);
	assert_string_equal(st.notify_targets[0], d2);
	assert_true(state_notify_target_has(&st, d1));
	assert_false(state_notify_target_has(&st, "ffffffffffffffffffffffffffffffff"));
	assert_int_equal(state_notify_targets_set(&st, two, 2, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(state_notify_targets_set(&st, bad, 1, &changed), VX_EINVAL);
	assert_int_equal(st.nnotify_targets, 2);
	assert_int_equal(state_header_to_json(&st, &text, &err), 0);
	assert_non_null(strstr(text, "\t\"notifyTargets\":\t[\"0123456789abcdef0123456789abcdef\", "
				     "\"a686c9a6fc81dde210b6fb67beddc3b1\"]"));
	assert_int_equal(state_header_from_json(&back, text, strlen(text), &err), 0);
	assert_int_equal(back.nnotify_targets, 2);
	assert_true(state_notify_target_has(&back, d2));
	state_release(&back);
	free(text);
	assert_int_equal(state_notify_targets_set(&st, NULL, 0, &changed), 0);
	assert_int_equal(changed, 1);
	assert_int_equal(st.nnotify_targets, 0);
	expect_bad("{\"version\":1,\"stack\":\"s\",\"serial\":1,\"lineage\":"
		   "\"0a3b1c2d-0000-4000-8000-000000000000\",\"lock\":null,"
		   "\"journal\":[],\"notifyTargets\":[\"x\"],\"records\":[]}",
		   "invalid state JSON: notifyTargets: each is 32 lowercase hex digits (a target's digest)");
	state_release(&st);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_notify_targets),
		cmocka_unit_test(test_record_json_exact),
		cmocka_unit_test(test_run_launched_by_optional),
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_run_rung),
		cmocka_unit_test(test_run_config_dirty),
		cmocka_unit_test(test_run_planned_by_and_pull_request),
		cmocka_unit_test(test_fingerprint_covers_every_field),
		cmocka_unit_test(test_run_rung_identity),
		cmocka_unit_test(test_run_follows),
		cmocka_unit_test(test_record_applied),
		cmocka_unit_test(test_run_machines),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_address_and_ids),
		cmocka_unit_test(test_salt),
		cmocka_unit_test(test_notified),
		cmocka_unit_test(test_notified_until),
		cmocka_unit_test(test_released),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
