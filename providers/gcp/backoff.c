#include "providers/gcp/backoff.h"


#include "util/rand.h"
#include "util/banned.h"

void gcp_backoff_init(struct gcp_backoff *b, int64_t initial_ms, int64_t max_ms)
{
	b->initial_ms = initial_ms > 0 ? initial_ms : 1000;
	b->max_ms = max_ms >= b->initial_ms ? max_ms : b->initial_ms;
	b->ceiling_ms = b->initial_ms;
}

int64_t gcp_backoff_next(struct gcp_backoff *b, uint64_t *rng)
{
	int64_t ceiling = b->ceiling_ms;
	int64_t delay = (int64_t)(vx_rand_next(rng) % ((uint64_t)ceiling + 1));

	b->ceiling_ms = ceiling > b->max_ms / 2 ? b->max_ms : ceiling * 2;
	return delay;
}
