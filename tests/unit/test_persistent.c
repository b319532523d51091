/* Unit tests for providers/gcp/persistent: the exact requests of every
 * method against the scripted server, pagination, operations followed to
 * done (and failing), the create whose answer is lost, and the parsers on
 * real and hostile JSON. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "providers/gcp/persistent.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

CLIENTTEST_FIXTURE(struct persistent_client, "/v1/")

#define L(k, v) { (char *)(uintptr_t)(k), (char *)(uintptr_t)(v) }
static const struct vx_label lbls[] = { L("vx-stack", "research"), L("vx-resource", "eval-pool") };

/* The declaration's spec, as the kind hands it over. */
static const char spec[] =
	"{\"resourcePools\":[{\"id\":\"l4s\",\"machineSpec\":{\"machineType\":\"g2-standard-8\","
	"\"acceleratorType\":\"NVIDIA_L4\",\"acceleratorCount\":1},\"replicaCount\":\"2\","
	"\"autoscalingSpec\":{\"minReplicaCount\":\"1\",\"maxReplicaCount\":\"4\"}}]}";

static const char name[] = "projects/123/locations/us-central1/persistentResources/eval-pool";
static const char op_name[] = "projects/123/locations/us-central1/persistentResources/eval-pool/operations/77";

/* The finished create of vertex-ai-persistent-resources.md, "create — LRO finished". */
static const char op_done[] =
	"{\"name\":\"projects/my-proj/locations/us-central1/persistentResources/pr-1/operations/1234567890\","
	"\"metadata\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1.CreatePersistentResourceOperationMetadata\","
	"\"genericMetadata\":{\"createTime\":\"2025-01-01T00:00:00.123456Z\",\"updateTime\":\"2025-01-01T00:00:05Z\"},"
	"\"progressMessage\":\"Provisioning\"},\"done\":true,"
	"\"response\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1.PersistentResource\","
	"\"name\":\"projects/123456789/locations/us-central1/persistentResources/pr-1\",\"displayName\":\"train-pool\","
	"\"labels\":{\"team\":\"ml\"},\"resourcePools\":[{\"id\":\"gpu-pool\",\"machineSpec\":{\"machineType\":"
	"\"a3-highgpu-8g\",\"acceleratorType\":\"NVIDIA_H100_80GB\",\"acceleratorCount\":8},\"replicaCount\":\"2\","
	"\"usedReplicaCount\":\"0\",\"diskSpec\":{\"bootDiskType\":\"pd-ssd\",\"bootDiskSizeGb\":200}}],"
	"\"state\":\"RUNNING\",\"createTime\":\"2025-01-01T00:00:00.123456Z\",\"startTime\":\"2025-01-01T00:09:30Z\","
	"\"updateTime\":\"2025-01-01T00:09:30Z\"}}";

static char *op_json(const char *extra)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "{\"name\":\"%s\"%s}", op_name, extra);
	return buf;
}

/* ---- create ---- */

static void test_create_exact_request_and_wait(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;
	const struct persistent_pool *p;
	char want[256];

	/* {region} in the base URL is replaced by the call's region. */
	snprintf(f->t.base, sizeof(f->t.base), "%s/r-{region}/v1", httpd_url(f->t.s));
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      op_json(",\"metadata\":{\"progressMessage\":\"Provisioning\"}"), 0);
	assert_int_equal(persistent_create(&f->c, "my-proj", "us-central1", "eval-pool", spec, lbls, 2, &op, &err), 0);
	r = clienttest_req(&f->t, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/r-us-central1/v1/projects/my-proj/locations/us-central1/persistentResources"
			    "?persistentResourceId=eval-pool");
	assert_string_equal(r->body,
			    "{\"resourcePools\":[{\"id\":\"l4s\",\"machineSpec\":{\"machineType\":\"g2-standard-8\","
			    "\"acceleratorType\":\"NVIDIA_L4\",\"acceleratorCount\":1},\"replicaCount\":\"2\","
			    "\"autoscalingSpec\":{\"minReplicaCount\":\"1\",\"maxReplicaCount\":\"4\"}}],"
			    "\"labels\":{\"vx-stack\":\"research\",\"vx-resource\":\"eval-pool\"}}");
	assert_string_equal(httpd_header(r, "Authorization"), "Bearer test-token");
	assert_false(op.done);
	assert_string_equal(op.name, op_name);
	assert_string_equal(op.progress_message, "Provisioning");

	/* Followed to done: GET on the operation's name, then the resource is in the response. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(",\"done\":false"), 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_done, 0);
	assert_int_equal(persistent_operation_wait(&f->c, "my-proj", "us-central1", &op, 0, NULL, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	snprintf(want, sizeof(want), "/r-us-central1/v1/%s", op_name);
	assert_string_equal(clienttest_req(&f->t, 1)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 1)->target, want);
	assert_string_equal(clienttest_req(&f->t, 2)->target, want);
	assert_true(op.done);
	assert_string_equal(op.name, op_name); /* the name polled stays */
	assert_true(op.has_resource);
	assert_string_equal(op.resource.name, "projects/123456789/locations/us-central1/persistentResources/pr-1");
	assert_string_equal(op.resource.id, "pr-1");
	assert_int_equal(op.resource.state, PERSISTENT_STATE_RUNNING);
	assert_int_equal(op.resource.n_pools, 1);
	p = persistent_resource_pool(&op.resource, "gpu-pool");
	assert_non_null(p);
	assert_string_equal(p->machine_type, "a3-highgpu-8g");
	assert_string_equal(p->accelerator_type, "NVIDIA_H100_80GB");
	assert_int_equal(p->accelerator_count, 8);
	assert_true(p->has_replica_count);
	assert_int_equal(p->replica_count, 2);
	assert_int_equal(p->used_replica_count, 0);
	assert_false(p->has_autoscaling);
	assert_string_equal(p->boot_disk_type, "pd-ssd");
	assert_int_equal(p->boot_disk_size_gb, 200);
	assert_int_equal(op.resource.start_time_ms, 1735690170000LL);
	assert_string_equal(persistent_resource_label(&op.resource, "team"), "ml");
	persistent_operation_release(&op);
	vx_err_release(&err);
}

/* The answer to a create is lost: sent once, never again; the caller reads before retrying. */
static void test_create_lost_reply_uncertain(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_drop(f->t.s);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(""), 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "eval-pool", spec, NULL, 0, &op, &err),
			 VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 1);
	assert_non_null(strstr(err.msg, "vertex: creating persistent resource \"eval-pool\" in us-central1: "));
	assert_non_null(strstr(err.msg, "the outcome is unknown"));
	assert_null(op.name);

	/* A 503 after sending: as uncertain, and not resent. */
	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":503,\"message\":\"busy\",\"status\":\"UNAVAILABLE\"}}", 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "eval-pool", spec, NULL, 0, &op, &err),
			 VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	/* No labels: the spec as it is. */
	assert_string_equal(clienttest_req(&f->t, 1)->body, spec);

	/* A 200 that is no operation of this project and region: the resource may exist. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"projects/p/locations/europe-west4/operations/1\"}", 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "eval-pool", spec, NULL, 0, &op, &err),
			 VX_EUNCERTAIN);
	assert_string_equal(err.msg, "vertex: creating persistent resource \"eval-pool\" in us-central1: the answer "
			    "names no operation of this project and region: \"projects/p/locations/europe-west4/"
			    "operations/1\"; the outcome is unknown");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "created", 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "eval-pool", spec, NULL, 0, &op, &err),
			 VX_EUNCERTAIN);
	assert_string_equal(err.msg, "vertex: creating persistent resource \"eval-pool\" in us-central1: reading "
			    "operation: response is not a JSON object; the outcome is unknown");
	assert_int_equal(httpd_request_count(f->t.s), 4);
	vx_err_release(&err);
}

/* The same id again: ALREADY_EXISTS says "read it", it may be ours. */
static void test_create_already_exists(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 409, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":409,\"message\":\"PersistentResource eval-pool already exists.\","
		      "\"status\":\"ALREADY_EXISTS\"}}", 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "eval-pool", spec, lbls, 2, &op, &err),
			 VX_ECONFLICT);
	assert_string_equal(err.msg, "vertex: creating persistent resource \"eval-pool\" in us-central1: "
			    "ALREADY_EXISTS: PersistentResource eval-pool already exists.; it may be ours, made by "
			    "an earlier create whose answer was lost: read it and check its labels");
	assert_int_equal(httpd_request_count(f->t.s), 1);
	vx_err_release(&err);
}

static void test_create_rejects_bad_input(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char *const bad_ids[] = {
		"", "Pool", "1pool", "pool-", "a/b", "pool?x=1", "a..b",
		"a234567890123456789012345678901234567890123456789012345678901234",
	};
	static const struct vx_label nokey[] = { L("", "x") };
	size_t i;

	for (i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++)
		assert_int_equal(persistent_create(&f->c, "p", "us-central1", bad_ids[i], spec, NULL, 0, &op, &err),
				 VX_EINVAL);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", NULL, spec, NULL, 0, &op, &err), VX_EINVAL);
	assert_int_equal(persistent_create(&f->c, "p/../x", "us-central1", "a", spec, NULL, 0, &op, &err), VX_EINVAL);
	assert_int_equal(persistent_create(&f->c, "p", "us central1", "a", spec, NULL, 0, &op, &err), VX_EINVAL);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "a", "[1]", NULL, 0, &op, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: creating persistent resource \"a\" in us-central1: the persistent "
			    "resource spec is not a JSON object");
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "a", "{\"labels\":[]}", NULL, 0, &op, &err),
			 VX_EINVAL);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1", "a", spec, nokey, 1, &op, &err), VX_EINVAL);
	/* 63 characters is the most. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(""), 0);
	assert_int_equal(httpd_request_count(f->t.s), 0);
	assert_int_equal(persistent_create(&f->c, "p", "us-central1",
					   "a23456789012345678901234567890123456789012345678901234567890123", spec,
					   NULL, 0, &op, &err), 0);
	persistent_operation_release(&op);
	vx_err_release(&err);
}

/* ---- body ---- */

static void test_body_merges_labels_drops_name(void **state)
{
	struct vx_err err = VX_ERR_INIT;
	char *body = NULL;

	(void)state;
	assert_int_equal(persistent_body(&body, "{\"name\":\"projects/x/locations/y/persistentResources/z\","
					 "\"displayName\":\"d\",\"labels\":{\"team\":\"ml\",\"vx-stack\":\"old\"}}",
					 lbls, 2, &err), 0);
	assert_string_equal(body, "{\"displayName\":\"d\",\"labels\":{\"team\":\"ml\",\"vx-stack\":\"research\","
			    "\"vx-resource\":\"eval-pool\"}}");
	free(body);
	assert_int_equal(persistent_body(&body, NULL, NULL, 0, &err), VX_EINVAL);
	assert_null(body);
	vx_err_release(&err);
}

/* ---- get ---- */

static void test_get_and_not_found(void **state)
{
	struct fx *f = *state;
	struct persistent_resource r = PERSISTENT_RESOURCE_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"projects/123/locations/us-central1/persistentResources/eval-pool\",\"state\":\"ERROR\","
		      "\"error\":{\"code\":8,\"message\":\"Resources are insufficient in region: us-central1.\"},"
		      "\"network\":\"projects/123/global/networks/default\",\"encryptionSpec\":{\"kmsKeyName\":\"k\"},"
		      "\"resourcePools\":[{\"id\":\"l4s\",\"replicaCount\":\"2\",\"autoscalingSpec\":{\"minReplicaCount\":\"1\","
		      "\"maxReplicaCount\":4}}]}", 0);
	assert_int_equal(persistent_get(&f->c, name, &r, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/v1/projects/123/locations/us-central1/persistentResources/eval-pool");
	assert_int_equal(r.state, PERSISTENT_STATE_ERROR);
	assert_string_equal(r.state_name, "ERROR");
	assert_int_equal(r.error_code, 8);
	assert_string_equal(r.error_message, "Resources are insufficient in region: us-central1.");
	assert_string_equal(r.network, "projects/123/global/networks/default");
	assert_string_equal(r.kms_key_name, "k");
	assert_true(r.pools[0].has_autoscaling);
	assert_int_equal(r.pools[0].min_replica_count, 1);
	assert_int_equal(r.pools[0].max_replica_count, 4);
	assert_non_null(r.json);
	persistent_resource_release(&r);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":404,\"message\":\"not there\",\"status\":\"NOT_FOUND\"}}", 0);
	assert_int_equal(persistent_get(&f->c, name, &r, &err), VX_ENOTFOUND);
	assert_non_null(strstr(err.msg, "vertex: reading persistent resource projects/123/locations/us-central1/"
			       "persistentResources/eval-pool: NOT_FOUND: not there"));
	/* Names that are not this collection's never reach the server. */
	assert_int_equal(persistent_get(&f->c, "projects/1/locations/../persistentResources/a", &r, &err), VX_EINVAL);
	assert_int_equal(persistent_get(&f->c, "projects/1/locations/r/customJobs/1", &r, &err), VX_EINVAL);
	assert_int_equal(persistent_get(&f->c, "projects/1/locations/r/persistentResources/a?x=1", &r, &err),
			 VX_EINVAL);
	assert_int_equal(persistent_get(&f->c, "projects/1/locations/r/persistentResources/a/b", &r, &err),
			 VX_EINVAL);
	assert_int_equal(persistent_get(&f->c, NULL, &r, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	vx_err_release(&err);
}

/* ---- list ---- */

static void test_list_all_pages(void **state)
{
	struct fx *f = *state;
	struct persistent_list l = PERSISTENT_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"persistentResources\":[{\"name\":\"projects/p/locations/us-central1/persistentResources/a\","
		      "\"state\":\"PROVISIONING\"},{\"name\":\"projects/p/locations/us-central1/persistentResources/b\","
		      "\"state\":7}],\"nextPageToken\":\"t1\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"persistentResources\":[{\"name\":\"projects/123/locations/us-central1/persistentResources/c\"}],"
		      "\"nextPageToken\":\"t/2+=\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "us-central1", 2, &l, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 3);
	assert_string_equal(clienttest_req(&f->t, 0)->target,
			    "/v1/projects/p/locations/us-central1/persistentResources?pageSize=2");
	assert_string_equal(clienttest_req(&f->t, 1)->target,
			    "/v1/projects/p/locations/us-central1/persistentResources?pageSize=2&pageToken=t1");
	assert_string_equal(clienttest_req(&f->t, 2)->target,
			    "/v1/projects/p/locations/us-central1/persistentResources?pageSize=2&pageToken=t%2F2%2B%3D");
	assert_int_equal(l.n, 3);
	assert_int_equal(l.items[0].state, PERSISTENT_STATE_PROVISIONING);
	assert_int_equal(l.items[1].state, PERSISTENT_STATE_UPDATING);
	assert_string_equal(l.items[1].state_name, "UPDATING");
	assert_string_equal(l.items[2].id, "c");
	persistent_list_release(&l);

	/* No page size: none asked for. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "europe-west4", 0, &l, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 3)->target,
			    "/v1/projects/p/locations/europe-west4/persistentResources");
	assert_int_equal(l.n, 0);
	vx_err_release(&err);
}

/* Page tokens that loop or never end stop the list; a bad page releases what was read. */
static void test_list_bad_pages(void **state)
{
	struct fx *f = *state;
	struct persistent_list l = PERSISTENT_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"a\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"b\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"nextPageToken\":\"a\"}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "us-central1", 0, &l, &err), VX_EAPI);
	assert_string_equal(err.msg, "vertex: listing persistent resources in us-central1: page 4 repeats the page "
			    "token of page 2; stopped (the server's pages loop)");

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"persistentResources\":[{\"name\":\"projects/p/locations/r/persistentResources/a\"}],"
		      "\"nextPageToken\":\"x\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"persistentResources\":{\"name\":\"b\"}}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "r", 0, &l, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: listing persistent resources in r: reading persistent resource list: "
			    "persistentResources is not an array");
	assert_int_equal(l.n, 0);
	assert_null(l.items);

	httpd_respond(f->t.s, 400, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":400,\"message\":\"Invalid page token.\",\"status\":\"INVALID_ARGUMENT\"}}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "r", 0, &l, &err), VX_EAPI);
	assert_non_null(strstr(err.msg, "vertex: listing persistent resources in r: INVALID_ARGUMENT: Invalid page token."));
	assert_int_equal(persistent_list(&f->c, "p", "r/x", 0, &l, &err), VX_EINVAL);
	vx_err_release(&err);
}

/* A listed resource with a name vx must not act on is left out, with a warning. */
static void test_list_drops_invalid_names(void **state)
{
	struct fx *f = *state;
	struct persistent_list l = PERSISTENT_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char want[] =
		"warn: vertex: listing persistent resources in us-central1: ignored a resource listed with an invalid "
		"name \"projects/p/locations/us-central1/persistentResources/a\xef\xbf\xbd" "evil\" (not "
		"projects/p/locations/us-central1/persistentResources/ID); it is neither adopted nor changed\n"
		"warn: vertex: listing persistent resources in us-central1: ignored a resource listed with an invalid "
		"name \"projects/p/locations/us-central1/persistentResources/../../x\" (not "
		"projects/p/locations/us-central1/persistentResources/ID); it is neither adopted nor changed\n"
		"warn: vertex: listing persistent resources in us-central1: ignored a resource listed with an invalid "
		"name \"projects/p/locations/europe-west4/persistentResources/b\" (not "
		"projects/p/locations/us-central1/persistentResources/ID); it is neither adopted nor changed\n"
		"warn: vertex: listing persistent resources in us-central1: ignored a resource listed with an invalid "
		"name \"\" (not projects/p/locations/us-central1/persistentResources/ID); it is neither adopted nor "
		"changed\n"
		"warn: vertex: listing persistent resources in us-central1: ignored a resource listed with an invalid "
		"name \"projects/p/locations/us-central1/persistentResources/c?[2J\" (not "
		"projects/p/locations/us-central1/persistentResources/ID); it is neither adopted nor changed\n";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"persistentResources\":[{\"name\":\"projects/p/locations/us-central1/persistentResources/ok\"},"
		      "{\"name\":\"projects/p/locations/us-central1/persistentResources/a\\u0000evil\"},"
		      "{\"name\":\"projects/p/locations/us-central1/persistentResources/../../x\"},"
		      "{\"name\":\"projects/p/locations/europe-west4/persistentResources/b\"},"
		      "{\"displayName\":\"no name\"},"
		      "{\"name\":\"projects/p/locations/us-central1/persistentResources/c\\u001b[2J\"},"
		      "{\"name\":\"projects/other/locations/us-central1/persistentResources/d\"},"
		      "{\"name\":\"projects/42/locations/us-central1/persistentResources/e\"}]}", 0);
	assert_int_equal(persistent_list(&f->c, "p", "us-central1", 0, &l, &err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.items[0].name, "projects/p/locations/us-central1/persistentResources/ok");
	assert_string_equal(l.items[1].name, "projects/42/locations/us-central1/persistentResources/e");
	/* "projects/other/..." is another project's: dropped with its own line. */
	assert_non_null(f->t.log);
	assert_non_null(strstr(f->t.log, "projects/other/locations/us-central1/persistentResources/d"));
	assert_memory_equal(f->t.log, want, sizeof(want) - 1);
	persistent_list_release(&l);
	vx_err_release(&err);
}

/* ---- update ---- */

static void test_update_exact_request(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(""), 0);
	assert_int_equal(persistent_update(&f->c, name, PERSISTENT_UPDATE_POOLS | PERSISTENT_UPDATE_LABELS, spec, lbls,
					   2, &op, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "PATCH");
	assert_string_equal(clienttest_req(&f->t, 0)->target,
			    "/v1/projects/123/locations/us-central1/persistentResources/eval-pool"
			    "?updateMask=resourcePools%2Clabels");
	assert_string_equal(clienttest_req(&f->t, 0)->body,
			    "{\"resourcePools\":[{\"id\":\"l4s\",\"machineSpec\":{\"machineType\":\"g2-standard-8\","
			    "\"acceleratorType\":\"NVIDIA_L4\",\"acceleratorCount\":1},\"replicaCount\":\"2\","
			    "\"autoscalingSpec\":{\"minReplicaCount\":\"1\",\"maxReplicaCount\":\"4\"}}],"
			    "\"labels\":{\"vx-stack\":\"research\",\"vx-resource\":\"eval-pool\"}}");
	assert_string_equal(op.name, op_name);
	persistent_operation_release(&op);

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(""), 0);
	assert_int_equal(persistent_update(&f->c, name, PERSISTENT_UPDATE_LABELS, spec, lbls, 2, &op, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 1)->target,
			    "/v1/projects/123/locations/us-central1/persistentResources/eval-pool?updateMask=labels");
	persistent_operation_release(&op);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(""), 0);
	assert_int_equal(persistent_update(&f->c, name, PERSISTENT_UPDATE_POOLS, spec, NULL, 0, &op, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 2)->target,
			    "/v1/projects/123/locations/us-central1/persistentResources/eval-pool"
			    "?updateMask=resourcePools");
	persistent_operation_release(&op);

	/* Nothing, or a field it cannot update in place: refused, nothing sent. */
	assert_int_equal(persistent_update(&f->c, name, 0, spec, NULL, 0, &op, &err), VX_EINVAL);
	assert_string_equal(err.msg, "vertex: updating persistent resource projects/123/locations/us-central1/"
			    "persistentResources/eval-pool: no field to update, or one that cannot be updated in place");
	assert_int_equal(persistent_update(&f->c, name, 1u << 5, spec, NULL, 0, &op, &err), VX_EINVAL);
	assert_int_equal(persistent_update(&f->c, "projects/1/locations/r/customJobs/1", PERSISTENT_UPDATE_LABELS, spec,
					   NULL, 0, &op, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 3);

	/* Sent once: a lost reply is uncertain. */
	httpd_drop(f->t.s);
	assert_int_equal(persistent_update(&f->c, name, PERSISTENT_UPDATE_POOLS, spec, NULL, 0, &op, &err),
			 VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 4);
	vx_err_release(&err);
}

/* ---- delete, and operations that fail or never finish ---- */

static void test_delete_and_wait(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	int i, found = 0;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"projects/123/locations/us-central1/operations/9\",\"metadata\":{\"@type\":"
		      "\"type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata\"}}", 0);
	assert_int_equal(persistent_delete(&f->c, name, &op, &err), 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "DELETE");
	assert_string_equal(clienttest_req(&f->t, 0)->target,
			    "/v1/projects/123/locations/us-central1/persistentResources/eval-pool");
	assert_int_equal(clienttest_req(&f->t, 0)->body_len, 0);
	httpd_respond_n(f->t.s, 3, 200, CLIENTTEST_JSON_HDR, "{\"done\":false}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"projects/123/locations/us-central1/operations/9\",\"done\":true,\"response\":"
		      "{\"@type\":\"type.googleapis.com/google.protobuf.Empty\"}}", 0);
	f->t.nsleeps = 0;
	assert_int_equal(persistent_operation_wait(&f->c, "123", "us-central1", &op, 0, NULL, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 5);
	assert_string_equal(clienttest_req(&f->t, 4)->target, "/v1/projects/123/locations/us-central1/operations/9");
	assert_false(op.has_resource);
	/* 1 s, x1.3. */
	for (i = 0; i + 2 < f->t.nsleeps; i++)
		if (f->t.sleeps[i] == 1000 && f->t.sleeps[i + 1] == 1300 && f->t.sleeps[i + 2] == 1690)
			found = 1;
	assert_true(found);
	persistent_operation_release(&op);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR,
		      "{\"error\":{\"code\":404,\"message\":\"gone\",\"status\":\"NOT_FOUND\"}}", 0);
	assert_int_equal(persistent_delete(&f->c, name, &op, &err), VX_ENOTFOUND);
	vx_err_release(&err);
}

static void test_operation_fails(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const struct {
		int code;
		int rc;
		const char *name;
	} cases[] = {
		{ 8, VX_EAPI, "RESOURCE_EXHAUSTED" }, { 3, VX_EINVAL, "INVALID_ARGUMENT" },
		{ 9, VX_EINVAL, "FAILED_PRECONDITION" }, { 5, VX_ENOTFOUND, "NOT_FOUND" },
		{ 6, VX_ECONFLICT, "ALREADY_EXISTS" }, { 7, VX_EDENIED, "PERMISSION_DENIED" },
		{ 13, VX_EAPI, "INTERNAL" }, { 99, VX_EAPI, "code 99" },
	};
	char body[512], want[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		op.name = strdup(op_name);
		assert_non_null(op.name);
		snprintf(body, sizeof(body), "{\"name\":\"%s\",\"done\":true,\"error\":{\"code\":%d,"
			 "\"message\":\"Resources are\\u001b[2J insufficient\"}}", op_name, cases[i].code);
		httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, body, 0);
		assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 0, "ctx", &err), cases[i].rc);
		snprintf(want, sizeof(want), "ctx: operation %s failed: %s: Resources are?[2J insufficient", op_name,
			 cases[i].name);
		assert_string_equal(err.msg, want);
		assert_true(op.done);
		assert_int_equal(op.error_code, cases[i].code);
		persistent_operation_release(&op);
	}
	/* Already done with an error when returned: no poll at all. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"name\":\"x\",\"error\":{\"code\":9,\"message\":\"no\"}}", 0);
	assert_int_equal(persistent_delete(&f->c, name, &op, &err), 0);
	assert_true(op.done);
	assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 0, "ctx", &err), VX_EINVAL);
	assert_string_equal(err.msg, "ctx: operation x failed: FAILED_PRECONDITION: no");
	assert_int_equal(httpd_request_count(f->t.s), sizeof(cases) / sizeof(cases[0]) + 1);
	persistent_operation_release(&op);
	vx_err_release(&err);
}

static void test_operation_bounds(void **state)
{
	struct fx *f = *state;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	static const char *const bad[] = {
		"../../x", "projects/p/locations/us-central1/operations/../../y",
		"projects/p/locations/europe-west4/operations/1", "projects/other/locations/us-central1/operations/1",
		"projects/p/locations/us-central1/operations/1?x", "projects/p/locations/us-central1/customJobs/1/operations/1",
		"projects/p/locations/us-central1/operations/", "projects/p/locations/us-central1/operations/1/2",
	};
	size_t i;

	/* Never done: bounded by the deadline (virtual time); the name stays to wait again. */
	op.name = strdup(op_name);
	assert_non_null(op.name);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, op_json(",\"done\":false"), 0);
	assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 300000, "ctx", &err), VX_ERETRY);
	assert_string_equal(err.msg, "ctx: operation projects/123/locations/us-central1/persistentResources/eval-pool/"
			    "operations/77 not done in time");
	assert_string_equal(op.name, op_name);
	persistent_operation_release(&op);

	/* Names from the server that are not this service's operations never go into a URL. */
	httpd_stop(f->t.s);
	assert_int_equal(httpd_start(&f->t.s), 0);
	snprintf(f->t.base, sizeof(f->t.base), "%s/v1/", httpd_url(f->t.s));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		op.name = strdup(bad[i]);
		assert_non_null(op.name);
		assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 0, "ctx", &err), VX_EAPI);
		assert_string_equal(err.msg, "ctx: the operation has no usable name");
		persistent_operation_release(&op);
	}
	assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 0, "ctx", &err), VX_EAPI);
	assert_int_equal(httpd_request_count(f->t.s), 0);

	/* Interrupted. */
	op.name = strdup(op_name);
	assert_non_null(op.name);
	{
		volatile sig_atomic_t stop = 1;

		f->t.ctx.interrupted = &stop;
		assert_int_equal(persistent_operation_wait(&f->c, "p", "us-central1", &op, 0, "ctx", &err),
				 VX_ECANCELED);
		f->t.ctx.interrupted = NULL;
	}
	persistent_operation_release(&op);
	vx_err_release(&err);
}

/* ---- names, states, parsers ---- */

static void test_names(void **state)
{
	(void)state;
	assert_true(persistent_name_check(name, NULL, NULL));
	assert_true(persistent_name_check(name, "my-proj", "us-central1"));
	assert_true(persistent_name_check("projects/my-proj/locations/us-central1/persistentResources/a", "my-proj", NULL));
	assert_false(persistent_name_check("projects/other/locations/us-central1/persistentResources/a", "my-proj", NULL));
	assert_false(persistent_name_check(name, NULL, "europe-west4"));
	assert_false(persistent_name_check("projects/p/locations/r/persistentResources/A", NULL, NULL));
	assert_false(persistent_name_check("projects/p/locations/r/persistentResources/a/", NULL, NULL));
	assert_false(persistent_name_check("projects/p/locations/R/persistentResources/a", NULL, NULL));
	assert_false(persistent_name_check("projects//locations/r/persistentResources/a", NULL, NULL));
	assert_false(persistent_name_check("projects/../locations/r/persistentResources/a", NULL, NULL));
	assert_false(persistent_name_check("/projects/p/locations/r/persistentResources/a", NULL, NULL));
	assert_false(persistent_name_check(NULL, NULL, NULL));
	assert_true(persistent_operation_name_check(op_name, "p", "us-central1"));
	assert_true(persistent_operation_name_check("projects/p/locations/r/operations/op-1", "p", "r"));
	assert_true(persistent_id_ok("a"));
	assert_true(persistent_id_ok("a-1"));
	assert_false(persistent_id_ok("a_1"));
}

static void test_states(void **state)
{
	(void)state;
	assert_int_equal(persistent_state_parse("RUNNING"), PERSISTENT_STATE_RUNNING);
	assert_int_equal(persistent_state_parse("7"), PERSISTENT_STATE_UPDATING);
	assert_int_equal(persistent_state_parse("2"), PERSISTENT_STATE_UNKNOWN);
	assert_int_equal(persistent_state_parse("8"), PERSISTENT_STATE_UNKNOWN);
	assert_int_equal(persistent_state_parse("3x"), PERSISTENT_STATE_UNKNOWN);
	assert_int_equal(persistent_state_parse("running"), PERSISTENT_STATE_UNKNOWN);
	assert_int_equal(persistent_state_parse(NULL), PERSISTENT_STATE_UNKNOWN);
	assert_string_equal(persistent_state_name(PERSISTENT_STATE_REBOOTING), "REBOOTING");
	assert_string_equal(persistent_state_name((enum persistent_state)2), "STATE_UNKNOWN");
	assert_string_equal(persistent_state_name(PERSISTENT_STATE_UNKNOWN), "STATE_UNKNOWN");
	assert_string_equal(persistent_state_name((enum persistent_state)-1), "STATE_UNKNOWN");
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "\"x\"", "{", "{\"name\":", "{\"name\":1,\"displayName\":[],\"state\":{}}",
		"{\"labels\":[1,2],\"error\":\"x\",\"resourcePools\":{\"id\":\"a\"}}",
		"{\"resourcePools\":[1,null,{\"id\":7,\"machineSpec\":[],\"replicaCount\":\"-1\","
		"\"autoscalingSpec\":5,\"diskSpec\":{\"bootDiskSizeGb\":1e300}}]}",
		"{\"state\":1e308,\"createTime\":12,\"error\":{\"code\":1e300,\"message\":7}}",
		"{\"state\":-1,\"error\":{\"code\":\"99999999999999999999\"}}",
		"{\"state\":\"NEW_THING\",\"labels\":{\"\":\"\"}}",
		"{\"done\":\"yes\",\"response\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1."
		"PersistentResource\",\"resourcePools\":\"x\"},\"metadata\":[]}",
		"{\"done\":true,\"response\":{\"@type\":\"type.googleapis.com/google.cloud.aiplatform.v1."
		"PersistentResource\",\"name\":\"projects/p/locations/r/persistentResources/x\\u0000y\"}}",
		"{\"name\":\"\\u0000x\",\"displayName\":\"\\ud800\"}",
	};
	struct persistent_resource r = PERSISTENT_RESOURCE_INIT;
	struct persistent_list l = PERSISTENT_LIST_INIT;
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *tok = NULL, *big;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		rc = persistent_resource_parse_json(bodies[i], strlen(bodies[i]), &r, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		persistent_resource_release(&r);
		rc = persistent_list_parse_json(bodies[i], strlen(bodies[i]), &l, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		tok = NULL;
		rc = persistent_operation_parse_json(bodies[i], strlen(bodies[i]), &op, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		persistent_operation_release(&op);
	}
	persistent_list_release(&l);
	assert_int_equal(persistent_resource_parse_json(NULL, 0, &r, &err), VX_EINVAL);

	/* Wrong types are absent; a negative count is no count. */
	assert_int_equal(persistent_resource_parse_json(bodies[8], strlen(bodies[8]), &r, &err), 0);
	assert_int_equal(r.n_pools, 1);
	assert_null(r.pools[0].id);
	assert_false(r.pools[0].has_replica_count);
	assert_false(r.pools[0].has_autoscaling);
	assert_int_equal(r.pools[0].boot_disk_size_gb, 0);
	persistent_resource_release(&r);
	assert_int_equal(persistent_resource_parse_json(bodies[9], strlen(bodies[9]), &r, &err), 0);
	assert_int_equal(r.state, PERSISTENT_STATE_UNKNOWN);
	assert_int_equal(r.error_code, 0);
	assert_null(r.error_message);
	persistent_resource_release(&r);
	assert_int_equal(persistent_resource_parse_json(bodies[11], strlen(bodies[11]), &r, &err), 0);
	assert_int_equal(r.state, PERSISTENT_STATE_UNKNOWN);
	assert_string_equal(r.state_name, "NEW_THING");
	persistent_resource_release(&r);
	/* A NUL in a name is not cut short: the name fails the check and has no id. */
	assert_int_equal(persistent_operation_parse_json(bodies[13], strlen(bodies[13]), &op, &err), 0);
	assert_true(op.has_resource);
	assert_null(op.resource.id);
	assert_false(persistent_name_check(op.resource.name, NULL, NULL));
	persistent_operation_release(&op);
	/* "done":"yes" is not done. */
	assert_int_equal(persistent_operation_parse_json(bodies[12], strlen(bodies[12]), &op, &err), 0);
	assert_false(op.done);
	assert_false(op.has_resource);
	persistent_operation_release(&op);

	/* A huge escaped name is read whole and refused by the check, never cut to a valid one. */
	big = malloc(300000);
	assert_non_null(big);
	{
		static const char head[] = "{\"name\":\"projects/p/locations/r/persistentResources/a";

		memcpy(big, head, sizeof(head) - 1);
		for (i = sizeof(head) - 1; i < 299000; i += 6)
			memcpy(big + i, "\\u0061", 6);
		memcpy(big + i, "\"}", 3);
	}
	assert_int_equal(persistent_resource_parse_json(big, strlen(big), &r, &err), 0);
	assert_non_null(r.name);
	assert_null(r.id);
	assert_false(persistent_name_check(r.name, NULL, NULL));
	persistent_resource_release(&r);
	free(big);
	vx_err_release(&err);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_exact_request_and_wait),
		T(test_create_lost_reply_uncertain),
		T(test_create_already_exists),
		T(test_create_rejects_bad_input),
		cmocka_unit_test(test_body_merges_labels_drops_name),
		T(test_get_and_not_found),
		T(test_list_all_pages),
		T(test_list_bad_pages),
		T(test_list_drops_invalid_names),
		T(test_update_exact_request),
		T(test_delete_and_wait),
		T(test_operation_fails),
		T(test_operation_bounds),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_parse_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
