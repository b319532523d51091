/*
 * Cloud Quotas preferences and limits: the provider_quota_ops of the gcp provider (providers/gcp/provider_gcp_internal.h
 * says what the kinds' adapters share).
 */

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/endpoints.h"
#include "reconcile/provider_quota.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "providers/gcp/provider_gcp_internal.h"
#include "util/banned.h"

/* ---- quota preferences (Cloud Quotas) ---- */

/*
 * A quotaPreferenceId as Cloud Quotas accepts it: 1 to 63 letters, digits,
 * '-' or '_' (Google's documents state no rule; this is the fake's, and
 * every character is URL-safe). 1 when id[0..n) passes.
 */
static int quota_id_ok(const char *id, size_t n)
{
	if (n < 1 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/*
 * name is exactly projects/{P}/locations/global/quotaPreferences/{ID}, P
 * the project asked for or a project number (Cloud Quotas names by number),
 * ID a valid id. Returns the ID's start in name, or NULL.
 */
static const char *quota_name_id(const char *name, const char *project)
{
	static const char tail[] = "/locations/global/quotaPreferences/";
	const char *p, *slash;
	size_t n, i;
	int digits = 1;

	if (!name || strncmp(name, "projects/", 9) != 0)
		return NULL;
	p = name + 9;
	slash = strchr(p, '/');
	if (!slash)
		return NULL;
	n = (size_t)(slash - p);
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			digits = 0;
	if (n == 0 || (!(n == strlen(project) && !strncmp(p, project, n)) && !(digits && n <= 20)))
		return NULL;
	if (strncmp(slash, tail, sizeof(tail) - 1) != 0)
		return NULL;
	p = slash + sizeof(tail) - 1;
	return quota_id_ok(p, strlen(p)) ? p : NULL;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vx_label *)a)->key, ((const struct vx_label *)b)->key);
}

/* quota_preference -> live_quota; name already checked, id its last segment. */
static int quota_to_live(struct live_quota *out, const struct quota_preference *q, const char *id)
{
	memset(out, 0, sizeof(*out));
	out->preferred = q->preferred_value;
	out->has_granted = q->has_granted_value;
	out->granted = q->granted_value;
	out->reconciling = q->reconciling;
	out->requested_ms = q->update_ms ? q->update_ms : q->create_ms;
	if (!(out->name = vx_strdup(q->name)) || !(out->id = vx_strdup(id)) ||
	    gcp_clean_opt(&out->service, q->service) < 0 || gcp_clean_opt(&out->quota_id, q->quota_id) < 0 ||
	    gcp_clean_opt(&out->state_detail, q->state_detail) < 0 ||
	    gcp_clean_opt(&out->contact_email, q->contact_email) < 0)
		goto oom;
	/* The etag goes back to Google as it came: kept only when it is plain text. */
	if (q->etag && vx_text_is_clean(q->etag, strlen(q->etag)) && !(out->etag = vx_strdup(q->etag)))
		goto oom;
	if (q->n_dimensions) {
		out->dimensions = calloc(q->n_dimensions, sizeof(*out->dimensions));
		if (!out->dimensions)
			goto oom;
		for (size_t i = 0; i < q->n_dimensions; i++) {
			out->ndimensions = i + 1;
			if (gcp_clean_opt(&out->dimensions[i].key, q->dimensions[i].key ? q->dimensions[i].key : "") < 0 ||
			    gcp_clean_opt(&out->dimensions[i].value,
					  q->dimensions[i].value ? q->dimensions[i].value : "") < 0)
				goto oom;
		}
		qsort(out->dimensions, out->ndimensions, sizeof(*out->dimensions), label_cmp);
	}
	return 0;
oom:
	live_quota_release(out);
	return VX_ENOMEM;
}

static int gcp_list_quotas(struct provider *p, const char *project, struct live_quotas *out,
			   struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct quota_preference_list list = QUOTA_PREFERENCE_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	rc = quotas_list_preferences(&s->quotas, project, NULL, &list, err);
	if (rc < 0)
		goto done;
	out->items = calloc(list.n + 1, sizeof(*out->items));
	if (!out->items) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < list.n; i++) {
		const char *id = quota_name_id(list.items[i].name, project);

		if (!id) {
			char *shown = vx_text_clean(list.items[i].name ? list.items[i].name : "");

			vx_log(g->ctx, VX_LOG_WARN, "quotas: listing quota preferences: ignored a preference "
						    "listed with an invalid name \"%s\" (not projects/%s/locations/global/"
						    "quotaPreferences/ID); it is neither adopted nor changed",
			       shown ? shown : "",
			       project);
			free(shown);
			continue;
		}
		if (quota_to_live(&out->items[out->n], &list.items[i], id) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		out->n++;
	}
done:
	if (s)
		gcp_session_put(g, s);
	if (rc < 0)
		live_quotas_release(out);
	quota_preference_list_release(&list);
	return rc;
}

/*
 * The limits of one quotaInfo as live_quota_limit rows: one per dimensionsInfo
 * and applicable location. Server text: cleaned, and a row whose names are
 * not clean text is skipped rather than shown.
 */
static int info_to_limits(struct live_quota_limits *out, const struct quota_info *qi)
{
	for (size_t i = 0; i < qi->n_infos; i++) {
		const struct quota_dimensions_info *d = &qi->infos[i];
		struct vx_buf dims = VX_BUF_INIT;
		struct live_quota_limit row;
		int rc = 0;

		if (!d->has_value)
			continue;
		/* dimensions come sorted by key from the parser's object order; sort not needed
		 * for lookups, which only ask for entries without other dimensions. */
		for (size_t k = 0; rc == 0 && k < d->n_dimensions; k++) {
			const struct vx_label *kv = &d->dimensions[k];

			if (!kv->key || !strcmp(kv->key, "region") || !strcmp(kv->key, "zone"))
				continue;
			rc = vx_buf_printf(&dims, "%s%s=%s", dims.len ? "," : "", kv->key,
					   kv->value ? kv->value : "");
		}
		for (size_t j = 0; rc == 0 && j < d->n_applicable_locations; j++) {
			const char *loc = d->applicable_locations[j];

			if (!loc || !vx_text_is_clean(loc, strlen(loc)) ||
			    (dims.len && !vx_text_is_clean(vx_buf_str(&dims), dims.len)))
				continue;
			row.service = qi->service;
			row.quota_id = qi->quota_id;
			row.location = (char *)(uintptr_t)loc;
			row.dimensions = dims.len ? (char *)(uintptr_t)vx_buf_str(&dims) : NULL;
			row.value = d->value;
			rc = live_quota_limits_push(out, &row);
		}
		vx_buf_release(&dims);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int gcp_list_quota_infos(struct provider *p, const char *project, const char *service,
				struct live_quota_limits *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct quota_info_list list = QUOTA_INFO_LIST_INIT;
	struct session *s = NULL;
	int rc;

	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	rc = quotas_list_infos(&s->quotas, project, service, &list, err);
	if (rc < 0)
		goto done;
	for (size_t i = 0; i < list.n; i++) {
		const struct quota_info *qi = &list.items[i];

		if (!qi->service || !qi->quota_id || strcmp(qi->service, service) != 0 ||
		    !vx_text_is_clean(qi->quota_id, strlen(qi->quota_id)))
			continue;
		if (info_to_limits(out, qi) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
	}
done:
	if (s)
		gcp_session_put(g, s);
	quota_info_list_release(&list);
	return rc;
}

/* The provider's request as the client's QuotaPreference; strings borrowed, dimensions allocated. */
static int quota_from_request(struct quota_preference *out, const struct provider_quota_request *req)
{
	memset(out, 0, sizeof(*out));
	out->service = (char *)(uintptr_t)req->service;
	out->quota_id = (char *)(uintptr_t)req->quota_id;
	out->preferred_value = req->preferred;
	out->contact_email = (char *)(uintptr_t)req->contact_email;
	out->justification = (char *)(uintptr_t)req->justification;
	out->etag = (char *)(uintptr_t)req->etag;
	if (req->ignore_safety_checks & PROVIDER_QUOTA_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH)
		out->ignore_safety_checks |= QUOTAS_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH;
	if (req->ignore_safety_checks & PROVIDER_QUOTA_IGNORE_DECREASE_BELOW_USAGE)
		out->ignore_safety_checks |= QUOTAS_IGNORE_DECREASE_BELOW_USAGE;
	if (!req->ndimensions)
		return 0;
	out->dimensions = calloc(req->ndimensions, sizeof(*out->dimensions));
	if (!out->dimensions)
		return VX_ENOMEM;
	for (size_t i = 0; i < req->ndimensions; i++) {
		out->dimensions[i].key = (char *)(uintptr_t)req->dimensions[i].key;
		out->dimensions[i].value = (char *)(uintptr_t)req->dimensions[i].value;
	}
	out->n_dimensions = req->ndimensions;
	return 0;
}

/* Checks the preference Google answered with and converts it: the one asked for, or an error. */
static int quota_answer(struct live_quota *out, const struct quota_preference *got,
			const struct provider_quota_request *req, const char *what, struct vx_err *err)
{
	const char *id = quota_name_id(got->name, req->project);
	char *shown;
	int rc;

	if (id && !strcmp(id, req->id))
		return quota_to_live(out, got, id) < 0 ? vx_err_set(err, VX_ENOMEM, "%s: out of memory", what) : 0;
	shown = vx_text_clean(got->name ? got->name : "");
	rc = vx_err_set(err, VX_EAPI, "%s: Cloud Quotas answered with preference \"%s\", not projects/%s/"
				      "locations/global/quotaPreferences/%s",
			what, shown ? shown : "", req->project, req->id);
	free(shown);
	return rc;
}

static int gcp_create_quota(struct provider *p, const struct provider_quota_request *req,
			    struct live_quota *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct quota_preference want, got = QUOTA_PREFERENCE_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&want, 0, sizeof(want));
	if (!(what = vx_asprintf("quotas: creating quota preference \"%s\"", req->id ? req->id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!req->id || !quota_id_ok(req->id, strlen(req->id)) || !req->service || !req->quota_id ||
	    req->preferred < -1) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid id, service, quota ID or preferred value", what);
		goto done;
	}
	if (quota_from_request(&want, req) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	want.etag = NULL; /* a create has nothing to compare with */
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->quotas.fence = gcp_fence_of(&hfence, req->fence);
	rc = quotas_create_preference(&s->quotas, req->project, req->id, &want, &got, err);
	s->quotas.fence = NULL;
	if (rc == 0)
		rc = quota_answer(out, &got, req, what, err);
done:
	if (s)
		gcp_session_put(g, s);
	free(want.dimensions);
	quota_preference_release(&got);
	free(what);
	return rc;
}

static int gcp_update_quota(struct provider *p, const struct provider_quota_request *req,
			    struct live_quota *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct quota_preference want, got = QUOTA_PREFERENCE_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	struct vx_buf mask = VX_BUF_INIT;
	char *what = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&want, 0, sizeof(want));
	if (!(what = vx_asprintf("quotas: updating quota preference \"%s\"", req->id ? req->id : "")))
		return vx_err_set(err, VX_ENOMEM, "quotas: out of memory");
	if (!req->id || !quota_id_ok(req->id, strlen(req->id)) || !req->service || !req->quota_id ||
	    req->preferred < -1) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid id, service, quota ID or preferred value", what);
		goto done;
	}
	/*
	 * Only what vx changes in place is in the mask: the preferred value,
	 * and the contact (input only; Google wants it for an increase) and
	 * justification when declared. Service, quota ID and dimensions are
	 * immutable and sent only as the body's context.
	 */
	if (quota_from_request(&want, req) < 0 || vx_buf_adds(&mask, "quotaConfig.preferredValue") < 0 ||
	    (req->contact_email && vx_buf_adds(&mask, ",contactEmail") < 0) ||
	    (req->justification && vx_buf_adds(&mask, ",justification") < 0)) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->quotas.fence = gcp_fence_of(&hfence, req->fence);
	rc = quotas_patch_preference(&s->quotas, req->project, req->id, &want, vx_buf_str(&mask), 0, &got, err);
	s->quotas.fence = NULL;
	if (rc == 0)
		rc = quota_answer(out, &got, req, what, err);
done:
	if (s)
		gcp_session_put(g, s);
	free(want.dimensions);
	quota_preference_release(&got);
	vx_buf_release(&mask);
	free(what);
	return rc;
}

const struct provider_quota_ops gcp_quota_ops = {
	.list = gcp_list_quotas,
	.create = gcp_create_quota,
	.update = gcp_update_quota,
	.list_infos = gcp_list_quota_infos,
};
