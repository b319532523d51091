/*
 * `vx show FILE`: a saved plan printed again, from the file alone. The
 * human and markdown forms are the texts vxplan saved beside the plan
 * (reconcile/out/render.h, "rendered"): the renderer needs the whole plan,
 * which the JSON does not hold, and a text saved once cannot drift from
 * what the reviewer saw.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcile/out/render.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/text.h"

#include "util/banned.h"

/*
 * Appends t line by line, each cleaned (util/text.h): a plan file is
 * handed around, and one edited to hold escape sequences must not reach
 * the terminal as such.
 */
static int add_lines(struct vx_buf *out, const char *t)
{
	while (*t) {
		size_t n = strcspn(t, "\n");

		if (vx_text_add_clean(out, t, n) < 0 || (t[n] && vx_buf_addc(out, '\n') < 0))
			return VX_ENOMEM;
		t += n + (t[n] != 0);
	}
	return 0;
}

/* The text saved under rendered.<format>, or NULL. */
static const char *rendered(const cJSON *root, const char *format)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "rendered");
	const cJSON *t = cJSON_IsObject(r) ? cJSON_GetObjectItemCaseSensitive(r, format) : NULL;

	/* cJSON_IsString(NULL) is false, which the analyzer cannot see in the library.
	 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	return cJSON_IsString(t) ? t->valuestring : NULL;
}

int saved_plan_text(struct vx_buf *out, const char *json, size_t len, const char *format,
		    struct vx_err *err)
{
	struct saved_plan sp;
	cJSON *root = NULL;
	char *text = NULL;
	const char *t;
	int rc;

	/* The same checks vxapply makes, so show refuses what apply refuses. */
	if ((rc = saved_plan_parse(&sp, json, len, err)) < 0)
		return rc;
	saved_plan_release(&sp);
	root = cJSON_ParseWithLength(json, len);
	if (!root) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (strcmp(format, "json") != 0) {
		t = rendered(root, format);
		if (!t) {
			rc = vx_err_set(err, VX_EINVAL, "saved plan: it holds no %s text (saved by a vx "
					"before 'vx show'); -format json shows it, or save it again with "
					"vxplan -out", format);
			goto done;
		}
		rc = add_lines(out, t) < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
		goto done;
	}
	/* What vxplan -format json printed: the saved-only fields are added
	 * after it printed (cmd/plan.c), so removing them gives its bytes. */
	cJSON_DeleteItemFromObjectCaseSensitive(root, "rendered");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "planned_by");
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "state"), "salt");
	text = cJSON_Print(root);
	if (!text || vx_buf_adds(out, text) < 0 || vx_buf_addc(out, '\n') < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	free(text);
	cJSON_Delete(root);
	return rc;
}
