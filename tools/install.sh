#!/bin/sh
# Installs vx under DESTDIR/PREFIX: what 'make install' and 'make deb' do.
#
#   tools/install.sh BUILD DESTDIR PREFIX [--deb]
#
# BUILD holds the built vx. Installs the binary and the vxplan/vxapply links,
# the man pages (vxplan.1 and vxapply.1 as links), shell completions (the
# output of 'vx completion bash|zsh|fish', once that command is in the table
# of cmd/main.c), the documentation and the examples. --deb: as a Debian
# package wants it: man pages gzip -9n, binary stripped, docs under
# usr/share/doc/vx beside the package's copyright and changelog.
set -eu
build=$1 destdir=$2 prefix=$3 deb=${4:-}
root=$destdir$prefix
bin=$root/bin
man=$root/share/man
doc=$root/share/doc/vx

install -d "$bin" "$man/man1" "$man/man5" "$doc" "$doc/examples"
install -m 755 "$build/vx" "$bin/vx"
if [ "$deb" = --deb ]; then
	strip --strip-unneeded --remove-section=.comment --remove-section=.note "$bin/vx"
fi
ln -sf vx "$bin/vxplan"
ln -sf vx "$bin/vxapply"

# Man pages: files are pages, links (vxplan.1 -> vx-plan.1) stay links.
gz=""
[ "$deb" = --deb ] && gz=.gz
for page in man/*.[1-8]; do
	name=${page#man/}
	sect=man${name##*.}
	if [ -L "$page" ]; then
		ln -sf "$(readlink "$page")$gz" "$man/$sect/$name$gz"
	elif [ -n "$gz" ]; then
		gzip -9n <"$page" >"$man/$sect/$name.gz"
		chmod 644 "$man/$sect/$name.gz"
	else
		install -m 644 "$page" "$man/$sect/$name"
	fi
done

# Completions, generated from the command table by the binary itself, where
# each shell looks for them; vxplan and vxapply load the same script (bash and
# fish load a completion file by the command's name).
install -d "$root/share/bash-completion/completions" "$root/share/zsh/vendor-completions" \
	"$root/share/fish/vendor_completions.d"
"$build/vx" completion bash >"$root/share/bash-completion/completions/vx"
"$build/vx" completion zsh >"$root/share/zsh/vendor-completions/_vx"
"$build/vx" completion fish >"$root/share/fish/vendor_completions.d/vx.fish"
for alias in vxplan vxapply; do
	ln -sf vx "$root/share/bash-completion/completions/$alias"
	ln -sf vx.fish "$root/share/fish/vendor_completions.d/$alias.fish"
done
chmod 644 "$root/share/bash-completion/completions/vx" "$root/share/zsh/vendor-completions/_vx" \
	"$root/share/fish/vendor_completions.d/vx.fish"

# Documentation and examples (examples/ci/gitlab/.gitlab-ci.yml included).
install -m 644 README.md docs/*.md docs/*.json docs/*.yaml "$doc/"
cp -R examples/. "$doc/examples/"
find "$doc/examples" -type d -exec chmod 755 {} +
find "$doc/examples" -type f -exec chmod 644 {} +
