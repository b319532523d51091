#ifndef VX_RECONCILE_NOTIFY_H
#define VX_RECONCILE_NOTIFY_H

/*
 * Notifications: what vx tells people through webhooks (`notify:` in the
 * Stack, docs/format.md) when a run gives up, is resubmitted, succeeds or
 * is stuck, when a quota preference is granted or denied, and when the
 * watcher keeps failing.
 *
 * This module only builds: an event's stable id, its body (our JSON, or
 * Slack's incoming-webhook Block Kit text) and the Standard Webhooks 1.0
 * headers (webhook-id, webhook-timestamp, webhook-signature: "v1,<base64
 * HMAC-SHA256 of 'id.timestamp.body'>", the key being the base64 part of
 * the "whsec_..." secret). Sending, retrying and remembering which ids were
 * delivered belong to the caller, which owns the network and the state.
 *
 * Every text an event carries may come from a server (a job's error
 * message, its resource name): the bodies carry them cleaned of control
 * characters (util/text.h) and JSON-escaped, never raw.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_buf;

/*
 * The events every stack has, as bits: `on:` of a notify target is a mask
 * of them and of each kind's own (struct kind's events: a booking's
 * window, a resource in ERROR). A bit is fixed for good: it enters each
 * applied target's digest (notify_target_digest), so a bit that moved
 * would make every applied target look unapplied. A kind row names its
 * events with bits no other event uses (tests/unit/test_notify.c checks
 * every event of kind_table against a fixed list).
 */
enum notify_kind {
	NOTIFY_GAVE_UP = 1u << 0,	/* "gave-up": failed and will not be resubmitted */
	NOTIFY_RESUBMITTED = 1u << 1,	/* "resubmitted" */
	NOTIFY_SUCCEEDED = 1u << 2,	/* "succeeded" */
	NOTIFY_STUCK = 1u << 3,		/* "stuck": queued or pending past stuckAfter */
	NOTIFY_QUOTA_GRANTED = 1u << 4, /* "quota-granted" */
	NOTIFY_QUOTA_DENIED = 1u << 5,	/* "quota-denied" */
	NOTIFY_WATCH_ERROR = 1u << 6,	/* "watch-error": the same error 5 cycles in a row */
	/* 7 to 13: the booking's and the persistent resource's (their rows) */
	NOTIFY_BUDGET_SPENT = 1u << 14, /* "budget-exhausted": the watcher holds a run past the budget */
	NOTIFY_BUDGET = 1u << 15,	/* "budget": the period's spend passed a warnAt threshold */
};

/* One event: its bit, its name in `notify: on:` and what its headline says
 * after the address ("is in ERROR"). */
struct notify_event_kind {
	unsigned bit;
	const char *name;
	const char *what;
};

/* Events there can be at most (bits of an unsigned). */
#define NOTIFY_MAX_KINDS 32

/*
 * Every event, those above and each kind's, in bit order, into out (up to
 * max); how many there are. notify_all() is their bits together.
 */
size_t notify_kinds(const struct notify_event_kind **out, size_t max);
unsigned notify_all(void);

/* The name of one event (a single bit), or NULL. */
const char *notify_kind_name(unsigned kind);
/* The bit of an event name, or 0 when unknown. */
unsigned notify_kind_parse(const char *name);

enum notify_format {
	NOTIFY_FORMAT_JSON = 1, /* "json": the event as one JSON object */
	NOTIFY_FORMAT_SLACK,    /* "slack": Slack incoming-webhook text and blocks */
};

/* "json", "slack"; NULL for an unknown value. */
const char *notify_format_name(enum notify_format f);

/*
 * One event. Strings are borrowed; NULL (or 0 for numbers) where it does
 * not apply: a quota event has no run, a watch-error no address.
 */
struct notify_event {
	unsigned kind;          /* one NOTIFY_* bit */
	const char *stack;
	const char *address;    /* "job.train" */
	int64_t run;            /* the declaration's run, 0 = none */
	int64_t attempt;        /* 0 = none */
	int64_t rung;           /* the ladder rung, 0 = the declared job */
	const char *state;      /* JOB_STATE_FAILED, or a quota preference's state */
	const char *cls;        /* failure class, or NULL */
	const char *message;    /* already redacted by the caller; cleaned here */
	const char *job;        /* projects/P/locations/R/customJobs/ID, or NULL */
	const char *key;        /* what else makes the event one (a stuck run's create
				 * time, a watch error's first cycle); NULL = nothing */
	int64_t time_ms;        /* when it happened (Unix ms) */
	/* Strings made for the event (its message, its key), which a
	 * notify_list it is added to owns; NULL: none. */
	char *owned[2];
	/* Its deliveries are remembered until then at least (a budget's
	 * threshold: the period's end, so it is told once per period); 0: the
	 * state's usual week (STATE_NOTIFIED_KEEP_MS). */
	int64_t keep_until_ms;
};

/* Runs that ended this long before a watcher started (or before an apply) are
 * announced; older ones are not: a watcher started on an old stack does not
 * report last month, and what the state records as delivered (kept a week)
 * always covers what may still be announced. */
#define NOTIFY_LOOKBACK_MS ((int64_t)24 * 3600 * 1000)

/* "evt_" and 32 lowercase hex digits. */
#define NOTIFY_ID_LEN 36

/*
 * The event's id: the same for the same event whoever sees it (a second
 * watcher, a restarted one), so receivers and the state can tell a resend
 * from a new event. A hash of the event's name, stack, address, run,
 * attempt, rung, job and key; not of its time or message.
 */
int notify_event_id(char out[NOTIFY_ID_LEN + 1], const struct notify_event *ev) VX_WUR;

/*
 * The Cloud Console page of a custom job, from its resource name
 * (projects/P/locations/R/customJobs/ID, checked). NULL when name is not
 * one; caller frees.
 */
char *notify_console_url(const char *job);

/*
 * Appends the request body for ev in format f. id is ev's id
 * (notify_event_id). JSON: {"event", "id", "stack", "address", "run",
 * "attempt", "rung", "state", "class", "message", "job", "console", "time"}
 * with absent values as null and time as RFC 3339 UTC. Slack: {"text",
 * "blocks"} with the same facts. Returns 0 or VX_E*.
 */
int notify_body(struct vx_buf *out, enum notify_format f, const struct notify_event *ev,
		const char *id, struct vx_err *err) VX_WUR;

/*
 * Decodes a Standard Webhooks secret, "whsec_" and standard base64, into
 * its key. *out (caller frees) is at least 1 byte. VX_EINVAL with a message
 * that never quotes the secret when it is malformed.
 */
int notify_secret_key(unsigned char **out, size_t *out_len, const char *secret,
		      struct vx_err *err) VX_WUR;

/*
 * The webhook-signature header's value: "v1," and the standard base64 of
 * HMAC-SHA256(key, id "." timestamp "." body). *out caller frees.
 */
int notify_signature(char **out, const unsigned char *key, size_t key_len, const char *id,
		     int64_t timestamp, const char *body, size_t body_len, struct vx_err *err) VX_WUR;

/* ---- Where a notification may go ---- */

/* A webhook URL as libcurl's URL API (CURLU) parses it, which is how it is sent. */
struct notify_url {
	int loopback;	   /* the host is this machine: 127.0.0.0/8, ::1 (or a v4-mapped
			    * 127/8), 0.0.0.0/8 or :: (which reach it too), localhost or a
			    * name under .localhost */
	char host[256];	   /* the host as parsed (no brackets, no trailing dots), "" when longer */
	int query;         /* it has a query string */
	int slack;         /* the host is hooks.slack.com (any case, trailing dots) */
};

/*
 * Whether u may be posted to at all: a URL libcurl parses, https (or http
 * to this machine), with a host and without userinfo (user:password@, which
 * libcurl would send as Basic auth). NULL with *out filled, or what is
 * wrong (a static sentence that never quotes u, which may be a secret).
 * Hosts are compared as parsed, case-insensitively, without trailing dots;
 * a name is never resolved here (notify_host_here does, before a send).
 */
const char *notify_url_parse(struct notify_url *out, const char *u);

/*
 * Whether host (a name) resolves to this machine: any of its addresses is
 * loopback (127/8, ::1) or unspecified (0.0.0.0/8, ::). A name that does not
 * resolve here is not (behind a proxy the proxy resolves it). Checked
 * right before each send, so a name pointed at 127.0.0.1 is refused as
 * "localhost" is; a name that changes its answer in between (DNS
 * rebinding) is not caught.
 */
int notify_host_here(const char *host);

/* The variable that lets vx post to this machine (notify_url.loopback). */
#define NOTIFY_LOOPBACK_ENV "VX_NOTIFY_ALLOW_LOOPBACK"

/* The digest that names a target as applied (the state's notifyTargets):
 * 32 lowercase hex of a hash of its url or urlEnv, format, secretEnv and
 * on, so a change to any of them is a target not applied yet. */
#define NOTIFY_TARGET_LEN 32
struct stack_notify;
int notify_target_digest(char out[NOTIFY_TARGET_LEN + 1], const struct stack_notify *t) VX_WUR;

/* ---- Which events a plan shows ---- */

struct plan;

struct notify_list {
	struct notify_event *items; /* strings borrowed from the plan, its inputs and the stack */
	size_t n;
};

/*
 * The events the plan p shows about the stack's jobs, as they are now:
 *  - gave-up: the current run failed and the plan resubmits nothing (the
 *    class is not in resubmit.on, or the attempts or the ladder are spent);
 *  - succeeded: the current run succeeded;
 *  - stuck: the current run is queued or pending past its job's stuckAfter
 *    (the declaration, struct stack_job, is each job action's kdecl);
 *  - what other kinds' actions stand for (struct kind's notify slot: a
 *    booking's window opened, closing or closed, a resource in ERROR).
 * Only runs that ended (gave-up, succeeded) at since_ms or later, so a
 * watcher started on an old stack does not announce last month. The
 * resubmissions an apply made are reported by the caller, which knows
 * which ones went through. Appends to out; 0 or VX_ENOMEM.
 */
int notify_collect(struct notify_list *out, const struct plan *p, const char *stack, int64_t now_ms,
		   int64_t since_ms) VX_WUR;
/* Appends one event (borrowed strings, but ev->owned's, which the list
 * takes: freed by notify_list_release, or here when it fails). 0 or VX_ENOMEM. */
int notify_list_add(struct notify_list *l, const struct notify_event *ev) VX_WUR;
void notify_list_release(struct notify_list *l);

/* ---- Sending (notify_send.c) ---- */

struct provider;
struct stack;
struct stack_notify;
struct notify_outbox;

/* "evt_...:" and 8 hex digits of the target: what the state records as delivered. */
#define NOTIFY_KEY_LEN (NOTIFY_ID_LEN + 9)

/* The delivery key of event id to target t: the id, ":" and 8 hex digits
 * of a hash of the target's URL or variable. 0 or VX_E*. */
int notify_delivery_key(char out[NOTIFY_KEY_LEN + 1], const char *id, const struct stack_notify *t) VX_WUR;

/*
 * Where a sender learns what was delivered (the state, shared by every
 * watcher and apply of the stack) and reads the environment (the command's:
 * library code never calls getenv).
 *
 * record is called right after each delivery (a 2xx answer) or drop, one
 * at a time, so a process killed between two deliveries has recorded the
 * first. 0: recorded; VX_ENOMEM stops the sending; another negative code
 * means it could not be recorded now (the lease is another's, the write
 * failed): the delivery stands, the outbox remembers it so this process
 * does not send it again, and the next call records it.
 */
struct notify_sink {
	int (*delivered)(void *ud, const char *key);                 /* 1: already sent */
	int (*record)(void *ud, const char *key, int64_t at_ms);
	const char *(*getenv)(void *ud, const char *name);
	/* How long the sender may still spend this call (ms), or NULL: no limit.
	 * Each request's timeout is cut to it; at 0 nothing more is sent. */
	int64_t (*time_left)(void *ud);
	int allow_loopback;      /* VX_NOTIFY_ALLOW_LOOPBACK=1: targets on this machine may be posted to */
	void *ud;
	/* Whether a host name resolves to this machine (notify_host_here), asked
	 * before each send without allow_loopback; NULL: names are not resolved. */
	int (*host_here)(const char *host);
};

/* One line for the log per delivery tried or given up. */
struct notify_outcome {
	char key[NOTIFY_KEY_LEN + 1];
	const char *event;       /* "gave-up" */
	const char *address;
	size_t target;           /* index into the Stack's notify */
	int sent;                /* 1: a 2xx answer */
	int unrecorded;          /* sent, but not recorded in the state yet (why says why) */
	int dropped;             /* 1: given up (attempts spent, or a target that cannot be used) */
	char *why;               /* owned: the failure in words, or NULL */
};

struct notify_report {
	struct notify_outcome *items;
	size_t n;
	size_t pending;          /* deliveries waiting for their backoff */
};

void notify_report_release(struct notify_report *r);

/* The sender's memory of failed deliveries between cycles (in-process: a
 * restart retries at once; the state's record keeps it from resending what
 * was delivered). */
int notify_outbox_new(struct notify_outbox **out) VX_WUR;
void notify_outbox_free(struct notify_outbox *ob);

/* Whether a delivery has something to do at now_ms (1): it is not waiting
 * for a backoff, or it was sent by this process and waits to be recorded. */
int notify_outbox_due(const struct notify_outbox *ob, const char *key, int64_t now_ms);

/*
 * Sends each event to each of the Stack's targets whose `on` names it and
 * that the sink has not recorded, at most max_sends requests, each one try
 * (a 2xx answer is delivered: recorded at once; anything else is tried
 * again at the next call after a backoff of 30 s doubling to 30 min, and
 * dropped after 12 tries or a day). A target that failed once is not tried
 * again in the same call, so a dead or hung receiver costs one try (at most
 * its timeout, 10 s) per call. A target whose URL or secret variable is
 * unset or bad, or on this machine without sink->allow_loopback, is
 * reported, not sent to. Signs with Standard Webhooks when the target has
 * a secret. Never fails for a delivery: 0, or VX_ENOMEM.
 */
int notify_send(struct notify_report *rep, struct notify_outbox *ob, struct provider *p,
		const struct stack *st, const struct notify_list *events, const struct notify_sink *sink,
		int64_t now_ms, size_t max_sends, struct vx_err *err) VX_WUR;

#endif
