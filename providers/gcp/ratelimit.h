#ifndef VX_GCP_RATELIMIT_H
#define VX_GCP_RATELIMIT_H

/*
 * Token buckets that keep vx under Google's per-minute request quotas, so
 * it slows itself down before the server answers 429.
 *
 * One bucket per (api, region) for every request, plus a "create" bucket
 * per (api, region) that job creations also draw on (Vertex: 600 requests
 * and 60 creations a minute per region). Buckets start full, hold at most
 * 'burst' tokens and refill continuously at (rate - burst)/60000 tokens a
 * millisecond on the context's monotonic clock (so a fake clock in tests
 * drives them).
 *
 * A reservation takes its token at once, going into debt when the bucket is
 * empty, and tells the caller how long to wait: callers are served in the
 * order they reserved. In any window of T ms at most
 * burst + (rate - burst)*T/60000 reservations become due, so no 60 s window
 * ever holds more than the per-minute quota: vx slows itself before Google
 * answers 429, whatever the pattern of requests.
 *
 * Thread-safe: one limiter may be shared by the HTTP sessions of several
 * threads (gcp_http_options.shared_limiter), so parallel work cannot multiply
 * the rate.
 */

#include <stdint.h>

#include "util/err.h"

struct vx_ctx;
struct gcp_ratelimit;

struct gcp_ratelimit_options {
	/* Requests a minute per (api, region): 0 = the api's default
	 * (aiplatform 600, compute 1500, cloudquotas 600, storage 6000,
	 * others unlimited), < 0 = unlimited. */
	int rate_per_minute;
	/* Creations a minute per (api, region): 0 = default (aiplatform 60,
	 * others unlimited), < 0 = unlimited. */
	int create_rate_per_minute;
	/* Bucket size: 0 = a tenth of the bucket's rate a minute, at least 1. */
	int burst;
};

/* ctx is borrowed and must outlive the limiter. opts may be NULL (defaults). */
int gcp_ratelimit_new(struct gcp_ratelimit **out, const struct vx_ctx *ctx,
		      const struct gcp_ratelimit_options *opts, struct vx_err *err) VX_WUR;
void gcp_ratelimit_free(struct gcp_ratelimit *rl);

/*
 * Takes a token for one request to (api, region) (region NULL = the api's
 * global bucket; api NULL = unlimited) and, when is_create, one from the
 * create bucket too; sets *wait_ms to how long from now the request must
 * wait (0 = go). Returns 0 or VX_ENOMEM.
 */
int gcp_ratelimit_reserve(struct gcp_ratelimit *rl, const char *api, const char *region,
			  int is_create, int64_t *wait_ms) VX_WUR;

/* Reserves and sleeps (vx_sleep_ms) until due. Returns 0, VX_ENOMEM, or
 * VX_ECANCELED when vx_interrupted(ctx) became true while waiting. */
int gcp_ratelimit_wait(struct gcp_ratelimit *rl, const char *api, const char *region,
		       int is_create) VX_WUR;

#endif
