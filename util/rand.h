#ifndef VX_UTIL_RAND_H
#define VX_UTIL_RAND_H

/*
 * The one source of randomness. Two kinds:
 *
 *  - vx_rand_seed + vx_rand_next: a fast generator (splitmix64) for jitter,
 *    seeded from ctx->seed when a test pins it, else from the OS;
 *  - vx_rand_bytes: bytes nobody can guess (getrandom), for request ids,
 *    identities, delimiters; with ctx->seed set they are derived from the
 *    seed instead, so a test sees the same ids every run.
 *
 * And the formats those bytes take: vx_rand_hex, vx_uuid_format.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_ctx;

/* ctx->seed when non-zero (tests), else one from the OS (the clock and pid if it has none). */
uint64_t vx_rand_seed(const struct vx_ctx *ctx);
/* The next value of the splitmix64 generator whose state is *state. */
uint64_t vx_rand_next(uint64_t *state);

/*
 * n unpredictable bytes in out: 0, or VX_EIO (with err) when the OS has
 * none. With ctx and ctx->seed set, bytes derived from the seed, salt and
 * ctx's clock instead: the same in every run of a test, but the same for
 * two calls with one salt in one millisecond too, so only where a salt
 * tells the calls apart. ctx NULL: always the OS's.
 */
int vx_rand_bytes(const struct vx_ctx *ctx, const char *salt, void *out, size_t n,
		  struct vx_err *err) VX_WUR;

/* The n bytes at b as 2n lower-case hex digits and a NUL in out (2n + 1 bytes). */
void vx_rand_hex(char *out, const void *b, size_t n);

/* The 16 bytes at b as a version 4 (random) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" (RFC 9562). */
#define VX_UUID_LEN 36
void vx_uuid_format(char out[VX_UUID_LEN + 1], const unsigned char b[16]);

#endif
