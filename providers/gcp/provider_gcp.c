#include "providers/gcp/provider_gcp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/compute.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/http.h"
#include "providers/gcp/logging.h"
#include "providers/gcp/persistent.h"
#include "providers/gcp/quotas.h"
#include "providers/gcp/ratelimit.h"
#include "providers/gcp/storage.h"
#include "providers/gcp/vertex.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_persistent.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "util/banned.h"

/*
 * Vertex's page size for list: the maximum is not documented; by AIP-158
 * a larger value is coerced down to the maximum, so ask for many.
 */
#define GCP_LIST_PAGE_SIZE 1000

/*
 * How long a reservation's create, resize or delete waits for its zone
 * operation: the Compute client's own per-method timeout (600 s). Past it
 * the outcome is unknown to vx (VX_EUNCERTAIN), and the caller lists.
 */
#define GCP_OPERATION_WAIT_MS (10 * 60 * 1000)

struct session {
	struct gcp_http *http;
	struct vertex_client vertex;
	struct compute_client compute;
	struct quotas_client quotas;
	struct persistent_client persistent; /* set by persistent_session at each use */
	struct session *next;
};

struct gcp_provider {
	struct provider base;   /* first: the struct provider * is this struct */
	struct vx_ctx *ctx;
	struct gcp_provider_options opts;
	struct gcp_endpoints endpoints;
	struct gcp_auth *auth;
	struct gcp_http *auth_http;   /* token requests; used under lock only */
	struct gcp_token_source tokens; /* serialising wrapper around auth */
	struct gcp_ratelimit *limiter; /* shared by every session: threads cannot multiply the rate */
	pthread_mutex_t lock;         /* auth, auth_http and the pool */
	struct session *pool;
	struct session **all_list;    /* every session made, for free */
	size_t nall;
};

static struct gcp_provider *gp(struct provider *p)
{
	return (struct gcp_provider *)p;
}

static int tokens_get(void *ud, char **out, struct vx_err *err)
{
	struct gcp_provider *g = ud;
	int rc;

	pthread_mutex_lock(&g->lock);
	rc = gcp_auth_token(g->auth, out, err);
	pthread_mutex_unlock(&g->lock);
	return rc;
}

static void tokens_invalidate(void *ud)
{
	struct gcp_provider *g = ud;

	pthread_mutex_lock(&g->lock);
	gcp_auth_invalidate(g->auth);
	pthread_mutex_unlock(&g->lock);
}

static int session_get(struct gcp_provider *g, struct session **out, struct vx_err *err)
{
	struct session *s;
	struct gcp_http_options ho;
	struct session **list;
	int rc;

	pthread_mutex_lock(&g->lock);
	s = g->pool;
	if (s)
		g->pool = s->next;
	pthread_mutex_unlock(&g->lock);
	if (s) {
		*out = s;
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	memset(&ho, 0, sizeof(ho));
	ho.max_in_flight = g->opts.max_in_flight;
	ho.shared_limiter = g->limiter;
	ho.quota_project = gcp_auth_quota_project(g->auth);
	rc = gcp_http_new(&s->http, g->ctx, &ho, &g->tokens, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	s->vertex.http = s->http;
	s->vertex.ctx = g->ctx;
	s->vertex.base_url = g->endpoints.base[GCP_API_AIPLATFORM];
	s->compute.http = s->http;
	s->compute.ctx = g->ctx;
	s->compute.base_url = g->endpoints.base[GCP_API_COMPUTE];
	s->quotas.http = s->http;
	s->quotas.ctx = g->ctx;
	s->quotas.base_url = g->endpoints.base[GCP_API_CLOUDQUOTAS];
	pthread_mutex_lock(&g->lock);
	list = realloc(g->all_list, (g->nall + 1) * sizeof(*list));
	if (list) {
		g->all_list = list;
		list[g->nall++] = s;
	}
	pthread_mutex_unlock(&g->lock);
	if (!list) {
		gcp_http_free(s->http);
		free(s);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

static void session_put(struct gcp_provider *g, struct session *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&g->lock);
	s->next = g->pool;
	g->pool = s;
	pthread_mutex_unlock(&g->lock);
}

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
	struct gcp_provider *g = gp(p);
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
	rc = session_get(g, &s, err);
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
		session_put(g, s);
	if (rc < 0)
		live_jobs_release(out);
	vertex_job_list_release(&list);
	free(filter);
	return rc;
}

static int gcp_list_jobs(struct provider *p, const char *project, const char *region,
			 const char *stack, struct live_jobs *out, struct vx_err *err)
{
	struct vx_label by_stack = { (char *)(uintptr_t)"vx-stack", (char *)(uintptr_t)stack };

	return list_labeled(p, project, region, &by_stack, 1, 0, out, err);
}

static int gcp_post_webhook(struct provider *p, const struct provider_webhook *req, long *status,
			    struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct session *s = NULL;
	struct gcp_request r;
	struct gcp_response resp;
	int rc;

	*status = 0;
	memset(&r, 0, sizeof(r));
	memset(&resp, 0, sizeof(resp));
	r.method = "POST";
	r.url = req->url;
	r.body = req->body;
	r.body_len = req->body_len;
	r.content_type = req->content_type;
	r.headers = req->headers;
	r.api = "webhook";
	r.no_auth = 1;
	/* Once, whatever happens: a second send is the next cycle's, after a
	 * backoff, so a dead receiver costs one try (at most its timeout). */
	r.retry = GCP_RETRY_ONCE;
	r.rpc = "webhook";
	r.timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 10000;
	r.log_name = req->log_name ? req->log_name : "webhook";
	if ((rc = session_get(g, &s, err)) < 0)
		return rc;
	rc = gcp_http_send(s->http, &r, &resp, err);
	if (rc == 0)
		*status = resp.status;
	session_put(g, s);
	gcp_response_release(&resp);
	return rc;
}

static size_t gcp_api_errors(struct provider *p, const char **names, uint64_t *counts, size_t max)
{
	struct gcp_provider *g = gp(p);
	const char *nm[GCP_HTTP_APIS];
	uint64_t ct[GCP_HTTP_APIS];
	size_t n = 0;

	pthread_mutex_lock(&g->lock);
	if (g->auth_http)
		gcp_http_errors(g->auth_http, nm, ct, &n);
	for (size_t i = 0; i < g->nall; i++)
		gcp_http_errors(g->all_list[i]->http, nm, ct, &n);
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < n && i < max; i++) {
		names[i] = nm[i];
		counts[i] = ct[i];
	}
	return n < max ? n : max;
}

static int64_t gcp_retry_after(struct provider *p)
{
	struct gcp_provider *g = gp(p);
	int64_t until = 0;

	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->nall; i++) {
		int64_t t = gcp_http_retry_after(g->all_list[i]->http);

		if (t > until)
			until = t;
	}
	pthread_mutex_unlock(&g->lock);
	return until;
}

/* The offset of the session that heard from Google last. */
static int64_t gcp_clock_offset(struct provider *p)
{
	struct gcp_provider *g = gp(p);
	int64_t best = 0, latest = 0, off, seen;

	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->nall; i++)
		if (gcp_http_clock_offset(g->all_list[i]->http, &off, &seen) && seen > latest) {
			latest = seen;
			best = off;
		}
	pthread_mutex_unlock(&g->lock);
	return best;
}

static int gcp_list_active_jobs(struct provider *p, const char *project, const char *region,
				const char *stack, struct live_jobs *out, struct vx_err *err)
{
	struct vx_label by_stack = { (char *)(uintptr_t)"vx-stack", (char *)(uintptr_t)stack };

	return list_labeled(p, project, region, &by_stack, 1, 1, out, err);
}

static int gcp_list_job_runs(struct provider *p, const char *project, const char *region,
			     const char *stack, const char *job, struct live_jobs *out, struct vx_err *err)
{
	/* Sorted by key, as label sets are everywhere. */
	struct vx_label by[2] = { { (char *)(uintptr_t)"vx-job", (char *)(uintptr_t)job },
				  { (char *)(uintptr_t)"vx-stack", (char *)(uintptr_t)stack } };

	return list_labeled(p, project, region, by, 2, 0, out, err);
}

static int gcp_create_job(struct provider *p, const struct provider_job_request *req,
			  struct live_job *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct vertex_job job = VERTEX_JOB_INIT;
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = session_get(g, &s, err);
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
		session_put(g, s);
	vertex_job_release(&job);
	return rc;
}

static int gcp_cancel_job(struct provider *p, const char *name, const struct provider_fence *fence,
			  struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc = session_get(g, &s, err);

	if (rc < 0)
		return rc;
	if (fence) {
		hfence.check = fence->check;
		hfence.ud = fence->ud;
		s->vertex.fence = &hfence;
	}
	rc = vertex_cancel_job(&s->vertex, name, err);
	s->vertex.fence = NULL;
	session_put(g, s);
	return rc;
}

static int gcp_get_job(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		       struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct vertex_job job = VERTEX_JOB_INIT;
	struct session *s = NULL;
	char *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (spec_json)
		*spec_json = NULL;
	rc = session_get(g, &s, err);
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
		session_put(g, s);
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

/* ---- reservations (Compute Engine) ---- */

/* The fence of a provider call as the HTTP layer's; NULL when none. */
static const struct gcp_fence *fence_of(struct gcp_fence *h, const struct provider_fence *f)
{
	if (!f)
		return NULL;
	h->check = f->check;
	h->ud = f->ud;
	return h;
}

/* The last path segment of s (Compute may answer a name or a URL), cleaned; NULL for NULL. */
static int clean_last(char **out, const char *s)
{
	const char *slash;

	*out = NULL;
	if (!s)
		return 0;
	slash = strrchr(s, '/');
	*out = vx_text_clean(slash ? slash + 1 : s);
	return *out ? 0 : VX_ENOMEM;
}

static int clean_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = vx_text_clean(s);
	return *out ? 0 : VX_ENOMEM;
}

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
	    !(out->zone = vx_strdup(r->zone)) || clean_opt(&out->status, r->status) < 0 ||
	    clean_opt(&out->description, r->description) < 0 ||
	    clean_last(&out->machine_type, r->machine_type) < 0 ||
	    clean_last(&out->accelerator_type, a ? a->type : NULL) < 0 ||
	    clean_opt(&out->share_type, r->service_share_type) < 0) {
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
	struct gcp_provider *g = gp(p);
	struct compute_reservation_list list = COMPUTE_RESERVATION_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = session_get(g, &s, err);
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
			       "listed as \"%s\": %s; it is neither adopted nor changed", zone,
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
		session_put(g, s);
	if (rc < 0)
		live_reservations_release(out);
	compute_reservation_list_release(&list);
	return rc;
}

/*
 * Follows a mutation's zone operation to its end. The operation's name and
 * zone come from the server and go into the wait URL, so they must be
 * Compute's shapes and the zone the one asked for. Only a finished
 * operation gives a certain answer (0 or its error); anything else (not
 * done within GCP_OPERATION_WAIT_MS, interrupted, the wait call failing, an
 * unusable name) leaves the mutation's outcome unknown: VX_EUNCERTAIN,
 * naming the operation when it can be named.
 */
static int operation_finish(struct session *s, const char *project, const char *zone,
			    struct compute_operation *op, const char *what, struct vx_err *err)
{
	char *name = NULL, *cause = NULL;
	int rc;

	if (compute_operation_done(op))
		return compute_operation_wait(&s->compute, project, op, GCP_OPERATION_WAIT_MS, what, err);
	/* zone passed compute_reservation_name_ok (compute.c), false for NULL, out of the
	 * analyzer's sight. NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	if (!compute_operation_name_ok(op->name) || (op->zone && strcmp(op->zone, zone) != 0)) {
		char *shown = vx_text_clean(op->name ? op->name : "");

		rc = vx_err_set(err, VX_EUNCERTAIN, "%s: the reply names operation \"%s\" in zone \"%s\", "
				"which vx will not follow; the outcome is unknown (list the reservations "
				"before trying again)", what, shown ? shown : "", zone);
		free(shown);
		return rc;
	}
	/* zone passed compute_reservation_name_ok (compute.c), false for NULL, out of the
	 * analyzer's sight. NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	if (!op->zone && !(op->zone = strdup(zone)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	if (!(name = strdup(op->name)))
		return vx_err_set(err, VX_ENOMEM, "%s: out of memory", what);
	rc = compute_operation_wait(&s->compute, project, op, GCP_OPERATION_WAIT_MS, what, err);
	if (rc < 0 && !compute_operation_done(op)) {
		cause = vx_strdup(vx_err_msg(err));
		rc = vx_err_set(err, VX_EUNCERTAIN, "%s; the outcome of operation %s is unknown (list the "
				"reservations before trying again)", cause ? cause : what, name);
	}
	free(cause);
	free(name);
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
				"back failed (%s); list the reservations before trying again", what,
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
	struct gcp_provider *g = gp(p);
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
		rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = fence_of(&hfence, req->fence);
	rc = compute_reservation_insert(&s->compute, req->project, req->zone, body, req->request_id, &op, err);
	s->compute.fence = NULL;
	if (rc < 0)
		goto done;
	rc = operation_finish(s, req->project, req->zone, &op, what, err);
	if (rc == 0)
		rc = reservation_read_back(s, req, what, out, err);
done:
	if (s)
		session_put(g, s);
	compute_operation_release(&op);
	free(body);
	free(what);
	return rc;
}

static int gcp_resize_reservation(struct provider *p, const char *project, const char *zone,
				  const char *name, int64_t count, const struct provider_fence *fence,
				  struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
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
	rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = fence_of(&hfence, fence);
	rc = compute_reservation_resize(&s->compute, project, zone, name, count, NULL, &op, err);
	s->compute.fence = NULL;
	if (rc == 0)
		rc = operation_finish(s, project, zone, &op, what, err);
done:
	if (s)
		session_put(g, s);
	compute_operation_release(&op);
	free(what);
	return rc;
}

static int gcp_delete_reservation(struct provider *p, const char *project, const char *zone,
				  const char *name, const struct provider_fence *fence,
				  struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
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
	rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->compute.fence = fence_of(&hfence, fence);
	rc = compute_reservation_delete(&s->compute, project, zone, name, NULL, &op, err);
	s->compute.fence = NULL;
	if (rc == 0)
		rc = operation_finish(s, project, zone, &op, what, err);
done:
	if (s)
		session_put(g, s);
	compute_operation_release(&op);
	free(what);
	return rc;
}

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
	    clean_opt(&out->service, q->service) < 0 || clean_opt(&out->quota_id, q->quota_id) < 0 ||
	    clean_opt(&out->state_detail, q->state_detail) < 0 ||
	    clean_opt(&out->contact_email, q->contact_email) < 0)
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
			if (clean_opt(&out->dimensions[i].key, q->dimensions[i].key ? q->dimensions[i].key : "") < 0 ||
			    clean_opt(&out->dimensions[i].value,
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
	struct gcp_provider *g = gp(p);
	struct quota_preference_list list = QUOTA_PREFERENCE_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = session_get(g, &s, err);
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
			       "quotaPreferences/ID); it is neither adopted nor changed", shown ? shown : "",
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
		session_put(g, s);
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

static int gcp_list_log_entries(struct provider *p, const char *project, const char *filter,
				const char *page_token, struct live_log_page *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct session *s = NULL;
	int rc;

	rc = session_get(g, &s, err);
	if (rc < 0)
		return rc;
	rc = gcp_logging_list(s->http, &g->endpoints, project, filter, page_token, out, err);
	session_put(g, s);
	return rc;
}

static int gcp_list_quota_infos(struct provider *p, const char *project, const char *service,
				struct live_quota_limits *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct quota_info_list list = QUOTA_INFO_LIST_INIT;
	struct session *s = NULL;
	int rc;

	rc = session_get(g, &s, err);
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
		session_put(g, s);
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
			"locations/global/quotaPreferences/%s", what, shown ? shown : "", req->project, req->id);
	free(shown);
	return rc;
}

static int gcp_create_quota(struct provider *p, const struct provider_quota_request *req,
			    struct live_quota *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
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
	rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->quotas.fence = fence_of(&hfence, req->fence);
	rc = quotas_create_preference(&s->quotas, req->project, req->id, &want, &got, err);
	s->quotas.fence = NULL;
	if (rc == 0)
		rc = quota_answer(out, &got, req, what, err);
done:
	if (s)
		session_put(g, s);
	free(want.dimensions);
	quota_preference_release(&got);
	free(what);
	return rc;
}

static int gcp_update_quota(struct provider *p, const struct provider_quota_request *req,
			    struct live_quota *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
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
	rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	s->quotas.fence = fence_of(&hfence, req->fence);
	rc = quotas_patch_preference(&s->quotas, req->project, req->id, &want, vx_buf_str(&mask), 0, &got, err);
	s->quotas.fence = NULL;
	if (rc == 0)
		rc = quota_answer(out, &got, req, what, err);
done:
	if (s)
		session_put(g, s);
	free(want.dimensions);
	quota_preference_release(&got);
	vx_buf_release(&mask);
	free(what);
	return rc;
}

static void gcp_free(struct provider *p)
{
	struct gcp_provider *g = gp(p);

	if (!g)
		return;
	for (size_t i = 0; i < g->nall; i++) {
		gcp_http_free(g->all_list[i]->http);
		free(g->all_list[i]);
	}
	free(g->all_list);
	gcp_http_free(g->auth_http);
	gcp_ratelimit_free(g->limiter);
	gcp_auth_free(g->auth);
	gcp_endpoints_release(&g->endpoints);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* A rate from the environment: a positive number a minute, or "unlimited". */
static int env_rate(const struct vx_ctx *ctx, const char *name, int *out, struct vx_err *err)
{
	const char *v = vx_getenv(ctx, name);
	char *end = NULL;
	long n;

	if (!v || *out)
		return 0;
	if (!strcmp(v, "unlimited")) {
		*out = -1;
		return 0;
	}
	n = strtol(v, &end, 10);
	if (!*v || *end || n < 1 || n > 1000000)
		return vx_err_set(err, VX_EINVAL, "%s must be a number of requests a minute or "
				  "\"unlimited\", not '%s'", name, v);
	*out = (int)n;
	return 0;
}

/* ---- persistent resources (Vertex AI) ---- */

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
	if (clean_opt(&d->id, s->id) < 0 || clean_opt(&d->machine_type, s->machine_type) < 0 ||
	    clean_opt(&d->accelerator_type, s->accelerator_type) < 0 ||
	    clean_opt(&d->boot_disk_type, s->boot_disk_type) < 0)
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
	    clean_opt(&out->error_message, r->error_message) < 0 ||
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
	struct gcp_provider *g = gp(p);
	struct persistent_list list = PERSISTENT_LIST_INIT;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = session_get(g, &s, err)) < 0)
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
	session_put(g, s);
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
	struct gcp_provider *g = gp(p);
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
	if ((rc = session_get(g, &s, err)) < 0) {
		free(what);
		return rc;
	}
	persistent_session(s, g);
	s->persistent.fence = fence_of(&fh, req->fence);
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
	session_put(g, s);
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
	struct gcp_provider *g = gp(p);
	struct persistent_operation op = PERSISTENT_OPERATION_INIT;
	struct session *s = NULL;
	struct gcp_fence fh;
	char *name = vx_asprintf("projects/%s/locations/%s/persistentResources/%s", project, region, id);
	char *what = vx_asprintf("vertex: deleting persistent resource \"%s\" in %s", id, region);
	int rc = name && what ? session_get(g, &s, err) : vx_err_set(err, VX_ENOMEM, "out of memory");

	if (rc == 0) {
		persistent_session(s, g);
		s->persistent.fence = fence_of(&fh, fence);
		rc = persistent_delete(&s->persistent, name, &op, err);
		s->persistent.fence = NULL;
		if (rc == 0)
			rc = persistent_finish(s, project, region, &op, what, err);
		session_put(g, s);
	}
	persistent_operation_release(&op);
	free(name);
	free(what);
	return rc;
}

/* Vertex AI's jobs, Compute Engine's reservations, Cloud Quotas' preferences, Vertex AI's persistent resources. */
static const struct provider_job_ops gcp_job_ops = {
	.list = gcp_list_jobs,
	.list_runs = gcp_list_job_runs,
	.list_active = gcp_list_active_jobs,
	.create = gcp_create_job,
	.cancel = gcp_cancel_job,
	.get = gcp_get_job,
};

static const struct provider_reservation_ops gcp_reservation_ops = {
	.list = gcp_list_reservations,
	.create = gcp_create_reservation,
	.resize = gcp_resize_reservation,
	.del = gcp_delete_reservation,
};

static const struct provider_quota_ops gcp_quota_ops = {
	.list = gcp_list_quotas,
	.create = gcp_create_quota,
	.update = gcp_update_quota,
	.list_infos = gcp_list_quota_infos,
};

static const struct provider_persistent_ops gcp_persistent_ops = {
	.list = gcp_list_persistent,
	.create = gcp_create_persistent,
	.update = gcp_update_persistent,
	.del = gcp_delete_persistent,
};

/* The kinds this provider serves: one line each. */
static const struct provider_table gcp_tables[] = {
	{ &provider_kind_job, &gcp_job_ops },
	{ &provider_kind_reservation, &gcp_reservation_ops },
	{ &provider_kind_quota, &gcp_quota_ops },
	{ &provider_kind_persistent, &gcp_persistent_ops },
};

int gcp_provider_new(struct provider **out, struct vx_ctx *ctx, const struct gcp_provider_options *opts,
		     struct vx_err *err)
{
	struct gcp_provider *g = calloc(1, sizeof(*g));
	int rc;

	*out = NULL;
	if (!g)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	PROVIDER_SET_TABLES(&g->base, gcp_tables);
	g->base.post_webhook = gcp_post_webhook;
	g->base.api_errors = gcp_api_errors;
	g->base.retry_after = gcp_retry_after;
	g->base.clock_offset = gcp_clock_offset;
	g->base.free = gcp_free;
	g->base.list_log_entries = gcp_list_log_entries;
	g->ctx = ctx;
	if (opts)
		g->opts = *opts;
	rc = env_rate(ctx, "VX_RATE_PER_MINUTE", &g->opts.rate_per_minute, err);
	if (rc == 0)
		rc = env_rate(ctx, "VX_CREATE_RATE_PER_MINUTE", &g->opts.create_rate_per_minute, err);
	if (rc < 0)
		goto fail;
	rc = gcp_endpoints_load(&g->endpoints, ctx, err);
	if (rc < 0)
		goto fail;
	{
		struct gcp_ratelimit_options ro;

		memset(&ro, 0, sizeof(ro));
		ro.rate_per_minute = g->opts.rate_per_minute;
		ro.create_rate_per_minute = g->opts.create_rate_per_minute;
		rc = gcp_ratelimit_new(&g->limiter, ctx, &ro, err);
		if (rc < 0)
			goto fail;
	}
	rc = gcp_auth_new(&g->auth, ctx, NULL, err);
	if (rc < 0)
		goto fail;
	rc = gcp_http_new(&g->auth_http, ctx, NULL, NULL, err);
	if (rc < 0)
		goto fail;
	gcp_auth_set_http(g->auth, g->auth_http);
	g->tokens.get = tokens_get;
	g->tokens.invalidate = tokens_invalidate;
	g->tokens.ud = g;
	*out = &g->base;
	return 0;
fail:
	gcp_free(&g->base);
	return rc;
}

struct gcp_auth *gcp_provider_auth(struct provider *p)
{
	return gp(p)->auth;
}

const struct gcp_endpoints *gcp_provider_endpoints(struct provider *p)
{
	return &gp(p)->endpoints;
}

int gcp_provider_storage(struct provider *p, struct storage_client *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	/* Never put back: freed with every other session when p is. */
	rc = session_get(g, &s, err);
	if (rc < 0)
		return rc;
	out->http = s->http;
	out->ctx = g->ctx;
	out->base_url = g->endpoints.base[GCP_API_STORAGE];
	out->upload_url = g->endpoints.base[GCP_API_STORAGE_UPLOAD];
	return 0;
}
