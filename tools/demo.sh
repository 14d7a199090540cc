#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "make demo": boots the test VM and shows viaduct at work: two test hosts,
# a viaduct link on the eth0 of each, what viaductctl reports about them,
# and RDMA traffic between them: viaduct-ping (if built) and a short
# viaduct-perf run of each test.
#
# Needs the same things as "make check" (and installs/builds them): the
# packages, the normal test kernel (cached after the first build), the
# module and the cmake build that provides viaductctl.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
vm=$repo/tools/vm
build=$repo/build

log() { echo "[demo] $*"; }
die() { echo "[demo] ERROR: $*" >&2; exit 1; }

bash "$vm/deps.sh"
mkdir -p "$build"
# The kernel builds in the background while cmake builds the tools, as in
# make check: on a fresh machine the two one after the other took longer
# than either needs the two cores for. The job runs in a process group of
# its own (set -m), so that a failure here stops the whole build.
log "test kernel (built once, then cached; the first build takes 7-12 min), beside the userspace build"
set -m
"$vm/kernel.sh" normal >"$build/demo-kernel.out" &
kpid=$!
set +m
trap 'kill -- -"$kpid" 2>/dev/null || true' EXIT
log "userspace (cmake)"
if ! { cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build build/cmake -j2; } >"$build/demo-cmake.log" 2>&1; then
	tail -n 30 "$build/demo-cmake.log" >&2
	die "cmake build failed (log: $build/demo-cmake.log)"
fi
log "waiting for the test kernel"
wait "$kpid" || die "the test kernel did not build (its log is named above)"
trap - EXIT
kdir=$(tail -n1 "$build/demo-kernel.out")
log "module"
"$vm/build-module.sh" "$kdir" "$build/module-normal"
ctl=$build/cmake/tools/viaductctl/viaductctl
[[ -x $ctl ]] || die "viaductctl was not built: expected $ctl"
perf=$build/cmake/tools/perf/viaduct-perf
[[ -x $perf ]] || die "viaduct-perf was not built: expected $perf"
ping=$build/cmake/tools/ping/viaduct-ping

log "booting the VM"
VD_FLAVOUR=normal VD_KDIR=$kdir VD_KMOD=$build/module-normal VD_VIADUCTCTL=$ctl \
	VD_PERF=$perf VD_PING=$ping \
	VD_TIMEOUT=${VD_TIMEOUT:-600} \
	"$vm/run.sh" -r "$build/vm/demo" "$vm/guest-demo.sh"
