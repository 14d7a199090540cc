#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "make bench": boots the test VM and measures viaduct against siw in the
# same run (tools/vm/guest-bench.sh): memory registration from 4 KiB to
# 256 MiB, post + poll of work requests, and the data path between two
# test hosts (viaduct-perf against perftest on siw, iperf3 as the ceiling, viaduct-tcplat as the
# TCP latency floor). Prints the tables at the end;
# they are also kept in build/vm/bench/bench.txt. Documentation/performance.rst
# says what is compared and how to read the numbers.
#
# Needs the same things as "make check" (and installs/builds them): the
# packages, the normal test kernel (cached after the first build), the
# module and the cmake build that provides viaduct-bench, viaduct-perf and
# viaductctl. Knobs (environment): VD_BENCH_ITERS, VD_BENCH_BATCHES,
# VD_BENCH_MR_SCALE (see viaduct-bench --help), VD_BENCH_BW_ITERS,
# VD_BENCH_LAT_ITERS, VD_BENCH_RATE_ITERS, VD_BENCH_TCP_SECS,
# VD_BENCH_FACE_BW64K_ITERS, VD_BENCH_FACE_BW1M_ITERS, VD_BENCH_FACECOST_RUNS,
# VD_BENCH_STEP_TIMEOUT, VD_BENCH_ROUNDS (interleaved rounds of the face
# and transport comparison, default 3), VD_BENCH_FACES and
# VD_BENCH_FACE_METRICS (a part of that comparison), VD_BENCH_PARTS (which parts to
# run, default mr,post,datapath,facecost,faces) (tools/vm/guest-bench.sh), VD_MEM
# (guest MiB, default 2048), VD_TIMEOUT. The tables name the commit and
# the host's load average before and after the run: on a shared machine
# the load decides how far single runs scatter.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
vm=$repo/tools/vm
build=$repo/build
results=$build/vm/bench

log() { echo "[bench] $*"; }
die() { echo "[bench] ERROR: $*" >&2; exit 1; }

bash "$vm/deps.sh"
log "test kernel (built once, then cached; the first build takes 7-12 min)"
kdir=$("$vm/kernel.sh" normal | tail -n1)
log "module"
"$vm/build-module.sh" "$kdir" "$build/module-normal"
log "userspace (cmake)"
mkdir -p "$build"
if ! { cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build build/cmake -j2 --target viaduct-bench viaduct-perf viaductctl viaduct-tcplat \
		viaduct_verbs viaduct_vendor_mlx5 viaduct_vendor_efa vipl-pingpong vipl-stream \
		itapi-pingpong itapi-stream viaduct-facecost; } \
	>"$build/bench-cmake.log" 2>&1; then
	tail -n 30 "$build/bench-cmake.log" >&2
	die "cmake build failed (log: $build/bench-cmake.log)"
fi
bench=$build/cmake/tools/bench/viaduct-bench
ctl=$build/cmake/tools/viaductctl/viaductctl
perf=$build/cmake/tools/perf/viaduct-perf
[[ -x $bench ]] || die "viaduct-bench was not built: expected $bench"
[[ -x $ctl ]] || die "viaductctl was not built: expected $ctl"
[[ -x $perf ]] || die "viaduct-perf was not built: expected $perf"
tcplat=$build/cmake/tools/tcplat/viaduct-tcplat
[[ -x $tcplat ]] || die "viaduct-tcplat was not built: expected $tcplat"

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "booting the VM (about 25 min on a loaded 2-CPU host, less idle; VD_BENCH_ROUNDS scales it)"
rc=0
VD_BENCH_COMMIT=$commit VD_BENCH_HOSTLOAD="$load_before on $(nproc) CPUs" VD_FLAVOUR=normal VD_KDIR=$kdir VD_KMOD=$build/module-normal \
	VD_BENCH=$bench VD_PERF=$perf VD_TCPLAT=$tcplat VD_VIADUCTCTL=$ctl VD_BENCH_ECHO=0 VD_TIMEOUT=${VD_TIMEOUT:-3600} \
	"$vm/run.sh" -r "$results" "$vm/guest-bench.sh" || rc=$?
# What was measured is worth seeing even when a step failed.
if [[ -s $results/bench.txt ]]; then
	echo "# host load average (1, 5, 15 min) at the end: $(cut -d' ' -f1-3 /proc/loadavg)" \
		>>"$results/bench.txt"
	echo
	cat "$results/bench.txt"
fi
((rc == 0)) || die "the VM run failed (status $rc); see $results/console.log"
[[ -s $results/bench.txt ]] || die "the VM run left no $results/bench.txt"
