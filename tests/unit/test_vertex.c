/* Unit tests for providers/gcp/vertex: exact requests against the scripted
 * server, pagination, the uncertain create, delete's operation polling, and
 * the response parsers on real and hostile JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/vertex.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"
#include "util/text.h"

/* ---- fixture: support/clienttest.h, with the client under test ---- */

CLIENTTEST_FIXTURE(struct vertex_client, "/v1/")

static const char job_body[] =
	"{\"name\":\"projects/123/locations/us-central1/customJobs/456\","
	"\"displayName\":\"gemma2-lora\",\"state\":\"JOB_STATE_QUEUED\","
	"\"labels\":{\"vx-stack\":\"research\",\"vx-job\":\"gemma2-lora\"},"
	"\"createTime\":\"2024-05-01T12:00:00.250Z\",\"updateTime\":\"2024-05-01T12:00:01Z\","
	"\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"a3-highgpu-8g\"},"
	"\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"us-docker.pkg.dev/x/y:z\"}}]}}";

static const char spec[] =
	"{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"a3-highgpu-8g\"},"
	"\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"us-docker.pkg.dev/x/y:z\"}}]}";

/* Test labels: vx_label's strings are not const, nothing here writes them. */
#define L(k, v) { (char *)(uintptr_t)(k), (char *)(uintptr_t)(v) }
static const struct vx_label lbls[] = { L("vx-stack", "research"), L("vx-job", "gemma2-lora") };

/* ---- create ---- */

static void test_create_exact_request(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;

	/* {region} in the base URL is replaced by the call's region. */
	snprintf(f->t.base, sizeof(f->t.base), "%s/r-{region}/v1", httpd_url(f->t.s));
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, job_body, 0);
	assert_int_equal(vertex_create_job(&f->c, "my-proj", "us-central1", "gemma2-lora", lbls, 2,
					   spec, &job, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 1);
	r = clienttest_req(&f->t, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/r-us-central1/v1/projects/my-proj/locations/us-central1/customJobs");
	assert_string_equal(r->body,
			    "{\"displayName\":\"gemma2-lora\",\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":"
			    "{\"machineType\":\"a3-highgpu-8g\"},\"replicaCount\":\"1\",\"containerSpec\":"
			    "{\"imageUri\":\"us-docker.pkg.dev/x/y:z\"}}]},\"labels\":{\"vx-stack\":\"research\","
			    "\"vx-job\":\"gemma2-lora\"}}");
	assert_string_equal(httpd_header(r, "Authorization"), "Bearer test-token");
	assert_non_null(strstr(httpd_header(r, "Content-Type"), "application/json"));
	assert_string_equal(job.name, "projects/123/locations/us-central1/customJobs/456");
	assert_int_equal(job.state, VERTEX_JOB_STATE_QUEUED);
	assert_string_equal(vertex_job_label(&job, "vx-job"), "gemma2-lora");
	assert_int_equal(job.create_time_ms, 1714564800250LL);
	assert_int_equal(job.update_time_ms, 1714564801000LL);
	vertex_job_release(&job);
	vx_err_release(&err);
}

static void test_create_uncertain_on_lost_reply(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_drop(f->t.s);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, job_body, 0);
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", lbls, 2, spec,
					   &job, &err), VX_EUNCERTAIN);
	/* Sent once, never again. */
	assert_int_equal(httpd_request_count(f->t.s), 1);
	assert_non_null(err.msg);
	assert_non_null(strstr(err.msg, "vertex: creating job \"gemma2-lora\" in us-central1"));
	assert_null(job.name);
	vx_err_release(&err);
}

static void test_create_uncertain_on_503(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":503,\"message\":\"busy\",\"status\":\"UNAVAILABLE\"}}", 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, job_body, 0);
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", NULL, 0, spec,
					   &job, &err), VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 1);
	/* No labels: no "labels" member. */
	assert_null(strstr(clienttest_req(&f->t, 0)->body, "labels"));
	vx_err_release(&err);
}

static void test_create_permission_denied(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char prefix[] = "vertex: creating job \"gemma2-lora\" in us-central1: PERMISSION_DENIED: ";

	httpd_respond(f->t.s, 403, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":403,\"message\":\"Permission 'aiplatform.customJobs.create' denied\","
		      "\"status\":\"PERMISSION_DENIED\"}}", 0);
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", lbls, 2, spec,
					   &job, &err), VX_EDENIED);
	assert_int_equal(err.code, VX_EDENIED);
	assert_memory_equal(err.msg, prefix, sizeof(prefix) - 1);
	assert_non_null(strstr(err.msg, "Permission 'aiplatform.customJobs.create' denied"));
	assert_int_equal(httpd_request_count(f->t.s), 1);
	vx_err_release(&err);
}

/* A 200 that does not name a job of this project and region is no success: the job may exist. */
static void test_create_reply_without_valid_name(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char *const bad[] = {
		"{\"name\":\"projects/p/locations/us-central1/customJobs/../../x?y=#z\"}",
		"{\"name\":\"projects/p/locations/europe-west4/customJobs/1\"}",
		"{\"name\":\"projects/other/locations/us-central1/customJobs/1\"}",
		"{\"name\":\"projects/p/locations/us-central1/customJobs/1\\u0000evil\"}",
		"{\"name\":\"projects/p/locations/us-central1/customJobs/12a\"}",
		"{\"name\":\"projects/p/locations/us-central1/trainingPipelines/1\"}",
	};
	static const char *const shown[] = {
		"projects/p/locations/us-central1/customJobs/../../x?y=#z",
		"projects/p/locations/europe-west4/customJobs/1",
		"projects/other/locations/us-central1/customJobs/1",
		"projects/p/locations/us-central1/customJobs/1\xef\xbf\xbd" "evil",
		"projects/p/locations/us-central1/customJobs/12a",
		"projects/p/locations/us-central1/trainingPipelines/1",
	};
	char want[256];
	size_t i;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{}", 0);
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", lbls, 2, spec,
					   &job, &err), VX_EUNCERTAIN);
	assert_string_equal(err.msg, "vertex: creating job \"gemma2-lora\" in us-central1: the answer has no "
			    "job name; the outcome is unknown");
	assert_null(job.name);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, bad[i], 0);
		assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", lbls, 2,
						   spec, &job, &err), VX_EUNCERTAIN);
		snprintf(want, sizeof(want), "vertex: creating job \"gemma2-lora\" in us-central1: the answer "
			 "names no job of this project and region: \"%s\"; the outcome is unknown", shown[i]);
		assert_string_equal(err.msg, want);
		assert_null(job.name);
	}
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "created", 0);
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "gemma2-lora", lbls, 2, spec,
					   &job, &err), VX_EUNCERTAIN);
	assert_string_equal(err.msg, "vertex: creating job \"gemma2-lora\" in us-central1: reading job: "
			    "response is not a JSON object; the outcome is unknown");
	/* Each was sent once. */
	assert_int_equal(httpd_request_count(f->t.s), 8);
	vx_err_release(&err);
}

static void test_create_rejects_bad_input(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "j", NULL, 0, "[1]", &job, &err),
			 VX_EINVAL);
	assert_string_equal(err.msg, "vertex: creating job \"j\" in us-central1: the job spec is not a JSON object");
	assert_int_equal(vertex_create_job(&f->c, "p", "us-central1", "j", NULL, 0, "{", &job, &err),
			 VX_EINVAL);
	assert_int_equal(vertex_create_job(&f->c, "p/../x", "us-central1", "j", NULL, 0, spec, &job, &err),
			 VX_EINVAL);
	assert_int_equal(vertex_create_job(&f->c, "p", "us central1", "j", NULL, 0, spec, &job, &err),
			 VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 0);
	vx_err_release(&err);
}

/* ---- list ---- */

static void test_list_all_pages(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *filter = NULL;
	static const char mask[] = "readMask=name%2CdisplayName%2Cstate%2Clabels%2CcreateTime%2CstartTime"
				   "%2CendTime%2CupdateTime%2Cerror";
	char want[512];

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"projects/p/locations/us-central1/customJobs/1\",\"state\":\"JOB_STATE_RUNNING\"},"
		      "{\"name\":\"projects/p/locations/us-central1/customJobs/2\",\"state\":\"JOB_STATE_FAILED\","
		      "\"error\":{\"code\":8,\"message\":\"stockout\"}}],\"nextPageToken\":\"t1\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"projects/p/locations/us-central1/customJobs/3\",\"state\":4}],"
		      "\"nextPageToken\":\"t/2+=\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"projects/p/locations/us-central1/customJobs/4\"},"
		      "{\"name\":\"projects/p/locations/us-central1/customJobs/5\"}],\"nextPageToken\":\"\"}", 0);
	assert_int_equal(vertex_filter_labels(&filter, lbls, 2, &err), 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "us-central1", filter, 2, 0, &list, &err), 0);
	assert_int_equal(list.n, 5);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	snprintf(want, sizeof(want),
		 "/v1/projects/p/locations/us-central1/customJobs?filter=labels.vx-stack%%3Dresearch%%20AND%%20"
		 "labels.vx-job%%3Dgemma2-lora&pageSize=2&%s", mask);
	assert_string_equal(clienttest_req(&f->t, 0)->target, want);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "GET");
	snprintf(want, sizeof(want),
		 "/v1/projects/p/locations/us-central1/customJobs?filter=labels.vx-stack%%3Dresearch%%20AND%%20"
		 "labels.vx-job%%3Dgemma2-lora&pageSize=2&pageToken=t1&%s", mask);
	assert_string_equal(clienttest_req(&f->t, 1)->target, want);
	snprintf(want, sizeof(want),
		 "/v1/projects/p/locations/us-central1/customJobs?filter=labels.vx-stack%%3Dresearch%%20AND%%20"
		 "labels.vx-job%%3Dgemma2-lora&pageSize=2&pageToken=t%%2F2%%2B%%3D&%s", mask);
	assert_string_equal(clienttest_req(&f->t, 2)->target, want);
	assert_int_equal(list.items[0].state, VERTEX_JOB_STATE_RUNNING);
	assert_int_equal(list.items[1].error_code, 8);
	assert_string_equal(list.items[1].error_message, "stockout");
	assert_int_equal(list.items[2].state, VERTEX_JOB_STATE_SUCCEEDED);
	assert_string_equal(list.items[2].state_name, "JOB_STATE_SUCCEEDED");
	assert_string_equal(list.items[4].name, "projects/p/locations/us-central1/customJobs/5");
	assert_null(list.items[0].job_spec_json);
	vertex_job_list_release(&list);
	free(filter);
	vx_err_release(&err);
}

static void test_list_with_spec_and_no_filter(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[{\"name\":\"projects/p/locations/r/customJobs/1\","
		      "\"jobSpec\":{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"}]}}]}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, VERTEX_LIST_WITH_SPEC, &list, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->target,
			    "/v1/projects/p/locations/r/customJobs?readMask=name%2CdisplayName%2Cstate%2Clabels"
			    "%2CcreateTime%2CstartTime%2CendTime%2CupdateTime%2Cerror%2CjobSpec");
	assert_int_equal(list.n, 1);
	assert_string_equal(list.items[0].job_spec_json, "{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"}]}");
	vertex_job_list_release(&list);
	vx_err_release(&err);
}

static void test_list_stuck_token_and_errors(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond_n(f->t.s, 2, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[{\"name\":\"a\"}],\"nextPageToken\":\"same\"}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, 0, &list, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: listing jobs in r: page 3 repeats the page token of page 2; stopped "
			    "(the server's pages loop)");
	assert_int_equal(list.n, 0);
	assert_null(list.items);

	/* A page that is not a list: the jobs read so far are released. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[{\"name\":\"a\"}],\"nextPageToken\":\"x\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":{\"name\":\"b\"}}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, 0, &list, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: listing jobs in r: reading job list: customJobs is not an array");
	assert_int_equal(list.n, 0);

	httpd_respond(f->t.s, 400, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":400,\"message\":\"bad filter\",\"status\":\"INVALID_ARGUMENT\"}}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", "labels.x=", 0, 0, &list, &err), VX_EAPI);
	assert_non_null(strstr(err.msg, "vertex: listing jobs in r: INVALID_ARGUMENT: bad filter"));
	vx_err_release(&err);
}

/*
 * The next page is asked for before this one is parsed, with the token a
 * scan finds. Wherever the scan is sure, it says what the parse says; it
 * gives up (0) on escapes and on bodies that are not what it expects.
 */
static void test_scan_page_token(void **unused)
{
	static const struct {
		const char *body;
		int rc;
		const char *token;
	} cases[] = {
		{ "{\"customJobs\":[{\"a\":\"}\\\"]\"}],\"nextPageToken\":\"t1\"}", 1, "t1" },
		{ " { \"customJobs\" : [ 1 , true , null , -2.5e3 ] , \"nextPageToken\" : \"t/2+=\" } ", 1, "t/2+=" },
		{ "{\"nextPageToken\":\"first\",\"nextPageToken\":\"second\"}", 1, "first" },
		{ "{\"customJobs\":[],\"x\":{\"nextPageToken\":\"inner\"}}", 1, NULL },
		{ "{\"customJobs\":[{\"name\":\"a\"}]}", 1, NULL },
		{ "{\"nextPageToken\":\"\"}", 1, NULL },
		{ "{\"nextPageToken\":5}", 1, NULL },
		{ "{}", 1, NULL },
		{ "{\"next\\u0050ageToken\":\"t\"}", 0, NULL },
		{ "{\"nextPageToken\":\"a\\/b\"}", 0, NULL },
		{ "[{\"nextPageToken\":\"t\"}]", 0, NULL },
		{ "", 0, NULL },
		{ "{\"a\":", 0, NULL },
		{ "{\"a\" 1}", 0, NULL },
		{ "{\"nextPageToken\":\"unterminated", 0, NULL },
	};

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *b = cases[i].body;
		char *tok = (char *)(uintptr_t)"unset", *parsed = NULL;
		int rc = gjson_scan_page_token(b, strlen(b), &tok);

		if (rc != cases[i].rc)
			fail_msg("case %zu: scan returned %d, want %d", i, rc, cases[i].rc);
		if (cases[i].token ? !tok || strcmp(tok, cases[i].token) : tok != NULL)
			fail_msg("case %zu: token %s, want %s", i, tok ? tok : "(none)",
				 cases[i].token ? cases[i].token : "(none)");
		if (rc == 1) {
			/* Sure: the parse agrees. */
			cJSON *root = gjson_parse(b, strlen(b));

			assert_non_null(root);
			assert_int_equal(gjson_next_page_token(&parsed, root), 0);
			if (!vx_text_same(parsed, tok))
				fail_msg("case %zu: parse says %s", i, parsed ? parsed : "(none)");
			cJSON_Delete(root);
		}
		free(parsed);
		free(tok);
	}
}

/* A page that does not parse stops the list, whose jobs are released, even
 * though the next page was asked for with the token scanned ahead. */
static void test_list_bad_page_midway(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[{\"name\":\"a\"}],\"nextPageToken\":\"x\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"b\"},],\"nextPageToken\":\"y\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[{\"name\":\"c\"}]}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, 0, &list, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: listing jobs in r: reading job list: response is not a JSON object");
	assert_int_equal(list.n, 0);
	assert_null(list.items);
	vx_err_release(&err);
}

/* A listed job with a name vx must not act on is left out, with a warning. */
static void test_list_drops_invalid_names(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char warn[] = "warn: vertex: listing jobs in us-central1: ignored a job listed with an "
				   "invalid name \"%s\" (not projects/p/locations/us-central1/customJobs/ID); it is "
				   "neither adopted nor cancelled\n";
	static const char *const names[] = {
		"projects/p/locations/us-central1/customJobs/1\xef\xbf\xbd" "evil",
		"projects/p/locations/us-central1/customJobs/../../x?y=#z",
		"projects/p/locations/europe-west4/customJobs/2",
		"",
		"projects/p/locations/us-central1/customJobs/4?[2J",
	};
	char want[2048] = "", line[512];
	size_t i;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"projects/p/locations/us-central1/customJobs/1\"},"
		      "{\"name\":\"projects/p/locations/us-central1/customJobs/1\\u0000evil\"},"
		      "{\"name\":\"projects/p/locations/us-central1/customJobs/../../x?y=#z\"},"
		      "{\"name\":\"projects/p/locations/europe-west4/customJobs/2\"},"
		      "{\"name\":\"projects/123/locations/us-central1/customJobs/3\"},"
		      "{\"displayName\":\"no name\"},"
		      "{\"name\":\"projects/p/locations/us-central1/customJobs/4\\u001b[2J\"}]}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "us-central1", NULL, 0, 0, &list, &err), 0);
	assert_int_equal(list.n, 2);
	assert_string_equal(list.items[0].name, "projects/p/locations/us-central1/customJobs/1");
	assert_string_equal(list.items[1].name, "projects/123/locations/us-central1/customJobs/3");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(line, sizeof(line), warn, names[i]);
		assert_true(strlen(want) + strlen(line) < sizeof(want));
		memcpy(want + strlen(want), line, strlen(line) + 1);
	}
	assert_string_equal(f->t.log, want);
	vertex_job_list_release(&list);

	/* A raw NUL byte is not JSON at all. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"customJobs\":[]}", 0);
	assert_int_equal(vertex_list_parse_json("{\"customJobs\":[{\"name\":\"a\0b\"}]}", 27, &list,
						&(char *){ NULL }, &err), VX_EINVAL);
	vx_err_release(&err);
}

/* A server that never stops sending page tokens, or cycles through a few, is stopped. */
static void test_list_page_bounds(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	char body[128];
	int i;

	for (i = 0; i < 1001; i++) {
		snprintf(body, sizeof(body), "{\"customJobs\":[],\"nextPageToken\":\"t%d\"}", i);
		httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, body, 0);
	}
	assert_int_equal(vertex_list_jobs(&f->c, "p", "us-central1", NULL, 0, 0, &list, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: listing jobs in us-central1: more than 1000 pages; stopped (the "
			    "server kept sending nextPageToken)");
	assert_int_equal(httpd_request_count(f->t.s), 1000);
	httpd_stop(f->t.s);
	assert_int_equal(httpd_start(&f->t.s), 0);
	snprintf(f->t.base, sizeof(f->t.base), "%s/v1/", httpd_url(f->t.s));
	f->c.base_url = f->t.base;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"a\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"b\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"a\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "us-central1", NULL, 0, 0, &list, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: listing jobs in us-central1: page 4 repeats the page token of "
			    "page 2; stopped (the server's pages loop)");
	assert_int_equal(httpd_request_count(f->t.s), 3);
	vx_err_release(&err);
}

/* Whatever the server says reaches a terminal only without control characters. */
static void test_server_text_cleaned(void **state)
{
	struct fx *f = *state;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 400, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":400,\"message\":\"bad\\u001b[2J\\u001b]0;pwned\\u0007 filter\\nline2"
		      "\\u009b31m\\u007f\",\"status\":\"INVALID_ARGUMENT\\u001b[0m\"}}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, 0, &list, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: listing jobs in r: INVALID_ARGUMENT?[0m: bad?[2J?]0;pwned? filter "
			    "line2?31m?");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"customJobs\":[{\"name\":\"projects/p/locations/r/customJobs/1\","
		      "\"displayName\":\"a\\u001b[2Jb\\u00e9\",\"state\":\"JOB_STATE_\\u001b[31mX\","
		      "\"error\":{\"code\":3,\"message\":\"\\u001b]52;c;ZXZpbA==\\u0007oops\"}}]}", 0);
	assert_int_equal(vertex_list_jobs(&f->c, "p", "r", NULL, 0, 0, &list, &err), 0);
	assert_int_equal(list.n, 1);
	assert_string_equal(list.items[0].display_name, "a?[2Jb\xc3\xa9");
	assert_string_equal(list.items[0].state_name, "JOB_STATE_?[31mX");
	assert_string_equal(list.items[0].error_message, "?]52;c;ZXZpbA==?oops");
	vertex_job_list_release(&list);
	vx_err_release(&err);
}

/* ---- get, cancel ---- */

static void test_get_and_not_found(void **state)
{
	struct fx *f = *state;
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, job_body, 0);
	assert_int_equal(vertex_get_job(&f->c, "projects/123/locations/us-central1/customJobs/456", &job, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/v1/projects/123/locations/us-central1/customJobs/456");
	assert_string_equal(job.display_name, "gemma2-lora");
	assert_non_null(job.job_spec_json);
	vertex_job_release(&job);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"not there\",\"status\":\"NOT_FOUND\"}}", 0);
	assert_int_equal(vertex_get_job(&f->c, "projects/123/locations/us-central1/customJobs/9", &job, &err),
			 VX_ENOTFOUND);
	assert_non_null(strstr(err.msg, "vertex: reading job projects/123/locations/us-central1/customJobs/9: NOT_FOUND"));

	assert_int_equal(vertex_get_job(&f->c, "projects/1/locations/../customJobs/9", &job, &err), VX_EINVAL);
	assert_int_equal(vertex_get_job(&f->c, "projects/1/zones/r/customJobs/9", &job, &err), VX_EINVAL);
	assert_int_equal(vertex_get_job(&f->c, "projects/1/locations/r/customJobs/9?x=1", &job, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	vx_err_release(&err);
}

static void test_cancel_exact_request(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{}", 0);
	assert_int_equal(vertex_cancel_job(&f->c, "projects/p/locations/europe-west4/customJobs/77", &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "POST");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/v1/projects/p/locations/europe-west4/customJobs/77:cancel");
	assert_string_equal(clienttest_req(&f->t, 0)->body, "{}");
	vx_err_release(&err);
}

/* ---- delete: the operation polled with backoff ---- */

static void test_delete_polls_operation(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	static const char op_pending[] =
		"{\"name\":\"projects/123/locations/us-central1/operations/4567\","
		"\"metadata\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata\"}}";
	/* The example of vertex-ai-custom-jobs.md. */
	static const char op_done[] =
		"{\"name\":\"projects/123/locations/us-central1/operations/4567\","
		"\"metadata\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata\","
		"\"genericMetadata\":{\"createTime\":\"2024-05-01T12:00:00Z\",\"updateTime\":\"2024-05-01T12:00:01Z\"}},"
		"\"done\":true,\"response\":{\"@type\":\"type.googleapis.com/google.protobuf.Empty\"}}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_pending, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_pending, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/123/locations/us-central1/operations/4567\",\"done\":false}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	f->t.nsleeps = 0;
	assert_int_equal(vertex_delete_job(&f->c, "projects/123/locations/us-central1/customJobs/456", 0, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 4);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "DELETE");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/v1/projects/123/locations/us-central1/customJobs/456");
	assert_string_equal(clienttest_req(&f->t, 1)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 1)->target, "/v1/projects/123/locations/us-central1/operations/4567");
	assert_string_equal(clienttest_req(&f->t, 3)->target, "/v1/projects/123/locations/us-central1/operations/4567");
	/* 1 s, x1.3 (the http layer may sleep too: look for the sequence). */
	{
		int i, found = 0;

		for (i = 0; i + 2 < f->t.nsleeps; i++)
			if (f->t.sleeps[i] == 1000 && f->t.sleeps[i + 1] == 1300 && f->t.sleeps[i + 2] == 1690)
				found = 1;
		assert_true(found);
	}
	vx_err_release(&err);
}

static void test_delete_operation_error_and_deadline(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/1/locations/r/operations/9\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/1/locations/r/operations/9\",\"done\":true,"
		      "\"error\":{\"code\":9,\"message\":\"job is running\"}}", 0);
	assert_int_equal(vertex_delete_job(&f->c, "projects/1/locations/r/customJobs/2", 0, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: deleting job projects/1/locations/r/customJobs/2: operation failed "
				     "with code 9: job is running");

	/* Never done: bounded by the deadline (virtual time). */
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/1/locations/r/operations/9\",\"done\":false}", 0);
	assert_int_equal(vertex_delete_job(&f->c, "projects/1/locations/r/customJobs/2", 300000, &err), VX_ERETRY);
	assert_string_equal(err.msg, "vertex: deleting job projects/1/locations/r/customJobs/2: operation "
				     "projects/1/locations/r/operations/9 not done in time");

	/* An operation without a usable name. */
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"../../x\"}", 0);
	assert_int_equal(vertex_delete_job(&f->c, "projects/1/locations/r/customJobs/2", 0, &err), VX_EAPI);
	vx_err_release(&err);
}

/* ---- parsers ---- */

static void test_parse_job_fields(void **state)
{
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char body[] =
		"{\"name\":\"projects/p/locations/r/customJobs/1\",\"state\":\"JOB_STATE_CANCELLED\","
		"\"startTime\":\"2024-02-29T23:59:59.999999999Z\",\"endTime\":\"2024-03-01T01:00:00+01:00\","
		"\"error\":{\"code\":1,\"message\":\"CANCELED\"},\"labels\":{\"a\":\"1\",\"b\":2,\"c\":\"3\"},"
		"\"webAccessUris\":{},\"satisfiesPzs\":false}";

	(void)state;
	assert_int_equal(vertex_job_parse_json(body, sizeof(body) - 1, &job, &err), 0);
	assert_int_equal(job.state, VERTEX_JOB_STATE_CANCELLED);
	assert_true(vertex_job_state_is_terminal(job.state));
	assert_false(vertex_job_state_is_active(job.state));
	assert_int_equal(job.start_time_ms, 1709251199999LL);
	assert_int_equal(job.end_time_ms, 1709251200000LL);
	assert_int_equal(job.error_code, 1);
	assert_string_equal(job.error_message, "CANCELED");
	assert_int_equal(job.n_labels, 2); /* "b" is not a string */
	assert_string_equal(job.labels[1].key, "c");
	assert_null(vertex_job_label(&job, "b"));
	assert_null(job.display_name);
	assert_int_equal(job.create_time_ms, 0);
	vertex_job_release(&job);
	vx_err_release(&err);
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "\"x\"", "{", "{\"name\":", "{\"name\":1,\"displayName\":[],\"state\":{}}",
		"{\"labels\":[1,2],\"error\":\"x\",\"jobSpec\":[1]}",
		"{\"state\":1e308,\"createTime\":12,\"error\":{\"code\":1e300,\"message\":7}}",
		"{\"state\":-1,\"error\":{\"code\":\"99999999999999999999\"}}",
		"{\"state\":\"JOB_STATE_NEW_THING\",\"labels\":{\"\":\"\"}}",
		"{\"createTime\":\"2024-13-01T00:00:00Z\",\"startTime\":\"2023-02-29T00:00:00Z\","
		"\"endTime\":\"9999-12-31T23:59:60.5-23:59\",\"updateTime\":\"2024-01-01T00:00:00\"}",
		"{\"name\":\"\\u0000x\",\"displayName\":\"\\ud800\"}",
	};
	struct vertex_job job = VERTEX_JOB_INIT;
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct vertex_operation op = VERTEX_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *tok = NULL, *deep;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		rc = vertex_job_parse_json(bodies[i], strlen(bodies[i]), &job, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		vertex_job_release(&job);
		rc = vertex_list_parse_json(bodies[i], strlen(bodies[i]), &list, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		rc = vertex_operation_parse_json(bodies[i], strlen(bodies[i]), &op, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		vertex_operation_release(&op);
	}
	vertex_job_list_release(&list);
	assert_int_equal(vertex_job_parse_json("[]", 2, &job, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: reading job: response is not a JSON object");
	assert_int_equal(vertex_job_parse_json(NULL, 0, &job, &err), VX_EINVAL);

	/* Wrong types are absent, unknown states UNKNOWN, huge numbers ignored. */
	assert_int_equal(vertex_job_parse_json(bodies[8], strlen(bodies[8]), &job, &err), 0);
	assert_int_equal(job.state, VERTEX_JOB_STATE_UNKNOWN);
	assert_int_equal(job.error_code, 0);
	assert_null(job.error_message);
	assert_int_equal(job.create_time_ms, 0);
	vertex_job_release(&job);
	assert_int_equal(vertex_job_parse_json(bodies[10], strlen(bodies[10]), &job, &err), 0);
	assert_int_equal(job.state, VERTEX_JOB_STATE_UNKNOWN);
	assert_string_equal(job.state_name, "JOB_STATE_NEW_THING");
	vertex_job_release(&job);
	assert_int_equal(vertex_job_parse_json(bodies[11], strlen(bodies[11]), &job, &err), 0);
	assert_int_equal(job.create_time_ms, 0);
	assert_int_equal(job.start_time_ms, 0);
	assert_int_equal(job.update_time_ms, 0);
	vertex_job_release(&job);

	/* A length shorter than the text: only that much is read. */
	assert_int_equal(vertex_job_parse_json("{}garbage", 2, &job, &err), 0);
	vertex_job_release(&job);

	/* Deep nesting is refused by the parser's limit, not by a crash. */
	deep = malloc(200001);
	assert_non_null(deep);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = '\0';
	assert_int_equal(vertex_job_parse_json(deep, 200000, &job, &err), VX_EINVAL);
	memcpy(deep, "{\"jobSpec\":", 11);
	assert_int_equal(vertex_job_parse_json(deep, 200000, &job, &err), VX_EINVAL);
	free(deep);
	vx_err_release(&err);
}

static void test_parse_operation(void **state)
{
	struct vertex_operation op = VERTEX_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char e[] = "{\"name\":\"projects/1/locations/r/operations/2\",\"error\":{\"code\":5,\"message\":\"gone\"}}";

	(void)state;
	assert_int_equal(vertex_operation_parse_json(e, sizeof(e) - 1, &op, &err), 0);
	assert_int_equal(op.done, 1); /* an error means finished */
	assert_int_equal(op.error_code, 5);
	assert_string_equal(op.error_message, "gone");
	vertex_operation_release(&op);
	vx_err_release(&err);
}

static void test_time_parse(void **state)
{
	int64_t t = 0;

	(void)state;
	assert_int_equal(vertex_time_parse("1970-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(vertex_time_parse("2017-01-15T01:30:15.01Z", &t), 0);
	assert_int_equal(t, 1484443815010LL);
	assert_int_equal(vertex_time_parse("2017-01-15T01:30:15.123456789Z", &t), 0);
	assert_int_equal(t, 1484443815123LL);
	assert_int_equal(vertex_time_parse("2017-01-15t03:30:15+02:00", &t), 0);
	assert_int_equal(t, 1484443815000LL);
	assert_int_equal(vertex_time_parse("1969-12-31T23:59:59Z", &t), 0);
	assert_int_equal(t, -1000);
	assert_int_equal(vertex_time_parse("2000-02-29T00:00:00Z", &t), 0);
	assert_int_equal(t, 951782400000LL);
	assert_int_equal(vertex_time_parse("1900-02-29T00:00:00Z", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("2017-01-15T01:30:15.Z", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("2017-01-15T01:30:15", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("2017-01-15T01:30:15Zx", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("2017-1-15T01:30:15Z", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("2017-01-15T24:00:00Z", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse("", &t), VX_EINVAL);
	assert_int_equal(vertex_time_parse(NULL, &t), VX_EINVAL);
}

static void test_filter_labels(void **state)
{
	static const struct vx_label l[] = { L("vx-stack", "research"), L("team", "Big Team"),
					     L("note", "a\"b\\c") };
	static const struct vx_label bad[] = { L("Vx", "research") };
	struct vx_err err = VX_ERR_INIT;
	char *out = NULL;

	(void)state;
	assert_int_equal(vertex_filter_labels(&out, l, 1, &err), 0);
	assert_string_equal(out, "labels.vx-stack=research");
	free(out);
	assert_int_equal(vertex_filter_labels(&out, l, 3, &err), 0);
	assert_string_equal(out, "labels.vx-stack=research AND labels.team=\"Big Team\" AND labels.note=\"a\\\"b\\\\c\"");
	free(out);
	assert_int_equal(vertex_filter_labels(&out, bad, 1, &err), VX_EINVAL);
	assert_null(out);
	assert_string_equal(err.msg, "vertex: label filter: label key \"Vx\" has a character other than [a-z0-9_-]");
	assert_int_equal(vertex_filter_labels(&out, l, 0, &err), 0);
	assert_string_equal(out, "");
	free(out);
	vx_err_release(&err);
}

static void test_states(void **state)
{
	(void)state;
	assert_int_equal(vertex_job_state_parse("JOB_STATE_RUNNING"), VERTEX_JOB_STATE_RUNNING);
	assert_int_equal(vertex_job_state_parse("11"), VERTEX_JOB_STATE_PARTIALLY_SUCCEEDED);
	assert_int_equal(vertex_job_state_parse("12"), VERTEX_JOB_STATE_UNKNOWN);
	assert_int_equal(vertex_job_state_parse("3x"), VERTEX_JOB_STATE_UNKNOWN);
	assert_int_equal(vertex_job_state_parse(NULL), VERTEX_JOB_STATE_UNKNOWN);
	assert_string_equal(vertex_job_state_name(VERTEX_JOB_STATE_CANCELLING), "JOB_STATE_CANCELLING");
	assert_string_equal(vertex_job_state_name((enum vertex_job_state)99), "JOB_STATE_UNKNOWN");
	assert_true(vertex_job_state_is_active(VERTEX_JOB_STATE_QUEUED));
	assert_true(vertex_job_state_is_active(VERTEX_JOB_STATE_CANCELLING));
	assert_false(vertex_job_state_is_active(VERTEX_JOB_STATE_SUCCEEDED));
	assert_true(vertex_job_state_is_terminal(VERTEX_JOB_STATE_EXPIRED));
	assert_false(vertex_job_state_is_terminal(VERTEX_JOB_STATE_UNSPECIFIED));
	assert_false(vertex_job_state_is_active(VERTEX_JOB_STATE_UNKNOWN));
	assert_false(vertex_job_state_is_terminal(VERTEX_JOB_STATE_UNKNOWN));
}

static void test_name_region(void **state)
{
	char *r = NULL;

	(void)state;
	assert_int_equal(vertex_job_name_region("projects/p/locations/us-east1/customJobs/1", &r), 0);
	assert_string_equal(r, "us-east1");
	free(r);
	assert_int_equal(vertex_job_name_region("projects/p/locations/us-east1", &r), 0);
	free(r);
	assert_int_equal(vertex_job_name_region("projects/p/locations//customJobs/1", &r), VX_EINVAL);
	assert_int_equal(vertex_job_name_region("projects/p", &r), VX_EINVAL);
	assert_int_equal(vertex_job_name_region("/projects/p/locations/r", &r), VX_EINVAL);
	assert_null(r);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_exact_request),
		T(test_create_uncertain_on_lost_reply),
		T(test_create_uncertain_on_503),
		T(test_create_permission_denied),
		T(test_create_rejects_bad_input),
		T(test_create_reply_without_valid_name),
		T(test_list_drops_invalid_names),
		T(test_list_page_bounds),
		T(test_server_text_cleaned),
		T(test_list_all_pages),
		T(test_list_with_spec_and_no_filter),
		T(test_list_stuck_token_and_errors),
		T(test_list_bad_page_midway),
		cmocka_unit_test(test_scan_page_token),
		T(test_get_and_not_found),
		T(test_cancel_exact_request),
		T(test_delete_polls_operation),
		T(test_delete_operation_error_and_deadline),
		cmocka_unit_test(test_parse_job_fields),
		cmocka_unit_test(test_parse_hostile),
		cmocka_unit_test(test_parse_operation),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_filter_labels),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_name_region),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
