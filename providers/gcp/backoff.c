#include "providers/gcp/backoff.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/ctx.h"
#include "util/banned.h"

uint64_t gcp_rand_seed(const struct vx_ctx *ctx)
{
	uint64_t seed = 0;
	struct timespec ts;

	if (ctx && ctx->seed)
		return ctx->seed;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed) && seed)
		return seed;
	/* No entropy available: jitter only has to differ between processes. */
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
	return seed ? seed : 0x9e3779b97f4a7c15ULL;
}

uint64_t gcp_rand_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void gcp_backoff_init(struct gcp_backoff *b, int64_t initial_ms, int64_t max_ms)
{
	b->initial_ms = initial_ms > 0 ? initial_ms : 1000;
	b->max_ms = max_ms >= b->initial_ms ? max_ms : b->initial_ms;
	b->ceiling_ms = b->initial_ms;
}

int64_t gcp_backoff_next(struct gcp_backoff *b, uint64_t *rng)
{
	int64_t ceiling = b->ceiling_ms;
	int64_t delay = (int64_t)(gcp_rand_next(rng) % ((uint64_t)ceiling + 1));

	b->ceiling_ms = ceiling > b->max_ms / 2 ? b->max_ms : ceiling * 2;
	return delay;
}
