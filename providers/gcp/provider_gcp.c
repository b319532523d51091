#include "providers/gcp/provider_gcp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/compute.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/future.h"
#include "providers/gcp/http.h"
#include "providers/gcp/logging.h"
#include "providers/gcp/persistent.h"
#include "providers/gcp/quotas.h"
#include "providers/gcp/ratelimit.h"
#include "providers/gcp/storage.h"
#include "providers/gcp/vertex.h"
#include "reconcile/provider.h"
#include "reconcile/provider_future.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_persistent.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "providers/gcp/provider_gcp_internal.h"
#include "util/banned.h"

struct gcp_provider *gcp_of(struct provider *p)
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

int gcp_session_get(struct gcp_provider *g, struct session **out, struct vx_err *err)
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

void gcp_session_put(struct gcp_provider *g, struct session *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&g->lock);
	s->next = g->pool;
	g->pool = s;
	pthread_mutex_unlock(&g->lock);
}

static int gcp_post_webhook(struct provider *p, const struct provider_webhook *req, long *status,
			    struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
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
	if ((rc = gcp_session_get(g, &s, err)) < 0)
		return rc;
	rc = gcp_http_send(s->http, &r, &resp, err);
	if (rc == 0)
		*status = resp.status;
	gcp_session_put(g, s);
	gcp_response_release(&resp);
	return rc;
}

static size_t gcp_api_errors(struct provider *p, const char **names, uint64_t *counts, size_t max)
{
	struct gcp_provider *g = gcp_of(p);
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
	struct gcp_provider *g = gcp_of(p);
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
	struct gcp_provider *g = gcp_of(p);
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

/* ---- reservations (Compute Engine) ---- */

/* The fence of a provider call as the HTTP layer's; NULL when none. */
const struct gcp_fence *gcp_fence_of(struct gcp_fence *h, const struct provider_fence *f)
{
	if (!f)
		return NULL;
	h->check = f->check;
	h->ud = f->ud;
	return h;
}

/* The last path segment of s (Compute may answer a name or a URL), cleaned; NULL for NULL. */
int gcp_clean_last(char **out, const char *s)
{
	const char *slash;

	*out = NULL;
	if (!s)
		return 0;
	slash = strrchr(s, '/');
	*out = vx_text_clean(slash ? slash + 1 : s);
	return *out ? 0 : VX_ENOMEM;
}

int gcp_clean_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = vx_text_clean(s);
	return *out ? 0 : VX_ENOMEM;
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
int gcp_operation_finish(struct session *s, const char *project, const char *zone,
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

static int gcp_list_log_entries(struct provider *p, const char *project, const char *filter,
				const char *page_token, struct live_log_page *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct session *s = NULL;
	int rc;

	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		return rc;
	rc = gcp_logging_list(s->http, &g->endpoints, project, filter, page_token, out, err);
	gcp_session_put(g, s);
	return rc;
}

static void gcp_free(struct provider *p)
{
	struct gcp_provider *g = gcp_of(p);

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

/* The kinds this provider serves: one line each (each kind's adapters are its own file). */
extern const struct provider_job_ops gcp_job_ops;
extern const struct provider_reservation_ops gcp_reservation_ops;
extern const struct provider_quota_ops gcp_quota_ops;
extern const struct provider_future_ops gcp_future_ops;
extern const struct provider_persistent_ops gcp_persistent_ops;
static const struct provider_table gcp_tables[] = {
	{ &provider_kind_job, &gcp_job_ops },
	{ &provider_kind_reservation, &gcp_reservation_ops },
	{ &provider_kind_quota, &gcp_quota_ops },
	{ &provider_kind_future, &gcp_future_ops },
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
	return gcp_of(p)->auth;
}

const struct gcp_endpoints *gcp_provider_endpoints(struct provider *p)
{
	return &gcp_of(p)->endpoints;
}

int gcp_provider_storage(struct provider *p, struct storage_client *out, struct vx_err *err)
{
	struct gcp_provider *g = gcp_of(p);
	struct session *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	/* Never put back: freed with every other session when p is. */
	rc = gcp_session_get(g, &s, err);
	if (rc < 0)
		return rc;
	out->http = s->http;
	out->ctx = g->ctx;
	out->base_url = g->endpoints.base[GCP_API_STORAGE];
	out->upload_url = g->endpoints.base[GCP_API_STORAGE_UPLOAD];
	return 0;
}
