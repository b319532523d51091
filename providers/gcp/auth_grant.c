/* Token grants: JWT bearer, refresh token, STS exchange and impersonation. See auth_internal.h. */
#include "providers/gcp/auth_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cJSON.h>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "providers/gcp/endpoints.h"
#include "providers/gcp/gerror.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/jwt.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/timefmt.h"
#include "util/banned.h"

#define SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
#define JWT_LIFETIME_S 3600

/* ---- token requests ------------------------------------------------------ */

/* Sets err from a non-200 token endpoint answer: OAuth's error and
 * error_description, or Google's error envelope (STS, IAM credentials). */
static int endpoint_error(const struct gcp_auth *a, const struct gcp_response *resp, const char *url,
			  struct vx_err *err)
{
	struct gcp_error ge = GCP_ERROR_INIT;
	const char *hint = "";
	int code;

	if (resp->status == 400 || resp->status == 401 || resp->status == 403)
		code = VX_EAUTH;
	else if (resp->status == 408 || resp->status == 429 || resp->status >= 500)
		code = VX_ERETRY;
	else
		code = VX_EAPI;
	if (gcp_error_parse(&ge, resp->status, resp->body, resp->body_len) < 0)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
	if (ge.reason && !strcmp(ge.reason, "invalid_grant")) {
		if (a->kind == GCP_AUTH_AUTHORIZED_USER)
			hint = " (the login has expired or was revoked: run 'gcloud auth application-default login')";
		else if (a->kind == GCP_AUTH_SERVICE_ACCOUNT)
			hint = " (the key may have been deleted or disabled, or this machine's clock is wrong)";
	} else if (resp->status == 403 && a->impersonation_url) {
		hint = " (the federated identity needs roles/iam.workloadIdentityUser or "
		       "roles/iam.serviceAccountTokenCreator on the service account)";
	}
	vx_err_set(err, code, "%s: token request to %s failed: HTTP %ld: %s%s%s%s", gcp_auth_what(a), url,
		   resp->status, ge.reason ? ge.reason : (ge.status ? ge.status : "error"),
		   ge.message ? ": " : "", ge.message ? ge.message : "", hint);
	gcp_error_release(&ge);
	return code;
}

/*
 * Sends a no_auth request and checks it got a 200. extra_secret is scrubbed
 * from any error text.
 */
int gcp_auth_grant_send(struct gcp_response *resp, struct gcp_auth *a, const struct gcp_request *req,
			const char *extra_secret, struct vx_err *err)
{
	int rc;

	if (!a->http)
		return vx_err_set(err, VX_EINVAL, "%s: no HTTP layer to fetch a token with (gcp_auth_set_http)",
				  gcp_auth_what(a));
	rc = gcp_http_send(a->http, req, resp, err);
	if (rc < 0) {
		if (resp->status && resp->status != 200)
			rc = endpoint_error(a, resp, req->url, err);
		else
			vx_err_wrap(err, "%s: token request to %s", gcp_auth_what(a), req->url);
	} else if (resp->status != 200) {
		rc = endpoint_error(a, resp, req->url, err);
	}
	if (rc < 0)
		gcp_auth_scrub_all(a, err, extra_secret, NULL);
	return rc;
}

static int form_post(struct gcp_auth *a, const char *url, const char *body, const char *const *headers,
		     const char *extra_secret, struct gcp_response *resp, struct vx_err *err)
{
	struct gcp_request req;

	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = url;
	req.body = body;
	req.body_len = strlen(body);
	req.content_type = "application/x-www-form-urlencoded";
	req.headers = headers;
	req.api = "oauth";
	req.retry = GCP_RETRY_SAFE;
	req.no_auth = 1;
	req.rpc = "token";
	return gcp_auth_grant_send(resp, a, &req, extra_secret, err);
}

/* Appends "name=escaped(value)" (with '&' before all but the first). */
static int form_add(struct vx_buf *b, const char *name, const char *value)
{
	char *esc = gcp_url_escape(value);
	int rc;

	if (!esc)
		return VX_ENOMEM;
	rc = vx_buf_printf(b, "%s%s=%s", b->len ? "&" : "", name, esc);
	OPENSSL_cleanse(esc, strlen(esc));
	free(esc);
	return rc;
}

/* Reads {"<token_field>": "...", "expires_in": N} from a 200 answer. */
int gcp_auth_grant_parse(char **token, int64_t *expiry_ms, const struct gcp_auth *a,
			 const struct gcp_response *resp, const char *url, struct vx_err *err)
{
	cJSON *j = NULL;
	const cJSON *exp;
	const char *t;
	int rc = 0;

	*token = NULL;
	*expiry_ms = 0;
	j = resp->body ? gjson_parse(resp->body, resp->body_len) : NULL;
	t = j ? gcp_auth_jstr(j, "access_token") : NULL;
	if (!t) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the answer of %s has no access_token", gcp_auth_what(a), url);
		goto done;
	}
	/* It goes into a header: CR/LF in it would add headers. Never print it. */
	if (!gcp_http_token_ok(t)) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the access_token in the answer of %s has characters a "
				"bearer token may not hold (RFC 6750); refused", gcp_auth_what(a), url);
		goto done;
	}
	exp = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
	if (cJSON_IsNumber(exp) && exp->valuedouble > 0 && exp->valuedouble < 1e9)
		*expiry_ms = vx_now_ms(a->ctx) + (int64_t)exp->valuedouble * 1000;
	else if (cJSON_IsString(exp) && exp->valuestring) {
		char *end = NULL;
		long long v;

		errno = 0;
		v = strtoll(exp->valuestring, &end, 10);
		if (!errno && end != exp->valuestring && !*end && v > 0 && v < 1000000000LL)
			*expiry_ms = vx_now_ms(a->ctx) + (int64_t)v * 1000;
	}
	*token = vx_strdup(t);
	if (!*token)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
done:
	gcp_auth_json_free_secret(j); /* the parsed copy of the token is a secret too */
	return rc;
}

int gcp_auth_grant_service_account(char **token, int64_t *expiry_ms, struct gcp_auth *a, struct vx_err *err)
{
	struct gcp_jwt_claims claims;
	struct gcp_response resp = { 0 };
	struct vx_buf body = VX_BUF_INIT;
	char *assertion = NULL;
	int rc;

	memset(&claims, 0, sizeof(claims));
	claims.iss = a->client_email;
	claims.scope = SCOPE_CLOUD_PLATFORM;
	claims.aud = a->token_uri;
	claims.iat = vx_now_ms(a->ctx) / 1000;
	claims.exp = claims.iat + JWT_LIFETIME_S;
	rc = gcp_jwt_sign(&assertion, a->private_key, a->private_key_id, &claims, err);
	if (rc < 0) {
		vx_err_wrap(err, "%s", gcp_auth_what(a));
		goto done;
	}
	if (form_add(&body, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
	    form_add(&body, "assertion", assertion)) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
		goto done;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: exchanging a signed JWT for %s at %s", a->client_email,
	       a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), NULL, assertion, &resp, err);
	if (rc == 0)
		rc = gcp_auth_grant_parse(token, expiry_ms, a, &resp, a->token_uri, err);
done:
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	gcp_auth_free_secret(assertion);
	return rc;
}

int gcp_auth_grant_authorized_user(char **token, int64_t *expiry_ms, struct gcp_auth *a, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct vx_buf body = VX_BUF_INIT;
	int rc;

	if (form_add(&body, "refresh_token", a->refresh_token) || form_add(&body, "client_id", a->client_id) ||
	    form_add(&body, "client_secret", a->client_secret) ||
	    form_add(&body, "grant_type", "refresh_token")) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
		goto done;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: refreshing user credentials at %s", a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), NULL, NULL, &resp, err);
	if (rc == 0)
		rc = gcp_auth_grant_parse(token, expiry_ms, a, &resp, a->token_uri, err);
done:
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	return rc;
}

/* The subject token out of the raw credential source content. */
static int subject_from_content(const struct gcp_auth *a, const char *data, size_t len, const char *where,
				char **out, struct vx_err *err)
{
	cJSON *j = NULL;
	const char *v;
	int rc = 0;

	*out = NULL;
	if (!a->cs_field) {
		*out = vx_strdup(data);
		if (!*out)
			return vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
		gcp_auth_trim_right(*out);
		if (!**out) {
			free(*out);
			*out = NULL;
			return vx_err_set(err, VX_EAUTH, "%s: the subject token from %s is empty", gcp_auth_what(a), where);
		}
		return 0;
	}
	j = gjson_parse(data, len);
	v = j ? gcp_auth_jstr(j, a->cs_field) : NULL;
	if (!v) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the subject token from %s is not JSON with a string \"%s\"",
				gcp_auth_what(a), where, a->cs_field);
		goto done;
	}
	*out = vx_strdup(v);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
done:
	gcp_auth_json_free_secret(j); /* holds the subject token */
	return rc;
}

static int subject_token(struct gcp_auth *a, char **out, struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	struct gcp_response resp = { 0 };
	struct gcp_request req;
	int rc;

	*out = NULL;
	if (a->cs_file) {
		rc = vx_buf_read_file(&b, a->cs_file, MAX_CRED_FILE, err);
		if (rc < 0) {
			vx_err_wrap(err, "%s: reading the subject token", gcp_auth_what(a));
			rc = VX_EAUTH;
			if (err)
				err->code = VX_EAUTH;
			goto done;
		}
		rc = subject_from_content(a, vx_buf_str(&b), b.len, a->cs_file, out, err);
		goto done;
	}
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = a->cs_url;
	req.headers = (const char *const *)a->cs_headers;
	req.api = "oauth";
	req.no_auth = 1;
	req.rpc = "subject token";
	rc = gcp_auth_grant_send(&resp, a, &req, NULL, err);
	if (rc == 0)
		rc = subject_from_content(a, resp.body ? resp.body : "", resp.body_len, a->cs_url, out, err);
done:
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	if (b.data)
		OPENSSL_cleanse(b.data, b.len);
	vx_buf_release(&b);
	return rc;
}


static int impersonate(struct gcp_auth *a, const char *sts_token, char **token, int64_t *expiry_ms,
		       struct vx_err *err)
{
	static const char body[] = "{\"scope\":[\"" SCOPE_CLOUD_PLATFORM "\"],\"lifetime\":\"3600s\"}";
	struct gcp_response resp = { 0 };
	struct gcp_request req;
	char *bearer = NULL;
	const char *headers[2];
	cJSON *j = NULL;
	const char *t, *exp;
	int64_t ms = 0;
	int rc;

	*token = NULL;
	*expiry_ms = 0;
	bearer = vx_asprintf("Authorization: Bearer %s", sts_token);
	if (!bearer) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
		goto done;
	}
	headers[0] = bearer;
	headers[1] = NULL;
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = a->impersonation_url;
	req.body = body;
	req.body_len = strlen(body);
	req.content_type = "application/json";
	req.headers = headers;
	req.api = "oauth";
	req.no_auth = 1;
	req.rpc = "GenerateAccessToken";
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: impersonating through %s", a->impersonation_url);
	rc = gcp_auth_grant_send(&resp, a, &req, sts_token, err);
	if (rc < 0)
		goto done;
	j = resp.body ? gjson_parse(resp.body, resp.body_len) : NULL;
	t = j ? gcp_auth_jstr(j, "accessToken") : NULL;
	if (!t) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the answer of %s has no accessToken", gcp_auth_what(a),
				a->impersonation_url);
		goto done;
	}
	if (!gcp_http_token_ok(t)) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the accessToken in the answer of %s has characters a "
				"bearer token may not hold (RFC 6750); refused", gcp_auth_what(a),
				a->impersonation_url);
		goto done;
	}
	exp = gcp_auth_jstr(j, "expireTime");
	if (exp && vx_time_parse(&ms, exp, 0) == 0 && ms > 0)
		*expiry_ms = ms;
	*token = vx_strdup(t);
	if (!*token)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
done:
	gcp_auth_json_free_secret(j);
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	gcp_auth_free_secret(bearer);
	return rc;
}

/* HTTP Basic credentials of the STS client, when the file has them. */
static char *basic_auth_header(const struct gcp_auth *a)
{
	char *pair = NULL, *out = NULL;
	unsigned char *b64 = NULL;
	size_t len;
	int n;

	pair = vx_asprintf("%s:%s", a->client_id, a->client_secret);
	if (!pair)
		return NULL;
	len = strlen(pair);
	b64 = malloc((len + 2) / 3 * 4 + 1);
	if (b64) {
		n = EVP_EncodeBlock(b64, (const unsigned char *)pair, (int)len);
		if (n >= 0)
			out = vx_asprintf("Authorization: Basic %s", (const char *)b64);
		OPENSSL_cleanse(b64, (size_t)n > 0 ? (size_t)n : 0);
	}
	free(b64);
	gcp_auth_free_secret(pair);
	return out;
}

int gcp_auth_grant_external_account(char **token, int64_t *expiry_ms, struct gcp_auth *a, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct vx_buf body = VX_BUF_INIT;
	char *subject = NULL, *sts = NULL, *basic = NULL;
	const char *headers[2] = { NULL, NULL };
	int64_t sts_expiry = 0;
	int rc;

	rc = subject_token(a, &subject, err);
	if (rc < 0)
		goto done;
	if (form_add(&body, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange") ||
	    form_add(&body, "audience", a->audience) || form_add(&body, "scope", SCOPE_CLOUD_PLATFORM) ||
	    form_add(&body, "requested_token_type", "urn:ietf:params:oauth:token-type:access_token") ||
	    form_add(&body, "subject_token", subject) ||
	    form_add(&body, "subject_token_type", a->subject_token_type)) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
		goto done;
	}
	if (a->client_id && a->client_secret) {
		basic = basic_auth_header(a);
		if (!basic) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
			goto done;
		}
		headers[0] = basic;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: exchanging a subject token at %s", a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), headers, subject, &resp, err);
	if (rc == 0)
		rc = gcp_auth_grant_parse(&sts, &sts_expiry, a, &resp, a->token_uri, err);
	if (rc < 0)
		goto done;
	if (!a->impersonation_url) {
		*token = sts;
		*expiry_ms = sts_expiry;
		sts = NULL;
		goto done;
	}
	rc = impersonate(a, sts, token, expiry_ms, err);
	if (rc < 0)
		gcp_auth_scrub_all(a, err, subject, sts);
done:
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	gcp_auth_free_secret(subject);
	gcp_auth_free_secret(sts);
	gcp_auth_free_secret(basic);
	return rc;
}

/* GET on the metadata server; checks Metadata-Flavor: Google on the answer. */
