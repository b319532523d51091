#ifndef VX_TEST_HTTPD_H
#define VX_TEST_HTTPD_H

/*
 * A scripted HTTP/1.1 server for unit tests, in-process: it listens on
 * 127.0.0.1 on a free port and serves from its own pthread, so a test can
 * call the code under test synchronously and then inspect what reached the
 * server.
 *
 *	struct httpd *s;
 *	assert_int_equal(httpd_start(&s), 0);
 *	httpd_respond(s, 503, NULL, "{\"error\":{\"code\":503}}", 0);
 *	httpd_respond(s, 200, "Content-Type: application/json\r\n", "{}", 0);
 *	... send to httpd_url(s) + "/v1/things" ...
 *	assert_int_equal(httpd_request_count(s), 2);
 *	assert_string_equal(httpd_request(s, 1)->target, "/v1/things");
 *	httpd_stop(s);
 *
 * Script: each request the server reads takes the next queued action, in
 * FIFO order, whatever connection it came on; with the queue empty it takes
 * the default action (httpd_set_default; initially 404 with an empty JSON
 * error body). Actions:
 *   - respond: status, extra header lines, body, after a delay. The server
 *     adds Content-Length (and nothing else); the connection is kept alive
 *     unless the extra headers contain "Connection: close".
 *   - drop: read the whole request (it is recorded), then close the
 *     connection without answering (a lost reply).
 *   - close: close the connection as soon as the next request starts to
 *     arrive, before reading it; the request is NOT recorded, only counted
 *     (httpd_closed_count).
 * Requests must carry Content-Length when they have a body (chunked
 * uploads are not supported); responses are never compressed.
 *
 * Threading: httpd_* functions may be called from the test thread while the
 * server runs. Records returned by httpd_request stay valid and unchanged
 * until httpd_stop. Failures to allocate make the server answer 500.
 */

#include <stddef.h>

struct httpd;

struct httpd_header {
	char *name;
	char *value;
};

struct httpd_request {
	char *method;                  /* "GET" */
	char *target;                  /* path and query, as sent: "/v1/x?a=b" */
	struct httpd_header *headers;  /* in order received */
	size_t nheaders;
	char *body;                    /* NUL-terminated (may contain NULs); "" when none */
	size_t body_len;
	int conn;                      /* connection number, from 1, in accept order */
};

/* Starts the server. Returns 0, or -1 (errno set) when it could not listen. */
int httpd_start(struct httpd **out);
/* Stops the thread, closes every socket and frees everything. NULL-safe. */
void httpd_stop(struct httpd *s);

int httpd_port(const struct httpd *s);
/* "http://127.0.0.1:PORT" (no trailing slash); borrowed. */
const char *httpd_url(const struct httpd *s);

/* Queues a response. headers: extra header lines, each ending in "\r\n",
 * or NULL; body may be NULL (empty). Strings are copied. */
void httpd_respond(struct httpd *s, int status, const char *headers, const char *body, int delay_ms);
/* Queues the same response n times. */
void httpd_respond_n(struct httpd *s, int n, int status, const char *headers, const char *body,
		     int delay_ms);
/* Queues a response whose head goes out at once and whose body follows one
 * byte every interval_ms: a slow-drip server. */
void httpd_drip(struct httpd *s, int status, const char *headers, const char *body, int interval_ms);
/* Queues "read the request, then drop the connection without answering". */
void httpd_drop(struct httpd *s);
/* Queues "close the connection before reading the next request". */
void httpd_close(struct httpd *s);
/* The action used when the queue is empty (a response; copied). */
void httpd_set_default(struct httpd *s, int status, const char *headers, const char *body,
		       int delay_ms);
/* Actions still queued. */
size_t httpd_pending(struct httpd *s);

/* Requests recorded so far (respond and drop actions). */
size_t httpd_request_count(struct httpd *s);
/* The i-th recorded request (0-based), or NULL past the end. Borrowed, valid until httpd_stop. */
const struct httpd_request *httpd_request(struct httpd *s, size_t i);
/* A request header's value (name case-insensitive; the first one), or NULL. */
const char *httpd_header(const struct httpd_request *r, const char *name);
/* Connections closed by "close" actions. */
size_t httpd_closed_count(struct httpd *s);
/* Connections accepted so far. */
size_t httpd_connection_count(struct httpd *s);
/* The most requests that were in progress at once (read, not yet fully answered). */
int httpd_max_concurrent(struct httpd *s);

#endif
