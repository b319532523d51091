#ifndef VX_UTIL_TEXT_H
#define VX_UTIL_TEXT_H

/*
 * Making text that a server sent safe to show. A message, a display name or
 * a state read from the network may hold terminal escape sequences (clearing
 * the screen, retitling the window, forging lines), so every such string is
 * passed through here before it enters an error, a log line or the state:
 *
 *  - tab, line feed and carriage return become a space (Google's messages
 *    are sometimes several lines; one line cannot be forged from them);
 *  - every other C0 control, DEL and every C1 control (U+0080..U+009F)
 *    becomes '?';
 *  - a byte that is not part of well-formed UTF-8 (overlong forms,
 *    surrogates, past U+10FFFF, cut-off sequences) becomes '?';
 *  - valid UTF-8 otherwise passes unchanged.
 */

#include <stddef.h>

#include "util/err.h"

struct vx_buf;

/* Appends the cleaned form of s[0..len) to b. Returns 0, VX_ENOMEM or VX_EINVAL (b's cap). */
int vx_text_add_clean(struct vx_buf *b, const char *s, size_t len) VX_WUR;

/* A cleaned copy of the NUL-terminated s (caller frees); NULL for NULL or on OOM. */
char *vx_text_clean(const char *s);

/* 1 when s is already clean (vx_text_clean would return it unchanged). */
int vx_text_is_clean(const char *s, size_t len);

/*
 * Hides the credentials of every URL in s, in place: in "https://user:token@host/x"
 * the userinfo (from after the scheme's slashes to the '@' before the host,
 * whatever it holds) becomes three asterisks (as many as it has bytes when
 * fewer: s never grows). For messages that may quote a git remote's URL, which
 * CI recipes give a token in (libgit2 reads no other credential helper).
 */
void vx_text_redact_userinfo(char *s);

/* Whether a and b are both NULL or equal strings. */
int vx_text_same(const char *a, const char *b);

#endif
