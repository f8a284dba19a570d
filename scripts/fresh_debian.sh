#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs the README's two commands as a new user would, on a fresh Debian 12 (bookworm):
# debootstrap (variant minbase: no compiler, no meson, nothing of ours) from Debian's archive
# into a temporary directory, the project's committed files (git archive HEAD) copied in,
# then, in a chroot inside a private mount namespace (its /proc, /sys, /dev vanish with it):
# scripts/bench.sh, then scripts/test.sh. Each installs what it needs itself, so this proves
# that a fresh machine needs nothing but the two commands. The root is removed at the end.
#
# Needs root, debootstrap (installed where apt-get is) and the network (Debian's archive).
# Usage: scripts/fresh_debian.sh [--order bench,tests | tests,bench | bench | tests]
#                                [--mirror URL] [--keep DIR] [--cache DIR]
#   --order   which commands run, in that order (default bench,tests, the README's order)
#   --keep    build the root in DIR and keep it (default: a temporary directory, removed)
#   --cache   keep debootstrap's untouched result in DIR and copy it for the next runs
#             (saves minutes; nothing of ours is in it, so each run still starts fresh)
# Exit status: 0 when every command passed; 77 when no root could be made (debootstrap failed:
# no network, say); else the first failing command's status.
set -eu
cd "$(dirname "$0")/.."
order=bench,tests
mirror=http://deb.debian.org/debian
keep=""
cache=""
while [ $# -gt 0 ]; do
    case $1 in
    --order) order=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    -h | --help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_debian.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for c in $(echo "$order" | tr , ' '); do
    case $c in bench | tests) ;; *) echo "fresh_debian.sh: --order takes bench and tests, not '$c'" >&2; exit 2 ;; esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "fresh_debian.sh: needs root (debootstrap and chroot); try: sudo $0" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
    else
        echo "fresh_debian.sh: needs debootstrap (Debian's debootstrap package)" >&2
        exit 1
    fi
fi
command -v git >/dev/null 2>&1 && git rev-parse HEAD >/dev/null 2>&1 || {
    echo "fresh_debian.sh: run it from a git checkout (it copies the committed tree)" >&2
    exit 1
}

if [ -n "$keep" ]; then
    root=$keep
    mkdir -p "$root"
else
    root=$(mktemp -d /tmp/embtables-fresh.XXXXXX)
    trap 'rm -rf --one-file-system "$root"' EXIT
fi
chmod 755 "$root" # the root's /: apt's sandbox user must walk it
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

if [ -n "$cache" ] && [ -f "$cache/bookworm/.debootstrap-done" ]; then
    echo "fresh_debian.sh: debootstrap's bookworm (minbase) from $cache into $root" >&2
    cp -a "$cache/bookworm/." "$root/"
else
    echo "fresh_debian.sh: debootstrap bookworm (minbase) into $root" >&2
    if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1; then
        cat "$root.debootstrap.log" >&2
        rm -f "$root.debootstrap.log"
        echo "fresh_debian.sh: debootstrap failed (is $mirror reachable?)" >&2
        exit 77
    fi
    rm -f "$root.debootstrap.log"
    if [ -n "$cache" ]; then
        rm -rf "$cache/bookworm"
        mkdir -p "$cache/bookworm"
        cp -a "$root/." "$cache/bookworm/"
        touch "$cache/bookworm/.debootstrap-done"
    fi
fi
rm -f "$root/.debootstrap-done"
# the archive's updates and security suites, as an installed Debian 12 has them
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/root/embtables"
git archive HEAD | tar -x -C "$root/root/embtables"
echo "fresh_debian.sh: root ready after $(elapsed)" >&2

# One private mount namespace: the mounts end with it, whatever happens.
# shellcheck disable=SC2016 # expanded inside the namespace's shell
unshare --mount --propagation private sh -eu -c '
    root=$1 order=$2
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount -t devtmpfs devtmpfs "$root/dev" 2>/dev/null || mount --bind /dev "$root/dev"
    mkdir -p "$root/dev/pts" "$root/dev/shm"
    mount -t devpts devpts "$root/dev/pts" 2>/dev/null || true
    mount -t tmpfs tmpfs "$root/dev/shm"
    mount -t tmpfs tmpfs "$root/tmp"
    for c in $(echo "$order" | tr , " "); do
        case $c in bench) cmd=scripts/bench.sh ;; tests) cmd=scripts/test.sh ;; esac
        echo "fresh_debian.sh: $cmd" >&2
        chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            sh -c "cd /root/embtables && $cmd" || {
            rc=$?
            echo "fresh_debian.sh: $cmd failed (exit $rc) on a fresh Debian 12" >&2
            exit $rc
        }
    done
' fresh "$root" "$order"
echo "fresh_debian.sh: $order passed on a fresh Debian 12 in $(elapsed)" >&2
