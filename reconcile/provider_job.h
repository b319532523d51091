#ifndef VX_RECONCILE_PROVIDER_JOB_H
#define VX_RECONCILE_PROVIDER_JOB_H

/*
 * The client interface of the job kind (Vertex AI CustomJobs): what the
 * cloud reports of a job, what a create carries, the kind's operations and
 * the helpers over them. See reconcile/provider.h for the provider itself.
 */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
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
 * The job kind's operations (a provider's table: struct provider's tables). Call
 * them through the functions below, which find the provider that
 * implements each (see struct provider in provider.h).
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

/* The job kind's interface (struct provider's tables, provider_find, PROVIDER_HAS(p, job, op)). */
extern const struct provider_kind provider_kind_job;

/* The operations of provider_job_ops, called on the provider in p's chain that has each
 * (VX_EINVAL when none: ask PROVIDER_HAS first where that may be). */
int provider_job_list(struct provider *p, const char *project, const char *region, const char *stack,
		      struct live_jobs *out, struct vx_err *err);
int provider_job_list_runs(struct provider *p, const char *project, const char *region, const char *stack,
			   const char *job, struct live_jobs *out, struct vx_err *err);
int provider_job_list_active(struct provider *p, const char *project, const char *region, const char *stack,
			     struct live_jobs *out, struct vx_err *err);
int provider_job_create(struct provider *p, const struct provider_job_request *req, struct live_job *out,
			struct vx_err *err);
int provider_job_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
			struct vx_err *err);
int provider_job_get(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		     struct vx_err *err);

/* Deep copy and release helpers shared by implementations and tests. */
int live_job_copy(struct live_job *out, const struct live_job *in) VX_WUR;
void live_job_release(struct live_job *j);
void live_jobs_release(struct live_jobs *js);
/* Appends a deep copy of j. */
int live_jobs_push(struct live_jobs *js, const struct live_job *j) VX_WUR;
/* Moves every job of src to the end of js (nothing copied): src is left empty. VX_ENOMEM (src kept). */
int live_jobs_take(struct live_jobs *js, struct live_jobs *src) VX_WUR;
/* The value of a label, or NULL. */
const char *live_job_label(const struct live_job *j, const char *key);

/* Job states. */
int job_state_is_active(const char *state);   /* QUEUED PENDING RUNNING CANCELLING PAUSED UPDATING */
int job_state_is_terminal(const char *state); /* SUCCEEDED FAILED CANCELLED EXPIRED PARTIALLY_SUCCEEDED */
/* "running" from "JOB_STATE_RUNNING" (borrowed static text; "unknown" for NULL). */
const char *job_state_short(const char *state);

#endif
