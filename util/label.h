#ifndef VX_UTIL_LABEL_H
#define VX_UTIL_LABEL_H

/*
 * One key/value type for the whole tree: a job's labels, a run's labels in
 * the state, a journaled intent's, a quota preference's dimensions, the
 * stack's labels. Arrays of them are kept sorted by key with unique keys
 * wherever they are set with vx_labels_set.
 */

#include <stddef.h>

#include "util/err.h"

struct vx_label {
	char *key;    /* owned */
	char *value;  /* owned */
};

/* Frees n labels and the array; NULL-safe. */
void vx_labels_free(struct vx_label *l, size_t n);
/* Deep copy of in[0..n) into *out (NULL when n is 0). VX_ENOMEM. */
int vx_labels_copy(struct vx_label **out, size_t *nout, const struct vx_label *in, size_t n) VX_WUR;
/* Sets key=value in a sorted array, replacing an existing key. VX_ENOMEM. */
int vx_labels_set(struct vx_label **labels, size_t *n, const char *key, const char *value) VX_WUR;
/* The value for key, or NULL. */
const char *vx_labels_get(const struct vx_label *labels, size_t n, const char *key);
/* qsort comparator by key. */
int vx_label_cmp(const void *a, const void *b);

#endif
