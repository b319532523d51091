#include "reconcile/kind.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "reconcile/kind_future.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_quota.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/plan.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"

#include "util/banned.h"

/* Phase order: what a later kind may depend on comes first. */
const struct kind *const kind_table[] = {
	&kind_quota,
	&kind_reservation,
	&kind_future,
	&kind_persistent,
	&kind_job,
};
const size_t kind_count = sizeof(kind_table) / sizeof(kind_table[0]);
_Static_assert(sizeof(kind_table) / sizeof(kind_table[0]) <= KIND_MAX, "KIND_MAX is too small");
/* Each kind has a need bit of its own (reconcile/provider.h). */
_Static_assert(KIND_MAX <= PROVIDER_NEED_KINDS, "KIND_MAX is too large");

const struct kind *kind_of_address(const char *address)
{
	const char *dot = address ? strchr(address, '.') : NULL;

	for (size_t i = 0; dot && i < kind_count; i++)
		if (strlen(kind_table[i]->prefix) == (size_t)(dot - address) &&
		    !strncmp(address, kind_table[i]->prefix, (size_t)(dot - address)))
			return kind_table[i];
	return NULL;
}

const struct kind *kind_by_name(const char *name)
{
	for (size_t i = 0; name && i < kind_count; i++)
		if (!strcmp(kind_table[i]->name, name))
			return kind_table[i];
	return NULL;
}

int kind_is_job_ref_field(const char *key)
{
	for (size_t k = 0; key && k < kind_count; k++)
		if (kind_table[k]->job_ref_field && !strcmp(kind_table[k]->job_ref_field, key))
			return 1;
	return 0;
}

const char *kind_spec_held_ref(const struct cJSON *spec)
{
	for (size_t k = 0; spec && k < kind_count; k++) {
		const cJSON *v;

		if (!kind_table[k]->job_ref_field)
			continue;
		v = cJSON_GetObjectItemCaseSensitive(spec, kind_table[k]->job_ref_field);
		if (cJSON_IsString(v))
			return v->valuestring;
	}
	return NULL;
}

const char *kind_address_name(const struct kind *k, const char *address)
{
	size_t n = strlen(k->prefix);

	return address && !strncmp(address, k->prefix, n) && address[n] == '.' ? address + n + 1 : NULL;
}

int kind_list_addresses(struct vx_buf *out, const char *suffix)
{
	int rc = 0;

	for (size_t k = kind_count; k-- > 0 && rc == 0;) {
		const char *sep = k == 0 ? " or " : ", ";

		rc = vx_buf_printf(out, "%s%s%s", k + 1 == kind_count ? "" : sep, kind_table[k]->prefix, suffix);
	}
	return rc < 0 ? VX_ENOMEM : 0;
}

int kind_list_names(struct vx_buf *out)
{
	int rc = 0;

	for (size_t k = kind_count; k-- > 0 && rc == 0;)
		rc = vx_buf_printf(out, "%s%s", k + 1 == kind_count ? "" : ", ", kind_table[k]->name);
	return rc < 0 ? VX_ENOMEM : 0;
}

int kind_targeted(const struct kind_plan_input *in, const char *address)
{
	for (size_t i = 0; i < in->ntargets; i++)
		if (sweep_address_matches(in->targets[i], address))
			return 1;
	return in->ntargets == 0;
}

int kind_replaced(const struct kind_plan_input *in, const char *address)
{
	/* A sweep's address or a slice of it names each of its runs, as in -target. */
	for (size_t i = 0; i < in->nreplaces; i++)
		if (sweep_address_matches(in->replaces[i], address))
			return 1;
	return 0;
}

size_t kind_index(const struct kind *k)
{
	for (size_t i = 0; i < kind_count; i++)
		if (kind_table[i] == k)
			return i;
	return KIND_MAX;
}

const void *kind_live(const struct live_set *ls, const struct kind *k)
{
	size_t i = kind_index(k);

	return ls && i < KIND_MAX ? ls->of[i] : NULL;
}

void *kind_live_slot(struct live_store *ls, const struct kind *k)
{
	size_t i = kind_index(k);

	if (i >= KIND_MAX)
		return NULL;
	if (!ls->of[i])
		ls->of[i] = calloc(1, k->live_size ? k->live_size : 1);
	return ls->of[i];
}

void live_store_release(struct live_store *ls)
{
	for (size_t k = 0; k < kind_count; k++) {
		if (ls->of[k] && kind_table[k]->live_release)
			kind_table[k]->live_release(ls->of[k]);
		free(ls->of[k]);
	}
	for (size_t i = 0; i < ls->nread; i++)
		free(ls->read[i]);
	free(ls->read);
	for (size_t i = 0; i < ls->nalso; i++)
		free(ls->also[i]);
	free(ls->also);
	memset(ls, 0, sizeof(*ls));
}

int live_store_note(struct live_store *ls, int jobs, const char *what)
{
	char ***arr = jobs ? &ls->read : &ls->also;
	size_t *n = jobs ? &ls->nread : &ls->nalso;
	char **grown = realloc(*arr, (*n + 1) * sizeof(*grown));

	if (!grown)
		return VX_ENOMEM;
	*arr = grown;
	if (!(grown[*n] = strdup(what)))
		return VX_ENOMEM;
	(*n)++;
	return 0;
}

struct live_set live_store_view(const struct live_store *ls)
{
	struct live_set v;

	for (size_t k = 0; k < KIND_MAX; k++)
		v.of[k] = ls->of[k];
	return v;
}

/* The (project, place) pairs a kind's refresh lists, each once. */
struct places {
	const char **project, **place;
	size_t n, cap_project, cap_place;
};

static int places_add(struct places *ps, const char *project, const char *place)
{
	if (!place || !project)
		return 0;
	for (size_t i = 0; i < ps->n; i++)
		if (!strcmp(ps->place[i], place) && !strcmp(ps->project[i], project))
			return 0;
	if (VX_ALLOC_GROW(ps->project, ps->n + 1, ps->cap_project) < 0 ||
	    VX_ALLOC_GROW(ps->place, ps->n + 1, ps->cap_place) < 0)
		return VX_ENOMEM;
	ps->project[ps->n] = project;
	ps->place[ps->n++] = place;
	return 0;
}

/* Where st's declarations and state's records of k are. */
static int places_of(const struct kind *k, const struct kind_places *how, const struct stack *st,
		     const struct state *state, struct places *ps)
{
	int rc = 0;

	for (size_t i = 0; i < stack_count(st, k) && rc == 0; i++)
		rc = places_add(ps, st->project, how->decl_place(st, i));
	for (size_t i = 0; how->n_also && i < how->n_also(st) && rc == 0; i++)
		rc = places_add(ps, st->project, how->also_place(st, i));
	for (size_t i = 0; state && i < state->nrecords && rc == 0; i++) {
		const struct state_record *r = &state->records[i];
		const char *project = NULL, *place = NULL;

		/* A record of a prefix no kind has is left alone, whatever its kind name. */
		if (strcmp(r->kind, k->name) != 0 || !kind_address_name(k, r->address))
			continue;
		how->record_place(r, st, &project, &place);
		rc = places_add(ps, project, place);
	}
	return rc;
}

int kind_refresh_places(const struct kind *k, const struct kind_places *how, struct live_store *out,
			struct provider *p, const struct stack *st, const struct state *state,
			struct vx_err *err)
{
	struct places ps = { 0 };
	int rc = kind_live_slot(out, k) ? places_of(k, how, st, state, &ps) : VX_ENOMEM;

	if (rc < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < ps.n && rc == 0; i++) {
		char *what = vx_asprintf("%s in %s", how->noun, ps.place[i]);

		if (!what || live_store_note(out, 0, what) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		free(what);
		if (rc == 0 && (rc = how->list(out, p, ps.project[i], ps.place[i], err)) < 0)
			rc = vx_err_wrap(err, "reading %s in %s", how->noun, ps.place[i]);
	}
	free(ps.project);
	free(ps.place);
	return rc;
}

int kind_check_prices(const struct stack *st, const struct prices *p, struct vx_diags *out)
{
	int rc = 0, r;

	for (size_t k = 0; k < kind_count; k++) {
		if (!kind_table[k]->check_prices)
			continue;
		if ((r = kind_table[k]->check_prices(st, p, out)) < 0)
			return r;
		rc = rc || r;
	}
	return rc;
}

size_t kind_count_decls(const struct kind *k, const struct stack *st)
{
	return k->count_decls ? k->count_decls(st) : stack_count(st, k);
}

const struct stack_decl *kind_decl_at(const struct kind *k, const struct stack *st, size_t i)
{
	const struct stack_kind_decls *s;

	if (k->decl_at)
		return k->decl_at(st, i);
	s = stack_slot_c(st, k);
	if (!s || i >= s->n || !k->decl_size)
		return NULL;
	/* the declaration's first member */
	return (const struct stack_decl *)(const void *)((const char *)s->items + i * k->decl_size);
}

const struct stack_decl *kind_find_decl(const struct kind *k, const struct stack *st, const char *name)
{
	return k->find_decl ? k->find_decl(st, name) : stack_find_in(st, k, name);
}

int kind_plan_each(const struct kind *k, const struct kind_plan_steps *how, struct plan *p,
		   const struct kind_plan_input *in, void *ud, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < kind_count_decls(k, in->st) && rc == 0; i++) {
		const struct stack_decl *d = kind_decl_at(k, in->st, i);

		/* d is the first member of the kind's declaration */
		if (kind_targeted(in, d->address))
			rc = how->declared(p, in, d, ud);
	}
	for (size_t i = 0; i < in->state->nrecords && rc == 0; i++) {
		const struct state_record *r = &in->state->records[i];

		if (!strcmp(r->kind, k->name) && kind_address_name(k, r->address) && kind_targeted(in, r->address) &&
		    !stack_find_decl(in->st, r->address))
			rc = how->removed(p, in, r, ud);
	}
	for (size_t i = 0; how->describe && i < p->n && rc == 0; i++)
		if (p->actions[i].kind_of == k && !p->actions[i].shape)
			p->actions[i].shape = how->describe(&p->actions[i]); /* NULL: none */
	return rc < 0 ? vx_err_set(err, rc, "planning %s: out of memory", how->noun) : 0;
}

int kind_refresh_all(struct live_store *out, struct provider *p, const struct stack *st,
		     const struct state *state, struct vx_err *err)
{
	int rc = 0;

	live_store_release(out);
	for (size_t k = 0; k < kind_count && rc == 0; k++)
		rc = kind_table[k]->refresh(out, p, st, state, err);
	return rc;
}
