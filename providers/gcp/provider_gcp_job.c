/*
 * Vertex AI custom jobs: the provider_job_ops of the gcp provider (providers/gcp/provider_gcp_internal.h
 * says what the kinds' adapters share).
 */

#include <stdlib.h>
#include <string.h>

#include "providers/gcp/endpoints.h"
#include "reconcile/provider_job.h"
#include "util/buf.h"
#include "providers/gcp/provider_gcp_internal.h"
#include "util/banned.h"

/* vertex_job -> live_job: a borrowed view of it, deep-copied once. */
static int to_live(struct live_job *out, const struct vertex_job *v)
{
	struct live_job view;
	char *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (v->name && vertex_job_name_region(v->name, &region) < 0)
		region = NULL;
	memset(&view, 0, sizeof(view));
	view.name = v->name;
	view.region = region;
	view.display_name = v->display_name;
	/* live_job's strings are not const; the view is only read by live_job_copy. */
	view.state = (char *)(uintptr_t)vertex_job_state_name(v->state);
	view.labels = v->labels;
	view.nlabels = v->n_labels;
	view.create_ms = v->create_time_ms;
	view.start_ms = v->start_time_ms;
	view.end_ms = v->end_time_ms;
	view.error_code = v->error_code;
	view.error_message = v->error_message;
	rc = live_job_copy(out, &view);
	free(region);
	return rc;
}

/* The jobs in region carrying every one of labels (vertex_filter_labels). */
/*
 * The final states of a custom job (JobState): a job in one of them never
 * changes again. PARTIALLY_SUCCEEDED is a batch job's, listed to be safe.
 */
static const char active_filter[] =
	" AND state!=\"JOB_STATE_SUCCEEDED\" AND state!=\"JOB_STATE_FAILED\""
	" AND state!=\"JOB_STATE_CANCELLED\" AND state!=\"JOB_STATE_EXPIRED\""
	" AND state!=\"JOB_STATE_PARTIALLY_SUCCEEDED\"";

static int list_labeled(struct provider *p, const char *project, const char *region,
			const struct vx_label *labels, size_t nlabels, int active_only,
			struct live_jobs *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	struct session *s = NULL;
	char *filter = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = vertex_filter_labels(&filter, labels, nlabels, err);
	if (rc < 0)
		goto done;
	if (active_only) {
		char *f = vx_asprintf("%s%s", filter, active_filter);

		if (!f) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		free(filter);
		filter = f;
	}
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	rc = vertex_list_jobs(&s->vertex, project, region, filter, GCP_LIST_PAGE_SIZE, 0, &list, err);
	if (rc < 0)
		goto done;
	out->items = calloc(list.n + 1, sizeof(*out->items));
	if (!out->items) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < list.n; i++) {
		if (to_live(&out->items[i], &list.items[i]) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		if (!out->items[i].region)
			out->items[i].region = vx_strdup(region);
		out->n++;
	}
done:
	if (s)
		gcp_session_put(g, s);
	if (rc < 0)
		live_jobs_release(out);
	vertex_job_list_release(&list);
	free(filter);
	return rc;
}

static int gcp_list_jobs(struct provider *p, const char *project, const char *region,
			 const char *stack, struct live_jobs *out, struct vx_err *err)
{
	struct vx_label by_stack = { (char *)(uintptr_t) "vx-stack", (char *)(uintptr_t)stack };

	return list_labeled(p, project, region, &by_stack, 1, 0, out, err);
}

static int gcp_list_active_jobs(struct provider *p, const char *project, const char *region,
				const char *stack, struct live_jobs *out, struct vx_err *err)
{
	struct vx_label by_stack = { (char *)(uintptr_t) "vx-stack", (char *)(uintptr_t)stack };

	return list_labeled(p, project, region, &by_stack, 1, 1, out, err);
}

static int gcp_list_job_runs(struct provider *p, const char *project, const char *region,
			     const char *stack, const char *job, struct live_jobs *out, struct vx_err *err)
{
	/* Sorted by key, as label sets are everywhere. */
	struct vx_label by[2] = { { (char *)(uintptr_t) "vx-job", (char *)(uintptr_t)job },
				  { (char *)(uintptr_t) "vx-stack", (char *)(uintptr_t)stack } };

	return list_labeled(p, project, region, by, 2, 0, out, err);
}

static int gcp_create_job(struct provider *p, const struct provider_job_request *req,
			  struct live_job *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct vertex_job job = VERTEX_JOB_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	/* The session is this thread's until session_put: its fence too. */
	if (req->fence) {
		hfence.check = req->fence->check;
		hfence.ud = req->fence->ud;
		s->vertex.fence = &hfence;
	}
	rc = vertex_create_job(&s->vertex, req->project, req->region, req->display_name, req->labels,
			       req->nlabels, req->spec_json, &job, err);
	s->vertex.fence = NULL;
	if (rc < 0)
		goto done;
	rc = to_live(out, &job);
	if (rc < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (!out->region)
		out->region = vx_strdup(req->region);
done:
	if (s)
		gcp_session_put(g, s);
	vertex_job_release(&job);
	return rc;
}

static int gcp_cancel_job(struct provider *p, const char *name, const struct provider_fence *fence,
			  struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc = gcp_session_get(g, &s, err);

	if (rc < 0)
		return rc;
	if (fence) {
		hfence.check = fence->check;
		hfence.ud = fence->ud;
		s->vertex.fence = &hfence;
	}
	rc = vertex_cancel_job(&s->vertex, name, err);
	s->vertex.fence = NULL;
	gcp_session_put(g, s);
	return rc;
}

static int gcp_get_job(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		       struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct vertex_job job = VERTEX_JOB_INIT;
	struct session *s = NULL;
	char *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (spec_json)
		*spec_json = NULL;
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		goto done;
	rc = vertex_get_job(&s->vertex, name, &job, err);
	if (rc < 0)
		goto done;
	/* The server answers for the job asked, in its region; anything else is refused. */
	if (vertex_job_name_region(name, &region) < 0 || !job.name ||
	    !vertex_job_name_check(job.name, NULL, region) ||
	    strcmp(strrchr(job.name, '/'), strrchr(name, '/')) != 0) {
		rc = vx_err_set(err, VX_EINVAL, "vertex: reading job %s: the answer names another job", name);
		goto done;
	}
	if (to_live(out, &job) < 0 || (spec_json && job.job_spec_json &&
				       !(*spec_json = strdup(job.job_spec_json)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (!out->region && !(out->region = strdup(region)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	if (s)
		gcp_session_put(g, s);
	if (rc < 0) {
		live_job_release(out);
		if (spec_json) {
			free(*spec_json);
			*spec_json = NULL;
		}
	}
	vertex_job_release(&job);
	free(region);
	return rc;
}

const struct provider_job_ops gcp_job_ops = {
	.list = gcp_list_jobs,
	.list_runs = gcp_list_job_runs,
	.list_active = gcp_list_active_jobs,
	.create = gcp_create_job,
	.cancel = gcp_cancel_job,
	.get = gcp_get_job,
};
