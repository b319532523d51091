/* The metadata server: detection, tokens, the project id. See auth_internal.h. */
#include "providers/gcp/auth_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "providers/gcp/http.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

#define DEFAULT_METADATA_HOST "169.254.169.254"
#define METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define METADATA_PROJECT_PATH "/computeMetadata/v1/project/project-id"
#define METADATA_PROBE_PATH "/computeMetadata/v1/instance"

/* ---- metadata server ----------------------------------------------------- */

int gcp_auth_metadata_base(struct gcp_auth *a, struct vx_err *err)
{
	const char *host = gcp_auth_env(a, "GCE_METADATA_HOST");

	if (!host)
		host = gcp_auth_env(a, "GCE_METADATA_IP");
	if (!host)
		host = DEFAULT_METADATA_HOST;
	if (strstr(host, "://"))
		a->metadata_base = vx_asprintf("%s", host);
	else
		a->metadata_base = vx_asprintf("http://%s", host);
	if (!a->metadata_base)
		return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
	/* Trailing '/' would double up with our absolute paths. */
	while (*a->metadata_base && a->metadata_base[strlen(a->metadata_base) - 1] == '/')
		a->metadata_base[strlen(a->metadata_base) - 1] = '\0';
	return 0;
}

/*
 * One quick GET of /computeMetadata/v1/instance: present when it answers
 * 200 with Metadata-Flavor: Google. One try, no proxy, a short timeout:
 * this must stay fast. It goes through a layer of its own: detection runs
 * before the credentials have one (gcp_auth_set_http), and no answer here
 * (any machine off Google Cloud) is no API failure to count.
 */
static int metadata_probe(const struct gcp_auth *a)
{
	static const char *const headers[] = { "Metadata-Flavor: Google", NULL };
	struct gcp_http *http = NULL;
	struct gcp_request req;
	struct gcp_response resp = { 0 };
	struct vx_err err = VX_ERR_INIT;
	char *url = vx_asprintf("%s%s", a->metadata_base, METADATA_PROBE_PATH);
	int ok = 0;

	if (!url || gcp_http_new(&http, a->ctx, NULL, NULL, &err) < 0)
		goto done;
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.headers = headers;
	req.api = "oauth";
	req.retry = GCP_RETRY_ONCE;
	req.no_auth = 1;
	req.no_proxy = 1;
	req.rpc = "metadata";
	req.timeout_ms = a->probe_timeout_ms;
	if (gcp_http_send(http, &req, &resp, &err) == 0)
		ok = resp.status == 200 && resp.metadata_flavor && !strncmp(resp.metadata_flavor, "Google", 6);
done:
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: metadata server probe at %s: %s", a->metadata_base,
	       ok ? "present" : "no answer");
	gcp_response_release(&resp);
	gcp_http_free(http);
	vx_err_release(&err);
	free(url);
	return ok;
}

static int bios_is_google(void)
{
	struct vx_buf b = VX_BUF_INIT;
	int yes;

	yes = vx_buf_read_file(&b, "/sys/class/dmi/id/bios_vendor", 4096, NULL) == 0 &&
	      strstr(vx_buf_str(&b), "Google") != NULL;
	vx_buf_release(&b);
	return yes;
}

/*
 * Whether to use the metadata server. Sets *why to a short text for the
 * no-credentials message.
 */
int gcp_auth_metadata_detect(const char **why, struct gcp_auth *a)
{
	const char *mode = gcp_auth_env(a, "METADATA_SERVER_DETECTION");
	int overridden = gcp_auth_env(a, "GCE_METADATA_HOST") || gcp_auth_env(a, "GCE_METADATA_IP");

	if (a->metadata_detected >= 0) {
		*why = a->metadata_detected ? "present" : "not detected";
		return a->metadata_detected;
	}
	if (mode && !strcmp(mode, "none")) {
		*why = "detection disabled by METADATA_SERVER_DETECTION=none";
		a->metadata_detected = 0;
	} else if (mode && !strcmp(mode, "ping-only")) {
		a->metadata_detected = metadata_probe(a);
		*why = a->metadata_detected ? "present" : "no answer";
	} else if (overridden || (mode && !strcmp(mode, "assume-present"))) {
		*why = "present";
		a->metadata_detected = 1;
	} else if (mode && !strcmp(mode, "bios-only")) {
		a->metadata_detected = bios_is_google();
		*why = a->metadata_detected ? "present" : "not a Google Cloud machine";
	} else {
		a->metadata_detected = bios_is_google() || metadata_probe(a);
		*why = a->metadata_detected ? "present" : "no answer";
	}
	return a->metadata_detected;
}

static int metadata_get(struct gcp_auth *a, const char *path, struct gcp_response *resp, struct vx_err *err)
{
	static const char *const headers[] = { "Metadata-Flavor: Google", NULL };
	struct gcp_request req;
	char *url = vx_asprintf("%s%s", a->metadata_base, path);
	int rc;

	if (!url)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.headers = headers;
	req.api = "oauth";
	req.no_auth = 1;
	req.no_proxy = 1; /* the metadata server is link-local: never through a proxy, which would see the token */
	req.rpc = "metadata";
	req.timeout_ms = 3000;
	rc = gcp_auth_grant_send(resp, a, &req, NULL, err);
	if (rc == 0 && (!resp->metadata_flavor || strcmp(resp->metadata_flavor, "Google")))
		rc = vx_err_set(err, VX_EAUTH,
				"%s: the answer of %s lacks \"Metadata-Flavor: Google\"; something other than a "
				"metadata server is listening there",
				gcp_auth_what(a), url);
	free(url);
	return rc;
}

int gcp_auth_metadata_token(char **token, int64_t *expiry_ms, struct gcp_auth *a, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	vx_log(a->ctx, VX_LOG_DEBUG, "auth: asking the metadata server at %s for a token", a->metadata_base);
	rc = metadata_get(a, METADATA_TOKEN_PATH, &resp, err);
	if (rc == 0)
		rc = gcp_auth_grant_parse(token, expiry_ms, a, &resp, METADATA_TOKEN_PATH, err);
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	return rc;
}

/* ---- project id ---------------------------------------------------------- */

int gcp_auth_metadata_project(char **out, struct gcp_auth *a, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	rc = metadata_get(a, METADATA_PROJECT_PATH, &resp, err);
	if (rc == 0) {
		*out = vx_strdup(resp.body ? resp.body : "");
		if (!*out)
			rc = vx_err_set(err, VX_ENOMEM, "project: out of memory");
		else
			gcp_auth_trim_right(*out);
		if (*out && !**out) {
			free(*out);
			*out = NULL;
			rc = vx_err_set(err, VX_ENOTFOUND, "project: the metadata server at %s returned no project id",
					a->metadata_base);
		}
	}
	gcp_response_release(&resp);
	return rc;
}

