/*
 * The stack loader's check of region and zone names against the regions vx
 * knows: those of the built-in price table (data/prices.json, compiled into
 * data/prices_data.c with the list). Google opens regions more often
 * than vx ships, so a well-formed name vx does not know is refused only when
 * it is surely a typo of one it does:
 *
 *  - its letters ("us-east" of "us-east7") are those of a known region: a
 *    region numbered past what vx knows, perhaps new. A warning;
 *  - else, close to a known region (util/suggest.h's rule: "us-centrl1"): an
 *    error that names it (did you mean "us-central1"?);
 *  - else (letters vx has never seen, far from any): a warning.
 */
#include "reconcile/capacity.h"
#include "reconcile/stack_loader.h"

#include <string.h>

#include "util/buf.h"
#include "util/suggest.h"
#include "util/banned.h"

static size_t regions_n(void)
{
	size_t n = 0;

	while (prices_default_regions[n])
		n++;
	return n;
}

/* Length of s without its trailing digits: "us-central" of "us-central1". */
static size_t letters_len(const char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] >= '0' && s[n - 1] <= '9')
		n--;
	return n;
}

/* Whether a known region has region's letters (and some other number). */
static int known_letters(const char *region)
{
	size_t n = letters_len(region);

	for (size_t i = 0; prices_default_regions[i]; i++)
		if (letters_len(prices_default_regions[i]) == n &&
		    !strncmp(prices_default_regions[i], region, n))
			return 1;
	return 0;
}

int stack_regions_check(struct loader *L, const struct ynode *at, const char *field,
			const char *region, const char *zone_letter)
{
	const char *near;
	size_t n = regions_n();

	for (size_t i = 0; i < n; i++)
		if (!strcmp(prices_default_regions[i], region))
			return 0;
	near = known_letters(region) ? NULL : vx_suggest(region, prices_default_regions, n);
	if (near && zone_letter) {
		stack_err(L, at, "%s: unknown region \"%s\" in zone \"%s-%s\" (did you mean \"%s-%s\"?)",
			  field, region, region, zone_letter, near, zone_letter);
		return -1;
	}
	if (near) {
		stack_err(L, at, "%s: unknown region \"%s\" (did you mean \"%s\"?)", field, region, near);
		return -1;
	}
	if (zone_letter)
		stack_warn(L, at, "%s: \"%s-%s\" is in region \"%s\", which vx does not know (its price "
			   "table has no such region): used as written; check the name unless the region is new",
			   field, region, zone_letter, region);
	else
		stack_warn(L, at, "%s: \"%s\" is a region vx does not know (its price table has no such "
			   "region): used as written; check the name unless the region is new", field, region);
	return 0;
}
