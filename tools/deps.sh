#!/bin/sh
# Installs (as root) or names (otherwise) the Debian packages vx needs to build and test.
# Called by 'make check', 'make demo' and 'make deps'.
#
# 'deps.sh --build', run by every build before it compiles, only checks what compiling
# needs and never installs: silent when pkg-config finds the libraries (however they
# were installed), else it names the missing Debian packages and the apt-get line, or,
# without dpkg, the pkg-config modules it cannot find.
set -e
BUILD_PKGS="build-essential pkg-config libcurl4-openssl-dev libyaml-dev libcjson-dev libssl-dev libgit2-dev"
# yamllint and python3-yaml: make lint-ci checks the CI recipes in examples/ci/.
# curl: tests/e2e/test_docs.py runs the README's quick start, which scripts the fake with it.
# shellcheck: make lint-ci checks tools/setup-vx.sh, the setup action's steps.
PKGS="$BUILD_PKGS git python3 openssl libcmocka-dev nghttp2-proxy yamllint python3-yaml curl shellcheck"
# chromium: make check loads the report page in it, headless (tests/browser/).
PKGS="$PKGS chromium"
# zsh and fish: tests/e2e/test_completion.py runs the completion scripts in them.
# mandoc: make lint-ci lints the man pages; man-db, dpkg-dev and lintian: make check-deb
# builds the .deb, checks it and installs it (man -w vx).
PKGS="$PKGS zsh fish mandoc man-db dpkg-dev lintian"
# python3-jsonschema: the end-to-end tests check every plan, status, report and webhook body
# vx writes against docs/*.schema.json (Draft 2020-12) with it (tests/e2e/schemas.py).
PKGS="$PKGS python3-jsonschema"
# python3-html5lib: tests/e2e/test_budget.py parses the report page with html5lib and fails on
# any parse error it reports.
PKGS="$PKGS python3-html5lib"
# jq and nodejs: tests/ci/test_watch_issues.py runs the watch recipes' issue keeping (GitLab's in
# sh with curl and jq, GitHub's github-script in node) against fake APIs on loopback.
PKGS="$PKGS jq nodejs"
# prometheus: its promtool checks the metrics file of vx watch (tests/e2e/test_watch.py).
PKGS="$PKGS prometheus"
# cppcheck, clang-tidy and clang-format: make lint (in make check) runs the two analysers on
# every product .c file and clang-format on the lines changed since the base (.clang-format).
PKGS="$PKGS cppcheck clang-tidy clang-format"
PKGS="$PKGS valgrind"
MODULES="yaml-0.1 libcurl libcjson openssl libgit2"
install=yes
if [ "$1" = --build ]; then
	if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $MODULES; then
		exit 0
	fi
	if ! command -v dpkg-query >/dev/null 2>&1; then
		missing=""
		for m in $MODULES; do
			command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$m" || missing="$missing $m"
		done
		echo "deps: pkg-config cannot find:$missing (install their development packages)" >&2
		exit 1
	fi
	PKGS=$BUILD_PKGS
	install=no
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ $install = yes ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
	exit 0
fi
echo "deps: missing Debian packages. Install them with:" >&2
echo "  sudo apt-get install -y$missing" >&2
exit 1
