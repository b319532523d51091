#ifndef VX_RECONCILE_FAILURE_H
#define VX_RECONCILE_FAILURE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Why a run ended badly, from the job as Vertex reports it: its state, its
 * error, its scheduling strategy, whether it ever started and whether vx
 * cancelled it. The class decides whether `resubmit.on` resubmits it.
 *
 *   stockout           no capacity: "Resources are insufficient in region: R",
 *                      "... does not have enough resources available ...",
 *                      "... is currently unavailable in the Z zone", "no more
 *                      capacity", "Insufficient reserved capacity", or code 8
 *                      (RESOURCE_EXHAUSTED) with no other text known. A SPOT
 *                      job that never started.
 *   preempted          a SPOT job that had started (startTime set) and then
 *                      failed for capacity: Google reports a reclaimed Spot
 *                      VM as a STOCKOUT, never with the word "preempt".
 *   wait-timeout       a FLEX_START job that ended (FAILED, EXPIRED, or
 *                      CANCELLED without vx asking) without ever starting:
 *                      it waited out maxWaitDuration (no text is published).
 *   quota              "The following quota metrics exceed quota limits: ...",
 *                      "Quota 'X' exceeded", "Quota failure for project P. The
 *                      request for N K80 accelerators exceeds the allowed
 *                      maximum of ...", "Insufficient regional quota to satisfy
 *                      request for resource: ...", whatever the code (8 too);
 *                      a create refused with 429 for quota.
 *   user-error         "The replica R exited with a non-zero status of N",
 *                      "... ran out of memory and exited ..." (137: the same
 *                      spec fails the same way).
 *   config             the container image could not be pulled (registry
 *                      permission, manifest unknown), a reservation that "can
 *                      not be targeted as specificReservationRequired is not
 *                      set", an accelerator type the zone lacks ("The resource
 *                      '.../acceleratorTypes/T' was not found"): the same spec
 *                      fails again.
 *   internal           "Internal error occurred ...", code 13, and Compute
 *                      Engine's "Location L is not found or access is unauthorized".
 *   unknown            a failure no rule knows: shown verbatim (redacted),
 *                      resubmitted only when resubmit.on lists `unknown`.
 *   cancelled-outside  CANCELLED (or vanished) without vx having asked for it.
 *   timeout            CANCELLED without vx asking after running (startTime to
 *                      endTime) as long as its scheduling.timeout, 7 days when
 *                      unset, less FAILURE_TIMEOUT_GRACE_MS: Vertex cancels a
 *                      job at its maximum running time (seen after exactly 7
 *                      days, tensorflow/tfx#6223) and says nothing more than
 *                      "CustomJob was cancelled.". The same spec runs as long
 *                      again: never resubmitted unless resubmit.on lists it.
 *   refused            a create the server refused (permission, invalid
 *                      argument, failed precondition): not a run.
 *   window-ended       a run on the reservation a calendar-mode booking
 *                      delivered that ended (FAILED, EXPIRED, or CANCELLED
 *                      without vx asking) at the end of the booking's
 *                      window, less FAILURE_WINDOW_GRACE_MS: Google ends
 *                      those VMs at the end time. How Vertex words it is
 *                      not published, so the job's facts decide (its
 *                      reservation's window, its end time), not the text;
 *                      only the replica's own exit (user-error, config)
 *                      before the end keeps its class. Never resubmitted:
 *                      the window it needs is over.
 *
 * Only Google's leading sentence decides: after "Termination reason: Error."
 * or "To find out more ... check the logs: URL" comes the tail of the
 * user's own log, whose words ("quota", "preempted") say nothing about why
 * the job ended.
 */

struct failure_input {
	const char *state;        /* JobState name (JOB_STATE_FAILED, ...) */
	int error_code;           /* google.rpc.Code of the job's error, 0 = none */
	const char *message;      /* the job's error message, or NULL */
	const char *scheduling;   /* "SPOT", "FLEX_START", "STANDARD"; NULL = unknown (STANDARD) */
	int started;              /* the job ran (startTime set, or startedAt recorded) */
	int cancelled_by_vx;      /* vx asked for the cancel */
	/* The end of the calendar window of the booking whose reservation the
	 * run used (Unix ms), 0 = not on such a reservation or not known. */
	int64_t window_end_ms;
	int64_t ended_ms; /* the job's endTime (Unix ms), 0 = not known */
	int64_t started_ms; /* the job's startTime (Unix ms), 0 = not known */
	int64_t timeout_ms; /* its declared scheduling.timeout, 0 = unset (7 days) */
};

/* Vertex's maximum running time of a job whose scheduling.timeout is unset. */
#define FAILURE_DEFAULT_TIMEOUT_MS ((int64_t)7 * 24 * 3600 * 1000)

/*
 * How much shorter than its timeout a run cancelled outside vx may have
 * run and still count as having hit it: Google does not say how its
 * startTime and its timer line up (not stated), so a minute is its doing.
 */
#define FAILURE_TIMEOUT_GRACE_MS ((int64_t)60 * 1000)

/*
 * How long before a window's end a run that ends there still counts as
 * ended by it: Google does not say to the second when it tears the VMs
 * down (not stated), so a few minutes early is the window's doing too.
 */
#define FAILURE_WINDOW_GRACE_MS ((int64_t)10 * 60 * 1000)

/* Returns the class name (static text), or NULL when the run did not fail
 * (succeeded, still active, or cancelled by vx). */
const char *failure_classify(const struct failure_input *in);

/* The class of a create the server refused, from the error vx made of it
 * ("vertex: creating job: RESOURCE_EXHAUSTED: The following quota ..."):
 * "quota" for a quota refusal, else "refused". */
const char *failure_classify_refusal(const char *message);

/* The scheduling strategy a canonical spec JSON names ("SPOT", "FLEX_START",
 * "STANDARD", static text), or NULL when it names none of them. */
const char *failure_spec_strategy(const char *spec_json);

/* The scheduling.timeout a canonical spec JSON declares, in ms; 0 when it
 * declares none (Vertex's 7 days) or when it cannot be read. */
int64_t failure_spec_timeout_ms(const char *spec_json);

/* A timeout as the plan and vx log say it ("2h", "90m", "7d"): the largest
 * of d, h, m, s that divides it; 0 is FAILURE_DEFAULT_TIMEOUT_MS. */
void failure_timeout_words(char *out, size_t size, int64_t timeout_ms);

/*
 * The replica's exit status Google's leading sentence gives ("The replica
 * workerpool0-0 exited with a non-zero status of 137. ..."), 1..255; 0 when
 * the sentence gives none. Never read from the log tail after it.
 */
int failure_exit_code(const char *message);

/* How many leading bytes of message are Google's own sentence(s): up to
 * "Termination reason:", "To find out more" or a "Traceback", else all. */
size_t failure_lead_len(const char *message);

#endif
