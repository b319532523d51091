#include "providers/gcp/quotas.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gerror.h"
#include "providers/gcp/http.h"
#include "util/buf.h"
#include "util/ctx.h"

#include "util/banned.h"

#define MAX_PAGES 100000

static void kvs_release(struct quota_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static void strs_release(char **s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(s[i]);
	free(s);
}

void quota_preference_release(struct quota_preference *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->service);
	free(p->quota_id);
	kvs_release(p->dimensions, p->n_dimensions);
	free(p->trace_id);
	free(p->request_origin);
	free(p->state_detail);
	free(p->etag);
	free(p->contact_email);
	free(p->justification);
	memset(p, 0, sizeof(*p));
}

const char *quota_preference_dimension(const struct quota_preference *p, const char *key)
{
	size_t i;

	for (i = 0; p && key && i < p->n_dimensions; i++)
		if (!strcmp(p->dimensions[i].key, key))
			return p->dimensions[i].value;
	return NULL;
}

void quota_preference_list_release(struct quota_preference_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		quota_preference_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void quota_info_release(struct quota_info *q)
{
	size_t i;

	if (!q)
		return;
	free(q->name);
	free(q->quota_id);
	free(q->metric);
	free(q->service);
	strs_release(q->dimensions, q->n_dimensions);
	for (i = 0; i < q->n_infos; i++) {
		kvs_release(q->infos[i].dimensions, q->infos[i].n_dimensions);
		strs_release(q->infos[i].applicable_locations, q->infos[i].n_applicable_locations);
	}
	free(q->infos);
	memset(q, 0, sizeof(*q));
}

void quota_info_list_release(struct quota_info_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		quota_info_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int quota_info_limit_for(const struct quota_info *q, const char *location, int64_t *out)
{
	size_t i, j;

	for (i = 0; q && location && i < q->n_infos; i++) {
		const struct quota_dimensions_info *d = &q->infos[i];

		if (!d->has_value)
			continue;
		for (j = 0; j < d->n_applicable_locations; j++)
			if (!strcmp(d->applicable_locations[j], location) ||
			    !strcmp(d->applicable_locations[j], "global")) {
				*out = d->value;
				return 0;
			}
	}
	return VX_ENOTFOUND;
}

/* ---- JSON helpers ---- */

static const char *js_str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int js_dup(char **out, const cJSON *o, const char *key)
{
	const char *s = js_str(o, key);

	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

static int js_int(const cJSON *it, int64_t lo, int64_t hi, int64_t *out)
{
	if (cJSON_IsNumber(it)) {
		double d = it->valuedouble;

		if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi ||
		    d >= 9223372036854775807.0)
			return -1;
		*out = (int64_t)d;
		return 0;
	}
	if (cJSON_IsString(it) && it->valuestring[0]) {
		char *end = NULL;
		long long v;

		errno = 0;
		v = strtoll(it->valuestring, &end, 10);
		if (errno || *end || v < lo || v > hi)
			return -1;
		*out = v;
		return 0;
	}
	return -1;
}

/* A JSON object of strings as key/value pairs (non-string values skipped). */
static int js_kvs(const cJSON *o, struct quota_kv **out, size_t *n_out)
{
	const cJSON *it;
	size_t n = 0;

	*out = NULL;
	*n_out = 0;
	if (!cJSON_IsObject(o))
		return 0;
	cJSON_ArrayForEach(it, o)
		if (cJSON_IsString(it) && it->string)
			n++;
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, o) {
		struct quota_kv *kv;

		if (!cJSON_IsString(it) || !it->string)
			continue;
		kv = &(*out)[(*n_out)++];
		if (!(kv->key = strdup(it->string)) || !(kv->value = strdup(it->valuestring)))
			return VX_ENOMEM;
	}
	return 0;
}

/* A JSON array of strings (others skipped). */
static int js_strs(const cJSON *a, char ***out, size_t *n_out)
{
	const cJSON *it;
	size_t n = 0;

	*out = NULL;
	*n_out = 0;
	if (!cJSON_IsArray(a))
		return 0;
	cJSON_ArrayForEach(it, a)
		if (cJSON_IsString(it))
			n++;
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it))
			continue;
		if (!((*out)[(*n_out)++] = strdup(it->valuestring)))
			return VX_ENOMEM;
	}
	return 0;
}

static cJSON *parse_object(const char *body, size_t len, const char *what, struct vx_err *err)
{
	cJSON *root;

	if (!body) {
		vx_err_set(err, VX_EINVAL, "%s: empty response body", what);
		return NULL;
	}
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		vx_err_set(err, VX_EINVAL, "%s: response is not a JSON object", what);
		return NULL;
	}
	return root;
}

/* ---- parsers ---- */

static int pref_from(const cJSON *o, void *dst)
{
	struct quota_preference *p = dst;
	const cJSON *cfg, *origin;
	int64_t v;
	int rc;

	if ((rc = js_dup(&p->name, o, "name")) < 0 || (rc = js_dup(&p->service, o, "service")) < 0 ||
	    (rc = js_dup(&p->quota_id, o, "quotaId")) < 0 || (rc = js_dup(&p->etag, o, "etag")) < 0 ||
	    (rc = js_dup(&p->contact_email, o, "contactEmail")) < 0 ||
	    (rc = js_dup(&p->justification, o, "justification")) < 0 ||
	    (rc = js_kvs(cJSON_GetObjectItemCaseSensitive(o, "dimensions"), &p->dimensions,
			 &p->n_dimensions)) < 0)
		return rc;
	p->reconciling = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "reconciling"));
	cfg = cJSON_GetObjectItemCaseSensitive(o, "quotaConfig");
	if (!cJSON_IsObject(cfg))
		return 0;
	if (js_int(cJSON_GetObjectItemCaseSensitive(cfg, "preferredValue"), INT64_MIN, INT64_MAX, &v) == 0)
		p->preferred_value = v;
	if (js_int(cJSON_GetObjectItemCaseSensitive(cfg, "grantedValue"), INT64_MIN, INT64_MAX, &v) == 0) {
		p->has_granted_value = 1;
		p->granted_value = v;
	}
	if ((rc = js_dup(&p->trace_id, cfg, "traceId")) < 0 ||
	    (rc = js_dup(&p->state_detail, cfg, "stateDetail")) < 0)
		return rc;
	origin = cJSON_GetObjectItemCaseSensitive(cfg, "requestOrigin");
	if (cJSON_IsString(origin))
		p->request_origin = strdup(origin->valuestring);
	else if (js_int(origin, 0, 1000000, &v) == 0)
		p->request_origin = v == 0 ? strdup("ORIGIN_UNSPECIFIED") : v == 1 ? strdup("CLOUD_CONSOLE") :
				    v == 2 ? strdup("AUTO_ADJUSTER") : strdup("UNKNOWN");
	else
		return 0;
	return p->request_origin ? 0 : VX_ENOMEM;
}

static int info_from(const cJSON *o, void *dst)
{
	struct quota_info *q = dst;
	const cJSON *arr, *it;
	size_t n = 0;
	int rc;

	if ((rc = js_dup(&q->name, o, "name")) < 0 || (rc = js_dup(&q->quota_id, o, "quotaId")) < 0 ||
	    (rc = js_dup(&q->metric, o, "metric")) < 0 || (rc = js_dup(&q->service, o, "service")) < 0 ||
	    (rc = js_strs(cJSON_GetObjectItemCaseSensitive(o, "dimensions"), &q->dimensions,
			  &q->n_dimensions)) < 0)
		return rc;
	q->is_fixed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "isFixed"));
	q->is_precise = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "isPrecise"));
	arr = cJSON_GetObjectItemCaseSensitive(o, "dimensionsInfos");
	if (!cJSON_IsArray(arr))
		return 0;
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsObject(it))
			n++;
	if (!n)
		return 0;
	if (!(q->infos = calloc(n, sizeof(*q->infos))))
		return VX_ENOMEM;
	cJSON_ArrayForEach(it, arr) {
		struct quota_dimensions_info *d;
		int64_t v;

		if (!cJSON_IsObject(it))
			continue;
		d = &q->infos[q->n_infos++];
		if ((rc = js_kvs(cJSON_GetObjectItemCaseSensitive(it, "dimensions"), &d->dimensions,
				 &d->n_dimensions)) < 0 ||
		    (rc = js_strs(cJSON_GetObjectItemCaseSensitive(it, "applicableLocations"),
				  &d->applicable_locations, &d->n_applicable_locations)) < 0)
			return rc;
		if (js_int(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "details"),
							    "value"),
			   INT64_MIN, INT64_MAX, &v) == 0) {
			d->has_value = 1;
			d->value = v;
		}
	}
	return 0;
}

static void pref_rel(void *p)
{
	quota_preference_release(p);
}

static void info_rel(void *p)
{
	quota_info_release(p);
}

static int one_parse(const char *body, size_t len, void *out, size_t elem,
		     int (*from)(const cJSON *, void *), void (*rel)(void *), const char *what,
		     struct vx_err *err)
{
	cJSON *root;
	int rc;

	memset(out, 0, elem);
	if (!(root = parse_object(body, len, what, err)))
		return VX_EINVAL;
	rc = from(root, out);
	cJSON_Delete(root);
	if (rc < 0) {
		rel(out);
		return vx_err_set(err, rc, "%s: out of memory", what);
	}
	return 0;
}

/* Appends the objects of root[key] to the array (*items, *n, *alloc) of elem-sized entries. */
static int page_parse(const char *body, size_t len, const char *key, void **items, size_t *n,
		      size_t *alloc, size_t elem, int (*from)(const cJSON *, void *),
		      void (*rel)(void *), char **next_page_token, const char *what, struct vx_err *err)
{
	const cJSON *arr, *it;
	cJSON *root;
	size_t count = 0, start = *n, i;
	int rc = 0;

	*next_page_token = NULL;
	if (!(root = parse_object(body, len, what, err)))
		return VX_EINVAL;
	arr = cJSON_GetObjectItemCaseSensitive(root, key);
	if (arr && !cJSON_IsArray(arr) && !cJSON_IsNull(arr)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: %s is not an array", what, key);
		goto done;
	}
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsObject(it))
			count++;
	if (count > (size_t)-1 / elem - *n) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: too many items", what);
		goto done;
	}
	if (*n + count > *alloc) {
		size_t want = *alloc < 8 ? 16 : *alloc * 2;
		void *p;

		if (want < *n + count || want > (size_t)-1 / elem)
			want = *n + count;
		if (!(p = realloc(*items, want * elem))) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			goto done;
		}
		*items = p;
		*alloc = want;
	}
	cJSON_ArrayForEach(it, arr) {
		void *dst;

		if (!cJSON_IsObject(it))
			continue;
		dst = (char *)*items + *n * elem;
		memset(dst, 0, elem);
		(*n)++;
		if ((rc = from(it, dst)) < 0) {
			vx_err_set(err, rc, "%s: out of memory", what);
			goto done;
		}
	}
	if (js_str(root, "nextPageToken") && js_str(root, "nextPageToken")[0] &&
	    (rc = js_dup(next_page_token, root, "nextPageToken")) < 0)
		vx_err_set(err, rc, "%s: out of memory", what);
done:
	if (rc < 0) {
		for (i = start; i < *n; i++)
			rel((char *)*items + i * elem);
		*n = start;
		free(*next_page_token);
		*next_page_token = NULL;
	}
	cJSON_Delete(root);
	return rc;
}

int quota_preference_parse_json(const char *body, size_t len, struct quota_preference *out,
				struct vx_err *err)
{
	return one_parse(body, len, out, sizeof(*out), pref_from, pref_rel,
			 "quotas: reading quota preference", err);
}

int quota_info_parse_json(const char *body, size_t len, struct quota_info *out, struct vx_err *err)
{
	return one_parse(body, len, out, sizeof(*out), info_from, info_rel, "quotas: reading quota info",
			 err);
}

int quota_preference_list_parse_json(const char *body, size_t len, struct quota_preference_list *l,
				     char **next_page_token, struct vx_err *err)
{
	void *items = l->items;
	int rc;

	rc = page_parse(body, len, "quotaPreferences", &items, &l->n, &l->alloc, sizeof(*l->items),
			pref_from, pref_rel, next_page_token, "quotas: reading quota preference list", err);
	l->items = items;
	return rc;
}

int quota_info_list_parse_json(const char *body, size_t len, struct quota_info_list *l,
			       char **next_page_token, struct vx_err *err)
{
	void *items = l->items;
	int rc;

	rc = page_parse(body, len, "quotaInfos", &items, &l->n, &l->alloc, sizeof(*l->items), info_from,
			info_rel, next_page_token, "quotas: reading quota info list", err);
	l->items = items;
	return rc;
}

int quota_preference_to_json(const struct quota_preference *p, char **out)
{
	cJSON *root = NULL, *dims, *cfg;
	char num[32];
	size_t i;
	int rc = VX_ENOMEM;

	*out = NULL;
	if (!(root = cJSON_CreateObject()))
		goto done;
	if (p->service && !cJSON_AddStringToObject(root, "service", p->service))
		goto done;
	if (p->quota_id && !cJSON_AddStringToObject(root, "quotaId", p->quota_id))
		goto done;
	if (!(dims = cJSON_AddObjectToObject(root, "dimensions")))
		goto done;
	for (i = 0; i < p->n_dimensions; i++)
		if (!p->dimensions[i].key || !p->dimensions[i].value ||
		    !cJSON_AddStringToObject(dims, p->dimensions[i].key, p->dimensions[i].value))
			goto done;
	snprintf(num, sizeof(num), "%" PRId64, p->preferred_value);
	if (!(cfg = cJSON_AddObjectToObject(root, "quotaConfig")) ||
	    !cJSON_AddStringToObject(cfg, "preferredValue", num))
		goto done;
	if (p->etag && !cJSON_AddStringToObject(root, "etag", p->etag))
		goto done;
	if (p->justification && !cJSON_AddStringToObject(root, "justification", p->justification))
		goto done;
	if (p->contact_email && !cJSON_AddStringToObject(root, "contactEmail", p->contact_email))
		goto done;
	if ((*out = cJSON_PrintUnformatted(root)))
		rc = 0;
done:
	cJSON_Delete(root);
	return rc;
}

/* ---- calls ---- */

static int seg_ok(const char *s)
{
	if (!s || !*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || *s == '.' || *s == '~'))
			return 0;
	return 1;
}

/* base + path + query pairs (NULL-terminated key, value list; NULL values skipped). */
static char *build_url(const char *base, const char *path, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *key;
	va_list ap;
	int rc, first = 1;

	rc = vx_buf_adds(&b, base);
	if (rc == 0 && (b.len == 0 || b.data[b.len - 1] != '/'))
		rc = vx_buf_addc(&b, '/');
	if (rc == 0)
		rc = vx_buf_adds(&b, path);
	va_start(ap, path);
	while (rc == 0 && (key = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		char *esc;

		if (!value)
			continue;
		if (!(esc = gcp_url_escape(value))) {
			rc = VX_ENOMEM;
			break;
		}
		rc = vx_buf_printf(&b, "%c%s=%s", first ? '?' : '&', key, esc);
		first = 0;
		free(esc);
	}
	va_end(ap);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

/*
 * Prefixes err with what. A message of one of our parsers already starts
 * with "quotas: "; that prefix is dropped so it is not said twice.
 */
static int wrap(struct vx_err *err, const char *what)
{
	static const char prefix[] = "quotas: ";

	if (err && err->msg && !strncmp(err->msg, prefix, sizeof(prefix) - 1))
		memmove(err->msg, err->msg + sizeof(prefix) - 1, strlen(err->msg) - (sizeof(prefix) - 1) + 1);
	return vx_err_wrap(err, "%s", what);
}

static int call(struct quotas_client *c, const char *method, const char *url, const char *body,
		enum gcp_retry retry, const char *rpc, const char *what, struct gcp_response *resp,
		struct vx_err *err)
{
	struct gcp_request req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.content_type = body ? "application/json" : NULL;
	req.api = "cloudquotas";
	req.retry = retry;
	req.rpc = rpc;
	rc = gcp_http_send(c->http, &req, resp, err);
	if (rc == 0) {
		if (resp->status >= 200 && resp->status < 300)
			return 0;
		return gcp_error_set(err, resp, what);
	}
	if (rc == VX_ERETRY && resp->status != 0)
		return gcp_error_set(err, resp, what);
	wrap(err, what);
	return rc;
}

/* Sends and parses one QuotaPreference answer. */
static int pref_call(struct quotas_client *c, const char *method, const char *url, const char *body,
		     enum gcp_retry retry, const char *rpc, const char *what,
		     struct quota_preference *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	rc = call(c, method, url, body, retry, rpc, what, &resp, err);
	if (rc == 0 && (rc = quota_preference_parse_json(resp.body, resp.body_len, out, err)) < 0)
		wrap(err, what);
	gcp_response_release(&resp);
	return rc;
}

int quotas_create_preference(struct quotas_client *c, const char *project, const char *id,
			     const struct quota_preference *p, struct quota_preference *out,
			     struct vx_err *err)
{
	char *what = NULL, *path = NULL, *url = NULL, *body = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("quotas: creating quota preference \"%s\"", id ? id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!seg_ok(project) || !seg_ok(id)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (quota_preference_to_json(p, &body) < 0 ||
	    !(path = vx_asprintf("projects/%s/locations/global/quotaPreferences", project)) ||
	    !(url = build_url(c->base_url, path, "quotaPreferenceId", id, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = pref_call(c, "POST", url, body, GCP_RETRY_NEVER, "CreateQuotaPreference", what, out, err);
done:
	free(body);
	free(path);
	free(url);
	free(what);
	return rc;
}

int quotas_get_preference(struct quotas_client *c, const char *project, const char *id,
			  struct quota_preference *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL, *url = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("quotas: reading quota preference \"%s\"", id ? id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!seg_ok(project) || !seg_ok(id)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/quotaPreferences/%s", project, id)) ||
	    !(url = build_url(c->base_url, path, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = pref_call(c, "GET", url, NULL, GCP_RETRY_SAFE, "GetQuotaPreference", what, out, err);
done:
	free(path);
	free(url);
	free(what);
	return rc;
}

int quotas_patch_preference(struct quotas_client *c, const char *project, const char *id,
			    const struct quota_preference *p, const char *update_mask, unsigned flags,
			    struct quota_preference *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL, *url = NULL, *body = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("quotas: %s quota preference \"%s\"",
				 (flags & QUOTAS_VALIDATE_ONLY) ? "validating" : "updating", id ? id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!seg_ok(project) || !seg_ok(id)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (quota_preference_to_json(p, &body) < 0 ||
	    !(path = vx_asprintf("projects/%s/locations/global/quotaPreferences/%s", project, id)) ||
	    !(url = build_url(c->base_url, path, "updateMask", update_mask, "allowMissing",
			      (flags & QUOTAS_ALLOW_MISSING) ? "true" : NULL, "validateOnly",
			      (flags & QUOTAS_VALIDATE_ONLY) ? "true" : NULL, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	/*
	 * Writing the same values twice is harmless (an upsert with allowMissing
	 * included), so the patch is retried, except when it carries an etag: a
	 * resend of a write that did land would then fail as a false conflict,
	 * so that one is sent once and reported uncertain instead.
	 */
	rc = pref_call(c, "PATCH", url, body,
		       (p->etag && !(flags & QUOTAS_VALIDATE_ONLY)) ? GCP_RETRY_NEVER : GCP_RETRY_SAFE,
		       "UpdateQuotaPreference", what, out, err);
done:
	free(body);
	free(path);
	free(url);
	free(what);
	return rc;
}

int quotas_list_preferences(struct quotas_client *c, const char *project, const char *filter,
			    struct quota_preference_list *out, struct vx_err *err)
{
	const char *what = "quotas: listing quota preferences";
	char *path = NULL, *token = NULL, *next = NULL;
	int rc = 0, pages = 0;

	if (!seg_ok(project))
		return vx_err_set(err, VX_EINVAL, "%s: invalid project", what);
	if (!(path = vx_asprintf("projects/%s/locations/global/quotaPreferences", project)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	for (;;) {
		struct gcp_response resp = { 0 };
		char *url = build_url(c->base_url, path, "pageToken", token, "filter", filter,
				      (const char *)NULL);

		if (!url) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			break;
		}
		rc = call(c, "GET", url, NULL, GCP_RETRY_SAFE, "ListQuotaPreferences", what, &resp, err);
		free(url);
		if (rc == 0 &&
		    (rc = quota_preference_list_parse_json(resp.body, resp.body_len, out, &next, err)) < 0)
			wrap(err, what);
		gcp_response_release(&resp);
		if (rc < 0 || !next)
			break;
		if ((token && !strcmp(token, next)) || ++pages >= MAX_PAGES) {
			rc = vx_err_set(err, VX_EAPI, "%s: the server's page token does not advance", what);
			break;
		}
		free(token);
		token = next;
		next = NULL;
	}
	if (rc < 0)
		quota_preference_list_release(out);
	free(token);
	free(next);
	free(path);
	return rc;
}

int quotas_get_info(struct quotas_client *c, const char *project, const char *service,
		    const char *quota_id, struct quota_info *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	char *what = NULL, *path = NULL, *url = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("quotas: reading quota info %s/%s", service ? service : "",
				 quota_id ? quota_id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!seg_ok(project) || !seg_ok(service) || !seg_ok(quota_id)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, service or quota id", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/services/%s/quotaInfos/%s", project,
				 service, quota_id)) ||
	    !(url = build_url(c->base_url, path, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "GET", url, NULL, GCP_RETRY_SAFE, "GetQuotaInfo", what, &resp, err);
	if (rc == 0 && (rc = quota_info_parse_json(resp.body, resp.body_len, out, err)) < 0)
		wrap(err, what);
done:
	gcp_response_release(&resp);
	free(path);
	free(url);
	free(what);
	return rc;
}

int quotas_list_infos(struct quotas_client *c, const char *project, const char *service,
		      struct quota_info_list *out, struct vx_err *err)
{
	char *what = NULL, *path = NULL, *token = NULL, *next = NULL;
	int rc = 0, pages = 0;

	if (!(what = vx_asprintf("quotas: listing quota infos of %s", service ? service : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!seg_ok(project) || !seg_ok(service)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or service", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/services/%s/quotaInfos", project,
				 service))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	for (;;) {
		struct gcp_response resp = { 0 };
		char *url = build_url(c->base_url, path, "pageToken", token, (const char *)NULL);

		if (!url) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
			break;
		}
		rc = call(c, "GET", url, NULL, GCP_RETRY_SAFE, "ListQuotaInfos", what, &resp, err);
		free(url);
		if (rc == 0 && (rc = quota_info_list_parse_json(resp.body, resp.body_len, out, &next, err)) < 0)
			wrap(err, what);
		gcp_response_release(&resp);
		if (rc < 0 || !next)
			break;
		if ((token && !strcmp(token, next)) || ++pages >= MAX_PAGES) {
			rc = vx_err_set(err, VX_EAPI, "%s: the server's page token does not advance", what);
			break;
		}
		free(token);
		token = next;
		next = NULL;
	}
done:
	if (rc < 0)
		quota_info_list_release(out);
	free(token);
	free(next);
	free(path);
	free(what);
	return rc;
}
