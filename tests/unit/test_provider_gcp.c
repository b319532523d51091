/* Unit tests for providers/gcp/provider_gcp.c's reservations and quota
 * preferences, against the scripted server: the exact requests (paths,
 * requestId, updateMask, ignoreSafetyChecks, bodies), the fence asked
 * before every mutation and never before a read or a wait, the zone
 * operation followed to its end (or VX_EUNCERTAIN), Google's names checked
 * before they become actions, and operation errors mapped to codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/provider_gcp.h"
#include "reconcile/provider.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

/* ---- fixture: the scripted server behind a real gcp provider ---- */

struct fx {
	struct clienttest t; /* first: clienttest_teardown frees the fixture */
	struct provider *p;
	int fence_calls;
	int fence_refuse;
};

#define Z "/compute/v1/projects/my-proj/zones/us-central1-a"
#define QP "/v1/projects/my-proj/locations/global/quotaPreferences"

static int setup(void **state)
{
	struct fx *f = clienttest_new(sizeof(*f), "");
	struct vx_err err = VX_ERR_INIT;
	char url[200];

	/* A ready token (no credential file, no metadata probe) and the server as both APIs. */
	assert_int_equal(setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "test-token", 1), 0);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	assert_int_equal(setenv("METADATA_SERVER_DETECTION", "none", 1), 0);
	assert_int_equal(setenv("VX_RATE_PER_MINUTE", "unlimited", 1), 0);
	assert_int_equal(setenv("VX_CREATE_RATE_PER_MINUTE", "unlimited", 1), 0);
	snprintf(url, sizeof(url), "%s/compute/v1/", httpd_url(f->t.s));
	assert_int_equal(setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE", url, 1), 0);
	snprintf(url, sizeof(url), "%s/v1/", httpd_url(f->t.s));
	assert_int_equal(setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS", url, 1), 0);
	assert_int_equal(gcp_provider_new(&f->p, &f->t.ctx, NULL, &err), 0);
	vx_err_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	f->p->free(f->p);
	return clienttest_teardown(state);
}

static int fence_check(void *ud, struct vx_err *err)
{
	struct fx *f = ud;

	f->fence_calls++;
	if (f->fence_refuse)
		return vx_err_set(err, VX_ECONFLICT, "the state lease was lost");
	return 0;
}

static const char rid[] = "6f1c2b1e-1111-4222-8333-444455556666";

static const char op_running[] =
	"{\"kind\":\"compute#operation\",\"id\":\"123\",\"name\":\"operation-1700000000000-abc\","
	"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
	"\"operationType\":\"insert\",\"status\":\"RUNNING\"}";

static const char op_done[] =
	"{\"kind\":\"compute#operation\",\"name\":\"operation-1700000000000-abc\","
	"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
	"\"status\":\"DONE\",\"progress\":100}";

static const char res_r1[] =
	"{\"kind\":\"compute#reservation\",\"name\":\"r1\",\"description\":\"vx:stack=s\\u001b[2J\","
	"\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
	"\"status\":\"READY\",\"creationTimestamp\":\"2026-01-02T03:04:05.000-08:00\","
	"\"specificReservationRequired\":true,\"reservationSharingPolicy\":{\"serviceShareType\":\"ALLOW_ALL\"},"
	"\"specificReservation\":{\"count\":\"2\",\"inUseCount\":\"1\",\"instanceProperties\":{"
	"\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":[{\"acceleratorCount\":8,"
	"\"acceleratorType\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a/"
	"acceleratorTypes/nvidia-h100-80gb\"}]}}}";

static struct provider_reservation_request res_request(struct fx *f, struct provider_fence *fence)
{
	struct provider_reservation_request r;

	memset(&r, 0, sizeof(r));
	fence->check = fence_check;
	fence->ud = f;
	r.project = "my-proj";
	r.zone = "us-central1-a";
	r.name = "r1";
	r.description = "vx:stack=s";
	r.machine_type = "a3-highgpu-8g";
	r.accelerator_type = "nvidia-h100-80gb";
	r.accelerator_count = 8;
	r.count = 2;
	r.specific_required = 1;
	r.request_id = rid;
	r.fence = fence;
	return r;
}

/* ---- reservations ---- */

static void test_create_reservation_exact(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence;
	struct provider_reservation_request req = res_request(f, &fence);
	struct live_reservation out;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, res_r1, 0);
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "POST");
	assert_string_equal(clienttest_req(&f->t, 0)->target, Z "/reservations?requestId=" "6f1c2b1e-1111-4222-8333-444455556666");
	assert_string_equal(clienttest_req(&f->t, 0)->body,
			    "{\"name\":\"r1\",\"description\":\"vx:stack=s\",\"specificReservation\":{\"count\":\"2\","
			    "\"instanceProperties\":{\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":["
			    "{\"acceleratorType\":\"nvidia-h100-80gb\",\"acceleratorCount\":8}]}},"
			    "\"specificReservationRequired\":true,"
			    "\"reservationSharingPolicy\":{\"serviceShareType\":\"ALLOW_ALL\"}}");
	assert_string_equal(clienttest_req(&f->t, 1)->method, "POST");
	assert_string_equal(clienttest_req(&f->t, 1)->target, Z "/operations/operation-1700000000000-abc/wait");
	assert_string_equal(clienttest_req(&f->t, 2)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 2)->target, Z "/reservations/r1");
	/* The fence is asked before the insert only: not before the wait or the read. */
	assert_int_equal(f->fence_calls, 1);
	assert_string_equal(out.name, "r1");
	assert_string_equal(out.project, "my-proj");
	assert_string_equal(out.zone, "us-central1-a");
	assert_string_equal(out.status, "READY");
	assert_string_equal(out.description, "vx:stack=s?[2J");
	assert_string_equal(out.machine_type, "a3-highgpu-8g");
	assert_string_equal(out.accelerator_type, "nvidia-h100-80gb");
	assert_int_equal(out.accelerator_count, 8);
	assert_int_equal(out.count, 2);
	assert_int_equal(out.in_use, 1);
	assert_int_equal(out.specific_required, 1);
	assert_string_equal(out.share_type, "ALLOW_ALL");
	assert_int_equal(out.create_ms, 1767351845000LL);
	live_reservation_release(&out);
	vx_err_release(&err);
}

static void test_create_reservation_refused_input(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence;
	struct provider_reservation_request req = res_request(f, &fence);
	struct live_reservation out;
	struct vx_err err = VX_ERR_INIT;

	req.count = 0;
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: creating reservation \"r1\" in us-central1-a: invalid name, zone, "
				     "machine type, accelerators or count (1 to 1000)");
	req.count = 2;
	req.name = "R1";
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 0);
	assert_int_equal(f->fence_calls, 0);
	vx_err_release(&err);
}

static void test_create_reservation_answered_with_other_name(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence;
	struct provider_reservation_request req = res_request(f, &fence);
	struct live_reservation out;
	struct vx_err err = VX_ERR_INIT;
	static const char other_zone[] =
		"{\"name\":\"r1\",\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-east1-b\","
		"\"status\":\"READY\"}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"r2\",\"zone\":\"us-central1-a\"}", 0);
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_EAPI);
	assert_string_equal(err.msg, "compute: creating reservation \"r1\" in us-central1-a: Compute answered with "
				     "reservation \"r2\": it is not the name asked for");
	assert_null(out.name);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, other_zone, 0);
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_EAPI);
	assert_string_equal(err.msg, "compute: creating reservation \"r1\" in us-central1-a: Compute answered with "
				     "reservation \"r1\": it is not in the zone listed");
	/* Already DONE in the insert's answer: no wait request. */
	assert_int_equal(httpd_request_count(f->t.s), 4);
	assert_string_equal(clienttest_req(&f->t, 1)->target, Z "/reservations/r1");
	vx_err_release(&err);
}

static void test_operation_errors_mapped(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence;
	struct provider_reservation_request req = res_request(f, &fence);
	struct live_reservation out;
	struct vx_err err = VX_ERR_INIT;
	static const char quota[] =
		"{\"name\":\"operation-1700000000000-abc\",\"status\":\"DONE\",\"httpErrorStatusCode\":403,"
		"\"httpErrorMessage\":\"FORBIDDEN\",\"error\":{\"errors\":[{\"code\":\"QUOTA_EXCEEDED\","
		"\"message\":\"Quota 'NVIDIA_H100_GPUS' exceeded.\\u001b]0;pwned\\u0007 Limit: 0.0\"}]}}";
	static const char exists[] =
		"{\"name\":\"operation-1700000000000-abc\",\"status\":\"DONE\",\"httpErrorStatusCode\":409,"
		"\"error\":{\"errors\":[{\"code\":\"RESOURCE_ALREADY_EXISTS\",\"message\":\"The resource already exists\"}]}}";
	static const char bad[] =
		"{\"name\":\"operation-1700000000000-abc\",\"status\":\"DONE\",\"httpErrorStatusCode\":400,"
		"\"error\":{\"errors\":[{\"code\":\"INVALID_FIELD_VALUE\",\"message\":\"Invalid value for field\"}]}}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, quota, 0);
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_EAPI);
	assert_string_equal(err.msg, "compute: creating reservation \"r1\" in us-central1-a: QUOTA_EXCEEDED: "
				     "Quota 'NVIDIA_H100_GPUS' exceeded.?]0;pwned? Limit: 0.0");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, exists, 0);
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "compute: creating reservation \"r1\" in us-central1-a: RESOURCE_ALREADY_EXISTS: "
				     "The resource already exists");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, bad, 0);
	assert_int_equal(provider_reservation_del(f->p, "my-proj", "us-central1-a", "r1", NULL, &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: deleting reservation \"r1\" in us-central1-a: INVALID_FIELD_VALUE: "
				     "Invalid value for field");
	assert_int_equal(httpd_request_count(f->t.s), 6);
	vx_err_release(&err);
}

static void test_operation_not_done_is_uncertain(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	assert_int_equal(provider_reservation_resize(f->p, "my-proj", "us-central1-a", "r1", 3, NULL, &err),
			 VX_EUNCERTAIN);
	assert_string_equal(err.msg, "compute: resizing reservation \"r1\" in us-central1-a to 3: operation "
				     "operation-1700000000000-abc not done in time; the outcome of operation "
				     "operation-1700000000000-abc is unknown (list the reservations before trying again)");
	/* Bounded by 10 minutes of (virtual) time, not by the wait calls' count. */
	assert_true(f->t.offset >= 600000);
	assert_true(f->t.offset < 700000);
	vx_err_release(&err);
}

static void test_bad_operation_name_not_followed(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	static const char evil[] =
		"{\"name\":\"../../../reservations/other\",\"zone\":\"us-central1-a\",\"status\":\"RUNNING\"}";
	static const char elsewhere[] =
		"{\"name\":\"operation-1\",\"zone\":\"projects/my-proj/zones/us-east1-b\",\"status\":\"RUNNING\"}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, evil, 0);
	assert_int_equal(provider_reservation_del(f->p, "my-proj", "us-central1-a", "r1", NULL, &err), VX_EUNCERTAIN);
	assert_string_equal(err.msg, "compute: deleting reservation \"r1\" in us-central1-a: the reply names operation "
				     "\"../../../reservations/other\" in zone \"us-central1-a\", which vx will not follow; "
				     "the outcome is unknown (list the reservations before trying again)");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, elsewhere, 0);
	assert_int_equal(provider_reservation_del(f->p, "my-proj", "us-central1-a", "r1", NULL, &err), VX_EUNCERTAIN);
	/* Only the two deletes reached the server: no wait on a name or zone not Compute's. */
	assert_int_equal(httpd_request_count(f->t.s), 2);
	vx_err_release(&err);
}

static void test_resize_delete_exact(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence = { fence_check, f };
	struct vx_err err = VX_ERR_INIT;
	const char *t;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(provider_reservation_resize(f->p, "my-proj", "us-central1-a", "r1", 3, &fence, &err), 0);
	t = clienttest_req(&f->t, 0)->target;
	assert_string_equal(clienttest_req(&f->t, 0)->method, "POST");
	assert_int_equal(strncmp(t, Z "/reservations/r1/resize?requestId=", strlen(Z "/reservations/r1/resize?requestId=")), 0);
	assert_int_equal(strlen(t), strlen(Z "/reservations/r1/resize?requestId=") + 36);
	assert_string_equal(clienttest_req(&f->t, 0)->body, "{\"specificSkuCount\":\"3\"}");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_running, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(provider_reservation_del(f->p, "my-proj", "us-central1-a", "r1", &fence, &err), 0);
	t = clienttest_req(&f->t, 1)->target;
	assert_string_equal(clienttest_req(&f->t, 1)->method, "DELETE");
	assert_int_equal(strncmp(t, Z "/reservations/r1?requestId=", strlen(Z "/reservations/r1?requestId=")), 0);
	assert_string_equal(clienttest_req(&f->t, 1)->body, "");
	assert_string_equal(clienttest_req(&f->t, 2)->target, Z "/operations/operation-1700000000000-abc/wait");
	assert_int_equal(f->fence_calls, 2);
	/* Compute's range is 1..1000: 0 and 1001 are never sent. */
	assert_int_equal(provider_reservation_resize(f->p, "my-proj", "us-central1-a", "r1", 0, NULL, &err), VX_EINVAL);
	assert_string_equal(err.msg, "compute: resizing reservation \"r1\" in us-central1-a to 0: invalid name, zone "
				     "or count (1 to 1000)");
	assert_int_equal(provider_reservation_resize(f->p, "my-proj", "us-central1-a", "r1", 1001, NULL, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	vx_err_release(&err);
}

static void test_fence_refuses_before_send(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence;
	struct provider_reservation_request req = res_request(f, &fence);
	struct provider_quota_request q;
	struct live_reservation out;
	struct live_quota qout;
	struct vx_err err = VX_ERR_INIT;

	f->fence_refuse = 1;
	assert_int_equal(provider_reservation_create(f->p, &req, &out, &err), VX_ECONFLICT);
	assert_int_equal(provider_reservation_resize(f->p, "my-proj", "us-central1-a", "r1", 3, &fence, &err),
			 VX_ECONFLICT);
	assert_int_equal(provider_reservation_del(f->p, "my-proj", "us-central1-a", "r1", &fence, &err),
			 VX_ECONFLICT);
	memset(&q, 0, sizeof(q));
	q.project = "my-proj";
	q.id = "h100";
	q.service = "aiplatform.googleapis.com";
	q.quota_id = "CustomModelTrainingH100GPUsPerProjectPerRegion";
	q.preferred = 16;
	q.etag = "e1";
	q.fence = &fence;
	assert_int_equal(provider_quota_create(f->p, &q, &qout, &err), VX_ECONFLICT);
	assert_int_equal(provider_quota_update(f->p, &q, &qout, &err), VX_ECONFLICT);
	assert_non_null(strstr(err.msg, "the state lease was lost"));
	assert_int_equal(f->fence_calls, 5);
	assert_int_equal(httpd_request_count(f->t.s), 0);
	vx_err_release(&err);
}

static void test_list_reservations_drops_bad_names(void **state)
{
	struct fx *f = *state;
	struct live_reservations rs;
	struct vx_err err = VX_ERR_INIT;
	static const char page1[] =
		"{\"kind\":\"compute#reservationList\",\"items\":["
		"{\"name\":\"r1\",\"zone\":\"https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a\","
		"\"specificReservation\":{\"count\":\"2\",\"inUseCount\":\"0\"}},"
		"{\"name\":\"../r2\",\"zone\":\"us-central1-a\"},"
		"{\"name\":\"R3\",\"zone\":\"us-central1-a\"}],\"nextPageToken\":\"t2\"}";
	static const char page2[] =
		"{\"items\":[{\"name\":\"r4\",\"zone\":\"projects/my-proj/zones/us-east1-b\"},"
		"{\"name\":\"r5-\",\"zone\":\"us-central1-a\"},"
		"{\"name\":\"r6\",\"zone\":\"us-central1-a\",\"status\":\"CREATING\"}]}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, page1, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, page2, 0);
	assert_int_equal(provider_reservation_list(f->p, "my-proj", "us-central1-a", &rs, &err), 0);
	assert_int_equal(rs.n, 2);
	assert_string_equal(rs.items[0].name, "r1");
	assert_int_equal(rs.items[0].count, 2);
	assert_string_equal(rs.items[1].name, "r6");
	assert_string_equal(rs.items[1].status, "CREATING");
	assert_string_equal(clienttest_req(&f->t, 0)->target, Z "/reservations");
	assert_string_equal(clienttest_req(&f->t, 1)->target, Z "/reservations?pageToken=t2");
	assert_string_equal(f->t.log,
		"warn: compute: listing reservations in us-central1-a: ignored a reservation listed as \"../r2\": "
		"its name is not [a-z]([-a-z0-9]{0,61}[a-z0-9])?; it is neither adopted nor changed\n"
		"warn: compute: listing reservations in us-central1-a: ignored a reservation listed as \"R3\": "
		"its name is not [a-z]([-a-z0-9]{0,61}[a-z0-9])?; it is neither adopted nor changed\n"
		"warn: compute: listing reservations in us-central1-a: ignored a reservation listed as \"r4\": "
		"it is not in the zone listed; it is neither adopted nor changed\n"
		"warn: compute: listing reservations in us-central1-a: ignored a reservation listed as \"r5-\": "
		"its name is not [a-z]([-a-z0-9]{0,61}[a-z0-9])?; it is neither adopted nor changed\n");
	live_reservations_release(&rs);
	vx_err_release(&err);
}

/* ---- quota preferences ---- */

static const char pref_h100[] =
	"{\"name\":\"projects/123456789012/locations/global/quotaPreferences/h100\",\"service\":"
	"\"aiplatform.googleapis.com\",\"quotaId\":\"CustomModelTrainingH100GPUsPerProjectPerRegion\","
	"\"dimensions\":{\"region\":\"us-central1\",\"a\":\"b\"},\"quotaConfig\":{\"preferredValue\":\"16\","
	"\"grantedValue\":\"8\",\"stateDetail\":\"partially\\napproved\"},\"etag\":\"e2\",\"reconciling\":true}";

static struct provider_quota_request quota_request(struct provider_fence *fence)
{
	static char key[] = "region", value[] = "us-central1";
	static const struct vx_label dims[] = { { key, value } };
	struct provider_quota_request q;

	memset(&q, 0, sizeof(q));
	q.project = "my-proj";
	q.id = "h100";
	q.service = "aiplatform.googleapis.com";
	q.quota_id = "CustomModelTrainingH100GPUsPerProjectPerRegion";
	q.dimensions = dims;
	q.ndimensions = 1;
	q.preferred = 16;
	q.contact_email = "ml@example.com";
	q.justification = "training";
	q.fence = fence;
	return q;
}

static void test_create_quota_exact(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence = { fence_check, f };
	struct provider_quota_request q = quota_request(&fence);
	struct live_quota out;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_h100, 0);
	assert_int_equal(provider_quota_create(f->p, &q, &out, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "POST");
	assert_string_equal(clienttest_req(&f->t, 0)->target, QP "?quotaPreferenceId=h100");
	assert_string_equal(clienttest_req(&f->t, 0)->body,
			    "{\"service\":\"aiplatform.googleapis.com\",\"quotaId\":"
			    "\"CustomModelTrainingH100GPUsPerProjectPerRegion\",\"dimensions\":{\"region\":\"us-central1\"},"
			    "\"quotaConfig\":{\"preferredValue\":\"16\"},\"justification\":\"training\","
			    "\"contactEmail\":\"ml@example.com\"}");
	assert_int_equal(f->fence_calls, 1);
	assert_string_equal(out.name, "projects/123456789012/locations/global/quotaPreferences/h100");
	assert_string_equal(out.id, "h100");
	assert_int_equal(out.preferred, 16);
	assert_true(out.has_granted);
	assert_int_equal(out.granted, 8);
	assert_true(out.reconciling);
	assert_true(out.requested_ms == 0); /* no createTime or updateTime: the wait is not shown */
	assert_string_equal(out.state_detail, "partially approved");
	assert_string_equal(out.etag, "e2");
	assert_int_equal(out.ndimensions, 2);
	assert_string_equal(out.dimensions[0].key, "a");
	assert_string_equal(out.dimensions[1].key, "region");
	live_quota_release(&out);

	/* A reply naming another preference is an error, never an action. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"projects/other/locations/global/quotaPreferences/h100\"}", 0);
	assert_int_equal(provider_quota_create(f->p, &q, &out, &err), VX_EAPI);
	assert_string_equal(err.msg, "quotas: creating quota preference \"h100\": Cloud Quotas answered with preference "
				     "\"projects/other/locations/global/quotaPreferences/h100\", not projects/my-proj/"
				     "locations/global/quotaPreferences/h100");
	assert_null(out.name);
	vx_err_release(&err);
}

static void test_update_quota_exact(void **state)
{
	struct fx *f = *state;
	struct provider_fence fence = { fence_check, f };
	struct provider_quota_request q = quota_request(&fence);
	struct live_quota out;
	struct vx_err err = VX_ERR_INIT;

	q.preferred = 4;
	q.etag = "e1";
	q.ignore_safety_checks = PROVIDER_QUOTA_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH |
				 PROVIDER_QUOTA_IGNORE_DECREASE_BELOW_USAGE;
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_h100, 0);
	assert_int_equal(provider_quota_update(f->p, &q, &out, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "PATCH");
	assert_string_equal(clienttest_req(&f->t, 0)->target,
			    QP "/h100?updateMask=quotaConfig.preferredValue%2CcontactEmail%2Cjustification"
			    "&ignoreSafetyChecks=QUOTA_DECREASE_BELOW_USAGE"
			    "&ignoreSafetyChecks=QUOTA_DECREASE_PERCENTAGE_TOO_HIGH");
	assert_string_equal(clienttest_req(&f->t, 0)->body,
			    "{\"service\":\"aiplatform.googleapis.com\",\"quotaId\":"
			    "\"CustomModelTrainingH100GPUsPerProjectPerRegion\",\"dimensions\":{\"region\":\"us-central1\"},"
			    "\"quotaConfig\":{\"preferredValue\":\"4\"},\"etag\":\"e1\",\"justification\":\"training\","
			    "\"contactEmail\":\"ml@example.com\"}");
	live_quota_release(&out);

	/* A stale etag: ABORTED is a conflict; sent once (a resend would be a false conflict). */
	q.contact_email = NULL;
	q.justification = NULL;
	q.ignore_safety_checks = 0;
	httpd_respond(f->t.s, 409, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":409,\"message\":\"etag mismatch\",\"status\":\"ABORTED\"}}", 0);
	assert_int_equal(provider_quota_update(f->p, &q, &out, &err), VX_ECONFLICT);
	assert_string_equal(clienttest_req(&f->t, 1)->target, QP "/h100?updateMask=quotaConfig.preferredValue");
	assert_int_equal(httpd_request_count(f->t.s), 2);
	assert_int_equal(f->fence_calls, 2);
	vx_err_release(&err);
}

static void test_list_quotas_drops_bad_names(void **state)
{
	struct fx *f = *state;
	struct live_quotas qs;
	struct vx_err err = VX_ERR_INIT;
	static const char page1[] =
		"{\"quotaPreferences\":["
		"{\"name\":\"projects/my-proj/locations/global/quotaPreferences/a_1\",\"quotaConfig\":{\"preferredValue\":\"-1\"}},"
		"{\"name\":\"projects/other-proj/locations/global/quotaPreferences/b\"},"
		"{\"name\":\"projects/my-proj/locations/us-central1/quotaPreferences/c\"}],\"nextPageToken\":\"n\"}";
	static const char page2[] =
		"{\"quotaPreferences\":["
		"{\"name\":\"projects/my-proj/locations/global/quotaPreferences/d/../../x\"},"
		"{\"name\":\"projects/42/locations/global/quotaPreferences/e\"}]}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, page1, 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, page2, 0);
	assert_int_equal(provider_quota_list(f->p, "my-proj", &qs, &err), 0);
	assert_int_equal(qs.n, 2);
	assert_string_equal(qs.items[0].id, "a_1");
	assert_int_equal(qs.items[0].preferred, -1);
	assert_string_equal(qs.items[1].id, "e");
	assert_string_equal(clienttest_req(&f->t, 0)->target, QP);
	assert_string_equal(clienttest_req(&f->t, 1)->target, QP "?pageToken=n");
	assert_string_equal(f->t.log,
		"warn: quotas: listing quota preferences: ignored a preference listed with an invalid name "
		"\"projects/other-proj/locations/global/quotaPreferences/b\" (not projects/my-proj/locations/global/"
		"quotaPreferences/ID); it is neither adopted nor changed\n"
		"warn: quotas: listing quota preferences: ignored a preference listed with an invalid name "
		"\"projects/my-proj/locations/us-central1/quotaPreferences/c\" (not projects/my-proj/locations/global/"
		"quotaPreferences/ID); it is neither adopted nor changed\n"
		"warn: quotas: listing quota preferences: ignored a preference listed with an invalid name "
		"\"projects/my-proj/locations/global/quotaPreferences/d/../../x\" (not projects/my-proj/locations/global/"
		"quotaPreferences/ID); it is neither adopted nor changed\n");
	live_quotas_release(&qs);
	vx_err_release(&err);
}

/* ---- copies ---- */

static void test_copies(void **state)
{
	struct live_reservation r, rc2;
	struct live_reservations rs = { NULL, 0 };
	struct live_quota q, qc;
	struct live_quotas qs = { NULL, 0 };
	char key[] = "region", value[] = "us-central1", r1[] = "r1", zone[] = "us-central1-a", h100[] = "h100";
	struct vx_label dims[] = { { key, value } };

	(void)state;
	memset(&r, 0, sizeof(r));
	r.name = r1;
	r.zone = zone;
	r.count = 3;
	assert_int_equal(live_reservation_copy(&rc2, &r), 0);
	assert_string_equal(rc2.name, "r1");
	assert_ptr_not_equal(rc2.name, r.name);
	assert_null(rc2.description);
	assert_int_equal(rc2.count, 3);
	assert_int_equal(live_reservations_push(&rs, &rc2), 0);
	assert_int_equal(live_reservations_push(&rs, &r), 0);
	assert_int_equal(rs.n, 2);
	live_reservation_release(&rc2);
	live_reservation_release(NULL);
	live_reservations_release(&rs);
	live_reservations_release(NULL);
	assert_null(rs.items);

	memset(&q, 0, sizeof(q));
	q.id = h100;
	q.dimensions = dims;
	q.ndimensions = 1;
	q.granted = 5;
	q.has_granted = 1;
	assert_int_equal(live_quota_copy(&qc, &q), 0);
	assert_string_equal(qc.dimensions[0].value, "us-central1");
	assert_int_equal(qc.granted, 5);
	assert_int_equal(live_quotas_push(&qs, &qc), 0);
	assert_int_equal(qs.n, 1);
	live_quota_release(&qc);
	live_quota_release(NULL);
	live_quotas_release(&qs);
	live_quotas_release(NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_reservation_exact),
		T(test_create_reservation_refused_input),
		T(test_create_reservation_answered_with_other_name),
		T(test_operation_errors_mapped),
		T(test_operation_not_done_is_uncertain),
		T(test_bad_operation_name_not_followed),
		T(test_resize_delete_exact),
		T(test_fence_refuses_before_send),
		T(test_list_reservations_drops_bad_names),
		T(test_create_quota_exact),
		T(test_update_quota_exact),
		T(test_list_quotas_drops_bad_names),
		cmocka_unit_test(test_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
