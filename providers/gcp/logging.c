/* Cloud Logging entries.list. See logging.h. */
#include "providers/gcp/logging.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "providers/gcp/endpoints.h"
#include "providers/gcp/gcall.h"
#include "providers/gcp/gjson.h"
#include "reconcile/provider.h"
#include "util/buf.h"
#include "util/timefmt.h"

#include "util/banned.h"

/* The request body: NULL on OOM. */
static char *list_body(const char *project, const char *filter, const char *page_token)
{
	cJSON *o = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(o, "resourceNames");
	char *res = vx_asprintf("projects/%s", project), *out = NULL;

	if (o && names && res && cJSON_AddItemToArray(names, cJSON_CreateString(res)) &&
	    cJSON_AddStringToObject(o, "filter", filter) && cJSON_AddStringToObject(o, "orderBy", "timestamp asc") &&
	    cJSON_AddNumberToObject(o, "pageSize", GCP_LOGGING_PAGE_SIZE) &&
	    (!page_token || cJSON_AddStringToObject(o, "pageToken", page_token)))
		out = cJSON_PrintUnformatted(o);
	free(res);
	cJSON_Delete(o);
	return out;
}

/* One LogEntry into e: 0, VX_EINVAL (what is missing) or VX_ENOMEM. */
static int entry_from(struct live_log_entry *e, const cJSON *it)
{
	const cJSON *json = cJSON_GetObjectItemCaseSensitive(it, "jsonPayload");
	const char *text = gjson_str(it, "textPayload");

	if (!cJSON_IsObject(it) || !gjson_str(it, "insertId") || !gjson_str(it, "timestamp"))
		return VX_EINVAL;
	if (!text && cJSON_IsObject(json))
		text = gjson_str(json, "message");
	if (gjson_dup(&e->insert_id, it, "insertId") < 0 || gjson_dup(&e->timestamp, it, "timestamp") < 0 ||
	    gjson_dup(&e->severity, it, "severity") < 0 ||
	    (text && !(e->text = vx_asprintf("%.*s", GCP_LOGGING_TEXT_MAX, text))))
		return VX_ENOMEM;
	return vx_time_parse(&e->time_ms, e->timestamp, 0) < 0 ? VX_EINVAL : 0;
}

static int page_from(struct live_log_page *out, const cJSON *root, const char *what, struct vx_err *err)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "entries"), *it;
	size_t n = 0;

	if (arr && !cJSON_IsArray(arr))
		return vx_err_set(err, VX_EINVAL, "%s: \"entries\" is not a list", what);
	cJSON_ArrayForEach(it, arr)
		n++;
	if (n > GCP_LOGGING_PAGE_SIZE)
		return vx_err_set(err, VX_EINVAL, "%s: a page of %zu entries (at most %d were asked)", what, n,
				  GCP_LOGGING_PAGE_SIZE);
	if (n && !(out->items = calloc(n, sizeof(*out->items))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, arr) {
		int rc = entry_from(&out->items[out->n], it);

		out->n++;
		if (rc == VX_ENOMEM)
			return vx_err_set(err, rc, "out of memory");
		if (rc < 0)
			return vx_err_set(err, rc, "%s: entry %zu has no insertId or no valid timestamp", what,
					  out->n - 1);
	}
	if (gjson_next_page_token(&out->next_token, root) < 0)
		return vx_err_set(err, VX_EINVAL, "%s: a bad nextPageToken", what);
	return 0;
}

int gcp_logging_list(struct gcp_http *http, const struct gcp_endpoints *ep, const char *project,
		     const char *filter, const char *page_token, struct live_log_page *out, struct vx_err *err)
{
	struct gcp_request req;
	struct gcp_response resp = { 0 };
	cJSON *root = NULL;
	char *what = NULL, *url = NULL, *body = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!gcall_segment_ok(project, NULL))
		return vx_err_set(err, VX_EINVAL, "logging: not a valid project id");
	what = vx_asprintf("logging: reading log entries in project %s", project);
	url = gcall_url(ep->base[GCP_API_LOGGING], "entries:list", (const char *)NULL);
	body = list_body(project, filter, page_token);
	if (!what || !url || !body) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	gcall_request_init(&req, "logging", "POST", url, body, GCP_RETRY_SAFE, "ListLogEntries");
	if ((rc = gcall_send(http, &req, "logging", what, &resp, err)) < 0)
		goto done;
	if (!(root = gjson_parse_object(resp.body, resp.body_len, what, err))) {
		rc = err->code;
		goto done;
	}
	rc = page_from(out, root, what, err);
done:
	if (rc < 0)
		live_log_page_release(out);
	cJSON_Delete(root);
	gcp_response_release(&resp);
	free(what);
	free(url);
	free(body);
	return rc;
}
