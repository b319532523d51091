/*
 * Sending notifications (reconcile/notify.h): each event to each target
 * that wants it, once. "Once" rests on the sink (the state): a delivery is
 * recorded there when the receiver answered 2xx, and nothing recorded is
 * sent again, by this watcher after a restart or by another. Between the
 * answer and the record a crash can still cause one resend; the
 * webhook-id header lets a receiver drop it (Standard Webhooks).
 */
#include "reconcile/notify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/digest.h"
#include "util/banned.h"

#define TRY_FIRST_MS (30 * 1000)
#define TRY_TIMEOUT_MS (10 * 1000)
#define TRY_MAX_MS (30 * 60 * 1000)
#define TRY_MAX 12
#define TRY_FOR_MS (24 * 3600 * 1000)
#define OUTBOX_MAX 4096

struct retry {
	char key[NOTIFY_KEY_LEN + 1];
	int sent;               /* delivered, but not recorded in the state yet */
	int tries;
	int64_t first_ms;
	int64_t next_ms;
};

struct notify_outbox {
	struct retry *items;
	size_t n;
};

int notify_outbox_new(struct notify_outbox **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : VX_ENOMEM;
}

void notify_outbox_free(struct notify_outbox *ob)
{
	if (!ob)
		return;
	free(ob->items);
	free(ob);
}

void notify_report_release(struct notify_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->items[i].why);
	free(r->items);
	memset(r, 0, sizeof(*r));
}

static struct retry *retry_find(struct notify_outbox *ob, const char *key)
{
	for (size_t i = 0; i < ob->n; i++)
		if (!strcmp(ob->items[i].key, key))
			return &ob->items[i];
	return NULL;
}

static void retry_drop(struct notify_outbox *ob, struct retry *r)
{
	*r = ob->items[--ob->n];
}

static struct retry *retry_add(struct notify_outbox *ob, const char *key, int64_t now_ms)
{
	struct retry *r;

	/* Bounded: past the cap the oldest is forgotten (it is retried at once
	 * if it comes again, which is the safe side). */
	if (ob->n >= OUTBOX_MAX) {
		size_t oldest = 0;

		for (size_t i = 1; i < ob->n; i++)
			if (ob->items[i].first_ms < ob->items[oldest].first_ms)
				oldest = i;
		retry_drop(ob, &ob->items[oldest]);
	}
	r = realloc(ob->items, (ob->n + 1) * sizeof(*r));
	if (!r)
		return NULL;
	ob->items = r;
	r = &ob->items[ob->n++];
	memset(r, 0, sizeof(*r));
	memcpy(r->key, key, NOTIFY_KEY_LEN + 1);
	r->first_ms = now_ms;
	return r;
}

int notify_delivery_key(char out[NOTIFY_KEY_LEN + 1], const char *id, const struct stack_notify *t)
{
	char hex[VX_SHA256_HEX_LEN + 1];
	char *who = t->url_env ? vx_asprintf("urlEnv:%s", t->url_env) : vx_asprintf("url:%s", t->url ? t->url : "");
	int rc;

	if (!who)
		return VX_ENOMEM;
	rc = vx_digest_sha256_hex(hex, who, strlen(who));
	free(who);
	if (rc < 0)
		return rc;
	snprintf(out, NOTIFY_KEY_LEN + 1, "%s:%.8s", id, hex);
	return 0;
}

int notify_outbox_due(const struct notify_outbox *ob, const char *key, int64_t now_ms)
{
	for (size_t i = 0; i < ob->n; i++)
		if (!strcmp(ob->items[i].key, key))
			return ob->items[i].sent || ob->items[i].next_ms <= now_ms;
	return 1;
}

/* Whether sa is this machine: loopback or unspecified, v4-mapped included. */
static int addr_here(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);

		return (a >> 24) == 127 || (a >> 24) == 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && (a->s6_addr[12] == 127 || a->s6_addr[12] == 0));
	}
	return 0;
}

int notify_host_here(const char *host)
{
	struct addrinfo hints, *res = NULL;
	int here = 0;

	if (!host || !*host)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	for (const struct addrinfo *ai = res; ai && !here; ai = ai->ai_next)
		here = ai->ai_addr && addr_here(ai->ai_addr);
	freeaddrinfo(res);
	return here;
}

/* Why the target's URL may not be posted to now (owned), or NULL. */
static char *url_refused(const struct stack_notify *t, const char *url, const struct notify_sink *sink)
{
	struct notify_url nu;
	const char *bad = notify_url_parse(&nu, url);
	const char *what = t->url_env ? t->url_env : "url";

	if (bad)
		return vx_asprintf("%s: %s", what, bad);
	if (nu.loopback && !sink->allow_loopback)
		return vx_asprintf("%s: a target on this machine (loopback): nothing is sent to it unless "
				   NOTIFY_LOOPBACK_ENV "=1 is in vx's environment", what);
	if (!sink->allow_loopback && sink->host_here && sink->host_here(nu.host))
		return vx_asprintf("%s: its host resolves to this machine (loopback): nothing is sent to it unless " NOTIFY_LOOPBACK_ENV "=1 is in vx's environment", what);
	return NULL;
}

/* One request: 0 and *status, or a failure in *why (owned). */
static int post_one(struct provider *p, const struct stack_notify *t, size_t ti, const struct notify_event *ev,
		    const char *id, const struct notify_sink *sink, int64_t now_ms, int64_t timeout_ms, long *status,
		    char **why)
{
	struct vx_buf body = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct provider_webhook req;
	const char *url = t->url, *secret = NULL;
	char *h_id = NULL, *h_ts = NULL, *h_sig = NULL, *sig = NULL, name[32];
	const char *headers[4] = { NULL, NULL, NULL, NULL };
	unsigned char *key = NULL;
	size_t klen = 0;
	int rc = 0;

	*status = 0;
	*why = NULL;
	if (t->url_env && !(url = sink->getenv(sink->ud, t->url_env))) {
		*why = vx_asprintf("%s is not set", t->url_env);
		goto done;
	}
	if ((*why = url_refused(t, url, sink)))
		goto done;
	if (t->secret_env && !(secret = sink->getenv(sink->ud, t->secret_env))) {
		*why = vx_asprintf("%s is not set (the target is signed: nothing is sent unsigned)", t->secret_env);
		goto done;
	}
	if (secret && notify_secret_key(&key, &klen, secret, &err) < 0) {
		*why = vx_asprintf("%s: %s", t->secret_env, vx_err_msg(&err));
		goto done;
	}
	if ((rc = notify_body(&body, (enum notify_format)t->format, ev, id, &err)) < 0)
		goto fail;
	if (!(h_id = vx_asprintf("webhook-id: %s", id)) ||
	    !(h_ts = vx_asprintf("webhook-timestamp: %" PRId64, now_ms / 1000))) {
		rc = VX_ENOMEM;
		goto fail;
	}
	headers[0] = h_id;
	headers[1] = h_ts;
	if (key) {
		if ((rc = notify_signature(&sig, key, klen, id, now_ms / 1000, body.data, body.len, &err)) < 0)
			goto fail;
		if (!(h_sig = vx_asprintf("webhook-signature: %s", sig))) {
			rc = VX_ENOMEM;
			goto fail;
		}
		headers[2] = h_sig;
	}
	snprintf(name, sizeof(name), "notify[%zu]", ti);
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.log_name = name;
	req.headers = headers;
	req.body = body.data;
	req.body_len = body.len;
	req.content_type = "application/json";
	req.timeout_ms = timeout_ms;
	if (p->post_webhook(p, &req, status, &err) < 0)
		*why = vx_strdup(vx_err_msg(&err));
	else if (*status < 200 || *status > 299)
		*why = vx_asprintf("the receiver answered HTTP %ld", *status);
	goto done;
fail:
	if (rc == VX_ENOMEM)
		goto done;
	*why = vx_strdup(vx_err_msg(&err));
	rc = 0;
done:
	vx_buf_release(&body);
	vx_err_release(&err);
	free(h_id);
	free(h_ts);
	free(h_sig);
	free(sig);
	free(key);
	return rc;
}

static int report_add(struct notify_report *rep, const char *key, const struct notify_event *ev, size_t ti,
		      int sent, int dropped, char *why)
{
	struct notify_outcome *o = realloc(rep->items, (rep->n + 1) * sizeof(*o));

	if (!o) {
		free(why);
		return VX_ENOMEM;
	}
	rep->items = o;
	o = &rep->items[rep->n++];
	memset(o, 0, sizeof(*o));
	memcpy(o->key, key, NOTIFY_KEY_LEN + 1);
	o->event = notify_kind_name(ev->kind);
	o->address = ev->address;
	o->target = ti;
	o->sent = sent;
	o->dropped = dropped;
	o->why = why;
	return 0;
}

/* After a failed try: when to try again, or drop (recorded, so nobody tries again). */
static int after_failure(struct notify_outbox *ob, const struct notify_sink *sink, const char *key,
			 int64_t now_ms, int *dropped)
{
	struct retry *r = retry_find(ob, key);
	int64_t wait = TRY_FIRST_MS;

	*dropped = 0;
	if (!r && !(r = retry_add(ob, key, now_ms)))
		return VX_ENOMEM;
	r->tries++;
	if (r->tries >= TRY_MAX || now_ms - r->first_ms >= TRY_FOR_MS) {
		retry_drop(ob, r);
		*dropped = 1;
		/* Not recorded now: the next process may try it once more, no harm. */
		return sink->record(sink->ud, key, now_ms) == VX_ENOMEM ? VX_ENOMEM : 0;
	}
	for (int i = 1; i < r->tries && wait < TRY_MAX_MS; i++)
		wait *= 2;
	r->next_ms = now_ms + (wait < TRY_MAX_MS ? wait : TRY_MAX_MS);
	return 0;
}

/* After a 2xx: recorded at once; when that cannot be done now, kept in the
 * outbox as sent (not sent again by this process) for the next call. */
static int after_success(struct notify_report *rep, struct notify_outbox *ob, const struct notify_sink *sink,
			 const char *key, const struct notify_event *ev, size_t ti, int64_t now_ms)
{
	struct retry *r = retry_find(ob, key);
	int rc = sink->record(sink->ud, key, now_ms);
	char *why = NULL;

	if (rc == VX_ENOMEM)
		return rc;
	if (rc == 0 && r)
		retry_drop(ob, r);
	if (rc < 0) {
		if (!r && !(r = retry_add(ob, key, now_ms)))
			return VX_ENOMEM;
		r->sent = 1;
		if (!(why = vx_strdup("not recorded in the state yet (the lease was another's or the write "
				      "failed): recorded at the next cycle")))
			return VX_ENOMEM;
	}
	if ((rc = report_add(rep, key, ev, ti, 1, 0, why)) < 0)
		return rc;
	rep->items[rep->n - 1].unrecorded = why != NULL;
	return 0;
}

/* A delivery this process made but could not record: recorded now if it can be. */
static int record_again(struct notify_outbox *ob, const struct notify_sink *sink, struct retry *r, int64_t now_ms)
{
	int rc = sink->record(sink->ud, r->key, now_ms);

	if (rc == VX_ENOMEM)
		return rc;
	if (rc == 0)
		retry_drop(ob, r);
	return 0;
}

/* How long the next request may take: its own 10 s, cut to what is left of the call. */
static int64_t try_timeout(const struct notify_sink *sink)
{
	int64_t left = sink->time_left ? sink->time_left(sink->ud) : TRY_TIMEOUT_MS;

	return left < TRY_TIMEOUT_MS ? left : TRY_TIMEOUT_MS;
}

int notify_send(struct notify_report *rep, struct notify_outbox *ob, struct provider *p,
		const struct stack *st, const struct notify_list *events, const struct notify_sink *sink,
		int64_t now_ms, size_t max_sends, struct vx_err *err)
{
	uint64_t failed = 0; /* the targets that failed this call: not tried again in it */
	size_t sends = 0;
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	for (size_t e = 0; e < events->n && rc == 0; e++) {
		const struct notify_event *ev = &events->items[e];
		char id[NOTIFY_ID_LEN + 1];

		if ((rc = notify_event_id(id, ev)) < 0)
			break;
		for (size_t ti = 0; ti < st->nnotify && rc == 0; ti++) {
			const struct stack_notify *t = &st->notify[ti];
			uint64_t bit = ti < 64 ? (uint64_t)1 << ti : 0;
			char key[NOTIFY_KEY_LEN + 1];
			struct retry *r;
			long status = 0;
			char *why = NULL;
			int64_t timeout;
			int dropped;

			if (!(t->on & ev->kind))
				continue;
			if ((rc = notify_delivery_key(key, id, t)) < 0 || sink->delivered(sink->ud, key))
				continue;
			r = retry_find(ob, key);
			if (r && r->sent) {
				rc = record_again(ob, sink, r, now_ms);
				continue;
			}
			timeout = try_timeout(sink);
			if ((r && r->next_ms > now_ms) || sends >= max_sends || !p->post_webhook || (failed & bit) ||
			    timeout <= 0) {
				rep->pending++;
				continue;
			}
			sends++;
			if ((rc = post_one(p, t, ti, ev, id, sink, now_ms, timeout, &status, &why)) < 0)
				break;
			if (!why) {
				rc = after_success(rep, ob, sink, key, ev, ti, now_ms);
				continue;
			}
			failed |= bit;
			if ((rc = after_failure(ob, sink, key, now_ms, &dropped)) < 0) {
				free(why);
				break;
			}
			if (!dropped)
				rep->pending++;
			rc = report_add(rep, key, ev, ti, 0, dropped, why);
		}
	}
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "notifications: out of memory");
	return 0;
}
