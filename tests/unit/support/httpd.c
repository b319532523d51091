/* A scripted HTTP/1.1 test server: see httpd.h. One poll() loop in one thread. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include "tests/unit/support/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/banned.h"

#define HTTPD_MAX_CONNS 128
#define HTTPD_MAX_REQUEST (16u << 20)

enum act_kind { ACT_RESPOND, ACT_DROP, ACT_CLOSE };

struct action {
	enum act_kind kind;
	int status;
	char *headers;
	char *body;
	int delay_ms;
	int drip_ms;    /* > 0: the body goes out one byte every drip_ms */
	struct action *next;
};

enum conn_state { C_READ, C_WAIT, C_WRITE };

struct conn {
	int fd;
	int id;
	enum conn_state state;
	struct vx_buf in;
	struct vx_buf out;
	size_t out_off;
	int64_t due_ms;
	int close_after;
	int drip_ms;       /* of the response being written */
	size_t drip_from;  /* where its body starts in out */
};

struct httpd {
	int lfd;
	int port;
	char url[64];
	int wake[2];
	pthread_t thread;
	int running;
	pthread_mutex_t mu;
	/* Guarded by mu. */
	int stop;
	struct action *head, *tail;
	struct action def;
	struct httpd_request **reqs;
	size_t nreqs, areqs;
	size_t closed, accepted;
	int cur, max;
	/* Owned by the server thread. */
	struct conn *conns[HTTPD_MAX_CONNS];
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 412: return "Precondition Failed";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Status";
	}
}

static void action_free(struct action *a)
{
	if (!a)
		return;
	free(a->headers);
	free(a->body);
	free(a);
}

static void request_free(struct httpd_request *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	free(r->method);
	free(r->target);
	free(r->body);
	free(r);
}

static void queue_drip(struct httpd *s, enum act_kind kind, int status, const char *headers,
		       const char *body, int delay_ms, int drip_ms)
{
	struct action *a = calloc(1, sizeof(*a));

	if (!a)
		return;
	a->kind = kind;
	a->status = status;
	a->headers = vx_strdup(headers ? headers : "");
	a->body = vx_strdup(body ? body : "");
	a->delay_ms = delay_ms;
	a->drip_ms = drip_ms;
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = a;
	else
		s->head = a;
	s->tail = a;
	pthread_mutex_unlock(&s->mu);
}

static void queue(struct httpd *s, enum act_kind kind, int status, const char *headers,
		  const char *body, int delay_ms)
{
	queue_drip(s, kind, status, headers, body, delay_ms, 0);
}

void httpd_respond(struct httpd *s, int status, const char *headers, const char *body, int delay_ms)
{
	queue(s, ACT_RESPOND, status, headers, body, delay_ms);
}

void httpd_respond_n(struct httpd *s, int n, int status, const char *headers, const char *body,
		     int delay_ms)
{
	while (n-- > 0)
		queue(s, ACT_RESPOND, status, headers, body, delay_ms);
}

void httpd_drip(struct httpd *s, int status, const char *headers, const char *body, int interval_ms)
{
	queue_drip(s, ACT_RESPOND, status, headers, body, 0, interval_ms);
}

void httpd_drop(struct httpd *s)
{
	queue(s, ACT_DROP, 0, NULL, NULL, 0);
}

void httpd_close(struct httpd *s)
{
	queue(s, ACT_CLOSE, 0, NULL, NULL, 0);
}

void httpd_set_default(struct httpd *s, int status, const char *headers, const char *body,
		       int delay_ms)
{
	char *h = vx_strdup(headers ? headers : ""), *b = vx_strdup(body ? body : "");

	pthread_mutex_lock(&s->mu);
	free(s->def.headers);
	free(s->def.body);
	s->def.status = status;
	s->def.headers = h;
	s->def.body = b;
	s->def.delay_ms = delay_ms;
	pthread_mutex_unlock(&s->mu);
}

size_t httpd_pending(struct httpd *s)
{
	struct action *a;
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (a = s->head; a; a = a->next)
		n++;
	pthread_mutex_unlock(&s->mu);
	return n;
}

size_t httpd_request_count(struct httpd *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->nreqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

const struct httpd_request *httpd_request(struct httpd *s, size_t i)
{
	const struct httpd_request *r = NULL;

	pthread_mutex_lock(&s->mu);
	if (i < s->nreqs)
		r = s->reqs[i];
	pthread_mutex_unlock(&s->mu);
	return r;
}

const char *httpd_header(const struct httpd_request *r, const char *name)
{
	size_t i;

	for (i = 0; r && i < r->nheaders; i++)
		if (!strcasecmp(r->headers[i].name, name))
			return r->headers[i].value;
	return NULL;
}

size_t httpd_closed_count(struct httpd *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->closed;
	pthread_mutex_unlock(&s->mu);
	return n;
}

size_t httpd_connection_count(struct httpd *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->accepted;
	pthread_mutex_unlock(&s->mu);
	return n;
}

int httpd_max_concurrent(struct httpd *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->max;
	pthread_mutex_unlock(&s->mu);
	return n;
}

int httpd_port(const struct httpd *s)
{
	return s->port;
}

const char *httpd_url(const struct httpd *s)
{
	return s->url;
}

/* ---- server thread ---- */

static void conn_close(struct httpd *s, size_t i)
{
	struct conn *c = s->conns[i];

	if (c->state != C_READ) {
		pthread_mutex_lock(&s->mu);
		s->cur--;
		pthread_mutex_unlock(&s->mu);
	}
	close(c->fd);
	vx_buf_release(&c->in);
	vx_buf_release(&c->out);
	free(c);
	s->conns[i] = NULL;
}

/* Pops the next action, or copies the default. Caller frees. */
static struct action *next_action(struct httpd *s)
{
	struct action *a;

	pthread_mutex_lock(&s->mu);
	a = s->head;
	if (a) {
		s->head = a->next;
		if (!s->head)
			s->tail = NULL;
		a->next = NULL;
	} else if ((a = calloc(1, sizeof(*a)))) {
		a->kind = ACT_RESPOND;
		a->status = s->def.status;
		a->headers = vx_strdup(s->def.headers);
		a->body = vx_strdup(s->def.body);
		a->delay_ms = s->def.delay_ms;
	}
	pthread_mutex_unlock(&s->mu);
	return a;
}

static int front_is_close(struct httpd *s)
{
	int yes;

	pthread_mutex_lock(&s->mu);
	yes = s->head && s->head->kind == ACT_CLOSE;
	pthread_mutex_unlock(&s->mu);
	return yes;
}

static char *dup_range(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

/* Parses the head (request line and headers, hlen bytes without the blank
 * line) into r; sets *clen. 0 or -1. */
static int parse_head(struct httpd_request *r, const char *p, size_t hlen, size_t *clen)
{
	const char *end = p + hlen, *eol, *sp1, *sp2, *colon, *v;
	struct httpd_header *nh;
	char *cl_end;

	*clen = 0;
	eol = memmem(p, hlen, "\r\n", 2);
	if (!eol)
		eol = end;
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2)
		return -1;
	r->method = dup_range(p, (size_t)(sp1 - p));
	r->target = dup_range(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	if (!r->method || !r->target)
		return -1;
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			continue;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		nh = realloc(r->headers, (r->nheaders + 1) * sizeof(*nh));
		if (!nh)
			return -1;
		r->headers = nh;
		nh[r->nheaders].name = dup_range(p, (size_t)(colon - p));
		nh[r->nheaders].value = dup_range(v, (size_t)(eol - v));
		r->nheaders++;
		if (!nh[r->nheaders - 1].name || !nh[r->nheaders - 1].value)
			return -1;
		if (!strcasecmp(nh[r->nheaders - 1].name, "Content-Length")) {
			errno = 0;
			*clen = (size_t)strtoull(nh[r->nheaders - 1].value, &cl_end, 10);
			if (errno || *cl_end || *clen > HTTPD_MAX_REQUEST)
				return -1;
		}
	}
	return 0;
}

static void record(struct httpd *s, struct httpd_request *r)
{
	struct httpd_request **n;

	pthread_mutex_lock(&s->mu);
	if (s->nreqs == s->areqs) {
		size_t na = s->areqs ? s->areqs * 2 : 64;

		n = realloc(s->reqs, na * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&s->mu);
			request_free(r);
			return;
		}
		s->reqs = n;
		s->areqs = na;
	}
	s->reqs[s->nreqs++] = r;
	pthread_mutex_unlock(&s->mu);
}

static int build_response(struct conn *c, const struct action *a)
{
	size_t blen = strlen(a->body);

	vx_buf_reset(&c->out);
	c->out_off = 0;
	c->close_after = strcasestr(a->headers, "Connection: close") != NULL;
	c->drip_ms = a->drip_ms;
	if (vx_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s\r\n", a->status,
			  reason_phrase(a->status), blen, a->headers) < 0)
		return -1;
	c->drip_from = c->out.len;
	return vx_buf_add(&c->out, a->body, blen) < 0 ? -1 : 0;
}

/* Handles a complete request at the start of c->in, if there is one.
 * Returns 1 when the connection must be closed. */
static int try_request(struct httpd *s, struct conn *c)
{
	const char *hend;
	size_t hlen, clen, total;
	struct httpd_request *r = NULL;
	struct action *a = NULL;
	int close_it = 0;

	if (!c->in.len)
		return 0;
	hend = memmem(c->in.data, c->in.len, "\r\n\r\n", 4);
	if (!hend)
		return c->in.len > HTTPD_MAX_REQUEST;
	hlen = (size_t)(hend - c->in.data);
	r = calloc(1, sizeof(*r));
	if (!r || parse_head(r, c->in.data, hlen, &clen) < 0) {
		request_free(r);
		return 1;
	}
	total = hlen + 4 + clen;
	if (c->in.len < total) {
		request_free(r);
		return 0;
	}
	r->body = dup_range(c->in.data + hlen + 4, clen);
	r->body_len = clen;
	r->conn = c->id;
	memmove(c->in.data, c->in.data + total, c->in.len - total);
	c->in.len -= total;
	c->in.data[c->in.len] = '\0';
	if (!r->body) {
		request_free(r);
		return 1;
	}
	a = next_action(s);
	if (!a || a->kind == ACT_CLOSE) {
		request_free(r);
		if (a) {
			pthread_mutex_lock(&s->mu);
			s->closed++;
			pthread_mutex_unlock(&s->mu);
		}
		action_free(a);
		return 1;
	}
	record(s, r);
	if (a->kind == ACT_DROP) {
		close_it = 1;
		goto done;
	}
	if (build_response(c, a) < 0) {
		close_it = 1;
		goto done;
	}
	c->state = C_WAIT;
	c->due_ms = mono_ms() + a->delay_ms;
	pthread_mutex_lock(&s->mu);
	if (++s->cur > s->max)
		s->max = s->cur;
	pthread_mutex_unlock(&s->mu);
done:
	action_free(a);
	return close_it;
}

/* Returns 1 when the connection must be closed. */
static int conn_read(struct httpd *s, struct conn *c)
{
	char tmp[16384];
	ssize_t n;

	if (!c->in.len) {
		/* A "close" action applies before the next request is read; peek so an
		 * idle keep-alive connection closed by the client does not consume it. */
		n = recv(c->fd, tmp, 1, MSG_PEEK);
		if (n <= 0)
			return n == 0 || (errno != EAGAIN && errno != EINTR);
		if (front_is_close(s)) {
			struct action *a = next_action(s);

			action_free(a);
			pthread_mutex_lock(&s->mu);
			s->closed++;
			pthread_mutex_unlock(&s->mu);
			return 1;
		}
	}
	n = recv(c->fd, tmp, sizeof(tmp), 0);
	if (n == 0)
		return 1;
	if (n < 0)
		return errno != EAGAIN && errno != EINTR;
	if (vx_buf_add(&c->in, tmp, (size_t)n) < 0)
		return 1;
	return try_request(s, c);
}

/* Returns 1 when the connection must be closed. */
static int conn_write(struct httpd *s, struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out.len) {
		size_t want = c->out.len - c->out_off;

		if (c->drip_ms > 0 && c->out_off >= c->drip_from)
			want = 1;
		else if (c->drip_ms > 0)
			want = c->drip_from - c->out_off;
		n = send(c->fd, c->out.data + c->out_off, want, MSG_NOSIGNAL);
		if (n < 0)
			return errno != EAGAIN && errno != EINTR;
		c->out_off += (size_t)n;
		if (c->drip_ms > 0 && c->out_off > c->drip_from && c->out_off < c->out.len) {
			/* The next byte after a pause. */
			c->state = C_WAIT;
			c->due_ms = mono_ms() + c->drip_ms;
			return 0;
		}
	}
	pthread_mutex_lock(&s->mu);
	s->cur--;
	pthread_mutex_unlock(&s->mu);
	c->state = C_READ;
	if (c->close_after)
		return 1;
	return try_request(s, c);
}

static void accept_one(struct httpd *s)
{
	struct conn *c;
	size_t i;
	int fd = accept(s->lfd, NULL, NULL);

	if (fd < 0)
		return;
	for (i = 0; i < HTTPD_MAX_CONNS && s->conns[i]; i++)
		;
	c = i < HTTPD_MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
	if (!c || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->in.cap = HTTPD_MAX_REQUEST + 65536;
	pthread_mutex_lock(&s->mu);
	c->id = (int)++s->accepted;
	pthread_mutex_unlock(&s->mu);
	s->conns[i] = c;
}

static void *serve(void *arg)
{
	struct httpd *s = arg;
	struct pollfd pfd[HTTPD_MAX_CONNS + 2];
	size_t map[HTTPD_MAX_CONNS + 2];
	size_t i, n;
	int64_t now, timeout;
	int stop, shut;
	char drain[64];

	for (;;) {
		pthread_mutex_lock(&s->mu);
		stop = s->stop;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		now = mono_ms();
		timeout = -1;
		pfd[0].fd = s->wake[0];
		pfd[0].events = POLLIN;
		pfd[1].fd = s->lfd;
		pfd[1].events = POLLIN;
		n = 2;
		for (i = 0; i < HTTPD_MAX_CONNS; i++) {
			struct conn *c = s->conns[i];

			if (!c)
				continue;
			if (c->state == C_WAIT) {
				if (c->due_ms <= now) {
					c->state = C_WRITE;
				} else {
					if (timeout < 0 || c->due_ms - now < timeout)
						timeout = c->due_ms - now;
					continue;
				}
			}
			pfd[n].fd = c->fd;
			pfd[n].events = c->state == C_WRITE ? POLLOUT : POLLIN;
			pfd[n].revents = 0;
			map[n++] = i;
		}
		if (poll(pfd, n, (int)timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN)
			while (read(s->wake[0], drain, sizeof(drain)) > 0)
				;
		if (pfd[1].revents & POLLIN)
			accept_one(s);
		for (i = 2; i < n; i++) {
			struct conn *c = s->conns[map[i]];

			if (!pfd[i].revents)
				continue;
			if (c->state == C_WRITE)
				shut = conn_write(s, c);
			else
				shut = conn_read(s, c);
			if (shut)
				conn_close(s, map[i]);
		}
	}
	for (i = 0; i < HTTPD_MAX_CONNS; i++)
		if (s->conns[i])
			conn_close(s, i);
	return NULL;
}

int httpd_start(struct httpd **out)
{
	struct httpd *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1;

	*out = NULL;
	if (!s)
		return -1;
	s->lfd = s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->def.status = 404;
	s->def.headers = vx_strdup("Content-Type: application/json\r\n");
	s->def.body = vx_strdup("{\"error\":{\"code\":404,\"message\":\"httpd: nothing scripted\","
				"\"status\":\"NOT_FOUND\"}}");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s->lfd, 128) < 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) < 0 ||
	    fcntl(s->lfd, F_SETFL, O_NONBLOCK) < 0 || pipe(s->wake) < 0 ||
	    fcntl(s->wake[0], F_SETFL, O_NONBLOCK) < 0)
		goto fail;
	s->port = ntohs(sa.sin_port);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	if (pthread_create(&s->thread, NULL, serve, s) != 0)
		goto fail;
	s->running = 1;
	*out = s;
	return 0;
fail:
	httpd_stop(s);
	return -1;
}

void httpd_stop(struct httpd *s)
{
	struct action *a, *next;
	size_t i;

	if (!s)
		return;
	if (s->running) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_mutex_unlock(&s->mu);
		if (write(s->wake[1], "x", 1) < 0) {
			/* The pipe cannot be full enough to fail for long; the loop also re-checks stop. */
		}
		pthread_join(s->thread, NULL);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	for (a = s->head; a; a = next) {
		next = a->next;
		action_free(a);
	}
	free(s->def.headers);
	free(s->def.body);
	for (i = 0; i < s->nreqs; i++)
		request_free(s->reqs[i]);
	free(s->reqs);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
