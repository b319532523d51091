#include "util/hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

uint64_t vx_fnv1a64_add(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * VX_FNV1A64_PRIME;
	return h;
}

uint64_t vx_fnv1a64(const void *p, size_t n)
{
	return vx_fnv1a64_add(VX_FNV1A64_BASIS, p, n);
}

uint64_t vx_fnv1a64_legacy(const void *p, size_t n)
{
	return vx_fnv1a64_add(VX_FNV1A64_LEGACY_BASIS, p, n);
}

/* The slot holding key, or the free slot it would take; m->cap > 0. */
static struct vx_hashmap_slot *slot_of(const struct vx_hashmap *m, const char *key, size_t len,
					uint64_t h)
{
	size_t mask = m->cap - 1, i = (size_t)h & mask;

	for (;; i = (i + 1) & mask) {
		struct vx_hashmap_slot *s = &m->slots[i];

		if (!s->key || (s->hash == h && s->len == len && !memcmp(s->key, key, len)))
			return s;
	}
}

/* Room for one more key, the table staying at most half full. */
static int make_room(struct vx_hashmap *m)
{
	struct vx_hashmap_slot *old = m->slots, *tab;
	size_t oldcap = m->cap, cap = m->cap ? m->cap : 16;

	while ((m->n + 1) * 2 > cap) {
		if (cap > SIZE_MAX / 2 / sizeof(*tab))
			return VX_ENOMEM;
		cap *= 2;
	}
	if (cap == m->cap)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return VX_ENOMEM;
	m->slots = tab;
	m->cap = cap;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].key)
			*slot_of(m, old[i].key, old[i].len, old[i].hash) = old[i];
	}
	free(old);
	return 0;
}

int vx_hashmap_get(const struct vx_hashmap *m, const char *key, size_t len, size_t *value)
{
	const struct vx_hashmap_slot *s;

	if (!m->n)
		return 0;
	s = slot_of(m, key, len, vx_fnv1a64(key, len));
	if (!s->key)
		return 0;
	if (value)
		*value = s->value;
	return 1;
}

static int put(struct vx_hashmap *m, const char *key, size_t len, size_t value, int replace,
	       size_t *existing)
{
	uint64_t h = vx_fnv1a64(key, len);
	struct vx_hashmap_slot *s;
	int rc;

	if (m->cap) {
		s = slot_of(m, key, len, h);
		if (s->key) {
			if (existing)
				*existing = s->value;
			if (replace)
				s->value = value;
			return 1;
		}
	}
	rc = make_room(m);
	if (rc < 0)
		return rc;
	s = slot_of(m, key, len, h);
	s->key = key;
	s->len = len;
	s->hash = h;
	s->value = value;
	m->n++;
	return 0;
}

int vx_hashmap_add(struct vx_hashmap *m, const char *key, size_t len, size_t value,
		   size_t *existing)
{
	return put(m, key, len, value, 0, existing);
}

int vx_hashmap_set(struct vx_hashmap *m, const char *key, size_t len, size_t value)
{
	int rc = put(m, key, len, value, 1, NULL);

	return rc < 0 ? rc : 0;
}

void vx_hashmap_clear(struct vx_hashmap *m)
{
	if (m->cap > 64 && m->n * 8 < m->cap) {
		vx_hashmap_release(m);
		return;
	}
	if (m->n)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->n = 0;
}

void vx_hashmap_release(struct vx_hashmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->n = m->cap = 0;
}
