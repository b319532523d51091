#!/bin/sh
# make image: builds the root Dockerfile as IMAGE, then checks that it is under
# 100 MB (docker's own figure, uncompressed), runs as a user other than root and
# that 'vx version' in it names this version.
#
#   tools/image.sh IMAGE VERSION COMMIT [--skip-ok]
#
# Without a docker daemon it says why and fails, or with --skip-ok (make
# check's call) exits 0 after saying so.
set -eu
image=$1 version=$2 commit=$3 skip_ok=${4:-}
limit=100000000

skip() {
	if [ "$skip_ok" = --skip-ok ]; then
		echo "image: skipped: $*"
		exit 0
	fi
	echo "image: $*" >&2
	exit 1
}
command -v docker >/dev/null 2>&1 || skip "docker is not installed"
why=$(docker info 2>&1 >/dev/null) || skip "docker cannot reach its daemon ($(echo "$why" | tail -1))"

epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
docker build --build-arg VX_COMMIT="$commit" --build-arg SOURCE_DATE_EPOCH="$epoch" -t "$image" .
size=$(docker image inspect -f '{{.Size}}' "$image")
[ "$size" -lt $limit ] || { echo "image: $image is $size bytes, over 100 MB" >&2; exit 1; }
uid=$(docker run --rm --entrypoint id "$image" -u)
[ "$uid" != 0 ] || { echo "image: $image runs as root" >&2; exit 1; }
first=$(docker run --rm "$image" version | head -1)
[ "$first" = "vx $version" ] || { echo "image: vx version in $image says '$first'" >&2; exit 1; }
echo "image: $image: $size bytes, uid $uid, $first"
