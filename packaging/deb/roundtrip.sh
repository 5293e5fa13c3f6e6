#!/usr/bin/env bash
# roundtrip.sh PACKAGE.deb - `make deb-check`: install the package on this
# machine, use it, remove it, and check that nothing of it is left.
#
# Needs root, and changes the system while it runs: dpkg -i puts the files
# under /usr, dpkg -r takes them away. Refuses to run when a syncshim
# package is already installed (it would remove it), or when the files the
# package would install exist already (a `make install PREFIX=/usr`).
# The test suite does the same round trip under `dpkg --root` in a temp
# directory instead (tests/system/test_install.c); this is the real one.
set -euo pipefail

deb=${1:?usage: roundtrip.sh PACKAGE.deb}
[ "$(id -u)" = 0 ] || { echo "roundtrip: needs root (dpkg -i)"; exit 1; }
if dpkg-query -W -f='${Status}' syncshim 2>/dev/null | grep -q installed; then
	echo "roundtrip: a syncshim package is installed already; remove it first (dpkg -r syncshim)"
	exit 1
fi
tmp=$(mktemp -d)
installed=0
cleanup() {
	if [ "$installed" = 1 ]; then dpkg -r syncshim >/dev/null 2>&1 || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# The package's files (not its directories: /usr/bin is not its to remove).
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\./|/|; /[^/]$/p' > "$tmp/files"
while read -r f; do
	if [ -e "$f" ]; then echo "roundtrip: $f exists already; not overwriting it"; exit 1; fi
done < "$tmp/files"

step() { printf '== %s\n' "$*"; }

step "dpkg -i $deb"
installed=1
dpkg -i "$deb"

step "syncshim run -p noop -- true"
(cd / && syncshim run -p noop -- true)
preload=$(cd / && syncshim run -p noop -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$preload" = /usr/lib/syncshim/libsyncshim.so ] ||
	{ echo "roundtrip: syncshim preloaded '$preload', not the package's shim"; exit 1; }
echo "LD_PRELOAD=$preload"

step "the installed shim intercepts: dd conv=fsync under noop, logged, reported by synclat"
(cd "$tmp" && syncshim run -p noop -o "$tmp/dd.%p.log" -- dd if=/dev/zero of="$tmp/f" bs=4k count=8 conv=fsync status=none)
synclat report "$tmp"/dd.*.log | tee "$tmp/report"
grep -Eq '^fsync +1 ' "$tmp/report" || { echo "roundtrip: no fsync in the log of the installed shim"; exit 1; }
grep -q 'policy  : default=noop' "$tmp/report" || { echo "roundtrip: the log does not say noop"; exit 1; }

step "man -w"
for page in syncshim synclat syncshim.ini; do man -w "$page"; done
man -w 5 syncshim.ini | grep -q '^/usr/share/man/man5/syncshim.ini.5.gz$'

step "dpkg -r syncshim"
dpkg -r syncshim
installed=0
left=0
while read -r f; do
	if [ -e "$f" ]; then echo "roundtrip: $f is still there"; left=1; fi
done < "$tmp/files"
for d in /usr/lib/syncshim /usr/share/doc/syncshim; do
	if [ -e "$d" ]; then echo "roundtrip: $d is still there"; left=1; fi
done
[ "$left" = 0 ] || exit 1
echo "roundtrip: installed, ran, found its man pages, removed: $(wc -l < "$tmp/files") files, none left"
