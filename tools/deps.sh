#!/bin/sh
# Installs (as root) or names (otherwise) the Debian packages vx needs to build and test.
# Called by 'make check', 'make demo' and 'make deps'.
set -e
PKGS="build-essential pkg-config git python3 openssl libcurl4-openssl-dev libyaml-dev libcjson-dev libssl-dev libgit2-dev libcmocka-dev nghttp2-proxy"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
	exit 0
fi
echo "deps: missing Debian packages. Install them with:" >&2
echo "  sudo apt-get install -y$missing" >&2
exit 1
