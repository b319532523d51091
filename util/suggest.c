#include "util/suggest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "util/banned.h"

size_t vx_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, r;
	size_t *d;

	/* Words we compare are field and enum names; keep the table small. */
	if (la > 256 || lb > 256)
		return la > lb ? la : lb;
	d = calloc((la + 1) * (lb + 1), sizeof(*d));
	if (!d)
		return la > lb ? la : lb;
#define D(x, y) d[(x) * (lb + 1) + (y)]
	for (i = 0; i <= la; i++)
		D(i, 0) = i;
	for (j = 0; j <= lb; j++)
		D(0, j) = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
			size_t cost = ca != cb, best = D(i - 1, j) + 1;

			if (D(i, j - 1) + 1 < best)
				best = D(i, j - 1) + 1;
			if (D(i - 1, j - 1) + cost < best)
				best = D(i - 1, j - 1) + cost;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && D(i - 2, j - 2) + 1 < best)
				best = D(i - 2, j - 2) + 1;
			D(i, j) = best;
		}
	}
	r = D(la, lb);
#undef D
	free(d);
	return r;
}

/* Whether word is a part of cand (case-insensitive): 2 at its start, 1 elsewhere, 0 not. */
static int part_of(const char *word, size_t len, const char *cand)
{
	size_t clen = strlen(cand), at = vx_text_find_nocase(cand, clen, word, len);

	return len && at == clen ? 0 : at == 0 ? 2 : 1;
}

const char *vx_suggest(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1, len = strlen(word), limit;
	int best_part = 0;

	limit = len / 3 > 2 ? len / 3 : 2;
	for (size_t i = 0; i < n; i++) {
		size_t dist = vx_edit_distance(word, candidates[i]);
		/* A word that is the start or a part of a candidate was most
		 * likely cut short (NVIDIA_H100 for NVIDIA_H100_80GB, h100 for
		 * nvidia-h100-80gb): that beats a candidate merely near in
		 * spelling (NVIDIA_B200). Three characters at least, so that
		 * "a" does not match everything. */
		int part = len >= 3 ? part_of(word, len, candidates[i]) : 0;

		if (part > best_part || (part == best_part && dist < best_d)) {
			best_part = part;
			best_d = dist;
			best = candidates[i];
		}
	}
	return best && (best_part || best_d <= limit) ? best : NULL;
}
