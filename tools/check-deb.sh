#!/bin/sh
# make check-deb: the Debian package built by 'make deb' holds what it should,
# lintian finds nothing to say, and (as root) installed with dpkg -i on this
# machine it works: vx version from /usr/bin, man -w vx and vx-stack, the bash
# completion of 'vxplan -ta<TAB>'. Then dpkg --purge vx, also on failure, so
# the machine is left as found. Not root: the contents and control checks only.
#
#   tools/check-deb.sh PACKAGE.deb VERSION
set -eu
deb=$1 version=$2
fail() { echo "check-deb: $*" >&2; exit 1; }

# Control fields: the Debian 12 runtime libraries by package name (the versions
# are dpkg-shlibdeps's, from the symbols the binary uses).
[ "$(dpkg-deb -f "$deb" Package)" = vx ] || fail "Package is not vx"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libcurl4 libyaml-0-2 libcjson1 libssl3 libgit2-1.5; do
	echo "$depends" | tr ',' '\n' | grep -Eq "^ *$lib( |\$)" || fail "Depends lacks $lib: $depends"
done

# Contents: every file root's; the binaries and links, every man page gzipped,
# the Debian docs, the docs and examples.
contents=$(dpkg-deb --contents "$deb")
bad=$(echo "$contents" | awk '$2 != "root/root"')
[ -z "$bad" ] || fail "not owned by root/root: $bad"
paths=$(echo "$contents" | awk '{ p = $6; for (i = 7; i <= NF; i++) p = p " " $i; print p }')
want="./usr/bin/vx
./usr/bin/vxplan -> vx
./usr/bin/vxapply -> vx
./usr/share/doc/vx/copyright
./usr/share/doc/vx/changelog.Debian.gz
./usr/share/doc/vx/README.md
./usr/share/doc/vx/format.md
./usr/share/doc/vx/examples/quickstart/stack.yaml
./usr/share/doc/vx/examples/ci/gitlab/.gitlab-ci.yml"
for page in man/*.[1-8]; do
	name=${page#man/}
	if [ -L "$page" ]; then
		want="$want
./usr/share/man/man${name##*.}/$name.gz -> $(readlink "$page").gz"
	else
		want="$want
./usr/share/man/man${name##*.}/$name.gz"
	fi
done
want="$want
./usr/share/bash-completion/completions/vx
./usr/share/bash-completion/completions/vxplan -> vx
./usr/share/bash-completion/completions/vxapply -> vx
./usr/share/zsh/vendor-completions/_vx
./usr/share/fish/vendor_completions.d/vx.fish
./usr/share/fish/vendor_completions.d/vxplan.fish -> vx.fish"
echo "$want" | while IFS= read -r p; do
	echo "$paths" | grep -qxF "$p" || fail "missing from the package: $p"
done
file=$(mktemp -d)
trap 'rm -rf "$file"' EXIT
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/vx >"$file/vx"
if readelf -S "$file/vx" | grep -q '\.debug_info\|\.symtab'; then
	fail "/usr/bin/vx is not stripped"
fi
echo "check-deb: $deb: control and contents ok"

if command -v lintian >/dev/null 2>&1; then
	# Every tag is a failure: the ones accepted are overridden, with the reason,
	# in packaging/debian/vx.lintian-overrides (docs/packaging.md).
	# (As root it says so on stderr: that line is no finding.)
	rc=0
	lintian --fail-on error,warning,info,pedantic --display-info --pedantic "$deb" >"$file/lintian.out" 2>&1 || rc=$?
	out=$(grep -v '^running with root privileges is not recommended!$' "$file/lintian.out" || true)
	if [ $rc != 0 ] || [ -n "$out" ]; then
		echo "$out" >&2
		fail "lintian has something to say about $deb (exit $rc)"
	fi
	echo "check-deb: lintian: clean"
else
	echo "check-deb: lintian is not installed: skipped (tools/deps.sh installs it)"
fi

if [ "$(id -u)" != 0 ]; then
	echo "check-deb: dpkg -i needs root: the install checks are skipped (run make check-deb as root)"
	exit 0
fi
if dpkg-query -W -f='${Status}' vx 2>/dev/null | grep -q 'ok installed'; then
	fail "a vx package is installed already: check-deb installs and removes its own, so it stops here"
fi
for f in /usr/bin/vx /usr/bin/vxplan /usr/bin/vxapply; do
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f exists (not from a package): dpkg -i would replace it"
done
trap 'dpkg --purge vx >/dev/null 2>&1 || echo "check-deb: dpkg --purge vx failed: remove it by hand" >&2; rm -rf "$file"' EXIT
dpkg -i "$deb" >"$file/dpkg.log" 2>&1 || { cat "$file/dpkg.log" >&2; fail "dpkg -i $deb"; }

out=$(/usr/bin/vx version) || fail "/usr/bin/vx version failed"
echo "$out" | python3 -c '
import re, sys
want = [r"vx " + re.escape(sys.argv[1]), r"commit  ([0-9a-f]{12}(-dirty)?|unknown)",
        r"libcurl [0-9]+\.[0-9]+\.[0-9]+", r"libyaml [0-9]+\.[0-9]+\.[0-9]+",
        r"cJSON   [0-9]+\.[0-9]+\.[0-9]+", r"OpenSSL [0-9]+\.[0-9]+\.[0-9]+[a-z]?",
        r"libgit2 [0-9]+\.[0-9]+\.[0-9]+"]
got = sys.stdin.read().splitlines()
if len(got) != len(want) or not all(re.fullmatch(w, g) for w, g in zip(want, got)):
    sys.exit("check-deb: vx version printed:\n" + "\n".join(got))
' "$version"
[ "$(/usr/bin/vxplan -help | head -1)" = "usage: vxplan [DIR] [options]     (also: vx plan)" ] ||
	fail "vxplan -help: $(/usr/bin/vxplan -help | head -1)"
# (vxplan.1.gz is a link: man -w names the page it points to.)
for m in vx:/usr/share/man/man1/vx.1.gz vx-stack:/usr/share/man/man5/vx-stack.5.gz \
	vxplan:/usr/share/man/man1/vx-plan.1.gz vx-state:/usr/share/man/man1/vx-state.1.gz; do
	got=$(env -u MANPATH man -w "${m%%:*}" 2>&1) || true
	[ "$got" = "${m#*:}" ] || fail "man -w ${m%%:*}: '$got', not '${m#*:}'"
done

# Drive bash's completion function as readline would for 'vxplan -ta<TAB>'
# (in an empty directory: no stack, so no addresses).
got=$(cd "$file" && bash --norc --noprofile -c '
	[ -r /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion
	. /usr/share/bash-completion/completions/vx
	fn=$(complete -p vxplan 2>/dev/null | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
	[ -n "$fn" ] || { echo "no completion function for vxplan"; exit 1; }
	COMP_WORDS=(vxplan -ta); COMP_CWORD=1; COMP_LINE="vxplan -ta"; COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" vxplan -ta vxplan
	printf "%s\n" "${COMPREPLY[@]}"') || fail "bash completion: $got"
[ "$got" = "-target" ] || fail "bash completion of 'vxplan -ta': '$got', not '-target'"
echo "check-deb: bash completion of 'vxplan -ta': -target"

dpkg --purge vx >"$file/dpkg.log" 2>&1 || { cat "$file/dpkg.log" >&2; fail "dpkg --purge vx"; }
trap 'rm -rf "$file"' EXIT
[ ! -e /usr/bin/vx ] || fail "/usr/bin/vx is still there after dpkg --purge vx"
echo "check-deb: dpkg -i, vx version, man -w vx and vx-stack, dpkg --purge: ok"
