#ifndef VX_UTIL_ARENA_H
#define VX_UTIL_ARENA_H

/*
 * A bump allocator: many small allocations freed together. Blocks of 64 KiB
 * (a larger request gets a block of its own), 16-byte aligned pointers. The
 * YAML tree of a file lives in one (reconcile/load/ynode.c), and so does the
 * cJSON tree of a state record or a list page while it is read
 * (util/json.h, vx_json_scratch).
 */

#include <stddef.h>

struct vx_arena_block;

struct vx_arena {
	struct vx_arena_block *head; /* the block being filled, then older ones */
};

#define VX_ARENA_INIT \
	{ \
		NULL \
	}

/* n bytes (uninitialised), or NULL when memory ran out or n is absurd. */
void *vx_arena_alloc(struct vx_arena *a, size_t n);

/* A copy of s[0, len) with a NUL after it, or NULL. */
char *vx_arena_strndup(struct vx_arena *a, const char *s, size_t len);

/* Whether p points into one of a's blocks. */
int vx_arena_owns(const struct vx_arena *a, const void *p);

/* Forgets every allocation, keeping one ordinary block for the next ones. */
void vx_arena_reset(struct vx_arena *a);

/* Frees every block; a is empty and usable again. */
void vx_arena_release(struct vx_arena *a);

#endif
