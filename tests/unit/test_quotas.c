/* Unit tests for providers/gcp/quotas: exact requests (create with its id,
 * patch flags and etag, list pages with filter, quota infos), retry classes
 * (create and etag patch never resent), and the parsers on hostile JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "providers/gcp/quotas.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

/* ---- fixture: support/clienttest.h, with the client under test ---- */

CLIENTTEST_FIXTURE(struct quotas_client, "/v1/")

static const char pref_body[] =
	"{\"name\":\"projects/123/locations/global/quotaPreferences/h100-flex\","
	"\"dimensions\":{\"region\":\"us-central1\"},"
	"\"quotaConfig\":{\"preferredValue\":\"16\",\"grantedValue\":\"8\",\"traceId\":\"t-1\","
	"\"requestOrigin\":\"CLOUD_CONSOLE\",\"stateDetail\":\"pending review\",\"annotations\":{}},"
	"\"etag\":\"abc\",\"createTime\":\"2024-05-01T12:00:00Z\",\"updateTime\":\"2024-05-01T12:00:00Z\","
	"\"service\":\"aiplatform.googleapis.com\",\"quotaId\":\"CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion\","
	"\"reconciling\":true,\"justification\":\"training\"}";

static void fill(struct quota_preference *p, struct vx_label *kv)
{
	memset(p, 0, sizeof(*p));
	kv->key = strdup("region");
	kv->value = strdup("us-central1");
	p->service = strdup("aiplatform.googleapis.com");
	p->quota_id = strdup("CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion");
	p->dimensions = kv;
	p->n_dimensions = 1;
	p->preferred_value = 16;
	p->justification = strdup("training");
	p->contact_email = strdup("ml-infra@example.com");
}

static void unfill(struct quota_preference *p)
{
	free(p->dimensions[0].key);
	free(p->dimensions[0].value);
	p->dimensions = NULL;
	p->n_dimensions = 0;
	quota_preference_release(p);
}

static const char want_body[] =
	"{\"service\":\"aiplatform.googleapis.com\",\"quotaId\":\"CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion\","
	"\"dimensions\":{\"region\":\"us-central1\"},\"quotaConfig\":{\"preferredValue\":\"16\"},"
	"\"justification\":\"training\",\"contactEmail\":\"ml-infra@example.com\"}";

static void test_create_exact_request(void **state)
{
	struct fx *f = *state;
	struct quota_preference p, out = QUOTA_PREFERENCE_INIT;
	struct vx_label kv;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;

	fill(&p, &kv);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_body, 0);
	assert_int_equal(quotas_create_preference(&f->c, "my-proj", "h100-flex", &p, &out, &err), 0);
	r = httpd_request(f->t.s, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/v1/projects/my-proj/locations/global/quotaPreferences?quotaPreferenceId=h100-flex");
	assert_string_equal(r->body, want_body);
	assert_string_equal(httpd_header(r, "Authorization"), "Bearer test-token");
	assert_string_equal(out.name, "projects/123/locations/global/quotaPreferences/h100-flex");
	assert_int_equal(out.preferred_value, 16);
	assert_true(out.has_granted_value);
	assert_int_equal(out.granted_value, 8);
	assert_string_equal(out.trace_id, "t-1");
	assert_string_equal(out.request_origin, "CLOUD_CONSOLE");
	assert_string_equal(out.state_detail, "pending review");
	assert_string_equal(out.etag, "abc");
	assert_true(out.reconciling);
	assert_true(out.create_ms == INT64_C(1714564800000) && out.update_ms == INT64_C(1714564800000));
	assert_string_equal(quota_preference_dimension(&out, "region"), "us-central1");
	assert_null(out.contact_email);
	quota_preference_release(&out);

	/* A lost reply, then a 503: resent with the same body (the id makes a
	 * second preference impossible), and the third answer is the one. */
	httpd_drop(f->t.s);
	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_body, 0);
	assert_int_equal(quotas_create_preference(&f->c, "my-proj", "h100-flex", &p, &out, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 4);
	assert_string_equal(httpd_request(f->t.s, 1)->body, httpd_request(f->t.s, 3)->body);
	assert_string_equal(httpd_request(f->t.s, 1)->target, httpd_request(f->t.s, 3)->target);
	quota_preference_release(&out);

	/* Already there (a resend after the first landed, or a preference made
	 * elsewhere): a conflict; the next plan adopts it. */
	httpd_respond(f->t.s, 409, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":409,\"message\":\"exists\",\"status\":\"ALREADY_EXISTS\"}}", 0);
	assert_int_equal(quotas_create_preference(&f->c, "my-proj", "h100-flex", &p, &out, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "quotas: creating quota preference \"h100-flex\": ALREADY_EXISTS: exists");
	assert_int_equal(quotas_create_preference(&f->c, "my-proj", "a/b", &p, &out, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 5);
	unfill(&p);
	vx_err_release(&err);
}

static void test_patch_exact_request(void **state)
{
	struct fx *f = *state;
	struct quota_preference p, out = QUOTA_PREFERENCE_INIT;
	struct vx_label kv;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;

	fill(&p, &kv);
	p.preferred_value = 32;
	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_body, 0);
	/* An upsert is retried. */
	assert_int_equal(quotas_patch_preference(&f->c, "my-proj", "h100-flex", &p, "quotaConfig.preferredValue",
						 QUOTAS_ALLOW_MISSING | QUOTAS_VALIDATE_ONLY, &out, &err), 0);
	assert_int_equal(httpd_request_count(f->t.s), 2);
	r = httpd_request(f->t.s, 1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->target, "/v1/projects/my-proj/locations/global/quotaPreferences/h100-flex"
				       "?updateMask=quotaConfig.preferredValue&allowMissing=true&validateOnly=true");
	assert_non_null(strstr(r->body, "\"quotaConfig\":{\"preferredValue\":\"32\"}"));
	assert_null(strstr(r->body, "\"name\""));
	quota_preference_release(&out);

	/* With an etag: sent once; a stale etag is a conflict. */
	p.etag = strdup("old");
	httpd_respond(f->t.s, 409, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":409,\"message\":\"etag mismatch\",\"status\":\"ABORTED\"}}", 0);
	assert_int_equal(quotas_patch_preference(&f->c, "my-proj", "h100-flex", &p, NULL, 0, &out, &err), VX_ECONFLICT);
	r = httpd_request(f->t.s, 2);
	assert_string_equal(r->target, "/v1/projects/my-proj/locations/global/quotaPreferences/h100-flex");
	assert_non_null(strstr(r->body, "\"etag\":\"old\""));
	assert_string_equal(err.msg, "quotas: updating quota preference \"h100-flex\": ABORTED: etag mismatch");
	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{}", 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, pref_body, 0);
	assert_int_equal(quotas_patch_preference(&f->c, "my-proj", "h100-flex", &p, NULL, 0, &out, &err), VX_EUNCERTAIN);
	assert_int_equal(httpd_request_count(f->t.s), 4);
	unfill(&p);
	vx_err_release(&err);
}

static void test_get_and_list(void **state)
{
	struct fx *f = *state;
	struct quota_preference out = QUOTA_PREFERENCE_INIT;
	struct quota_preference_list l = QUOTA_PREFERENCE_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/1/locations/global/quotaPreferences/q\","
		      "\"quotaConfig\":{\"preferredValue\":\"-1\",\"requestOrigin\":2}}", 0);
	assert_int_equal(quotas_get_preference(&f->c, "my-proj", "q", &out, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "GET");
	assert_string_equal(httpd_request(f->t.s, 0)->target, "/v1/projects/my-proj/locations/global/quotaPreferences/q");
	assert_int_equal(out.preferred_value, -1);
	assert_false(out.has_granted_value); /* absent: not granted yet */
	assert_string_equal(out.request_origin, "AUTO_ADJUSTER");
	quota_preference_release(&out);

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"quotaPreferences\":[{\"quotaId\":\"a\"},{\"quotaId\":\"b\"}],\"nextPageToken\":\"t\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"quotaPreferences\":[{\"quotaId\":\"c\"}],\"unreachable\":[]}", 0);
	assert_int_equal(quotas_list_preferences(&f->c, "my-proj", "reconciling=true", &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[2].quota_id, "c");
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/v1/projects/my-proj/locations/global/quotaPreferences?filter=reconciling%3Dtrue");
	assert_string_equal(httpd_request(f->t.s, 2)->target,
			    "/v1/projects/my-proj/locations/global/quotaPreferences?pageToken=t&filter=reconciling%3Dtrue");
	quota_preference_list_release(&l);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"no\",\"status\":\"NOT_FOUND\"}}", 0);
	assert_int_equal(quotas_get_preference(&f->c, "my-proj", "zz", &out, &err), VX_ENOTFOUND);
	vx_err_release(&err);
}

static const char info_body[] =
	"{\"name\":\"projects/123/locations/global/services/aiplatform.googleapis.com/quotaInfos/"
	"CustomModelTrainingH100GPUsPerProjectPerRegion\",\"quotaId\":\"CustomModelTrainingH100GPUsPerProjectPerRegion\","
	"\"metric\":\"aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus\",\"service\":\"aiplatform.googleapis.com\","
	"\"isPrecise\":true,\"containerType\":\"PROJECT\",\"dimensions\":[\"region\"],\"isFixed\":false,"
	"\"quotaIncreaseEligibility\":{\"isEligible\":true},"
	"\"dimensionsInfos\":[{\"dimensions\":{\"region\":\"us-central1\"},\"details\":{\"value\":\"16\"},"
	"\"applicableLocations\":[\"us-central1\"]},{\"dimensions\":{},\"details\":{\"value\":\"0\",\"rolloutInfo\":"
	"{\"ongoingRollout\":true}},\"applicableLocations\":[\"us-east1\",\"europe-west4\"]}]}";

static void test_quota_infos(void **state)
{
	struct fx *f = *state;
	struct quota_info q = QUOTA_INFO_INIT;
	struct quota_info_list l = QUOTA_INFO_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	int64_t v = -5;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, info_body, 0);
	assert_int_equal(quotas_get_info(&f->c, "my-proj", "aiplatform.googleapis.com",
					 "CustomModelTrainingH100GPUsPerProjectPerRegion", &q, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    "/v1/projects/my-proj/locations/global/services/aiplatform.googleapis.com/quotaInfos/"
			    "CustomModelTrainingH100GPUsPerProjectPerRegion");
	assert_string_equal(q.metric, "aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus");
	assert_true(q.is_precise);
	assert_false(q.is_fixed);
	assert_int_equal(q.n_dimensions, 1);
	assert_string_equal(q.dimensions[0], "region");
	assert_int_equal(q.n_infos, 2);
	assert_int_equal(q.infos[0].value, 16);
	assert_string_equal(q.infos[0].dimensions[0].value, "us-central1");
	assert_int_equal(q.infos[1].n_dimensions, 0);
	assert_int_equal(quota_info_limit_for(&q, "us-central1", &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(quota_info_limit_for(&q, "europe-west4", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(quota_info_limit_for(&q, "asia-east1", &v), VX_ENOTFOUND);
	quota_info_release(&q);

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"quotaInfos\":[{\"quotaId\":\"a\"}],\"nextPageToken\":\"n1\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"quotaInfos\":[{\"quotaId\":\"b\"}],\"nextPageToken\":\"n2\"}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"quotaInfos\":[]}", 0);
	assert_int_equal(quotas_list_infos(&f->c, "my-proj", "aiplatform.googleapis.com", &l, &err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/v1/projects/my-proj/locations/global/services/aiplatform.googleapis.com/quotaInfos");
	assert_string_equal(httpd_request(f->t.s, 3)->target,
			    "/v1/projects/my-proj/locations/global/services/aiplatform.googleapis.com/quotaInfos?pageToken=n2");
	quota_info_list_release(&l);
	vx_err_release(&err);
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "{", "{\"quotaPreferences\":{},\"quotaInfos\":7}",
		"{\"quotaPreferences\":[1,null,{\"dimensions\":[1],\"quotaConfig\":[]}],\"nextPageToken\":[]}",
		"{\"dimensions\":{\"a\":1,\"b\":\"x\"},\"quotaConfig\":{\"preferredValue\":\"12abc\",\"grantedValue\":null,"
		"\"requestOrigin\":{}},\"reconciling\":\"yes\"}",
		"{\"quotaConfig\":{\"preferredValue\":\"9223372036854775808\",\"grantedValue\":1.5,\"requestOrigin\":99}}",
		"{\"dimensionsInfos\":[7,{\"details\":[],\"applicableLocations\":\"us\"},{\"details\":{\"value\":1e30},"
		"\"applicableLocations\":[1,\"x\"],\"dimensions\":{\"k\":[]}}],\"dimensions\":[1,\"r\"]}",
	};
	struct quota_preference p = QUOTA_PREFERENCE_INIT;
	struct quota_preference_list pl = QUOTA_PREFERENCE_LIST_INIT;
	struct quota_info q = QUOTA_INFO_INIT;
	struct quota_info_list ql = QUOTA_INFO_LIST_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *tok = NULL;
	int64_t v;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		const char *b = bodies[i];

		rc = quota_preference_parse_json(b, strlen(b), &p, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		quota_preference_release(&p);
		rc = quota_preference_list_parse_json(b, strlen(b), &pl, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
		rc = quota_info_parse_json(b, strlen(b), &q, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		quota_info_release(&q);
		rc = quota_info_list_parse_json(b, strlen(b), &ql, &tok, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		free(tok);
	}
	quota_preference_list_release(&pl);
	quota_info_list_release(&ql);
	assert_int_equal(quota_preference_parse_json(bodies[6], strlen(bodies[6]), &p, &err), 0);
	assert_int_equal(p.n_dimensions, 1);
	assert_int_equal(p.preferred_value, 0);
	assert_false(p.has_granted_value);
	assert_null(p.request_origin);
	assert_false(p.reconciling);
	quota_preference_release(&p);
	assert_int_equal(quota_preference_parse_json(bodies[7], strlen(bodies[7]), &p, &err), 0);
	assert_int_equal(p.preferred_value, 0);
	assert_false(p.has_granted_value);
	assert_string_equal(p.request_origin, "UNKNOWN");
	quota_preference_release(&p);
	assert_int_equal(quota_info_parse_json(bodies[8], strlen(bodies[8]), &q, &err), 0);
	assert_int_equal(q.n_infos, 2);
	assert_int_equal(q.n_dimensions, 1);
	assert_false(q.infos[1].has_value);
	assert_int_equal(quota_info_limit_for(&q, "x", &v), VX_ENOTFOUND);
	quota_info_release(&q);
	vx_err_release(&err);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_exact_request),
		T(test_patch_exact_request),
		T(test_get_and_list),
		T(test_quota_infos),
		cmocka_unit_test(test_parse_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
