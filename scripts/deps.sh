#!/bin/sh
# Installs, with apt-get, the Debian packages embtables needs that this machine lacks.
# Usage: scripts/deps.sh [extra-package ...]
set -e
pkgs="meson ninja-build pkg-config gcc g++ libhwloc-dev libcriterion-dev zlib1g-dev $*"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null
