#ifndef VX_UTIL_DIAG_H
#define VX_UTIL_DIAG_H

/*
 * A list of positioned diagnostics, for checks that report every problem
 * they find (the loader, the planner) rather than stopping at the first.
 * Each renders as one line "FILE:LINE:COLUMN: message". The list stops
 * growing at 'cap' entries and remembers how many were dropped.
 */

#include <stddef.h>

#include "util/err.h"

struct vx_diag {
	char *file;    /* owned; may be NULL for stack-wide problems */
	unsigned line; /* 1-based; 0 = unknown */
	unsigned col;  /* 1-based; 0 = unknown */
	char *msg;     /* owned */
	size_t seq;    /* insertion order, keeps sorting stable */
};

struct vx_diags {
	struct vx_diag *items;
	size_t n, alloc;
	size_t cap;     /* 0 = VX_DIAGS_DEFAULT_CAP */
	size_t dropped; /* diagnostics past cap */
};

#define VX_DIAGS_DEFAULT_CAP 50
#define VX_DIAGS_INIT { NULL, 0, 0, 0, 0 }

/* Adds one diagnostic. Returns VX_ENOMEM only on allocation failure. */
int vx_diags_add(struct vx_diags *d, const char *file, unsigned line, unsigned col,
		 const char *fmt, ...) VX_PRINTF(5, 6);
/* Sorts by file, line, column (stable for equal positions). */
void vx_diags_sort(struct vx_diags *d);
/* Renders diagnostic i as "FILE:LINE:COLUMN: msg" (parts that are unknown left out). Caller frees. */
char *vx_diag_format(const struct vx_diag *di);
/* The total number reported, dropped ones included. */
size_t vx_diags_count(const struct vx_diags *d);
void vx_diags_release(struct vx_diags *d);

#endif
