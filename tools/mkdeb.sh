#!/bin/sh
# Builds the Debian package from a built tree: what 'make deb' runs.
#
#   tools/mkdeb.sh BUILD OUT.deb VERSION
#
# BUILD holds a vx built with Debian's hardening flags (the Makefile's deb
# target builds it). The tree is staged by tools/install.sh --deb, given the
# copyright, changelog and lintian overrides from packaging/debian/, its
# dependencies from dpkg-shlibdeps (the libraries the binary links and the
# versions their symbols need; a fixed Debian 12 list where dpkg-dev is
# missing), md5sums, and packed by dpkg-deb --root-owner-group, so no
# fakeroot: every file is root's in the package whoever builds it.
set -eu
build=$1 out=$2 version=$3
arch=$(dpkg --print-architecture)
stage=$build/debroot
pkg=packaging/debian

top=$(sed -n '1s/^vx (\([^)]*\)).*/\1/p' $pkg/changelog)
if [ "$top" != "$version" ]; then
	echo "mkdeb: $pkg/changelog's newest entry is $top, the package is $version: add an entry" >&2
	exit 1
fi
# Reproducible: file times and gzip headers from the last commit, not now.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
sh tools/install.sh "$build" "$stage" /usr --deb
doc=$stage/usr/share/doc/vx
install -m 644 $pkg/copyright "$doc/copyright"
gzip -9n <$pkg/changelog >"$doc/changelog.Debian.gz"
chmod 644 "$doc/changelog.Debian.gz"
if [ -s $pkg/vx.lintian-overrides ]; then
	install -d "$stage/usr/share/lintian/overrides"
	install -m 644 $pkg/vx.lintian-overrides "$stage/usr/share/lintian/overrides/vx"
fi

if command -v dpkg-shlibdeps >/dev/null 2>&1; then
	# dpkg-shlibdeps wants a source package's debian/control beside it.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/debian"
	printf 'Source: vx\n\nPackage: vx\nArchitecture: any\n' >"$tmp/debian/control"
	bin=$(cd "$stage/usr/bin" && pwd)/vx
	depends=$(cd "$tmp" && dpkg-shlibdeps -O "$bin" | sed -n 's/^shlibs:Depends=//p')
else
	depends="libc6, libcurl4, libyaml-0-2, libcjson1, libssl3, libgit2-1.5"
fi
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
	$pkg/control.in >"$stage/DEBIAN/control"
(cd "$stage" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "mkdeb: $out (Depends: $depends)"
