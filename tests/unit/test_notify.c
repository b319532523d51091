/* Unit tests for reconcile/notify.c: event ids, bodies, Standard Webhooks signatures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include <cJSON.h>

#include "reconcile/kind.h"
#include "reconcile/notify.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "util/buf.h"

#define JOB "projects/p1/locations/us-central1/customJobs/4606268999515242496"

static struct notify_event gave_up(void)
{
	struct notify_event ev = {
		.kind = NOTIFY_GAVE_UP, .stack = "research", .address = "job.train", .run = 1, .attempt = 3,
		.rung = 2, .state = "JOB_STATE_FAILED", .cls = "user-error",
		.message = "The replica workerpool0-0 exited with a non-zero status of 1.\x1b[2J", .job = JOB,
		.time_ms = 1795000000000,
	};
	return ev;
}

static void test_kind_names(void **unused)
{
	const struct notify_event_kind *all[NOTIFY_MAX_KINDS];
	size_t n = notify_kinds(all, NOTIFY_MAX_KINDS);

	(void)unused;
	assert_true(n > 0 && n <= NOTIFY_MAX_KINDS);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(notify_kind_parse(all[i]->name), all[i]->bit);
		assert_string_equal(notify_kind_name(all[i]->bit), all[i]->name);
	}
	assert_int_equal(notify_kind_parse("gaveup"), 0);
	assert_int_equal(notify_kind_parse(NULL), 0);
	assert_null(notify_kind_name(NOTIFY_GAVE_UP | NOTIFY_STUCK));
	assert_string_equal(notify_format_name(NOTIFY_FORMAT_SLACK), "slack");
}

/*
 * Every event's bit, the stack's and each kind row's, is one bit no other
 * event has, its name is nobody else's and it says something in a headline;
 * and the bits are the ones applied notify targets were digested with
 * (notify_target_digest): a kind that took another's bit, or a bit that
 * moved, fails here rather than unsending every applied target.
 */
static void test_kind_bits_fixed(void **unused)
{
	static const struct {
		const char *name;
		unsigned bit;
	} fixed[] = {
		{ "gave-up", 0 },
		{ "resubmitted", 1 },
		{ "succeeded", 2 },
		{ "stuck", 3 },
		{ "quota-granted", 4 },
		{ "quota-denied", 5 },
		{ "watch-error", 6 },
		{ "booking-approved", 7 },
		{ "booking-declined", 8 },
		{ "window-opened", 9 },
		{ "window-closing", 10 },
		{ "window-closed", 11 },
		{ "resource-error", 12 },
		{ "booking-failed", 13 },
	};
	const struct notify_event_kind *all[NOTIFY_MAX_KINDS];
	size_t n = notify_kinds(all, NOTIFY_MAX_KINDS), seen = 0;
	unsigned bits = 0;

	(void)unused;
	/* Each row's events, as declared (notify_kinds finds one per bit, so it hides a collision). */
	for (size_t k = 0; k < kind_count; k++) {
		for (size_t i = 0; i < kind_table[k]->nevents; i++) {
			const struct notify_event_kind *e = &kind_table[k]->events[i];

			assert_true(e->bit && !(e->bit & (e->bit - 1)));
			assert_false(bits & e->bit);
			bits |= e->bit;
			assert_true(e->name && *e->name && e->what && *e->what);
			seen++;
		}
	}
	/* The stack's own: every event no row has, none of them a row's bit. */
	for (size_t i = 0; i < n; i++) {
		int a_rows = 0;

		for (size_t k = 0; k < kind_count; k++)
			for (size_t j = 0; j < kind_table[k]->nevents; j++)
				a_rows |= &kind_table[k]->events[j] == all[i];
		if (!a_rows) {
			assert_false(bits & all[i]->bit);
			bits |= all[i]->bit;
			seen++;
		}
	}
	assert_int_equal(seen, n);
	assert_int_equal(bits, notify_all());
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(all[i]->name, all[j]->name);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		assert_int_equal(notify_kind_parse(fixed[i].name), 1u << fixed[i].bit);
}

/* The id is the event's, not the moment's: the same event seen later (a second
 * watcher, a restart) has the same id; another attempt or event has another. */
static void test_event_id_stable(void **unused)
{
	struct notify_event a = gave_up(), b = gave_up();
	char ia[NOTIFY_ID_LEN + 1], ib[NOTIFY_ID_LEN + 1];

	(void)unused;
	b.time_ms += 60000;
	b.message = "another wording";
	assert_int_equal(notify_event_id(ia, &a), 0);
	assert_int_equal(notify_event_id(ib, &b), 0);
	assert_string_equal(ia, ib);
	assert_int_equal(strlen(ia), NOTIFY_ID_LEN);
	assert_memory_equal(ia, "evt_", 4);
	b.attempt = 4;
	assert_int_equal(notify_event_id(ib, &b), 0);
	assert_string_not_equal(ia, ib);
	b = gave_up();
	b.kind = NOTIFY_RESUBMITTED;
	assert_int_equal(notify_event_id(ib, &b), 0);
	assert_string_not_equal(ia, ib);
	/* Parts are delimited: moving a character from one to the next changes the id. */
	b = gave_up();
	b.stack = "researchj";
	b.address = "ob.train";
	assert_int_equal(notify_event_id(ib, &b), 0);
	assert_string_not_equal(ia, ib);
}

static void test_console_url(void **unused)
{
	char *u = notify_console_url(JOB);

	(void)unused;
	assert_string_equal(u, "https://console.cloud.google.com/ai/platform/locations/us-central1/training/"
			       "4606268999515242496?project=p1");
	free(u);
	assert_null(notify_console_url(NULL));
	assert_null(notify_console_url("projects/p1/locations/us-central1/customJobs/1?x=<script>"));
	assert_null(notify_console_url("projects/p1/locations/us-central1/reservations/1"));
	assert_null(notify_console_url("projects//locations/us-central1/customJobs/1"));
	assert_null(notify_console_url("projects/p1/locations/us central1/customJobs/1"));
}

static void test_json_body(void **unused)
{
	struct notify_event ev = gave_up();
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_JSON, &ev, "evt_0123", &err), 0);
	assert_string_equal(b.data,
		"{\"event\":\"gave-up\",\"id\":\"evt_0123\",\"stack\":\"research\",\"address\":\"job.train\","
		"\"run\":1,\"attempt\":3,\"rung\":2,\"state\":\"JOB_STATE_FAILED\",\"class\":\"user-error\","
		"\"message\":\"The replica workerpool0-0 exited with a non-zero status of 1.?[2J\","
		"\"job\":\"" JOB "\",\"console\":\"https://console.cloud.google.com/ai/platform/locations/"
		"us-central1/training/4606268999515242496?project=p1\",\"time\":\"2026-11-18T11:06:40Z\"}");
	vx_buf_release(&b);

	/* A quota event: no run, no job. */
	ev = (struct notify_event){ .kind = NOTIFY_QUOTA_GRANTED, .stack = "s", .address = "quota.q",
				    .state = "granted", .time_ms = 1795000000123 };
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_JSON, &ev, "evt_1", &err), 0);
	assert_string_equal(b.data,
		"{\"event\":\"quota-granted\",\"id\":\"evt_1\",\"stack\":\"s\",\"address\":\"quota.q\",\"run\":null,"
		"\"attempt\":null,\"rung\":0,\"state\":\"granted\",\"class\":null,\"message\":null,\"job\":null,"
		"\"console\":null,\"time\":\"2026-11-18T11:06:40.123Z\"}");
	vx_buf_release(&b);
}

static void test_slack_body(void **unused)
{
	struct notify_event ev = gave_up();
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	ev.message = "a < b & c > d";
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
	assert_string_equal(b.data,
		"{\"text\":\"research: job.train gave up\",\"blocks\":[{\"type\":\"section\",\"text\":"
		"{\"type\":\"mrkdwn\",\"text\":\"*research: job.train gave up*\\nrun 1, attempt 3, rung 2"
		"\\nstate: JOB_STATE_FAILED\\nclass: user-error\\n```a &lt; b &amp; c &gt; d```"
		"\\n<https://console.cloud.google.com/ai/platform/locations/us-central1/training/"
		"4606268999515242496?project=p1|Open in the Cloud Console>"
		"\\n2026-11-18T11:06:40Z · evt_0123\"}}]}");
	vx_buf_release(&b);
}

/* A booking's and a resource's events: headline and facts, no run, no console link. */
static void test_slack_body_booking_and_resource(void **unused)
{
	struct notify_event ev = {
		.kind = 1u << 10, /* window-closing */
		.stack = "research",
		.address = "future_reservation.gpus",
		.state = "FULFILLED",
		.key = "2026-01-08T09:00:00Z",
		.time_ms = 1768287600000,
		.message = "the window closes at 2026-01-13T09:00:00Z: Google ends the runs still on reservation gpus then",
	};
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
	assert_string_equal(b.data,
			    "{\"text\":\"research: future_reservation.gpus window closing\",\"blocks\":[{\"type\":\"section\","
			    "\"text\":{\"type\":\"mrkdwn\",\"text\":\"*research: future_reservation.gpus window closing*"
			    "\\nstate: FULFILLED\\n```the window closes at 2026-01-13T09:00:00Z: Google ends the runs still on "
			    "reservation gpus then```\\n2026-01-13T07:00:00Z · evt_0123\"}}]}");
	vx_buf_reset(&b);
	ev.kind = 1u << 12; /* resource-error */
	ev.address = "persistent_resource.eval-pool";
	ev.state = "ERROR";
	ev.message = "machines lost";
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
	assert_string_equal(b.data,
			    "{\"text\":\"research: persistent_resource.eval-pool is in ERROR\",\"blocks\":[{\"type\":\"section\","
			    "\"text\":{\"type\":\"mrkdwn\",\"text\":\"*research: persistent_resource.eval-pool is in ERROR*"
			    "\\nstate: ERROR\\n```machines lost```\\n2026-01-13T07:00:00Z · evt_0123\"}}]}");
	vx_buf_release(&b);
	/* Each new event has its headline: none falls through to an empty one. */
	for (unsigned k = 7; k <= 13; k++) {
		ev.kind = 1u << k;
		vx_buf_reset(&b);
		assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
		assert_null(strstr(b.data, "eval-pool \""));
	}
	vx_buf_release(&b);
}

/* A long message (Vertex appends the log tail) is cut to Slack's limits: no
 * text object over 3,000 characters, at most 50 blocks; json keeps it whole. */
static void test_slack_body_long(void **unused)
{
	struct notify_event ev = gave_up();
	struct vx_buf b = VX_BUF_INIT, want = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *m = malloc(200001), *x = malloc(2994), *y = malloc(507);
	cJSON *o, *blocks, *bl;

	(void)unused;
	assert_non_null(m);
	assert_non_null(x);
	assert_non_null(y);
	/* 3,500 characters, an '&' where the first cut falls: never cut inside "&amp;". */
	memset(m, 'x', 2993);
	m[2993] = '&';
	memset(m + 2994, 'y', 506);
	m[3500] = '\0';
	memset(x, 'x', 2993);
	x[2993] = '\0';
	memset(y, 'y', 506);
	y[506] = '\0';
	ev.message = m;
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
	assert_int_equal(vx_buf_printf(&want,
		"{\"text\":\"research: job.train gave up\",\"blocks\":["
		"{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":\"*research: job.train gave up*"
		"\\nrun 1, attempt 3, rung 2\\nstate: JOB_STATE_FAILED\\nclass: user-error\"}},"
		"{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":\"```%s```\"}},"
		"{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":\"```&amp;%s```\"}},"
		"{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":"
		"\"<https://console.cloud.google.com/ai/platform/locations/us-central1/training/"
		"4606268999515242496?project=p1|Open in the Cloud Console>"
		"\\n2026-11-18T11:06:40Z · evt_0123\"}}]}", x, y), 0);
	assert_string_equal(b.data, want.data);
	vx_buf_release(&b);
	/* The json format carries all of it. */
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_JSON, &ev, "evt_0123", &err), 0);
	o = cJSON_Parse(b.data);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "message")->valuestring, m);
	cJSON_Delete(o);
	vx_buf_release(&b);
	/* 200,000 characters: 50 blocks, each text within 3,000, the cut said. */
	memset(m, 'z', 200000);
	m[200000] = '\0';
	assert_int_equal(notify_body(&b, NOTIFY_FORMAT_SLACK, &ev, "evt_0123", &err), 0);
	o = cJSON_Parse(b.data);
	assert_non_null(o);
	blocks = cJSON_GetObjectItem(o, "blocks");
	assert_int_equal(cJSON_GetArraySize(blocks), 50);
	cJSON_ArrayForEach(bl, blocks) {
		const char *t = cJSON_GetObjectItem(cJSON_GetObjectItem(bl, "text"), "text")->valuestring;

		assert_true(strlen(t) <= 3000);
	}
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(blocks, 48), "text")->child->next->valuestring,
			       "_(cut to Slack's limits: the json format carries the whole message)_"));
	cJSON_Delete(o);
	vx_buf_release(&b);
	vx_buf_release(&want);
	free(m);
	free(x);
	free(y);
}

/* The example of the Standard Webhooks specification (its test vector). */
static void test_signature_vector(void **unused)
{
	unsigned char *key = NULL;
	size_t klen = 0;
	char *sig = NULL;
	struct vx_err err = VX_ERR_INIT;
	const char *body = "{\"test\": 2432232314}";

	(void)unused;
	assert_int_equal(notify_secret_key(&key, &klen, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &err), 0);
	assert_int_equal(klen, 24);
	assert_int_equal(notify_signature(&sig, key, klen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
					  strlen(body), &err), 0);
	assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	free(sig);
	free(key);
}

static void test_bad_secrets(void **unused)
{
	static const char *const bad[] = {
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  /* no prefix */
		"whsec_",                           /* empty */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", /* length */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-w", /* base64url is not what the standard uses */
		"whsec_====",
		"whsec_ab=c",
	};
	static unsigned char junk[1];
	unsigned char *key = junk;
	size_t klen = 9;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(notify_secret_key(&key, &klen, bad[i], &err), VX_EINVAL);
		assert_null(key);
		assert_int_equal(klen, 0);
		/* The message never quotes the secret. */
		assert_null(strstr(vx_err_msg(&err), "MfKQ"));
		vx_err_release(&err);
	}
	/* Padding is fine where base64 puts it. */
	assert_int_equal(notify_secret_key(&key, &klen, "whsec_YWJjZA==", &err), 0);
	assert_int_equal(klen, 4);
	assert_memory_equal(key, "abcd", 4);
	free(key);
}

/* Which events a plan shows: a run that gave up, one that succeeded, one stuck. */
static void test_collect(void **unused)
{
	struct stack_job jobs[5];
	struct plan_decl decls[5];
	struct plan_run runs[5];
	struct plan_record recs[5];
	struct plan_action acts[6];
	struct job_action jacts[6]; /* acts[i]'s job fields (payload) */
	struct plan p = PLAN_INIT;
	struct notify_list l = { NULL, 0 };
	const int64_t now = 1795000000000, h = 3600 * 1000;
	static const char *const addr[] = { "job.a", "job.b", "job.c", "job.d", "job.e" };
	static const char *const st[] = { "JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED", "JOB_STATE_QUEUED",
					  "JOB_STATE_RUNNING", "JOB_STATE_FAILED" };

	(void)unused;
	memset(jobs, 0, sizeof(jobs));
	memset(decls, 0, sizeof(decls));
	memset(runs, 0, sizeof(runs));
	memset(recs, 0, sizeof(recs));
	memset(acts, 0, sizeof(acts));
	memset(jacts, 0, sizeof(jacts));
	for (int i = 0; i < 5; i++) {
		jobs[i].stuck_after_ms = 6 * h;
		decls[i].address = addr[i];
		acts[i].kdecl = &jobs[i];
		runs[i].name = JOB;
		runs[i].attempt = 2;
		runs[i].rung = 1;
		runs[i].created_ms = now - 7 * h;
		runs[i].end_ms = i == 0 || i == 1 ? now - h : i == 4 ? now - 48 * h : 0;
		recs[i].address = addr[i];
		recs[i].run = 3;
		recs[i].current = &runs[i];
		acts[i].op = PLAN_NOOP;
		acts[i].address = (char *)(uintptr_t)addr[i];
		acts[i].payload = &jacts[i];
		job_action_mut(&acts[i])->decl = &decls[i];
		job_action_mut(&acts[i])->record = &recs[i];
		job_action_mut(&acts[i])->live_state = (char *)(uintptr_t)st[i];
	}
	job_action_mut(&acts[0])->failure_class = (char *)(uintptr_t) "user-error";
	job_action_mut(&acts[0])->error_message = (char *)(uintptr_t) "exit 1";
	/* Ended two days ago: before since, not announced. */
	job_action_mut(&acts[4])->failure_class = (char *)(uintptr_t) "stockout";
	/* A resubmission is planned: nothing to say yet. */
	acts[5] = acts[0];
	acts[5].op = PLAN_RESUBMIT;
	p.actions = acts;
	p.n = 6;
	assert_int_equal(notify_collect(&l, &p, "research", now, now - 24 * h), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.items[0].kind, NOTIFY_GAVE_UP);
	assert_string_equal(l.items[0].address, "job.a");
	assert_string_equal(l.items[0].cls, "user-error");
	assert_string_equal(l.items[0].message, "exit 1");
	assert_int_equal(l.items[0].run, 3);
	assert_int_equal(l.items[0].attempt, 2);
	assert_int_equal(l.items[0].rung, 1);
	assert_int_equal(l.items[0].time_ms, now - h);
	assert_int_equal(l.items[1].kind, NOTIFY_SUCCEEDED);
	assert_string_equal(l.items[1].address, "job.b");
	assert_int_equal(l.items[2].kind, NOTIFY_STUCK);
	assert_string_equal(l.items[2].address, "job.c");
	assert_int_equal(l.items[2].time_ms, now - h);
	notify_list_release(&l);
	/* Queued for less than stuckAfter: not stuck. */
	jobs[2].stuck_after_ms = 8 * h;
	assert_int_equal(notify_collect(&l, &p, "research", now, now - 24 * h), 0);
	assert_int_equal(l.n, 2);
	notify_list_release(&l);
}

/* ---- sending ---- */

struct hook {
	struct provider base;
	int posts;
	long status;            /* what the receiver answers */
	char url[128], headers[4][160], body[2048];
};

static int hook_post(struct provider *p, const struct provider_webhook *req, long *status, struct vx_err *err)
{
	struct hook *h = (struct hook *)(void *)p;

	(void)err;
	h->posts++;
	snprintf(h->url, sizeof(h->url), "%s", req->url);
	memset(h->headers, 0, sizeof(h->headers));
	for (int i = 0; req->headers && req->headers[i] && i < 4; i++)
		snprintf(h->headers[i], sizeof(h->headers[i]), "%s", req->headers[i]);
	snprintf(h->body, sizeof(h->body), "%.*s", (int)req->body_len, req->body);
	*status = h->status;
	return 0;
}

/* The state's record of deliveries, and the environment. */
struct book {
	char keys[16][NOTIFY_KEY_LEN + 1];
	int n;
	int refuse;             /* record fails (the lease is another's) */
	const char *url, *secret;
};

static int book_delivered(void *ud, const char *key)
{
	struct book *b = ud;

	for (int i = 0; i < b->n; i++)
		if (!strcmp(b->keys[i], key))
			return 1;
	return 0;
}

static int book_record(void *ud, const char *key, int64_t at)
{
	struct book *b = ud;

	(void)at;
	if (b->refuse)
		return VX_ECONFLICT;
	assert_true(b->n < 16);
	snprintf(b->keys[b->n++], NOTIFY_KEY_LEN + 1, "%s", key);
	return 0;
}

static const char *book_env(void *ud, const char *name)
{
	struct book *b = ud;

	if (!strcmp(name, "HOOK"))
		return b->url;
	if (!strcmp(name, "SECRET"))
		return b->secret;
	return NULL;
}

static void test_send_once_signed(void **unused)
{
	struct stack_notify targets[2];
	struct stack st;
	struct hook h;
	struct book b;
	struct notify_outbox *ob;
	struct notify_report rep;
	struct notify_list l = { NULL, 0 };
	struct notify_sink sink = { .delivered = book_delivered, .record = book_record, .getenv = book_env,
				    .allow_loopback = 1, .ud = &b };
	struct notify_event ev = gave_up(), ok = gave_up();
	struct vx_err err = VX_ERR_INIT;
	int64_t now = 1795000000000;
	char id[NOTIFY_ID_LEN + 1], want[96], *sig = NULL;
	unsigned char *key = NULL;
	size_t klen;

	(void)unused;
	memset(targets, 0, sizeof(targets));
	memset(&st, 0, sizeof(st));
	memset(&h, 0, sizeof(h));
	memset(&b, 0, sizeof(b));
	targets[0].url_env = (char *)(uintptr_t)"HOOK";
	targets[0].secret_env = (char *)(uintptr_t)"SECRET";
	targets[0].format = NOTIFY_FORMAT_JSON;
	targets[0].on = NOTIFY_GAVE_UP;
	/* The second target wants succeeded only. */
	targets[1].url = (char *)(uintptr_t)"https://ops.example.com/vx";
	targets[1].format = NOTIFY_FORMAT_SLACK;
	targets[1].on = NOTIFY_SUCCEEDED;
	st.notify = targets;
	st.nnotify = 2;
	h.base.post_webhook = hook_post;
	h.status = 204;
	b.url = "http://127.0.0.1:9/hook";
	b.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	ok.kind = NOTIFY_SUCCEEDED;
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_list_add(&l, &ok), 0);
	assert_int_equal(notify_outbox_new(&ob), 0);

	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 2);
	assert_int_equal(rep.n, 2);
	assert_true(rep.items[0].sent && rep.items[1].sent);
	assert_int_equal(b.n, 2);
	notify_report_release(&rep);
	/* The last post was the Slack one; check the signed one by forgetting its record. */
	memcpy(b.keys[0], b.keys[1], sizeof(b.keys[0]));
	b.n = 1;
	l.n = 1;
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	notify_report_release(&rep);
	assert_int_equal(notify_event_id(id, &ev), 0);
	assert_string_equal(h.url, "http://127.0.0.1:9/hook");
	snprintf(want, sizeof(want), "webhook-id: %s", id);
	assert_string_equal(h.headers[0], want);
	assert_string_equal(h.headers[1], "webhook-timestamp: 1795000000");
	assert_int_equal(notify_secret_key(&key, &klen, b.secret, &err), 0);
	assert_int_equal(notify_signature(&sig, key, klen, id, 1795000000, h.body, strlen(h.body), &err), 0);
	snprintf(want, sizeof(want), "webhook-signature: %s", sig);
	assert_string_equal(h.headers[2], want);
	free(sig);
	free(key);
	/* Recorded: never again, however often it is seen. */
	h.posts = 0;
	l.n = 2;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + i * 60000, 10, &err), 0);
		assert_int_equal(rep.n, 0);
		notify_report_release(&rep);
	}
	assert_int_equal(h.posts, 0);
	notify_outbox_free(ob);
	notify_list_release(&l);
}

/* A stack with the one target t, a receiver h that answers status, an empty book b. */
static void one_target(struct stack_notify *t, struct stack *st, struct hook *h, struct book *b, long status)
{
	memset(t, 0, sizeof(*t));
	memset(st, 0, sizeof(*st));
	memset(h, 0, sizeof(*h));
	memset(b, 0, sizeof(*b));
	st->notify = t;
	st->nnotify = 1;
	h->base.post_webhook = hook_post;
	h->status = status;
}

/* A failure is tried again after a backoff, not every cycle; a bad target never gets a request. */
static void test_send_backoff(void **unused)
{
	struct stack_notify t;
	struct stack st;
	struct hook h;
	struct book b;
	struct notify_outbox *ob;
	struct notify_report rep;
	struct notify_list l = { NULL, 0 };
	struct notify_sink sink = { .delivered = book_delivered, .record = book_record, .getenv = book_env,
				    .allow_loopback = 1, .ud = &b };
	struct notify_event ev = gave_up();
	struct vx_err err = VX_ERR_INIT;
	int64_t now = 1795000000000;

	(void)unused;
	one_target(&t, &st, &h, &b, 503);
	t.url_env = (char *)(uintptr_t)"HOOK";
	t.format = NOTIFY_FORMAT_JSON;
	t.on = notify_all();
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_outbox_new(&ob), 0);
	/* Unset: said, not sent. */
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 0);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.items[0].why, "HOOK is not set");
	notify_report_release(&rep);
	/* Not an https URL: refused, not sent. */
	b.url = "http://example.com/x";
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + 31000, 10, &err), 0);
	assert_int_equal(h.posts, 0);
	assert_string_equal(rep.items[0].why, "HOOK: plain http:// to another machine: use https://");
	notify_report_release(&rep);
	b.url = "https://hooks.example.com/T0/secret";
	now += 31000 + 61000;
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 1);
	assert_string_equal(rep.items[0].why, "the receiver answered HTTP 503");
	assert_int_equal(rep.pending, 1);
	notify_report_release(&rep);
	/* Within the backoff (2 minutes after three tries): nothing is sent. */
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + 100000, 10, &err), 0);
	assert_int_equal(h.posts, 1);
	assert_int_equal(rep.n, 0);
	assert_int_equal(rep.pending, 1);
	notify_report_release(&rep);
	h.status = 200;
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + 121000, 10, &err), 0);
	assert_int_equal(h.posts, 2);
	assert_true(rep.items[0].sent);
	assert_int_equal(b.n, 1);
	notify_report_release(&rep);
	/* max_sends bounds a cycle's requests. */
	b.n = 0;
	ev.attempt = 9;
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + 200000, 1, &err), 0);
	assert_int_equal(h.posts, 3);
	assert_int_equal(rep.pending, 1);
	notify_report_release(&rep);
	notify_outbox_free(ob);
	notify_list_release(&l);
}

/* Tried for a day at most: then dropped, and recorded so nobody tries again. */
static void test_send_gives_up(void **unused)
{
	struct stack_notify t;
	struct stack st;
	struct hook h;
	struct book b;
	struct notify_outbox *ob;
	struct notify_report rep;
	struct notify_list l = { NULL, 0 };
	struct notify_sink sink = { .delivered = book_delivered, .record = book_record, .getenv = book_env,
				    .allow_loopback = 1, .ud = &b };
	struct notify_event ev = gave_up();
	struct vx_err err = VX_ERR_INIT;
	int64_t now = 1795000000000;
	int tries = 0, dropped = 0;

	(void)unused;
	one_target(&t, &st, &h, &b, 500);
	t.url = (char *)(uintptr_t)"https://ops.example.com/vx";
	t.on = NOTIFY_GAVE_UP;
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_outbox_new(&ob), 0);
	for (int i = 0; i < 200 && !dropped; i++, now += 60000) {
		assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
		for (size_t k = 0; k < rep.n; k++) {
			tries++;
			dropped |= rep.items[k].dropped;
		}
		notify_report_release(&rep);
	}
	assert_int_equal(tries, 12);
	assert_true(dropped);
	assert_int_equal(b.n, 1);
	notify_outbox_free(ob);
	notify_list_release(&l);
}


/* The host posted to is the host libcurl parses, compared exactly. */
static void test_url_parse(void **unused)
{
	static const struct {
		const char *url, *why;
		int loopback, slack;
	} cases[] = {
		{ "https://ops.example.com/vx", NULL, 0, 0 },
		{ "http://127.0.0.1:9/hook", NULL, 1, 0 },
		{ "http://127.9.8.7/", NULL, 1, 0 },
		{ "http://localhost/", NULL, 1, 0 },
		{ "http://LOCALHOST./x", NULL, 1, 0 },
		{ "http://[::1]:8080/x", NULL, 1, 0 },
		{ "http://[::ffff:127.0.0.1]/x", NULL, 1, 0 },
		{ "http://0.0.0.0:9/x", NULL, 1, 0 },
		{ "http://0.1.2.3/x", NULL, 1, 0 },
		{ "http://[::]:9/x", NULL, 1, 0 },
		{ "http://[::ffff:0.0.0.0]/x", NULL, 1, 0 },
		{ "https://127.0.0.1/x", NULL, 1, 0 },
		{ "http://localhost.attacker.example/", "plain http:// to another machine: use https://", 0, 0 },
		{ "http://127.attacker.example/", "plain http:// to another machine: use https://", 0, 0 },
		{ "http://128.0.0.1/", "plain http:// to another machine: use https://", 0, 0 },
		{ "http://[::2]/", "plain http:// to another machine: use https://", 0, 0 },
		{ "http://localhost:80@127.0.0.2:18184/x", "credentials in the URL (user:password@): vx sends none", 0, 0 },
		{ "https://user@ops.example.com/", "credentials in the URL (user:password@): vx sends none", 0, 0 },
		{ "https://HOOKS.SLACK.COM/services/T/B/x", NULL, 0, 1 },
		{ "https://hooks.slack.com./services/T/B/x", NULL, 0, 1 },
		{ "https://hooks.slack.com:443/services/T/B/x", NULL, 0, 1 },
		{ "ftp://ops.example.com/", "not an https:// URL", 0, 0 },
		{ "ops.example.com/x", "not a URL", 0, 0 },
	};

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct notify_url nu;
		const char *why = notify_url_parse(&nu, cases[i].url);

		if (!cases[i].why != !why || (why && strcmp(why, cases[i].why)))
			fail_msg("%s: %s, want %s", cases[i].url, why ? why : "ok", cases[i].why ? cases[i].why : "ok");
		if (!why && (nu.loopback != cases[i].loopback || nu.slack != cases[i].slack))
			fail_msg("%s: loopback %d slack %d", cases[i].url, nu.loopback, nu.slack);
	}
}

/* A name is this machine when any address it resolves to is: localhost is in every
 * hosts file; an address is its own answer; a TEST-NET address is elsewhere. */
static void test_host_here(void **unused)
{
	(void)unused;
	assert_true(notify_host_here("localhost"));
	assert_true(notify_host_here("127.0.0.2"));
	assert_true(notify_host_here("0.0.0.0"));
	assert_true(notify_host_here("::1"));
	assert_false(notify_host_here("192.0.2.1"));
	assert_false(notify_host_here(""));
	assert_false(notify_host_here(NULL));
}

static int stub_here(const char *host)
{
	return !strcasecmp(host, "hook.example");
}

/* A name that resolves to this machine is refused as localhost is, before anything is sent. */
static void test_send_name_resolving_here(void **unused)
{
	struct stack_notify t;
	struct stack st;
	struct hook h;
	struct book b;
	struct notify_outbox *ob;
	struct notify_report rep;
	struct notify_list l = { NULL, 0 };
	struct notify_sink sink = { .delivered = book_delivered, .record = book_record, .getenv = book_env, .ud = &b, .host_here = stub_here };
	struct notify_event ev = gave_up();
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	one_target(&t, &st, &h, &b, 204);
	t.url_env = (char *)(uintptr_t) "HOOK";
	t.on = notify_all();
	b.url = "https://HOOK.example./x";
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_outbox_new(&ob), 0);
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, 1795000000000, 10, &err), 0);
	assert_int_equal(h.posts, 0);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.items[0].why, "HOOK: its host resolves to this machine (loopback): nothing is sent "
					      "to it unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in vx's environment");
	notify_report_release(&rep);
	notify_outbox_free(ob);
	/* With the variable, it is sent. */
	sink.allow_loopback = 1;
	assert_int_equal(notify_outbox_new(&ob), 0);
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, 1795000000000, 10, &err), 0);
	assert_int_equal(h.posts, 1);
	notify_report_release(&rep);
	notify_outbox_free(ob);
	notify_list_release(&l);
}

/* This machine only with the variable; one try per target per call; a delivery
 * that cannot be recorded is not sent again, and is recorded at the next call. */
static void test_send_loopback_one_try_and_record_later(void **unused)
{
	struct stack_notify t;
	struct stack st;
	struct hook h;
	struct book b;
	struct notify_outbox *ob;
	struct notify_report rep;
	struct notify_list l = { NULL, 0 };
	struct notify_sink sink = { .delivered = book_delivered, .record = book_record, .getenv = book_env, .ud = &b };
	struct notify_event ev = gave_up(), ev2 = gave_up();
	struct vx_err err = VX_ERR_INIT;
	int64_t now = 1795000000000;

	(void)unused;
	one_target(&t, &st, &h, &b, 503);
	t.url_env = (char *)(uintptr_t)"HOOK";
	t.on = notify_all();
	b.url = "http://127.0.0.1:9/hook";
	ev2.attempt = 7;
	assert_int_equal(notify_list_add(&l, &ev), 0);
	assert_int_equal(notify_list_add(&l, &ev2), 0);
	assert_int_equal(notify_outbox_new(&ob), 0);
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 0);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.items[0].why, "HOOK: a target on this machine (loopback): nothing is sent to it "
			    "unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in vx's environment");
	notify_report_release(&rep);
	notify_outbox_free(ob);
	/* Allowed: the first try fails, the second event waits for the next call. */
	sink.allow_loopback = 1;
	assert_int_equal(notify_outbox_new(&ob), 0);
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 1);
	assert_int_equal(rep.n, 1);
	assert_int_equal(rep.pending, 2);
	notify_report_release(&rep);
	/* The receiver is back but the record fails: sent once, not again. */
	h.status = 204;
	b.refuse = 1;
	now += 31000;
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now, 10, &err), 0);
	assert_int_equal(h.posts, 3);
	assert_int_equal(rep.n, 2);
	assert_true(rep.items[0].sent && rep.items[0].unrecorded && rep.items[1].sent && rep.items[1].unrecorded);
	notify_report_release(&rep);
	assert_int_equal(b.n, 0);
	b.refuse = 0;
	assert_int_equal(notify_send(&rep, ob, &h.base, &st, &l, &sink, now + 1000, 10, &err), 0);
	assert_int_equal(h.posts, 3);
	assert_int_equal(b.n, 2);
	notify_report_release(&rep);
	notify_outbox_free(ob);
	notify_list_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_kind_bits_fixed),
		cmocka_unit_test(test_event_id_stable),
		cmocka_unit_test(test_console_url),
		cmocka_unit_test(test_json_body),
		cmocka_unit_test(test_slack_body),
		cmocka_unit_test(test_slack_body_booking_and_resource),
		cmocka_unit_test(test_signature_vector),
		cmocka_unit_test(test_bad_secrets),
		cmocka_unit_test(test_collect),
		cmocka_unit_test(test_send_once_signed),
		cmocka_unit_test(test_send_backoff),
		cmocka_unit_test(test_send_gives_up),
		cmocka_unit_test(test_url_parse),
		cmocka_unit_test(test_slack_body_long),
		cmocka_unit_test(test_send_loopback_one_try_and_record_later),
		cmocka_unit_test(test_host_here),
		cmocka_unit_test(test_send_name_resolving_here),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
