#ifndef VX_STATE_GIT_URL_H
#define VX_STATE_GIT_URL_H

/*
 * A remote's URL as git reads it, for the state backend's fetch and push
 * (state_git.c, which holds it) and vx watch -follow (git_follow.c).
 */

struct git_repository;

/*
 * remote.NAME.url of repo, as a string the caller frees; NULL when unset,
 * empty or out of memory. A relative path (`git remote add origin
 * ../origin.git`) is made absolute against the repository's top directory
 * (its workdir; a bare repository's own directory), where git runs its
 * commands, rather than vx's current directory, which libgit2 would use.
 */
char *git_url_of_remote(struct git_repository *repo, const char *remote);

/* Whether url names a directory on this machine: a path, or a file:// URL
 * ("host:path", a colon before any slash, is ssh, as git reads it). */
int git_url_is_local(const char *url);

#endif
