#include "providers/gcp/gerror.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "providers/gcp/permissions.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* What the hints need beyond struct gcp_error. */
struct gerror_full {
	struct gcp_error e;
	char *service;  /* ErrorInfo.metadata.service, or from the message's console URL */
	char *consumer; /* ErrorInfo.metadata.consumer ("projects/123") */
	char *domain;   /* ErrorInfo.domain */
};

#define SNIPPET_MAX 200

const char *gcp_status_for_http(long s)
{
	switch (s) {
	case 200: return "OK";
	case 400: return "INVALID_ARGUMENT";
	case 401: return "UNAUTHENTICATED";
	case 403: return "PERMISSION_DENIED";
	case 404: return "NOT_FOUND";
	case 409: return "ABORTED";
	case 416: return "OUT_OF_RANGE";
	case 429: return "RESOURCE_EXHAUSTED";
	case 499: return "CANCELLED";
	case 501: return "UNIMPLEMENTED";
	case 503: return "UNAVAILABLE";
	case 504: return "DEADLINE_EXCEEDED";
	default: break;
	}
	if (s >= 400 && s < 500)
		return "FAILED_PRECONDITION";
	if (s >= 500 && s < 600)
		return "INTERNAL";
	return "UNKNOWN";
}

static const char *jstr(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Sets *dst to a copy of s unless already set, cleaned of control characters:
 * everything kept here ends up in a message on a terminal. 0 or VX_ENOMEM. */
static int take(char **dst, const char *s)
{
	if (*dst || !s || !*s)
		return 0;
	*dst = vx_text_clean(s);
	return *dst ? 0 : VX_ENOMEM;
}

/* google.protobuf.Duration "1.5s" -> 1500; -1 when malformed. */
static int64_t duration_ms(const char *s)
{
	int64_t sec = 0, ms = 0, scale = 100;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (sec > 100000000)
			return -1;
		sec = sec * 10 + (*p - '0');
	}
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++) {
			ms += (*p - '0') * scale;
			scale /= 10;
		}
	if (strcmp(p, "s"))
		return -1;
	return sec * 1000 + ms;
}

/* Type name after the type URL's last '/': "google.rpc.ErrorInfo". */
static const char *detail_type(const cJSON *d)
{
	const char *t = jstr(d, "@type");
	const char *slash;

	if (!t)
		return "";
	slash = strrchr(t, '/');
	return slash ? slash + 1 : t;
}

static int parse_details(struct gerror_full *f, const cJSON *details)
{
	const cJSON *d, *v, *first, *md;
	const char *t;
	int rc = 0;

	cJSON_ArrayForEach(d, details) {
		t = detail_type(d);
		if (!strcmp(t, "google.rpc.ErrorInfo")) {
			md = cJSON_GetObjectItemCaseSensitive(d, "metadata");
			if ((rc = take(&f->e.reason, jstr(d, "reason"))) < 0 ||
			    (rc = take(&f->domain, jstr(d, "domain"))) < 0 ||
			    (rc = take(&f->service, jstr(md, "service"))) < 0 ||
			    (rc = take(&f->consumer, jstr(md, "consumer"))) < 0)
				return rc;
			/* Rate-limit ErrorInfos name the metric in their metadata. */
			if ((rc = take(&f->e.quota_metric, jstr(md, "quota_metric"))) < 0)
				return rc;
		} else if (!strcmp(t, "google.rpc.RetryInfo")) {
			if (f->e.retry_delay_ms < 0)
				f->e.retry_delay_ms = duration_ms(jstr(d, "retryDelay"));
		} else if (!strcmp(t, "google.rpc.QuotaFailure")) {
			v = cJSON_GetObjectItemCaseSensitive(d, "violations");
			first = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 0) : NULL;
			if ((rc = take(&f->e.quota_metric, jstr(first, "quotaMetric"))) < 0 ||
			    (rc = take(&f->e.quota_metric, jstr(first, "quota_metric"))) < 0 ||
			    (rc = take(&f->e.quota_metric, jstr(first, "subject"))) < 0)
				return rc;
		} else if (!strcmp(t, "google.rpc.BadRequest")) {
			v = cJSON_GetObjectItemCaseSensitive(d, "fieldViolations");
			if (!v)
				v = cJSON_GetObjectItemCaseSensitive(d, "field_violations");
			first = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 0) : NULL;
			if ((rc = take(&f->e.field, jstr(first, "field"))) < 0)
				return rc;
		}
	}
	return 0;
}

/* Compute's errors[]: {reason, message, domain, errorDetails[{errorInfo, quotaInfo}]}. */
static int parse_compute_errors(struct gerror_full *f, const cJSON *errors)
{
	const cJSON *first = cJSON_GetArrayItem(errors, 0), *ed, *x;
	int rc;

	if (!cJSON_IsObject(first))
		return 0;
	if ((rc = take(&f->e.reason, jstr(first, "reason"))) < 0 ||
	    (rc = take(&f->e.message, jstr(first, "message"))) < 0)
		return rc;
	cJSON_ArrayForEach(ed, cJSON_GetObjectItemCaseSensitive(first, "errorDetails")) {
		x = cJSON_GetObjectItemCaseSensitive(ed, "errorInfo");
		if (x && (rc = take(&f->e.reason, jstr(x, "reason"))) < 0)
			return rc;
		x = cJSON_GetObjectItemCaseSensitive(ed, "quotaInfo");
		if (x && (rc = take(&f->e.quota_metric, jstr(x, "metricName"))) < 0)
			return rc;
	}
	return 0;
}

/* A short, single-line text of a body that is not a Google error: HTML tags,
 * <style> and <script> dropped, whitespace collapsed, cut at SNIPPET_MAX. */
static char *snippet(const char *body, size_t len)
{
	struct vx_buf b = VX_BUF_INIT;
	size_t i = 0;
	int html = 0, space = 0;

	while (i < len && isspace((unsigned char)body[i]))
		i++;
	html = i < len && body[i] == '<';
	for (; i < len && b.len < SNIPPET_MAX; i++) {
		unsigned char c = (unsigned char)body[i];

		if (html && c == '<') {
			const char *end = NULL;
			const char *skip = NULL;

			if (len - i >= 6 && !strncasecmp(body + i, "<style", 6))
				skip = "</style>";
			else if (len - i >= 7 && !strncasecmp(body + i, "<script", 7))
				skip = "</script>";
			if (skip) {
				size_t sl = strlen(skip), j = i + vx_text_find_nocase(body + i, len - i, skip, sl);

				if (j < len)
					end = body + j + sl - 1;
			} else {
				end = memchr(body + i, '>', len - i);
			}
			if (!end)
				break;
			i = (size_t)(end - body);
			space = b.len > 0;
			continue;
		}
		if (isspace(c) || c < 0x20) {
			space = b.len > 0;
			continue;
		}
		if (space && vx_buf_addc(&b, ' ') < 0)
			goto oom;
		space = 0;
		if (vx_buf_addc(&b, (char)c) < 0)
			goto oom;
	}
	if (i < len && b.len >= SNIPPET_MAX) {
		/* Do not cut a UTF-8 sequence in half. */
		while (b.len > 0 && ((unsigned char)b.data[b.len - 1] & 0xC0) == 0x80)
			b.len--;
		if (b.len > 0 && ((unsigned char)b.data[b.len - 1] & 0xC0) == 0xC0)
			b.len--;
		b.data[b.len] = '\0';
		if (vx_buf_adds(&b, "...") < 0)
			goto oom;
	}
	if (b.len == 0) {
		vx_buf_release(&b);
		return NULL;
	}
	/* DEL, C1 controls and broken UTF-8 may still be in it. */
	if (!vx_text_is_clean(vx_buf_str(&b), b.len)) {
		char *clean = vx_text_clean(vx_buf_str(&b));

		vx_buf_release(&b);
		return clean;
	}
	return vx_buf_detach(&b);
oom:
	vx_buf_release(&b);
	return NULL;
}

static void full_release(struct gerror_full *f)
{
	gcp_error_release(&f->e);
	free(f->service);
	free(f->consumer);
	free(f->domain);
	f->service = f->consumer = f->domain = NULL;
}

static int parse_full(struct gerror_full *f, long http_status, const char *body, size_t len)
{
	cJSON *root = NULL;
	const cJSON *top, *e, *v;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	f->e.retry_delay_ms = -1;
	f->e.http_status = http_status;
	if (body && len)
		root = gjson_parse(body, len);
	top = root;
	/* Some front ends wrap the envelope in a one-element array. */
	if (cJSON_IsArray(top))
		top = cJSON_GetArrayItem(top, 0);
	e = cJSON_GetObjectItemCaseSensitive(top, "error");
	if (cJSON_IsObject(e)) {
		if ((rc = take(&f->e.status, jstr(e, "status"))) < 0 ||
		    (rc = take(&f->e.message, jstr(e, "message"))) < 0)
			goto done;
		v = cJSON_GetObjectItemCaseSensitive(e, "code");
		if (!http_status && cJSON_IsNumber(v))
			f->e.http_status = (long)v->valuedouble;
		if ((rc = parse_details(f, cJSON_GetObjectItemCaseSensitive(e, "details"))) < 0 ||
		    (rc = parse_compute_errors(f, cJSON_GetObjectItemCaseSensitive(e, "errors"))) < 0)
			goto done;
	} else if (cJSON_IsString(e)) {
		/* OAuth 2.0 (RFC 6749 section 5.2). */
		if ((rc = take(&f->e.reason, e->valuestring)) < 0 ||
		    (rc = take(&f->e.message, jstr(top, "error_description"))) < 0 ||
		    (rc = take(&f->e.message, e->valuestring)) < 0)
			goto done;
	} else if (!root && body && len) {
		f->e.message = snippet(body, len);
	}
	if (!f->e.status) {
		f->e.status = vx_strdup(gcp_status_for_http(f->e.http_status));
		if (!f->e.status)
			rc = VX_ENOMEM;
	}
done:
	cJSON_Delete(root);
	if (rc < 0)
		full_release(f);
	return rc;
}

int gcp_error_parse(struct gcp_error *out, long http_status, const char *body, size_t len)
{
	struct gerror_full f;
	int rc = parse_full(&f, http_status, body, len);

	if (rc < 0) {
		struct gcp_error init = GCP_ERROR_INIT;

		*out = init;
		return rc;
	}
	*out = f.e;
	f.e.status = f.e.message = f.e.reason = f.e.quota_metric = f.e.field = NULL;
	full_release(&f);
	return 0;
}

void gcp_error_release(struct gcp_error *e)
{
	if (!e)
		return;
	free(e->status);
	free(e->message);
	free(e->reason);
	free(e->quota_metric);
	free(e->field);
	e->status = e->message = e->reason = e->quota_metric = e->field = NULL;
}

static int is_rate_limit_reason(const char *r)
{
	return r && (!strcmp(r, "rateLimitExceeded") || !strcmp(r, "userRateLimitExceeded") ||
		     !strcmp(r, "RATE_LIMIT_EXCEEDED"));
}

/* Copies the run of [A-Za-z0-9._-] starting at p. */
static char *word_at(const char *p)
{
	size_t n = 0;

	while (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '_' || p[n] == '-')
		n++;
	return n ? vx_asprintf("%.*s", (int)n, p) : NULL;
}

/* "... Cloud API has not been used in project 123 before or it is disabled. Enable it by
 * visiting https://console.developers.google.com/apis/api/aiplatform.googleapis.com/overview?project=123 ..." */
static void service_from_message(struct gerror_full *f)
{
	const char *m = f->e.message, *p;

	if (!m)
		return;
	if (!f->service && (p = strstr(m, "/apis/api/")))
		f->service = word_at(p + strlen("/apis/api/"));
	if (!f->consumer && (p = strstr(m, "in project "))) {
		char *w = word_at(p + strlen("in project "));

		if (w) {
			f->consumer = vx_asprintf("projects/%s", w);
			free(w);
		}
	}
}

/*
 * The permission hint from the table (permissions.h): which permission the
 * failed call needed, for which method, and the smallest role that grants
 * it, where. Also for Vertex's refusal to act as a job's service account,
 * which comes as INVALID_ARGUMENT.
 */
static int permission_hint(struct vx_buf *b, const struct gerror_full *f, const char *api, const char *rpc,
			   const char *project)
{
	const struct gcp_permission *p = NULL;
	const char *msg = f->e.message;

	if (msg && strstr(msg, "permission to act as"))
		p = gcp_permission_find("iam.serviceAccounts.actAs");
	if (!p)
		p = gcp_permission_for(api, rpc, msg);
	if (!p || !p->permission)
		return 0;
	if (p->on != GCP_ON_PROJECT)
		return vx_buf_printf(b, " (the caller lacks %s for %s: grant %s on %s)", p->permission,
				     p->method, p->role, gcp_permission_on_name(p->on));
	return vx_buf_printf(b, " (the caller lacks %s for %s: grant %s on %s%s)", p->permission, p->method,
			     p->role, project ? "project " : "the project", project ? project : "");
}

static int add_hint(struct vx_buf *b, const struct gerror_full *f, const char *api, const char *rpc)
{
	const char *st = f->e.status ? f->e.status : "";
	const char *reason = f->e.reason ? f->e.reason : "";
	const char *msg = f->e.message ? f->e.message : "";
	const char *project = NULL;

	if (f->consumer)
		project = !strncmp(f->consumer, "projects/", 9) ? f->consumer + 9 : f->consumer;
	if (!strcmp(reason, "SERVICE_DISABLED") || !strcmp(reason, "accessNotConfigured") ||
	    strstr(msg, "has not been used in project")) {
		if (project)
			return vx_buf_printf(b, " (enable the API: gcloud services enable %s --project %s)",
					     f->service ? f->service : "SERVICE", project);
		return vx_buf_printf(b, " (enable the API: gcloud services enable %s)",
				     f->service ? f->service : "SERVICE");
	}
	if (f->e.http_status == 401 || !strcmp(st, "UNAUTHENTICATED") ||
	    !strcmp(reason, "invalid_grant") || !strcmp(reason, "invalid_client"))
		return vx_buf_adds(b, " (run 'gcloud auth application-default login' or set "
				   "GOOGLE_APPLICATION_CREDENTIALS)");
	if (!strcmp(st, "RESOURCE_EXHAUSTED") || f->e.http_status == 429 ||
	    is_rate_limit_reason(reason) || !strcmp(reason, "quotaExceeded")) {
		if (f->e.quota_metric)
			return vx_buf_printf(b, " (quota exhausted: %s; wait, lower the demand or "
					     "request more with a quota preference)", f->e.quota_metric);
		return 0;
	}
	if (!strcmp(st, "PERMISSION_DENIED") || f->e.http_status == 403 || strstr(msg, "permission to act as"))
		return permission_hint(b, f, api, rpc, project);
	if (f->e.field)
		return vx_buf_printf(b, " (field %s)", f->e.field);
	return 0;
}

static int code_for(const struct gerror_full *f)
{
	long s = f->e.http_status;
	const char *st = f->e.status ? f->e.status : "";

	if (s == 404)
		return VX_ENOTFOUND;
	if (s == 409 || s == 412 || !strcmp(st, "ABORTED"))
		return VX_ECONFLICT;
	if (s == 403 && is_rate_limit_reason(f->e.reason))
		return VX_ERETRY;
	if (s == 403)
		return VX_EDENIED;
	if (s == 401)
		return VX_EAUTH;
	if (s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504)
		return VX_ERETRY;
	return VX_EAPI;
}

int gcp_error_set(struct vx_err *err, const struct gcp_response *resp, const char *what)
{
	return gcp_error_set_call(err, resp, what, NULL, NULL);
}

int gcp_error_set_call(struct vx_err *err, const struct gcp_response *resp, const char *what, const char *api,
		       const char *rpc)
{
	struct gerror_full f;
	struct vx_buf b = VX_BUF_INIT;
	int code;

	if (!what)
		what = "request";
	if (!resp)
		return vx_err_set(err, VX_EIO, "%s: no response", what);
	if (resp->uncertain)
		return vx_err_set(err, VX_EUNCERTAIN, "%s: the outcome is unknown (%s)", what,
				  resp->status ? gcp_status_for_http(resp->status) : "no response");
	if (resp->status == 0)
		return vx_err_set(err, VX_ERETRY, "%s: no response from the server", what);
	if (parse_full(&f, resp->status, resp->body, resp->body ? resp->body_len : 0) < 0)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	service_from_message(&f);
	code = code_for(&f);
	if (vx_buf_printf(&b, "%s: %s", what, f.e.status) < 0 ||
	    (f.e.message ? vx_buf_printf(&b, ": %s", f.e.message)
			 : vx_buf_printf(&b, " (HTTP %ld)", resp->status)) < 0 ||
	    add_hint(&b, &f, api, rpc) < 0)
		code = VX_ENOMEM;
	if (code == VX_ENOMEM)
		vx_err_set(err, code, "%s: out of memory", what);
	else
		vx_err_set(err, code, "%s", vx_buf_str(&b));
	vx_buf_release(&b);
	full_release(&f);
	return code;
}
