#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots the test kernel under QEMU (TCG) with this machine's root file system
# shared read-only over 9p, runs one job script in the guest and powers off.
#
#   tools/vm/run.sh [-f normal|debug] [-r RESULTS_DIR] JOB [-- extra kernel args]
#
# JOB is any executable script on the host's file system (absolute or
# relative path); it runs in the guest as root with these variables set
# (each may be given to run.sh in its environment, with these defaults):
#
#   VD_FLAVOUR    normal              kernel flavour (also -f)
#   VD_KDIR       kernel.sh cache     build dir of that flavour's kernel
#   VD_RESULTS    build/vm/<flavour>  writable results dir, same path in guest (also -r)
#   VD_SRC        this checkout       the repo
#   VD_BUILD      $VD_SRC/build       the repo's build dir
#   VD_KMOD       $VD_BUILD/module-<flavour>   dir with viaduct.ko, viaduct_test.ko
#   VD_SELFTESTS  $VD_BUILD/selftests dir of selftest programs
#   VD_GTEST      (unset)             gtest binary with live tests, if any
#   VD_ONLY       (unset)             run only selftest programs matching this glob
#   VD_KUNIT      (unset)             KUnit filter glob, "suite" or "suite.test"
#   VD_TEST_TIMEOUT 300               per-program timeout in the guest, seconds
#   VD_LANES      2                   guest-check.sh: how many of the programs
#                                     that may share the guest run at once
#                                     (1: every program alone)
#   VD_<anything>                     passed through unchanged
#
# Knobs for the VM itself: VD_TIMEOUT (whole run, seconds, default 1200),
# VD_MEM (MiB, default 2048), VD_SMP (default 2), VD_CONSOLE=full to show the
# whole console instead of the [guest] lines and kernel complaints,
# VD_MACHINE (default q35: its ACPI tables are cheap to interpret, while the
# i440fx ones make a debug kernel under TCG spend a minute in AML loop
# timeouts), VD_9P_CACHE (cache mode of the root share, default loose; the
# root is read-only and files are not expected to change during a run;
# empty for none), VD_BOOT_RETRY (default 1: a guest that dies before its
# job starts is booted once more, its console kept as
# RESULTS/console-failed-boot.log; 0 to fail at once), VD_TCG_THREAD
# (multi, the default, or single: one host thread for all vCPUs, which
# rules out cross-vCPU code-patching races at the cost of parallelism),
# VD_MONITOR (a path: QEMU's human monitor listens on that Unix socket, for
# "info jit" and the like while the guest runs; whoever can open it controls
# the VM; default none).
#
# Exit status: the job's, or 124 on timeout, or 125 when the guest died
# before writing its completion marker (panic, init crash, QEMU failure).
# The full console log is saved as RESULTS/console.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "[vm] $*" >&2; }
die() { echo "[vm] ERROR: $*" >&2; exit 125; }

orig_args=("$@")
flavour=${VD_FLAVOUR:-normal}
results=${VD_RESULTS:-}
while [[ $# -gt 0 ]]; do
	case $1 in
	-f) flavour=$2; shift 2 ;;
	-r) results=$2; shift 2 ;;
	-h | --help) sed -n '4,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || die "usage: $0 [-f flavour] [-r results] JOB [-- kernel args]"
job=$(realpath "$1")
shift
[[ ${1:-} == -- ]] && shift
extra_args=("$@")
[[ -x $job ]] || die "job $job is not an executable file"
# The guest mounts a tmpfs on /tmp, which hides the host's /tmp.
[[ $job != /tmp/* ]] || die "the job must not live under /tmp (the guest cannot see it)"

src=${VD_SRC:-$(cd "$here/../.." && pwd)}
build=${VD_BUILD:-$src/build}
kdir=${VD_KDIR:-$("$here/kernel.sh" --builddir "$flavour")}
[[ -e $kdir/.viaduct-built ]] ||
	die "no $flavour kernel in $kdir; run tools/vm/kernel.sh $flavour first"
kernel=$kdir/arch/x86/boot/bzImage
results=${results:-$build/vm/$flavour}
mkdir -p "$results"
results=$(realpath "$results")
timeout_s=${VD_TIMEOUT:-1200}

# Fresh results: the completion marker of an older run must not count. Only
# a dir this script created (or an empty one) is ever cleared.
if [[ -n $(ls -A "$results") && ! -e $results/.vd-results ]]; then
	die "$results is not empty and not a results dir; refusing to clear it"
fi
find "$results" -mindepth 1 -delete
touch "$results/.vd-results"
if [[ -n ${VD_BOOT_FAILED_CONSOLE:-} && -f $VD_BOOT_FAILED_CONSOLE ]]; then
	mv "$VD_BOOT_FAILED_CONSOLE" "$results/console-failed-boot.log"
	unset VD_BOOT_FAILED_CONSOLE
fi

# VD_DEADLINE (seconds since the epoch; the guest's clock starts from the
# host's) is when the job must be done, leaving a minute for collecting
# logs and powering off before the whole run's timeout strikes.
# Everything else the job needs travels in a file on the results share;
# the kernel command line only names the job and the results dir.
{
	printf 'export %s=%q\n' \
		VD_FLAVOUR "$flavour" VD_KDIR "$kdir" VD_RESULTS "$results" \
		VD_SRC "$src" VD_BUILD "$build" \
		VD_KMOD "${VD_KMOD:-$build/module-$flavour}" \
		VD_SELFTESTS "${VD_SELFTESTS:-$build/selftests}" \
		VD_TEST_TIMEOUT "${VD_TEST_TIMEOUT:-300}" \
		VD_DEADLINE "$(($(date +%s) + timeout_s - (timeout_s > 180 ? 60 : timeout_s / 3)))"
	# Any other VD_* variable in run.sh's environment passes through.
	for v in $(compgen -e); do
		case $v in
		VD_FLAVOUR | VD_KDIR | VD_RESULTS | VD_SRC | VD_BUILD | VD_KMOD | \
			VD_SELFTESTS | VD_TEST_TIMEOUT | VD_DEADLINE | VD_BOOT_FAILED_CONSOLE) ;;
		VD_*) printf 'export %s=%q\n' "$v" "${!v}" ;;
		esac
	done
	# Lets the job know it runs under CI (e.g. to be terser).
	[[ -n ${CI:-} ]] && printf 'export CI=%q\n' "$CI"
} >"$results/job.env"

root_cache=${VD_9P_CACHE-loose}
# shellcheck disable=SC2054 # the commas are part of option values
append=(
	console=ttyS0 panic=-1 oops=panic
	root=/dev/root rootfstype=9p ro
	rootflags=trans=virtio,version=9p2000.L,msize=512000${root_cache:+,cache=$root_cache}
	init="$here/guest-init.sh"
	vd.job="$job" vd.results="$results" vd.flavour="$flavour"
	# The guest has no real hardware to wait for.
	random.trust_cpu=on tsc=reliable no_timer_check
	# A vCPU is a host thread: on a loaded host it may not run for many
	# seconds, and the guest's clock goes on meanwhile. The soft lockup
	# detector (which panics: config-base.frag) and RCU's stall warnings
	# would then report the host's scheduling (seen: a soft lockup of
	# 22 s in the boot's free_reserved_area(), two niced VMs beside a
	# kernel build). A CPU stuck for 120 s, or a grace period stalled
	# for 60 s, is still reported.
	watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=60
	# -cpu max offers 5-level paging; 4 levels are cheaper to emulate, and
	# the debug kernel's KASAN was seen to trip over an interrupt taken
	# early in boot with LA57 (a wild access in do_raw_spin_lock).
	no5lvl
)
if [[ $flavour == debug ]]; then
	append+=(panic_on_warn=1 kasan.fault=panic)
fi
append+=("${extra_args[@]}")
for a in "$job" "$results" "$here"; do
	[[ $a != *[[:space:]]* ]] || die "paths with spaces are not supported: $a"
done

monitor=none
[[ -z ${VD_MONITOR:-} ]] || monitor=unix:$VD_MONITOR,server=on,wait=off
# shellcheck disable=SC2054 # the commas are part of option values
qemu=(
	qemu-system-x86_64 -machine "${VD_MACHINE:-q35}" -accel "tcg,thread=${VD_TCG_THREAD:-multi}" -cpu max
	-smp "${VD_SMP:-2}" -m "${VD_MEM:-2048}"
	-nographic -no-reboot -nic none -serial stdio
	-monitor "$monitor"
	-kernel "$kernel"
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
	-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
	-fsdev "local,id=res,path=$results,security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=res,mount_tag=vdresults
	-append "${append[*]}"
)

console=$results/console.log
log "booting $flavour kernel $(cat "$kdir/kernelrelease" 2>/dev/null) (timeout ${timeout_s}s)"
log "job: $job; results: $results"
t0=$SECONDS
set +e
if [[ ${VD_CONSOLE:-} == full ]]; then
	timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | tee "$console"
else
	timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | tee "$console" |
		grep --line-buffered -aE '^\[guest\]|Kernel panic|Oops|BUG:|WARNING:|KASAN:|UBSAN:|qemu-system'
fi
rc=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - t0))

if [[ $rc == 124 || $rc == 137 ]]; then
	log "TIMEOUT: the guest ran longer than ${timeout_s}s and was killed (set VD_TIMEOUT to change)"
	log "last console lines ($console):"
	tail -n 40 "$console" | sed 's/^/[vm]   /' >&2
	exit 124
fi
# A guest that died before its job started (results/job.log is created
# when it does) failed to boot: under multi-threaded TCG that happens
# rarely with nothing of ours loaded (a race in the kernel's own text
# patching). It says nothing about the tests: boot once more, and say so.
if [[ ! -s $results/.done && ! -e $results/job.log && -z ${VD_BOOT_RETRIED:-} &&
	${VD_BOOT_RETRY:-1} == 1 ]]; then
	log "the guest died after ${elapsed}s before its job started (qemu exit $rc);" \
		"a boot failure, not a test result: booting once more"
	log "last console lines of the failed boot:"
	tail -n 20 "$console" | sed 's/^/[vm]   /' >&2
	saved=$(mktemp "${TMPDIR:-/tmp}/vd-failed-boot.XXXXXX")
	cp "$console" "$saved"
	VD_BOOT_RETRIED=1 VD_BOOT_FAILED_CONSOLE=$saved VD_RESULTS=$results \
		VD_FLAVOUR=$flavour exec "$here/run.sh" "${orig_args[@]}"
fi
if [[ ! -s $results/.done ]]; then
	log "FAILED: the guest stopped after ${elapsed}s without finishing its job (qemu exit $rc)"
	log "last console lines ($console):"
	tail -n 40 "$console" | sed 's/^/[vm]   /' >&2
	exit 125
fi
job_rc=$(cat "$results/.done")
log "guest finished in ${elapsed}s, job exit status $job_rc"
[[ $job_rc =~ ^[0-9]+$ ]] || job_rc=1
exit "$job_rc"
