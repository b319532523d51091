/*
 * The Stack's `budget:` (docs/budgets.md, docs/format.md):
 *
 *	budget:
 *	  usd: 20000          # the most the stack may spend per period
 *	  period: 30d         # a rolling window of N days, or month (calendar month, UTC)
 *	  warnAt: [50, 80]    # percents: a `budget` notification once per threshold per period
 *
 * and the amounts of dollars the loader reads elsewhere (a job's maxHourlyUsd).
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

static const char *const budget_keys[] = { "usd", "period", "warnAt" };

/* The most an amount may be: far beyond any budget, and exact in a double to the cent. */
#define USD_MAX 1e9

/* Whether s is digits with at most one '.' followed by one or two digits. */
static int usd_text_valid(const char *s)
{
	size_t n = strspn(s, "0123456789"), frac;

	if (n == 0 || n > 10)
		return 0;
	if (!s[n])
		return 1;
	if (s[n] != '.')
		return 0;
	frac = strspn(s + n + 1, "0123456789");
	return (frac == 1 || frac == 2) && !s[n + 1 + frac];
}

int stack_get_usd(double *out, const struct ynode **node, struct loader *L, const struct ynode *map,
		  const char *path, const char *key)
{
	const struct ynode *v = stack_get_value(map, key);
	char full[96];
	double x;

	if (node)
		*node = v;
	if (!v)
		return 0;
	snprintf(full, sizeof(full), "%s%s%s", path, *path ? "." : "", key);
	if (v->kind != YNODE_SCALAR || v->style != YSTYLE_PLAIN || !usd_text_valid(v->str)) {
		stack_err(L, v, "%s: expected an amount of US dollars (like 40 or 12.50), got %s%s%s", full,
			  v->kind == YNODE_SCALAR ? "\"" : "", v->kind == YNODE_SCALAR ? v->str : stack_type_of(v),
			  v->kind == YNODE_SCALAR ? "\"" : "");
		return 0;
	}
	x = strtod(v->str, NULL);
	if (x <= 0 || x > USD_MAX) {
		stack_err(L, v, "%s: must be above 0 and at most 1000000000, got %s", full, v->str);
		return 0;
	}
	*out = x;
	return 1;
}

/* period: "month", or "Nd" with N from 1 to STACK_BUDGET_MAX_DAYS. */
static void read_period(struct loader *L, struct stack_budget *b, const struct ynode *m)
{
	const struct ynode *v;
	const char *s;
	size_t n;

	b->days = 30;
	if (!stack_get_str(&s, &v, L, m, "budget", "period", 0))
		return;
	n = strspn(s, "0123456789");
	if (!strcmp(s, "month")) {
		b->days = 0;
	} else if (n == 0 || n > 3 || strcmp(s + n, "d") || s[0] == '0' ||
		   strtol(s, NULL, 10) > STACK_BUDGET_MAX_DAYS) {
		stack_err(L, v, "budget.period: \"%s\" is not a period: write Nd (a rolling window of N days, "
				"1 to %d, like 30d) or month (the calendar month, UTC)",
			  s, STACK_BUDGET_MAX_DAYS);
	} else {
		b->days = strtol(s, NULL, 10);
	}
}

/* warnAt: percents of usd, each from 1 to 100, strictly ascending. */
static void read_warn_at(struct loader *L, struct stack_budget *b, const struct ynode *m)
{
	const struct ynode *seq = stack_get_value(m, "warnAt");
	char path[48];

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "budget.warnAt", "sequence");
		return;
	}
	if (seq->n > STACK_BUDGET_MAX_WARN) {
		stack_err(L, seq->items[STACK_BUDGET_MAX_WARN], "budget.warnAt: at most %d thresholds",
			  STACK_BUDGET_MAX_WARN);
		return;
	}
	for (size_t i = 0; i < seq->n; i++) {
		const struct ynode *it = seq->items[i];
		struct ynode_why why;
		int64_t x;

		snprintf(path, sizeof(path), "budget.warnAt[%zu]", i);
		if (ynode_int(&x, &why, it, INT64_MIN, INT64_MAX) < 0)
			stack_err(L, it, "%s: %s", path, why.s);
		else if (x < 1 || x > 100)
			stack_err(L, it, "%s: a percent from 1 to 100, got %lld", path, (long long)x);
		else if (b->nwarn && x <= b->warn_at[b->nwarn - 1])
			stack_err(L, it, "%s: %lld: the thresholds must be in ascending order, each once", path,
				  (long long)x);
		else
			b->warn_at[b->nwarn++] = (int)x;
	}
}

void stack_budget_read(struct stack *st, struct loader *L, const struct ynode *doc)
{
	const struct ynode *m = stack_get_map(L, doc, "budget", "budget");
	struct stack_budget *b = &st->budget;

	if (!m)
		return;
	stack_check_keys(L, m, "budget", budget_keys, ARRAY_SIZE(budget_keys));
	b->line = m->line;
	b->col = m->col;
	if (!stack_get_value(m, "usd"))
		stack_get_missing(L, m, "budget", "usd");
	else if (stack_get_usd(&b->usd, NULL, L, m, "budget", "usd"))
		b->set = 1;
	read_period(L, b, m);
	read_warn_at(L, b, m);
}

char *stack_budget_period(const struct stack_budget *b, char *buf, size_t size)
{
	if (b->days)
		snprintf(buf, size, "%lldd", (long long)b->days);
	else
		snprintf(buf, size, "month");
	return buf;
}

int stack_budget_canonical(struct vx_buf *b, const struct stack *st)
{
	const struct stack_budget *bu = &st->budget;
	char period[16];
	int rc;

	if (!bu->set)
		return 0;
	/* Cents as an integer: the hash must not depend on how a double prints. */
	rc = vx_buf_printf(b, ",\"budget\":{\"period\":\"%s\",\"usdCents\":\"%lld\",\"warnAt\":[",
			   stack_budget_period(bu, period, sizeof(period)), (long long)llround(bu->usd * 100.0));
	for (size_t i = 0; i < bu->nwarn && rc == 0; i++)
		rc = vx_buf_printf(b, "%s%d", i ? "," : "", bu->warn_at[i]);
	return rc ? rc : vx_buf_adds(b, "]}");
}
