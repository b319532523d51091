#ifndef VX_RECONCILE_PREFETCH_H
#define VX_RECONCILE_PREFETCH_H

/*
 * Reading the cloud while the state loads.
 *
 * A plan's refresh lists the places the declaration uses and the places
 * the state's runs live in. The first set is known as soon as the stack
 * is loaded, and reading a large state is mostly CPU (10,000 records: the
 * better part of a second), so the lists of the declared places start on
 * a thread of their own (the token exchange with them) while the caller
 * reads the state:
 *
 *	prefetch_start(&pf, prov, stack)     after the state's revision is read
 *	state_load(...)                      meanwhile
 *	kind_refresh_all(store, prefetch_reader(pf), stack, state)
 *	prefetch_free(pf)
 *
 * The reader answers each list call the prefetch made with its result,
 * once, and sends every other call to the real provider. The prefetch
 * runs every kind's refresh without a state (so exactly the calls a
 * refresh makes for the declared places) plus the quota limits the
 * capacity check reads.
 *
 * Sound only if the lists start after the state version that will be
 * used was fixed: a job recorded in that state was created before its
 * record was committed, so a list that starts later sees it. The caller
 * reads the state's revision before prefetch_start and again after the
 * load, and calls prefetch_discard() when it moved (or when the lists
 * cannot be trusted for another reason): the reader then forwards every
 * call, as if nothing was prefetched.
 */

#include "reconcile/provider.h"
#include "util/err.h"

struct prefetch;
struct stack;

/* Starts the lists for st's declared places on a new thread. real is
 * borrowed and must outlive the prefetch; it is thread-safe (provider.h).
 * VX_ENOMEM, or VX_EIO when no thread could be made (the caller goes on
 * without one). */
int prefetch_start(struct prefetch **out, struct provider *real, const struct stack *st,
		   struct vx_err *err) VX_WUR;

/*
 * The same, for one list of jobs only (project, region, the stack's label):
 * the Stack's default region, listed while the rest of the stack loads.
 * region NULL: nothing yet (prefetch_add adds the stack).
 */
int prefetch_start_jobs(struct prefetch **out, struct provider *real, const char *project,
			const char *region, const char *stack, struct vx_err *err) VX_WUR;

/*
 * Lists the places of another stack too, on a thread of its own: a plan
 * starts with the Stack document alone (stack_peek) and adds the whole
 * stack once it is loaded. A call already made for the first is not made
 * again. The same soundness rule holds: the revision read before
 * prefetch_start covers the lists started here, which start later. At most
 * one addition; VX_EIO when no thread could be made.
 */
int prefetch_add(struct prefetch *pf, const struct stack *st, struct vx_err *err) VX_WUR;

/*
 * One more list of jobs (project, region, the stack's label), started now
 * on a thread of its own: a region the stack's files name, listed before
 * the stack is loaded. Nothing when that list was made already or memory
 * ran out (the refresh then makes the call). The soundness rule of
 * prefetch_start holds for it too.
 */
void prefetch_add_jobs(struct prefetch *pf, const char *project, const char *region, const char *stack);

/* Drops what was prefetched (the state moved since it started). */
void prefetch_discard(struct prefetch *pf);

/* Says the refresh has taken the lists it wanted: a list left over is not
 * handed out later (by then the apply may have changed what it saw). The
 * quota limits stay until the capacity check takes them. */
void prefetch_refreshed(struct prefetch *pf);

/* Waits for every list, then returns the provider that answers from them.
 * Borrowed from pf: valid until prefetch_free(). */
struct provider *prefetch_reader(struct prefetch *pf);

/* Waits for the thread and frees everything, answers not taken included. */
void prefetch_free(struct prefetch *pf);

#endif
