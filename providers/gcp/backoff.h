#ifndef VX_GCP_BACKOFF_H
#define VX_GCP_BACKOFF_H

/*
 * Truncated exponential backoff with full jitter (the AWS architecture
 * blog's "full jitter", which Google's client libraries also use): before
 * retry k the caller sleeps a uniformly random time in [0, ceiling], where
 * the ceiling starts at initial_ms and doubles after each draw up to max_ms.
 *
 * Randomness comes from util/rand.h's seeded generator (vx_rand_seed,
 * vx_rand_next) so that tests get the same schedule for the same seed. It is
 * not cryptographic and must not be used for anything secret.
 */

#include <stdint.h>

struct gcp_backoff {
	int64_t initial_ms;
	int64_t max_ms;
	int64_t ceiling_ms; /* the bound of the next draw */
};

/* Starts a schedule. initial_ms <= 0 means 1000; max_ms < initial_ms means initial_ms. */
void gcp_backoff_init(struct gcp_backoff *b, int64_t initial_ms, int64_t max_ms);

/* Returns the next delay, uniform in [0, ceiling] drawn from *rng, and
 * doubles the ceiling (truncated at max_ms). */
int64_t gcp_backoff_next(struct gcp_backoff *b, uint64_t *rng);

#endif
