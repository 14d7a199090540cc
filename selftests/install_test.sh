#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The installed libviaduct against the module. The host's ctest
# libviaduct.install installs the build into BUILD/install-test/usr and
# builds a program there with pkg-config alone (shared and static) and
# with CMake's find_package(); here, in the VM (whose root file system is
# read-only), those programs open a viaduct device in a namespace of their
# own, create a PD, a CQ and a QP and poll a completion, and an installed
# program starts without LD_LIBRARY_PATH. Prints TAP; skips without that
# ctest's output (a --vm-only run of tools/check.sh).

set -u
src=${VD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${VD_CMAKE_BUILD:-$src/build/cmake}
ctl=$bin/tools/viaductctl/viaductctl
it=$bin/install-test
ns=vdin$$

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"

cleanup() {
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tap_tmp"
}
trap cleanup EXIT

progs=(shared static cm/build/uses_viaduct cm/build/uses_viaduct_static)
echo "TAP version 13"
echo "1..$((${#progs[@]} + 2))"

if [ ! -x "$it/shared" ]; then
	skip "a device in a namespace of its own" "no $it: run ctest libviaduct.install first"
	for p in "${progs[@]}"; do
		skip "$p against the module" "no $it"
	done
	skip "an installed program starts without LD_LIBRARY_PATH" "no $it"
	exit 0
fi

ip netns add "$ns" &&
	ip -n "$ns" link add vdin0 type veth peer name vdin1 &&
	ip -n "$ns" addr add 192.0.2.9/24 dev vdin0 &&
	ip -n "$ns" link set vdin0 up && ip -n "$ns" link set vdin1 up &&
	"$nsrun" "$ns" "$ctl" link add vdinst type viaduct netdev vdin0
ok $? "a device in a namespace of its own"

libdir=$(dirname "$(dirname "$(find "$it/usr" -name viaduct.pc | head -n1)")")
for p in "${progs[@]}"; do
	out=$("$nsrun" "$ns" LD_LIBRARY_PATH="$libdir" "$it/$p" vdinst 2>&1)
	rc=$?
	echo "# $p: $out"
	ok $rc "$p against the module: a PD, CQ and QP, and a completion"
done

out=$(env -u LD_LIBRARY_PATH "$it/usr/bin/viaduct-ping" --help 2>&1)
rc=$?
[ $rc -eq 0 ] || echo "# $out"
ok $rc "an installed program starts without LD_LIBRARY_PATH"

exit $((failed != 0))
