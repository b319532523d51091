#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

int vx_grow(void *pp, size_t *alloc, size_t need, size_t elem)
{
	size_t n = *alloc ? *alloc : 16;
	void *p, *q;

	if (need <= *alloc)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return VX_ENOMEM;
		n *= 2;
	}
	if (!elem || n > SIZE_MAX / elem)
		return VX_ENOMEM;
	/* pp points at a pointer of some object type: read and write it as bytes. */
	memcpy(&p, pp, sizeof(p));
	q = realloc(p, n * elem);
	if (!q)
		return VX_ENOMEM;
	memcpy(pp, &q, sizeof(q));
	*alloc = n;
	return 0;
}
