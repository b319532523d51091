#include "util/label.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

void vx_labels_free(struct vx_label *l, size_t n)
{
	for (size_t i = 0; l && i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

int vx_labels_copy(struct vx_label **out, size_t *nout, const struct vx_label *in, size_t n)
{
	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return VX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		*nout = i + 1;
		if ((in[i].key && !((*out)[i].key = vx_strdup(in[i].key))) ||
		    (in[i].value && !((*out)[i].value = vx_strdup(in[i].value))))
			return VX_ENOMEM;
	}
	return 0;
}

int vx_labels_set(struct vx_label **labels, size_t *n, const char *key, const char *value)
{
	struct vx_label *grown;
	char *k = NULL, *v = NULL;
	size_t i;

	for (i = 0; i < *n; i++) {
		int c = strcmp((*labels)[i].key, key);

		if (c == 0) {
			if (!(v = vx_strdup(value)))
				return VX_ENOMEM;
			free((*labels)[i].value);
			(*labels)[i].value = v;
			return 0;
		}
		if (c > 0)
			break;
	}
	k = vx_strdup(key);
	v = vx_strdup(value);
	grown = k && v ? realloc(*labels, (*n + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(k);
		free(v);
		return VX_ENOMEM;
	}
	*labels = grown;
	memmove(&grown[i + 1], &grown[i], (*n - i) * sizeof(*grown));
	grown[i].key = k;
	grown[i].value = v;
	(*n)++;
	return 0;
}

const char *vx_labels_get(const struct vx_label *labels, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (labels[i].key && !strcmp(labels[i].key, key))
			return labels[i].value;
	return NULL;
}

int vx_label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vx_label *)a)->key, ((const struct vx_label *)b)->key);
}
