/* testIamPermissions and services.get for vx doctor. See iamtest.h. */
#include "providers/gcp/iamtest.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "providers/gcp/endpoints.h"
#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "util/buf.h"
#include "util/banned.h"

#define MAX_PERMISSIONS 100

/* Marks held[i] for every perms[i] the answer's "permissions" array holds. */
static void mark_held(const cJSON *root, const char *const *perms, size_t n, int *held)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "permissions"), *v;

	for (size_t i = 0; i < n; i++)
		held[i] = 0;
	if (!cJSON_IsArray(arr))
		return;
	cJSON_ArrayForEach(v, arr) {
		if (!cJSON_IsString(v))
			continue;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v->valuestring, perms[i]))
				held[i] = 1;
	}
}

/* {"permissions": [...]}, or NULL on OOM. */
static char *permissions_body(const char *const *perms, size_t n)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "permissions");
	char *out = NULL;

	for (size_t i = 0; arr && i < n; i++) {
		cJSON *s = cJSON_CreateString(perms[i]);

		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			goto done;
		}
	}
	if (arr)
		out = cJSON_PrintUnformatted(root);
done:
	cJSON_Delete(root);
	return out;
}

static const char *on_name(enum iamtest_on on)
{
	switch (on) {
	case IAMTEST_BUCKET: return "bucket";
	case IAMTEST_SERVICE_ACCOUNT: return "service account";
	case IAMTEST_PROJECT: break;
	}
	return "project";
}

/* The URL (and POST body) of a test on name. 0 or VX_EINVAL/VX_ENOMEM. */
static int test_request(const struct iamtest_client *c, enum iamtest_on on, const char *name,
			const char *const *perms, size_t n, char **url, char **body, const char *what,
			struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	*url = *body = NULL;
	if (!gcall_segment_ok(name, on == IAMTEST_SERVICE_ACCOUNT ? "@" : NULL))
		return vx_err_set(err, VX_EINVAL, "%s: not a valid %s name", what, on_name(on));
	switch (on) {
	case IAMTEST_PROJECT:
		*url = vx_asprintf("%sprojects/%s:testIamPermissions", c->ep->base[GCP_API_CLOUDRESOURCEMANAGER], name);
		*body = permissions_body(perms, n);
		break;
	case IAMTEST_SERVICE_ACCOUNT:
		*url = vx_asprintf("%sprojects/-/serviceAccounts/%s:testIamPermissions", c->ep->base[GCP_API_IAM],
				   name);
		*body = permissions_body(perms, n);
		break;
	case IAMTEST_BUCKET:
		rc = vx_buf_printf(&b, "%sb/%s/iam/testPermissions", c->ep->base[GCP_API_STORAGE], name);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = gcall_add_query(&b, "permissions", perms[i]);
		*url = rc == 0 ? vx_buf_detach(&b) : NULL;
		vx_buf_release(&b);
		break;
	}
	if (!*url || (on != IAMTEST_BUCKET && !*body)) {
		free(*url);
		free(*body);
		*url = *body = NULL;
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	}
	return 0;
}

int iamtest_permissions(const struct iamtest_client *c, enum iamtest_on on, const char *name,
			const char *const *perms, size_t n, int *held, struct vx_err *err)
{
	static const char *const api[] = {
		[IAMTEST_PROJECT] = "cloudresourcemanager", [IAMTEST_BUCKET] = "storage",
		[IAMTEST_SERVICE_ACCOUNT] = "iam",
	};
	static const char *const rpc[] = {
		[IAMTEST_PROJECT] = "TestProjectIamPermissions", [IAMTEST_BUCKET] = "TestBucketIamPermissions",
		[IAMTEST_SERVICE_ACCOUNT] = "TestServiceAccountIamPermissions",
	};
	struct gcp_request req;
	struct gcp_response resp = { 0 };
	cJSON *root = NULL;
	char *what = NULL, *url = NULL, *body = NULL;
	int rc;

	if (!(what = vx_asprintf("doctor: testing permissions on %s %s", on_name(on), name ? name : "")))
		return vx_err_set(err, VX_ENOMEM, "doctor: out of memory");
	if (n == 0 || n > MAX_PERMISSIONS) {
		rc = vx_err_set(err, VX_EINVAL, "%s: %zu permissions (1 to %d a call)", what, n, MAX_PERMISSIONS);
		goto done;
	}
	if ((rc = test_request(c, on, name, perms, n, &url, &body, what, err)) < 0)
		goto done;
	gcall_request_init(&req, api[on], body ? "POST" : "GET", url, body, GCP_RETRY_SAFE, rpc[on]);
	if ((rc = gcall_send(c->http, &req, "doctor", what, &resp, err)) < 0)
		goto done;
	if (!(root = gjson_parse_object(resp.body, resp.body_len, what, err))) {
		rc = err->code;
		goto done;
	}
	mark_held(root, perms, n, held);
done:
	cJSON_Delete(root);
	gcp_response_release(&resp);
	free(body);
	free(url);
	free(what);
	return rc;
}

int iamtest_service_enabled(const struct iamtest_client *c, const char *project, const char *service,
			    int *enabled, struct vx_err *err)
{
	struct gcp_request req;
	struct gcp_response resp = { 0 };
	cJSON *root = NULL;
	const cJSON *state;
	char *what = NULL, *url = NULL;
	int rc = 0;

	if (!(what = vx_asprintf("doctor: reading whether %s is enabled in %s", service ? service : "",
				 project ? project : "")))
		return vx_err_set(err, VX_ENOMEM, "doctor: out of memory");
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(service, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: not a valid project or service name", what);
		goto done;
	}
	if (!(url = vx_asprintf("%sprojects/%s/services/%s", c->ep->base[GCP_API_SERVICEUSAGE], project,
				service))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	gcall_request_init(&req, "serviceusage", "GET", url, NULL, GCP_RETRY_SAFE, "GetService");
	if ((rc = gcall_send(c->http, &req, "doctor", what, &resp, err)) < 0)
		goto done;
	if (!(root = gjson_parse_object(resp.body, resp.body_len, what, err))) {
		rc = err->code;
		goto done;
	}
	state = cJSON_GetObjectItemCaseSensitive(root, "state");
	if (cJSON_IsString(state) && !strcmp(state->valuestring, "ENABLED"))
		*enabled = 1;
	else if (cJSON_IsString(state) && !strcmp(state->valuestring, "DISABLED"))
		*enabled = 0;
	else
		rc = vx_err_set(err, VX_EAPI, "%s: the answer has no state ENABLED or DISABLED", what);
done:
	cJSON_Delete(root);
	gcp_response_release(&resp);
	free(url);
	free(what);
	return rc;
}
