#ifndef VX_RECONCILE_PROVIDER_H
#define VX_RECONCILE_PROVIDER_H

/*
 * What the planner and the apply executor need from a cloud, and nothing
 * more. reconcile/ depends on this interface, never on libcurl or on
 * providers/gcp directly (DESIGN.md section 8); providers/gcp/provider_gcp.c
 * implements it for Google Cloud, and tests can implement it in memory.
 *
 * Every function may be called from several threads at once (apply runs
 * creates in parallel): an implementation must be thread-safe.
 *
 * This header names no kind. Each kind's client interface (what the cloud
 * reports of it, what a request carries, its operations) is a header and a
 * .c of its own, reconcile/provider_<kind>.h: provider_job.h,
 * provider_reservation.h, provider_quota.h. A provider holds one table of
 * operations per kind it serves (struct provider's tables), found by the
 * kind's struct provider_kind (libgit2's backends: a common part, struct
 * provider, embedded first; per-kind vtables beside it).
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

/*
 * The caller's right to mutate, asked at the last moment: an implementation
 * MUST call check right before it sends each mutating request (every
 * attempt of it), and send nothing when check returns nonzero; then it
 * returns that code with check's message, as a certain outcome (never
 * VX_EUNCERTAIN: nothing was sent). check may be called from any thread
 * and must be quick. apply passes its state-lease fence (docs/leases.md).
 */
struct provider_fence {
	int (*check)(void *ud, struct vx_err *err);
	void *ud;
};

/* One webhook request (a notification, reconcile/notify.h). */
struct provider_webhook {
	const char *url;               /* https:// (http:// to loopback only); a secret: never logged */
	const char *log_name;          /* what logs and errors call it instead ("notify[0]") */
	const char *const *headers;    /* extra "Name: value" lines, NULL-terminated */
	const char *body;
	size_t body_len;
	const char *content_type;      /* default application/json */
	long timeout_ms;               /* the one attempt's limit; 0 = 10 s */
};

/*
 * What in a stack makes vx call a cloud's methods, for the checks of vx
 * doctor (providers/gcp/permissions.h maps each to the permissions and
 * APIs it takes). The low PROVIDER_NEED_KINDS bits are the kinds: bit i
 * (PROVIDER_NEED_KIND(i)) is "declares one of kind_table[i]", so a new kind
 * takes no bit here; the permission rows name the kinds they serve by the
 * kind's name. The fixed bits above them are needs no one kind stands for.
 */
#define PROVIDER_NEED_KINDS 16
#define PROVIDER_NEED_KIND(i) (1u << (i))
enum provider_need {
	PROVIDER_NEED_JOB_SA = 1 << (PROVIDER_NEED_KINDS + 0), /* a CustomJob with spec.serviceAccount */
	PROVIDER_NEED_GCS = 1 << (PROVIDER_NEED_KINDS + 1),    /* the gcs state backend */
	PROVIDER_NEED_ANY = 1 << (PROVIDER_NEED_KINDS + 2),    /* every stack (vx doctor's own reads) */
};

struct live_log_page;
struct provider;

/*
 * A kind's client interface, by identity: each provider_<kind>.c defines
 * one (provider_kind_job, ...), and a provider's table of that kind's
 * operations is found by its address.
 */
struct provider_kind {
	const char *name; /* what errors call the kind: "jobs" */
};

/* One kind's table of operations in a provider. */
struct provider_table {
	const struct provider_kind *kind;
	const void *ops; /* that kind's struct provider_<kind>_ops */
};

/*
 * A provider: the kinds' operations, and the common methods below.
 *
 * The kinds' operations (libgit2's backend vtables): one table per kind
 * it serves, in tables, each the kind's struct provider_<kind>_ops. A
 * call goes through the kind's call functions (provider_job_list(p, ...),
 * declared in the kind's header), which find the provider that implements
 * the operation (provider_find) and call it with that provider as p. An entry is NULL where the provider cannot do
 * that, a kind without a table is one it does nothing of: ask PROVIDER_HAS.
 *
 * A decorator (reconcile/prefetch.c, reconcile/watch_live.c) is a provider
 * that wraps another, inner: it embeds struct provider first, sets inner,
 * and sets tables holding only the operations it changes. Every other
 * operation, a NULL entry or a kind it set no table for, is inner's, called
 * with inner as p (inner's functions never see the decorator). A decorator
 * changes operations, never adds one: where inner (and what inner wraps)
 * lacks an operation, the decorator lacks it too, whatever its table says.
 * inner may change later (a provider made anew) to one with the same
 * operations. The common methods are never inherited: a decorator sets
 * its own (post_webhook, ..., free).
 */
struct provider {
	/* One table per kind it serves, in any order (a static array, usually). */
	const struct provider_table *tables;
	size_t ntables;
	/* A decorator's: the provider it wraps; NULL otherwise. */
	struct provider *inner;

	/*
	 * Posts a webhook once, never retried here (the caller backs off across
	 * cycles; receivers drop a resend by its webhook-id). 0 with *status
	 * the HTTP status when an answer came (any status), else VX_E*.
	 * NULL in providers that cannot.
	 */
	int (*post_webhook)(struct provider *p, const struct provider_webhook *req, long *status,
			    struct vx_err *err);

	/*
	 * The requests that failed so far, per API ("aiplatform", "compute",
	 * "cloudquotas", "storage", "oauth", "webhook"), for a watcher's metrics:
	 * fills up to max names and counts, returns how many. NULL: not counted.
	 */
	size_t (*api_errors)(struct provider *p, const char **names, uint64_t *counts, size_t max);
	/* The latest time (Unix ms) a server's Retry-After asked not to be called
	 * before, on a request given up on; 0 when none. NULL: not kept. */
	int64_t (*retry_after)(struct provider *p);
	/* Google's clock minus this machine's (ms), from its latest answer's
	 * Date header; 0 before any. NULL: not kept (the machine's clock is
	 * taken for Google's). See provider_now_ms. */
	int64_t (*clock_offset)(struct provider *p);

	/* Releases the provider. */
	void (*free)(struct provider *p);

	/*
	 * One page of a Vertex job's log lines from Cloud Logging (vx logs):
	 * the entries of project whose filter is filter (the caller builds it),
	 * oldest first, from page_token (NULL: the first page). out is
	 * overwritten; out->next_token is NULL on the last page. NULL in
	 * providers that cannot read logs.
	 */
	int (*list_log_entries)(struct provider *p, const char *project, const char *filter,
				const char *page_token, struct live_log_page *out, struct vx_err *err);
};

/* Points p at tables, an array (not a pointer) of struct provider_table. */
#define PROVIDER_SET_TABLES(p, tables_) ((p)->tables = (tables_), (p)->ntables = sizeof(tables_) / sizeof((tables_)[0]))

/*
 * The table of kind k whose entry at offset op (offsetof(struct
 * provider_<kind>_ops, entry)) implements it for p: p's own, else that of
 * the provider p wraps, and so on (see struct provider). *impl (may be
 * NULL: not wanted) gets the provider to call it with. NULL when no
 * provider in the chain has the operation, or inner lacks it.
 */
const void *provider_find(struct provider *p, const struct provider_kind *k, size_t op,
			  struct provider **impl);

/*
 * Whether p can do op of a kind: PROVIDER_HAS(p, quota, list_infos), with
 * the kind's provider header (provider_quota.h) included.
 */
#define PROVIDER_HAS(p, kind, op) \
	(provider_find((p), &provider_kind_##kind, offsetof(struct provider_##kind##_ops, op), NULL) != NULL)

/* The error of a call to an operation no provider in p's chain has (VX_EINVAL). */
int provider_lacks(const struct provider_kind *k, const char *op, struct vx_err *err);

/*
 * Now on Google's clock: ctx's, corrected by p's clock_offset (p may be
 * NULL). Every "how long since" a time Google stamped (a job's createTime,
 * endTime) is asked of this, so a machine whose clock is off does not move
 * it by the skew.
 */
struct vx_ctx;
int64_t provider_now_ms(struct provider *p, const struct vx_ctx *ctx);

/* One log line of a job (Cloud Logging's LogEntry, the parts vx logs shows). */
struct live_log_entry {
	char *insert_id;         /* unique per entry: what a follow deduplicates on */
	char *timestamp;         /* RFC 3339, as the server wrote it */
	int64_t time_ms;         /* the same, parsed */
	char *severity;          /* INFO, ERROR, ...; NULL: DEFAULT */
	char *text;              /* textPayload, or jsonPayload.message; NULL: neither. Untrusted */
};

struct live_log_page {
	struct live_log_entry *items;
	size_t n;
	char *next_token;        /* NULL on the last page */
};

void live_log_page_release(struct live_log_page *pg);

#endif
