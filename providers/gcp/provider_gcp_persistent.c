/*
 * Vertex AI persistent resources: the provider_persistent_ops of the gcp
 * provider (providers/gcp/provider_gcp_internal.h says what the kinds'
 * adapters share).
 */
#include "providers/gcp/provider_gcp_internal.h"

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/persistent.h"
#include "reconcile/provider_persistent.h"
#include "util/buf.h"
#include "util/label.h"
#include "util/text.h"
#include "util/banned.h"

/* One pool of the client's resource as the kind sees it; server text cleaned. */
static int persistent_pool_to_live(struct live_persistent_pool *d, const struct persistent_pool *s)
{
	d->accelerator_count = s->accelerator_count;
	d->replica_count = s->replica_count;
	d->used_replica_count = s->used_replica_count;
	d->has_autoscaling = s->has_autoscaling;
	d->min_replica_count = s->min_replica_count;
	d->max_replica_count = s->max_replica_count;
	d->boot_disk_size_gb = s->boot_disk_size_gb;
	if (gcp_clean_opt(&d->id, s->id) < 0 || gcp_clean_opt(&d->machine_type, s->machine_type) < 0 ||
	    gcp_clean_opt(&d->accelerator_type, s->accelerator_type) < 0 ||
	    gcp_clean_opt(&d->boot_disk_type, s->boot_disk_type) < 0)
		return VX_ENOMEM;
	return 0;
}

/* persistent_resource -> live_persistent (the client checked the name and cleaned its texts). */
static int persistent_to_live(struct live_persistent *out, const struct persistent_resource *r,
			      const char *project, const char *region)
{
	memset(out, 0, sizeof(*out));
	out->create_ms = r->create_time_ms;
	if (!(out->id = vx_strdup(r->id)) || !(out->name = vx_strdup(r->name)) ||
	    !(out->project = vx_strdup(project)) || !(out->region = vx_strdup(region)) ||
	    !(out->state = vx_strdup(persistent_state_name(r->state))) ||
	    gcp_clean_opt(&out->error_message, r->error_message) < 0 ||
	    gcp_clean_opt(&out->network, r->network) < 0 || gcp_clean_opt(&out->kms_key_name, r->kms_key_name) < 0 ||
	    vx_labels_copy(&out->labels, &out->nlabels, r->labels, r->n_labels) < 0)
		goto oom;
	if (r->n_pools && !(out->pools = calloc(r->n_pools, sizeof(*out->pools))))
		goto oom;
	for (size_t i = 0; i < r->n_pools; i++) {
		out->npools++;
		if (persistent_pool_to_live(&out->pools[i], &r->pools[i]) < 0)
			goto oom;
	}
	return 0;
oom:
	live_persistent_release(out);
	return VX_ENOMEM;
}

static void persistent_session(struct session *s, struct gcp_provider *g)
{
	s->persistent.http = s->http;
	s->persistent.ctx = g->ctx;
	s->persistent.base_url = g->endpoints.base[GCP_API_AIPLATFORM];
	s->persistent.fence = NULL;
}

static int gcp_list_persistent(struct provider *p, const char *project, const char *region,
			       struct live_persistents *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct persistent_list list = PERSISTENT_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = gcp_session_get(g, &s, err)) < 0)
		return rc;
	persistent_session(s, g);
	rc = persistent_list(&s->persistent, project, region, GCP_LIST_PAGE_SIZE, &list, err);
	for (size_t i = 0; rc == 0 && i < list.n; i++) {
		struct live_persistent l;

		if (persistent_to_live(&l, &list.items[i], project, region) < 0 ||
		    live_persistents_push(out, &l) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		live_persistent_release(&l);
	}
	gcp_session_put(g, s);
	if (rc < 0)
		live_persistents_release(out);
	persistent_list_release(&list);
	return rc;
}

/*
 * Follows op to done; a wait that does not end (VX_ERETRY, interrupted, a
 * poll failing) leaves the outcome unknown: VX_EUNCERTAIN.
 */
static int persistent_finish(struct session *s, const char *project, const char *region,
			     struct persistent_operation *op, const char *what, struct vx_err *err)
{
	int rc = persistent_operation_wait(&s->persistent, project, region, op, 0, what, err);
	char *cause;

	if (rc >= 0 || op->done)
		return rc;
	cause = vx_strdup(vx_err_msg(err));
	rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome is unknown (list the persistent resources "
					    "before trying again)",
			cause ? cause : what);
	free(cause);
	return rc;
}

/* The resource as read after a create or an update: *out, 1; 0 when it does not exist. */
static int persistent_read_back(struct session *s, const char *project, const char *region, const char *id,
				struct live_persistent *out, struct vx_err *err)
{
	struct persistent_resource r = PERSISTENT_RESOURCE_INIT;
	char *name = vx_asprintf("projects/%s/locations/%s/persistentResources/%s", project, region, id);
	int rc = name ? persistent_get(&s->persistent, name, &r, err) : vx_err_set(err, VX_ENOMEM, "out of memory");

	free(name);
	if (rc == VX_ENOTFOUND)
		rc = 0;
	else if (rc == 0)
		rc = persistent_to_live(out, &r, project, region) < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 1;
	persistent_resource_release(&r);
	return rc;
}

/* A create or update (update: mask != 0) of req, followed to done, and the resource read back. */
static int persistent_mutate(struct provider *p, const struct provider_persistent_request *req, unsigned mask,
			     struct live_persistent *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct session *s = NULL;
	struct gcp_fence fh;
	char *what, *name = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	what = vx_asprintf("vertex: %s persistent resource \"%s\" in %s", mask ? "updating" : "creating", req->id,
			   req->region);
	if (!what)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((rc = gcp_session_get(g, &s, err)) < 0) {
		free(what);
		return rc;
	}
	persistent_session(s, g);
	s->persistent.fence = gcp_fence_of(&fh, req->fence);
	if (!mask)
		rc = persistent_create(&s->persistent, req->project, req->region, req->id, req->spec_json, req->labels,
				       req->nlabels, &op, err);
	else if (!(name = vx_asprintf("projects/%s/locations/%s/persistentResources/%s", req->project, req->region,
				      req->id)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	else
		rc = persistent_update(&s->persistent, name, mask, req->spec_json, req->labels, req->nlabels, &op, err);
	s->persistent.fence = NULL;
	if (rc == 0)
		rc = persistent_finish(s, req->project, req->region, &op, what, err);
	/* Read back after a finished operation, failed or not: a failed create may leave one in ERROR. */
	if (rc == 0 || (op.done && rc != VX_EUNCERTAIN)) {
		struct vx_err e2 = VX_ERR_INIT;
		int got = persistent_read_back(s, req->project, req->region, req->id, out, rc == 0 ? err : &e2);

		if (rc == 0 && got == 0)
			rc = vx_err_set(err, VX_EUNCERTAIN, "%s: done, but it cannot be read back", what);
		else if (rc == 0 && got < 0)
			rc = got;
		vx_err_release(&e2);
	}
	persistent_operation_release(&op);
	gcp_session_put(g, s);
	free(name);
	free(what);
	return rc;
}

static int gcp_create_persistent(struct provider *p, const struct provider_persistent_request *req,
				 struct live_persistent *out, struct vx_err *err)
{
	return persistent_mutate(p, req, 0, out, err);
}

static int gcp_update_persistent(struct provider *p, const struct provider_persistent_request *req, unsigned mask,
				 struct live_persistent *out, struct vx_err *err)
{
	unsigned m = (mask & PROVIDER_PERSISTENT_POOLS ? PERSISTENT_UPDATE_POOLS : 0) |
		     (mask & PROVIDER_PERSISTENT_LABELS ? PERSISTENT_UPDATE_LABELS : 0);

	if (!m)
		return vx_err_set(err, VX_EINVAL, "vertex: updating persistent resource \"%s\": nothing to update",
				  req->id);
	return persistent_mutate(p, req, m, out, err);
}

static int gcp_delete_persistent(struct provider *p, const char *project, const char *region, const char *id,
				 const struct provider_fence *fence, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct session *s = NULL;
	struct gcp_fence fh;
	char *name = vx_asprintf("projects/%s/locations/%s/persistentResources/%s", project, region, id);
	char *what = vx_asprintf("vertex: deleting persistent resource \"%s\" in %s", id, region);
	int rc = name && what ? gcp_session_get(g, &s, err) : vx_err_set(err, VX_ENOMEM, "out of memory");

	if (rc == 0) {
		persistent_session(s, g);
		s->persistent.fence = gcp_fence_of(&fh, fence);
		rc = persistent_delete(&s->persistent, name, &op, err);
		s->persistent.fence = NULL;
		if (rc == 0)
			rc = persistent_finish(s, project, region, &op, what, err);
		gcp_session_put(g, s);
	}
	persistent_operation_release(&op);
	free(name);
	free(what);
	return rc;
}

const struct provider_persistent_ops gcp_persistent_ops = {
	.list = gcp_list_persistent,
	.create = gcp_create_persistent,
	.update = gcp_update_persistent,
	.del = gcp_delete_persistent,
};
