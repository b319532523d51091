#ifndef VX_GCP_GCALL_H
#define VX_GCP_GCALL_H

/*
 * What the REST clients in providers/gcp/ (vertex, compute, quotas,
 * storage) do the same way around gcp_http_send: checking the words that go
 * into a URL path, building URLs with escaped query values, turning a
 * response that is not 2xx into a vx_err, and walking list pages. Internal
 * to this folder.
 *
 * Error messages follow the clients' pattern "<what>: <cause>", where what
 * names the operation ('vertex: creating job "x" in us-central1').
 */

#include <stddef.h>

#include "providers/gcp/http.h"
#include "util/err.h"

struct vx_buf;

/*
 * Largest number of list pages one call follows before it gives up. At
 * Vertex's page size (vx asks for 1000) that is a million jobs, far past
 * any stack; a server that keeps sending nextPageToken is stopped here.
 */
#define GCALL_MAX_PAGES 1000

/* 1 for the RFC 3986 unreserved characters [A-Za-z0-9._~-], else 0. */
int gcall_unreserved(char ch);

/*
 * 1 when s can go into a URL path as one segment unescaped: non-empty,
 * neither "." nor "..", and made of unreserved characters or of those in
 * also (NULL for none; compute ids may carry ':').
 */
int gcall_segment_ok(const char *s, const char *also);

/*
 * 1 when s is a name of the shape Compute and Vertex AI give their own
 * resources (an RFC 1035 label): 1-63 of [a-z0-9-], starting with a
 * letter, not ending with '-'.
 */
int gcall_label_ok(const char *s);

/*
 * base + '/' (unless base ends in one) + path, then the query pairs: a
 * NULL-terminated list of key, value strings; a pair whose value is NULL is
 * left out, the others are added escaped (gcp_url_escape), the first after
 * '?' and the rest after '&'. Returns the URL (caller frees), NULL on OOM.
 */
char *gcall_url(const char *base, const char *path, ...) __attribute__((sentinel));

/*
 * The URL of path on a regional host: base with every "{region}" replaced
 * by region (NULL: ""), then path, with exactly one '/' between them
 * (Vertex's base is "https://{region}-aiplatform.googleapis.com/v1/").
 * Returns the URL (caller frees), NULL on OOM.
 */
char *gcall_region_url(const char *base, const char *region, const char *path);

/*
 * Appends "?key=value" to b, or "&key=value" when b already holds a '?',
 * with value escaped. Returns 0, or VX_ENOMEM / VX_EINVAL (b's cap).
 */
int gcall_add_query(struct vx_buf *b, const char *key, const char *value) VX_WUR;

/*
 * Prefixes err's message with what, after dropping a leading "<client>: "
 * from it (a message of the client's own parser starts with it and what
 * does too, so it is not said twice). Returns err's code.
 */
int gcall_wrap(struct vx_err *err, const char *client, const char *what);

/*
 * Sets up req for api ("aiplatform", "compute", ...): everything zero but
 * method, url, retry and rpc, and json_body (may be NULL) with its length
 * and "application/json". Strings are borrowed.
 */
void gcall_request_init(struct gcp_request *req, const char *api, const char *method,
			const char *url, const char *json_body, enum gcp_retry retry, const char *rpc);

/*
 * Sends req and returns 0 with resp filled when the answer is 2xx (release
 * resp in every case). A non-2xx answer, also one left after retries ran
 * out, becomes err through gcp_error_set_call(err, resp, what, req->api,
 * req->rpc) and its code;
 * any other failure (VX_EUNCERTAIN, no connection, ...) keeps
 * gcp_http_send's code with its message wrapped by gcall_wrap(err, client, what).
 */
int gcall_send(struct gcp_http *http, const struct gcp_request *req, const char *client,
	       const char *what, struct gcp_response *resp, struct vx_err *err) VX_WUR;

/*
 * Fetches one page: token is NULL for the first one; sets *next (caller of
 * gcall_pages frees it; NULL on the last page). Returns 0 or a VX_E* with err set.
 */
typedef int (*gcall_page_fn)(void *ud, const char *token, char **next, struct vx_err *err);

/*
 * Calls page until it reports no next page. Returns 0, page's error, or
 * VX_EAPI when the server's pages do not end: "<what>: page N repeats the
 * page token of page M; stopped (the server's pages loop)" when a token
 * comes back that was sent before, "<what>: more than 1000 pages; stopped
 * (the server kept sending nextPageToken)" after GCALL_MAX_PAGES pages.
 * What the pages filled is the caller's to keep or release.
 */
int gcall_pages(gcall_page_fn page, void *ud, const char *what, struct vx_err *err) VX_WUR;

#endif
