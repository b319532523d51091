/*
 * spec_diff_paths: the field paths where two canonical jobSpec JSON texts
 * differ, for the plan's "spec changed: ..." reason.
 */
#include "reconcile/load/spec.h"

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

static void diff_leaf(void *ud, const char *path, const cJSON *a, const cJSON *b)
{
	(void)a;
	(void)b;
	diff_add(ud, path);
}

struct walk {
	int items;
	spec_diff_leaf leaf;
	void *ud;
	struct vx_buf path;
};

/* Appends a path step ("%s%s" key or "[%d]"), walks a and b there, and cuts it off again. */
static int walk(struct walk *w, const cJSON *a, const cJSON *b);

static int step(struct walk *w, const char *key, int index, const cJSON *a, const cJSON *b)
{
	size_t len = w->path.len;
	int rc = key ? vx_buf_printf(&w->path, "%s%s", len ? "." : "", key)
		     : vx_buf_printf(&w->path, "[%d]", index);

	if (rc == 0)
		rc = walk(w, a, b);
	w->path.len = len;
	w->path.data[len] = '\0';
	return rc;
}

static int walk(struct walk *w, const cJSON *a, const cJSON *b)
{
	const cJSON *x;
	int rc = 0;

	if (!a || !b || (cJSON_IsObject(a) != cJSON_IsObject(b)) ||
	    (cJSON_IsArray(a) != cJSON_IsArray(b))) {
		if (a || b)
			w->leaf(w->ud, vx_buf_str(&w->path), a, b);
		return 0;
	}
	if (cJSON_IsObject(a)) {
		cJSON_ArrayForEach(x, a)
			if ((rc = step(w, x->string, 0, x, cJSON_GetObjectItemCaseSensitive(b, x->string))) < 0)
				return rc;
		cJSON_ArrayForEach(x, b)
			if (!cJSON_GetObjectItemCaseSensitive(a, x->string) &&
			    (rc = step(w, x->string, 0, NULL, x)) < 0)
				return rc;
		return 0;
	}
	if (cJSON_IsArray(a) && cJSON_GetArraySize(a) == cJSON_GetArraySize(b)) {
		for (int i = 0; i < cJSON_GetArraySize(a); i++) {
			const cJSON *ia = cJSON_GetArrayItem(a, i), *ib = cJSON_GetArrayItem(b, i);

			if (w->items || (cJSON_IsObject(ia) && cJSON_IsObject(ib))) {
				if ((rc = step(w, NULL, i, ia, ib)) < 0)
					return rc;
			} else if (!cJSON_Compare(ia, ib, 1)) {
				w->leaf(w->ud, vx_buf_str(&w->path), a, b);
				return 0;
			}
		}
		return 0;
	}
	if (!cJSON_Compare(a, b, 1))
		w->leaf(w->ud, vx_buf_str(&w->path), a, b);
	return 0;
}

int spec_diff_walk(const cJSON *a, const cJSON *b, int items, spec_diff_leaf leaf, void *ud)
{
	struct walk w = { items, leaf, ud, VX_BUF_INIT };
	int rc = vx_buf_adds(&w.path, "") < 0 ? VX_ENOMEM : walk(&w, a, b);

	vx_buf_release(&w.path);
	return rc < 0 ? VX_ENOMEM : 0;
}

char *spec_diff_paths(const char *old_json, const char *new_json)
{
	struct diff d = { VX_BUF_INIT, 0, 0 };
	cJSON *a = old_json ? cJSON_Parse(old_json) : NULL;
	cJSON *b = new_json ? cJSON_Parse(new_json) : NULL;
	char *res = NULL;

	if (!a || !b) {
		if (!(old_json && new_json && !strcmp(old_json, new_json)))
			diff_add(&d, "");
	} else if (spec_diff_walk(a, b, 0, diff_leaf, &d) < 0) {
		d.oom = 1;
	}
	if (!d.oom && d.n > DIFF_MAX && vx_buf_printf(&d.out, " and %zu more",
						       d.n - DIFF_MAX) < 0)
		d.oom = 1;
	if (!d.oom)
		res = vx_buf_detach(&d.out);
	vx_buf_release(&d.out);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return res;
}
