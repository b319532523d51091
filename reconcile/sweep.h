#ifndef VX_RECONCILE_SWEEP_H
#define VX_RECONCILE_SWEEP_H

/*
 * Sweeps: a CustomJob document with `matrix:` is one job per combination
 * (the loader's part is in reconcile/sweep.c). A run's name is the sweep's
 * with its combination, "lr-sweep[lr=3e-4,batch=64,seed=2]" (axes in the
 * order declared), so its address is "job.lr-sweep[lr=3e-4,batch=64,seed=2]"
 * everywhere an address is used: the state's key, -target, vx log, status
 * and the plan. These helpers read such addresses; none allocates.
 */

#include <stddef.h>

/* Whether address is one of the addresses target names: target itself, a
 * run of the sweep target ("job.lr-sweep" names every "job.lr-sweep[...]"),
 * or a run of a slice ("job.lr-sweep[seed=2]" names every run of lr-sweep
 * whose combination has seed=2, whatever its other values). */
int sweep_address_matches(const char *target, const char *address);

/* Whether address names a run of a sweep ("job.NAME[...]"). */
int sweep_address_is_run(const char *address);

/*
 * The vx-job label of a job named name (Google's label values: at most 63
 * lowercase letters, digits, "_" and "-"). A job declared alone keeps its
 * name. A sweep's run, whose name a label cannot hold, gets the sweep's name
 * (cut to 48 characters), "--" and 13 hex digits of the SHA-256 of its whole
 * name: two runs differ, and the loader refuses a job declared alone whose
 * name is such a label (stack.c), so a label leads back to one address.
 */
#define SWEEP_LABEL_MAX 63
void sweep_job_label(char out[SWEEP_LABEL_MAX + 1], const char *name);

#endif
