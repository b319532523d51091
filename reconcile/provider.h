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
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

/* A live training job as the cloud reports it. */
struct live_job {
	char *name;           /* projects/P/locations/R/customJobs/ID */
	char *region;
	char *display_name;
	char *state;          /* Vertex JobState name: JOB_STATE_RUNNING, ... */
	struct vx_label *labels;
	size_t nlabels;
	int64_t create_ms;    /* 0 when unknown */
	int64_t start_ms;     /* startTime: first entry into RUNNING; 0 when never (or unknown) */
	int64_t end_ms;       /* 0 when not ended */
	int error_code;       /* google.rpc.Code of the job's error, 0 = none */
	char *error_message;  /* NULL = none */
};

struct live_jobs {
	struct live_job *items;
	size_t n;
};

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

struct provider_job_request {
	const char *project;
	const char *region;
	const char *display_name;
	const struct vx_label *labels;
	size_t nlabels;
	const char *spec_json; /* canonical jobSpec JSON (secrets included: never logged) */
	const struct provider_fence *fence; /* NULL: none */
};

/*
 * A Compute Engine reservation as the cloud reports it. Compute reservations
 * have no labels (v1): vx marks its own in the description (see
 * reconcile/kind_reservation.c), and proves ownership by that marker or by
 * the state knowing the reservation.
 */
struct live_reservation {
	char *name;              /* compute name (also the address's NAME) */
	char *project;           /* the project id it was listed in */
	char *zone;              /* "us-central1-a" */
	char *status;            /* CREATING, READY, DELETING, UPDATING, INVALID */
	char *description;       /* NULL when none */
	char *machine_type;      /* "a3-highgpu-8g" */
	char *accelerator_type;  /* "nvidia-h100-80gb" (a name, not a URL), NULL when none */
	int64_t accelerator_count; /* per VM */
	int64_t count;           /* specificReservation.count */
	int64_t in_use;          /* specificReservation.inUseCount */
	int specific_required;   /* specificReservationRequired */
	char *share_type;        /* reservationSharingPolicy.serviceShareType, or NULL */
	int64_t create_ms;       /* creationTimestamp, 0 when unknown */
};

struct live_reservations {
	struct live_reservation *items;
	size_t n;
};

struct provider_reservation_request {
	const char *project;
	const char *zone;
	const char *name;
	const char *description;       /* with vx's ownership marker */
	const char *machine_type;
	const char *accelerator_type;  /* compute's name, or NULL */
	int64_t accelerator_count;
	int64_t count;                 /* 1..1000 */
	int specific_required;
	/* Compute's requestId (a UUID): a retried insert with the same id within
	 * Compute's window is not a second reservation. */
	const char *request_id;
	const struct provider_fence *fence; /* NULL: none */
};

/* A Cloud Quotas QuotaPreference as the cloud reports it. */
struct live_quota {
	char *name;              /* projects/P/locations/global/quotaPreferences/ID */
	char *id;                /* ID: also the address's NAME */
	char *service;
	char *quota_id;
	struct vx_label *dimensions; /* sorted by key */
	size_t ndimensions;
	int64_t preferred;       /* quotaConfig.preferredValue (-1: unlimited) */
	int has_granted;
	int64_t granted;         /* quotaConfig.grantedValue */
	int reconciling;
	/* The quota's limit in force (its QuotaInfo), read by the plan's
	 * refresh only when there is no grantedValue and a decrease is asked
	 * for: the value Cloud Quotas' decrease check measures from. */
	int has_limit;
	int64_t limit;
	char *state_detail;      /* quotaConfig.stateDetail, or NULL */
	/* When the value now requested was asked for: updateTime, else
	 * createTime (Unix ms); 0: unknown. */
	int64_t requested_ms;
	char *etag;
	char *contact_email;     /* as returned (Google may omit it), or NULL */
};

struct live_quotas {
	struct live_quota *items;
	size_t n;
};

/*
 * Cloud Quotas' safety checks a create or update may skip (its
 * ignoreSafetyChecks): a decrease of more than 10% (1, so a plain "true"
 * skips the one issue 9 names), and a decrease below current usage.
 */
#define PROVIDER_QUOTA_IGNORE_DECREASE_PERCENTAGE_TOO_HIGH 1
#define PROVIDER_QUOTA_IGNORE_DECREASE_BELOW_USAGE 2

struct provider_quota_request {
	const char *project;
	const char *id;                /* quotaPreferenceId */
	const char *service;
	const char *quota_id;
	const struct vx_label *dimensions;
	size_t ndimensions;
	int64_t preferred;
	const char *contact_email;     /* or NULL */
	const char *justification;     /* or NULL */
	const char *etag;              /* update: the etag last read (compare-and-swap) */
	int ignore_safety_checks;      /* PROVIDER_QUOTA_IGNORE_* bits: the safety checks the YAML asked to skip */
	const struct provider_fence *fence; /* NULL: none */
};

/*
 * One limit in force, from a Cloud Quotas quotaInfo: one entry of its
 * dimensionsInfos for one of its applicableLocations. Cloud Quotas reports
 * limits, not usage (docs/quota-and-cost.md).
 */
struct live_quota_limit {
	char *service;           /* "aiplatform.googleapis.com" */
	char *quota_id;          /* "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion" */
	char *location;          /* a region, a zone or "global" */
	char *dimensions;        /* the entry's dimensions but region and zone, "k=v,k=v" sorted; NULL: none */
	int64_t value;           /* details.value: the limit (-1: unlimited) */
};

struct live_quota_limits {
	struct live_quota_limit *items; /* in the order listed: most specific first per quota */
	size_t n;
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
 * What in a stack makes vx call a cloud's methods (a kind's row says which
 * of these its declarations need: struct kind's needs), for the checks of
 * vx doctor: providers/gcp/permissions.h maps each to the permissions and
 * APIs it takes.
 */
enum provider_need {
	PROVIDER_NEED_JOB = 1 << 0,         /* a CustomJob */
	PROVIDER_NEED_JOB_SA = 1 << 1,      /* a CustomJob with spec.serviceAccount */
	PROVIDER_NEED_RESERVATION = 1 << 2, /* a Reservation */
	PROVIDER_NEED_QUOTA = 1 << 3,       /* a QuotaPreference */
	PROVIDER_NEED_GCS = 1 << 4,         /* the gcs state backend */
	PROVIDER_NEED_ANY = 1 << 5,         /* every stack (vx doctor's own reads) */
};

struct live_log_page;
struct provider;

/*
 * A kind's client operations, one table per kind (libgit2's backend
 * vtables): struct provider points at one table for each kind it serves,
 * and a call is p->jobs->list(p, ...). An entry is NULL where the provider
 * cannot do that; a table is NULL where it does nothing of the kind (ask
 * PROVIDER_HAS). A decorator changes some entries and passes the others to
 * the provider it wraps (provider_wrap).
 */
struct provider_job_ops {
	/* Lists every job of the stack in one region: one filtered, paginated
	 * list call (labels.vx-stack=<stack>), never a get per job. */
	int (*list)(struct provider *p, const char *project, const char *region, const char *stack,
		    struct live_jobs *out, struct vx_err *err);
	/* The runs of one job of the stack in one region: the same list, also
	 * filtered by the vx-job label (a few jobs, not the stack's thousands),
	 * for an apply settling an earlier apply's unconfirmed create. NULL:
	 * the caller uses list. */
	int (*list_runs)(struct provider *p, const char *project, const char *region, const char *stack,
			 const char *job, struct live_jobs *out, struct vx_err *err);
	/*
	 * The stack's jobs in one region that can still change: the list of
	 * list, also filtered to the states that are not final (Vertex's list
	 * filter takes state, not update_time), for vx watch, whose cycles must
	 * cost what the active jobs cost, not the stack's history. NULL: the
	 * caller uses list.
	 */
	int (*list_active)(struct provider *p, const char *project, const char *region, const char *stack,
			   struct live_jobs *out, struct vx_err *err);
	/* Creates a job. VX_EUNCERTAIN when the request may or may not have
	 * created it: the caller must list by labels before trying again. */
	int (*create)(struct provider *p, const struct provider_job_request *req, struct live_job *out,
		      struct vx_err *err);
	/* Asks for cancellation (asynchronous: the job goes CANCELLING, CANCELLED).
	 * fence as in provider_job_request; NULL: none. */
	int (*cancel)(struct provider *p, const char *name, const struct provider_fence *fence,
		      struct vx_err *err);
	/*
	 * Reads one job by name (vx import, and the refresh of an imported job
	 * that carries no vx labels, which no list by label finds). The name is
	 * checked before anything is sent; the answer's name is checked against
	 * the project and region asked (a project number is accepted).
	 * VX_ENOTFOUND when it does not exist. *spec_json (may be NULL: not
	 * wanted) gets the job's jobSpec as compact JSON, owned by the caller.
	 * NULL in providers that cannot read one job.
	 */
	int (*get)(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		   struct vx_err *err);
};

/*
 * Reservations (Compute Engine, one zone). list: one paginated list call
 * per zone, never a get per reservation. create/resize/delete send the
 * request and wait for its zone operation (bounded; VX_EUNCERTAIN when
 * the outcome is unknown: the caller lists before trying again). A
 * create is an insert with request_id; *out (create) is the reservation
 * as read after the operation.
 */
struct provider_reservation_ops {
	int (*list)(struct provider *p, const char *project, const char *zone,
		    struct live_reservations *out, struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_reservation_request *req,
		      struct live_reservation *out, struct vx_err *err);
	int (*resize)(struct provider *p, const char *project, const char *zone, const char *name,
		      int64_t count, const struct provider_fence *fence, struct vx_err *err);
	/* del, not delete: clang-format takes delete for C++'s keyword
	 * (libgit2's backends say del too). */
	int (*del)(struct provider *p, const char *project, const char *zone, const char *name,
		   const struct provider_fence *fence, struct vx_err *err);
};

/*
 * Quota preferences (Cloud Quotas). list: the project's preferences, one
 * paginated list. create: with quotaPreferenceId = req->id. update: a
 * patch of quotaConfig.preferredValue (and contactEmail) with req->etag;
 * VX_ECONFLICT when the etag no longer matches.
 */
struct provider_quota_ops {
	int (*list)(struct provider *p, const char *project, struct live_quotas *out, struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
		      struct vx_err *err);
	int (*update)(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
		      struct vx_err *err);
	/*
	 * Quota limits (Cloud Quotas quotaInfos) of one service: one paginated
	 * list, appended to *out. NULL in providers that cannot read them (the
	 * plan shows such limits as unknown).
	 */
	int (*list_infos)(struct provider *p, const char *project, const char *service,
			  struct live_quota_limits *out, struct vx_err *err);
};

/* Whether p can do op of kind: PROVIDER_HAS(p, quotas, list_infos). */
#define PROVIDER_HAS(p, kind, op) ((p)->kind && (p)->kind->op)

struct provider {
	/* The kinds' operations (above); NULL: none of that kind. */
	const struct provider_job_ops *jobs;
	const struct provider_reservation_ops *reservations;
	const struct provider_quota_ops *quotas;
	/* A decorator's: the provider it wraps (provider_wrap); NULL otherwise. */
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

/*
 * A decorator is a provider that wraps another, inner, and changes some of
 * its kinds' operations (reconcile/prefetch.c, reconcile/watch_live.c). It
 * embeds struct provider first and keeps the three tables it points at:
 * provider_wrap fills them with the passing on of every operation inner has
 * (to inner, called with inner as p: its functions never see the
 * decorator), NULL where inner has none, and sets self->inner. The
 * decorator then points the entries it changes at its own functions. Its
 * common methods (post_webhook, ..., free) are its own: provider_wrap
 * leaves them as they are. self->inner may change later (a provider made
 * anew) to one with the same operations.
 */
struct provider_tables {
	struct provider_job_ops jobs;
	struct provider_reservation_ops reservations;
	struct provider_quota_ops quotas;
};

void provider_wrap(struct provider *self, struct provider_tables *own, struct provider *inner);

/* Deep copy and release helpers for reservations and quota preferences. */
int live_reservation_copy(struct live_reservation *out, const struct live_reservation *in) VX_WUR;
void live_reservation_release(struct live_reservation *r);
void live_reservations_release(struct live_reservations *rs);
int live_reservations_push(struct live_reservations *rs, const struct live_reservation *r) VX_WUR;
int live_quota_copy(struct live_quota *out, const struct live_quota *in) VX_WUR;
void live_quota_release(struct live_quota *q);
void live_quotas_release(struct live_quotas *qs);
int live_quotas_push(struct live_quotas *qs, const struct live_quota *q) VX_WUR;

void live_quota_limits_release(struct live_quota_limits *l);
/* Appends a deep copy of q. VX_ENOMEM. */
int live_quota_limits_push(struct live_quota_limits *l, const struct live_quota_limit *q) VX_WUR;
/* The limit of service's quota_id at location for no other dimension (the
 * first such entry). 0 and *out set, or VX_ENOTFOUND. */
int live_quota_limits_find(const struct live_quota_limits *l, const char *service, const char *quota_id,
			   const char *location, int64_t *out) VX_WUR;

/* Deep copy and release helpers shared by implementations and tests. */
int live_job_copy(struct live_job *out, const struct live_job *in) VX_WUR;
/*
 * Now on Google's clock: ctx's, corrected by p's clock_offset (p may be
 * NULL). Every "how long since" a time Google stamped (a job's createTime,
 * endTime) is asked of this, so a machine whose clock is off does not move
 * it by the skew.
 */
struct vx_ctx;
int64_t provider_now_ms(struct provider *p, const struct vx_ctx *ctx);

void live_job_release(struct live_job *j);
void live_jobs_release(struct live_jobs *js);
/* Appends a deep copy of j. */
int live_jobs_push(struct live_jobs *js, const struct live_job *j) VX_WUR;
/* The value of a label, or NULL. */
const char *live_job_label(const struct live_job *j, const char *key);

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

/* Job states. */
int job_state_is_active(const char *state);   /* QUEUED PENDING RUNNING CANCELLING PAUSED UPDATING */
int job_state_is_terminal(const char *state); /* SUCCEEDED FAILED CANCELLED EXPIRED PARTIALLY_SUCCEEDED */
/* "running" from "JOB_STATE_RUNNING" (borrowed static text; "unknown" for NULL). */
const char *job_state_short(const char *state);

#endif
