#ifndef VX_GCP_HTTP_H
#define VX_GCP_HTTP_H

/*
 * One HTTP layer for every Google API call: a plain libcurl easy-handle
 * client, one request at a time per calling thread (http.c says why).
 *
 * - connections are reused; a batch of requests runs on at most
 *   max_in_flight threads at once; HTTP/2 where offered; gzip; per-request timeout
 *   and an overall deadline per call, cut short by the command's time limit
 *   (ctx->deadline_ms); caps on response size and on response headers; User-Agent vx/<version>;
 *   x-goog-user-project when a quota project is set.
 * - a token-bucket rate limiter per (api, region), defaulting to Google's
 *   published quotas (Vertex: 600 requests and 60 job creations a minute
 *   per region), so vx slows itself before Google answers 429.
 * - retries with truncated exponential backoff and full jitter on 408, 429,
 *   500, 502, 503, 504, connection failures and timeouts, and compute's 403
 *   rateLimitExceeded/userRateLimitExceeded; Retry-After and RetryInfo
 *   honoured; bounded attempts and total time.
 * - a request marked GCP_RETRY_NEVER (Vertex customJobs.create) is never
 *   sent twice: when its outcome is unknown (timeout, reset, 5xx after it
 *   was sent, or an answer too large to read) the response says so with
 *   uncertain = 1 and the call returns VX_EUNCERTAIN; the caller resolves it
 *   by listing by labels. The message counts the sends: a 429 is a refusal,
 *   so a create can go out again after one.
 * - a request marked GCP_RETRY_ONCE (a webhook) is sent once: a failure to
 *   connect or a timeout is the call's error, any answer (5xx included) is
 *   its response.
 * - a refused connection is retried; the first time for a host, a warning
 *   says so through ctx's log, with how long the retries may last.
 * - a 401 makes the layer invalidate the token and retry once with a fresh one.
 * - with ctx->log_level >= VX_LOG_DEBUG, each request's method, URL, status,
 *   bytes and time and every retry decision are logged; Authorization and
 *   every token are redacted.
 *
 * Thread-safe: several threads may send through one struct gcp_http at once
 * (gcp_http_send_many does). Its token source's get and invalidate are
 * called one at a time; a token source may send no_auth requests through
 * the same layer (a token grant), but not authenticated ones. The log sink
 * is called one line at a time.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_ctx;
struct gcp_http;
struct gcp_ratelimit;

/* Where bearer tokens come from (implemented by providers/gcp/auth.c). */
struct gcp_token_source {
	/* Returns a valid access token in *out (caller frees), refreshing it
	 * when it is within 5 minutes of expiry. */
	int (*get)(void *ud, char **out, struct vx_err *err);
	/* Forgets the cached token (after a 401), so the next get refreshes. */
	void (*invalidate)(void *ud);
	void *ud;
};

/*
 * Asked right before each attempt of a request goes out: after the
 * connection is up (TLS included), before the first byte of the request
 * is written (libcurl's CURLOPT_PREREQFUNCTION). A nonzero VX_E* return
 * stops that request unsent: the call returns that code with the fence's
 * message, and the outcome is certain (resp->uncertain stays 0), so a
 * create stopped there certainly made nothing. Called on the thread that
 * sends; it must be quick and must not send requests itself.
 */
struct gcp_fence {
	int (*check)(void *ud, struct vx_err *err);
	void *ud;
};

enum gcp_retry {
	GCP_RETRY_SAFE = 0,    /* reads and idempotent writes: retry on every retryable failure */
	GCP_RETRY_NEVER,       /* non-idempotent create: never resend after it may have been sent */
	GCP_RETRY_REQUEST_ID,  /* compute mutations carrying a requestId: retry with the same body */
	GCP_RETRY_ONCE,        /* one try, whatever happens (a webhook: the caller backs off
				* across cycles, so a dead receiver costs one timeout, not a
				* backoff series); any answer is returned as it came */
};

struct gcp_request {
	const char *method;        /* "GET", "POST", "PATCH", "DELETE" */
	const char *url;           /* full URL, query string included */
	const char *body;          /* NULL for none */
	size_t body_len;
	const char *content_type;  /* default "application/json" when body is set */
	const char *const *headers;/* extra "Name: value" headers, NULL-terminated, or NULL */
	const char *api;           /* rate-limit bucket: "aiplatform", "compute", "cloudquotas", "storage", "oauth" */
	const char *region;        /* rate-limit bucket within the api; NULL = global */
	int is_create;             /* also draws on the api's create bucket (Vertex job creations) */
	enum gcp_retry retry;
	int no_auth;               /* do not add Authorization (token endpoints, metadata server) */
	const char *rpc;           /* for logs and errors: "CreateCustomJob" */
	long timeout_ms;           /* per attempt; 0 = the layer's default */
	const struct gcp_fence *fence; /* checked before each attempt is sent; NULL = none */
	/* What logs and errors call the request instead of its URL, for a URL that is
	 * itself a secret (a webhook's); NULL: the URL, its credentials redacted. */
	const char *log_name;
	int no_proxy; /* straight to the host, whatever the proxy variables say (the metadata server) */
};

struct gcp_response {
	long status;          /* HTTP status, 0 when no response was received */
	char *body;           /* owned, NUL-terminated; NULL when none */
	size_t body_len;
	char *content_type;   /* owned; may be NULL */
	char *metadata_flavor;/* owned: value of a Metadata-Flavor response header, or NULL */
	int attempts;         /* how many times it was sent */
	int uncertain;        /* GCP_RETRY_NEVER request whose outcome is unknown */
};

struct gcp_http_options {
	const char *user_agent;      /* default "vx/" VX_VERSION */
	const char *quota_project;   /* x-goog-user-project; NULL = none */
	int max_in_flight;           /* default 16 */
	long timeout_ms;             /* per attempt, default 60 s */
	long deadline_ms;            /* overall per call including retries, default 600 s */
	size_t max_response_bytes;   /* default 64 MiB */
	int max_attempts;            /* default 6 */
	long backoff_initial_ms;     /* default 1000 */
	long backoff_max_ms;         /* default 32000 */
	/* Requests per minute per (api, region); 0 = defaults (aiplatform 600,
	 * creations 60, compute 1500, cloudquotas 600, storage 6000), < 0 = unlimited. */
	int rate_per_minute;
	int create_rate_per_minute;
	int rate_burst;              /* bucket size; 0 = a tenth of the rate per minute, at least 1 */
	/* A limiter to share with other sessions (borrowed; outlives the layer);
	 * NULL = the layer makes its own from the rates above. */
	struct gcp_ratelimit *shared_limiter;
};

/* Creates the layer. tokens may be NULL (then requests must be no_auth). Borrowed: must outlive http. */
int gcp_http_new(struct gcp_http **out, struct vx_ctx *ctx, const struct gcp_http_options *opts,
		 const struct gcp_token_source *tokens, struct vx_err *err) VX_WUR;
void gcp_http_free(struct gcp_http *h);
/* Sets or replaces the token source (auth needs the layer before it can be one). */
void gcp_http_set_tokens(struct gcp_http *h, const struct gcp_token_source *tokens);

/*
 * Sends one request, with retries, and fills resp (release it with
 * gcp_response_release). Returns 0 when an HTTP response was received,
 * whatever its status (the caller interprets 4xx/5xx, e.g. with
 * gcp_error_parse), VX_EUNCERTAIN for an uncertain GCP_RETRY_NEVER request,
 * VX_ERETRY when retries ran out on a retryable failure (resp holds the last
 * response, if any), or another VX_E* for failures to even try.
 */
int gcp_http_send(struct gcp_http *h, const struct gcp_request *req, struct gcp_response *resp,
		  struct vx_err *err) VX_WUR;

/*
 * Sends n requests concurrently, on up to max_in_flight threads (the
 * calling thread is one), each gcp_http_send'ing one request after another
 * in order, and fills resps[i] and rcs[i] as gcp_http_send would for each;
 * errs may be NULL or an array of n. Returns 0 (every request ran; with no
 * thread to be had, on the calling thread alone).
 */
int gcp_http_send_many(struct gcp_http *h, size_t n, const struct gcp_request *reqs,
		       struct gcp_response *resps, int *rcs, struct vx_err *errs) VX_WUR;

void gcp_response_release(struct gcp_response *resp);

/*
 * The requests that failed, per rate-limit bucket's api ("aiplatform",
 * "compute", ...), since the layer was made: no answer (a connection error,
 * retries spent, an uncertain create), or an answer of 401, 403, 429 or 5xx
 * after the retries. Another 4xx is the caller's business (a 404 of a job
 * just deleted), not counted. Merges into the *n entries of names and counts
 * (an api not among them is added while *n < GCP_HTTP_APIS), so several
 * layers' counts add up.
 */
#define GCP_HTTP_APIS 8

/* The latest time (Unix ms) a server's Retry-After asked for on a request
 * the layer gave up on; 0 when none did. */
int64_t gcp_http_retry_after(struct gcp_http *h);
/*
 * Google's clock minus this machine's, in ms, from the Date header of the
 * latest answer of a Google API through h (whole seconds: up to 1 s short):
 * 1 and *offset_ms, *seen_mono (the monotonic time of that answer) when
 * one was seen, else 0.
 */
int gcp_http_clock_offset(struct gcp_http *h, int64_t *offset_ms, int64_t *seen_mono);
void gcp_http_errors(struct gcp_http *h, const char *names[GCP_HTTP_APIS], uint64_t counts[GCP_HTTP_APIS],
		     size_t *n);

/*
 * 1 when t may go into "Authorization: Bearer t": RFC 6750's b64token,
 * [A-Za-z0-9._~+/-]+ then '='s. A token is refused otherwise (it comes from
 * a server, and CR/LF in it would add headers); the layer checks every token
 * before sending it.
 */
int gcp_http_token_ok(const char *t);

/* Percent-encodes s for a URL query value (RFC 3986 unreserved kept). Caller frees. */
char *gcp_url_escape(const char *s);

#endif
