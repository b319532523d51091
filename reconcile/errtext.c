#include "reconcile/errtext.h"

#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "util/banned.h"

/*
 * message, cleaned: C0/C1 controls dropped, a tab or a run of line breaks
 * one space (first_line: stop at the first break), at most max characters,
 * then "…" (util/text.h's filter, whose cut counts the space of a break
 * like any character).
 */
static int add_message(struct vx_buf *b, const char *message, int first_line, size_t max)
{
	static const struct vx_text_rules rules = {
		.tab = VX_TEXT_SPACE,
		.breaks = VX_TEXT_SPACE,
		.join_breaks = 1,
		.c0 = VX_TEXT_DROP,
		.c1 = VX_TEXT_DROP,
	};
	struct vx_text_rules r = rules;
	const char *m = message ? message : "";

	r.max = max;
	return vx_text_filter(b, m, first_line ? strcspn(m, "\r\n") : strlen(m), &r);
}

/* Cleaned as above, then any URL's credentials hidden. */
static int add_redacted(struct vx_buf *b, const char *message, int first_line, size_t max)
{
	struct vx_buf t = VX_BUF_INIT;
	char *s;
	int rc = add_message(&t, message, first_line, max);

	if (rc == 0 && t.len == 0)
		return 0;
	s = rc == 0 ? vx_buf_detach(&t) : NULL;
	vx_buf_release(&t);
	if (!s)
		return rc < 0 ? rc : VX_ENOMEM;
	vx_text_redact_userinfo(s);
	rc = vx_buf_adds(b, s);
	free(s);
	return rc;
}

int render_error_message(struct vx_buf *b, const char *message)
{
	return add_redacted(b, message, 0, RENDER_ERROR_MAX);
}

int render_error_first_line(struct vx_buf *b, const char *message)
{
	return add_redacted(b, message, 1, RENDER_ERROR_LINE_MAX);
}

int render_error(struct vx_buf *b, int code, const char *message)
{
	int rc = code ? vx_buf_printf(b, "code %d%s", code, message && *message ? ": " : "") : 0;

	return rc == 0 ? render_error_message(b, message) : rc;
}
