#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# meson's install script for the HTML API reference: runs Doxygen (docs/Doxyfile) into a
# scratch folder and copies its html/ to PREFIX/DOCDIR/html (DESTDIR respected). A warning
# does not stop an install (the `docs` test is where warnings fail).
# Usage (from meson.build): install_docs.sh DOXYGEN DOXYFILE VERSION DOCDIR
set -eu
doxygen=$1
doxyfile=$2
version=$3
docdir=$4
dest="${MESON_INSTALL_DESTDIR_PREFIX}/$docdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ cat "$doxyfile"; echo "WARN_AS_ERROR = NO"; } |
    EMB_SRCDIR="$MESON_SOURCE_ROOT" EMB_DOCDIR="$tmp" EMB_VERSION="$version" "$doxygen" - >/dev/null
mkdir -p "$dest"
rm -rf "$dest/html"
cp -R "$tmp/html" "$dest/html"
echo "Installing the API reference to $dest/html"
