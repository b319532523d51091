/* Unit tests for providers/gcp/gerror: every error-body shape and the messages built from them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/gerror.h"
#include "providers/gcp/http.h"
#include "providers/gcp/permissions.h"
#include "util/buf.h"

static int parse(struct gcp_error *e, long status, const char *body)
{
	return gcp_error_parse(e, status, body, body ? strlen(body) : 0);
}

static void test_envelope_with_details(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;
	const char *body =
		"{\"error\":{\"code\":429,\"message\":\"Quota exceeded for quota metric 'Custom model "
		"training' \",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":["
		"{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"RATE_LIMIT_EXCEEDED\","
		"\"domain\":\"googleapis.com\",\"metadata\":{\"service\":\"aiplatform.googleapis.com\"}},"
		"{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":[{\"subject\":"
		"\"project:123\",\"quotaMetric\":\"aiplatform.googleapis.com/custom_model_training_requests\"}]},"
		"{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"2.5s\"}]}}";

	(void)state;
	assert_int_equal(parse(&e, 429, body), 0);
	assert_int_equal(e.http_status, 429);
	assert_string_equal(e.status, "RESOURCE_EXHAUSTED");
	assert_string_equal(e.message, "Quota exceeded for quota metric 'Custom model training' ");
	assert_string_equal(e.reason, "RATE_LIMIT_EXCEEDED");
	assert_string_equal(e.quota_metric, "aiplatform.googleapis.com/custom_model_training_requests");
	assert_null(e.field);
	assert_int_equal(e.retry_delay_ms, 2500);
	gcp_error_release(&e);
	assert_null(e.status);
}

static void test_bad_request(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;
	struct gcp_response r;
	struct vx_err err = VX_ERR_INIT;
	const char *body =
		"{\"error\":{\"code\":400,\"message\":\"Invalid JSON payload received. Unknown name "
		"\\\"machinetype\\\"\",\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":"
		"\"type.googleapis.com/google.rpc.BadRequest\",\"fieldViolations\":[{\"field\":"
		"\"job_spec.worker_pool_specs[0].machine_spec\",\"description\":\"x\"}]}]}}";

	(void)state;
	assert_int_equal(parse(&e, 400, body), 0);
	assert_string_equal(e.status, "INVALID_ARGUMENT");
	assert_string_equal(e.field, "job_spec.worker_pool_specs[0].machine_spec");
	assert_int_equal(e.retry_delay_ms, -1);
	gcp_error_release(&e);

	memset(&r, 0, sizeof(r));
	r.status = 400;
	r.body = (char *)(uintptr_t)body;
	r.body_len = strlen(body);
	assert_int_equal(gcp_error_set(&err, &r, "vertex: creating job \"a\""), VX_EAPI);
	assert_string_equal(err.msg, "vertex: creating job \"a\": INVALID_ARGUMENT: Invalid JSON payload "
			    "received. Unknown name \"machinetype\" (field "
			    "job_spec.worker_pool_specs[0].machine_spec)");
	vx_err_release(&err);
}

static void test_compute_errors(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;
	const char *body =
		"{\"error\":{\"code\":403,\"message\":\"Rate Limit Exceeded\",\"errors\":[{\"message\":"
		"\"Rate Limit Exceeded\",\"domain\":\"usageLimits\",\"reason\":\"rateLimitExceeded\"}]}}";
	const char *quota =
		"{\"error\":{\"code\":403,\"message\":\"Quota 'NVIDIA_H100_GPUS' exceeded.\",\"errors\":[{"
		"\"message\":\"Quota 'NVIDIA_H100_GPUS' exceeded.\",\"domain\":\"usageLimits\",\"reason\":"
		"\"quotaExceeded\",\"errorDetails\":[{\"quotaInfo\":{\"metricName\":"
		"\"compute.googleapis.com/nvidia_h100_gpus\",\"limitName\":\"GPUS-PER-GPU-FAMILY\"}}]}]}}";

	(void)state;
	assert_int_equal(parse(&e, 403, body), 0);
	assert_string_equal(e.status, "PERMISSION_DENIED");
	assert_string_equal(e.reason, "rateLimitExceeded");
	assert_string_equal(e.message, "Rate Limit Exceeded");
	gcp_error_release(&e);
	assert_int_equal(parse(&e, 403, quota), 0);
	assert_string_equal(e.reason, "quotaExceeded");
	assert_string_equal(e.quota_metric, "compute.googleapis.com/nvidia_h100_gpus");
	gcp_error_release(&e);
}

static void test_oauth(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;
	struct gcp_response r;
	struct vx_err err = VX_ERR_INIT;
	const char *body = "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}";

	(void)state;
	assert_int_equal(parse(&e, 400, body), 0);
	assert_string_equal(e.reason, "invalid_grant");
	assert_string_equal(e.message, "Invalid JWT Signature.");
	assert_string_equal(e.status, "INVALID_ARGUMENT");
	gcp_error_release(&e);
	assert_int_equal(parse(&e, 401, "{\"error\":\"invalid_client\"}"), 0);
	assert_string_equal(e.message, "invalid_client");
	assert_string_equal(e.status, "UNAUTHENTICATED");
	gcp_error_release(&e);

	memset(&r, 0, sizeof(r));
	r.status = 400;
	r.body = (char *)(uintptr_t)body;
	r.body_len = strlen(body);
	assert_int_equal(gcp_error_set(&err, &r, "auth: token"), VX_EAPI);
	assert_string_equal(err.msg, "auth: token: INVALID_ARGUMENT: Invalid JWT Signature. (run 'gcloud "
			    "auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS)");
	vx_err_release(&err);
}

static void test_not_json(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;
	const char *html =
		"<!DOCTYPE html>\n<html lang=en><meta charset=utf-8><title>Error 502 (Server Error)!!1"
		"</title><style>*{margin:0;padding:0}</style><p><b>502.</b> <ins>That's an error.</ins>"
		"\n<p>The server encountered a temporary error.</html>";
	char big[600];

	(void)state;
	assert_int_equal(parse(&e, 502, html), 0);
	assert_string_equal(e.status, "INTERNAL");
	assert_string_equal(e.message, "Error 502 (Server Error)!!1 502. That's an error. The server "
			    "encountered a temporary error.");
	assert_null(e.reason);
	gcp_error_release(&e);

	assert_int_equal(parse(&e, 503, "upstream connect error\r\n"), 0);
	assert_string_equal(e.status, "UNAVAILABLE");
	assert_string_equal(e.message, "upstream connect error");
	gcp_error_release(&e);

	assert_int_equal(parse(&e, 500, NULL), 0);
	assert_string_equal(e.status, "INTERNAL");
	assert_null(e.message);
	gcp_error_release(&e);

	/* Truncated JSON, JSON of another shape, and a long body. */
	assert_int_equal(parse(&e, 404, "{\"error\": {\"code\": 4"), 0);
	assert_string_equal(e.status, "NOT_FOUND");
	gcp_error_release(&e);
	assert_int_equal(parse(&e, 409, "[1,2]"), 0);
	assert_string_equal(e.status, "ABORTED");
	assert_null(e.message);
	gcp_error_release(&e);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(parse(&e, 500, big), 0);
	assert_int_equal(strlen(e.message), 203);
	assert_string_equal(e.message + 200, "...");
	gcp_error_release(&e);
}

static void test_array_wrapped_and_code(void **state)
{
	struct gcp_error e = GCP_ERROR_INIT;

	(void)state;
	assert_int_equal(parse(&e, 0, "[{\"error\":{\"code\":404,\"message\":\"gone\"}}]"), 0);
	assert_int_equal(e.http_status, 404);
	assert_string_equal(e.status, "NOT_FOUND");
	assert_string_equal(e.message, "gone");
	gcp_error_release(&e);
}

static void test_status_for_http(void **state)
{
	(void)state;
	assert_string_equal(gcp_status_for_http(400), "INVALID_ARGUMENT");
	assert_string_equal(gcp_status_for_http(401), "UNAUTHENTICATED");
	assert_string_equal(gcp_status_for_http(403), "PERMISSION_DENIED");
	assert_string_equal(gcp_status_for_http(404), "NOT_FOUND");
	assert_string_equal(gcp_status_for_http(409), "ABORTED");
	assert_string_equal(gcp_status_for_http(412), "FAILED_PRECONDITION");
	assert_string_equal(gcp_status_for_http(416), "OUT_OF_RANGE");
	assert_string_equal(gcp_status_for_http(429), "RESOURCE_EXHAUSTED");
	assert_string_equal(gcp_status_for_http(499), "CANCELLED");
	assert_string_equal(gcp_status_for_http(500), "INTERNAL");
	assert_string_equal(gcp_status_for_http(501), "UNIMPLEMENTED");
	assert_string_equal(gcp_status_for_http(502), "INTERNAL");
	assert_string_equal(gcp_status_for_http(503), "UNAVAILABLE");
	assert_string_equal(gcp_status_for_http(504), "DEADLINE_EXCEEDED");
	assert_string_equal(gcp_status_for_http(200), "OK");
}

static int set(struct vx_err *err, long status, const char *body, const char *what)
{
	struct gcp_response r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.body = (char *)(uintptr_t)body;
	r.body_len = body ? strlen(body) : 0;
	return gcp_error_set(err, &r, what);
}

static int call(struct vx_err *err, long status, const char *body, const char *what, const char *api,
		const char *rpc)
{
	struct gcp_response r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.body = (char *)(uintptr_t)body;
	r.body_len = body ? strlen(body) : 0;
	return gcp_error_set_call(err, &r, what, api, rpc);
}

/* Every row of the table: a bare 403 for its call names its permission and role. */
static void test_every_row_hints(void **state)
{
	size_t n, i;
	const struct gcp_permission *t = gcp_permissions(&n);
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	assert_true(n > 20);
	for (i = 0; i < n; i++) {
		char *msg = vx_asprintf("{\"error\":{\"code\":403,\"message\":\"denied %s\"}}",
					t[i].permission ? t[i].permission : "");
		char *want = t[i].permission ? vx_asprintf("(the caller lacks %s for %s: grant %s on ",
							   t[i].permission, t[i].method, t[i].role) : NULL;

		assert_non_null(msg);
		assert_int_equal(call(&err, 403, msg, "x", t[i].api, t[i].rpc), VX_EDENIED);
		if (want)
			assert_non_null(strstr(err.msg, want));
		else
			assert_null(strstr(err.msg, "lacks"));
		assert_ptr_equal(gcp_permission_for(t[i].api, t[i].rpc, msg), &t[i]);
		free(want);
		free(msg);
	}
	vx_err_release(&err);
}

static void test_hints(void **state)
{
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	assert_int_equal(set(&err, 403,
			     "{\"error\":{\"code\":403,\"message\":\"Vertex AI API has not been used in project "
			     "123 before or it is disabled. Enable it by visiting https://console.developers."
			     "google.com/apis/api/aiplatform.googleapis.com/overview?project=123 then retry.\","
			     "\"status\":\"PERMISSION_DENIED\",\"details\":[{\"@type\":\"type.googleapis.com/"
			     "google.rpc.ErrorInfo\",\"reason\":\"SERVICE_DISABLED\",\"domain\":\"googleapis.com\","
			     "\"metadata\":{\"service\":\"aiplatform.googleapis.com\",\"consumer\":"
			     "\"projects/123\"}}]}}", "vertex: listing jobs"), VX_EDENIED);
	assert_non_null(strstr(err.msg, "vertex: listing jobs: PERMISSION_DENIED: Vertex AI API has not"));
	assert_non_null(strstr(err.msg, " (enable the API: gcloud services enable "
			       "aiplatform.googleapis.com --project 123)"));
	/* Without ErrorInfo, the service and project come from the message. */
	assert_int_equal(set(&err, 403,
			     "{\"error\":{\"code\":403,\"message\":\"Cloud Quotas API has not been used in "
			     "project my-proj before or it is disabled. Enable it by visiting https://console."
			     "developers.google.com/apis/api/cloudquotas.googleapis.com/overview?project=my-proj"
			     "\"}}", "quotas: list"), VX_EDENIED);
	assert_non_null(strstr(err.msg, "(enable the API: gcloud services enable cloudquotas.googleapis.com "
			       "--project my-proj)"));

	/* A call that says which method it was gets the exact permission and role. */
	assert_int_equal(call(&err, 403,
			      "{\"error\":{\"code\":403,\"message\":\"Permission 'aiplatform.customJobs.create' "
			      "denied on resource '//aiplatform.googleapis.com/projects/p/locations/us-central1' "
			      "(or it may not exist).\",\"status\":\"PERMISSION_DENIED\"}}",
			      "vertex: creating job \"gemma2-lora\" in us-central1", "aiplatform", "CreateCustomJob"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "vertex: creating job \"gemma2-lora\" in us-central1: PERMISSION_DENIED: "
			    "Permission 'aiplatform.customJobs.create' denied on resource "
			    "'//aiplatform.googleapis.com/projects/p/locations/us-central1' (or it may not "
			    "exist). (the caller lacks aiplatform.customJobs.create for "
			    "projects.locations.customJobs.create: grant roles/aiplatform.user on the project)");
	assert_int_equal(call(&err, 403,
			      "{\"error\":{\"code\":403,\"message\":\"Required 'compute.reservations.create' "
			      "permission for 'projects/p/zones/z/reservations/r'\",\"errors\":[{\"reason\":"
			      "\"forbidden\",\"domain\":\"global\"}]}}", "compute: creating reservation r", "compute",
			      "InsertReservation"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "compute: creating reservation r: PERMISSION_DENIED: Required "
			    "'compute.reservations.create' permission for 'projects/p/zones/z/reservations/r' (the "
			    "caller lacks compute.reservations.create for reservations.insert: grant the custom role "
			    "vxApply (docs/vx-role-apply.yaml) on the project)");
	assert_int_equal(call(&err, 403, "{\"error\":{\"code\":403,\"message\":\"The caller does not have "
			      "permission\",\"status\":\"PERMISSION_DENIED\"}}", "quotas: updating preference",
			      "cloudquotas", "UpdateQuotaPreference"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "quotas: updating preference: PERMISSION_DENIED: The caller does not have "
			    "permission (the caller lacks cloudquotas.quotas.update for "
			    "projects.locations.quotaPreferences.patch: grant roles/cloudquotas.admin on the project)");
	/* Listing jobs is a read: the viewer role, not aiplatform.user as the old guess said;
	 * reading quota infos likewise cloudquotas.viewer, not the admin role. */
	assert_int_equal(call(&err, 403, "{\"error\":{\"code\":403,\"message\":\"denied\",\"status\":"
			      "\"PERMISSION_DENIED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc."
			      "ErrorInfo\",\"reason\":\"IAM_PERMISSION_DENIED\",\"domain\":\"iam.googleapis.com\","
			      "\"metadata\":{\"consumer\":\"projects/42\"}}]}}",
			      "vertex: listing jobs in us-central1", "aiplatform", "ListCustomJobs"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "vertex: listing jobs in us-central1: PERMISSION_DENIED: denied (the caller "
			    "lacks aiplatform.customJobs.list for projects.locations.customJobs.list: grant "
			    "roles/aiplatform.viewer on project 42)");
	assert_int_equal(call(&err, 403, "{\"error\":{\"code\":403,\"message\":\"denied\"}}",
			      "quotas: listing quota infos of aiplatform.googleapis.com", "cloudquotas", "ListQuotaInfos"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "quotas: listing quota infos of aiplatform.googleapis.com: PERMISSION_DENIED: "
			    "denied (the caller lacks cloudquotas.quotas.get for "
			    "projects.locations.services.quotaInfos.list: grant roles/cloudquotas.viewer on the project)");
	/* Overwriting an object needs delete too: the message decides which row. */
	assert_int_equal(call(&err, 403, "{\"error\":{\"code\":403,\"message\":\"sa@p.iam.gserviceaccount.com "
			      "does not have storage.objects.delete access to the Google Cloud Storage object.\"}}",
			      "storage: writing gs://b/o", "storage", "InsertObject"),
			 VX_EDENIED);
	assert_non_null(strstr(err.msg, "(the caller lacks storage.objects.delete for objects.insert: grant "
			       "roles/storage.objectUser on the state bucket)"));
	/* Vertex refuses a service account it may not act as with INVALID_ARGUMENT. */
	assert_int_equal(call(&err, 400, "{\"error\":{\"code\":400,\"message\":\"You do not have permission "
			      "to act as service_account: 123-compute@developer.gserviceaccount.com. (or it may not "
			      "exist).\",\"status\":\"INVALID_ARGUMENT\"}}", "vertex: creating job \"a\" in r",
			      "aiplatform", "CreateCustomJob"),
			 VX_EAPI);
	assert_non_null(strstr(err.msg, "(or it may not exist). (the caller lacks iam.serviceAccounts.actAs for "
			       "projects.locations.customJobs.create: grant roles/iam.serviceAccountUser on the job's "
			       "service account)"));
	/* A call of unknown method gets no guessed role (the old guess over-granted). */
	assert_int_equal(set(&err, 403, "{\"error\":{\"code\":403,\"message\":\"The caller does not have "
			     "permission\",\"status\":\"PERMISSION_DENIED\"}}", "quotas: updating preference"),
			 VX_EDENIED);
	assert_string_equal(err.msg, "quotas: updating preference: PERMISSION_DENIED: The caller does not have "
			    "permission");

	assert_int_equal(set(&err, 429,
			     "{\"error\":{\"code\":429,\"message\":\"Quota exceeded.\",\"status\":"
			     "\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/"
			     "google.rpc.QuotaFailure\",\"violations\":[{\"quotaMetric\":\"aiplatform."
			     "googleapis.com/custom_model_training_nvidia_h100_gpus\"}]}]}}", "vertex: create"),
			 VX_ERETRY);
	assert_string_equal(err.msg, "vertex: create: RESOURCE_EXHAUSTED: Quota exceeded. (quota exhausted: "
			    "aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus; wait, lower the "
			    "demand or request more with a quota preference)");

	assert_int_equal(set(&err, 401,
			     "{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication "
			     "credentials.\",\"status\":\"UNAUTHENTICATED\"}}", "vertex: get"), VX_EAUTH);
	assert_string_equal(err.msg, "vertex: get: UNAUTHENTICATED: Request had invalid authentication "
			    "credentials. (run 'gcloud auth application-default login' or set "
			    "GOOGLE_APPLICATION_CREDENTIALS)");
	vx_err_release(&err);
}

static void test_codes(void **state)
{
	struct vx_err err = VX_ERR_INIT;
	struct gcp_response r;

	(void)state;
	assert_int_equal(set(&err, 404, NULL, "x"), VX_ENOTFOUND);
	assert_string_equal(err.msg, "x: NOT_FOUND (HTTP 404)");
	assert_int_equal(set(&err, 409, "{\"error\":{\"code\":409,\"message\":\"exists\",\"status\":"
			     "\"ALREADY_EXISTS\"}}", "x"), VX_ECONFLICT);
	assert_string_equal(err.msg, "x: ALREADY_EXISTS: exists");
	assert_int_equal(set(&err, 412, NULL, "x"), VX_ECONFLICT);
	assert_int_equal(set(&err, 400, "{\"error\":{\"code\":400,\"status\":\"ABORTED\"}}", "x"),
			 VX_ECONFLICT);
	assert_int_equal(set(&err, 403, "{\"error\":{\"code\":403,\"errors\":[{\"reason\":"
			     "\"userRateLimitExceeded\"}]}}", "x"), VX_ERETRY);
	/* A refusal (a permission, a disabled API) is not a credentials problem. */
	assert_int_equal(set(&err, 403, NULL, "x"), VX_EDENIED);
	assert_int_equal(set(&err, 401, NULL, "x"), VX_EAUTH);
	assert_int_equal(set(&err, 503, "no", "x"), VX_ERETRY);
	assert_string_equal(err.msg, "x: UNAVAILABLE: no");
	assert_int_equal(set(&err, 408, NULL, "x"), VX_ERETRY);
	assert_int_equal(set(&err, 501, NULL, "x"), VX_EAPI);
	assert_int_equal(set(&err, 400, NULL, "x"), VX_EAPI);
	memset(&r, 0, sizeof(r));
	r.status = 503;
	r.uncertain = 1;
	assert_int_equal(gcp_error_set(&err, &r, "vertex: creating job"), VX_EUNCERTAIN);
	assert_string_equal(err.msg, "vertex: creating job: the outcome is unknown (UNAVAILABLE)");
	assert_int_equal(gcp_error_set(&err, NULL, "y"), VX_EIO);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_envelope_with_details),
		cmocka_unit_test(test_bad_request),
		cmocka_unit_test(test_compute_errors),
		cmocka_unit_test(test_oauth),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_array_wrapped_and_code),
		cmocka_unit_test(test_status_for_http),
		cmocka_unit_test(test_hints),
		cmocka_unit_test(test_every_row_hints),
		cmocka_unit_test(test_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
