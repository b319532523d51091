#ifndef VX_STATE_STATE_SHARED_H
#define VX_STATE_STATE_SHARED_H

/*
 * What state.c (the model) and state_json.c (its JSON codec) share and
 * nothing else uses. Not part of state.h's public surface.
 */

#include "util/err.h"

/* vx_strdup that reports failure for a non-NULL input: *out NULL for NULL. 0 or VX_ENOMEM. */
int state_dup_opt(char **out, const char *s) VX_WUR;

/* Whether s is a stack name (allow_dot 0) or a record name (allow_dot 1): 1 to
 * STATE_MAX_NAME letters, digits, '_', '-' (and '.', and for a sweep's run
 * '[', ']', '=' and ','), not starting with '.'. */
int state_name_ok(const char *s, int allow_dot);

#endif
