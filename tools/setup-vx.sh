#!/bin/bash
# The steps of the setup action at the repository's root (action.yml), one subcommand each,
# so that tests/ci/test_setup_vx.py runs them outside GitHub. docs/ci.md says what the action
# does; this is how.
#
#   setup-vx.sh resolve                 the version and the repository to download from, to
#                                       $GITHUB_OUTPUT (version=, repo=)
#   setup-vx.sh release VERSION REPO    downloads vx_VERSION_amd64.deb and SHA256SUMS from the
#                                       release vVERSION, checks the .deb's SHA-256 against
#                                       SHA256SUMS, and installs it with apt-get (Depends pulled)
#   setup-vx.sh source-key              the cache key of a source build (key=): the runner's OS
#                                       and architecture and a hash of the sources
#   setup-vx.sh build PREFIX            installs the -dev packages, builds the action's own
#                                       sources and installs them under PREFIX
#   setup-vx.sh runtime PREFIX          a cached build: installs the runtime packages it needs
#   setup-vx.sh finish [PREFIX]         puts PREFIX/bin on $GITHUB_PATH, checks that vx runs,
#                                       and writes version= (what vx version says)
#
# Environment: GITHUB_ACTION_PATH (the action's checkout), GITHUB_OUTPUT, GITHUB_PATH,
# GITHUB_SERVER_URL, RUNNER_TEMP, INPUT_VERSION, ACTION_REPOSITORY, GH_TOKEN; for the tests,
# VX_SETUP_RELEASES (the base URL of the releases, default $GITHUB_SERVER_URL/REPO/releases/download;
# file:// or http:// on the loopback address too),
# VX_SETUP_OS_RELEASE (default /etc/os-release) and VX_SETUP_APT (default apt-get, with sudo when
# not root).
set -euo pipefail

VERSION_RE='^[0-9]+\.[0-9]+\.[0-9]+([~+-][0-9A-Za-z.~+-]+)?$'
REPO_RE='^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$'
DEV_PKGS="build-essential pkg-config libcurl4-openssl-dev libyaml-dev libcjson-dev libssl-dev libgit2-dev"

# The message as a workflow command (% escaped as GitHub documents; no line breaks
# reach here) and as plain text on stderr.
die() {
	local msg="$*"
	echo "::error title=vx setup::${msg//%/%25}"
	echo "vx setup: $msg" >&2
	exit 1
}

out() {
	echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}

apt() {
	if [ -n "${VX_SETUP_APT:-}" ]; then
		$VX_SETUP_APT "$@"
	elif [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get "$@"
	else
		sudo DEBIAN_FRONTEND=noninteractive apt-get "$@"
	fi
}

# "debian 12": the OS the runner (or the job's container) is.
os_id() {
	local f=${VX_SETUP_OS_RELEASE:-/etc/os-release} ID="" VERSION_ID=""
	# shellcheck disable=SC1090
	[ -r "$f" ] && . "$f"
	echo "${ID:-unknown} ${VERSION_ID:-unknown}"
}

resolve() {
	local version=${INPUT_VERSION:-} repo=${ACTION_REPOSITORY:-}
	if [ -z "$version" ]; then
		# The action's own ref is a release's commit: its VERSION file names that release
		# (uses: OWNER/vx@v0 follows the newest 0.x release, vX.Y.Z tags moving vX, and so its version).
		version=$(cat "${GITHUB_ACTION_PATH:?}/VERSION")
	fi
	version=${version#v}
	[[ $version =~ $VERSION_RE ]] || die "version: '$version' is not a release version such as 0.1.0 (or v0.1.0)"
	if [ -z "$repo" ]; then
		# Where the runner put the action: .../_actions/OWNER/REPO/REF.
		repo=$(basename "$(dirname "$(dirname "${GITHUB_ACTION_PATH:?}")")")/$(basename "$(dirname "$GITHUB_ACTION_PATH")")
	fi
	[[ $repo =~ $REPO_RE ]] || die "cannot tell which repository's releases to download from ('$repo')"
	out version "$version"
	out repo "$repo"
}

release() {
	local version=$1 repo=$2 os deb base tmp want got
	[[ $version =~ $VERSION_RE ]] || die "version: '$version' is not a release version"
	[[ $repo =~ $REPO_RE ]] || die "repository: '$repo' is not OWNER/NAME"
	os=$(os_id)
	if [ "$os" != "debian 12" ] || [ "$(uname -m)" != x86_64 ]; then
		die "the released vx_${version}_amd64.deb is built for Debian 12 (bookworm) on x86_64, and this" \
		    "job runs on $os $(uname -m): run the job in a Debian 12 container (container: debian:12)," \
		    "or set build-from: source"
	fi
	deb="vx_${version}_amd64.deb"
	base=${VX_SETUP_RELEASES:-${GITHUB_SERVER_URL:-https://github.com}/$repo/releases/download}/v$version
	tmp=$(mktemp -d "${RUNNER_TEMP:-/tmp}/vx-setup.XXXXXX")
	fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || die "cannot download SHA256SUMS of release v$version from $base"
	fetch "$base/$deb" "$tmp/$deb" || die "cannot download $deb of release v$version from $base"
	want=$(awk -v f="$deb" '($2 == f || $2 == "*" f) && $1 ~ /^[0-9a-f]+$/ && length($1) == 64 { print $1; exit }' \
		"$tmp/SHA256SUMS")
	[ -n "$want" ] || die "SHA256SUMS of release v$version has no SHA-256 for $deb: nothing installed"
	got=$(sha256sum "$tmp/$deb" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		die "$deb: its SHA-256 is $got, but SHA256SUMS of release v$version says $want: the" \
		    "download was cut short or altered; nothing installed"
	fi
	echo "vx setup: $deb: SHA-256 $got, as SHA256SUMS says"
	apt update -qq
	apt install -y -qq --no-install-recommends "$tmp/$deb"
	rm -rf "$tmp"
}

# URL to FILE: curl, with the token for this GitHub's own URLs only (a public release needs
# none; it raises the rate limit and reaches a private fork's releases). HTTPS only, but for
# file:// and plain HTTP to this machine's loopback address (a release folder served by a
# test, VX_SETUP_RELEASES), never redirected elsewhere.
fetch() {
	local auth=() proto='=https,file'
	if [ -n "${GH_TOKEN:-}" ] && [[ $1 == "${GITHUB_SERVER_URL:-https://github.com}/"* ]]; then
		auth=(-H "Authorization: Bearer $GH_TOKEN")
	fi
	if [[ $1 =~ ^http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?/ ]]; then
		proto='=http'
		curl -fsS --proto "$proto" --retry 3 -o "$2" "$1"
		return
	fi
	curl -fsSL --proto "$proto" --retry 3 "${auth[@]}" -o "$2" "$1"
}

source_key() {
	local os hash
	os=$(os_id | tr ' ' '-')
	hash=$(cd "${GITHUB_ACTION_PATH:?}" && find Makefile VERSION cmd util reconcile providers state workflow \
		-type f \( -name '*.[ch]' -o -name Makefile -o -name VERSION \) -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum | sha256sum | cut -c1-24)
	out key "vx-build-$os-$(uname -m)-$hash"
}

# The Debian packages holding the shared libraries vx links to, one a line.
runtime_packages() {
	local lib
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
		lib=$(readlink -f "$lib")
		dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || true
	done | cut -d: -f1 | LC_ALL=C sort -u
}

build() {
	local prefix=$1 tmp
	apt update -qq
	# shellcheck disable=SC2086
	apt install -y -qq --no-install-recommends $DEV_PKGS
	tmp=$(mktemp -d "${RUNNER_TEMP:-/tmp}/vx-build.XXXXXX")
	make -C "${GITHUB_ACTION_PATH:?}" -j"$(nproc)" BUILD="$tmp" all
	make -C "$GITHUB_ACTION_PATH" BUILD="$tmp" PREFIX="$prefix" install
	runtime_packages "$prefix/bin/vx" >"$prefix/runtime-packages"
	rm -rf "$tmp"
}

runtime() {
	local prefix=$1 missing="" p
	while read -r p; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done <"$prefix/runtime-packages"
	if [ -n "$missing" ]; then
		apt update -qq
		# shellcheck disable=SC2086
		apt install -y -qq --no-install-recommends $missing
	fi
}

finish() {
	local prefix=${1:-} vx=vx line
	if [ -n "$prefix" ]; then
		echo "$prefix/bin" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
		vx=$prefix/bin/vx
	fi
	line=$("$vx" version | head -n 1) || die "vx does not run: $vx version failed"
	echo "vx setup: $line"
	out version "$(echo "$line" | awk '{ print $2 }')"
}

cmd=${1:-}
shift || true
case $cmd in
resolve) resolve ;;
release) release "$@" ;;
source-key) source_key ;;
build) build "$@" ;;
runtime) runtime "$@" ;;
finish) finish "$@" ;;
*) echo "usage: setup-vx.sh resolve|release VERSION REPO|source-key|build PREFIX|runtime PREFIX|finish [PREFIX]" >&2; exit 64 ;;
esac
