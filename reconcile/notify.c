#include "reconcile/notify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/digest.h"
#include "util/text.h"
#include "util/banned.h"

/* The events of every stack; each kind's own are in its row (struct kind's events). */
static const struct notify_event_kind stack_events[] = {
	{ NOTIFY_GAVE_UP, "gave-up", "gave up" },
	{ NOTIFY_RESUBMITTED, "resubmitted", "was resubmitted" },
	{ NOTIFY_SUCCEEDED, "succeeded", "succeeded" },
	{ NOTIFY_STUCK, "stuck", "is stuck waiting to run" },
	{ NOTIFY_QUOTA_GRANTED, "quota-granted", "was granted" },
	{ NOTIFY_QUOTA_DENIED, "quota-denied", "was denied" },
	{ NOTIFY_WATCH_ERROR, "watch-error", "vx watch keeps failing" },
	{ NOTIFY_BUDGET_SPENT, "budget-exhausted", "is held: the budget does not cover it" },
	{ NOTIFY_BUDGET, "budget", "passed a budget threshold" },
};

/* The event of bit kind (a single bit), or NULL. */
static const struct notify_event_kind *event_kind(unsigned kind)
{
	for (size_t i = 0; i < sizeof(stack_events) / sizeof(stack_events[0]); i++)
		if (stack_events[i].bit == kind)
			return &stack_events[i];
	for (size_t k = 0; k < kind_count; k++)
		for (size_t i = 0; i < kind_table[k]->nevents; i++)
			if (kind_table[k]->events[i].bit == kind)
				return &kind_table[k]->events[i];
	return NULL;
}

size_t notify_kinds(const struct notify_event_kind **out, size_t max)
{
	size_t n = 0;

	for (unsigned b = 0; b < NOTIFY_MAX_KINDS; b++) {
		const struct notify_event_kind *e = event_kind(1u << b);

		if (e && n < max)
			out[n] = e;
		n += e != NULL;
	}
	return n;
}

unsigned notify_all(void)
{
	unsigned all = 0;

	for (unsigned b = 0; b < NOTIFY_MAX_KINDS; b++)
		if (event_kind(1u << b))
			all |= 1u << b;
	return all;
}

const char *notify_kind_name(unsigned kind)
{
	const struct notify_event_kind *e = event_kind(kind);

	return e ? e->name : NULL;
}

unsigned notify_kind_parse(const char *name)
{
	const struct notify_event_kind *all[NOTIFY_MAX_KINDS];
	size_t n = notify_kinds(all, NOTIFY_MAX_KINDS);

	for (size_t i = 0; name && i < n && i < NOTIFY_MAX_KINDS; i++)
		if (!strcmp(name, all[i]->name))
			return all[i]->bit;
	return 0;
}

const char *notify_format_name(enum notify_format f)
{
	switch (f) {
	case NOTIFY_FORMAT_JSON:
		return "json";
	case NOTIFY_FORMAT_SLACK:
		return "slack";
	}
	return NULL;
}

/* Each part is NUL-terminated, so ("a", "bc") and ("ab", "c") hash apart. */
static int id_add(struct vx_buf *b, const char *s)
{
	return vx_buf_add(b, s ? s : "", (s ? strlen(s) : 0) + 1);
}

int notify_event_id(char out[NOTIFY_ID_LEN + 1], const struct notify_event *ev)
{
	struct vx_buf b = VX_BUF_INIT;
	char hex[VX_SHA256_HEX_LEN + 1];
	int rc;

	if ((rc = id_add(&b, "vx-notify-1")) || (rc = id_add(&b, notify_kind_name(ev->kind))) ||
	    (rc = id_add(&b, ev->stack)) || (rc = id_add(&b, ev->address)) ||
	    (rc = vx_buf_printf(&b, "%" PRId64 "/%" PRId64 "/%" PRId64, ev->run, ev->attempt, ev->rung)) ||
	    (rc = vx_buf_addc(&b, '\0')) || (rc = id_add(&b, ev->job)) || (rc = id_add(&b, ev->key)))
		goto done;
	if ((rc = vx_digest_sha256_hex(hex, b.data, b.len)))
		goto done;
	memcpy(out, "evt_", 4);
	memcpy(out + 4, hex, 32);
	out[NOTIFY_ID_LEN] = '\0';
done:
	vx_buf_release(&b);
	return rc;
}

/* One path segment of a resource name: what Google's ids and names hold. */
static size_t segment_len(const char *s)
{
	size_t n = 0;

	while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
	       (s[n] >= '0' && s[n] <= '9') || s[n] == '-' || s[n] == '_' || s[n] == '.')
		n++;
	return n;
}

char *notify_console_url(const char *job)
{
	const char *p = job, *proj, *loc, *id;
	size_t np, nl, ni;

	if (!p || strncmp(p, "projects/", 9))
		return NULL;
	proj = p + 9;
	if (!(np = segment_len(proj)) || strncmp(proj + np, "/locations/", 11))
		return NULL;
	loc = proj + np + 11;
	if (!(nl = segment_len(loc)) || strncmp(loc + nl, "/customJobs/", 12))
		return NULL;
	id = loc + nl + 12;
	if (!(ni = segment_len(id)) || id[ni])
		return NULL;
	/* The page gcloud names when it creates a custom job. */
	return vx_asprintf("https://console.cloud.google.com/ai/platform/locations/%.*s/training/%.*s?project=%.*s",
			   (int)nl, loc, (int)ni, id, (int)np, proj);
}

/* A JSON string of s cleaned of control characters, or null. */
static int add_str(struct vx_buf *b, const char *s)
{
	char *clean;
	int rc;

	if (!s)
		return vx_buf_adds(b, "null");
	if (!(clean = vx_text_clean(s)))
		return VX_ENOMEM;
	rc = vx_buf_add_json_str(b, clean);
	free(clean);
	return rc;
}

static int add_num(struct vx_buf *b, int64_t v)
{
	return v ? vx_buf_printf(b, "%" PRId64, v) : vx_buf_adds(b, "null");
}

static int body_json(struct vx_buf *b, const struct notify_event *ev, const char *id,
		     const char *console, const char *when)
{
	int rc;

	if ((rc = vx_buf_adds(b, "{\"event\":")) || (rc = add_str(b, notify_kind_name(ev->kind))) ||
	    (rc = vx_buf_adds(b, ",\"id\":")) || (rc = add_str(b, id)) ||
	    (rc = vx_buf_adds(b, ",\"stack\":")) || (rc = add_str(b, ev->stack)) ||
	    (rc = vx_buf_adds(b, ",\"address\":")) || (rc = add_str(b, ev->address)) ||
	    (rc = vx_buf_adds(b, ",\"run\":")) || (rc = add_num(b, ev->run)) ||
	    (rc = vx_buf_adds(b, ",\"attempt\":")) || (rc = add_num(b, ev->attempt)) ||
	    (rc = vx_buf_printf(b, ",\"rung\":%" PRId64, ev->rung)) ||
	    (rc = vx_buf_adds(b, ",\"state\":")) || (rc = add_str(b, ev->state)) ||
	    (rc = vx_buf_adds(b, ",\"class\":")) || (rc = add_str(b, ev->cls)) ||
	    (rc = vx_buf_adds(b, ",\"message\":")) || (rc = add_str(b, ev->message)) ||
	    (rc = vx_buf_adds(b, ",\"job\":")) || (rc = add_str(b, ev->job)) ||
	    (rc = vx_buf_adds(b, ",\"console\":")) || (rc = add_str(b, console)) ||
	    (rc = vx_buf_adds(b, ",\"time\":")) || (rc = add_str(b, when)) || (rc = vx_buf_adds(b, "}")))
		return rc;
	return 0;
}

/* What the event says in one sentence, for Slack's text and notification preview. */
static int headline(struct vx_buf *t, const struct notify_event *ev)
{
	const struct notify_event_kind *e = event_kind(ev->kind);
	const char *what = e ? e->what : "";

	if (ev->kind == NOTIFY_WATCH_ERROR || ev->kind == NOTIFY_BUDGET)
		return vx_buf_printf(t, "%s: %s", ev->stack ? ev->stack : "", what);
	return vx_buf_printf(t, "%s: %s %s", ev->stack ? ev->stack : "", ev->address ? ev->address : "", what);
}

/* Slack's mrkdwn treats &, < and > as markup: escape them as Slack documents,
 * after control characters are gone (the facts are joined by our own newlines). */
static int add_mrkdwn(struct vx_buf *b, const char *s)
{
	char *clean = vx_text_clean(s);
	int rc = 0;

	if (s && !clean)
		return VX_ENOMEM;
	for (const char *c = clean; c && *c && !rc; c++) {
		if (*c == '&')
			rc = vx_buf_adds(b, "&amp;");
		else if (*c == '<')
			rc = vx_buf_adds(b, "&lt;");
		else if (*c == '>')
			rc = vx_buf_adds(b, "&gt;");
		else
			rc = vx_buf_addc(b, *c);
	}
	free(clean);
	return rc;
}

/* Slack's limits: a section's text object holds 3,000 characters, a message
 * 50 blocks (api.slack.com, Block Kit reference). Over them Slack refuses the
 * whole message, so a long message is cut to them here; the json format
 * always carries it whole. */
#define SLACK_TEXT_MAX 3000
#define SLACK_BLOCKS_MAX 50
#define SLACK_CUT_NOTE "\n_(cut to Slack's limits: the json format carries the whole message)_"

static int slack_section(struct vx_buf *b, const char *text, size_t len, int *nblocks)
{
	char *t = strndup(text, len);
	int rc;

	if (!t)
		return VX_ENOMEM;
	rc = vx_buf_adds(b, *nblocks ? ",{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":"
				     : "{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":");
	if (rc == 0 && (rc = vx_buf_add_json_str(b, t)) == 0)
		rc = vx_buf_adds(b, "}}");
	free(t);
	(*nblocks)++;
	return rc;
}

/* Where to cut s (len bytes) at most max bytes in: not inside a UTF-8
 * character nor inside an entity add_mrkdwn wrote (&amp; &lt; &gt;). Bytes
 * are counted, never fewer than Slack's characters. */
static size_t slack_cut(const char *s, size_t len, size_t max)
{
	size_t n = len < max ? len : max;

	if (n == len)
		return n;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	for (size_t k = 1; k <= 4 && k <= n; k++) {
		if (s[n - k] == ';')
			break;
		if (s[n - k] == '&')
			return n - k;
	}
	return n;
}

/* The message in code blocks, one section each, within what blocks are left. */
static int slack_message(struct vx_buf *b, const char *m, size_t len, int *nblocks, int room)
{
	struct vx_buf sec = VX_BUF_INIT;
	size_t off = 0;
	int rc = 0;

	while (off < len && rc == 0) {
		int last = room <= 1;
		size_t max = SLACK_TEXT_MAX - 6 - (last ? strlen(SLACK_CUT_NOTE) : 0);
		size_t n = slack_cut(m + off, len - off, max);

		vx_buf_reset(&sec);
		if ((rc = vx_buf_adds(&sec, "```")) || (rc = vx_buf_add(&sec, m + off, n)) ||
		    (rc = vx_buf_adds(&sec, "```")))
			break;
		off += n;
		if (last && off < len && (rc = vx_buf_adds(&sec, SLACK_CUT_NOTE)))
			break;
		rc = slack_section(b, sec.data, sec.len, nblocks);
		room--;
		if (last)
			break;
	}
	vx_buf_release(&sec);
	return rc;
}

static int body_slack(struct vx_buf *b, const struct notify_event *ev, const char *id,
		      const char *console, const char *when)
{
	struct vx_buf head = VX_BUF_INIT, facts = VX_BUF_INIT, msg = VX_BUF_INIT, tail = VX_BUF_INIT;
	int rc, nblocks = 0;

	if ((rc = headline(&head, ev)))
		goto done;
	if ((rc = vx_buf_adds(&facts, "*")) || (rc = add_mrkdwn(&facts, head.data)) ||
	    (rc = vx_buf_adds(&facts, "*")))
		goto done;
	if (ev->run && (rc = vx_buf_printf(&facts, "\nrun %" PRId64 ", attempt %" PRId64 ", rung %" PRId64,
					   ev->run, ev->attempt, ev->rung)))
		goto done;
	if (ev->state && ((rc = vx_buf_adds(&facts, "\nstate: ")) || (rc = add_mrkdwn(&facts, ev->state))))
		goto done;
	if (ev->cls && ((rc = vx_buf_adds(&facts, "\nclass: ")) || (rc = add_mrkdwn(&facts, ev->cls))))
		goto done;
	if (ev->message && (rc = add_mrkdwn(&msg, ev->message)))
		goto done;
	if (console && ((rc = vx_buf_adds(&tail, "<")) || (rc = add_mrkdwn(&tail, console)) ||
			(rc = vx_buf_adds(&tail, "|Open in the Cloud Console>\n"))))
		goto done;
	if ((rc = vx_buf_printf(&tail, "%s · %s", when, id)))
		goto done;
	if ((rc = vx_buf_adds(b, "{\"text\":")) || (rc = add_str(b, head.data)) ||
	    (rc = vx_buf_adds(b, ",\"blocks\":[")))
		goto done;
	if (facts.len + (ev->message ? msg.len + 7 : 0) + 1 + tail.len <= SLACK_TEXT_MAX) {
		/* All in one section, as most events are. */
		if ((ev->message && ((rc = vx_buf_adds(&facts, "\n```")) ||
				     (msg.len && (rc = vx_buf_add(&facts, msg.data, msg.len))) ||
				     (rc = vx_buf_adds(&facts, "```")))) ||
		    (rc = vx_buf_addc(&facts, '\n')) || (rc = vx_buf_add(&facts, tail.data, tail.len)) ||
		    (rc = slack_section(b, facts.data, facts.len, &nblocks)))
			goto done;
	} else if ((rc = slack_section(b, facts.data, facts.len, &nblocks)) ||
		   (rc = slack_message(b, msg.data ? msg.data : "", msg.len, &nblocks, SLACK_BLOCKS_MAX - 2)) ||
		   (rc = slack_section(b, tail.data, tail.len, &nblocks))) {
		goto done;
	}
	rc = vx_buf_adds(b, "]}");
done:
	vx_buf_release(&head);
	vx_buf_release(&facts);
	vx_buf_release(&msg);
	vx_buf_release(&tail);
	return rc;
}

int notify_body(struct vx_buf *out, enum notify_format f, const struct notify_event *ev,
		const char *id, struct vx_err *err)
{
	char when[STATE_TIME_MAX];
	char *console = notify_console_url(ev->job);
	int rc;

	state_time_format(ev->time_ms, when);
	if (f == NOTIFY_FORMAT_SLACK)
		rc = body_slack(out, ev, id, console, when);
	else
		rc = body_json(out, ev, id, console, when);
	free(console);
	if (rc)
		return vx_err_set(err, rc, "building the %s notification: %s", notify_kind_name(ev->kind),
				  rc == VX_ENOMEM ? "out of memory" : "too large");
	return 0;
}

int notify_secret_key(unsigned char **out, size_t *out_len, const char *secret, struct vx_err *err)
{
	const char *b64;
	size_t n, pad = 0;
	unsigned char *key = NULL;
	int got;

	*out = NULL;
	*out_len = 0;
	if (!secret || strncmp(secret, "whsec_", 6))
		return vx_err_set(err, VX_EINVAL, "a webhook secret starts with \"whsec_\" (Standard Webhooks)");
	b64 = secret + 6;
	n = strlen(b64);
	/* EVP_DecodeBlock ignores nothing and checks little: check the alphabet and length here. */
	for (size_t i = 0; i < n; i++) {
		char c = b64[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 c == '+' || c == '/';
		if (c == '=' && i + 2 >= n && n % 4 == 0) {
			pad++;
			continue;
		}
		if (!ok || pad)
			return vx_err_set(err, VX_EINVAL, "the webhook secret after \"whsec_\" is not base64");
	}
	if (n == 0 || n % 4 != 0 || n > 4096)
		return vx_err_set(err, VX_EINVAL, "the webhook secret after \"whsec_\" is not base64 "
				  "(its length is not a multiple of 4, or it is empty or over 4096 characters)");
	if (!(key = malloc(n / 4 * 3 + 1)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	got = EVP_DecodeBlock(key, (const unsigned char *)b64, (int)n);
	if (got < 0 || (size_t)got < pad || (size_t)got - pad == 0) {
		free(key);
		return vx_err_set(err, VX_EINVAL, "the webhook secret after \"whsec_\" is not base64");
	}
	*out = key;
	*out_len = (size_t)got - pad;
	return 0;
}

int notify_signature(char **out, const unsigned char *key, size_t key_len, const char *id,
		     int64_t timestamp, const char *body, size_t body_len, struct vx_err *err)
{
	struct vx_buf msg = VX_BUF_INIT;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
	int rc;

	*out = NULL;
	if ((rc = vx_buf_printf(&msg, "%s.%" PRId64 ".", id, timestamp)) || (rc = vx_buf_add(&msg, body, body_len))) {
		vx_buf_release(&msg);
		return vx_err_set(err, rc, "signing a notification: out of memory");
	}
	if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg.data, msg.len, mac, &mac_len)) {
		vx_buf_release(&msg);
		return vx_err_set(err, VX_EIO, "signing a notification: HMAC-SHA256 failed (OpenSSL)");
	}
	vx_buf_release(&msg);
	EVP_EncodeBlock(b64, mac, (int)mac_len);
	if (!(*out = vx_asprintf("v1,%s", (const char *)b64)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

int notify_list_add(struct notify_list *l, const struct notify_event *ev)
{
	struct notify_event *p = realloc(l->items, (l->n + 1) * sizeof(*p));

	if (!p) {
		free(ev->owned[0]);
		free(ev->owned[1]);
		return VX_ENOMEM;
	}
	l->items = p;
	l->items[l->n++] = *ev;
	return 0;
}

void notify_list_release(struct notify_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].owned[0]);
		free(l->items[i].owned[1]);
	}
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int notify_collect(struct notify_list *out, const struct plan *p, const char *stack, int64_t now_ms,
		   int64_t since_ms)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct job_action *ja = job_action_of(a);
		const struct plan_run *cur = ja->record ? ja->record->current : NULL;
		const struct stack_job *j = job_action_job(a);
		struct notify_event ev;
		int rc;

		if (a->kind_of && a->kind_of->notify) {
			if ((rc = a->kind_of->notify(out, a, stack, now_ms, since_ms)) < 0)
				return rc;
			continue;
		}
		if (a->op != PLAN_NOOP || a->held || !cur || !ja->live_state)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.stack = stack;
		ev.address = a->address;
		ev.run = ja->record->run;
		ev.attempt = cur->attempt;
		ev.rung = cur->rung;
		ev.state = ja->live_state;
		ev.job = cur->name;
		if (ja->failure_class && cur->end_ms >= since_ms) {
			ev.kind = NOTIFY_GAVE_UP;
			ev.cls = ja->failure_class;
			ev.message = ja->error_message;
			ev.time_ms = cur->end_ms ? cur->end_ms : now_ms;
		} else if (!strcmp(ja->live_state, "JOB_STATE_SUCCEEDED") && cur->end_ms >= since_ms) {
			ev.kind = NOTIFY_SUCCEEDED;
			ev.time_ms = cur->end_ms ? cur->end_ms : now_ms;
		} else if ((!strcmp(ja->live_state, "JOB_STATE_QUEUED") || !strcmp(ja->live_state, "JOB_STATE_PENDING")) &&
			   j && cur->created_ms > 0 &&
			   now_ms - cur->created_ms >= j->stuck_after_ms) {
			ev.kind = NOTIFY_STUCK;
			ev.time_ms = cur->created_ms + j->stuck_after_ms;
		} else {
			continue;
		}
		if ((rc = notify_list_add(out, &ev)) < 0)
			return rc;
	}
	return 0;
}

/* ---- where a notification may go ---- */

/* Whether host (as CURLU gives it: brackets around IPv6) is this machine. */
static int host_loopback(const char *host, size_t n)
{
	char ip[64];
	struct in_addr a4;
	struct in6_addr a6;

	if ((n == 9 && !strncasecmp(host, "localhost", 9)) ||
	    (n > 10 && !strncasecmp(host + n - 10, ".localhost", 10)))
		return 1;
	if (n >= sizeof(ip))
		return 0;
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		size_t m = strcspn(host + 1, "%]"); /* an IPv6 zone id is not part of the address */

		memcpy(ip, host + 1, m);
		ip[m] = '\0';
		if (inet_pton(AF_INET6, ip, &a6) != 1)
			return 0;
		/* :: connects to this machine, as 0.0.0.0 does. */
		return IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && (a6.s6_addr[12] == 127 || a6.s6_addr[12] == 0));
	}
	memcpy(ip, host, n);
	ip[n] = '\0';
	/* libcurl writes an IPv4 address in its dotted form (127.1 and 0x7f.1 become
	 * 127.0.0.1); a name that only starts with digits is no address. 0.0.0.0/8
	 * ("this network") connects to this machine too. */
	return inet_pton(AF_INET, ip, &a4) == 1 && ((ntohl(a4.s_addr) >> 24) == 127 || (ntohl(a4.s_addr) >> 24) == 0);
}

static int has_part(CURLU *h, CURLUPart what)
{
	char *v = NULL;
	int has = curl_url_get(h, what, &v, 0) == CURLUE_OK && v && *v;

	curl_free(v);
	return has;
}

const char *notify_url_parse(struct notify_url *out, const char *u)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL;
	const char *why = NULL;
	size_t n;
	int https;

	memset(out, 0, sizeof(*out));
	if (!h)
		return "out of memory";
	if (!u || curl_url_set(h, CURLUPART_URL, u, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		why = "not a URL";
		goto done;
	}
	https = !strcasecmp(scheme, "https");
	if (!https && strcasecmp(scheme, "http")) {
		why = "not an https:// URL";
		goto done;
	}
	if (has_part(h, CURLUPART_USER) || has_part(h, CURLUPART_PASSWORD) || has_part(h, CURLUPART_OPTIONS)) {
		why = "credentials in the URL (user:password@): vx sends none";
		goto done;
	}
	if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
		why = "no host in the URL";
		goto done;
	}
	n = strlen(host);
	while (n > 1 && host[n - 1] == '.')
		n--;
	out->loopback = host_loopback(host, n);
	if (n < sizeof(out->host) && !(n > 1 && host[0] == '['))
		memcpy(out->host, host, n);
	out->slack = n == 15 && !strncasecmp(host, "hooks.slack.com", 15);
	out->query = has_part(h, CURLUPART_QUERY);
	if (!https && !out->loopback)
		why = "plain http:// to another machine: use https://";
done:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(h);
	return why;
}

int notify_target_digest(char out[NOTIFY_TARGET_LEN + 1], const struct stack_notify *t)
{
	struct vx_buf b = VX_BUF_INIT;
	char hex[VX_SHA256_HEX_LEN + 1];
	int rc;

	if ((rc = id_add(&b, "vx-notify-target-1")) || (rc = id_add(&b, t->url_env ? "urlEnv" : "url")) ||
	    (rc = id_add(&b, t->url_env ? t->url_env : t->url)) || (rc = id_add(&b, t->secret_env)) ||
	    (rc = vx_buf_printf(&b, "%d/%u", t->format, t->on)) || (rc = vx_buf_addc(&b, '\0')))
		goto done;
	if ((rc = vx_digest_sha256_hex(hex, b.data, b.len)))
		goto done;
	memcpy(out, hex, NOTIFY_TARGET_LEN);
	out[NOTIFY_TARGET_LEN] = '\0';
done:
	vx_buf_release(&b);
	return rc;
}
