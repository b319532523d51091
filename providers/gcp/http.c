/*
 * One concurrency model: threads over a plain easy-handle client.
 *
 * A request runs start to finish on the thread that sends it:
 * curl_easy_perform() per attempt, retries and backoff in a loop around it.
 * Parallelism comes from the caller's threads (reconcile/apply.c runs a
 * batch of tasks on threads, each with its own session of this layer), and
 * gcp_http_send_many() is the same thing in small: up to max_in_flight
 * threads, each sending one request after another.
 *
 * Why not the other model, curl multi driving many transfers on one thread?
 * The work that fans out is apply's (create, poll and delete tasks), and it
 * is threaded already; making it submit transfers to one multi loop would
 * turn every provider call into a callback. With threads each request keeps
 * straight-line code, and everything the multi loop did by hand still
 * holds, with less code:
 * - connection reuse: each easy handle keeps its connections between
 *   requests; idle handles wait in a small pool. DNS and TLS sessions are
 *   shared by every thread through a CURLSH with lock callbacks (not
 *   connections: libcurl does not support a connection cache shared by
 *   threads at once).
 * - a create goes out on a fresh connection (CURLOPT_FRESH_CONNECT), and a
 *   fence is checked right before each attempt (CURLOPT_PREREQFUNCTION).
 * - interrupts: the first Ctrl-C is checked before each attempt and while
 *   waiting, so what is in flight finishes; the second aborts transfers from
 *   CURLOPT_XFERINFOFUNCTION (called at least once a second), a sent create
 *   ending uncertain.
 * - the per-call deadline and the command's time limit (VX_TIMEOUT) bound
 *   each attempt through CURLOPT_TIMEOUT_MS and each retry's wait.
 * - the rate limiter is shared and thread-safe; its waits are taken one at
 *   a time under the layer's lock, so requests are served in the order they
 *   reserved and a test clock advances by the schedule, not by the sum of
 *   every thread's wait.
 */
#include "providers/gcp/http.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "providers/gcp/backoff.h"
#include "providers/gcp/gerror.h"
#include "providers/gcp/ratelimit.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/pool.h"
#include "util/rand.h"
#include "util/banned.h"

/* libcurl refuses a header line longer than this; vx holds all of a response's headers to it too. */
#define HTTP_MAX_HEADER_BYTES CURL_MAX_HTTP_HEADER

struct gcp_http {
	struct vx_ctx *ctx;
	struct gcp_http_options o;  /* defaults applied; strings below owned */
	char *user_agent;
	char *quota_project;
	char *cainfo;               /* CURL_CA_BUNDLE or SSL_CERT_FILE, NULL = system store */
	const struct gcp_token_source *tokens;
	CURLSH *share;              /* DNS cache and TLS sessions, for every thread */
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
	struct gcp_ratelimit *rl;
	/*
	 * Held for the bookkeeping around each attempt (never during a transfer
	 * or a backoff): the fields below, each log line (a log sink need not be
	 * thread-safe) and rate-limit waits.
	 */
	pthread_mutex_t lock;
	uint64_t rng;
	char *warned_host;          /* the last host whose refused connections were reported */
	struct { const char *api; uint64_t n; } errors[GCP_HTTP_APIS]; /* gcp_http_errors */
	size_t nerrors;
	/* gcp_http_retry_after: the latest time (wall ms) a server asked not to be
	 * asked again before, on a request given up; set without the lock. */
	_Atomic int64_t retry_after_until;
	/* gcp_http_clock_offset: Google's clock minus this machine's (ms), from
	 * the Date header of the latest answer of a Google API; clock_seen the
	 * monotonic time of that answer, 0 before any. Set without the lock. */
	_Atomic int64_t clock_offset_ms;
	_Atomic int64_t clock_seen_mono;
	CURL **idle;                /* easy handles between requests, with their connections */
	size_t nidle;
	/* One token get or invalidate at a time. Taken before lock, never inside it. */
	pthread_mutex_t token_lock;
	int locks;                  /* the mutexes above were initialised */
	int global_init;
};

/* One request, from its first attempt to its result. */
struct xfer {
	struct gcp_http *h;
	const struct gcp_request *req;
	struct gcp_response *resp;
	struct vx_err *err;
	int rc;
	int done;
	int64_t ready_at;      /* mono ms: not before (backoff) */
	int64_t deadline_at;
	int deadline_is_cmd;   /* deadline_at is the command's time limit (ctx), not the call's */
	int sends;             /* attempts that may have reached the server */
	struct gcp_backoff bo;
	int auth_retried;
	int stale_token;       /* a 401: invalidate the token before the next attempt */
	char *log_url;         /* redacted */
	/* One attempt: */
	CURL *easy;
	struct curl_slist *hdrs;
	size_t body_off;
	int body_read;         /* curl asked for the body: it may reach the server */
	int too_big;
	int header_too_big;
	size_t header_bytes;
	int fenced;            /* the fence stopped this attempt before it was sent */
	int abandoned;         /* a second interrupt cut this attempt off */
	struct vx_err fence_err;
	struct vx_buf rbody;
	char errbuf[CURL_ERROR_SIZE];
};

/* ---- small helpers ---- */

/*
 * curl_easy_escape keeps exactly RFC 3986's unreserved characters and writes
 * upper-case hex; it needs no handle since curl 7.82. Its string is curl's
 * to free, so the caller gets a copy it frees with free().
 */
char *gcp_url_escape(const char *s)
{
	char *esc, *out;
	size_t len;

	if (!s || (len = strlen(s)) > INT_MAX)
		return NULL;
	esc = curl_easy_escape(NULL, s, (int)len);
	if (!esc)
		return NULL;
	out = vx_strdup(esc);
	curl_free(esc);
	return out;
}

int gcp_http_token_ok(const char *t)
{
	size_t i = 0;

	if (!t)
		return 0;
	while ((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
	       t[i] == '-' || t[i] == '.' || t[i] == '_' || t[i] == '~' || t[i] == '+' || t[i] == '/')
		i++;
	if (i == 0)
		return 0;
	while (t[i] == '=')
		i++;
	return t[i] == '\0';
}

static int secret_param(const char *name, size_t len)
{
	static const char *const names[] = {
		"access_token", "assertion", "refresh_token", "client_secret", "subject_token",
		"id_token", "code",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && !strncasecmp(name, names[i], len))
			return 1;
	return 0;
}

/* The URL for logs and errors: values of secret query parameters replaced,
 * any user:password@ and #fragment dropped. NULL on OOM. */
static char *redact_url(const char *url)
{
	struct vx_buf b = VX_BUF_INIT;
	const char *q = strchr(url, '?'), *hash = strchr(url, '#'), *p, *end, *amp, *eq;
	const char *scheme = strstr(url, "://"), *at, *host_end;
	int rc = 0;

	if (hash && q && hash < q)
		q = NULL;
	end = hash ? hash : url + strlen(url);
	p = url;
	if (scheme) {
		host_end = scheme + 3 + strcspn(scheme + 3, "/?#");
		at = memchr(scheme + 3, '@', (size_t)(host_end - scheme - 3));
		if (at) {
			rc = vx_buf_add(&b, url, (size_t)(scheme + 3 - url));
			p = at + 1;
		}
	}
	if (rc == 0)
		rc = vx_buf_add(&b, p, (size_t)((q ? q + 1 : end) - p));
	for (p = q ? q + 1 : end; rc == 0 && p < end; p = amp + 1) {
		amp = memchr(p, '&', (size_t)(end - p));
		if (!amp)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq && secret_param(p, (size_t)(eq - p)))
			rc = vx_buf_add(&b, p, (size_t)(eq + 1 - p)) < 0 ? -1 : vx_buf_adds(&b, "REDACTED");
		else
			rc = vx_buf_add(&b, p, (size_t)(amp - p));
		if (rc == 0 && amp < end)
			rc = vx_buf_addc(&b, '&');
		if (amp == end)
			break;
	}
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

static const char *req_method(const struct gcp_request *r)
{
	return r->method ? r->method : "GET";
}

static void resp_clear_body(struct gcp_response *resp)
{
	free(resp->body);
	free(resp->content_type);
	free(resp->metadata_flavor);
	resp->body = resp->content_type = resp->metadata_flavor = NULL;
	resp->body_len = 0;
}

void gcp_response_release(struct gcp_response *resp)
{
	if (!resp)
		return;
	resp_clear_body(resp);
	memset(resp, 0, sizeof(*resp));
}

/* ---- lifecycle ---- */

void gcp_http_free(struct gcp_http *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->nidle; i++)
		curl_easy_cleanup(h->idle[i]);
	free(h->idle);
	if (h->share)
		curl_share_cleanup(h->share);
	if (h->locks) {
		for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&h->share_lock[i]);
		pthread_mutex_destroy(&h->lock);
		pthread_mutex_destroy(&h->token_lock);
	}
	if (!h->o.shared_limiter)
		gcp_ratelimit_free(h->rl);
	free(h->user_agent);
	free(h->quota_project);
	free(h->cainfo);
	free(h->warned_host);
	if (h->global_init)
		curl_global_cleanup();
	free(h);
}

void gcp_http_set_tokens(struct gcp_http *h, const struct gcp_token_source *tokens)
{
	h->tokens = tokens;
}

static void share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct gcp_http *h = ud;

	(void)e;
	(void)access;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&h->share_lock[data]);
}

static void share_unlock(CURL *e, curl_lock_data data, void *ud)
{
	struct gcp_http *h = ud;

	(void)e;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&h->share_lock[data]);
}

int gcp_http_new(struct gcp_http **out, struct vx_ctx *ctx, const struct gcp_http_options *opts,
		 const struct gcp_token_source *tokens, struct vx_err *err)
{
	struct gcp_http *h = NULL;
	struct gcp_ratelimit_options ro;
	const char *ca;
	size_t i;
	int rc = 0;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return vx_err_set(err, VX_ENOMEM, "http: out of memory");
	h->ctx = ctx;
	h->tokens = tokens;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_lock[i], NULL);
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->token_lock, NULL);
	h->locks = 1;
	if (opts)
		h->o = *opts;
	if (h->o.max_in_flight <= 0)
		h->o.max_in_flight = 16;
	if (h->o.timeout_ms <= 0)
		h->o.timeout_ms = 60000;
	if (h->o.deadline_ms <= 0)
		h->o.deadline_ms = 600000;
	if (h->o.max_response_bytes == 0)
		h->o.max_response_bytes = (size_t)64 << 20;
	if (h->o.max_attempts <= 0)
		h->o.max_attempts = 6;
	if (h->o.backoff_initial_ms <= 0)
		h->o.backoff_initial_ms = 1000;
	if (h->o.backoff_max_ms <= 0)
		h->o.backoff_max_ms = 32000;
	h->user_agent = vx_strdup(h->o.user_agent ? h->o.user_agent : "vx/" VX_VERSION);
	h->quota_project = h->o.quota_project && *h->o.quota_project ? vx_strdup(h->o.quota_project) : NULL;
	ca = vx_getenv(ctx, "CURL_CA_BUNDLE");
	if (!ca || !*ca)
		ca = vx_getenv(ctx, "SSL_CERT_FILE");
	h->cainfo = ca && *ca ? vx_strdup(ca) : NULL;
	h->o.user_agent = h->user_agent;
	h->o.quota_project = h->quota_project;
	h->idle = calloc((size_t)h->o.max_in_flight, sizeof(*h->idle));
	if (!h->user_agent || (h->o.quota_project && !h->quota_project) || (ca && *ca && !h->cainfo) ||
	    !h->idle) {
		rc = vx_err_set(err, VX_ENOMEM, "http: out of memory");
		goto done;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = vx_err_set(err, VX_EIO, "http: initialising libcurl failed");
		goto done;
	}
	h->global_init = 1;
	h->share = curl_share_init();
	if (!h->share ||
	    curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_USERDATA, (void *)h) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
		rc = vx_err_set(err, VX_EIO, "http: creating libcurl handles failed");
		goto done;
	}
	memset(&ro, 0, sizeof(ro));
	ro.rate_per_minute = h->o.rate_per_minute;
	ro.create_rate_per_minute = h->o.create_rate_per_minute;
	ro.burst = h->o.rate_burst;
	if (h->o.shared_limiter)
		h->rl = h->o.shared_limiter;
	else if ((rc = gcp_ratelimit_new(&h->rl, ctx, &ro, err)) < 0)
		goto done;
	h->rng = vx_rand_seed(ctx);
	*out = h;
	h = NULL;
done:
	gcp_http_free(h);
	return rc;
}

/* ---- libcurl callbacks ---- */

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	if (vx_buf_add(&x->rbody, data, n) < 0) {
		x->too_big = 1;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t room = size * nmemb, left = x->req->body_len - x->body_off;
	size_t n = left < room ? left : room;

	x->body_read = 1;
	memcpy(dst, x->req->body + x->body_off, n);
	x->body_off += n;
	return n;
}

static int on_seek(void *ud, curl_off_t off, int origin)
{
	struct xfer *x = ud;

	if (origin != SEEK_SET || off < 0 || (size_t)off > x->req->body_len)
		return CURL_SEEKFUNC_FAIL;
	x->body_off = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

/*
 * Only counts the response's header bytes, to hold them to a cap: the
 * values the layer reads are asked of libcurl once the answer is in
 * (response_header).
 */
static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	(void)line;
	/* Counted over every response of the attempt (a 100 Continue's too). */
	x->header_bytes += n;
	if (x->header_bytes > HTTP_MAX_HEADER_BYTES) {
		x->header_too_big = 1;
		return 0; /* aborts the transfer */
	}
	return n;
}

/*
 * A copy of the value of header name in the final response of the
 * attempt (not a 100 Continue's), the last one when it is repeated, white
 * space around it trimmed by libcurl; NULL when absent (or out of memory).
 */
static char *response_header(CURL *e, const char *name)
{
	struct curl_header *hd;
	size_t n;

	if (curl_easy_header(e, name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK)
		return NULL;
	n = hd->amount;
	if (n > 1 && curl_easy_header(e, name, n - 1, CURLH_HEADER, -1, &hd) != CURLHE_OK)
		return NULL;
	return vx_strdup(hd->value);
}

/*
 * libcurl calls this once the connection is up, right before it writes the
 * request: the last moment at which "not sent" is certain. Older libcurl
 * has no such hook; attempt_start() checks the fence instead.
 */
#if LIBCURL_VERSION_NUM >= 0x075000
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
	struct xfer *x = ud;
	const struct gcp_fence *f = x->req->fence;

	(void)primary_ip;
	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	vx_err_release(&x->fence_err);
	if (f->check(f->ud, &x->fence_err) == 0)
		return CURL_PREREQFUNC_OK;
	x->fenced = 1;
	return CURL_PREREQFUNC_ABORT;
}
#endif

/* Called by libcurl during a transfer, at least once a second: a second interrupt aborts it. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (!vx_abandoning(x->h->ctx))
		return 0;
	x->abandoned = 1;
	return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

/* ---- one attempt ---- */

/* An easy handle for one attempt: an idle one (its connections are the reuse) or a new one. */
static CURL *easy_get(struct gcp_http *h)
{
	CURL *e = NULL;

	pthread_mutex_lock(&h->lock);
	if (h->nidle > 0)
		e = h->idle[--h->nidle];
	pthread_mutex_unlock(&h->lock);
	return e ? e : curl_easy_init();
}

/* Back to the pool, its options reset and its connections kept; at most max_in_flight stay. */
static void easy_put(struct gcp_http *h, CURL *e)
{
	curl_easy_reset(e);
	pthread_mutex_lock(&h->lock);
	if (h->nidle < (size_t)h->o.max_in_flight) {
		h->idle[h->nidle++] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (e)
		curl_easy_cleanup(e);
}

/* Frees an attempt's header lines, wiping each first: one holds the bearer token. */
static void free_headers(struct curl_slist *l)
{
	for (struct curl_slist *n = l; n; n = n->next)
		if (n->data)
			OPENSSL_cleanse(n->data, strlen(n->data));
	curl_slist_free_all(l);
}

static void attempt_cleanup(struct xfer *x)
{
	if (x->easy) {
		easy_put(x->h, x->easy);
		x->easy = NULL;
	}
	free_headers(x->hdrs);
	x->hdrs = NULL;
	vx_buf_release(&x->rbody);
	vx_err_release(&x->fence_err);
	x->fenced = 0;
	x->abandoned = 0;
}

static void finish(struct xfer *x, int rc)
{
	x->rc = rc;
	x->done = 1;
}

/* Ends x unsent because its fence refused: a certain outcome, not a retry. */
static void fence_stop(struct xfer *x)
{
	int code = x->fence_err.code < 0 ? x->fence_err.code : VX_ECONFLICT;

	finish(x, vx_err_set(x->err, code, "%s %s: not sent: %s", req_method(x->req), x->log_url,
			     vx_err_msg(&x->fence_err)));
}

static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *n = curl_slist_append(*list, line);

	if (!n)
		return VX_ENOMEM;
	*list = n;
	return 0;
}

/* Which bound deadline_at is, for messages. */
static void deadline_text(const struct xfer *x, char *buf, size_t n)
{
	if (x->deadline_is_cmd)
		snprintf(buf, n, "the command's time limit of %lld s (VX_TIMEOUT)",
			 (long long)(x->h->ctx->time_limit_ms / 1000));
	else
		snprintf(buf, n, "the %ld s deadline", x->h->o.deadline_ms / 1000);
}

#define SETOPT(opt, val) do { if (curl_easy_setopt(e, opt, val) != CURLE_OK) goto setopt_failed; } while (0)

/* Wipes a string that may hold a token, then frees it. NULL-safe. */
static void free_secret(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s)); /* not optimised away as a memset before free may be */
		free(s);
	}
}

/*
 * The next attempt's timeout: the request's (or the layer's), cut to what
 * is left before the deadline. -1, x finished, when the deadline has passed.
 */
static long attempt_timeout(struct xfer *x, int64_t now)
{
	long timeout = x->req->timeout_ms > 0 ? x->req->timeout_ms : x->h->o.timeout_ms;
	char bound[96];

	if (now >= x->deadline_at) {
		deadline_text(x, bound, sizeof(bound));
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: %s passed before an answer",
				     req_method(x->req), x->log_url, bound));
		return -1;
	}
	if (x->deadline_at - now < timeout)
		timeout = (long)(x->deadline_at - now);
	return timeout;
}

/*
 * The bearer token for an authenticated attempt, in *token (the caller
 * wipes and frees it); after a 401 the stale one is invalidated first.
 * -1, x finished, when there is none or it may not go into a header.
 */
static int attempt_token(struct xfer *x, char **token)
{
	struct gcp_http *h = x->h;
	const char *method = req_method(x->req);
	struct vx_err terr = VX_ERR_INIT;
	int rc;

	if (!h->tokens) {
		finish(x, vx_err_set(x->err, VX_EAUTH, "%s %s: no credentials (run 'gcloud auth "
						       "application-default login' or set "
						       "GOOGLE_APPLICATION_CREDENTIALS)",
				     method, x->log_url));
		return -1;
	}
	pthread_mutex_lock(&h->token_lock);
	if (x->stale_token && h->tokens->invalidate)
		h->tokens->invalidate(h->tokens->ud);
	x->stale_token = 0;
	rc = h->tokens->get(h->tokens->ud, token, &terr);
	pthread_mutex_unlock(&h->token_lock);
	if (rc < 0 || !*token) {
		finish(x, vx_err_set(x->err, rc < 0 ? rc : VX_EAUTH, "%s %s: %s", method, x->log_url,
				     vx_err_msg(&terr)));
		vx_err_release(&terr);
		return -1;
	}
	/* A token with CR or LF in it would add headers of the server's
	 * choosing; never print it, it may be a real token. */
	if (!gcp_http_token_ok(*token)) {
		finish(x, vx_err_set(x->err, VX_EAUTH, "%s %s: the access token has characters a bearer "
						       "token may not hold (RFC 6750); not sent",
				     method, x->log_url));
		return -1;
	}
	return 0;
}

/* Forgets what the previous attempt received and counted. */
static void attempt_reset(struct xfer *x)
{
	vx_buf_release(&x->rbody);
	x->rbody.cap = x->h->o.max_response_bytes;
	x->body_off = 0;
	x->body_read = 0;
	x->too_big = 0;
	x->header_too_big = 0;
	x->header_bytes = 0;
	x->errbuf[0] = '\0';
}

/*
 * The attempt's header lines: Authorization (when token is set), the quota
 * project, Content-Type (emptied on a body-less request, or libcurl would
 * name a form type on a POST), no Expect, then the request's own.
 * 0 or VX_ENOMEM.
 */
static int attempt_headers(struct xfer *x, const char *token)
{
	const struct gcp_request *r = x->req;
	const char *const *hp;
	char *line = NULL;
	int rc = 0;

	if (token) {
		line = vx_asprintf("Authorization: Bearer %s", token);
		if (!line || add_header(&x->hdrs, line) < 0)
			goto oom;
		free_secret(line);
		line = NULL;
	}
	if (x->h->quota_project) {
		line = vx_asprintf("x-goog-user-project: %s", x->h->quota_project);
		if (!line || add_header(&x->hdrs, line) < 0)
			goto oom;
		free(line);
	}
	if (r->body && r->body_len > 0)
		line = vx_asprintf("Content-Type: %s", r->content_type ? r->content_type : "application/json");
	else
		line = vx_strdup("Content-Type:");
	if (!line || add_header(&x->hdrs, line) < 0 || add_header(&x->hdrs, "Expect:") < 0)
		goto oom;
	for (hp = r->headers; hp && *hp; hp++)
		if (add_header(&x->hdrs, *hp) < 0)
			goto oom;
	goto done;
oom:
	rc = VX_ENOMEM;
done:
	free_secret(line);
	return rc;
}

/*
 * The options every attempt has: where it goes and how (HTTP(S) only,
 * verified TLS, no redirects), how long it may take and how much it may
 * receive, and the callbacks. 0 or VX_EIO.
 */
static int attempt_options(struct xfer *x, CURL *e, long timeout)
{
	struct gcp_http *h = x->h;

	SETOPT(CURLOPT_URL, x->req->url);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_SHARE, h->share);
	SETOPT(CURLOPT_USERAGENT, h->user_agent);
	SETOPT(CURLOPT_HTTPHEADER, x->hdrs);
	SETOPT(CURLOPT_ACCEPT_ENCODING, "");
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->cainfo)
		SETOPT(CURLOPT_CAINFO, h->cainfo);
	SETOPT(CURLOPT_TIMEOUT_MS, timeout);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, timeout < 20000 ? timeout : 20000L);
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->o.max_response_bytes);
	SETOPT(CURLOPT_WRITEFUNCTION, on_write);
	SETOPT(CURLOPT_WRITEDATA, (void *)x);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, (void *)x);
	SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
	SETOPT(CURLOPT_XFERINFODATA, (void *)x);
	if (x->req->no_proxy)
		SETOPT(CURLOPT_NOPROXY, "*");
#if LIBCURL_VERSION_NUM >= 0x075000
	if (x->req->fence) {
		SETOPT(CURLOPT_PREREQFUNCTION, on_prereq);
		SETOPT(CURLOPT_PREREQDATA, (void *)x);
	}
#endif
	/* HTTP/2 is a preference: a libcurl without nghttp2 refuses it, and HTTP/1.1 is fine. */
	(void)curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (x->req->retry == GCP_RETRY_NEVER) {
		/* libcurl silently resends a request whose reused connection turns out
		 * dead; on a fresh connection it cannot, so a create goes out once. */
		SETOPT(CURLOPT_FRESH_CONNECT, 1L);
	}
	return 0;
setopt_failed:
	return VX_EIO;
}

/* The method, and the body when there is one (on_read sends it, on_seek
 * rewinds it for a resend). 0 or VX_EIO. */
static int attempt_method(struct xfer *x, CURL *e)
{
	const struct gcp_request *r = x->req;
	const char *method = req_method(r);

	if (r->body && r->body_len > 0) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_READFUNCTION, on_read);
		SETOPT(CURLOPT_READDATA, (void *)x);
		SETOPT(CURLOPT_SEEKFUNCTION, on_seek);
		SETOPT(CURLOPT_SEEKDATA, (void *)x);
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		if (strcmp(method, "POST"))
			SETOPT(CURLOPT_CUSTOMREQUEST, method);
	} else if (!strcmp(method, "GET")) {
		SETOPT(CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(method, "HEAD")) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		SETOPT(CURLOPT_POSTFIELDS, "");
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
		if (strcmp(method, "POST"))
			SETOPT(CURLOPT_CUSTOMREQUEST, method);
	} else {
		SETOPT(CURLOPT_CUSTOMREQUEST, method);
	}
	return 0;
setopt_failed:
	return VX_EIO;
}

/* Builds the easy handle for the next attempt. On failure the xfer is
 * finished with the error. Called without h->lock: a token source may send
 * requests through this layer itself. */
static void attempt_start(struct xfer *x, int64_t now)
{
	const char *method = req_method(x->req);
	char *token = NULL;
	long timeout = attempt_timeout(x, now);
	int rc;

	if (timeout < 0)
		return;
#if LIBCURL_VERSION_NUM < 0x075000
	/* No pre-request hook to check it later: check the fence now. */
	if (x->req->fence && x->req->fence->check(x->req->fence->ud, &x->fence_err) != 0) {
		fence_stop(x);
		vx_err_release(&x->fence_err);
		return;
	}
#endif
	if (!x->req->no_auth && attempt_token(x, &token) < 0)
		goto done;
	attempt_reset(x);
	x->easy = easy_get(x->h);
	rc = x->easy ? attempt_headers(x, token) : VX_ENOMEM;
	if (rc == 0)
		rc = attempt_options(x, x->easy, timeout);
	if (rc == 0)
		rc = attempt_method(x, x->easy);
	if (rc == 0) {
		x->resp->attempts++;
	} else {
		finish(x, vx_err_set(x->err, rc, "%s %s: %s", method, x->log_url,
				     rc == VX_ENOMEM ? "out of memory" : "setting up the transfer failed"));
		attempt_cleanup(x);
	}
done:
	free_secret(token);
}

/* Retry-After: delta seconds or an HTTP date (on the server's clock, as its
 * Date header is: note_clock); -1 when absent or unreadable. */
static int64_t retry_after_ms(struct gcp_http *h, const char *v)
{
	char *end;
	long long secs;
	time_t t;

	if (!v || !*v)
		return -1;
	errno = 0;
	secs = strtoll(v, &end, 10);
	if (end != v && !*end && !errno && secs >= 0)
		return secs > 86400 ? 86400000 : (int64_t)secs * 1000;
	t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	secs = (long long)t * 1000 - vx_now_ms(h->ctx) - atomic_load(&h->clock_offset_ms);
	return secs > 0 ? (int64_t)secs : 0;
}

static int retryable_status(long s)
{
	return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

/* A request given up while its server asked for server_ms more: remembered
 * for gcp_http_retry_after, so the caller's next try waits as asked. */
static void note_retry_after(struct gcp_http *h, int64_t server_ms)
{
	int64_t until, seen;

	if (server_ms <= 0)
		return;
	until = vx_now_ms(h->ctx) + server_ms;
	seen = atomic_load(&h->retry_after_until);
	while (seen < until && !atomic_compare_exchange_weak(&h->retry_after_until, &seen, until))
		;
}

int64_t gcp_http_retry_after(struct gcp_http *h)
{
	return atomic_load(&h->retry_after_until);
}

/* Google's clock may be at most this far from ours: a Date further off is not believed. */
#define CLOCK_OFFSET_MAX_MS ((int64_t)10 * 366 * 86400 * 1000)

/*
 * Keeps Google's clock from an answer's Date header: the times Google
 * stamps (createTime, endTime) are on its clock, so "how long since" one
 * of them is asked of Google's now, not of this machine's, which may be
 * off by any skew. A webhook's receiver is not Google: its Date is not
 * kept. Date counts whole seconds: the offset may be up to 1 s short,
 * never ahead, so a deadline on it is met late by at most that.
 */
static void note_clock(struct gcp_http *h, const struct gcp_request *r, const char *date)
{
	time_t t;
	int64_t off;

	if (!date || !r->api || !strcmp(r->api, "webhook") || (t = curl_getdate(date, NULL)) < 0)
		return;
	off = (int64_t)t * 1000 - vx_now_ms(h->ctx);
	if (off > CLOCK_OFFSET_MAX_MS || off < -CLOCK_OFFSET_MAX_MS)
		return;
	atomic_store(&h->clock_offset_ms, off);
	atomic_store(&h->clock_seen_mono, vx_mono_ms(h->ctx) + 1);
}

int gcp_http_clock_offset(struct gcp_http *h, int64_t *offset_ms, int64_t *seen_mono)
{
	*seen_mono = atomic_load(&h->clock_seen_mono);
	*offset_ms = atomic_load(&h->clock_offset_ms);
	return *seen_mono != 0;
}

/* Schedules another attempt after a retryable failure, or gives up. */
static void retry_later(struct xfer *x, int64_t now, const char *why, int64_t server_ms)
{
	struct gcp_http *h = x->h;
	const char *method = req_method(x->req);
	int64_t delay;

	if (x->req->retry == GCP_RETRY_ONCE) {
		note_retry_after(h, server_ms);
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: %s (not retried)", method, x->log_url, why));
		return;
	}
	if (x->resp->attempts >= h->o.max_attempts) {
		note_retry_after(h, server_ms);
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: giving up after %d attempts: %s",
				     method, x->log_url, x->resp->attempts, why));
		return;
	}
	delay = gcp_backoff_next(&x->bo, &h->rng);
	if (server_ms > delay)
		delay = server_ms;
	if (now + delay >= x->deadline_at) {
		char bound[96];

		deadline_text(x, bound, sizeof(bound));
		note_retry_after(h, server_ms);
		finish(x, vx_err_set(x->err, VX_ERETRY, "%s %s: giving up after %d attempts: %s "
				     "(retrying in %.1f s would pass %s)", method, x->log_url,
				     x->resp->attempts, why, (double)delay / 1000.0, bound));
		return;
	}
	vx_log(h->ctx, VX_LOG_DEBUG, "%s %s: retrying in %.1f s after %s (attempt %d/%d)", method,
	       x->log_url, (double)delay / 1000.0, why, x->resp->attempts + 1, h->o.max_attempts);
	x->ready_at = now + delay;
}

static int curl_connect_failed(CURLcode c)
{
	return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY ||
	       c == CURLE_COULDNT_CONNECT;
}

static int curl_transient(CURLcode c)
{
	return curl_connect_failed(c) || c == CURLE_OPERATION_TIMEDOUT || c == CURLE_SEND_ERROR ||
	       c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
	       c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM || c == CURLE_SSL_CONNECT_ERROR;
}

static const char *version_name(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0: return "HTTP/1.0";
	case CURL_HTTP_VERSION_1_1: return "HTTP/1.1";
	case CURL_HTTP_VERSION_2_0: return "HTTP/2";
#ifdef CURL_HTTP_VERSION_3
	case CURL_HTTP_VERSION_3: return "HTTP/3";
#endif
	default: return "HTTP";
	}
}

/*
 * Ends a GCP_RETRY_NEVER request whose last send may have been acted on:
 * uncertain, and the message says how often it went out, because earlier
 * sends may have been refused (429) and sent again.
 */
static void finish_uncertain(struct xfer *x, const char *cause)
{
	const char *method = req_method(x->req);

	x->resp->uncertain = 1;
	if (x->sends <= 1)
		finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: %s; the outcome is unknown; not "
				     "sent again", method, x->log_url, cause));
	else
		finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: %s after %d tries; the last try's "
				     "outcome is unknown; not sent again", method, x->log_url, cause,
				     x->sends));
}

/* "http://host:port" of url, for saying which server is unreachable. */
static char *url_origin(const char *url)
{
	const char *p = strstr(url, "://");
	size_t n = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strcspn(url, "/?#");

	return vx_asprintf("%.*s", (int)n, url);
}

static const char *connect_cause(CURLcode res, long os_errno)
{
	if (res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY)
		return "the host name does not resolve";
	switch (os_errno) {
	case ECONNREFUSED: return "connection refused";
	case ETIMEDOUT: return "timed out";
	case EHOSTUNREACH: return "host unreachable";
	case ENETUNREACH: return "network unreachable";
	default: return curl_easy_strerror(res);
	}
}

/*
 * Says once on the log (stderr at the default level) that a server cannot be
 * reached and how long vx keeps trying, instead of a silent wait: the most
 * the remaining backoffs can add up to, within the deadline.
 */
static void warn_connect(struct xfer *x, CURLcode res, int64_t now)
{
	struct gcp_http *h = x->h;
	struct gcp_backoff bo = x->bo;
	char *origin = url_origin(x->log_url);
	int64_t most = 0;
	long os_errno = 0;
	int i;

	if (!origin || (h->warned_host && !strcmp(h->warned_host, origin))) {
		free(origin);
		return;
	}
	for (i = x->resp->attempts; i < h->o.max_attempts; i++) {
		most += bo.ceiling_ms;
		bo.ceiling_ms = bo.ceiling_ms * 2 > bo.max_ms ? bo.max_ms : bo.ceiling_ms * 2;
	}
	if (now + most > x->deadline_at)
		most = x->deadline_at - now;
	curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &os_errno);
	vx_log(h->ctx, VX_LOG_WARN, "cannot connect to %s (%s); retrying for up to %lld s", origin,
	       connect_cause(res, os_errno), (long long)((most + 999) / 1000));
	free(h->warned_host);
	h->warned_host = origin;
}

/* An attempt cut off by a second interrupt. A create that may have reached
 * the server ends uncertain, never cancelled: the job may exist. */
static void attempt_abandoned(struct xfer *x)
{
	const struct gcp_request *r = x->req;
	const char *method = req_method(r);

	if (r->retry == GCP_RETRY_NEVER && !(r->body && r->body_len && !x->body_read)) {
		x->resp->uncertain = 1;
		finish(x, vx_err_set(x->err, VX_EUNCERTAIN, "%s %s: abandoned in flight; the outcome "
							    "is unknown",
				     method, x->log_url));
	} else {
		finish(x, vx_err_set(x->err, VX_ECANCELED, "%s %s: abandoned in flight", method,
				     x->log_url));
	}
}

/*
 * An attempt that brought no whole answer (res, libcurl's failure). An
 * answer over a cap is the call's error (uncertain for a create: the
 * server had it); a transient failure is retried, unless a create may have
 * been sent (uncertain then); any other failure is the call's error.
 */
static void attempt_failed(struct xfer *x, CURLcode res, int64_t now, const char *body_note)
{
	struct gcp_http *h = x->h;
	const struct gcp_request *r = x->req;
	const char *method = req_method(r);
	const char *cerr = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
	curl_off_t total_us = 0, pre_us = 0;
	int sent;
	char why[96];

	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &total_us);
	curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> failed: %s (%lld ms)", method, x->log_url, body_note,
	       cerr, (long long)(total_us / 1000));
	/* libcurl says "out of memory" for a header line past its own limit. */
	if (x->header_too_big || res == CURLE_OUT_OF_MEMORY || x->too_big ||
	    res == CURLE_FILESIZE_EXCEEDED) {
		if (x->header_too_big || res == CURLE_OUT_OF_MEMORY)
			snprintf(why, sizeof(why), "the response header is larger than %d bytes",
				 HTTP_MAX_HEADER_BYTES);
		else
			snprintf(why, sizeof(why), "the response is larger than %zu bytes",
				 h->o.max_response_bytes);
		x->sends++;
		/* The server answered, so a create reached it: no knowing what it did. */
		if (r->retry == GCP_RETRY_NEVER)
			finish_uncertain(x, why);
		else
			finish(x, vx_err_set(x->err, VX_EINVAL, "%s %s: %s", method, x->log_url, why));
		return;
	}
	if (!curl_transient(res)) {
		finish(x, vx_err_set(x->err, VX_EIO, "%s %s: %s", method, x->log_url, cerr));
		return;
	}
	/* Could the server have acted on it? Not if the connection never
	 * came up, nor if libcurl never asked for the body it had to send. */
	sent = !(curl_connect_failed(res) || res == CURLE_SSL_CONNECT_ERROR ||
		 (res == CURLE_OPERATION_TIMEDOUT && pre_us == 0) ||
		 (r->body && r->body_len && !x->body_read));
	x->sends += sent;
	if (r->retry == GCP_RETRY_NEVER && sent) {
		char cause[CURL_ERROR_SIZE + 48];

		snprintf(cause, sizeof(cause), "%s after the request was sent", cerr);
		finish_uncertain(x, cause);
		return;
	}
	if (curl_connect_failed(res) && r->retry != GCP_RETRY_ONCE)
		warn_connect(x, res, now);
	snprintf(why, sizeof(why), "%s", curl_easy_strerror(res));
	retry_later(x, now, why, -1);
}

/*
 * An answer came: its status, body and the headers callers read go into
 * resp, Google's clock is read from its Date, a 4xx/5xx's error is parsed
 * into *ge, and a debug line says what came. 0, or -1 with x finished.
 */
static int answer_keep(struct xfer *x, struct gcp_error *ge, const char *body_note)
{
	struct gcp_http *h = x->h;
	struct gcp_response *resp = x->resp;
	const char *method = req_method(x->req);
	long status = 0, version = 0;
	curl_off_t total_us = 0;
	char *date;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &total_us);
	resp->status = status;
	x->sends++;
	date = response_header(x->easy, "Date");
	note_clock(h, x->req, date);
	free(date);
	if (x->rbody.len) {
		resp->body_len = x->rbody.len;
		resp->body = vx_buf_detach(&x->rbody);
	}
	resp->content_type = response_header(x->easy, "Content-Type");
	resp->metadata_flavor = response_header(x->easy, "Metadata-Flavor");
	if (status >= 400 && gcp_error_parse(ge, status, resp->body, resp->body_len) < 0) {
		finish(x, vx_err_set(x->err, VX_ENOMEM, "%s %s: out of memory", method, x->log_url));
		return -1;
	}
	curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &version);
	if (status >= 400)
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> %ld %s%s%s (%zu bytes, %lld ms, %s)", method,
		       x->log_url, body_note, status, ge->status ? ge->status : "",
		       ge->reason ? " " : "", ge->reason ? ge->reason : "", resp->body_len,
		       (long long)(total_us / 1000), version_name(version));
	else
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s%s -> %ld (%zu bytes, %lld ms, %s)", method,
		       x->log_url, body_note, status, resp->body_len, (long long)(total_us / 1000),
		       version_name(version));
	return 0;
}

/* 429, or a 403 whose reason is a rate limit (compute's rateLimitExceeded and kin):
 * a refusal, safe to send again. */
static int rate_limit_refusal(long status, const struct gcp_error *ge)
{
	static const char *const reasons[] = { "rateLimitExceeded", "userRateLimitExceeded",
					       "RATE_LIMIT_EXCEEDED" };

	if (status == 429)
		return 1;
	for (size_t i = 0; status == 403 && ge->reason && i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (!strcmp(ge->reason, reasons[i]))
			return 1;
	return 0;
}

/*
 * What an answer (ge: its parsed error) means for the request: one retry
 * with a fresh token after a 401; another attempt after a retryable status
 * or a rate-limit refusal, as late as the server asks (Retry-After,
 * RetryInfo), except for a create past a 5xx or 408 (uncertain); else the
 * answer is the call's result.
 */
static void answer_decide(struct xfer *x, const struct gcp_error *ge, int64_t now)
{
	struct gcp_http *h = x->h;
	const struct gcp_request *r = x->req;
	long status = x->resp->status;
	int64_t server_ms;
	int rate_limited;
	char why[96], *retry_after;

	if (status == 401 && !r->no_auth && h->tokens && !x->auth_retried) {
		x->auth_retried = 1;
		x->stale_token = 1; /* invalidated by attempt_start, under token_lock */
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s: 401, retrying once with a fresh token", req_method(r),
		       x->log_url);
		x->ready_at = now;
		return;
	}
	rate_limited = rate_limit_refusal(status, ge);
	if ((!retryable_status(status) && !rate_limited) || r->retry == GCP_RETRY_ONCE) {
		finish(x, 0);
		return;
	}
	if (r->retry == GCP_RETRY_NEVER && !rate_limited) {
		/* A 5xx or 408 after sending: the job may exist. 429 and rate-limit
		 * 403s are refusals, safe to send again. */
		char cause[96];

		snprintf(cause, sizeof(cause), "HTTP %ld%s%s", status, ge->status ? " " : "",
			 ge->status ? ge->status : "");
		finish_uncertain(x, cause);
		return;
	}
	retry_after = response_header(x->easy, "Retry-After");
	server_ms = retry_after_ms(h, retry_after);
	free(retry_after);
	if (ge->retry_delay_ms > server_ms)
		server_ms = ge->retry_delay_ms;
	if (ge->reason && status == 403)
		snprintf(why, sizeof(why), "403 %s", ge->reason);
	else
		snprintf(why, sizeof(why), "%ld", status);
	retry_later(x, now, why, server_ms);
}

/* Handles the end of an attempt: fills resp, then finishes or schedules a
 * retry. Called under h->lock; the caller cleans the attempt up. */
static void attempt_done(struct xfer *x, CURLcode res)
{
	const struct gcp_request *r = x->req;
	struct gcp_error ge = GCP_ERROR_INIT;
	int64_t now = vx_mono_ms(x->h->ctx);
	char body_note[48] = "";

	if (r->body && r->body_len)
		snprintf(body_note, sizeof(body_note), " (body %zu bytes)", r->body_len);
	resp_clear_body(x->resp);
	x->resp->status = 0;
	if (x->fenced) {
		vx_log(x->h->ctx, VX_LOG_DEBUG, "%s %s%s -> not sent: %s", req_method(r), x->log_url,
		       body_note, vx_err_msg(&x->fence_err));
		x->resp->attempts--; /* counted when handed to libcurl, but never sent */
		fence_stop(x);
	} else if (x->abandoned && res == CURLE_ABORTED_BY_CALLBACK) {
		attempt_abandoned(x);
	} else if (res != CURLE_OK) {
		attempt_failed(x, res, now, body_note);
	} else if (answer_keep(x, &ge, body_note) == 0) {
		answer_decide(x, &ge, now);
	}
	gcp_error_release(&ge);
}

/* ---- the request loop ---- */

/* Sleeps until mono time t, or until interrupted. */
static void wait_until(const struct vx_ctx *ctx, int64_t t)
{
	int64_t now;

	while (!vx_interrupted(ctx) && (now = vx_mono_ms(ctx)) < t)
		vx_sleep_ms(ctx, t - now);
}

/*
 * Takes the request's rate-limit token and waits until it is due, under
 * h->lock so that waits are served one at a time in reservation order.
 * Finishes x when the limiter fails.
 */
static void admit(struct xfer *x)
{
	struct gcp_http *h = x->h;
	const struct gcp_request *r = x->req;
	int64_t wait;

	pthread_mutex_lock(&h->lock);
	if (gcp_ratelimit_reserve(h->rl, r->api, r->region, r->is_create, &wait) < 0) {
		finish(x, vx_err_set(x->err, VX_ENOMEM, "rate limiter: out of memory"));
	} else if (wait > 0) {
		vx_log(h->ctx, VX_LOG_DEBUG, "%s %s: rate limit (%s%s%s), waiting %.1f s", req_method(r),
		       x->log_url, r->api, r->region ? " " : "", r->region ? r->region : "",
		       (double)wait / 1000.0);
		wait_until(h->ctx, vx_mono_ms(h->ctx) + wait);
	}
	pthread_mutex_unlock(&h->lock);
}

/*
 * One request on the calling thread: attempts, retries and waits until it
 * has a result. An interrupt stops it before an attempt is sent, never
 * during one (see on_progress for the second interrupt).
 */
static int send_one(struct gcp_http *h, const struct gcp_request *req, struct gcp_response *resp,
		    struct vx_err *err)
{
	struct xfer x;
	CURLcode res;

	memset(&x, 0, sizeof(x));
	memset(resp, 0, sizeof(*resp));
	x.h = h;
	x.req = req;
	x.resp = resp;
	x.err = err;
	x.ready_at = vx_mono_ms(h->ctx);
	x.deadline_at = x.ready_at + h->o.deadline_ms;
	if (h->ctx->deadline_ms > 0 && h->ctx->deadline_ms < x.deadline_at) {
		x.deadline_at = h->ctx->deadline_ms;
		x.deadline_is_cmd = 1;
	}
	gcp_backoff_init(&x.bo, h->o.backoff_initial_ms, h->o.backoff_max_ms);
	x.log_url = req->log_name ? vx_strdup(req->log_name) : redact_url(req->url ? req->url : "");
	if (!req->url || !x.log_url)
		finish(&x, vx_err_set(err, req->url ? VX_ENOMEM : VX_EINVAL, "http: %s",
				      req->url ? "out of memory" : "no URL"));
	while (!x.done) {
		wait_until(h->ctx, x.ready_at);
		if (!vx_interrupted(h->ctx))
			admit(&x);
		if (!x.done && vx_interrupted(h->ctx))
			finish(&x, vx_err_set(err, VX_ECANCELED, "%s %s: interrupted before it was sent",
					      req_method(req), x.log_url));
		if (x.done)
			break;
		attempt_start(&x, vx_mono_ms(h->ctx));
		if (x.done)
			break;
		res = curl_easy_perform(x.easy);
		pthread_mutex_lock(&h->lock);
		attempt_done(&x, res);
		pthread_mutex_unlock(&h->lock);
		attempt_cleanup(&x);
	}
	free(x.log_url);
	return x.rc;
}

/* Counts a failed request under its api (gcp_http_errors). The api names are
 * the callers' string literals, so keeping the pointer is safe. */
static void count_error(struct gcp_http *h, const struct gcp_request *req, int rc, const struct gcp_response *resp)
{
	long st = resp ? resp->status : 0;
	const char *api = req->api ? req->api : "other";
	size_t i;

	if (rc == 0 && st != 401 && st != 403 && st != 429 && st < 500)
		return;
	pthread_mutex_lock(&h->lock);
	for (i = 0; i < h->nerrors && strcmp(h->errors[i].api, api); i++)
		;
	if (i == h->nerrors && h->nerrors < GCP_HTTP_APIS)
		h->errors[h->nerrors++].api = api;
	if (i < h->nerrors)
		h->errors[i].n++;
	pthread_mutex_unlock(&h->lock);
}

void gcp_http_errors(struct gcp_http *h, const char *names[GCP_HTTP_APIS], uint64_t counts[GCP_HTTP_APIS],
		     size_t *n)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->nerrors; i++) {
		size_t k;

		for (k = 0; k < *n && strcmp(names[k], h->errors[i].api); k++)
			;
		if (k == *n && *n < GCP_HTTP_APIS) {
			names[*n] = h->errors[i].api;
			counts[(*n)++] = 0;
		}
		if (k < *n)
			counts[k] += h->errors[i].n;
	}
	pthread_mutex_unlock(&h->lock);
}

int gcp_http_send(struct gcp_http *h, const struct gcp_request *req, struct gcp_response *resp,
		  struct vx_err *err)
{
	int rc = send_one(h, req, resp, err);

	count_error(h, req, rc, resp);
	return rc;
}

struct many {
	struct gcp_http *h;
	const struct gcp_request *reqs;
	struct gcp_response *resps;
	int *rcs;
	struct vx_err *errs;
};

/* One request of gcp_http_send_many, on a worker of the pool. */
static void many_one(void *ud, size_t i)
{
	struct many *m = ud;
	int rc = send_one(m->h, &m->reqs[i], &m->resps[i], m->errs ? &m->errs[i] : NULL);

	count_error(m->h, &m->reqs[i], rc, &m->resps[i]);
	if (m->rcs)
		m->rcs[i] = rc;
}

int gcp_http_send_many(struct gcp_http *h, size_t n, const struct gcp_request *reqs,
		       struct gcp_response *resps, int *rcs, struct vx_err *errs)
{
	struct many m = { h, reqs, resps, rcs, errs };

	vx_pool_run(n, (size_t)h->o.max_in_flight, many_one, &m);
	return 0;
}
