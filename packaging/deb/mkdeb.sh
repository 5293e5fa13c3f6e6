#!/usr/bin/env bash
# mkdeb.sh WORK VERSION OUT.deb - finish a staged install into a Debian
# binary package and build it with dpkg-deb (no debhelper).
#
# WORK/debian/syncshim/ holds `make install PREFIX=/usr` (the Makefile's
# deb target puts it there; dpkg-shlibdeps wants the debian/PACKAGE/
# layout). This adds what Debian policy asks of a binary package:
#   - binaries and the shim stripped of debugging symbols (--strip-unneeded
#     keeps the dynamic symbols the shim interposes);
#   - man pages compressed with gzip -9n;
#   - /usr/share/doc/syncshim/copyright and changelog.Debian.gz;
#   - DEBIAN/control: Depends from dpkg-shlibdeps on what the files really
#     link (libc6 only: inih and jemalloc are linked statically),
#     Installed-Size as dpkg-gencontrol counts it, DEBIAN/md5sums;
#   - directories 0755, files 0644, programs 0755, all owned by root
#     (dpkg-deb --root-owner-group: no fakeroot needed).
set -euo pipefail

work=${1:?usage: mkdeb.sh WORK VERSION OUT.deb}
version=${2:?usage: mkdeb.sh WORK VERSION OUT.deb}
out=${3:?usage: mkdeb.sh WORK VERSION OUT.deb}
here=$(cd "$(dirname "$0")" && pwd)
root=$work/debian/syncshim
arch=$(dpkg --print-architecture)

[ -x "$root/usr/bin/syncshim" ] || { echo "mkdeb: no staged install in $root"; exit 1; }
# The changelog's newest entry must be this version.
top=$(sed -n '1s/^syncshim (\([^)]*\)).*/\1/p' "$here/changelog")
if [ "$top" != "$version" ]; then
	echo "mkdeb: packaging/deb/changelog starts at $top, the package is $version: add an entry"
	exit 1
fi

strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$root/usr/bin/syncshim" "$root/usr/bin/synclat" "$root/usr/lib/syncshim/libsyncshim.so"
gzip -9n "$root"/usr/share/man/man*/*
doc=$root/usr/share/doc/syncshim
install -m 0644 "$here/copyright" "$doc/copyright"
gzip -9n < "$here/changelog" > "$doc/changelog.Debian.gz"

# Depends: what the ELF files need, as dpkg-shlibdeps maps it to packages
# and versions (it reads WORK/debian/control and prints shlibs:Depends=...).
# (DEBIAN/ marks the package root for it.)
mkdir -p "$root/DEBIAN"
printf 'Source: syncshim\n\nPackage: syncshim\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O debian/syncshim/usr/bin/syncshim \
	debian/syncshim/usr/bin/synclat debian/syncshim/usr/lib/syncshim/libsyncshim.so |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies"; exit 1; }

find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f -exec chmod 0644 {} +
chmod 0755 "$root/usr/bin/syncshim" "$root/usr/bin/synclat"

# Installed-Size in KiB as dpkg-gencontrol counts it: each file rounded up
# to a KiB, 1 for each directory or symlink.
size=$(find "$root" -mindepth 1 -path "$root/DEBIAN" -prune -o \( -type f -printf 'f %s\n' \) -o -printf 'o 0\n' |
	awk '{ n += $1 == "f" ? int(($2 + 1023) / 1024) : 1 } END { print n }')

(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" \
	-e "s/@DEPENDS@/$depends/" "$here/control.in" > "$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"

rm -f "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "mkdeb: $out ($size KiB installed, Depends: $depends)"
