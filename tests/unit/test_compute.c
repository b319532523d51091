/* Unit tests for providers/gcp/compute: exact requests (requestId, bodies,
 * query strings), pagination of list and aggregatedList, zoneOperations.wait
 * in a loop, operation errors, and the parsers on real and hostile JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/http.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

/* ---- fixture: support/clienttest.h, with the client under test ---- */

CLIENTTEST_FIXTURE(struct compute_client, "/compute/v1/")

static const char op_running[] =
	"{\"kind\":\"compute#operation\",\"id\":\"123\",\"name\":\"operation-1700000000000-abc\","
	"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
	"\"operationType\":\"insert\",\"status\":\"RUNNING\",\"progress\":0,"
	"\"targetLink\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1\","
	"\"clientOperationId\":\"6f1c2b1e-1111-4222-8333-444455556666\"}";

static const char op_done[] =
	"{\"kind\":\"compute#operation\",\"name\":\"operation-1700000000000-abc\","
	"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
	"\"status\":\"DONE\",\"progress\":100}";

static const char rid[] = "6f1c2b1e-1111-4222-8333-444455556666";

/* Checks s is a lowercase UUID v4. */
static void assert_uuid_v4(const char *s)
{
	int i;

	assert_int_equal(strlen(s), 36);
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(s[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", s[i]));
	}
	assert_int_equal(s[14], '4');
	assert_non_null(strchr("89ab", s[19]));
}

static void test_insert_exact_request(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct compute_reservation r = COMPUTE_RESERVATION_INIT;
	struct compute_accelerator acc = { NULL, 8 };
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *q;
	char *body = NULL;
	static const char prefix[] = "/compute/v1/projects/my-proj/zones/us-central1-a/reservations?requestId=";

	acc.type = strdup("nvidia-h100-80gb");
	r.name = strdup("r1");
	r.count = 2;
	r.machine_type = strdup("a3-highgpu-8g");
	r.accelerators = &acc;
	r.n_accelerators = 1;
	r.specific_reservation_required = 1;
	r.service_share_type = strdup("ALLOW_ALL");
	assert_int_equal(compute_reservation_to_json(&r, &body), 0);
	assert_string_equal(body, "{\"name\":\"r1\",\"specificReservation\":{\"count\":\"2\",\"instanceProperties\":"
				  "{\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":[{\"acceleratorType\":"
				  "\"nvidia-h100-80gb\",\"acceleratorCount\":8}]}},\"specificReservationRequired\":true,"
				  "\"reservationSharingPolicy\":{\"serviceShareType\":\"ALLOW_ALL\"}}");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(compute_reservation_insert(&f->c, "my-proj", "us-central1-a", body, NULL, &op, &err), 0);
	q = httpd_request(f->t.s, 0);
	assert_non_null(q);
	assert_string_equal(q->method, "POST");
	assert_memory_equal(q->target, prefix, sizeof(prefix) - 1);
	assert_uuid_v4(q->target + sizeof(prefix) - 1);
	assert_string_equal(q->body, body);
	assert_string_equal(httpd_header(q, "Authorization"), "Bearer test-token");
	assert_string_equal(op.name, "operation-1700000000000-abc");
	assert_string_equal(op.zone, "us-central1-a");
	assert_string_equal(op.status, "RUNNING");
	assert_string_equal(op.client_operation_id, rid);
	assert_false(compute_operation_done(&op));
	compute_operation_release(&op);

	/* The caller's id is used as given. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(compute_reservation_insert(&f->c, "my-proj", "us-central1-a", body, rid, &op, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations?requestId="
			    "6f1c2b1e-1111-4222-8333-444455556666");
	compute_operation_release(&op);

	/* Not JSON: refused before sending. */
	assert_int_equal(compute_reservation_insert(&f->c, "my-proj", "us-central1-a", "nope", NULL, &op, &err),
			 VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	free(body);
	r.accelerators = NULL;
	r.n_accelerators = 0;
	free(acc.type);
	compute_reservation_release(&r);
	vx_err_release(&err);
}

static void test_mutation_retried_with_same_request_id(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":503,\"message\":\"busy\"}}", 0);
	httpd_drop(f->t.s);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(compute_reservation_resize(&f->c, "my-proj", "us-central1-a", "r1", 3, NULL, &op, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	assert_string_equal(httpd_request(f->t.s, 0)->target, httpd_request(f->t.s, 1)->target);
	assert_string_equal(httpd_request(f->t.s, 0)->target, httpd_request(f->t.s, 2)->target);
	assert_string_equal(httpd_request(f->t.s, 2)->body, "{\"specificSkuCount\":\"3\"}");
	assert_non_null(strstr(httpd_request(f->t.s, 2)->target,
			       "/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1/resize?requestId="));
	compute_operation_release(&op);
	vx_err_release(&err);
}

static void test_update_delete_exact(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char share[] = "{\"shareSettings\":{\"shareType\":\"SPECIFIC_PROJECTS\",\"projectMap\":"
				    "{\"other\":{\"projectId\":\"other\"}}}}";

	httpd_respond_n(f->t.s, 2, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(compute_reservation_update(&f->c, "my-proj", "us-central1-a", "r1",
						    "shareSettings.projectMap", share, rid, &op, &err), 0);
	compute_operation_release(&op);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "PATCH");
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1?requestId="
			    "6f1c2b1e-1111-4222-8333-444455556666&updateMask=shareSettings.projectMap");
	assert_string_equal(httpd_request(f->t.s, 0)->body, share);
	assert_int_equal(compute_reservation_delete(&f->c, "my-proj", "us-central1-a", "r1", rid, &op, &err), 0);
	compute_operation_release(&op);
	assert_string_equal(httpd_request(f->t.s, 1)->method, "DELETE");
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1?requestId="
			    "6f1c2b1e-1111-4222-8333-444455556666");
	assert_int_equal(httpd_request(f->t.s, 1)->body_len, 0);

	assert_int_equal(compute_reservation_delete(&f->c, "my-proj", "us-central1-a", "r1/../x", NULL, &op, &err),
			 VX_EINVAL);
	assert_int_equal(compute_reservation_delete(&f->c, "my-proj", "us-central1-a", "r1", "not-a-uuid", &op,
						    &err), VX_EINVAL);
	assert_int_equal(compute_reservation_resize(&f->c, "my-proj", "us-central1-a", "r1", -1, NULL, &op, &err),
			 VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 2);

	httpd_respond(f->t.s, 403, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":403,\"message\":\"Required 'compute.reservations.delete' "
		      "permission\",\"errors\":[{\"message\":\"m\",\"domain\":\"global\",\"reason\":\"forbidden\"}]}}", 0);
	assert_int_equal(compute_reservation_delete(&f->c, "my-proj", "us-central1-a", "r1", rid, &op, &err), VX_EDENIED);
	assert_non_null(strstr(err.msg, "compute: deleting reservation \"r1\" in us-central1-a: PERMISSION_DENIED: "));
	vx_err_release(&err);
}

static void test_operation_wait_loops(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(compute_operation_parse_json(op_running, sizeof(op_running) - 1, &op, &err), 0);
	/* wait returns undone twice (it gives up after ~2 min), then DONE. */
	httpd_respond_n(f->t.s, 2, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(compute_operation_wait(&f->c, "my-proj", &op, 0, NULL, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "POST");
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/operations/operation-1700000000000-abc/wait");
	assert_string_equal(httpd_request(f->t.s, 2)->target, httpd_request(f->t.s, 0)->target);
	assert_true(compute_operation_done(&op));
	/* Quick undone answers are paced, not spun on. */
	assert_true(f->t.nsleeps >= 2);
	compute_operation_release(&op);

	/* Already DONE: no call. */
	assert_int_equal(compute_operation_parse_json(op_done, sizeof(op_done) - 1, &op, &err), 0);
	assert_int_equal(compute_operation_wait(&f->c, "my-proj", &op, 0, NULL, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	compute_operation_release(&op);
	vx_err_release(&err);
}

static void test_operation_errors(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char failed[] =
		"{\"name\":\"operation-1\",\"zone\":\"zones/us-central1-a\",\"status\":\"DONE\","
		"\"httpErrorStatusCode\":400,\"httpErrorMessage\":\"BAD REQUEST\",\"error\":{\"errors\":["
		"{\"code\":\"ZONE_RESOURCE_POOL_EXHAUSTED\",\"message\":\"The zone does not have enough resources\","
		"\"errorDetails\":[{\"help\":{}},{\"errorInfo\":{\"reason\":\"STOCKOUT\",\"domain\":\"compute.googleapis.com\"}}]}]}}";
	static const char gone[] = "{\"name\":\"operation-2\",\"status\":\"DONE\",\"httpErrorStatusCode\":404,"
				   "\"httpErrorMessage\":\"NOT FOUND\"}";

	assert_int_equal(compute_operation_parse_json(op_running, sizeof(op_running) - 1, &op, &err), 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, failed, 0);
	assert_int_equal(compute_operation_wait(&f->c, "my-proj", &op, 0,
						"compute: resizing reservation \"r1\" in us-central1-a", &err), VX_EAPI);
	assert_string_equal(err.msg, "compute: resizing reservation \"r1\" in us-central1-a: "
				     "ZONE_RESOURCE_POOL_EXHAUSTED: The zone does not have enough resources");
	assert_int_equal(op.n_errors, 1);
	assert_string_equal(op.errors[0].reason, "STOCKOUT");
	/* A later answer without zone keeps the first one's. */
	assert_string_equal(op.zone, "us-central1-a");
	compute_operation_release(&op);

	assert_int_equal(compute_operation_parse_json(gone, sizeof(gone) - 1, &op, &err), 0);
	assert_int_equal(compute_operation_wait(&f->c, "my-proj", &op, 0, "x", &err), VX_ENOTFOUND);
	assert_string_equal(err.msg, "x: HTTP 404 NOT FOUND");
	compute_operation_release(&op);

	/* Never done: bounded by the deadline. */
	assert_int_equal(compute_operation_parse_json(op_running, sizeof(op_running) - 1, &op, &err), 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(compute_operation_wait(&f->c, "my-proj", &op, 60000, "w", &err), VX_ERETRY);
	assert_string_equal(err.msg, "w: operation operation-1700000000000-abc not done in time");
	compute_operation_release(&op);
	vx_err_release(&err);
}

static void test_get_parses_reservation(void **state)
{
	struct fx *f = *state;
	struct compute_reservation r = COMPUTE_RESERVATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char body[] =
		"{\"kind\":\"compute#reservation\",\"id\":\"998877\",\"name\":\"r1\","
		"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
		"\"status\":\"READY\",\"description\":\"pool\",\"selfLink\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1\","
		"\"resourcePolicies\":{},\"reservationSharingPolicy\":{\"serviceShareType\":\"ALLOW_ALL\"},"
		"\"shareSettings\":{\"projectMap\":{},\"shareType\":\"LOCAL\"},"
		"\"specificReservation\":{\"count\":\"2\",\"inUseCount\":\"1\",\"assuredCount\":\"2\",\"instanceProperties\":{"
		"\"guestAccelerators\":[{\"acceleratorCount\":8,\"acceleratorType\":\"nvidia-h100-80gb\"}],"
		"\"localSsds\":[{\"diskSizeGb\":\"375\",\"interface\":\"NVME\"}],"
		"\"machineType\":\"a3-highgpu-8g\",\"minCpuPlatform\":\"Intel Sapphire Rapids\"}},"
		"\"specificReservationRequired\":true}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, body, 0);
	assert_int_equal(compute_reservation_get(&f->c, "my-proj", "us-central1-a", "r1", &r, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "GET");
	assert_string_equal(httpd_request(f->t.s, 0)->target, "/compute/v1/projects/my-proj/zones/us-central1-a/reservations/r1");
	assert_string_equal(r.name, "r1");
	assert_string_equal(r.zone, "us-central1-a");
	assert_string_equal(r.status, "READY");
	assert_string_equal(r.description, "pool");
	assert_int_equal(r.count, 2);
	assert_int_equal(r.in_use_count, 1);
	assert_string_equal(r.machine_type, "a3-highgpu-8g");
	assert_int_equal(r.n_accelerators, 1);
	assert_string_equal(r.accelerators[0].type, "nvidia-h100-80gb");
	assert_int_equal(r.accelerators[0].count, 8);
	assert_true(r.specific_reservation_required);
	assert_string_equal(r.service_share_type, "ALLOW_ALL");
	assert_non_null(strstr(r.self_link, "/reservations/r1"));
	compute_reservation_release(&r);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"The resource 'r9' was not found\","
		      "\"errors\":[{\"message\":\"x\",\"domain\":\"global\",\"reason\":\"notFound\"}]}}", 0);
	assert_int_equal(compute_reservation_get(&f->c, "my-proj", "us-central1-a", "r9", &r, &err), VX_ENOTFOUND);
	assert_non_null(strstr(err.msg, "compute: reading reservation \"r9\" in us-central1-a: NOT_FOUND"));
	vx_err_release(&err);
}

static void test_list_pages(void **state)
{
	struct fx *f = *state;
	struct compute_reservation_list l = COMPUTE_RESERVATION_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"kind\":\"compute#reservationsList\",\"items\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		      "\"nextPageToken\":\"p2\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[{\"name\":\"c\"}],\"nextPageToken\":\"p 3\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"kind\":\"compute#reservationsList\"}", 0);
	assert_int_equal(compute_reservation_list(&f->c, "my-proj", "us-central1-a", "name = r1", &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[2].name, "c");
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations?filter=name%20%3D%20r1");
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations?filter=name%20%3D%20r1&pageToken=p2");
	assert_string_equal(httpd_request(f->t.s, 2)->target,
			    "/compute/v1/projects/my-proj/zones/us-central1-a/reservations?filter=name%20%3D%20r1&pageToken=p%203");
	compute_reservation_list_release(&l);
	vx_err_release(&err);
}

static void test_aggregated_list_pages(void **state)
{
	struct fx *f = *state;
	struct compute_reservation_list l = COMPUTE_RESERVATION_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"kind\":\"compute#reservationAggregatedList\",\"items\":{"
		      "\"zones/us-central1-a\":{\"reservations\":[{\"name\":\"a\",\"zone\":\"https://x/zones/us-central1-a\"},{\"name\":\"b\"}]},"
		      "\"zones/us-east1-b\":{\"warning\":{\"code\":\"NO_RESULTS_ON_PAGE\",\"message\":\"none\","
		      "\"data\":[{\"key\":\"scope\",\"value\":\"zones/us-east1-b\"}]}}},\"nextPageToken\":\"n\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"items\":{\"zones/europe-west4-a\":{\"reservations\":[{\"name\":\"c\"}]},\"global\":{\"reservations\":7}},"
		      "\"unreachables\":[]}", 0);
	assert_int_equal(compute_reservation_aggregated_list(&f->c, "my-proj", NULL, &l, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	assert_string_equal(httpd_request(f->t.s, 0)->target, "/compute/v1/projects/my-proj/aggregated/reservations");
	assert_string_equal(httpd_request(f->t.s, 1)->target, "/compute/v1/projects/my-proj/aggregated/reservations?pageToken=n");
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[0].zone, "us-central1-a");
	assert_string_equal(l.items[1].zone, "us-central1-a"); /* from the key */
	assert_string_equal(l.items[2].name, "c");
	assert_string_equal(l.items[2].zone, "europe-west4-a");
	compute_reservation_list_release(&l);

	/* items of the wrong shape */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[]}", 0);
	assert_int_equal(compute_reservation_aggregated_list(&f->c, "my-proj", NULL, &l, &err), VX_EINVAL);
	assert_int_equal(l.n, 0);
	vx_err_release(&err);
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "{", "{\"items\":{\"zones/a\":[1]}}", "{\"items\":[1,\"x\",{\"name\":3}]}",
		"{\"name\":{},\"zone\":7,\"status\":[],\"specificReservation\":{\"count\":\"-5\",\"inUseCount\":1e400,"
		"\"instanceProperties\":{\"guestAccelerators\":{\"a\":1}}}}",
		"{\"specificReservation\":{\"count\":\"99999999999999999999\",\"instanceProperties\":{\"guestAccelerators\":"
		"[null,{\"acceleratorType\":5,\"acceleratorCount\":\"8\"},{\"acceleratorCount\":-1}]}}}",
		"{\"error\":{\"errors\":[1,{\"code\":[],\"errorDetails\":[1,{\"errorInfo\":7},{\"errorInfo\":{\"reason\":2}}]}]},"
		"\"httpErrorStatusCode\":\"x\",\"status\":\"DONE\"}",
		"{\"zone\":\"/\",\"nextPageToken\":5,\"items\":{\"\":{\"reservations\":[{}]}}}",
	};
	struct compute_reservation r = COMPUTE_RESERVATION_INIT;
	struct compute_reservation_list l = COMPUTE_RESERVATION_LIST_INIT;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *tok = NULL;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		const char *b = bodies[i];

		rc = compute_reservation_parse_json(b, strlen(b), &r, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		compute_reservation_release(&r);
		rc = compute_reservation_list_parse_json(b, strlen(b), &l, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		rc = compute_reservation_aggregated_parse_json(b, strlen(b), &l, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		rc = compute_operation_parse_json(b, strlen(b), &op, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		compute_operation_release(&op);
	}
	compute_reservation_list_release(&l);
	assert_int_equal(compute_reservation_parse_json(bodies[6], strlen(bodies[6]), &r, &err), 0);
	assert_null(r.name);
	assert_null(r.zone);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.in_use_count, 0);
	assert_int_equal(r.n_accelerators, 0);
	compute_reservation_release(&r);
	assert_int_equal(compute_reservation_parse_json(bodies[7], strlen(bodies[7]), &r, &err), 0);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.n_accelerators, 2);
	assert_null(r.accelerators[0].type);
	assert_int_equal(r.accelerators[0].count, 8);
	assert_int_equal(r.accelerators[1].count, 0);
	compute_reservation_release(&r);
	assert_int_equal(compute_operation_parse_json(bodies[8], strlen(bodies[8]), &op, &err), 0);
	assert_true(compute_operation_done(&op));
	assert_int_equal(op.n_errors, 1);
	assert_null(op.errors[0].code);
	assert_null(op.errors[0].reason);
	assert_int_equal(op.http_error_status_code, 0);
	compute_operation_release(&op);
	vx_err_release(&err);
}

static void test_request_id(void **state)
{
	char a[37], b[37];

	(void)state;
	assert_int_equal(compute_request_id(a), 0);
	assert_int_equal(compute_request_id(b), 0);
	assert_uuid_v4(a);
	assert_uuid_v4(b);
	assert_string_not_equal(a, b);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_insert_exact_request),
		T(test_mutation_retried_with_same_request_id),
		T(test_update_delete_exact),
		T(test_operation_wait_loops),
		T(test_operation_errors),
		T(test_get_parses_reservation),
		T(test_list_pages),
		T(test_aggregated_list_pages),
		cmocka_unit_test(test_parse_hostile),
		cmocka_unit_test(test_request_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
