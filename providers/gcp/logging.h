#ifndef VX_GCP_LOGGING_H
#define VX_GCP_LOGGING_H

/*
 * Cloud Logging v2 entries.list, as vx logs reads a training job's lines:
 * POST {base}entries:list {"resourceNames": ["projects/P"], "filter": F,
 * "orderBy": "timestamp asc", "pageSize": 1000, "pageToken": T}, answered
 * with {"entries": [LogEntry], "nextPageToken"}. Of each LogEntry vx keeps
 * insertId, timestamp, severity and textPayload (or jsonPayload.message);
 * an entry without insertId or timestamp is refused, as is a page of more
 * entries than asked.
 */

#include "util/err.h"

struct gcp_endpoints;
struct gcp_http;
struct live_log_page;

#define GCP_LOGGING_PAGE_SIZE 1000
#define GCP_LOGGING_TEXT_MAX (64 * 1024) /* a longer line is cut */

/* One page into *out (overwritten). VX_EINVAL for a bad project or answer, or the call's error. */
int gcp_logging_list(struct gcp_http *http, const struct gcp_endpoints *ep, const char *project,
		     const char *filter, const char *page_token, struct live_log_page *out,
		     struct vx_err *err) VX_WUR;

#endif
