#ifndef VX_RECONCILE_OUT_STATUS_RENDER_H
#define VX_RECONCILE_OUT_STATUS_RENDER_H

#include <stdint.h>

#include "reconcile/status.h"
#include "util/buf.h"
#include "util/err.h"

/* The human table (docs/status.md), colour when color. VX_ENOMEM. */
int status_render_human(struct vx_buf *b, const struct status_report *r, int color) VX_WUR;

/* The JSON object (docs/status.md), one line, no trailing newline. VX_ENOMEM. */
int status_render_json(struct vx_buf *b, const struct status_report *r) VX_WUR;


#endif
