/* Unit tests for providers/gcp/iamtest: the requests vx doctor sends, and answers taken as untrusted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/endpoints.h"
#include "providers/gcp/iamtest.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/err.h"

struct fx {
	struct clienttest t; /* first: clienttest_teardown frees the fixture */
	struct gcp_endpoints ep;
	struct iamtest_client c;
	char crm[200], iam[200], storage[200], su[200];
};

static int setup(void **state)
{
	struct fx *f = clienttest_new(sizeof(*f), "/");

	snprintf(f->crm, sizeof(f->crm), "%s/v3/", httpd_url(f->t.s));
	snprintf(f->iam, sizeof(f->iam), "%s/iam/v1/", httpd_url(f->t.s));
	snprintf(f->storage, sizeof(f->storage), "%s/storage/v1/", httpd_url(f->t.s));
	snprintf(f->su, sizeof(f->su), "%s/serviceusage/v1/", httpd_url(f->t.s));
	f->ep.base[GCP_API_CLOUDRESOURCEMANAGER] = f->crm;
	f->ep.base[GCP_API_IAM] = f->iam;
	f->ep.base[GCP_API_STORAGE] = f->storage;
	f->ep.base[GCP_API_SERVICEUSAGE] = f->su;
	f->c.http = f->t.h;
	f->c.ctx = &f->t.ctx;
	f->c.ep = &f->ep;
	*state = f;
	return 0;
}

static const char *const perms[] = { "aiplatform.customJobs.list", "aiplatform.customJobs.create" };

static void test_project_asks_and_takes_only_what_it_asked(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	int held[2] = { -1, -1 };

	/* The answer holds a permission not asked for and a number: both ignored. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR,
		      "{\"permissions\":[\"owner.everything\",7,\"aiplatform.customJobs.create\"]}", 0);
	assert_int_equal(iamtest_permissions(&f->c, IAMTEST_PROJECT, "my-proj", perms, 2, held, &err), 0);
	assert_int_equal(held[0], 0);
	assert_int_equal(held[1], 1);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "POST");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/v3/projects/my-proj:testIamPermissions");
	assert_string_equal(clienttest_req(&f->t, 0)->body,
			    "{\"permissions\":[\"aiplatform.customJobs.list\",\"aiplatform.customJobs.create\"]}");
	vx_err_release(&err);
}

static void test_bucket_and_service_account(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	const char *sp[] = { "storage.objects.get", "storage.objects.create" };
	const char *act[] = { "iam.serviceAccounts.actAs" };
	int held[2] = { -1, -1 };

	/* Google omits "permissions" when none is held. */
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"kind\":\"storage#testIamPermissionsResponse\"}", 0);
	assert_int_equal(iamtest_permissions(&f->c, IAMTEST_BUCKET, "bkt", sp, 2, held, &err), 0);
	assert_int_equal(held[0] + held[1], 0);
	assert_string_equal(clienttest_req(&f->t, 0)->method, "GET");
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/storage/v1/b/bkt/iam/testPermissions"
			    "?permissions=storage.objects.get&permissions=storage.objects.create");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"permissions\":[\"iam.serviceAccounts.actAs\"]}", 0);
	assert_int_equal(iamtest_permissions(&f->c, IAMTEST_SERVICE_ACCOUNT, "sa@p.iam.gserviceaccount.com", act, 1,
					     held, &err), 0);
	assert_int_equal(held[0], 1);
	assert_string_equal(clienttest_req(&f->t, 1)->target,
			    "/iam/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:testIamPermissions");
	vx_err_release(&err);
}

static void test_names_are_checked_before_sending(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	int held[2];
	int on = -1;

	assert_int_equal(iamtest_permissions(&f->c, IAMTEST_PROJECT, "p/../x", perms, 2, held, &err), VX_EINVAL);
	assert_string_equal(err.msg, "doctor: testing permissions on project p/../x: not a valid project name");
	assert_int_equal(iamtest_permissions(&f->c, IAMTEST_PROJECT, "p", perms, 0, held, &err), VX_EINVAL);
	assert_int_equal(iamtest_service_enabled(&f->c, "p", "a b", &on, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 0);
	vx_err_release(&err);
}

static void test_service_state(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	int on = -1;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"projects/1/services/x\",\"state\":\"DISABLED\"}", 0);
	assert_int_equal(iamtest_service_enabled(&f->c, "p", "cloudquotas.googleapis.com", &on, &err), 0);
	assert_int_equal(on, 0);
	assert_string_equal(clienttest_req(&f->t, 0)->target, "/serviceusage/v1/projects/p/services/cloudquotas.googleapis.com");
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"state\":\"ENABLED\"}", 0);
	assert_int_equal(iamtest_service_enabled(&f->c, "p", "x.googleapis.com", &on, &err), 0);
	assert_int_equal(on, 1);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"state\":\"STATE_UNSPECIFIED\"}", 0);
	assert_int_equal(iamtest_service_enabled(&f->c, "p", "x.googleapis.com", &on, &err), VX_EAPI);
	assert_string_equal(err.msg, "doctor: reading whether x.googleapis.com is enabled in p: the answer has no "
			    "state ENABLED or DISABLED");
	/* Refused: the hint names what services.get needs, from the permission table. */
	httpd_respond(f->t.s, 403, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":403,\"message\":\"Permission denied.\","
		      "\"status\":\"PERMISSION_DENIED\"}}", 0);
	assert_int_equal(iamtest_service_enabled(&f->c, "p", "x.googleapis.com", &on, &err), VX_EDENIED);
	assert_string_equal(err.msg, "doctor: reading whether x.googleapis.com is enabled in p: PERMISSION_DENIED: "
			    "Permission denied. (the caller lacks serviceusage.services.get for services.get: grant "
			    "roles/serviceusage.serviceUsageViewer on the project)");
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_project_asks_and_takes_only_what_it_asked, setup,
						clienttest_teardown),
		cmocka_unit_test_setup_teardown(test_bucket_and_service_account, setup, clienttest_teardown),
		cmocka_unit_test_setup_teardown(test_names_are_checked_before_sending, setup, clienttest_teardown),
		cmocka_unit_test_setup_teardown(test_service_state, setup, clienttest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
