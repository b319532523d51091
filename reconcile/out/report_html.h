#ifndef VX_RECONCILE_REPORT_HTML_H
#define VX_RECONCILE_REPORT_HTML_H

/*
 * The page of `vx report -format html`: the report document (the object
 * `vx report -format json` prints, documented in docs/report.md) drawn as one
 * self-contained HTML file. Inline CSS and SVG only: no network, no fonts,
 * no script needed to read it (a few lines of script only link a bar to its
 * row in the table on hover); light and dark by prefers-color-scheme; A4 when
 * printed, the timeline scaled to the page width so no bar is cut.
 *
 * Every attempt's bar is the one element of the page that carries both
 * data-address and data-attempt, so scripts and tests can count and find
 * them. Every string of the document is treated as untrusted text: control
 * characters are replaced (util/text.h) and the rest is HTML-escaped. The
 * output depends on the document alone (no clock, no locale): the same
 * document gives the same bytes.
 */

#include "util/err.h"

struct cJSON;
struct vx_buf;

/*
 * Appends the self-contained HTML page for the report document doc to out.
 * The whole document is checked before anything is written: VX_EINVAL with
 * err naming the field ("report document: runs[2].created: expected an RFC
 * 3339 time, got \"yesterday\"") when it does not follow the format, and out
 * is left as it was; VX_ENOMEM or VX_EINVAL (out's cap) while writing.
 */
int report_html(const struct cJSON *doc, struct vx_buf *out, struct vx_err *err) VX_WUR;

#endif
