#!/bin/sh
# GitLab's own schema on the GitLab recipe: gitlab-ci-local (pinned in tools/ci-parser/) reads
# .gitlab-ci.yml with its local includes, as GitLab would, and validates the merged pipeline
# against GitLab's JSON schema; a script line YAML reads as a mapping ("curl --header
# "A: b"" unquoted) fails here, where yamllint and tools/check-ci.py see nothing wrong.
#
# check-gitlab-ci.sh NODE_MODULES DIR: DIR holds .gitlab-ci.yml and what it includes.
set -eu
bin=$1/.bin/gitlab-ci-local
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# gitlab-ci-local reads a git checkout: a throwaway one holding only the recipe.
cp "$src"/.gitlab-ci.yml "$src"/*.yml "$tmp"/
git -C "$tmp" init -q
git -C "$tmp" add -A
git -C "$tmp" -c user.name=vx -c user.email=vx@localhost commit -qm recipe
if ! out=$(cd "$tmp" && "$bin" --list 2>&1); then
	printf '%s\n' "$out" | grep -v -e 'default remote branch' -e 'set-head origin' -e 'fallback git remote' >&2
	echo "gitlab-ci-local: $src/.gitlab-ci.yml is not a pipeline GitLab accepts" >&2
	exit 1
fi
printf '%s\n' "$out" | grep -q 'json schema validated' || {
	printf '%s\n' "$out" >&2
	echo "gitlab-ci-local: $src/.gitlab-ci.yml: no schema validation reported" >&2
	exit 1
}
echo "$src/.gitlab-ci.yml (with its includes): validated by gitlab-ci-local against GitLab's schema: ok"
