/*
 * The Stack's `notify:` targets (docs/format.md, "Notifications"):
 *
 *	notify:
 *	  - urlEnv: SLACK_WEBHOOK_URL   # or url: https://...
 *	    format: slack               # slack | json (default)
 *	    secretEnv: VX_WEBHOOK_SECRET
 *	    on: [gave-up, resubmitted, stuck, watch-error]
 *
 * A webhook URL is usually itself the credential (Slack's carries its token
 * in the path), so `url:` refuses what plainly holds one (userinfo, a query,
 * Slack's hooks host): such a URL belongs in the environment, named by
 * urlEnv, and never in git, the plan or the state.
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/notify.h"
#include "util/buf.h"
#include "util/banned.h"

static const char *const notify_keys[] = { "url", "urlEnv", "format", "secretEnv", "on" };
static const char *const format_names[] = { "json", "slack" };

/* An environment variable's name as POSIX shells take it. */
static int env_name_valid(const char *s)
{
	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (size_t i = 1; s[i]; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_') || i >= 128)
			return 0;
	return 1;
}

/*
 * What is wrong with a URL written in the stack, or NULL when it may stay
 * there. Parsed as libcurl parses it to send it (reconcile/notify.h), so
 * the host checked is the host posted to.
 */
static const char *url_problem(const char *u)
{
	struct notify_url nu;
	const char *why;

	if (strspn(u, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/%@!$&'()*+,;=[]?#") !=
	    strlen(u))
		return "characters a URL may not hold";
	if ((why = notify_url_parse(&nu, u))) {
		if (!strncmp(why, "credentials", 11))
			return "credentials in the URL (user:password@): put the URL in the environment and name "
			       "it with urlEnv";
		return why;
	}
	if (nu.query)
		return "a query string, where webhook URLs carry their tokens: put the URL in the "
		       "environment and name it with urlEnv";
	if (nu.slack)
		return "a Slack webhook URL, whose path is its secret: put it in the environment and name "
		       "it with urlEnv";
	return NULL;
}

/* An event name no stack or kind has: said with the nearest one. */
static void unknown_event(struct loader *L, const struct ynode *it, const char *path)
{
	const struct notify_event_kind *all[NOTIFY_MAX_KINDS];
	const char *names[NOTIFY_MAX_KINDS];
	size_t n = notify_kinds(all, NOTIFY_MAX_KINDS);

	for (size_t i = 0; i < n && i < NOTIFY_MAX_KINDS; i++)
		names[i] = all[i]->name;
	stack_unknown_word(L, it, path, "event", names, n < NOTIFY_MAX_KINDS ? n : NOTIFY_MAX_KINDS);
}

static void read_on(struct loader *L, struct stack_notify *n, const struct ynode *on, const char *path)
{
	char p[96];

	n->on = 0;
	if (on->kind != YNODE_SEQ) {
		snprintf(p, sizeof(p), "%s.on", path);
		stack_wrong_type(L, on, p, "sequence");
		return;
	}
	if (on->n == 0) {
		snprintf(p, sizeof(p), "%s.on", path);
		stack_err(L, on, "%s: empty: name the events to send, or leave it out for the default", p);
	}
	for (size_t i = 0; i < on->n; i++) {
		const struct ynode *it = on->items[i];
		unsigned bit;

		snprintf(p, sizeof(p), "%s.on[%zu]", path, i);
		if (!stack_is_string(it))
			stack_wrong_type(L, it, p, "string");
		else if (!(bit = notify_kind_parse(it->str)))
			unknown_event(L, it, p);
		else
			n->on |= bit;
	}
}

static void read_target(struct loader *L, struct stack_notify *n, const struct ynode *m, const char *path)
{
	const struct ynode *v, *url_node = NULL;
	const char *s;
	const char *why;
	int f;

	n->format = NOTIFY_FORMAT_JSON;
	n->on = STACK_NOTIFY_DEFAULT;
	n->line = m->line;
	n->col = m->col;
	stack_check_keys(L, m, path, notify_keys, ARRAY_SIZE(notify_keys));
	if (stack_get_str(&s, &url_node, L, m, path, "url", 0)) {
		if ((why = url_problem(s)))
			stack_err(L, url_node, "%s.url: %s", path, why);
		else
			n->url = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &v, L, m, path, "urlEnv", 0)) {
		if (url_node)
			stack_err(L, v, "%s: url and urlEnv: give one of them", path);
		else if (!env_name_valid(s))
			stack_err(L, v, "%s.urlEnv: \"%s\" is not an environment variable name", path, s);
		else
			n->url_env = stack_dup_opt(L, s);
	} else if (!url_node && !stack_get_value(m, "url")) {
		stack_err(L, m, "%s: needs urlEnv (the environment variable holding the webhook URL) or url", path);
	}
	if (stack_get_str(&s, &v, L, m, path, "format", 0)) {
		char p[96];

		snprintf(p, sizeof(p), "%s.format", path);
		for (f = 0; f < (int)ARRAY_SIZE(format_names) && strcmp(s, format_names[f]); f++)
			;
		if (f == (int)ARRAY_SIZE(format_names))
			stack_unknown_word(L, v, p, "value", format_names, ARRAY_SIZE(format_names));
		else
			n->format = f == 1 ? NOTIFY_FORMAT_SLACK : NOTIFY_FORMAT_JSON;
	}
	if (stack_get_str(&s, &v, L, m, path, "secretEnv", 0)) {
		if (!env_name_valid(s))
			stack_err(L, v, "%s.secretEnv: \"%s\" is not an environment variable name", path, s);
		else
			n->secret_env = stack_dup_opt(L, s);
	}
	if ((v = stack_get_value(m, "on")))
		read_on(L, n, v, path);
}

void stack_notify_read(struct stack *st, struct loader *L, const struct ynode *doc)
{
	const struct ynode *seq = stack_get_value(doc, "notify");
	char path[48];

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "notify", "sequence");
		return;
	}
	if (seq->n > 16) {
		stack_err(L, seq->items[16], "notify: at most 16 targets");
		return;
	}
	if (!seq->n)
		return;
	if (!(st->notify = calloc(seq->n, sizeof(*st->notify)))) {
		stack_oom(L);
		return;
	}
	st->nnotify = seq->n;
	for (size_t i = 0; i < seq->n; i++) {
		snprintf(path, sizeof(path), "notify[%zu]", i);
		if (seq->items[i]->kind != YNODE_MAP)
			stack_wrong_type(L, seq->items[i], path, "mapping");
		else
			read_target(L, &st->notify[i], seq->items[i], path);
	}
}

void stack_notify_release(struct stack *st)
{
	for (size_t i = 0; i < st->nnotify; i++) {
		free(st->notify[i].url);
		free(st->notify[i].url_env);
		free(st->notify[i].secret_env);
	}
	free(st->notify);
	st->notify = NULL;
	st->nnotify = 0;
}

static int canonical_str(struct vx_buf *b, const char *key, const char *v, int *first)
{
	int rc;

	if (!v)
		return 0;
	if ((rc = vx_buf_printf(b, "%s\"%s\":", *first ? "" : ",", key)))
		return rc;
	*first = 0;
	return vx_buf_add_json_str(b, v);
}

int stack_notify_canonical(struct vx_buf *b, const struct stack *st)
{
	int rc;

	if (!st->nnotify)
		return 0;
	if ((rc = vx_buf_adds(b, ",\"notify\":[")))
		return rc;
	for (size_t i = 0; i < st->nnotify; i++) {
		const struct stack_notify *n = &st->notify[i];
		int first = 1;

		if ((rc = vx_buf_adds(b, i ? ",{" : "{")) ||
		    (rc = canonical_str(b, "format", notify_format_name((enum notify_format)n->format), &first)) ||
		    (rc = vx_buf_printf(b, ",\"on\":%u", n->on)) || (rc = canonical_str(b, "secretEnv", n->secret_env, &first)) ||
		    (rc = canonical_str(b, "url", n->url, &first)) ||
		    (rc = canonical_str(b, "urlEnv", n->url_env, &first)) || (rc = vx_buf_addc(b, '}')))
			return rc;
	}
	return vx_buf_addc(b, ']');
}
