/*
 * Compute Engine reservations: the provider_reservation_ops of the gcp provider (providers/gcp/provider_gcp_internal.h
 * says what the kinds' adapters share).
 */

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/endpoints.h"
#include "reconcile/provider_reservation.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "providers/gcp/provider_gcp_internal.h"
#include "util/banned.h"

/*
 * compute_reservation -> live_reservation. Every string but the checked name
 * and zone is server text that reaches plans, logs and the state: cleaned.
 * The first guest accelerator is the reservation's GPU (vx declares one).
 */
static int reservation_to_live(struct live_reservation *out, const struct compute_reservation *r,
			       const char *project)
{
	const struct compute_accelerator *a = r->n_accelerators ? &r->accelerators[0] : NULL;

	memset(out, 0, sizeof(*out));
	out->count = r->count;
	out->in_use = r->in_use_count;
	out->specific_required = r->specific_reservation_required;
	out->create_ms = r->create_ms;
	out->accelerator_count = a ? a->count : 0;
	if (!(out->name = vx_strdup(r->name)) || !(out->project = vx_strdup(project)) ||
	    !(out->zone = vx_strdup(r->zone)) || gcp_clean_opt(&out->status, r->status) < 0 ||
	    gcp_clean_opt(&out->description, r->description) < 0 ||
	    gcp_clean_last(&out->machine_type, r->machine_type) < 0 ||
	    gcp_clean_last(&out->accelerator_type, a ? a->type : NULL) < 0 ||
	    gcp_clean_opt(&out->share_type, r->service_share_type) < 0) {
		live_reservation_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

/*
 * A reservation read from Compute is acted on only when its name follows
 * Compute's rule and it is in the zone asked for: anything else would send
 * a resize or a delete somewhere vx did not mean. NULL when it passes, else
 * why not (static text).
 */
static const char *reservation_refusal(const struct compute_reservation *r, const char *zone)
{
	if (!compute_reservation_name_ok(r->name))
		return "its name is not [a-z]([-a-z0-9]{0,61}[a-z0-9])?";
	/* zone passed compute_reservation_name_ok (compute.c), false for NULL, out of the
	 * analyzer's sight. NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	if (!r->zone || strcmp(r->zone, zone) != 0)
		return "it is not in the zone listed";
	return NULL;
}

static int gcp_list_reservations(struct provider *p, const char *project, const char *zone,
				 struct live_reservations *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_reservation_list list = COMPUTE_RESERVATION_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	/* Every reservation of the zone: Compute reservations carry no labels,
	 * so the planner picks the stack's by name and description marker. */
	rc = compute_reservation_list(&s->compute, project, zone, NULL, &list, err);
	if (rc < 0)
		goto done;
	out->items = calloc(list.n + 1, sizeof(*out->items));
	if (!out->items) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < list.n; i++) {
		const char *why = reservation_refusal(&list.items[i], zone);

		if (why) {
			char *shown = vx_text_clean(list.items[i].name ? list.items[i].name : "");

			vx_log(g->ctx, VX_LOG_WARN, "compute: listing reservations in %s: ignored a reservation "
						    "listed as \"%s\": %s; it is neither adopted nor changed",
			       zone,
			       shown ? shown : "", why);
			free(shown);
			continue;
		}
		if (reservation_to_live(&out->items[out->n], &list.items[i], project) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		out->n++;
	}
done:
	if (s)
		gcp_session_put(g, s);
	if (rc < 0)
		live_reservations_release(out);
	compute_reservation_list_release(&list);
	return rc;
}

/* The insert's body for req, in *body; what names the request in errors. VX_EINVAL, VX_ENOMEM. */
static int reservation_body(const struct provider_reservation_request *req, const char *what, char **body,
			    struct vx_err *err)
{
	struct compute_reservation want = COMPUTE_RESERVATION_INIT;
	struct compute_accelerator acc;
	/* Shared with Google Cloud managed services, or Vertex AI cannot use it. */
	const char *share = "ALLOW_ALL";

	if (!compute_reservation_name_ok(req->name) || !compute_reservation_name_ok(req->zone) ||
	    !req->machine_type || req->count < 1 || req->count > 1000 ||
	    (req->accelerator_type && (req->accelerator_count < 1 || req->accelerator_count > INT32_MAX)))
		return vx_err_set(err, VX_EINVAL, "%s: invalid name, zone, machine type, accelerators or count (1 to 1000)",
				  what);
	/* The request's strings are borrowed for the body only. */
	want.name = (char *)(uintptr_t)req->name;
	want.description = (char *)(uintptr_t)req->description;
	want.machine_type = (char *)(uintptr_t)req->machine_type;
	want.count = req->count;
	want.specific_reservation_required = req->specific_required;
	want.service_share_type = (char *)(uintptr_t)share;
	if (req->accelerator_type) {
		acc.type = (char *)(uintptr_t)req->accelerator_type;
		acc.count = req->accelerator_count;
		want.accelerators = &acc;
		want.n_accelerators = 1;
	}
	if (compute_reservation_to_json(&want, body) < 0)
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	return 0;
}

/*
 * After the insert's operation finished: the reservation read back, into
 * *out, if it is the one asked for. The operation is done, so a read that
 * fails leaves the outcome unknown (VX_EUNCERTAIN).
 */
static int reservation_read_back(struct session *s, const struct provider_reservation_request *req,
				 const char *what, struct live_reservation *out, struct vx_err *err)
{
	struct compute_reservation got = COMPUTE_RESERVATION_INIT;
	const char *why;
	int rc = compute_reservation_get(&s->compute, req->project, req->zone, req->name, &got, err);

	if (rc < 0) {
		char *cause = vx_strdup(vx_err_msg(err));

		rc = vx_err_set(err, VX_EUNCERTAIN, "%s: the operation finished but reading the reservation "
						    "back failed (%s); list the reservations before trying again",
				what,
				cause ? cause : "unknown");
		free(cause);
		goto done;
	}
	why = reservation_refusal(&got, req->zone);
	/* req->name passed compute_reservation_name_ok (compute.c), false for NULL, out of the
	 * analyzer's sight. NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	if (!why && strcmp(got.name, req->name) != 0)
		why = "it is not the name asked for";
	if (why) {
		char *shown = vx_text_clean(got.name ? got.name : "");

		rc = vx_err_set(err, VX_EAPI, "%s: Compute answered with reservation \"%s\": %s", what,
				shown ? shown : "", why);
		free(shown);
		goto done;
	}
	if (reservation_to_live(out, &got, req->project) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	compute_reservation_release(&got);
	return rc;
}

static int gcp_create_reservation(struct provider *p, const struct provider_reservation_request *req,
				  struct live_reservation *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what = NULL, *body = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(what = vx_asprintf("compute: creating reservation \"%s\" in %s", req->name ? req->name : "",
				 req->zone ? req->zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	rc = reservation_body(req, what, &body, err);
	if (rc == 0)
		rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = gcp_fence_of(&hfence, req->fence);
	rc = compute_reservation_insert(&s->compute, req->project, req->zone, body, req->request_id, &op, err);
	s->compute.fence = NULL;
	if (rc < 0)
		goto done;
	rc = gcp_operation_finish(s, req->project, req->zone, &op, what, err);
	if (rc == 0)
		rc = reservation_read_back(s, req, what, out, err);
done:
	if (s)
		gcp_session_put(g, s);
	compute_operation_release(&op);
	free(body);
	free(what);
	return rc;
}

static int gcp_resize_reservation(struct provider *p, const char *project, const char *zone,
				  const char *name, int64_t count, const struct provider_fence *fence,
				  struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what;
	int rc;

	if (!(what = vx_asprintf("compute: resizing reservation \"%s\" in %s to %lld", name ? name : "",
				 zone ? zone : "", (long long)count)))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	/* Compute's specificSkuCount is 1..1000; 0 is not a way to free capacity. */
	if (!compute_reservation_name_ok(name) || !compute_reservation_name_ok(zone) || count < 1 ||
	    count > 1000) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid name, zone or count (1 to 1000)", what);
		goto done;
	}
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = gcp_fence_of(&hfence, fence);
	rc = compute_reservation_resize(&s->compute, project, zone, name, count, NULL, &op, err);
	s->compute.fence = NULL;
	if (rc == 0)
		rc = gcp_operation_finish(s, project, zone, &op, what, err);
done:
	if (s)
		gcp_session_put(g, s);
	compute_operation_release(&op);
	free(what);
	return rc;
}

static int gcp_delete_reservation(struct provider *p, const char *project, const char *zone,
				  const char *name, const struct provider_fence *fence,
				  struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what;
	int rc;

	if (!(what = vx_asprintf("compute: deleting reservation \"%s\" in %s", name ? name : "",
				 zone ? zone : "")))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if (!compute_reservation_name_ok(name) || !compute_reservation_name_ok(zone)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: invalid name or zone", what);
		goto done;
	}
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = gcp_fence_of(&hfence, fence);
	rc = compute_reservation_delete(&s->compute, project, zone, name, NULL, &op, err);
	s->compute.fence = NULL;
	if (rc == 0)
		rc = gcp_operation_finish(s, project, zone, &op, what, err);
done:
	if (s)
		gcp_session_put(g, s);
	compute_operation_release(&op);
	free(what);
	return rc;
}

const struct provider_reservation_ops gcp_reservation_ops = {
	.list = gcp_list_reservations,
	.create = gcp_create_reservation,
	.resize = gcp_resize_reservation,
	.del = gcp_delete_reservation,
};
