#ifndef VX_GCP_VERTEX_H
#define VX_GCP_VERTEX_H

/*
 * Vertex AI v1 customJobs: create, get, list (every page, filtered), cancel
 * and delete (its long-running operation polled to the end).
 *
 * Responses are converted to struct vertex_job at this boundary; no JSON
 * library type appears here. The parsers are public so fuzz targets can call
 * them; they never crash on hostile input: fields of the wrong type are
 * treated as absent, and a body that is not the expected JSON object is
 * VX_EINVAL.
 *
 * Errors are set through gcp_error_set() as
 *   'vertex: creating job "gemma2-lora" in us-central1: PERMISSION_DENIED: ...'
 *
 * Create is never retried (customJobs.create has no request id): when its
 * outcome is unknown vertex_create_job() returns VX_EUNCERTAIN, and the
 * caller resolves it by listing with the job's labels.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

struct gcp_fence;
struct gcp_http;
struct vx_ctx;

/*
 * base_url is the URL the resource paths are appended to, version included,
 * e.g. "https://{region}-aiplatform.googleapis.com/v1/"; every "{region}" in
 * it is replaced by the region of each call. All members are borrowed.
 */
struct vertex_client {
	struct gcp_http *http;
	const struct vx_ctx *ctx;   /* clock (operation polling) and interrupt flag */
	const char *base_url;
	/* Checked right before each mutating request (create, cancel, delete)
	 * is sent, never before a read (gcp_fence in http.h); NULL: none. */
	const struct gcp_fence *fence;
};

enum vertex_job_state {
	VERTEX_JOB_STATE_UNSPECIFIED = 0,
	VERTEX_JOB_STATE_QUEUED = 1,
	VERTEX_JOB_STATE_PENDING = 2,
	VERTEX_JOB_STATE_RUNNING = 3,
	VERTEX_JOB_STATE_SUCCEEDED = 4,
	VERTEX_JOB_STATE_FAILED = 5,
	VERTEX_JOB_STATE_CANCELLING = 6,
	VERTEX_JOB_STATE_CANCELLED = 7,
	VERTEX_JOB_STATE_PAUSED = 8,
	VERTEX_JOB_STATE_EXPIRED = 9,
	VERTEX_JOB_STATE_UPDATING = 10,
	VERTEX_JOB_STATE_PARTIALLY_SUCCEEDED = 11,
	VERTEX_JOB_STATE_UNKNOWN = 12, /* a name or number this client does not know */
};

/* "JOB_STATE_RUNNING", ...; "JOB_STATE_UNKNOWN" for VERTEX_JOB_STATE_UNKNOWN. Never NULL. */
const char *vertex_job_state_name(enum vertex_job_state s);
/* Parses a name ("JOB_STATE_RUNNING") or a number ("3"); VERTEX_JOB_STATE_UNKNOWN otherwise. */
enum vertex_job_state vertex_job_state_parse(const char *s);
/* SUCCEEDED, FAILED, CANCELLED, EXPIRED, PARTIALLY_SUCCEEDED: the job will not change any more. */
int vertex_job_state_is_terminal(enum vertex_job_state s);
/* QUEUED, PENDING, RUNNING, CANCELLING, PAUSED, UPDATING: the job holds or waits for resources. */
int vertex_job_state_is_active(enum vertex_job_state s);

/* One CustomJob. Every pointer is owned (release with vertex_job_release) and NULL when absent. */
struct vertex_job {
	char *name;                   /* projects/P/locations/R/customJobs/ID */
	char *display_name;
	enum vertex_job_state state;
	char *state_name;             /* state as received (name, or the number as text) */
	struct vx_label *labels;  /* in the order received */
	size_t n_labels;
	int64_t create_time_ms;       /* ms since the epoch; 0 when absent or unparsable */
	int64_t start_time_ms;
	int64_t end_time_ms;
	int64_t update_time_ms;
	int error_code;               /* google.rpc.Code of error; 0 when no error */
	char *error_message;
	char *job_spec_json;          /* jobSpec re-serialised as compact JSON, when present */
};

#define VERTEX_JOB_INIT { 0 }

void vertex_job_release(struct vertex_job *job);
/* The value of label key, or NULL. Borrowed. */
const char *vertex_job_label(const struct vertex_job *job, const char *key);
/*
 * 1 when name is exactly projects/{P}/locations/{R}/customJobs/{ID} with a
 * decimal ID, R equal to region and P equal to project or a project number
 * (Google answers with numbers); NULL project or region accepts any. Every
 * job name read from the server is checked with it before vx acts on it.
 */
int vertex_job_name_check(const char *name, const char *project, const char *region);
/* The region (location) of a job or operation name, copied into *out (caller frees).
 * VX_EINVAL when the name is not projects/P/locations/R/... made of URL-safe segments. */
int vertex_job_name_region(const char *name, char **out) VX_WUR;

struct vertex_job_list {
	struct vertex_job *items;
	size_t n;
	size_t alloc;
};

#define VERTEX_JOB_LIST_INIT { NULL, 0, 0 }

void vertex_job_list_release(struct vertex_job_list *list);

/* A google.longrunning.Operation (delete). */
struct vertex_operation {
	char *name;
	int done;
	int error_code;      /* google.rpc.Code when done with an error, else 0 */
	char *error_message;
};

#define VERTEX_OPERATION_INIT { NULL, 0, 0, NULL }

void vertex_operation_release(struct vertex_operation *op);

/*
 * Parsers of response bodies (body need not be NUL-terminated; NULL is
 * VX_EINVAL). The single-object parsers overwrite *out without releasing
 * it (release it first if it held anything) and leave it released on
 * error. VX_EINVAL for a body that is not a JSON object (or whose
 * customJobs is not an array), VX_ENOMEM.
 */
int vertex_job_parse_json(const char *body, size_t len, struct vertex_job *out, struct vx_err *err) VX_WUR;
/* Appends the page's jobs to *list and sets *next_page_token (owned, NULL on the last page). */
int vertex_list_parse_json(const char *body, size_t len, struct vertex_job_list *list,
			   char **next_page_token, struct vx_err *err) VX_WUR;
int vertex_operation_parse_json(const char *body, size_t len, struct vertex_operation *out,
				struct vx_err *err) VX_WUR;

/* Parses an RFC 3339 timestamp ("2024-05-01T12:00:00.123456Z", "...+02:00") into ms since the
 * epoch (fractions truncated to ms). VX_EINVAL when malformed or out of range. */
int vertex_time_parse(const char *s, int64_t *out_ms) VX_WUR;

/*
 * Builds a list filter that requires every label: "labels.k1=v1 AND labels.k2=v2",
 * the form the API documents. Keys must be non-empty [a-z0-9_-] (VX_EINVAL
 * otherwise); a value made only of [a-z0-9_-] is written bare, any other
 * value is double-quoted with '"' and '\' escaped. *out is owned by the caller.
 */
int vertex_filter_labels(char **out, const struct vx_label *labels, size_t n,
			 struct vx_err *err) VX_WUR;

/*
 * POST {base}/projects/P/locations/R/customJobs with
 * {"displayName":..., "jobSpec":<job_spec_json verbatim>, "labels":{...}}.
 * job_spec_json must be a JSON object (VX_EINVAL otherwise, nothing sent).
 * Never resent: VX_EUNCERTAIN when the http layer cannot tell whether the job
 * was created, and also when the answer does not name a job of this project
 * and region (vertex_job_name_check): the server may have made one anyway.
 * On success *out (initialised) holds the created job.
 */
int vertex_create_job(struct vertex_client *c, const char *project, const char *region,
		      const char *display_name, const struct vx_label *labels, size_t n_labels,
		      const char *job_spec_json, struct vertex_job *out, struct vx_err *err) VX_WUR;

/* GET {base}/<name>. VX_ENOTFOUND when the job does not exist. get, cancel and delete
 * refuse (VX_EINVAL, nothing sent) a name that fails vertex_job_name_check(name, NULL, NULL). */
int vertex_get_job(struct vertex_client *c, const char *name, struct vertex_job *out,
		   struct vx_err *err) VX_WUR;

enum {
	VERTEX_LIST_WITH_SPEC = 1 << 0, /* also read jobSpec (job_spec_json) */
};

/*
 * Lists every job of projects/P/locations/R matching filter (NULL = all),
 * following nextPageToken to the last page, appending to *out. The readMask
 * asks only for name, displayName, state, labels, the four times and error
 * (plus jobSpec with VERTEX_LIST_WITH_SPEC). page_size 0 = the server's default.
 * A job whose name fails vertex_job_name_check(name, project, region) is
 * left out, with a warning through c->ctx's log. On error *out is released.
 */
int vertex_list_jobs(struct vertex_client *c, const char *project, const char *region,
		     const char *filter, int page_size, unsigned flags, struct vertex_job_list *out,
		     struct vx_err *err) VX_WUR;

/* POST {base}/<name>:cancel with body {}. Asynchronous: poll with get. */
int vertex_cancel_job(struct vertex_client *c, const char *name, struct vx_err *err) VX_WUR;

/*
 * DELETE {base}/<name>, then polls GET {base}/<operation name> (1 s, x1.3,
 * at most 60 s apart) until done, at most timeout_ms (0 = 30 minutes) in
 * all; VX_ERETRY when that passes, VX_ECANCELED when ctx is interrupted.
 * An operation that ends in error is VX_EAPI (VX_ENOTFOUND for NOT_FOUND)
 * with its message.
 */
int vertex_delete_job(struct vertex_client *c, const char *name, int64_t timeout_ms,
		      struct vx_err *err) VX_WUR;

#endif
