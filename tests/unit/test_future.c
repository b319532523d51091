/* Unit tests for providers/gcp/future: exact requests (requestId, updateMask,
 * bodies, query strings) of every method, the zone operation followed to
 * DONE, an operation that fails, a lost reply (VX_EUNCERTAIN, the retry with
 * the same requestId), pagination of list and aggregatedList, and the
 * parsers on real and hostile JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/future.h"
#include "providers/gcp/http.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

CLIENTTEST_FIXTURE(struct compute_client, "/compute/v1/")

#define ZONE_URL "https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a"
#define FR_PATH "/compute/v1/projects/my-proj/zones/us-central1-a/futureReservations"
#define WAIT_PATH "/compute/v1/projects/my-proj/zones/us-central1-a/operations/operation-1700000000000-abc/wait"
#define RID "6f1c2b1e-1111-4222-8333-444455556666"

static const char op_running[] =
	"{\"kind\":\"compute#operation\",\"id\":\"123\",\"name\":\"operation-1700000000000-abc\","
	"\"zone\":\"" ZONE_URL "\",\"operationType\":\"insert\",\"status\":\"RUNNING\","
	"\"targetLink\":\"" ZONE_URL "/futureReservations/fr1\",\"clientOperationId\":\"" RID "\"}";

static const char op_done[] =
	"{\"kind\":\"compute#operation\",\"name\":\"operation-1700000000000-abc\",\"zone\":\"" ZONE_URL "\","
	"\"status\":\"DONE\",\"progress\":100}";

/* The calendar-mode booking of the issue, as our struct. */
static void calendar_booking(struct future_reservation *fr, struct compute_accelerator *acc)
{
	acc->type = (char *)(uintptr_t)"nvidia-h100-80gb";
	acc->count = 8;
	fr->name = (char *)(uintptr_t)"pretrain-h100";
	fr->reservation_mode = (char *)(uintptr_t)"CALENDAR";
	fr->planning_status = (char *)(uintptr_t)"SUBMITTED";
	fr->deployment_type = (char *)(uintptr_t)"DENSE";
	fr->name_prefix = (char *)(uintptr_t)"pretrain-h100";
	fr->specific_reservation_required = 1;
	fr->auto_delete_auto_created_reservations = 1;
	fr->start_ms = INT64_C(1796720400000); /* 2026-12-08T09:00:00Z */
	fr->duration_s = 5 * 86400;
	fr->total_count = 16;
	fr->machine_type = (char *)(uintptr_t)"a3-highgpu-8g";
	fr->accelerators = acc;
	fr->n_accelerators = 1;
}

static const char booking_json[] =
	"{\"name\":\"pretrain-h100\",\"reservationMode\":\"CALENDAR\",\"planningStatus\":\"SUBMITTED\","
	"\"deploymentType\":\"DENSE\",\"namePrefix\":\"pretrain-h100\",\"specificReservationRequired\":true,"
	"\"autoDeleteAutoCreatedReservations\":true,\"timeWindow\":{\"startTime\":\"2026-12-08T09:00:00Z\","
	"\"duration\":{\"seconds\":\"432000\"}},\"specificSkuProperties\":{\"totalCount\":\"16\","
	"\"instanceProperties\":{\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":[{\"acceleratorType\":"
	"\"nvidia-h100-80gb\",\"acceleratorCount\":8}]}}}";

static void test_to_json(void **state)
{
	struct future_reservation fr = FUTURE_RESERVATION_INIT;
	struct compute_accelerator acc;
	struct vx_err err = VX_ERR_INIT;
	char *body = NULL;

	(void)state;
	calendar_booking(&fr, &acc);
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), 0);
	assert_string_equal(body, booking_json);
	free(body);

	/* endTime instead of duration; FUTURE_UNSET flags are left out. */
	fr.duration_s = 0;
	fr.end_ms = fr.start_ms + 5 * 86400 * INT64_C(1000);
	fr.specific_reservation_required = FUTURE_UNSET;
	fr.auto_delete_auto_created_reservations = FUTURE_UNSET;
	fr.reservation_mode = fr.planning_status = fr.deployment_type = fr.name_prefix = NULL;
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), 0);
	assert_string_equal(body, "{\"name\":\"pretrain-h100\",\"timeWindow\":{\"startTime\":\"2026-12-08T09:00:00Z\","
				  "\"endTime\":\"2026-12-13T09:00:00Z\"},\"specificSkuProperties\":{\"totalCount\":\"16\","
				  "\"instanceProperties\":{\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":"
				  "[{\"acceleratorType\":\"nvidia-h100-80gb\",\"acceleratorCount\":8}]}}}");
	free(body);

	/* Both ends, or none, or an end before the start: refused. */
	fr.duration_s = 3600;
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: writing future reservation: timeWindow has both endTime and duration "
				     "(one of them)");
	fr.duration_s = fr.end_ms = 0;
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), VX_EINVAL);
	fr.end_ms = fr.start_ms;
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), VX_EINVAL);
	fr.end_ms = 0;
	fr.duration_s = 60;
	fr.auto_created_reservations_delete_ms = fr.start_ms;
	fr.auto_created_reservations_duration_s = 60;
	assert_int_equal(future_reservation_to_json(&fr, &body, &err), VX_EINVAL);
	assert_null(body);
	vx_err_release(&err);
}

static void test_insert_follows_operation(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *q;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json, RID, 0, &op,
						   &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	q = httpd_request(f->t.s, 0);
	assert_string_equal(q->method, "POST");
	assert_string_equal(q->target, FR_PATH "?requestId=" RID);
	assert_string_equal(q->body, booking_json);
	assert_string_equal(httpd_header(q, "Authorization"), "Bearer test-token");
	q = httpd_request(f->t.s, 1);
	assert_string_equal(q->method, "POST");
	assert_string_equal(q->target, WAIT_PATH);
	assert_true(compute_operation_done(&op));
	compute_operation_release(&op);

	/* No id given: a fresh UUID v4 in the query. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json, NULL, 0, &op,
						   &err), 0);
	q = httpd_request(f->t.s, 2);
	assert_int_equal(strlen(q->target), strlen(FR_PATH "?requestId=" RID));
	assert_int_equal(q->target[strlen(FR_PATH "?requestId=") + 14], '4');
	compute_operation_release(&op);

	/* Not an object, no Compute name, a bad zone or id: refused before sending. */
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", "nope", NULL, 0, &op, &err),
			 VX_EINVAL);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", "{\"name\":\"Bad_Name\"}", NULL,
						   0, &op, &err), VX_EINVAL);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "../x", booking_json, NULL, 0, &op, &err),
			 VX_EINVAL);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json,
						   "00000000-0000-0000-0000-000000000000", 0, &op, &err), VX_EINVAL);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json,
						   "6f1c2b1e-1111-4222-8333-44445555666g", 0, &op, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	vx_err_release(&err);
}

static void test_insert_lost_reply_is_uncertain(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	size_t i;

	/* Every attempt's answer is lost (the layer makes 3): nobody knows whether Compute booked. */
	httpd_drop(f->t.s);
	httpd_drop(f->t.s);
	httpd_drop(f->t.s);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json, RID, 0, &op,
						   &err), VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(httpd_request(f->t.s, i)->target, FR_PATH "?requestId=" RID);
		assert_string_equal(httpd_request(f->t.s, i)->body, booking_json);
	}
	assert_non_null(strstr(err.msg, "compute: creating future reservation \"pretrain-h100\" in us-central1-a: "));
	assert_non_null(strstr(err.msg, "; the outcome is unknown (request id " RID ": read the future reservation, "
					"or send it again with the same request id, before trying anything else)"));
	assert_false(compute_operation_done(&op));

	/* The caller's retry carries the same id; Compute answers with the first operation. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json, RID, 0, &op,
						   &err), 0);
	assert_string_equal(httpd_request(f->t.s, 3)->target, FR_PATH "?requestId=" RID);
	compute_operation_release(&op);

	/* One lost answer: the layer sends the same request id again by itself. */
	httpd_drop(f->t.s);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(future_reservation_cancel(&f->c, "my-proj", "us-central1-a", "fr1", NULL, 0, &op, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 6);
	assert_string_equal(httpd_request(f->t.s, 4)->target, httpd_request(f->t.s, 5)->target);
	compute_operation_release(&op);
	vx_err_release(&err);
}

static void test_update_cancel_delete_exact(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char patch[] = "{\"specificSkuProperties\":{\"totalCount\":\"3\"},\"timeWindow\":{\"endTime\":"
				    "\"2025-02-09T00:00:00Z\",\"startTime\":\"2025-02-02T00:00:00Z\"}}";

	httpd_respond_n(f->t.s, 3, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(future_reservation_update(&f->c, "my-proj", "us-central1-a", "fr1",
						   "specificSkuProperties.totalCount,timeWindow", patch, RID, 0, &op,
						   &err), 0);
	compute_operation_release(&op);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "PATCH");
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    FR_PATH "/fr1?requestId=" RID "&updateMask=specificSkuProperties.totalCount%2CtimeWindow");
	assert_string_equal(httpd_request(f->t.s, 0)->body, patch);

	assert_int_equal(future_reservation_cancel(&f->c, "my-proj", "us-central1-a", "fr1", RID, 0, &op, &err), 0);
	compute_operation_release(&op);
	assert_string_equal(httpd_request(f->t.s, 1)->method, "POST");
	assert_string_equal(httpd_request(f->t.s, 1)->target, FR_PATH "/fr1/cancel?requestId=" RID);
	assert_int_equal(httpd_request(f->t.s, 1)->body_len, 0);

	assert_int_equal(future_reservation_delete(&f->c, "my-proj", "us-central1-a", "fr1", RID, 0, &op, &err), 0);
	compute_operation_release(&op);
	assert_string_equal(httpd_request(f->t.s, 2)->method, "DELETE");
	assert_string_equal(httpd_request(f->t.s, 2)->target, FR_PATH "/fr1?requestId=" RID);
	assert_int_equal(httpd_request(f->t.s, 2)->body_len, 0);

	/* A mask Google's tools never send, a body that is not an object, a bad name: nothing sent. */
	assert_int_equal(future_reservation_update(&f->c, "my-proj", "us-central1-a", "fr1", "status", "{}", NULL, 0,
						   &op, &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: updating future reservation \"fr1\" in us-central1-a: the update mask "
				     "names a field Google's tools do not update, or the body is not a JSON object");
	assert_int_equal(future_reservation_update(&f->c, "my-proj", "us-central1-a", "fr1", "description", "[]", NULL,
						   0, &op, &err), VX_EINVAL);
	assert_int_equal(future_reservation_delete(&f->c, "my-proj", "us-central1-a", "fr1/../x", NULL, 0, &op, &err),
			 VX_EINVAL);
	assert_int_equal(future_reservation_cancel(&f->c, "my-proj", "us-central1-a", "fr1", "not-a-uuid", 0, &op,
						   &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 3);

	/* A refusal is certain and says who refused. */
	httpd_respond(f->t.s, 403, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":403,\"message\":\"Required "
		      "'compute.futureReservations.cancel' permission\",\"errors\":[{\"message\":\"m\",\"domain\":"
		      "\"global\",\"reason\":\"forbidden\"}]}}", 0);
	assert_int_equal(future_reservation_cancel(&f->c, "my-proj", "us-central1-a", "fr1", RID, 0, &op, &err),
			 VX_EDENIED);
	assert_non_null(strstr(err.msg, "compute: cancelling future reservation \"fr1\" in us-central1-a: "
					"PERMISSION_DENIED: "));
	vx_err_release(&err);
}

static void test_operation_fails(void **state)
{
	struct fx *f = *state;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char failed[] =
		"{\"name\":\"operation-1700000000000-abc\",\"zone\":\"" ZONE_URL "\",\"status\":\"DONE\","
		"\"httpErrorStatusCode\":400,\"httpErrorMessage\":\"BAD REQUEST\",\"error\":{\"errors\":["
		"{\"code\":\"INVALID_FIELD_VALUE\",\"message\":\"Invalid value for field 'resource.timeWindow"
		".startTime'\\u001b[2J\"}]}}";
	static const char elsewhere[] =
		"{\"name\":\"operation-1\",\"zone\":\"projects/my-proj/zones/us-east1-b\",\"status\":\"RUNNING\"}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, failed, 0);
	assert_int_equal(future_reservation_insert(&f->c, "my-proj", "us-central1-a", booking_json, RID, 0, &op,
						   &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: creating future reservation \"pretrain-h100\" in us-central1-a: "
				     "INVALID_FIELD_VALUE: Invalid value for field 'resource.timeWindow.startTime'?[2J");
	assert_true(compute_operation_done(&op));
	compute_operation_release(&op);

	/* Not done within the wait: unknown, naming the operation. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(future_reservation_delete(&f->c, "my-proj", "us-central1-a", "fr1", RID, 60000, &op, &err),
			 VX_EUNCERTAIN);
	assert_string_equal(err.msg, "compute: deleting future reservation \"fr1\" in us-central1-a: operation "
				     "operation-1700000000000-abc not done in time; the outcome of operation "
				     "operation-1700000000000-abc is unknown (read the future reservation, or send it "
				     "again with the same request id, before trying anything else)");
	compute_operation_release(&op);

	/* An operation in another zone is not followed. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, elsewhere, 0);
	f->t.nsleeps = 0;
	{
		size_t before = httpd_request_count(f->t.s);

		assert_int_equal(future_reservation_cancel(&f->c, "my-proj", "us-central1-a", "fr1", RID, 0, &op, &err),
				 VX_EUNCERTAIN);
		assert_int_equal(httpd_request_count(f->t.s), before + 1);
	}
	assert_non_null(strstr(err.msg, "the reply names operation \"operation-1\" in zone \"us-east1-b\", which vx "
					"will not follow"));
	compute_operation_release(&op);
	vx_err_release(&err);
}

static const char full_body[] =
	"{\"kind\":\"compute#futureReservation\",\"id\":\"987654321\",\"name\":\"fr1\",\"zone\":\"" ZONE_URL "\","
	"\"selfLink\":\"" ZONE_URL "/futureReservations/fr1\",\"description\":\"calendar\","
	"\"creationTimestamp\":\"2025-01-01T00:00:00.000-08:00\",\"reservationMode\":\"CALENDAR\","
	"\"planningStatus\":\"SUBMITTED\",\"deploymentType\":\"DENSE\",\"schedulingType\":\"GROUPED\","
	"\"namePrefix\":\"frp\",\"specificReservationRequired\":true,\"autoDeleteAutoCreatedReservations\":false,"
	"\"autoCreatedReservationsDuration\":{\"seconds\":\"604800\"},"
	"\"specificSkuProperties\":{\"totalCount\":\"2\",\"instanceProperties\":{\"machineType\":\"a3-highgpu-8g\","
	"\"guestAccelerators\":[{\"acceleratorType\":\"nvidia-h100-80gb\",\"acceleratorCount\":8}],"
	"\"localSsds\":[{\"diskSizeGb\":\"375\",\"interface\":\"NVME\"}]}},"
	"\"timeWindow\":{\"startTime\":\"2025-02-01T00:00:00Z\",\"endTime\":\"2025-02-08T00:00:00Z\"},"
	"\"shareSettings\":{\"shareType\":\"LOCAL\"},"
	"\"status\":{\"procurementStatus\":\"FULFILLED\",\"fulfilledCount\":\"2\",\"lockTime\":\"2025-01-31T00:00:00Z\","
	"\"amendmentStatus\":\"AMENDMENT_DECLINED\",\"lastKnownGoodState\":{\"procurementStatus\":\"APPROVED\"},"
	"\"autoCreatedReservations\":[\"" ZONE_URL "/reservations/frp-20250201-0001\","
	"\"" ZONE_URL "/reservations/Bad_Name\",\"https://x/projects/p/zones/us-east1-b/reservations/other\","
	"\"reservations/short\"],"
	"\"existingMatchingUsageInfo\":{\"count\":\"1\",\"timestamp\":\"2025-01-01T00:00:00Z\"}}}";

static void test_get_parses(void **state)
{
	struct fx *f = *state;
	struct future_reservation fr = FUTURE_RESERVATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, full_body, 0);
	assert_int_equal(future_reservation_get(&f->c, "my-proj", "us-central1-a", "fr1", &fr, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "GET");
	assert_string_equal(httpd_request(f->t.s, 0)->target, FR_PATH "/fr1");
	assert_string_equal(fr.name, "fr1");
	assert_string_equal(fr.zone, "us-central1-a");
	assert_string_equal(fr.description, "calendar");
	assert_int_equal(fr.create_ms, INT64_C(1735718400000)); /* 08:00 UTC */
	assert_string_equal(fr.reservation_mode, "CALENDAR");
	assert_string_equal(fr.planning_status, "SUBMITTED");
	assert_string_equal(fr.deployment_type, "DENSE");
	assert_string_equal(fr.scheduling_type, "GROUPED");
	assert_string_equal(fr.name_prefix, "frp");
	assert_null(fr.reservation_name);
	assert_int_equal(fr.specific_reservation_required, 1);
	assert_int_equal(fr.auto_delete_auto_created_reservations, 0);
	assert_int_equal(fr.auto_created_reservations_duration_s, 604800);
	assert_int_equal(fr.start_ms, INT64_C(1738368000000));
	assert_int_equal(fr.end_ms, INT64_C(1738972800000));
	assert_int_equal(fr.duration_s, 0);
	assert_int_equal(fr.total_count, 2);
	assert_string_equal(fr.machine_type, "a3-highgpu-8g");
	assert_int_equal(fr.n_accelerators, 1);
	assert_string_equal(fr.accelerators[0].type, "nvidia-h100-80gb");
	assert_int_equal(fr.accelerators[0].count, 8);
	assert_int_equal(fr.n_local_ssds, 1);
	assert_string_equal(fr.procurement_status, "FULFILLED");
	assert_int_equal(fr.fulfilled_count, 2);
	assert_int_equal(fr.lock_ms, INT64_C(1738281600000));
	assert_string_equal(fr.amendment_status, "AMENDMENT_DECLINED");
	assert_string_equal(fr.last_good_status, "APPROVED");
	assert_int_equal(fr.existing_matching_count, 1);
	assert_int_equal(fr.n_auto_created, 4);
	assert_string_equal(future_reservation_auto_created_name(&fr, 0), "frp-20250201-0001");
	assert_null(future_reservation_auto_created_name(&fr, 1)); /* not a Compute name */
	assert_null(future_reservation_auto_created_name(&fr, 2)); /* another zone */
	assert_null(future_reservation_auto_created_name(&fr, 3)); /* not a reservation URL */
	assert_null(future_reservation_auto_created_name(&fr, 4));
	future_reservation_release(&fr);
	assert_int_equal(fr.specific_reservation_required, FUTURE_UNSET);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"The resource 'fr9' was "
		      "not found\",\"errors\":[{\"message\":\"x\",\"domain\":\"global\",\"reason\":\"notFound\"}]}}", 0);
	assert_int_equal(future_reservation_get(&f->c, "my-proj", "us-central1-a", "fr9", &fr, &err), VX_ENOTFOUND);
	assert_non_null(strstr(err.msg, "compute: reading future reservation \"fr9\" in us-central1-a: NOT_FOUND"));
	assert_int_equal(future_reservation_get(&f->c, "my-proj", "us-central1-a", "FR", &fr, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	vx_err_release(&err);
}

static void test_list_pages(void **state)
{
	struct fx *f = *state;
	struct future_reservation_list l = FUTURE_RESERVATION_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"kind\":\"compute#futureReservationsListResponse\","
		      "\"items\":[{\"name\":\"a\"},{\"name\":\"b\"}],\"nextPageToken\":\"p2\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[{\"name\":\"c\",\"status\":{\"procurementStatus\":"
		      "\"APPROVED\"}}],\"nextPageToken\":\"p 3\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"kind\":\"compute#futureReservationsListResponse\"}", 0);
	assert_int_equal(future_reservation_list(&f->c, "my-proj", "us-central1-a", "name = fr1", &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[2].name, "c");
	assert_string_equal(l.items[2].procurement_status, "APPROVED");
	assert_int_equal(l.items[0].specific_reservation_required, FUTURE_UNSET);
	assert_string_equal(httpd_request(f->t.s, 0)->target, FR_PATH "?filter=name%20%3D%20fr1");
	assert_string_equal(httpd_request(f->t.s, 1)->target, FR_PATH "?filter=name%20%3D%20fr1&pageToken=p2");
	assert_string_equal(httpd_request(f->t.s, 2)->target, FR_PATH "?filter=name%20%3D%20fr1&pageToken=p%203");
	future_reservation_list_release(&l);

	/* A page that repeats a token stops the walk, and what was read is released. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[{\"name\":\"a\"}],\"nextPageToken\":\"t\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[{\"name\":\"b\"}],\"nextPageToken\":\"t\"}", 0);
	assert_int_equal(future_reservation_list(&f->c, "my-proj", "us-central1-a", NULL, &l, &err), VX_EAPI);
	assert_int_equal(l.n, 0);
	vx_err_release(&err);
}

static void test_aggregated_list_pages(void **state)
{
	struct fx *f = *state;
	struct future_reservation_list l = FUTURE_RESERVATION_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"kind\":\"compute#futureReservationsAggregatedListResponse\",\"items\":{"
		      "\"zones/us-central1-a\":{\"futureReservations\":[{\"name\":\"a\",\"zone\":\"https://x/zones/"
		      "us-central1-a\"},{\"name\":\"b\"}]},\"zones/us-east1-b\":{\"warning\":{\"code\":\"NO_RESULTS_ON_PAGE\","
		      "\"message\":\"none\"}}},\"nextPageToken\":\"n\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"items\":{\"zones/europe-west4-a\":{\"futureReservations\":[{\"name\":\"c\"}]},\"global\":"
		      "{\"futureReservations\":7}},\"unreachables\":[]}", 0);
	assert_int_equal(future_reservation_aggregated_list(&f->c, "my-proj", NULL, &l, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	assert_string_equal(httpd_request(f->t.s, 0)->target, "/compute/v1/projects/my-proj/aggregated/futureReservations");
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/compute/v1/projects/my-proj/aggregated/futureReservations?pageToken=n");
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[0].zone, "us-central1-a");
	assert_string_equal(l.items[1].zone, "us-central1-a"); /* from the key */
	assert_string_equal(l.items[2].zone, "europe-west4-a");
	future_reservation_list_release(&l);

	/* A zone that could not be read: the list is not whole. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"items\":{\"zones/us-central1-a\":{\"futureReservations\":[{\"name\":\"a\"}]}},"
		      "\"unreachables\":[\"zones/us-east1-b\"]}", 0);
	assert_int_equal(future_reservation_aggregated_list(&f->c, "my-proj", NULL, &l, &err), VX_ERETRY);
	assert_string_equal(err.msg, "compute: listing future reservations in all zones: reading aggregated future "
				     "reservation list: some zones could not be reached; the list is not whole");
	assert_int_equal(l.n, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"items\":[]}", 0);
	assert_int_equal(future_reservation_aggregated_list(&f->c, "my-proj", NULL, &l, &err), VX_EINVAL);
	vx_err_release(&err);
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "{", "{\"items\":{\"zones/a\":[1]}}", "{\"items\":[1,\"x\",{\"name\":3}]}",
		"{\"name\":{},\"zone\":7,\"timeWindow\":[],\"specificSkuProperties\":{\"totalCount\":\"-5\","
		"\"instanceProperties\":{\"guestAccelerators\":{\"a\":1},\"localSsds\":7}},\"status\":\"FULFILLED\"}",
		"{\"specificReservationRequired\":\"yes\",\"timeWindow\":{\"startTime\":\"2025-13-01T00:00:00Z\","
		"\"duration\":{\"seconds\":1e400}},\"specificSkuProperties\":{\"totalCount\":\"99999999999999999999\","
		"\"instanceProperties\":{\"guestAccelerators\":[null,{\"acceleratorType\":5,\"acceleratorCount\":\"8\"},"
		"{\"acceleratorCount\":-1}]}},\"status\":{\"autoCreatedReservations\":[1,null,\"\",\"x\\u0000y\"],"
		"\"lastKnownGoodState\":[],\"existingMatchingUsageInfo\":\"1\"}}",
		"{\"zone\":\"/\",\"nextPageToken\":5,\"items\":{\"\":{\"futureReservations\":[{}]}},\"unreachables\":{}}",
		"{\"items\":{\"zones/x\":{\"futureReservations\":[{\"status\":{\"autoCreatedReservations\":\"u\"}}]}},"
		"\"unreachables\":\"zones/y\"}",
	};
	struct future_reservation fr = FUTURE_RESERVATION_INIT;
	struct future_reservation_list l = FUTURE_RESERVATION_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *tok = NULL;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		const char *b = bodies[i];

		rc = future_reservation_parse_json(b, strlen(b), &fr, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		for (size_t k = 0; k <= fr.n_auto_created; k++)
			(void)future_reservation_auto_created_name(&fr, k);
		future_reservation_release(&fr);
		rc = future_reservation_list_parse_json(b, strlen(b), &l, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		rc = future_reservation_aggregated_parse_json(b, strlen(b), &l, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL || rc == VX_ERETRY);
		free(tok);
	}
	future_reservation_list_release(&l);
	assert_int_equal(future_reservation_parse_json(bodies[6], strlen(bodies[6]), &fr, &err), 0);
	assert_null(fr.name);
	assert_null(fr.zone);
	assert_null(fr.procurement_status);
	assert_int_equal(fr.total_count, 0);
	assert_int_equal(fr.n_accelerators, 0);
	assert_int_equal(fr.n_local_ssds, 0);
	future_reservation_release(&fr);
	assert_int_equal(future_reservation_parse_json(bodies[7], strlen(bodies[7]), &fr, &err), 0);
	assert_int_equal(fr.specific_reservation_required, FUTURE_UNSET);
	assert_int_equal(fr.start_ms, 0);
	assert_int_equal(fr.duration_s, 0);
	assert_int_equal(fr.total_count, 0);
	assert_int_equal(fr.n_accelerators, 2);
	assert_null(fr.accelerators[0].type);
	assert_int_equal(fr.accelerators[0].count, 8);
	assert_int_equal(fr.accelerators[1].count, 0);
	assert_int_equal(fr.n_auto_created, 2);
	assert_null(future_reservation_auto_created_name(&fr, 0));
	assert_null(future_reservation_auto_created_name(&fr, 1)); /* the NUL is read as U+FFFD */
	future_reservation_release(&fr);
	vx_err_release(&err);
}

static void test_status_and_masks(void **state)
{
	(void)state;
	assert_true(future_status_undecided("PENDING_APPROVAL"));
	assert_true(future_status_undecided("DRAFTING"));
	assert_false(future_status_undecided("APPROVED"));
	assert_true(future_status_final("FULFILLED"));
	assert_true(future_status_final("DECLINED"));
	assert_false(future_status_final("PROVISIONING"));
	assert_false(future_status_final("SOMETHING_NEW"));
	assert_false(future_status_final(NULL));
	assert_true(future_status_failed("FAILED_PARTIALLY_FULFILLED"));
	assert_false(future_status_failed("CANCELLED"));
	assert_true(future_status_locked("PROCURING"));
	assert_false(future_status_locked("APPROVED"));

	assert_true(future_update_mask_ok("planningStatus"));
	assert_true(future_update_mask_ok("specificSkuProperties.totalCount,timeWindow.endTime"));
	assert_true(future_update_mask_ok("specificSkuProperties.instanceProperties.guestAccelerator"));
	assert_false(future_update_mask_ok(""));
	assert_false(future_update_mask_ok(NULL));
	assert_false(future_update_mask_ok("name"));
	assert_false(future_update_mask_ok("status.procurementStatus"));
	assert_false(future_update_mask_ok("description,"));
	assert_false(future_update_mask_ok(",description"));
	assert_false(future_update_mask_ok("timeWindowX"));
	assert_false(future_update_mask_ok("timeWindow "));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_to_json),
		T(test_insert_follows_operation),
		T(test_insert_lost_reply_is_uncertain),
		T(test_update_cancel_delete_exact),
		T(test_operation_fails),
		T(test_get_parses),
		T(test_list_pages),
		T(test_aggregated_list_pages),
		cmocka_unit_test(test_parse_hostile),
		cmocka_unit_test(test_status_and_masks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
