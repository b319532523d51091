#ifndef VX_UTIL_SUGGEST_H
#define VX_UTIL_SUGGEST_H

/*
 * "did you mean ...?": the nearest word to a misspelt key or enum value,
 * by case-insensitive Damerau-Levenshtein distance. Returns NULL when
 * nothing is close enough to be a useful hint (distance more than a third
 * of the word's length, at least 2 allowed), so messages never suggest
 * nonsense.
 */

#include <stddef.h>

/* candidates: n strings; returns one of them (borrowed) or NULL. */
const char *vx_suggest(const char *word, const char *const *candidates, size_t n);

/* Edit distance, case-insensitive, with transpositions. */
size_t vx_edit_distance(const char *a, const char *b);

#endif
