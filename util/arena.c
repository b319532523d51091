/* A bump allocator: see util/arena.h. */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "util/banned.h"

/* Under AddressSanitizer a block's free space and what a reset dropped are
 * poisoned, so a read of a tree after its reset is caught as with free(). */
#if defined(__SANITIZE_ADDRESS__)
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define BLOCK (64u * 1024u)
#define ALIGN 16u

struct vx_arena_block {
	struct vx_arena_block *next;
	size_t used, size;
	/* data follows, aligned */
};

#define HDR ((sizeof(struct vx_arena_block) + ALIGN - 1) & ~(size_t)(ALIGN - 1))

void *vx_arena_alloc(struct vx_arena *a, size_t n)
{
	struct vx_arena_block *b = a->head;
	size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);

	if (need < n)
		return NULL;
	if (!b || b->size - b->used < need) {
		/* Large requests get a block of their own, placed behind the
		 * current one so its free space is not wasted. */
		size_t size = need > BLOCK / 4 ? need : BLOCK;

		if (size > SIZE_MAX - HDR)
			return NULL;
		b = malloc(HDR + size);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = size;
		POISON((char *)b + HDR, size);
		if (size != BLOCK && a->head) {
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	b->used += need;
	UNPOISON((char *)b + HDR + b->used - need, n);
	return (char *)b + HDR + b->used - need;
}

char *vx_arena_strndup(struct vx_arena *a, const char *s, size_t len)
{
	char *p;

	if (len == SIZE_MAX)
		return NULL;
	p = vx_arena_alloc(a, len + 1);
	if (p) {
		if (len)
			memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

int vx_arena_owns(const struct vx_arena *a, const void *p)
{
	uintptr_t c = (uintptr_t)p;

	for (const struct vx_arena_block *b = a->head; b; b = b->next) {
		uintptr_t data = (uintptr_t)b + HDR;

		if (c >= data && c - data < b->size)
			return 1;
	}
	return 0;
}

void vx_arena_reset(struct vx_arena *a)
{
	struct vx_arena_block *keep = NULL, *b, *next;

	for (b = a->head; b; b = next) {
		next = b->next;
		if (!keep && b->size == BLOCK) {
			keep = b;
			continue;
		}
		UNPOISON((char *)b + HDR, b->size);
		free(b);
	}
	if (keep) {
		keep->used = 0;
		keep->next = NULL;
		POISON((char *)keep + HDR, keep->size);
	}
	a->head = keep;
}

void vx_arena_release(struct vx_arena *a)
{
	struct vx_arena_block *b, *next;

	for (b = a->head; b; b = next) {
		next = b->next;
		UNPOISON((char *)b + HDR, b->size); /* malloc's again */
		free(b);
	}
	a->head = NULL;
}
