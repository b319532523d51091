/* Application Default Credentials: the ADC order, credential files and the token cache.
 * Grants are in auth_grant.c, the metadata server in auth_metadata.c. See auth.h. */
#include "providers/gcp/auth.h"
#include "providers/gcp/auth_internal.h"

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
#define DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define DEFAULT_STS_URL "https://sts.googleapis.com/v1/token"
#define REFRESH_MARGIN_MS (5 * 60 * 1000)
#define LOGIN_HINT "run 'gcloud auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS"

void gcp_auth_free_secret(char *s)
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
void gcp_auth_json_free_secret(cJSON *j)
{
	if (j) {
		json_cleanse(j->child);
		cJSON_Delete(j);
	}
}

/* vx_getenv that treats "" as unset. */
const char *gcp_auth_env(const struct gcp_auth *a, const char *name)
{
	const char *v = vx_getenv(a ? a->ctx : NULL, name); /* gcp_auth_project takes a NULL a */

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

void gcp_auth_scrub_all(const struct gcp_auth *a, struct vx_err *err, const char *extra1, const char *extra2)
{
	const char *secrets[] = { a->token, a->refresh_token, a->client_secret, a->private_key, extra1, extra2 };

	scrub(err, secrets, sizeof(secrets) / sizeof(secrets[0]));
}

/* "<secret-free what>: " context for errors and logs. */
const char *gcp_auth_what(const struct gcp_auth *a)
{
	return a->description ? a->description : "credentials";
}

/* Drops trailing white space (a token file usually ends with a newline). */
void gcp_auth_trim_right(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* ---- credential files ---------------------------------------------------- */

/* A string member of obj, or NULL when absent, not a string or empty. */
const char *gcp_auth_jstr(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) && v->valuestring && *v->valuestring ? v->valuestring : NULL;
}

static int need(char **dst, const cJSON *obj, const char *name, const char *what, const char *path,
		struct vx_err *err)
{
	const char *v = gcp_auth_jstr(obj, name);

	if (!v)
		return vx_err_set(err, VX_EINVAL, "%s %s: missing \"%s\"", what, path, name);
	*dst = vx_strdup(v);
	return *dst ? 0 : vx_err_set(err, VX_ENOMEM, "%s %s: out of memory", what, path);
}

static int opt(char **dst, const cJSON *obj, const char *name, struct vx_err *err)
{
	const char *v = gcp_auth_jstr(obj, name);

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
	const char *env_id = gcp_auth_jstr(cs, "environment_id"), *ftype;
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
	ftype = format ? gcp_auth_jstr(format, "type") : NULL;
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
	type = gcp_auth_jstr(j, "type");
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
	gcp_auth_json_free_secret(j); /* the parsed copy holds the private key or refresh token */
	if (b.data)
		OPENSSL_cleanse(b.data, b.len);
	vx_buf_release(&b);
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
		rc = gcp_auth_grant_service_account(&token, &expiry, a, err);
		break;
	case GCP_AUTH_AUTHORIZED_USER:
		rc = gcp_auth_grant_authorized_user(&token, &expiry, a, err);
		break;
	case GCP_AUTH_EXTERNAL_ACCOUNT:
		rc = gcp_auth_grant_external_account(&token, &expiry, a, err);
		break;
	case GCP_AUTH_METADATA:
		rc = gcp_auth_metadata_token(&token, &expiry, a, err);
		break;
	case GCP_AUTH_ACCESS_TOKEN:
	default:
		rc = vx_err_set(err, VX_EAUTH, "%s: no token", gcp_auth_what(a));
		break;
	}
	if (rc < 0)
		goto done;
	gcp_auth_free_secret(a->token);
	a->token = token;
	a->expiry_ms = expiry;
	token = NULL;
	if (expiry)
		vx_log(a->ctx, VX_LOG_DEBUG, "auth: new token from %s, valid for %lld s", gcp_auth_what(a),
		       (long long)((expiry - now) / 1000));
	else
		vx_log(a->ctx, VX_LOG_DEBUG, "auth: new token from %s, expiry unknown", gcp_auth_what(a));
copy:
	*out = vx_strdup(a->token);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", gcp_auth_what(a));
done:
	gcp_auth_free_secret(token);
	return rc;
}

void gcp_auth_invalidate(struct gcp_auth *a)
{
	if (!a || a->kind == GCP_AUTH_ACCESS_TOKEN)
		return;
	gcp_auth_free_secret(a->token);
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

static char *well_known_path(const struct gcp_auth *a)
{
	const char *dir = gcp_auth_env(a, "CLOUDSDK_CONFIG"), *home = gcp_auth_env(a, "HOME");

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

	if ((v = gcp_auth_env(a, "GOOGLE_OAUTH_ACCESS_TOKEN"))) {
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
	if ((v = gcp_auth_env(a, "GOOGLE_APPLICATION_CREDENTIALS")) ||
	    (v = gcp_auth_env(a, "google_application_credentials"))) {
		rc = load_file(a, v, "GOOGLE_APPLICATION_CREDENTIALS", err);
		goto done;
	}
	wk = well_known_path(a);
	if (wk && stat(wk, &st) == 0) {
		rc = load_file(a, wk, "gcloud's application default credentials", err);
		goto done;
	}
	if ((rc = gcp_auth_metadata_base(a, err)) < 0)
		goto done;
	if (gcp_auth_metadata_detect(&why, a)) {
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
	if (!a->metadata_base && (rc = gcp_auth_metadata_base(a, err)) < 0)
		goto done;
	if ((qp = gcp_auth_env(a, "GOOGLE_CLOUD_QUOTA_PROJECT"))) {
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
	gcp_auth_free_secret(a->private_key);
	free(a->private_key_id);
	free(a->token_uri);
	free(a->client_id);
	gcp_auth_free_secret(a->client_secret);
	gcp_auth_free_secret(a->refresh_token);
	free(a->audience);
	free(a->subject_token_type);
	free(a->impersonation_url);
	free(a->cs_file);
	free(a->cs_url);
	if (a->cs_headers) {
		/* Headers often carry a bearer for the subject token's URL. */
		for (i = 0; a->cs_headers[i]; i++)
			gcp_auth_free_secret(a->cs_headers[i]);
		free(a->cs_headers);
	}
	free(a->cs_field);
	free(a->metadata_base);
	gcp_auth_free_secret(a->token);
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

int gcp_auth_project(struct gcp_auth *a, const char *explicit_project, char **out, const char **from,
		     struct vx_err *err)
{
	const char *v = NULL, *src = NULL, *why = NULL;
	int rc = 0;

	*out = NULL;
	if (explicit_project && *explicit_project) {
		v = explicit_project;
		src = "stack";
	} else if ((v = gcp_auth_env(a, "GOOGLE_CLOUD_PROJECT"))) {
		src = "GOOGLE_CLOUD_PROJECT";
	} else if ((v = gcp_auth_env(a, "CLOUDSDK_CORE_PROJECT"))) {
		src = "CLOUDSDK_CORE_PROJECT";
	} else if (a && a->project_id) {
		v = a->project_id;
		src = "credential file";
	} else if (a && a->http && (a->kind == GCP_AUTH_METADATA || gcp_auth_metadata_detect(&why, a))) {
		rc = gcp_auth_metadata_project(out, a, err);
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
