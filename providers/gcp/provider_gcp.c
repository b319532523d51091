#include "providers/gcp/provider_gcp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/http.h"
#include "providers/gcp/ratelimit.h"
#include "providers/gcp/vertex.h"
#include "reconcile/provider.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

/*
 * Vertex's page size for list: the maximum is not documented; by AIP-158
 * a larger value is coerced down to the maximum, so ask for many.
 */
#define GCP_LIST_PAGE_SIZE 1000

struct session {
	struct gcp_http *http;
	struct vertex_client vertex;
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
	struct vx_label *labels = calloc(v->n_labels + 1, sizeof(*labels));
	struct live_job view;
	char *region = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!labels)
		return VX_ENOMEM;
	for (size_t i = 0; i < v->n_labels; i++) {
		labels[i].key = v->labels[i].key;
		labels[i].value = v->labels[i].value;
	}
	if (v->name && vertex_job_name_region(v->name, &region) < 0)
		region = NULL;
	memset(&view, 0, sizeof(view));
	view.name = v->name;
	view.region = region;
	view.display_name = v->display_name;
	/* live_job's strings are not const; the view is only read by live_job_copy. */
	view.state = (char *)(uintptr_t)vertex_job_state_name(v->state);
	view.labels = labels;
	view.nlabels = v->n_labels;
	view.create_ms = v->create_time_ms;
	view.end_ms = v->end_time_ms;
	view.error_code = v->error_code;
	view.error_message = v->error_message;
	rc = live_job_copy(out, &view);
	free(labels);
	free(region);
	return rc;
}

static int gcp_list_jobs(struct provider *p, const char *project, const char *region,
			 const char *stack, struct live_jobs *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct vertex_job_list list = VERTEX_JOB_LIST_INIT;
	const char *key = "vx-stack";
	struct session *s = NULL;
	char *filter = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = vertex_filter_labels(&filter, &key, &stack, 1, err);
	if (rc < 0)
		goto done;
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

static int gcp_create_job(struct provider *p, const struct provider_job_request *req,
			  struct live_job *out, struct vx_err *err)
{
	struct gcp_provider *g = gp(p);
	struct vertex_job job = VERTEX_JOB_INIT;
	const char **keys = calloc(req->nlabels + 1, sizeof(*keys));
	const char **vals = calloc(req->nlabels + 1, sizeof(*vals));
	struct gcp_fence hfence;
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!keys || !vals) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < req->nlabels; i++) {
		keys[i] = req->labels[i].key;
		vals[i] = req->labels[i].value;
	}
	rc = session_get(g, &s, err);
	if (rc < 0)
		goto done;
	/* The session is this thread's until session_put: its fence too. */
	if (req->fence) {
		hfence.check = req->fence->check;
		hfence.ud = req->fence->ud;
		s->vertex.fence = &hfence;
	}
	rc = vertex_create_job(&s->vertex, req->project, req->region, req->display_name, keys, vals,
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
	free(keys);
	free(vals);
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
static int env_rate(const char *name, int *out, struct vx_err *err)
{
	const char *v = getenv(name);
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

int gcp_provider_new(struct provider **out, struct vx_ctx *ctx, const struct gcp_provider_options *opts,
		     struct vx_err *err)
{
	struct gcp_provider *g = calloc(1, sizeof(*g));
	int rc;

	*out = NULL;
	if (!g)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	g->base.list_jobs = gcp_list_jobs;
	g->base.create_job = gcp_create_job;
	g->base.cancel_job = gcp_cancel_job;
	g->base.free = gcp_free;
	g->ctx = ctx;
	if (opts)
		g->opts = *opts;
	rc = env_rate("VX_RATE_PER_MINUTE", &g->opts.rate_per_minute, err);
	if (rc == 0)
		rc = env_rate("VX_CREATE_RATE_PER_MINUTE", &g->opts.create_rate_per_minute, err);
	if (rc < 0)
		goto fail;
	rc = gcp_endpoints_load(&g->endpoints, err);
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
