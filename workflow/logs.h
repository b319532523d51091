#ifndef VX_WORKFLOW_LOGS_H
#define VX_WORKFLOW_LOGS_H

/*
 * vx logs ADDR [-f]: a job's log lines from Cloud Logging, as `gcloud ai
 * custom-jobs stream-logs` reads them (entries.list filtered on
 * resource.type="ml_job" AND resource.labels.job_id="ID", oldest first), for
 * the current run the state records for ADDR (a job, or one run of a sweep:
 * job.S[k=v]). Following (-f) reads again with the filter narrowed to
 * timestamp>= LOGS_LAG_MS before the newest line seen, as gcloud's stream
 * does: Cloud Logging can deliver a line seconds after a newer one (another
 * replica's), and it is shown then, once; lines already shown are dropped by
 * insertId (those of the last LOGS_LAG_MS, at most LOGS_SEEN_MAX, are
 * remembered). It backs off from poll_ms to LOGS_POLL_MAX_MS while nothing
 * new comes, until the job is terminal (then the rest is read and it
 * returns) or the context is interrupted. Nothing here prints: each line
 * goes to ev->line, its text still the server's (the caller cleans it).
 */

#include <stdint.h>

#include "util/err.h"

struct live_log_entry;
struct workspace;

#define LOGS_POLL_MAX_MS 30000
#define LOGS_LAG_MS 5000
#define LOGS_SEEN_MAX 100000

struct logs_events {
	void (*line)(void *ud, const struct live_log_entry *e);
	/* -f: the job ended (its state, "JOB_STATE_SUCCEEDED"). */
	void (*ended)(void *ud, const char *resource, const char *state);
	void *ud;
};

struct logs_opts {
	int follow;
	int64_t poll_ms;            /* -f: the first wait between reads; 0: 2000 */
};

/*
 * Reads (and with o->follow, follows) the lines of address's current run
 * in ws (open; the state is loaded here). VX_ENOTFOUND with what to do when
 * address has no run in the state (not applied yet, a create that never
 * answered, not a job), else the provider's error.
 */
int logs_read(struct workspace *ws, const char *address, const struct logs_opts *o,
	      const struct logs_events *ev, struct vx_err *err) VX_WUR;

#endif
