#ifndef VX_WORKFLOW_STATEEDIT_H
#define VX_WORKFLOW_STATEEDIT_H

/*
 * vx state rm and vx state mv: changes to the state a person asks for, made
 * under the state lease and written as one state commit each, naming who
 * (Vx-Actor, as every apply does) and why ("Reason: "), so `vx log` shows
 * them. Nothing here calls the cloud: the live resources are left as they
 * are. Nothing prints: *report (owned by the caller) holds one line per
 * address saying what was done (or, dry_run, what would be).
 *
 * rm: the records leave the state. A Vertex job cannot be relabelled once
 * created, so its runs' resource names are kept in the state's "released"
 * list (state/state.h): the refresh leaves them out, so no later plan
 * adopts or cancels them, and a job still declared is planned as a create.
 * A reservation or quota preference is named by its address's NAME: it
 * leaves the state, and a plan that still declares it finds it by that name
 * and adopts it again.
 *
 * mv: a job's record moves to another address (a job renamed in the YAML),
 * its runs with it: the plan after the rename is a no-op. The live job keeps
 * its vx-job label; the planner knows the run by its resource name, and
 * never adopts a run another record holds.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct ci;
struct workspace;

struct stateedit_opts {
	const struct ci *ci;        /* who asks (workflow/ci.h); required */
	const char *reason;         /* -reason, or NULL; cleaned of control characters */
	int dry_run;                /* say what would be done; no lease, no write */
	int64_t lease_ms;           /* the state lease; 0: the backend's default */
	const char *unlock_args;    /* for the "state is locked" hint, or NULL */
};

#define STATEEDIT_REASON_MAX 500

/*
 * Removes the records of addrs[0..n) (each an address in the state, or a
 * sweep's address or slice naming runs in it) from ws's state (open, not
 * loaded). VX_ENOTFOUND for an address naming nothing in the state,
 * VX_ECONFLICT for one with an unconfirmed create in the journal (an
 * apply's crash: plan first) or when the lease is another's.
 */
int stateedit_rm(struct workspace *ws, const char *const *addrs, size_t n, const struct stateedit_opts *o,
		 char **report, struct vx_err *err) VX_WUR;
/*
 * Moves the record of job address from to address to. VX_ENOTFOUND when
 * from is not in the state; VX_EINVAL when to is in it, when either is no
 * job's address (a reservation's or quota preference's NAME is its name in
 * Google Cloud, which cannot be renamed), or when one is a sweep's run and
 * the other not; VX_ECONFLICT as for rm.
 */
int stateedit_mv(struct workspace *ws, const char *from, const char *to, const struct stateedit_opts *o,
		 char **report, struct vx_err *err) VX_WUR;

#endif
