#ifndef VX_GCP_GERROR_H
#define VX_GCP_GERROR_H

/*
 * Google error bodies, parsed. Handles the JSON envelope every API uses,
 * {"error": {"code", "message", "status", "details": [...]}}, compute's
 * variant with "errors": [{"reason", "message", "domain"}], OAuth's
 * {"error": "invalid_grant", "error_description": "..."}, and bodies that
 * are not JSON at all (HTML from a proxy): never fails, never crashes.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct gcp_response;

struct gcp_error {
	long http_status;
	char *status;        /* google.rpc.Code name ("RESOURCE_EXHAUSTED"); derived from the HTTP status when absent */
	char *message;       /* the server's message, or a short text of the body */
	char *reason;        /* ErrorInfo.reason, or compute errors[0].reason, or OAuth "error" */
	char *quota_metric;  /* QuotaFailure.violations[0].subject / metric when present */
	char *field;         /* BadRequest.fieldViolations[0].field when present */
	int64_t retry_delay_ms; /* RetryInfo.retryDelay, -1 when absent */
};

#define GCP_ERROR_INIT { 0, NULL, NULL, NULL, NULL, NULL, -1 }

/* Parses an error body (body may be NULL). Returns 0, or VX_ENOMEM. */
int gcp_error_parse(struct gcp_error *out, long http_status, const char *body, size_t len) VX_WUR;
void gcp_error_release(struct gcp_error *e);

/* The google.rpc.Code name for an HTTP status, as google-gax maps it. */
const char *gcp_status_for_http(long http_status);

/*
 * Sets err from a failed response: "<what>: <STATUS>: <message>[ (hint)]",
 * e.g. 'vertex: creating job "gemma2-lora" in us-central1: PERMISSION_DENIED: ...'
 * with a hint where one helps (API not enabled, quota, missing role,
 * credentials). The code is VX_ENOTFOUND for 404, VX_ECONFLICT for 409/412
 * and ABORTED, VX_EAUTH for 401, VX_EDENIED for 403 (a permission missing, the
 * API disabled; not a rate limit), VX_ERETRY for
 * retryable statuses, VX_EAPI otherwise. Returns the code.
 */
int gcp_error_set(struct vx_err *err, const struct gcp_response *resp, const char *what);

/*
 * The same, for a call whose api and rpc (as in struct gcp_request: "aiplatform",
 * "ListCustomJobs") are known: a permission error then names the permission
 * the method needs and the smallest role that grants it, from the table in
 * permissions.h ("(the caller lacks aiplatform.customJobs.list for
 * projects.locations.customJobs.list: grant roles/aiplatform.viewer on project
 * p)"). Without a row for the call, no role is guessed.
 */
int gcp_error_set_call(struct vx_err *err, const struct gcp_response *resp, const char *what, const char *api,
		       const char *rpc);

#endif
