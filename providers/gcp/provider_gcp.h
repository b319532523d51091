#ifndef VX_GCP_PROVIDER_GCP_H
#define VX_GCP_PROVIDER_GCP_H

/*
 * Google Cloud behind reconcile/provider.h: credentials (ADC), endpoints
 * (with CLOUDSDK_API_ENDPOINT_OVERRIDES_*), the HTTP layer and the Vertex
 * client. Thread-safe: each calling thread borrows its own HTTP session
 * from a pool; token refreshes are serialised.
 */

#include "util/err.h"

struct vx_ctx;
struct provider;
struct gcp_auth;
struct gcp_endpoints;
struct storage_client;

struct gcp_provider_options {
	int max_in_flight;  /* per session; 0 = the HTTP layer's default */
	/* Requests and job creations a minute per region; 0 = Google's published
	 * quotas, or VX_RATE_PER_MINUTE / VX_CREATE_RATE_PER_MINUTE when set. */
	int rate_per_minute;
	int create_rate_per_minute;
};

/* Finds credentials and endpoints; no network yet (but the metadata probe). */
int gcp_provider_new(struct provider **out, struct vx_ctx *ctx, const struct gcp_provider_options *opts,
		     struct vx_err *err) VX_WUR;

/* The credentials and endpoints in use (borrowed), for `vx doctor`. */
struct gcp_auth *gcp_provider_auth(struct provider *p);
const struct gcp_endpoints *gcp_provider_endpoints(struct provider *p);

/*
 * A Cloud Storage client (the gcs state backend) on an HTTP session of its
 * own, taken out of the pool: it is not shared with other threads, and
 * lives until the provider is freed. Its base URLs are borrowed from p.
 */
int gcp_provider_storage(struct provider *p, struct storage_client *out,
			 struct vx_err *err) VX_WUR;

#endif
