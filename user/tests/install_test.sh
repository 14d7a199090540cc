#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Installs the build into a scratch prefix, as a user or a package would,
# and checks what a program needs from it:
#  - headers, libraries, man pages for every installed program;
#  - viaduct.pc naming the prefix it was installed under (not the one
#    configured), and enough with its --cflags --libs alone;
#  - the CMake package: find_package(viaduct) and the imported target,
#    which brings C++20 with it;
#  - installed programs that start with no LD_LIBRARY_PATH.
# Each program built against it runs. The prefix and the programs stay in
# BUILD/install-test, where selftests/install_test.sh runs them against the
# module in the VM (whose root file system is read-only: it cannot install
# there itself). Exit 77 (skip) without pkg-config.
set -eu
build=$1
cxx=$2
command -v pkg-config >/dev/null || exit 77
tmp=$build/install-test
rm -rf "$tmp"
mkdir -p "$tmp"
prefix=$tmp/usr
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
for f in include/viaduct/viaduct.hpp include/viaduct/viaduct-abi.h \
	include/viaduct/viaduct-nl.h share/man/man3/libviaduct.3; do
	[ -f "$prefix/$f" ] || fail "not installed: $f"
done
# A man page for every program.
for p in "$prefix"/bin/* "$prefix"/sbin/*; do
	[ -e "$p" ] || continue
	name=$(basename "$p")
	ls "$prefix"/share/man/man[18]/"$name".[18] >/dev/null 2>&1 || fail "no man page for $name"
	# It starts: the library is found without LD_LIBRARY_PATH.
	env -u LD_LIBRARY_PATH "$p" --help >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$name --help does not run after install"; }
done
pcfile=$(find "$prefix" -name viaduct.pc | head -n1)
[ -n "$pcfile" ] || fail "viaduct.pc not installed"
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
ls "$libdir"/libviaduct.so.0 "$libdir"/libviaduct.a "$libdir"/cmake/viaduct/viaductConfig.cmake \
	>/dev/null || exit 1
grep -qx "prefix=$prefix" "$pcfile" || { cat "$pcfile"; fail "viaduct.pc does not name $prefix"; }

# Without an argument: the library's error for a missing device node.
# With a device name (in the VM): a PD, CQ and QP, and one completion.
cat >"$tmp/main.cpp" <<'CPP'
#include <cerrno>
#include <iostream>
#include <viaduct/viaduct.hpp>
int main(int argc, char **argv) {
    try {
        if (argc < 2) {
            viaduct::Device::list("/nonexistent/viaduct");
            return 1;
        }
        viaduct::Device dev = viaduct::Device::open(argv[1]);
        viaduct::ProtectionDomain pd(dev);
        viaduct::CompletionQueue cq(dev, 16);
        viaduct::QueuePair qp(pd, viaduct::QpConfig{.send_cq = &cq, .recv_cq = &cq});
        qp.modify(viaduct::QpState::Error);
        qp.post_recv(viaduct::RecvWr{.wr_id = 42});
        std::array<viaduct::Completion, 1> wc{};
        for (int i = 0; i < 1000000 && cq.poll(wc) == 0; i++) {
        }
        std::cout << dev.name() << " qpn " << qp.qpn() << " wr_id " << wc[0].wr_id << "\n";
        return wc[0].wr_id == 42 ? 0 : 1;
    } catch (const viaduct::Error &e) {
        if (argc < 2)
            return e.errnum() == ENOENT && VIADUCT_ABI_VERSION >= 1 ? 0 : 1;
        std::cerr << e.what() << "\n";
        return 1;
    }
}
CPP
export PKG_CONFIG_PATH="$pcdir"
# The include path is the pkg-config one alone: <viaduct/viaduct.hpp> finds
# its uapi header next to itself.
cflags=$(pkg-config --cflags viaduct | sed "s/ *$//")
[ "$cflags" = "-I$prefix/include" ] || fail "unexpected cflags '$cflags'"
# shellcheck disable=SC2046 # word splitting of the flags is wanted
"$cxx" -std=c++20 -Wall -Werror -o "$tmp/shared" "$tmp/main.cpp" $(pkg-config --cflags --libs viaduct)
LD_LIBRARY_PATH=$libdir "$tmp/shared"
# shellcheck disable=SC2046
"$cxx" -std=c++20 -Wall -Werror -o "$tmp/static" "$tmp/main.cpp" $(pkg-config --cflags viaduct) \
	"$libdir/libviaduct.a"
"$tmp/static"

# find_package(): no CMAKE_CXX_STANDARD in the project, the target brings it.
mkdir "$tmp/cm"
cp "$tmp/main.cpp" "$tmp/cm/main.cpp"
cat >"$tmp/cm/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(viaduct_install_test LANGUAGES CXX)
find_package(viaduct 0.1 REQUIRED)
add_executable(uses_viaduct main.cpp)
target_link_libraries(uses_viaduct PRIVATE viaduct::viaduct)
add_executable(uses_viaduct_static main.cpp)
target_link_libraries(uses_viaduct_static PRIVATE viaduct::viaduct_static)
CMAKE
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
	>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package(viaduct) failed"; }
cmake --build "$tmp/cm/build" >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "build failed"; }
grep -q 'std=c++20\|std=gnu++20' "$tmp/cm/build/CMakeFiles/uses_viaduct.dir/flags.make" ||
	fail "viaduct::viaduct did not ask for C++20"
"$tmp/cm/build/uses_viaduct"
"$tmp/cm/build/uses_viaduct_static"
echo "installed under $prefix: pkg-config, find_package, programs and man pages work"
