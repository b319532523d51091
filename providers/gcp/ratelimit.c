#include "providers/gcp/ratelimit.h"

#include <pthread.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

struct bucket {
	struct bucket *next;
	char *key;          /* "api\nregion\ncreate-flag" */
	double per_ms;      /* refill rate; <= 0 = unlimited */
	double burst;
	double tokens;      /* may be negative: reserved ahead */
	int64_t last_ms;
};

struct gcp_ratelimit {
	const struct vx_ctx *ctx;
	struct gcp_ratelimit_options opts;
	struct bucket *buckets;
	pthread_mutex_t lock; /* one limiter may serve the HTTP sessions of several threads */
};

int gcp_ratelimit_new(struct gcp_ratelimit **out, const struct vx_ctx *ctx,
		      const struct gcp_ratelimit_options *opts, struct vx_err *err)
{
	struct gcp_ratelimit *rl = calloc(1, sizeof(*rl));

	*out = NULL;
	if (!rl)
		return vx_err_set(err, VX_ENOMEM, "rate limiter: out of memory");
	rl->ctx = ctx;
	if (opts)
		rl->opts = *opts;
	pthread_mutex_init(&rl->lock, NULL);
	*out = rl;
	return 0;
}

void gcp_ratelimit_free(struct gcp_ratelimit *rl)
{
	struct bucket *b, *next;

	if (!rl)
		return;
	for (b = rl->buckets; b; b = next) {
		next = b->next;
		free(b->key);
		free(b);
	}
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

static int default_rate(const char *api)
{
	static const struct { const char *api; int rate; } rates[] = {
		{ "aiplatform", 600 }, { "compute", 1500 }, { "cloudquotas", 600 }, { "storage", 6000 },
	};
	size_t i;

	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (!strcmp(api, rates[i].api))
			return rates[i].rate;
	return -1;
}

/* Requests a minute for a bucket, <= 0 = unlimited. */
static int bucket_rate(const struct gcp_ratelimit *rl, const char *api, int create)
{
	int r = create ? rl->opts.create_rate_per_minute : rl->opts.rate_per_minute;

	if (r != 0)
		return r;
	if (create)
		return !strcmp(api, "aiplatform") ? 60 : -1;
	return default_rate(api);
}

static struct bucket *bucket_get(struct gcp_ratelimit *rl, const char *api, const char *region,
				 int create)
{
	struct bucket *b;
	char *key = vx_asprintf("%s\n%s\n%d", api, region ? region : "", create);
	int rate;

	if (!key)
		return NULL;
	for (b = rl->buckets; b; b = b->next)
		if (!strcmp(b->key, key)) {
			free(key);
			return b;
		}
	b = calloc(1, sizeof(*b));
	if (!b) {
		free(key);
		return NULL;
	}
	rate = bucket_rate(rl, api, create);
	b->key = key;
	if (rl->opts.burst > 0)
		b->burst = rl->opts.burst < rate ? rl->opts.burst : (rate > 1 ? rate - 1 : 1);
	else
		b->burst = rate / 10 >= 1 ? rate / 10 : 1;
	/*
	 * Google counts requests per minute. A bucket that starts full and
	 * refills at the full rate lets burst + rate through in the first
	 * minute, more than the quota; refilling at rate - burst keeps every
	 * 60 s window at or under the rate (steady throughput is 90% of it).
	 */
	if (rate <= 0)
		b->per_ms = 0;
	else
		b->per_ms = (rate - b->burst >= 1 ? rate - b->burst : rate) / 60000.0;
	b->tokens = b->burst;
	b->last_ms = vx_mono_ms(rl->ctx);
	b->next = rl->buckets;
	rl->buckets = b;
	return b;
}

/* Takes one token and returns the wait until it is covered. */
static int64_t bucket_take(struct bucket *b, int64_t now)
{
	if (b->per_ms <= 0)
		return 0;
	if (now > b->last_ms) {
		b->tokens += (double)(now - b->last_ms) * b->per_ms;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
		b->last_ms = now;
	}
	b->tokens -= 1;
	if (b->tokens >= 0)
		return 0;
	/* The small epsilon keeps float error from turning 100 ms into 101. */
	return (int64_t)ceil(-b->tokens / b->per_ms - 1e-6);
}

int gcp_ratelimit_reserve(struct gcp_ratelimit *rl, const char *api, const char *region,
			  int is_create, int64_t *wait_ms)
{
	struct bucket *b, *c = NULL;
	int64_t now, w;

	*wait_ms = 0;
	if (!api)
		return 0;
	pthread_mutex_lock(&rl->lock);
	b = bucket_get(rl, api, region, 0);
	if (b && is_create)
		c = bucket_get(rl, api, region, 1);
	if (!b || (is_create && !c)) {
		pthread_mutex_unlock(&rl->lock);
		return VX_ENOMEM;
	}
	now = vx_mono_ms(rl->ctx);
	*wait_ms = bucket_take(b, now);
	if (c) {
		w = bucket_take(c, now);
		if (w > *wait_ms)
			*wait_ms = w;
	}
	pthread_mutex_unlock(&rl->lock);
	return 0;
}

int gcp_ratelimit_wait(struct gcp_ratelimit *rl, const char *api, const char *region,
		       int is_create)
{
	int64_t wait, due;
	int rc = gcp_ratelimit_reserve(rl, api, region, is_create, &wait);

	if (rc < 0 || wait <= 0)
		return rc;
	due = vx_mono_ms(rl->ctx) + wait;
	while (!vx_interrupted(rl->ctx) && vx_mono_ms(rl->ctx) < due)
		vx_sleep_ms(rl->ctx, due - vx_mono_ms(rl->ctx));
	return vx_interrupted(rl->ctx) ? VX_ECANCELED : 0;
}
