#ifndef VX_RECONCILE_ERRTEXT_H
#define VX_RECONCILE_ERRTEXT_H

/*
 * How a server's error message is shown (the plan's reasons, vx status,
 * apply -wait, vx log): untrusted text, cleaned by util/text.h's one filter,
 * with any URL's credentials hidden. Below the outputs (reconcile/out/),
 * which use it, so that vx status's rows, built by the kinds, can too.
 */

#include "util/buf.h"
#include "util/err.h"

/*
 * A job's error message is shown whole: Google's sentence, the Cloud
 * Logging link after it (the one part a user needs to debug) and the log
 * tail Vertex appends. This cap only bounds what a hostile server could
 * make vx print; Google's messages are far shorter.
 */
#define RENDER_ERROR_MAX 8192
/* vx status's NOTE column shows the first line, at most this many characters. */
#define RENDER_ERROR_LINE_MAX 200

/*
 * Appends a job's error as people read it: "code N: MESSAGE" ("MESSAGE"
 * alone when code is 0). The message is the server's, so untrusted: its
 * control characters dropped (a tab or a line break becomes a space), the
 * credentials of any URL in it hidden, at most RENDER_ERROR_MAX characters,
 * "…" marking a cut. The plan's reason, apply -wait and vx log all show
 * errors through this. VX_ENOMEM.
 */
int render_error(struct vx_buf *out, int code, const char *message) VX_WUR;
/* The message part alone (for the JSON plan's error.message). */
int render_error_message(struct vx_buf *out, const char *message) VX_WUR;
/* Its first line alone, at most RENDER_ERROR_LINE_MAX characters (vx status's table). */
int render_error_first_line(struct vx_buf *out, const char *message) VX_WUR;

#endif
