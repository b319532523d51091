#ifndef VX_GCP_PROVIDER_GCP_INTERNAL_H
#define VX_GCP_PROVIDER_GCP_INTERNAL_H

/*
 * What the gcp provider's files share (provider_gcp.c, the provider, and
 * provider_gcp_KIND.c, each kind's adapters from its client to its
 * reconcile/provider_KIND.h table): the provider and its pool of sessions,
 * the fence and text helpers, and following a Compute zone operation. Not
 * part of provider_gcp.h's public surface.
 */

#include <pthread.h>
#include <stdint.h>

#include "providers/gcp/auth.h"
#include "providers/gcp/compute.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/http.h"
#include "providers/gcp/persistent.h"
#include "providers/gcp/provider_gcp.h"
#include "providers/gcp/quotas.h"
#include "providers/gcp/ratelimit.h"
#include "providers/gcp/vertex.h"
#include "reconcile/provider.h"

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

/* A session: one HTTP client and each API's client on it, pooled. */
struct session {
	struct gcp_http *http;
	struct vertex_client vertex;
	struct compute_client compute;
	struct quotas_client quotas;
	struct persistent_client persistent; /* set by persistent_session at each use */
	struct session *next;
};
struct gcp_provider {
	struct provider base; /* first: the struct provider * is this struct */
	struct vx_ctx *ctx;
	struct gcp_provider_options opts;
	struct gcp_endpoints endpoints;
	struct gcp_auth *auth;
	struct gcp_http *auth_http;	/* token requests; used under lock only */
	struct gcp_token_source tokens; /* serialising wrapper around auth */
	struct gcp_ratelimit *limiter;	/* shared by every session: threads cannot multiply the rate */
	pthread_mutex_t lock;		/* auth, auth_http and the pool */
	struct session *pool;
	struct session **all_list; /* every session made, for free */
	size_t nall;
};

/* p as the gcp provider it is. */
struct gcp_provider *gcp_of(struct provider *p);
/* A session from the pool (made when none is free); give it back with gcp_session_put. */
int gcp_session_get(struct gcp_provider *g, struct session **out, struct vx_err *err);
void gcp_session_put(struct gcp_provider *g, struct session *s);
/* The fence of a provider call as the HTTP layer's, in *h; NULL when none. */
const struct gcp_fence *gcp_fence_of(struct gcp_fence *h, const struct provider_fence *f);
/* The last path segment of s (Compute may answer a name or a URL), cleaned; NULL for NULL. */
int gcp_clean_last(char **out, const char *s);
/* s cleaned (vx_text_clean); NULL for NULL. 0 or VX_ENOMEM. */
int gcp_clean_opt(char **out, const char *s);
/*
 * Follows a Compute mutation's zone operation op to its end (what names
 * the mutation in messages): 0 or its error when the outcome is certain,
 * VX_EUNCERTAIN when it is not.
 */
int gcp_operation_finish(struct session *s, const char *project, const char *zone,
			 struct compute_operation *op, const char *what, struct vx_err *err);

#endif
