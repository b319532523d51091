#include "providers/gcp/quotas.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "providers/gcp/http.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/timefmt.h"

#include "util/banned.h"

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
	vx_labels_free(p->dimensions, p->n_dimensions);
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
	return p && key ? vx_labels_get(p->dimensions, p->n_dimensions, key) : NULL;
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
		vx_labels_free(q->infos[i].dimensions, q->infos[i].n_dimensions);
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

/* A JSON object of strings as key/value pairs (non-string values skipped). */
static int js_kvs(const cJSON *o, struct vx_label **out, size_t *n_out)
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
		struct vx_label *kv;

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

/* ---- parsers ---- */

/* An RFC 3339 time as Unix ms; 0 when absent or not a time (the server's word is not trusted). */
static int64_t time_ms(const cJSON *v)
{
	int64_t ms = 0;

	if (!cJSON_IsString(v) || vx_time_parse(&ms, v->valuestring, 0) < 0 || ms < 0)
		return 0;
	return ms;
}

static int pref_from(const cJSON *o, void *dst)
{
	struct quota_preference *p = dst;
	const cJSON *cfg, *origin;
	int64_t v;
	int rc;

	if ((rc = gjson_dup(&p->name, o, "name")) < 0 || (rc = gjson_dup(&p->service, o, "service")) < 0 ||
	    (rc = gjson_dup(&p->quota_id, o, "quotaId")) < 0 || (rc = gjson_dup(&p->etag, o, "etag")) < 0 ||
	    (rc = gjson_dup(&p->contact_email, o, "contactEmail")) < 0 ||
	    (rc = gjson_dup(&p->justification, o, "justification")) < 0 ||
	    (rc = js_kvs(cJSON_GetObjectItemCaseSensitive(o, "dimensions"), &p->dimensions,
			 &p->n_dimensions)) < 0)
		return rc;
	p->reconciling = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "reconciling"));
	p->create_ms = time_ms(cJSON_GetObjectItemCaseSensitive(o, "createTime"));
	p->update_ms = time_ms(cJSON_GetObjectItemCaseSensitive(o, "updateTime"));
	cfg = cJSON_GetObjectItemCaseSensitive(o, "quotaConfig");
	if (!cJSON_IsObject(cfg))
		return 0;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(cfg, "preferredValue"), INT64_MIN, INT64_MAX, &v) == 0)
		p->preferred_value = v;
	if (gjson_int(cJSON_GetObjectItemCaseSensitive(cfg, "grantedValue"), INT64_MIN, INT64_MAX, &v) == 0) {
		p->has_granted_value = 1;
		p->granted_value = v;
	}
	if ((rc = gjson_dup(&p->trace_id, cfg, "traceId")) < 0 ||
	    (rc = gjson_dup(&p->state_detail, cfg, "stateDetail")) < 0)
		return rc;
	origin = cJSON_GetObjectItemCaseSensitive(cfg, "requestOrigin");
	if (cJSON_IsString(origin))
		p->request_origin = strdup(origin->valuestring);
	else if (gjson_int(origin, 0, 1000000, &v) == 0)
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

	if ((rc = gjson_dup(&q->name, o, "name")) < 0 || (rc = gjson_dup(&q->quota_id, o, "quotaId")) < 0 ||
	    (rc = gjson_dup(&q->metric, o, "metric")) < 0 || (rc = gjson_dup(&q->service, o, "service")) < 0 ||
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
		if (gjson_int(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "details"),
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

int quota_preference_parse_json(const char *body, size_t len, struct quota_preference *out,
				struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), pref_from, pref_rel,
			 "quotas: reading quota preference", err);
}

int quota_info_parse_json(const char *body, size_t len, struct quota_info *out, struct vx_err *err)
{
	return gjson_parse_one(body, len, out, sizeof(*out), info_from, info_rel, "quotas: reading quota info",
			 err);
}

int quota_preference_list_parse_json(const char *body, size_t len, struct quota_preference_list *l,
				     char **next_page_token, struct vx_err *err)
{
	void *items = l->items;
	int rc;

	rc = gjson_parse_page(body, len, "quotaPreferences", &items, &l->n, &l->alloc, sizeof(*l->items),
			pref_from, pref_rel, next_page_token, "quotas: reading quota preference list", err);
	l->items = items;
	return rc;
}

int quota_info_list_parse_json(const char *body, size_t len, struct quota_info_list *l,
			       char **next_page_token, struct vx_err *err)
{
	void *items = l->items;
	int rc;

	rc = gjson_parse_page(body, len, "quotaInfos", &items, &l->n, &l->alloc, sizeof(*l->items), info_from,
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

/* fenced: a write, checked against c->fence before each attempt. */
static int call(struct quotas_client *c, const char *method, const char *url, const char *body,
		enum gcp_retry retry, const char *rpc, int fenced, const char *what,
		struct gcp_response *resp, struct vx_err *err)
{
	struct gcp_request req;

	gcall_request_init(&req, "cloudquotas", method, url, body, retry, rpc);
	if (fenced)
		req.fence = c->fence;
	return gcall_send(c->http, &req, "quotas", what, resp, err);
}

/* The ignoreSafetyChecks values for bits, in a fixed order; absent bits give NULL (left out). */
static const char *safety_value(unsigned bits, unsigned bit)
{
	if (!(bits & bit))
		return NULL;
	return bit == QUOTAS_IGNORE_DECREASE_BELOW_USAGE ? "QUOTA_DECREASE_BELOW_USAGE"
							 : "QUOTA_DECREASE_PERCENTAGE_TOO_HIGH";
}

/* Sends and parses one QuotaPreference answer. */
static int pref_call(struct quotas_client *c, const char *method, const char *url, const char *body,
		     enum gcp_retry retry, const char *rpc, int fenced, const char *what,
		     struct quota_preference *out, struct vx_err *err)
{
	struct gcp_response resp = { 0 };
	int rc;

	rc = call(c, method, url, body, retry, rpc, fenced, what, &resp, err);
	if (rc == 0 && (rc = quota_preference_parse_json(resp.body, resp.body_len, out, err)) < 0)
		gcall_wrap(err, "quotas", what);
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
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(id, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (quota_preference_to_json(p, &body) < 0 ||
	    !(path = vx_asprintf("projects/%s/locations/global/quotaPreferences", project)) ||
	    !(url = gcall_url(c->base_url, path, "quotaPreferenceId", id, "ignoreSafetyChecks",
			      safety_value(p->ignore_safety_checks, QUOTAS_IGNORE_DECREASE_BELOW_USAGE),
			      "ignoreSafetyChecks",
			      safety_value(p->ignore_safety_checks, QUOTAS_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH),
			      (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	/* Resent with the same body when a reply is lost or a 503 comes back:
	 * quotaPreferenceId makes a second preference impossible (a resend
	 * after the first landed is refused ALREADY_EXISTS, and the next plan
	 * adopts the preference), where never resending left a declared
	 * preference uncreated after a run of 503s (make torture). */
	rc = pref_call(c, "POST", url, body, GCP_RETRY_REQUEST_ID, "CreateQuotaPreference", 1, what, out,
		       err);
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
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(id, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/quotaPreferences/%s", project, id)) ||
	    !(url = gcall_url(c->base_url, path, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = pref_call(c, "GET", url, NULL, GCP_RETRY_SAFE, "GetQuotaPreference", 0, what, out, err);
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
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(id, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or preference id", what);
		goto done;
	}
	if (quota_preference_to_json(p, &body) < 0 ||
	    !(path = vx_asprintf("projects/%s/locations/global/quotaPreferences/%s", project, id)) ||
	    !(url = gcall_url(c->base_url, path, "updateMask", update_mask, "allowMissing",
			      (flags & QUOTAS_ALLOW_MISSING) ? "true" : NULL, "validateOnly",
			      (flags & QUOTAS_VALIDATE_ONLY) ? "true" : NULL, "ignoreSafetyChecks",
			      safety_value(p->ignore_safety_checks, QUOTAS_IGNORE_DECREASE_BELOW_USAGE),
			      "ignoreSafetyChecks",
			      safety_value(p->ignore_safety_checks, QUOTAS_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH),
			      (const char *)NULL))) {
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
		       "UpdateQuotaPreference", !(flags & QUOTAS_VALIDATE_ONLY), what, out, err);
done:
	free(body);
	free(path);
	free(url);
	free(what);
	return rc;
}

/* What each page of a list call needs: prefs or infos is the list to fill. */
struct list_pages {
	struct quotas_client *c;
	const char *path, *filter, *what;
	struct quota_preference_list *prefs;
	struct quota_info_list *infos;
};

static int list_page(void *ud, const char *token, char **next, struct vx_err *err)
{
	struct list_pages *p = ud;
	struct gcp_response resp = { 0 };
	char *url = gcall_url(p->c->base_url, p->path, "pageToken", token, "filter", p->filter,
			      (const char *)NULL);
	int rc;

	if (!url)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", p->what);
	rc = call(p->c, "GET", url, NULL, GCP_RETRY_SAFE,
		  p->prefs ? "ListQuotaPreferences" : "ListQuotaInfos", 0, p->what, &resp, err);
	free(url);
	if (rc == 0) {
		rc = p->prefs ? quota_preference_list_parse_json(resp.body, resp.body_len, p->prefs, next, err)
			      : quota_info_list_parse_json(resp.body, resp.body_len, p->infos, next, err);
		if (rc < 0)
			gcall_wrap(err, "quotas", p->what);
	}
	gcp_response_release(&resp);
	return rc;
}

int quotas_list_preferences(struct quotas_client *c, const char *project, const char *filter,
			    struct quota_preference_list *out, struct vx_err *err)
{
	const char *what = "quotas: listing quota preferences";
	struct list_pages p = { c, NULL, filter, what, out, NULL };
	char *path = NULL;
	int rc;

	if (!gcall_segment_ok(project, NULL))
		return vx_err_set(err, VX_EINVAL, "%s: invalid project", what);
	if (!(path = vx_asprintf("projects/%s/locations/global/quotaPreferences", project)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	p.path = path;
	if ((rc = gcall_pages(list_page, &p, what, err)) < 0)
		quota_preference_list_release(out);
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
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(service, NULL) || !gcall_segment_ok(quota_id, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project, service or quota id", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/services/%s/quotaInfos/%s", project,
				 service, quota_id)) ||
	    !(url = gcall_url(c->base_url, path, (const char *)NULL))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = call(c, "GET", url, NULL, GCP_RETRY_SAFE, "GetQuotaInfo", 0, what, &resp, err);
	if (rc == 0 && (rc = quota_info_parse_json(resp.body, resp.body_len, out, err)) < 0)
		gcall_wrap(err, "quotas", what);
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
	struct list_pages p = { c, NULL, NULL, NULL, NULL, out };
	char *what = NULL, *path = NULL;
	int rc = 0;

	if (!(what = vx_asprintf("quotas: listing quota infos of %s", service ? service : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!gcall_segment_ok(project, NULL) || !gcall_segment_ok(service, NULL)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid project or service", what);
		goto done;
	}
	if (!(path = vx_asprintf("projects/%s/locations/global/services/%s/quotaInfos", project,
				 service))) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	p.path = path;
	p.what = what;
	rc = gcall_pages(list_page, &p, what, err);
done:
	if (rc < 0)
		quota_info_list_release(out);
	free(path);
	free(what);
	return rc;
}
