#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Installs the build into a scratch prefix and compiles a program against
# it with pkg-config, shared and static. Exit 77 (skip) without pkg-config.
set -eu
build=$1
cxx=$2
command -v pkg-config >/dev/null || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/usr" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; exit 1; }
for f in include/viaduct/viaduct.hpp include/viaduct/viaduct-abi.h \
	include/viaduct/viaduct-nl.h share/man/man8/viaductctl.8 share/man/man3/libviaduct.3; do
	[ -f "$tmp/usr/$f" ] || { echo "not installed: $f"; exit 1; }
done
pcfile=$(find "$tmp/usr" -name viaduct.pc | head -n1)
[ -n "$pcfile" ] || { echo "viaduct.pc not installed"; exit 1; }
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
ls "$libdir"/libviaduct.so.0 "$libdir"/libviaduct.a "$libdir"/cmake/viaduct/viaductConfig.cmake \
	>/dev/null || exit 1
cat >"$tmp/main.cpp" <<'CPP'
#include <cerrno>
#include <viaduct/viaduct.hpp>
int main() {
    try {
        viaduct::Device::list("/nonexistent/viaduct");
    } catch (const viaduct::Error &e) {
        return e.errnum() == ENOENT && VIADUCT_ABI_VERSION >= 1 ? 0 : 1;
    }
    return 1;
}
CPP
export PKG_CONFIG_PATH=$pcdir
# viaduct.pc names the configured prefix; point it at the scratch one.
pc="pkg-config --define-variable=prefix=$tmp/usr"
# shellcheck disable=SC2046 # word splitting of the flags is wanted
"$cxx" -std=c++20 -Wall -Werror -o "$tmp/shared" "$tmp/main.cpp" $($pc --cflags --libs viaduct)
LD_LIBRARY_PATH=$libdir "$tmp/shared"
# shellcheck disable=SC2046
"$cxx" -std=c++20 -Wall -Werror -o "$tmp/static" "$tmp/main.cpp" $($pc --cflags viaduct) \
	"$libdir/libviaduct.a"
"$tmp/static"
