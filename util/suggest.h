#ifndef VX_UTIL_SUGGEST_H
#define VX_UTIL_SUGGEST_H

/*
 * "did you mean ...?": the nearest word to a misspelt key, enum value,
 * command or address. A candidate that the word (3 characters or more) is
 * the start of comes first, then one it is a part of (a word cut short:
 * NVIDIA_H100 -> NVIDIA_H100_80GB); among equals, the nearest by
 * case-insensitive Damerau-Levenshtein distance, the first listed on a tie.
 * Otherwise the nearest by that distance, or NULL when nothing is close
 * enough to be a useful hint (distance more than a third of the word's
 * length, at least 2 allowed), so messages never suggest nonsense.
 */

#include <stddef.h>

/* candidates: n strings; returns one of them (borrowed) or NULL. */
const char *vx_suggest(const char *word, const char *const *candidates, size_t n);

/* Edit distance, case-insensitive, with transpositions. */
size_t vx_edit_distance(const char *a, const char *b);

#endif
