/*
 * Compute Engine future reservations: the provider_future_ops of the gcp provider (providers/gcp/provider_gcp_internal.h
 * says what the kinds' adapters share).
 */

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/endpoints.h"
#include "providers/gcp/future.h"
#include "reconcile/provider_future.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "providers/gcp/provider_gcp_internal.h"
#include "util/banned.h"

/* ---- future reservations (Compute Engine) ---- */

/* future_reservation -> live_future: every string but the checked name is cleaned server text. */
static int future_to_live(struct live_future *out, const struct future_reservation *f, const char *project,
			  const char *zone)
{
	memset(out, 0, sizeof(*out));
	out->start_ms = f->start_ms;
	out->end_ms = f->end_ms ? f->end_ms : f->start_ms && f->duration_s ? f->start_ms + f->duration_s * 1000
									   : 0;
	out->total_count = f->total_count;
	out->fulfilled_count = f->fulfilled_count;
	out->create_ms = f->create_ms;
	if (f->n_accelerators)
		out->accelerator_count = f->accelerators[0].count;
	if (!(out->name = strdup(f->name)) || !(out->project = strdup(project)) || !(out->zone = strdup(zone)) ||
	    gcp_clean_opt(&out->description, f->description) < 0 || gcp_clean_opt(&out->mode, f->reservation_mode) < 0 ||
	    gcp_clean_opt(&out->procurement_status, f->procurement_status) < 0 ||
	    gcp_clean_last(&out->machine_type, f->machine_type) < 0 ||
	    (f->n_accelerators && gcp_clean_last(&out->accelerator_type, f->accelerators[0].type) < 0))
		goto oom;
	if (f->n_auto_created && !(out->auto_created = calloc(f->n_auto_created, sizeof(char *))))
		goto oom;
	for (size_t i = 0; i < f->n_auto_created; i++) {
		const char *n = future_reservation_auto_created_name(f, i);

		if (n && !(out->auto_created[out->n_auto_created++] = strdup(n)))
			goto oom;
	}
	return 0;
oom:
	live_future_release(out);
	return VX_ENOMEM;
}

static int gcp_list_futures(struct provider *p, const char *project, const char *zone, struct live_futures *out,
			    struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct future_reservation_list list = FUTURE_RESERVATION_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!compute_reservation_name_ok(zone))
		return vx_err_set(err, VX_EINVAL, "compute: listing future reservations: invalid zone");
	if ((rc = gcp_session_get(g, &s, err)) < 0)
		goto done;
	if ((rc = future_reservation_list(&s->compute, project, zone, NULL, &list, err)) < 0)
		goto done;
	if (!(out->items = calloc(list.n + 1, sizeof(*out->items)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < list.n; i++) {
		/* Only a name vx could have given is acted on. */
		if (!compute_reservation_name_ok(list.items[i].name)) {
			vx_log(g->ctx, VX_LOG_WARN, "compute: listing future reservations in %s: ignored one "
						    "whose name is not a Compute name",
			       zone);
			continue;
		}
		if (future_to_live(&out->items[out->n], &list.items[i], project, zone) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		out->n++;
	}
done:
	if (s)
		gcp_session_put(g, s);
	if (rc < 0)
		live_futures_release(out);
	future_reservation_list_release(&list);
	return rc;
}

/* The insert's body for req: submitted at once, with the careful readings of docs/future-reservations.md. */
static int future_body(const struct provider_future_request *req, char **body, struct vx_err *err)
{
	struct future_reservation want = FUTURE_RESERVATION_INIT;
	struct compute_accelerator acc;

	want.name = (char *)(uintptr_t)req->name;
	want.description = (char *)(uintptr_t)req->description;
	want.reservation_mode = (char *)(uintptr_t)(req->calendar ? "CALENDAR" : "DEFAULT");
	want.planning_status = (char *)(uintptr_t) "SUBMITTED";
	/* Unconfirmed as required for calendar mode: sent (the careful reading). */
	want.deployment_type = req->calendar ? (char *)(uintptr_t) "DENSE" : NULL;
	want.specific_reservation_required = 1;
	want.auto_delete_auto_created_reservations = req->calendar ? 1 : FUTURE_UNSET;
	want.start_ms = req->start_ms;
	want.end_ms = req->end_ms;
	want.total_count = req->total_count;
	want.machine_type = (char *)(uintptr_t)req->machine_type;
	if (req->accelerator_type) {
		acc.type = (char *)(uintptr_t)req->accelerator_type;
		acc.count = req->accelerator_count;
		want.accelerators = &acc;
		want.n_accelerators = 1;
	}
	return future_reservation_to_json(&want, body, err);
}

static int gcp_create_future(struct provider *p, const struct provider_future_request *req,
			     struct live_future *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct future_reservation got = FUTURE_RESERVATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what = NULL, *body = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!compute_reservation_name_ok(req->name) || !compute_reservation_name_ok(req->zone))
		return vx_err_set(err, VX_EINVAL, "compute: booking a future reservation: invalid name or zone");
	if (!(what = vx_asprintf("compute: booking future reservation \"%s\" in %s", req->name, req->zone)))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if ((rc = future_body(req, &body, err)) < 0 || (rc = gcp_session_get(g, &s, err)) < 0)
		goto done;
	s->compute.fence = gcp_fence_of(&hfence, req->fence);
	rc = future_reservation_insert(&s->compute, req->project, req->zone, body, req->request_id, 0, &op, err);
	s->compute.fence = NULL;
	if (rc < 0)
		goto done;
	rc = future_reservation_get(&s->compute, req->project, req->zone, req->name, &got, err);
	if (rc < 0)
		rc = vx_err_set(err, VX_EUNCERTAIN, "%s: the operation finished but reading the booking back "
						    "failed; list the future reservations before trying again",
				what);
	else if (future_to_live(out, &got, req->project, req->zone) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
done:
	if (s)
		gcp_session_put(g, s);
	future_reservation_release(&got);
	compute_operation_release(&op);
	free(body);
	free(what);
	return rc;
}

/* cancel (1) or delete (0) of a future reservation, followed to its end. */
static int future_mutate(struct provider *p, int cancel, const char *project, const char *zone, const char *name,
			 const struct provider_fence *fence, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc;

	if (!compute_reservation_name_ok(name) || !compute_reservation_name_ok(zone))
		return vx_err_set(err, VX_EINVAL, "compute: future reservation: invalid name or zone");
	if ((rc = gcp_session_get(g, &s, err)) < 0)
		return rc;
	s->compute.fence = gcp_fence_of(&hfence, fence);
	if (cancel)
		rc = future_reservation_cancel(&s->compute, project, zone, name, NULL, 0, &op, err);
	else
		rc = future_reservation_delete(&s->compute, project, zone, name, NULL, 0, &op, err);
	s->compute.fence = NULL;
	gcp_session_put(g, s);
	compute_operation_release(&op);
	return rc;
}

/* reservations.update of the delivered reservation's sharing policy: Vertex AI may use it. */
static int gcp_open_future_to_vertex(struct provider *p, const char *project, const char *zone,
				     const char *reservation, const struct provider_fence *fence, struct vx_err *err)
{
	static const char body[] = "{\"reservationSharingPolicy\":{\"serviceShareType\":\"ALLOW_ALL\"}}";
	struct gcp_provider *g = gcp_of(p);
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	char *what;
	int rc;

	if (!compute_reservation_name_ok(reservation) || !compute_reservation_name_ok(zone))
		return vx_err_set(err, VX_EINVAL, "compute: opening a reservation to Vertex AI: invalid name or zone");
	if (!(what = vx_asprintf("compute: opening reservation \"%s\" in %s to Vertex AI", reservation, zone)))
		return vx_err_set(err, VX_ENOMEM, "compute: out of memory");
	if ((rc = gcp_session_get(g, &s, err)) < 0)
		goto done;
	s->compute.fence = gcp_fence_of(&hfence, fence);
	rc = compute_reservation_update(&s->compute, project, zone, reservation,
					"reservationSharingPolicy.serviceShareType", body, NULL, &op, err);
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

static int gcp_cancel_future(struct provider *p, const char *project, const char *zone, const char *name,
			     const struct provider_fence *fence, struct vx_err *err)
{
	return future_mutate(p, 1, project, zone, name, fence, err);
}

static int gcp_delete_future(struct provider *p, const char *project, const char *zone, const char *name,
			     const struct provider_fence *fence, struct vx_err *err)
{
	return future_mutate(p, 0, project, zone, name, fence, err);
}

const struct provider_future_ops gcp_future_ops = {
	.list = gcp_list_futures,
	.create = gcp_create_future,
	.cancel = gcp_cancel_future,
	.del = gcp_delete_future,
	.open_to_vertex = gcp_open_future_to_vertex,
};
