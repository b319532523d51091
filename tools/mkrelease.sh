#!/bin/sh
# The files of a release, into BUILD/release/: what 'make release' runs, after 'make deb'.
#
#   tools/mkrelease.sh BUILD VERSION DEB
#
#   vx_VERSION_ARCH.deb            the Debian 12 package (make deb), as built
#   vx-VERSION-linux-ARCH.tar.gz   the same hardened, stripped binary with its vxplan/vxapply links,
#                                  man pages, completions, docs and examples, under
#                                  vx-VERSION-linux-ARCH/, and a README naming the Debian 12
#                                  runtime packages it needs (the .deb's Depends)
#   SHA256SUMS                     sha256sum's lines for both, which the setup action checks
#
# The tarball is not a static binary: Debian 12 ships no static cJSON, and libcurl's and
# libgit2's static archives need static builds of libraries Debian does not ship as such
# (GSSAPI, LDAP, libssh2's crypto, ...), so a fully static vx would mean building those from
# source. The binary links the shared libraries of five runtime packages instead, which a
# stock Debian 12 installs without any -dev package (docs/packaging.md). File times and
# owners come from the last commit (SOURCE_DATE_EPOCH), so one commit gives the same bytes.
set -eu
build=$1 version=$2 deb=$3
arch=$(dpkg --print-architecture)
out=$build/release
name=vx-$version-linux-$arch
stage=$build/release-stage

[ -f "$deb" ] || { echo "mkrelease: $deb is missing: run make deb" >&2; exit 1; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

rm -rf "$out" "$stage"
mkdir -p "$out" "$stage"
cp "$deb" "$out/"

# The tree the .deb installs under /usr, rooted at the tarball's folder instead.
sh tools/install.sh "$build/deb" "$stage/$name" "" --deb
depends=$(dpkg-deb -f "$deb" Depends)
pkgs=$(echo "$depends" | tr ',' '\n' | sed 's/(.*//; s/|.*//; s/^ *//; s/ *$//' | grep . | tr '\n' ' ' | sed 's/ $//')
cat >"$stage/$name/README" <<EOF
vx $version for Linux $arch: vx, with vxplan and vxapply linked to it

Built on Debian 12 (bookworm), with Debian's hardening flags. Not a static binary: it links
the shared libraries of these Debian 12 packages, which a stock Debian 12 installs without
any -dev package:

  sudo apt-get install $pkgs ca-certificates

The versions it needs at least:
$(echo "$depends" | tr ',' '\n' | sed 's/^ */  /')

Then put bin/ on PATH, or copy the tree under /usr/local:

  sudo cp -a bin share /usr/local/
  vx version
  man vx            # share/man: add it to MANPATH when not under /usr/local

On Debian 12 the .deb of the same release (vx_${version}_$arch.deb) does all of this in one
'sudo apt-get install ./vx_${version}_$arch.deb'. Check either file against SHA256SUMS first:

  sha256sum -c --ignore-missing SHA256SUMS

share/bash-completion, share/zsh and share/fish hold the shell completions; share/doc/vx the
documentation and the examples.
EOF
chmod 644 "$stage/$name/README"
find "$stage/$name" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
	-cf - "$name" | gzip -9n >"$out/$name.tar.gz"
rm -rf "$stage"

(cd "$out" && sha256sum "$(basename "$deb")" "$name.tar.gz" >SHA256SUMS)
echo "mkrelease: $out:"
(cd "$out" && ls -l && cat SHA256SUMS)
