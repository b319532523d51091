#include "reconcile/kind.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/kind_future.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_quota.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/sweep.h"
#include "state/state.h"
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

int kind_refresh_all(struct live_store *out, struct provider *p, const struct stack *st,
		     const struct state *state, struct vx_err *err)
{
	int rc = 0;

	live_store_release(out);
	for (size_t k = 0; k < kind_count && rc == 0; k++)
		rc = kind_table[k]->refresh(out, p, st, state, err);
	return rc;
}
