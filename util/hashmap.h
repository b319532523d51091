#ifndef VX_UTIL_HASHMAP_H
#define VX_UTIL_HASHMAP_H

/*
 * The one hash function and the one hash table of the tree.
 *
 * vx_fnv1a64 is FNV-1a, 64 bits, with the published offset basis
 * 14695981039346656037 (0xcbf29ce484222325) and prime 1099511628211
 * (0x100000001b3). It is not a cryptographic hash: use it for tables and for
 * "has this changed" digests, never where an adversary picks the input and
 * gains from a collision.
 *
 * struct vx_hashmap maps string keys (pointer and length, so keys need not
 * be NUL-terminated) to a size_t: an index into the caller's own array of
 * records, so that array may grow and move without the table noticing.
 * Open addressing with linear probing, at most half full, grows by doubling.
 * Keys are borrowed: the caller keeps each key's bytes alive and unchanged
 * while it is in the table (until vx_hashmap_clear or vx_hashmap_release).
 *
 *	struct vx_hashmap m = VX_HASHMAP_INIT;
 *	size_t at;
 *	if (vx_hashmap_add(&m, name, strlen(name), n, &at) == 1)
 *		... name is already there, as record 'at' ...
 *	vx_hashmap_release(&m);
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define VX_FNV1A64_BASIS UINT64_C(0xcbf29ce484222325)
#define VX_FNV1A64_PRIME UINT64_C(0x100000001b3)

/* FNV-1a of the n bytes at p, continuing from h (start with VX_FNV1A64_BASIS). */
uint64_t vx_fnv1a64_add(uint64_t h, const void *p, size_t n);
/* FNV-1a of the n bytes at p. */
uint64_t vx_fnv1a64(const void *p, size_t n);

/*
 * The offset basis vx used by mistake in some places (the right one without
 * its last digit). Only for values that were stored or that tests pinned
 * with it, so that they stay what they were; new code uses vx_fnv1a64.
 * Its one user: the seeded bytes of util/rand.c, whose results the golden
 * commit ids of tests/unit/test_state_git.c hold.
 */
#define VX_FNV1A64_LEGACY_BASIS UINT64_C(1469598103934665603)
uint64_t vx_fnv1a64_legacy(const void *p, size_t n);

struct vx_hashmap_slot {
	const char *key; /* NULL: free */
	size_t len;
	uint64_t hash;
	size_t value;
};

struct vx_hashmap {
	struct vx_hashmap_slot *slots;
	size_t n;   /* keys in the table */
	size_t cap; /* slots: 0 or a power of two, at least twice n */
};

#define VX_HASHMAP_INIT { NULL, 0, 0 }

/* Finds key: 1 and its value in *value, or 0 when absent. */
int vx_hashmap_get(const struct vx_hashmap *m, const char *key, size_t len, size_t *value);
/*
 * Adds key with value unless it is there: 0 when added, 1 when already
 * present (the table is unchanged and *existing, if not NULL, gets its
 * value), VX_ENOMEM when the table could not grow.
 */
int vx_hashmap_add(struct vx_hashmap *m, const char *key, size_t len, size_t value,
		   size_t *existing) VX_WUR;
/* Adds key with value, or replaces its value: 0, or VX_ENOMEM. */
int vx_hashmap_set(struct vx_hashmap *m, const char *key, size_t len, size_t value) VX_WUR;
/*
 * Empties the table. Its memory is kept for the next use unless the table
 * is much bigger than what it held, so that emptying a table between many
 * small uses costs what they put in it, not what one big use once needed.
 */
void vx_hashmap_clear(struct vx_hashmap *m);
/* Frees the table's memory; m is VX_HASHMAP_INIT again. */
void vx_hashmap_release(struct vx_hashmap *m);

#endif
