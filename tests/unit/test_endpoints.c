/* Unit tests for providers/gcp/endpoints: defaults, overrides, the loopback rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/endpoints.h"
#include "util/ctx.h"
#include "util/err.h"

/* Loads with the process's environment, which these tests set. */
static int load(struct gcp_endpoints *e, struct vx_err *err)
{
	struct vx_ctx ctx;

	vx_ctx_init(&ctx);
	return gcp_endpoints_load(e, &ctx, err);
}

static const char *const vars[] = {
	"CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
	"CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
	"CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS",
	"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
};

static int clear_env(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

static void expect_url(const struct gcp_endpoints *e, enum gcp_api api, const char *region, const char *path,
		       const char *want)
{
	struct vx_err err = VX_ERR_INIT;
	char *url = NULL;

	assert_int_equal(gcp_endpoints_url(&url, e, api, region, path, &err), 0);
	assert_string_equal(url, want);
	free(url);
	vx_err_release(&err);
}

static void test_defaults(void **state)
{
	struct gcp_endpoints e = GCP_ENDPOINTS_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *url = NULL;

	(void)state;
	assert_int_equal(load(&e, &err), 0);
	expect_url(&e, GCP_API_AIPLATFORM, "us-central1", "projects/p/locations/us-central1/customJobs",
		   "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/customJobs");
	expect_url(&e, GCP_API_AIPLATFORM, "global", "projects/p/locations/global/operations/1",
		   "https://aiplatform.googleapis.com/v1/projects/p/locations/global/operations/1");
	expect_url(&e, GCP_API_COMPUTE, NULL, "/projects/p/zones/us-central1-a/reservations",
		   "https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a/reservations");
	expect_url(&e, GCP_API_CLOUDQUOTAS, "ignored", "projects/p/locations/global/quotaPreferences",
		   "https://cloudquotas.googleapis.com/v1/projects/p/locations/global/quotaPreferences");
	expect_url(&e, GCP_API_STORAGE, NULL, "b/bucket/o/state.json",
		   "https://storage.googleapis.com/storage/v1/b/bucket/o/state.json");
	expect_url(&e, GCP_API_STORAGE_UPLOAD, NULL, "b/bucket/o?uploadType=media",
		   "https://storage.googleapis.com/upload/storage/v1/b/bucket/o?uploadType=media");
	assert_int_equal(e.overridden[GCP_API_COMPUTE], 0);

	/* A region must be a region name: it becomes part of a host name. */
	assert_int_equal(gcp_endpoints_url(&url, &e, GCP_API_AIPLATFORM, NULL, "x", &err), VX_EINVAL);
	assert_string_equal(err.msg, "aiplatform: \"\" is not a region name (e.g. us-central1)");
	assert_int_equal(gcp_endpoints_url(&url, &e, GCP_API_AIPLATFORM, "evil.com/x", "x", &err), VX_EINVAL);
	assert_string_equal(err.msg, "aiplatform: \"evil.com/x\" is not a region name (e.g. us-central1)");
	assert_null(url);
	assert_string_equal(gcp_api_name(GCP_API_CLOUDQUOTAS), "cloudquotas");
	assert_string_equal(gcp_api_override_var(GCP_API_STORAGE), "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE");
	gcp_endpoints_release(&e);
	vx_err_release(&err);
}

static void test_overrides(void **state)
{
	struct gcp_endpoints e = GCP_ENDPOINTS_INIT;
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM", "http://127.0.0.1:8089/{region}/v1", 1);
	setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE", "http://localhost:8089/compute/v1/", 1);
	setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS", "https://quotas.example.com/v1", 1);
	setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE", "http://[::1]:9000/storage/v1", 1);
	assert_int_equal(load(&e, &err), 0);
	expect_url(&e, GCP_API_AIPLATFORM, "europe-west4", "projects/p/locations/europe-west4/customJobs",
		   "http://127.0.0.1:8089/europe-west4/v1/projects/p/locations/europe-west4/customJobs");
	/* An override is used as is, even for "global". */
	expect_url(&e, GCP_API_AIPLATFORM, "global", "x", "http://127.0.0.1:8089/global/v1/x");
	expect_url(&e, GCP_API_COMPUTE, NULL, "projects/p/aggregated/reservations",
		   "http://localhost:8089/compute/v1/projects/p/aggregated/reservations");
	expect_url(&e, GCP_API_CLOUDQUOTAS, NULL, "projects/p", "https://quotas.example.com/v1/projects/p");
	expect_url(&e, GCP_API_STORAGE, NULL, "b/x/o/y", "http://[::1]:9000/storage/v1/b/x/o/y");
	expect_url(&e, GCP_API_STORAGE_UPLOAD, NULL, "b/x/o", "http://[::1]:9000/upload/storage/v1/b/x/o");
	assert_int_equal(e.overridden[GCP_API_STORAGE_UPLOAD], 1);
	gcp_endpoints_release(&e);

	/* A storage override without /storage/v1/ gets /upload before its path. */
	setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE", "http://127.0.0.1:9000/gcs", 1);
	assert_int_equal(load(&e, &err), 0);
	expect_url(&e, GCP_API_STORAGE_UPLOAD, NULL, "b/x/o", "http://127.0.0.1:9000/upload/gcs/b/x/o");
	gcp_endpoints_release(&e);
	clear_env(NULL);
	vx_err_release(&err);
}

static void expect_load_error(const char *var, const char *value, const char *want)
{
	struct gcp_endpoints e = GCP_ENDPOINTS_INIT;
	struct vx_err err = VX_ERR_INIT;

	setenv(var, value, 1);
	assert_int_equal(load(&e, &err), VX_EINVAL);
	assert_string_equal(err.msg, want);
	assert_null(e.base[0]);
	unsetenv(var);
	vx_err_release(&err);
}

static void test_loopback_rule(void **state)
{
	(void)state;
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE", "http://10.0.0.1:8080/compute/v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE: http:// is only allowed for loopback hosts "
			  "(127.0.0.0/8, localhost, [::1]), not \"10.0.0.1\"; use https://");
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM", "http://{region}-aiplatform.example.com/v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM: http:// is only allowed for loopback hosts "
			  "(127.0.0.0/8, localhost, [::1]), not \"{region}-aiplatform.example.com\"; use https://");
	/* Looks like loopback, is not. */
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE", "http://127.0.0.1.evil.com/storage/v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE: http:// is only allowed for loopback hosts "
			  "(127.0.0.0/8, localhost, [::1]), not \"127.0.0.1.evil.com\"; use https://");
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS", "http://user@127.0.0.1/v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS: user info in the URL is not supported");
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS", "ftp://127.0.0.1/v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS: \"ftp://127.0.0.1/v1/\" is not an https:// URL");
	expect_load_error("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS", "https:///v1/",
			  "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS: no host in \"https:///v1/\"");

	assert_true(gcp_host_is_loopback("127.0.0.1"));
	assert_true(gcp_host_is_loopback("127.255.3.4"));
	assert_true(gcp_host_is_loopback("localhost"));
	assert_true(gcp_host_is_loopback("LOCALHOST"));
	assert_true(gcp_host_is_loopback("[::1]"));
	assert_false(gcp_host_is_loopback("128.0.0.1"));
	assert_false(gcp_host_is_loopback("127.0.0"));
	assert_false(gcp_host_is_loopback("127.0.0.256"));
	assert_false(gcp_host_is_loopback("127.0.0.1.nip.io"));
	assert_false(gcp_host_is_loopback("localhost.evil.com"));
	assert_false(gcp_host_is_loopback("[::2]"));
	assert_false(gcp_host_is_loopback(NULL));
	assert_int_equal(gcp_endpoints_check_url("http://127.0.0.1:1/", "x", NULL), 0);
	assert_int_equal(gcp_endpoints_check_url("HTTPS://example.com", "x", NULL), 0);
	assert_int_equal(gcp_endpoints_check_url("https://example.com/v1/?a=b", "x", NULL), VX_EINVAL);
	assert_int_equal(gcp_endpoints_check_url("https://exa mple.com/", "x", NULL), VX_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, clear_env),
		cmocka_unit_test_setup(test_overrides, clear_env),
		cmocka_unit_test_setup(test_loopback_rule, clear_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
