/*
 * spec_diff_paths: the field paths where two canonical jobSpec JSON texts
 * differ, for the plan's "spec changed: ..." reason.
 */
#include "reconcile/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/buf.h"
#include "util/banned.h"

/* ---- spec_diff_paths ------------------------------------------------------ */

#define DIFF_MAX 4

struct diff {
	struct vx_buf out;
	size_t n;
	int oom;
};

static void diff_add(struct diff *d, const char *path)
{
	d->n++;
	if (d->n > DIFF_MAX)
		return;
	if ((d->n > 1 && vx_buf_adds(&d->out, ", ") < 0) ||
	    vx_buf_adds(&d->out, *path ? path : "jobSpec") < 0)
		d->oom = 1;
}

static void diff_walk(struct diff *d, const cJSON *a, const cJSON *b, struct vx_buf *path)
{
	const cJSON *x;
	size_t len = path->len;
	int i, na, nb;

	if (!a || !b || (cJSON_IsObject(a) != cJSON_IsObject(b)) ||
	    (cJSON_IsArray(a) != cJSON_IsArray(b))) {
		if (a || b)
			diff_add(d, vx_buf_str(path));
		return;
	}
	if (cJSON_IsObject(a)) {
		cJSON_ArrayForEach(x, a) {
			if (vx_buf_printf(path, "%s%s", len ? "." : "", x->string) < 0) {
				d->oom = 1;
				return;
			}
			diff_walk(d, x, cJSON_GetObjectItemCaseSensitive(b, x->string), path);
			path->len = len;
			path->data[len] = '\0';
		}
		cJSON_ArrayForEach(x, b) {
			if (cJSON_GetObjectItemCaseSensitive(a, x->string))
				continue;
			if (vx_buf_printf(path, "%s%s", len ? "." : "", x->string) < 0) {
				d->oom = 1;
				return;
			}
			diff_add(d, vx_buf_str(path));
			path->len = len;
			path->data[len] = '\0';
		}
		return;
	}
	if (cJSON_IsArray(a)) {
		na = cJSON_GetArraySize(a);
		nb = cJSON_GetArraySize(b);
		if (na != nb) {
			diff_add(d, vx_buf_str(path));
			return;
		}
		for (i = 0; i < na; i++) {
			const cJSON *ia = cJSON_GetArrayItem(a, i), *ib = cJSON_GetArrayItem(b, i);

			if (cJSON_IsObject(ia) && cJSON_IsObject(ib)) {
				if (vx_buf_printf(path, "[%d]", i) < 0) {
					d->oom = 1;
					return;
				}
				diff_walk(d, ia, ib, path);
				path->len = len;
				path->data[len] = '\0';
			} else if (!cJSON_Compare(ia, ib, 1)) {
				diff_add(d, vx_buf_str(path));
				return;
			}
		}
		return;
	}
	if (!cJSON_Compare(a, b, 1))
		diff_add(d, vx_buf_str(path));
}

char *spec_diff_paths(const char *old_json, const char *new_json)
{
	struct diff d = { VX_BUF_INIT, 0, 0 };
	struct vx_buf path = VX_BUF_INIT;
	cJSON *a = old_json ? cJSON_Parse(old_json) : NULL;
	cJSON *b = new_json ? cJSON_Parse(new_json) : NULL;
	char *res = NULL;

	if (!a || !b) {
		if (!(old_json && new_json && !strcmp(old_json, new_json)))
			diff_add(&d, "");
	} else if (vx_buf_adds(&path, "") < 0) {
		d.oom = 1;
	} else {
		diff_walk(&d, a, b, &path);
	}
	if (!d.oom && d.n > DIFF_MAX && vx_buf_printf(&d.out, " and %zu more",
						       d.n - DIFF_MAX) < 0)
		d.oom = 1;
	if (!d.oom)
		res = vx_buf_detach(&d.out);
	vx_buf_release(&d.out);
	vx_buf_release(&path);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return res;
}
