#ifndef VX_RECONCILE_CAPACITY_H
#define VX_RECONCILE_CAPACITY_H

/*
 * Will it fit, and what will it cost (issue 10): from the stack, the plan,
 * the live reservations and quota preferences, the quota limits read from
 * Cloud Quotas and a price table, the GPUs per region x accelerator x quota
 * class that the plan would start and that stay running, against the limit
 * in force; and each job's and reservation's rate per hour and the most it
 * can cost. Pure: it sees plain structs, so every sum is unit-tested
 * (tests/unit/test_capacity.c). docs/quota-and-cost.md says what is counted.
 *
 * Unknown is never zero: a quota Cloud Quotas did not return is "unknown"
 * and never fits; a price the table lacks makes the job's figure unknown.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/err.h"
#include "util/hashmap.h"

struct stack;
struct plan;
struct live_set;
struct live_quota_limits;

/* ---- prices ---- */

enum prices_class { PRICES_ON_DEMAND = 0, PRICES_SPOT, PRICES_FLEX_START, PRICES_NCLASSES };

struct prices_entry {
	char *region;            /* "us-central1" or "*" */
	char *name;              /* machine type or Vertex accelerator enum name */
	int accelerator;         /* 1: a GPU, priced per GPU */
	int vertex;              /* 1: a Vertex AI training rate (preferred for jobs) */
	double rate[PRICES_NCLASSES]; /* USD (currency) per hour; < 0: absent */
	unsigned estimate;       /* bit per class: the figure is an estimate */
	char *key;		 /* its key in the table's index (price_key) */
};

struct prices {
	char *source;
	char *date;
	char *currency;
	int fee_excluded;        /* "management_fee": "excluded": machine figures are Compute
				  * Engine's, without Vertex AI's training management fee */
	struct prices_entry *items;
	size_t n;
	size_t cap;              /* items allocated: grown by doubling, not one at a time */
	/* key -> item: a plan prices every job, and a walk over thousands of rows
	 * per lookup was a tenth of a 10,000-job plan's CPU */
	struct vx_hashmap index;
};

/* The table shipped with vx (data/prices.json, compiled in by tools/gen_prices.py). */
extern const char prices_default_json[];
/* The regions that table prices, sorted, NULL-terminated (data/prices_data.c,
 * generated with it): the regions vx knows, for the stack loader's check. */
extern const char *const prices_default_regions[];

/* Parses a price table (docs/prices.md). what names it in errors. */
int prices_parse(struct prices *out, const char *json, size_t len, const char *what,
		 struct vx_err *err) VX_WUR;
void prices_release(struct prices *p);
/*
 * The price table in force for st: the file env_file names (VX_PRICES) when
 * set and not empty, else the Stack's prices: (relative to its directory),
 * else the table built into vx. VX_EIO, VX_EINVAL (a bad table), VX_ENOMEM;
 * a bad Stack table's error names the Stack.
 */
int prices_load(struct prices *out, const struct stack *st, const char *env_file,
		struct vx_err *err) VX_WUR;

/*
 * The price table in force for st as a plan loads it: prices_load with
 * VX_PRICES from ctx's environment (ctx NULL: the process's). What vx
 * validate, vxplan and vxapply price with. Errors as prices_load.
 */
struct vx_ctx;
int prices_load_in_force(struct prices *out, const struct stack *st, const struct vx_ctx *ctx,
			 struct vx_err *err) VX_WUR;

/*
 * The rate per hour of a job spec's runs in region, as the plan prices them:
 * every pool's replicas x (machine + GPUs) at the rate its
 * scheduling.strategy picks, a Vertex AI training rate when the table has
 * one. 0 for a job on a reservation or a persistent resource (what holds the
 * machines is what costs). -1 when unknown, with *missing (when not NULL)
 * the machine type or GPU the table has no figure for (NULL: no table).
 */
struct job_spec;
double prices_job_rate(const struct prices *p, const char *region, const struct job_spec *spec, int *upper,
		       int *estimate, const char **missing);

/*
 * The rate of a machine type (accelerator 0) or a GPU (1) in region for
 * class c: a Vertex training rate when want_vertex and the table has one,
 * else the Compute Engine rate; the region's own entry, else "*" (a user's
 * table may have one; the shipped one has none: no region borrows another's
 * figure). A missing
 * flex_start rate falls back to on_demand with *upper_bound set. Returns
 * the rate, or -1 when unknown. *estimate: the figure is marked an estimate.
 */
double prices_rate(const struct prices *p, const char *region, const char *name, int accelerator,
		   int want_vertex, enum prices_class c, int *upper_bound, int *estimate);

/*
 * The rate per hour of a run from its recorded jobSpec JSON (the state's
 * redacted spec), in region: every pool's replicaCount x (machine + GPUs),
 * at the spot, flex_start or on_demand rate its scheduling.strategy picks.
 * 0 for a run on a reservation (the reservation is what costs); -1 when
 * unknown (no spec, unparsable, a price the table lacks).
 */
double prices_spec_rate(const struct prices *p, const char *region, const char *spec_json, int *upper,
			int *estimate);

/*
 * The on-demand rate per hour of one Compute Engine VM in zone (a
 * reservation's): the machine, and accel_count GPUs of accel_compute (the
 * Compute Engine name, nvidia-h100-80gb) unless the machine type bundles
 * them. -1 when unknown.
 */
double prices_vm_rate(const struct prices *p, const char *zone, const char *machine_type,
		      const char *accel_compute, int64_t accel_count, int *estimate);

/*
 * The on-demand rate per hour of one machine of machine_type with
 * accel_count GPUs of accel (Vertex AI's name, NVIDIA_L4; or NULL) unless
 * the machine type bundles them, in region: a Vertex AI training rate when
 * vertex and the table has one, else Compute Engine's. -1 when unknown.
 */
double prices_machine_rate(const struct prices *p, const char *region, const char *machine_type,
			   const char *accel, int64_t accel_count, int vertex, int *estimate);

/* ---- capacity ---- */

enum capacity_class { CAPACITY_ON_DEMAND = 0, CAPACITY_PREEMPTIBLE, CAPACITY_RESERVATION };

const char *capacity_class_name(enum capacity_class c); /* "on-demand", "preemptible", "reservation" */

struct capacity_row {
	char *region;              /* region; a reservation's zone */
	char *accelerator;         /* Vertex enum name: NVIDIA_H100_80GB */
	char *display;             /* "H100 80GB" */
	enum capacity_class cls;
	char *reservation;         /* the reservation's address, for CAPACITY_RESERVATION */
	char *quota_id;            /* the Cloud Quotas ID, or NULL */
	int64_t in_use;            /* GPUs of the stack's runs that are active and stay
				    * (a reservation: its inUseCount, in GPUs) */
	int64_t adds;              /* GPUs this plan starts */
	int has_limit;             /* 0: unknown */
	int64_t limit;             /* -1: unlimited */
	int has_request;           /* a declared QuotaPreference for this quota and region */
	int64_t requested;         /* its preferredValue */
	int has_granted;
	int64_t granted;           /* its grantedValue */
	int pending;               /* granted below requested, or being reconciled */
	int fits;                  /* 1: in_use + adds <= limit; 0: not, or unknown */
	/* Why it is neither known to fit nor known to be short, or NULL: the
	 * limits could not be read, or the outcome depends on a request Google
	 * has not decided (a reconciling preference without grantedValue). */
	char *unknown;
	/* A booking's row: what it holds counts only in [window_start_ms,
	 * window_end_ms); outside it the row holds 0 (0 and 0: always). */
	int64_t window_start_ms, window_end_ms;
};

struct capacity_cost {
	char *address;             /* "job.train", "reservation.pool" */
	int starts;                /* a job this plan starts (counted in the change of spend) */
	int running;               /* a job's run that is active and stays; a reservation that stays or is made */
	int known;                 /* 0: some price unknown */
	double usd_per_hour;
	double usd_max;            /* jobs: rate x timeout x attempts left; reservations: 0 */
	int64_t timeout_s;         /* jobs: the timeout usd_max counts (the job's, or the default) */
	int default_timeout;       /* 1: the job sets none, Vertex's CAPACITY_DEFAULT_TIMEOUT_S */
	int64_t attempts_left;     /* jobs: the attempt that starts or runs, and those after it */
	int ladder;		   /* jobs: usd_max counts later attempts on a pricier fallback rung */
	int upper_bound;           /* a FLEX_START rate taken from on_demand */
	int estimate;              /* some figure used is marked an estimate */
	char *note;                /* a reservation's "16 H100 held, 8 used by declared jobs: $X/h idle", or NULL */
	char *why;                 /* unknown: "no published price for MACHINE in REGION", or NULL */
	/* What is held: held 1. With autoscaling (has_range) its rate moves from
	 * usd_min to usd_max per hour as its VMs move from vms_min to vms_max;
	 * usd_per_hour is at vms, the VMs declared. */
	int held;
	int has_range;
	int64_t vms, vms_min, vms_max;
	double usd_min, usd_max_per_hour;
	/* A booking, held only in its window: usd_window for the whole window
	 * (window_hours x usd_per_hour), paid used or not; gpus its GPUs in all,
	 * gpu their name. An estimate (the on-demand rate stands in). */
	int64_t window_start_ms, window_end_ms;
	double window_hours, usd_window;
	int64_t gpus;
	const char *gpu; /* static: "L4", or NULL */
};

struct capacity_report {
	struct capacity_row *rows;   /* sorted by region, accelerator, class */
	size_t nrows;
	struct capacity_cost *costs; /* by address */
	size_t ncosts;
	struct vx_diags misfits;     /* "job.c: does not fit: ..." (warnings or errors, the caller's choice) */
	int any;                     /* the stack has jobs with GPUs or reservations: show the sections */
	int limits_read;             /* quota limits were read */
	/* The change in hourly spend this plan makes: the runs it starts, minus
	 * the active runs it cancels (cancel, replace; priced from their recorded
	 * spec), plus the reservations it makes, resizes or deletes (count change
	 * x the VM's rate); and the most the runs it starts can cost. delta_known
	 * 0 when any price is unknown. */
	double delta_per_hour;       /* started - stopped + reservations */
	double started_per_hour;
	double stopped_per_hour;     /* >= 0: subtracted */
	double reservations_per_hour; /* signed */
	double max_total;
	int delta_known;
	int delta_upper_bound;
	const char *currency;        /* borrowed from the prices, or NULL */
	const char *price_source;
	const char *price_date;
	/* A job on an A2/A3/A4/G2/G4 machine type is in the plan: its figure is the
	 * Compute Engine rate, without Vertex AI's training management fee. */
	int fee_excluded;
	/* What the bookings this plan makes cost for their whole windows, paid
	 * used or not (an estimate: on-demand rates stand in for unpublished
	 * calendar-mode prices); not in delta_per_hour, nor in max_total. */
	double bookings_total;
	/* What the bookings this plan cancels before their windows open would
	 * have cost for their windows (the same estimate): saved, not in
	 * delta_per_hour. */
	double bookings_saved;
};

struct capacity_input {
	const struct stack *st;
	const struct plan *plan;
	const struct live_set *live;              /* NULL: refresh off */
	const struct live_quota_limits *limits;   /* NULL: not read */
	const struct prices *prices;              /* NULL: none */
	/* Why the quota limits could not be read (the caller may not read
	 * Cloud Quotas, the API is off, not found), or NULL: the check is then
	 * advice, every quota row unknown with this reason. */
	const char *limits_error;
	/* The plan's clock: a booking holds its VMs only inside its window (0: unknown, always). */
	int64_t now_ms;
	/* 1: price the runs even when the stack has no GPU (a budget counts every
	 * run); any stays 0 then, so no capacity section is shown. */
	int price_all;
};

/* Default scheduling.timeout when a job sets none: 7 days. */
#define CAPACITY_DEFAULT_TIMEOUT_S (7 * 24 * 3600)

/* Whether st has a job with GPUs or a reservation: only then are quota
 * limits read and capacity shown. */
int capacity_wanted(const struct stack *st);

/* The services whose quota limits a plan of st reads (each kind's
 * limits_service), jobs' first (kind_table in reverse), into out; how many
 * (at most KIND_MAX). */
size_t capacity_limit_services(const struct stack *st, const char **out);

/* Whether p lets go of something held (deletes a reservation, cancels a booking): what that
 * saves is shown though the stack may declare nothing with GPUs any more. */
int capacity_releases_held(const struct plan *p);

int capacity_build(struct capacity_report *out, const struct capacity_input *in, struct vx_err *err) VX_WUR;
void capacity_release(struct capacity_report *r);
/* The cost of address, or NULL. */
const struct capacity_cost *capacity_cost_of(const struct capacity_report *r, const char *address);

/* "$1,234.56" (two decimals; "unknown" for known 0) into b. VX_ENOMEM. */
struct vx_buf;
int capacity_money(struct vx_buf *b, const char *currency, double v, int decimals) VX_WUR;

#endif
