/* Application Default Credentials and access tokens. See auth.h. */
#include "providers/gcp/auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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
#include "util/banned.h"

#define SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
#define DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define DEFAULT_STS_URL "https://sts.googleapis.com/v1/token"
#define DEFAULT_METADATA_HOST "169.254.169.254"
#define METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define METADATA_PROJECT_PATH "/computeMetadata/v1/project/project-id"
#define METADATA_PROBE_PATH "/computeMetadata/v1/instance"
#define REFRESH_MARGIN_MS (5 * 60 * 1000)
#define JWT_LIFETIME_S 3600
#define MAX_CRED_FILE (1024 * 1024)
#define LOGIN_HINT "run 'gcloud auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS"

struct gcp_auth {
	struct vx_ctx *ctx;
	struct gcp_http *http;
	struct gcp_token_source source;
	enum gcp_auth_kind kind;
	long probe_timeout_ms;

	char *path;          /* credential file, or NULL */
	char *description;
	char *project_id;    /* from the file */
	char *quota_project;

	/* service_account */
	char *client_email;
	char *private_key;   /* secret */
	char *private_key_id;
	char *token_uri;     /* also authorized_user's and STS's endpoint */

	/* authorized_user */
	char *client_id;
	char *client_secret; /* secret (also STS client auth) */
	char *refresh_token; /* secret */

	/* external_account */
	char *audience;
	char *subject_token_type;
	char *impersonation_url;
	char *cs_file;
	char *cs_url;
	char **cs_headers;   /* "Name: value", NULL-terminated */
	char *cs_field;      /* json format: subject_token_field_name; NULL = text */

	/* metadata */
	char *metadata_base; /* "http://host" */
	int metadata_detected; /* -1 unknown, 0 no, 1 yes */

	/* cache */
	char *token;         /* secret */
	int64_t expiry_ms;   /* 0 = unknown */
};

static void free_secret(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static void json_cleanse(cJSON *j)
{
	for (cJSON *it = j; it; it = it->next) {
		if (cJSON_IsString(it) && it->valuestring)
			OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
		json_cleanse(it->child);
	}
}

/* Wipes every string of a parsed JSON document (tokens, keys), then frees it. NULL-safe. */
static void json_free_secret(cJSON *j)
{
	if (j) {
		json_cleanse(j->child);
		cJSON_Delete(j);
	}
}

/* getenv that treats "" as unset. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Replaces every occurrence of the secrets in err's message by "[redacted]",
 * in case a server echoed a request back into an error body. */
static void scrub(struct vx_err *err, const char *const *secrets, size_t n)
{
	size_t i;

	if (!err || !err->msg)
		return;
	for (i = 0; i < n; i++) {
		struct vx_buf b = VX_BUF_INIT;
		const char *s = secrets[i], *p, *hit;
		size_t len;
		char *msg;

		if (!s || strlen(s) < 4 || !strstr(err->msg, s))
			continue;
		len = strlen(s);
		for (p = err->msg; (hit = strstr(p, s)); p = hit + len) {
			if (vx_buf_add(&b, p, (size_t)(hit - p)) || vx_buf_adds(&b, "[redacted]"))
				break;
		}
		if (vx_buf_adds(&b, p) == 0 && (msg = vx_buf_detach(&b))) {
			free(err->msg);
			err->msg = msg;
		}
		vx_buf_release(&b);
	}
}

static void scrub_all(const struct gcp_auth *a, struct vx_err *err, const char *extra1, const char *extra2)
{
	const char *secrets[] = { a->token, a->refresh_token, a->client_secret, a->private_key, extra1, extra2 };

	scrub(err, secrets, sizeof(secrets) / sizeof(secrets[0]));
}

/* ---- credential files ---------------------------------------------------- */

/* A string member of obj, or NULL when absent, not a string or empty. */
static const char *jstr(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) && v->valuestring && *v->valuestring ? v->valuestring : NULL;
}

static int need(char **dst, const cJSON *obj, const char *name, const char *what, const char *path,
		struct vx_err *err)
{
	const char *v = jstr(obj, name);

	if (!v)
		return vx_err_set(err, VX_EINVAL, "%s %s: missing \"%s\"", what, path, name);
	*dst = vx_strdup(v);
	return *dst ? 0 : vx_err_set(err, VX_ENOMEM, "%s %s: out of memory", what, path);
}

static int opt(char **dst, const cJSON *obj, const char *name, struct vx_err *err)
{
	const char *v = jstr(obj, name);

	*dst = NULL;
	if (!v)
		return 0;
	*dst = vx_strdup(v);
	return *dst ? 0 : vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
}

/* Endpoints from a credential file get the same rule as API overrides:
 * https, or http only to loopback (a secret must not cross a network in clear). */
static int check_endpoint(const struct gcp_auth *a, const char *url, const char *field, struct vx_err *err)
{
	char *what = vx_asprintf("credential file %s: %s", a->path, field);
	/* A query is fine here (a subject token URL often has one); only the
	 * scheme and host matter. */
	char *base = vx_asprintf("%.*s", (int)strcspn(url, "?#"), url);
	int rc;

	if (!what || !base)
		rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
	else
		rc = gcp_endpoints_check_url(base, what, err);
	free(what);
	free(base);
	return rc;
}

static int load_service_account(struct gcp_auth *a, const cJSON *j, struct vx_err *err)
{
	const char *what = "service account key";
	int rc;

	a->kind = GCP_AUTH_SERVICE_ACCOUNT;
	if ((rc = need(&a->client_email, j, "client_email", what, a->path, err)) < 0 ||
	    (rc = need(&a->private_key, j, "private_key", what, a->path, err)) < 0 ||
	    (rc = opt(&a->private_key_id, j, "private_key_id", err)) < 0 ||
	    (rc = opt(&a->token_uri, j, "token_uri", err)) < 0)
		return rc;
	if (!a->token_uri && !(a->token_uri = vx_strdup(DEFAULT_TOKEN_URI)))
		return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
	if ((rc = check_endpoint(a, a->token_uri, "token_uri", err)) < 0)
		return rc;
	a->description = vx_asprintf("service account %s from %s", a->client_email, a->path);
	return a->description ? 0 : vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
}

static int load_authorized_user(struct gcp_auth *a, const cJSON *j, struct vx_err *err)
{
	const char *what = "user credentials";
	int rc;

	a->kind = GCP_AUTH_AUTHORIZED_USER;
	if ((rc = need(&a->client_id, j, "client_id", what, a->path, err)) < 0 ||
	    (rc = need(&a->client_secret, j, "client_secret", what, a->path, err)) < 0 ||
	    (rc = need(&a->refresh_token, j, "refresh_token", what, a->path, err)) < 0 ||
	    (rc = opt(&a->token_uri, j, "token_uri", err)) < 0)
		return rc;
	if (!a->token_uri && !(a->token_uri = vx_strdup(DEFAULT_TOKEN_URI)))
		return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
	if ((rc = check_endpoint(a, a->token_uri, "token_uri", err)) < 0)
		return rc;
	a->description = vx_asprintf("user credentials (authorized_user) from %s", a->path);
	return a->description ? 0 : vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
}

/* "sa@p.iam.gserviceaccount.com" out of ".../serviceAccounts/<email>:generateAccessToken". */
static char *impersonated_email(const char *url)
{
	const char *p = strstr(url, "/serviceAccounts/"), *end;

	if (!p)
		return NULL;
	p += strlen("/serviceAccounts/");
	end = strstr(p, ":generateAccessToken");
	if (!end || end == p)
		return NULL;
	return vx_asprintf("%.*s", (int)(end - p), p);
}

static int load_credential_source(struct gcp_auth *a, const cJSON *cs, struct vx_err *err)
{
	const cJSON *headers, *format, *h;
	const char *env_id = jstr(cs, "environment_id"), *ftype;
	size_t n = 0;
	int rc;

	if (env_id && !strncasecmp(env_id, "aws", 3))
		return vx_err_set(err, VX_EINVAL,
				  "workload identity credentials %s: AWS credential sources (environment_id \"%s\") "
				  "are not supported by vx; use a file or url credential source, or a service "
				  "account key",
				  a->path, env_id);
	if (cJSON_GetObjectItemCaseSensitive(cs, "executable"))
		return vx_err_set(err, VX_EINVAL,
				  "workload identity credentials %s: executable credential sources are not "
				  "supported by vx; use a file or url credential source",
				  a->path);
	if ((rc = opt(&a->cs_file, cs, "file", err)) < 0 || (rc = opt(&a->cs_url, cs, "url", err)) < 0)
		return rc;
	if (!a->cs_file && !a->cs_url)
		return vx_err_set(err, VX_EINVAL,
				  "workload identity credentials %s: credential_source has neither \"file\" nor "
				  "\"url\"",
				  a->path);
	if (a->cs_url && (rc = check_endpoint(a, a->cs_url, "credential_source.url", err)) < 0)
		return rc;
	format = cJSON_GetObjectItemCaseSensitive(cs, "format");
	ftype = format ? jstr(format, "type") : NULL;
	if (ftype && !strcmp(ftype, "json")) {
		if ((rc = opt(&a->cs_field, format, "subject_token_field_name", err)) < 0)
			return rc;
		if (!a->cs_field)
			return vx_err_set(err, VX_EINVAL,
					  "workload identity credentials %s: format json needs "
					  "\"subject_token_field_name\"",
					  a->path);
	} else if (ftype && strcmp(ftype, "text")) {
		return vx_err_set(err, VX_EINVAL,
				  "workload identity credentials %s: unknown credential_source.format.type \"%s\" "
				  "(text or json)",
				  a->path, ftype);
	}
	headers = cJSON_GetObjectItemCaseSensitive(cs, "headers");
	if (cJSON_IsObject(headers)) {
		a->cs_headers = calloc((size_t)cJSON_GetArraySize(headers) + 1, sizeof(char *));
		if (!a->cs_headers)
			return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		cJSON_ArrayForEach(h, headers) {
			if (!cJSON_IsString(h) || !h->string)
				continue;
			a->cs_headers[n] = vx_asprintf("%s: %s", h->string, h->valuestring);
			if (!a->cs_headers[n++])
				return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		}
	}
	return 0;
}

static int load_external_account(struct gcp_auth *a, const cJSON *j, struct vx_err *err)
{
	const char *what = "workload identity credentials";
	const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "credential_source");
	char *email = NULL;
	int rc;

	a->kind = GCP_AUTH_EXTERNAL_ACCOUNT;
	if ((rc = need(&a->audience, j, "audience", what, a->path, err)) < 0 ||
	    (rc = need(&a->subject_token_type, j, "subject_token_type", what, a->path, err)) < 0 ||
	    (rc = opt(&a->token_uri, j, "token_url", err)) < 0 ||
	    (rc = opt(&a->impersonation_url, j, "service_account_impersonation_url", err)) < 0 ||
	    (rc = opt(&a->client_id, j, "client_id", err)) < 0 ||
	    (rc = opt(&a->client_secret, j, "client_secret", err)) < 0)
		return rc;
	if (!cJSON_IsObject(cs))
		return vx_err_set(err, VX_EINVAL, "%s %s: missing \"credential_source\"", what, a->path);
	if ((rc = load_credential_source(a, cs, err)) < 0)
		return rc;
	if (!a->token_uri && !(a->token_uri = vx_strdup(DEFAULT_STS_URL)))
		return vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
	if ((rc = check_endpoint(a, a->token_uri, "token_url", err)) < 0)
		return rc;
	if (a->impersonation_url) {
		if ((rc = check_endpoint(a, a->impersonation_url, "service_account_impersonation_url", err)) < 0)
			return rc;
		email = impersonated_email(a->impersonation_url);
	}
	a->description = vx_asprintf("workload identity federation (audience %s) from %s%s%s", a->audience,
				     a->path, a->impersonation_url ? ", impersonating " : "",
				     a->impersonation_url ? (email ? email : "a service account") : "");
	free(email);
	return a->description ? 0 : vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
}

/* Warns when a credential file can be read by group or others. */
static void check_mode(const struct gcp_auth *a)
{
	struct stat st;

	if (stat(a->path, &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
		vx_log(a->ctx, VX_LOG_WARN,
		       "credential file %s is readable by group or others (mode %03o); restrict it with "
		       "'chmod 600 %s'",
		       a->path, (unsigned)(st.st_mode & 0777), a->path);
}

/* Loads a credential file; origin names where its path came from. */
static int load_file(struct gcp_auth *a, const char *path, const char *origin, struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	cJSON *j = NULL;
	const char *type;
	int rc = 0;

	a->path = vx_strdup(path);
	if (!a->path) {
		rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		goto done;
	}
	rc = vx_buf_read_file(&b, path, MAX_CRED_FILE, err);
	if (rc < 0) {
		vx_err_wrap(err, "reading credentials from %s", origin);
		rc = vx_err_set(err, VX_EINVAL, "%s; %s", err->msg ? err->msg : "", LOGIN_HINT);
		goto done;
	}
	check_mode(a);
	j = cJSON_ParseWithLength(vx_buf_str(&b), b.len);
	if (!cJSON_IsObject(j)) {
		/* Never quote the content: it holds the key. */
		rc = vx_err_set(err, VX_EINVAL, "reading credentials from %s: %s is not a JSON credential file",
				origin, path);
		goto done;
	}
	type = jstr(j, "type");
	if ((rc = opt(&a->project_id, j, "project_id", err)) < 0 ||
	    (rc = opt(&a->quota_project, j, "quota_project_id", err)) < 0)
		goto done;
	if (!type) {
		rc = vx_err_set(err, VX_EINVAL, "reading credentials from %s: %s has no \"type\"", origin, path);
	} else if (!strcmp(type, "service_account")) {
		rc = load_service_account(a, j, err);
	} else if (!strcmp(type, "authorized_user")) {
		rc = load_authorized_user(a, j, err);
	} else if (!strcmp(type, "external_account")) {
		rc = load_external_account(a, j, err);
	} else {
		rc = vx_err_set(err, VX_EINVAL,
				"reading credentials from %s: %s has type \"%s\", which vx does not support "
				"(service_account, authorized_user, external_account)",
				origin, path, type);
	}
done:
	json_free_secret(j); /* the parsed copy holds the private key or refresh token */
	if (b.data)
		OPENSSL_cleanse(b.data, b.len);
	vx_buf_release(&b);
	return rc;
}

/* ---- metadata server ----------------------------------------------------- */

static int metadata_base(struct gcp_auth *a, struct vx_err *err)
{
	const char *host = env("GCE_METADATA_HOST");

	if (!host)
		host = env("GCE_METADATA_IP");
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

struct probe {
	int flavor_ok;
};

static size_t probe_header(char *buf, size_t size, size_t n, void *ud)
{
	struct probe *p = ud;
	size_t len = size * n, i;
	const char *name = "metadata-flavor:";
	size_t nl = strlen(name);

	if (len >= nl && !strncasecmp(buf, name, nl)) {
		for (i = nl; i < len && (buf[i] == ' ' || buf[i] == '\t'); i++)
			;
		if (len - i >= 6 && !strncmp(buf + i, "Google", 6))
			p->flavor_ok = 1;
	}
	return len;
}

static size_t probe_body(char *buf, size_t size, size_t n, void *ud)
{
	(void)buf;
	(void)ud;
	return size * n;
}

/* One quick GET of /computeMetadata/v1/instance: present when it answers
 * 200 with Metadata-Flavor: Google. No retries: this must stay fast. */
static int metadata_probe(const struct gcp_auth *a)
{
	struct curl_slist *hdrs = NULL, *tmp;
	struct probe p = { 0 };
	char *url = vx_asprintf("%s%s", a->metadata_base, METADATA_PROBE_PATH);
	CURL *c = NULL;
	long status = 0;
	int ok = 0;

	if (!url)
		goto done;
	c = curl_easy_init();
	if (!c)
		goto done;
	tmp = curl_slist_append(hdrs, "Metadata-Flavor: Google");
	if (!tmp)
		goto done;
	hdrs = tmp;
	if (curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, a->probe_timeout_ms) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_NOPROXY, "*") != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, probe_header) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_HEADERDATA, &p) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, probe_body) != CURLE_OK)
		goto done;
	if (curl_easy_perform(c) != CURLE_OK)
		goto done;
	if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
		goto done;
	ok = status == 200 && p.flavor_ok;
done:
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: metadata server probe at %s: %s", a->metadata_base,
	       ok ? "present" : "no answer");
	curl_slist_free_all(hdrs);
	if (c)
		curl_easy_cleanup(c);
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
static int metadata_detect(struct gcp_auth *a, const char **why)
{
	const char *mode = env("METADATA_SERVER_DETECTION");
	int overridden = env("GCE_METADATA_HOST") || env("GCE_METADATA_IP");

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

/* ---- token requests ------------------------------------------------------ */

/* "<secret-free what>: " context for errors and logs. */
static const char *what_of(const struct gcp_auth *a)
{
	return a->description ? a->description : "credentials";
}

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
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
	if (ge.reason && !strcmp(ge.reason, "invalid_grant")) {
		if (a->kind == GCP_AUTH_AUTHORIZED_USER)
			hint = " (the login has expired or was revoked: run 'gcloud auth application-default login')";
		else if (a->kind == GCP_AUTH_SERVICE_ACCOUNT)
			hint = " (the key may have been deleted or disabled, or this machine's clock is wrong)";
	} else if (resp->status == 403 && a->impersonation_url) {
		hint = " (the federated identity needs roles/iam.workloadIdentityUser or "
		       "roles/iam.serviceAccountTokenCreator on the service account)";
	}
	vx_err_set(err, code, "%s: token request to %s failed: HTTP %ld: %s%s%s%s", what_of(a), url,
		   resp->status, ge.reason ? ge.reason : (ge.status ? ge.status : "error"),
		   ge.message ? ": " : "", ge.message ? ge.message : "", hint);
	gcp_error_release(&ge);
	return code;
}

/*
 * Sends a no_auth request and checks it got a 200. extra_secret is scrubbed
 * from any error text.
 */
static int send_auth_request(struct gcp_auth *a, const struct gcp_request *req, struct gcp_response *resp,
			     const char *extra_secret, struct vx_err *err)
{
	int rc;

	if (!a->http)
		return vx_err_set(err, VX_EINVAL, "%s: no HTTP layer to fetch a token with (gcp_auth_set_http)",
				  what_of(a));
	rc = gcp_http_send(a->http, req, resp, err);
	if (rc < 0) {
		if (resp->status && resp->status != 200)
			rc = endpoint_error(a, resp, req->url, err);
		else
			vx_err_wrap(err, "%s: token request to %s", what_of(a), req->url);
	} else if (resp->status != 200) {
		rc = endpoint_error(a, resp, req->url, err);
	}
	if (rc < 0)
		scrub_all(a, err, extra_secret, NULL);
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
	return send_auth_request(a, &req, resp, extra_secret, err);
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
static int parse_token(const struct gcp_auth *a, const struct gcp_response *resp, const char *url,
		       char **token, int64_t *expiry_ms, struct vx_err *err)
{
	cJSON *j = NULL;
	const cJSON *exp;
	const char *t;
	int rc = 0;

	*token = NULL;
	*expiry_ms = 0;
	j = resp->body ? gjson_parse(resp->body, resp->body_len) : NULL;
	t = j ? jstr(j, "access_token") : NULL;
	if (!t) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the answer of %s has no access_token", what_of(a), url);
		goto done;
	}
	/* It goes into a header: CR/LF in it would add headers. Never print it. */
	if (!gcp_http_token_ok(t)) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the access_token in the answer of %s has characters a "
				"bearer token may not hold (RFC 6750); refused", what_of(a), url);
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
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
done:
	json_free_secret(j); /* the parsed copy of the token is a secret too */
	return rc;
}

static int fetch_service_account(struct gcp_auth *a, char **token, int64_t *expiry_ms, struct vx_err *err)
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
		vx_err_wrap(err, "%s", what_of(a));
		goto done;
	}
	if (form_add(&body, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
	    form_add(&body, "assertion", assertion)) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
		goto done;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: exchanging a signed JWT for %s at %s", a->client_email,
	       a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), NULL, assertion, &resp, err);
	if (rc == 0)
		rc = parse_token(a, &resp, a->token_uri, token, expiry_ms, err);
done:
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	free_secret(assertion);
	return rc;
}

static int fetch_authorized_user(struct gcp_auth *a, char **token, int64_t *expiry_ms, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	struct vx_buf body = VX_BUF_INIT;
	int rc;

	if (form_add(&body, "refresh_token", a->refresh_token) || form_add(&body, "client_id", a->client_id) ||
	    form_add(&body, "client_secret", a->client_secret) ||
	    form_add(&body, "grant_type", "refresh_token")) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
		goto done;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: refreshing user credentials at %s", a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), NULL, NULL, &resp, err);
	if (rc == 0)
		rc = parse_token(a, &resp, a->token_uri, token, expiry_ms, err);
done:
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	return rc;
}

/* Drops trailing white space (a token file usually ends with a newline). */
static void trim_right(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
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
			return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
		trim_right(*out);
		if (!**out) {
			free(*out);
			*out = NULL;
			return vx_err_set(err, VX_EAUTH, "%s: the subject token from %s is empty", what_of(a), where);
		}
		return 0;
	}
	j = gjson_parse(data, len);
	v = j ? jstr(j, a->cs_field) : NULL;
	if (!v) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the subject token from %s is not JSON with a string \"%s\"",
				what_of(a), where, a->cs_field);
		goto done;
	}
	*out = vx_strdup(v);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
done:
	json_free_secret(j); /* holds the subject token */
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
			vx_err_wrap(err, "%s: reading the subject token", what_of(a));
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
	rc = send_auth_request(a, &req, &resp, NULL, err);
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

/* Seconds since the epoch of an RFC 3339 time ("2025-01-02T03:04:05.123Z",
 * or with a +hh:mm offset); -1 when it is not one. */
static int64_t parse_rfc3339(const char *s)
{
	int y, mo, d, h, mi, sec, n = 0, oh = 0, om = 0;
	struct tm tm;
	const char *p;
	time_t t;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || !n)
		return -1;
	p = s + n;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, m = 0;

		if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || !m)
			return -1;
		oh *= sign;
		om *= sign;
		p += 1 + m;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return (int64_t)t - oh * 3600 - om * 60;
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
	int64_t secs;
	int rc;

	*token = NULL;
	*expiry_ms = 0;
	bearer = vx_asprintf("Authorization: Bearer %s", sts_token);
	if (!bearer) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
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
	rc = send_auth_request(a, &req, &resp, sts_token, err);
	if (rc < 0)
		goto done;
	j = resp.body ? gjson_parse(resp.body, resp.body_len) : NULL;
	t = j ? jstr(j, "accessToken") : NULL;
	if (!t) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the answer of %s has no accessToken", what_of(a),
				a->impersonation_url);
		goto done;
	}
	if (!gcp_http_token_ok(t)) {
		rc = vx_err_set(err, VX_EAUTH, "%s: the accessToken in the answer of %s has characters a "
				"bearer token may not hold (RFC 6750); refused", what_of(a),
				a->impersonation_url);
		goto done;
	}
	exp = jstr(j, "expireTime");
	secs = parse_rfc3339(exp);
	if (secs > 0)
		*expiry_ms = secs * 1000;
	*token = vx_strdup(t);
	if (!*token)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
done:
	json_free_secret(j);
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	free_secret(bearer);
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
	free_secret(pair);
	return out;
}

static int fetch_external_account(struct gcp_auth *a, char **token, int64_t *expiry_ms, struct vx_err *err)
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
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
		goto done;
	}
	if (a->client_id && a->client_secret) {
		basic = basic_auth_header(a);
		if (!basic) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
			goto done;
		}
		headers[0] = basic;
	}
	vx_log(a->ctx, VX_LOG_DEBUG, "auth: exchanging a subject token at %s", a->token_uri);
	rc = form_post(a, a->token_uri, vx_buf_str(&body), headers, subject, &resp, err);
	if (rc == 0)
		rc = parse_token(a, &resp, a->token_uri, &sts, &sts_expiry, err);
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
		scrub_all(a, err, subject, sts);
done:
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	if (body.data)
		OPENSSL_cleanse(body.data, body.len);
	vx_buf_release(&body);
	free_secret(subject);
	free_secret(sts);
	free_secret(basic);
	return rc;
}

/* GET on the metadata server; checks Metadata-Flavor: Google on the answer. */
static int metadata_get(struct gcp_auth *a, const char *path, struct gcp_response *resp, struct vx_err *err)
{
	static const char *const headers[] = { "Metadata-Flavor: Google", NULL };
	struct gcp_request req;
	char *url = vx_asprintf("%s%s", a->metadata_base, path);
	int rc;

	if (!url)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.headers = headers;
	req.api = "oauth";
	req.no_auth = 1;
	req.rpc = "metadata";
	req.timeout_ms = 3000;
	rc = send_auth_request(a, &req, resp, NULL, err);
	if (rc == 0 && (!resp->metadata_flavor || strcmp(resp->metadata_flavor, "Google")))
		rc = vx_err_set(err, VX_EAUTH,
				"%s: the answer of %s lacks \"Metadata-Flavor: Google\"; something other than a "
				"metadata server is listening there",
				what_of(a), url);
	free(url);
	return rc;
}

static int fetch_metadata(struct gcp_auth *a, char **token, int64_t *expiry_ms, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	vx_log(a->ctx, VX_LOG_DEBUG, "auth: asking the metadata server at %s for a token", a->metadata_base);
	rc = metadata_get(a, METADATA_TOKEN_PATH, &resp, err);
	if (rc == 0)
		rc = parse_token(a, &resp, METADATA_TOKEN_PATH, token, expiry_ms, err);
	if (resp.body)
		OPENSSL_cleanse(resp.body, resp.body_len);
	gcp_response_release(&resp);
	return rc;
}

/* ---- the token source ---------------------------------------------------- */

int gcp_auth_token(struct gcp_auth *a, char **out, struct vx_err *err)
{
	char *token = NULL;
	int64_t expiry = 0, now = vx_now_ms(a->ctx);
	int rc = 0;

	*out = NULL;
	if (a->token && (a->kind == GCP_AUTH_ACCESS_TOKEN || a->expiry_ms == 0 ||
			 a->expiry_ms - REFRESH_MARGIN_MS > now))
		goto copy;
	switch (a->kind) {
	case GCP_AUTH_SERVICE_ACCOUNT:
		rc = fetch_service_account(a, &token, &expiry, err);
		break;
	case GCP_AUTH_AUTHORIZED_USER:
		rc = fetch_authorized_user(a, &token, &expiry, err);
		break;
	case GCP_AUTH_EXTERNAL_ACCOUNT:
		rc = fetch_external_account(a, &token, &expiry, err);
		break;
	case GCP_AUTH_METADATA:
		rc = fetch_metadata(a, &token, &expiry, err);
		break;
	case GCP_AUTH_ACCESS_TOKEN:
	default:
		rc = vx_err_set(err, VX_EAUTH, "%s: no token", what_of(a));
		break;
	}
	if (rc < 0)
		goto done;
	free_secret(a->token);
	a->token = token;
	a->expiry_ms = expiry;
	token = NULL;
	if (expiry)
		vx_log(a->ctx, VX_LOG_DEBUG, "auth: new token from %s, valid for %lld s", what_of(a),
		       (long long)((expiry - now) / 1000));
	else
		vx_log(a->ctx, VX_LOG_DEBUG, "auth: new token from %s, expiry unknown", what_of(a));
copy:
	*out = vx_strdup(a->token);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what_of(a));
done:
	free_secret(token);
	return rc;
}

void gcp_auth_invalidate(struct gcp_auth *a)
{
	if (!a || a->kind == GCP_AUTH_ACCESS_TOKEN)
		return;
	free_secret(a->token);
	a->token = NULL;
	a->expiry_ms = 0;
}

static int source_get(void *ud, char **out, struct vx_err *err)
{
	return gcp_auth_token(ud, out, err);
}

static void source_invalidate(void *ud)
{
	gcp_auth_invalidate(ud);
}

/* ---- finding the credentials --------------------------------------------- */

static char *well_known_path(void)
{
	const char *dir = env("CLOUDSDK_CONFIG"), *home = env("HOME");

	if (dir)
		return vx_asprintf("%s/application_default_credentials.json", dir);
	if (home)
		return vx_asprintf("%s/.config/gcloud/application_default_credentials.json", home);
	return NULL;
}

static int find_credentials(struct gcp_auth *a, struct vx_err *err)
{
	const char *v, *why = NULL;
	char *wk = NULL;
	struct stat st;
	int rc = 0;

	if ((v = env("GOOGLE_OAUTH_ACCESS_TOKEN"))) {
		a->kind = GCP_AUTH_ACCESS_TOKEN;
		a->token = vx_strdup(v);
		a->description = vx_strdup("access token from GOOGLE_OAUTH_ACCESS_TOKEN");
		if (!a->token || !a->description)
			rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		else if (!gcp_http_token_ok(a->token))
			rc = vx_err_set(err, VX_EAUTH, "credentials: GOOGLE_OAUTH_ACCESS_TOKEN has characters a "
					"bearer token may not hold (RFC 6750)");
		goto done;
	}
	if ((v = env("GOOGLE_APPLICATION_CREDENTIALS")) || (v = env("google_application_credentials"))) {
		rc = load_file(a, v, "GOOGLE_APPLICATION_CREDENTIALS", err);
		goto done;
	}
	wk = well_known_path();
	if (wk && stat(wk, &st) == 0) {
		rc = load_file(a, wk, "gcloud's application default credentials", err);
		goto done;
	}
	if ((rc = metadata_base(a, err)) < 0)
		goto done;
	if (metadata_detect(a, &why)) {
		a->kind = GCP_AUTH_METADATA;
		/* "metadata server at 169.254.169.254": the scheme is noise here. */
		a->description = vx_asprintf("metadata server at %s",
					     strncmp(a->metadata_base, "http://", 7) ? a->metadata_base
										     : a->metadata_base + 7);
		if (!a->description)
			rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		goto done;
	}
	rc = vx_err_set(err, VX_EAUTH,
			"no credentials found: tried GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, %s, "
			"metadata server at %s (%s); " LOGIN_HINT,
			wk ? wk : "gcloud's well-known file (HOME is not set)",
			strncmp(a->metadata_base, "http://", 7) ? a->metadata_base : a->metadata_base + 7, why);
done:
	free(wk);
	return rc;
}

int gcp_auth_new(struct gcp_auth **out, struct vx_ctx *ctx, const struct gcp_auth_options *opts,
		 struct vx_err *err)
{
	struct gcp_auth *a = NULL;
	const char *qp;
	int rc = 0;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a) {
		rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
		goto done;
	}
	a->ctx = ctx;
	a->metadata_detected = -1;
	a->probe_timeout_ms = opts && opts->probe_timeout_ms > 0 ? opts->probe_timeout_ms : 500;
	a->source.get = source_get;
	a->source.invalidate = source_invalidate;
	a->source.ud = a;
	rc = find_credentials(a, err);
	if (rc < 0)
		goto done;
	if (!a->metadata_base && (rc = metadata_base(a, err)) < 0)
		goto done;
	if ((qp = env("GOOGLE_CLOUD_QUOTA_PROJECT"))) {
		free(a->quota_project);
		a->quota_project = vx_strdup(qp);
		if (!a->quota_project) {
			rc = vx_err_set(err, VX_ENOMEM, "credentials: out of memory");
			goto done;
		}
	}
	vx_log(ctx, VX_LOG_DEBUG, "auth: using %s", a->description);
	*out = a;
	a = NULL;
done:
	gcp_auth_free(a);
	return rc;
}

void gcp_auth_free(struct gcp_auth *a)
{
	size_t i;

	if (!a)
		return;
	free(a->path);
	free(a->description);
	free(a->project_id);
	free(a->quota_project);
	free(a->client_email);
	free_secret(a->private_key);
	free(a->private_key_id);
	free(a->token_uri);
	free(a->client_id);
	free_secret(a->client_secret);
	free_secret(a->refresh_token);
	free(a->audience);
	free(a->subject_token_type);
	free(a->impersonation_url);
	free(a->cs_file);
	free(a->cs_url);
	if (a->cs_headers) {
		/* Headers often carry a bearer for the subject token's URL. */
		for (i = 0; a->cs_headers[i]; i++)
			free_secret(a->cs_headers[i]);
		free(a->cs_headers);
	}
	free(a->cs_field);
	free(a->metadata_base);
	free_secret(a->token);
	free(a);
}

void gcp_auth_set_http(struct gcp_auth *a, struct gcp_http *http)
{
	a->http = http;
}

const struct gcp_token_source *gcp_auth_token_source(struct gcp_auth *a)
{
	return &a->source;
}

enum gcp_auth_kind gcp_auth_kind(const struct gcp_auth *a)
{
	return a->kind;
}

const char *gcp_auth_describe(const struct gcp_auth *a)
{
	return a->description;
}

const char *gcp_auth_file(const struct gcp_auth *a)
{
	return a->path;
}

const char *gcp_auth_quota_project(const struct gcp_auth *a)
{
	return a->quota_project;
}

/* ---- project id ---------------------------------------------------------- */

static int metadata_project(struct gcp_auth *a, char **out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	rc = metadata_get(a, METADATA_PROJECT_PATH, &resp, err);
	if (rc == 0) {
		*out = vx_strdup(resp.body ? resp.body : "");
		if (!*out)
			rc = vx_err_set(err, VX_ENOMEM, "project: out of memory");
		else
			trim_right(*out);
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

int gcp_auth_project(struct gcp_auth *a, const char *explicit_project, char **out, const char **from,
		     struct vx_err *err)
{
	const char *v = NULL, *src = NULL, *why = NULL;
	int rc = 0;

	*out = NULL;
	if (explicit_project && *explicit_project) {
		v = explicit_project;
		src = "stack";
	} else if ((v = env("GOOGLE_CLOUD_PROJECT"))) {
		src = "GOOGLE_CLOUD_PROJECT";
	} else if ((v = env("CLOUDSDK_CORE_PROJECT"))) {
		src = "CLOUDSDK_CORE_PROJECT";
	} else if (a && a->project_id) {
		v = a->project_id;
		src = "credential file";
	} else if (a && a->http && (a->kind == GCP_AUTH_METADATA || metadata_detect(a, &why))) {
		rc = metadata_project(a, out, err);
		if (rc == 0 && from)
			*from = "metadata server";
		return rc;
	}
	if (!v)
		return vx_err_set(err, VX_ENOTFOUND,
				  "no project: set \"project\" in the stack, or GOOGLE_CLOUD_PROJECT");
	*out = vx_strdup(v);
	if (!*out)
		return vx_err_set(err, VX_ENOMEM, "project: out of memory");
	if (from)
		*from = src;
	return rc;
}
