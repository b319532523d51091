#include "util/rand.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/ctx.h"
#include "util/hashmap.h"
#include "util/banned.h"

uint64_t vx_rand_seed(const struct vx_ctx *ctx)
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
	return seed ? seed : UINT64_C(0x9e3779b97f4a7c15);
}

uint64_t vx_rand_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

int vx_rand_bytes(const struct vx_ctx *ctx, const char *salt, void *out, size_t n,
		  struct vx_err *err)
{
	unsigned char *o = out;
	size_t got = 0;

	if (ctx && ctx->seed) {
		/*
		 * The legacy FNV basis, on purpose. Only tests set a seed (cmd/
		 * never does), but their golden data holds what it gives: the
		 * state's lineage and salt go into the commit ids that
		 * tests/unit/test_state_git.c pins (EXPECTED_COMMIT).
		 */
		uint64_t x = ctx->seed, v = 0;
		uint64_t h = vx_fnv1a64_legacy(salt ? salt : "", salt ? strlen(salt) : 0);

		x ^= h ^ ((uint64_t)vx_now_ms(ctx) * UINT64_C(0x9e3779b97f4a7c15));
		for (size_t i = 0; i < n; i++) {
			if (i % 8 == 0)
				v = vx_rand_next(&x);
			o[i] = (unsigned char)(v >> (8 * (i % 8)));
		}
		return 0;
	}
	while (got < n) {
		ssize_t r = getrandom(o + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return vx_err_set(err, VX_EIO, "getrandom: %s", strerror(errno));
		}
		got += (size_t)r;
	}
	return 0;
}

void vx_rand_hex(char *out, const void *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = b;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void vx_uuid_format(char out[VX_UUID_LEN + 1], const unsigned char b[16])
{
	unsigned char v[16];
	size_t o = 0;

	memcpy(v, b, sizeof(v));
	v[6] = (unsigned char)((v[6] & 0x0f) | 0x40); /* version 4 */
	v[8] = (unsigned char)((v[8] & 0x3f) | 0x80); /* the RFC's variant */
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		vx_rand_hex(out + o, v + i, 1);
		o += 2;
	}
	out[o] = '\0';
}
