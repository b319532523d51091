#ifndef VX_UTIL_ALLOC_H
#define VX_UTIL_ALLOC_H

/*
 * The one grow-by-doubling of the tree (after git's ALLOC_GROW), for an
 * array that gains elements one or a few at a time: room is doubled, so n
 * appends cost O(n) copies rather than O(n^2).
 *
 *	struct item *items = NULL;
 *	size_t n = 0, alloc = 0;
 *	if (VX_ALLOC_GROW(items, n + 1, alloc) < 0)
 *		return VX_ENOMEM;
 *	items[n++] = x;
 */

#include <stddef.h>

#include "util/err.h"

/*
 * Makes room for at least need elements of elem bytes in the array whose
 * pointer is at pp (any object pointer type) and whose room is *alloc: the
 * room doubles (16 at first) until it holds need. 0, or VX_ENOMEM with the
 * array and *alloc as they were (also when the size would overflow).
 */
int vx_grow(void *pp, size_t *alloc, size_t need, size_t elem) VX_WUR;

/* vx_grow for the array x (an lvalue of pointer type) of room alloc. */
#define VX_ALLOC_GROW(x, need, alloc) vx_grow(&(x), &(alloc), (need), sizeof(*(x)))

#endif
