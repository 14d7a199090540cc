#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The VM job of "make bench" (see tools/bench.sh): viaduct against siw in
# one VM run. Loads viaduct and siw, creates two test hosts, gives h1 a
# viaduct device and an siw device on its eth0 and h2 an siw device, then
# runs viaduct-bench:
#
#   h1: viaduct-bench mr    --viaduct vd0 --siw siwb1
#   h2: viaduct-bench serve --bind 192.0.2.2            (siw peer)
#   h1: viaduct-bench post  --viaduct vd0 --siw-server 192.0.2.2
#
# The tables go to $VD_RESULTS/bench.txt and, unless VD_BENCH_ECHO=0 (as
# tools/bench.sh sets, printing the file itself), to the console as
# [guest] lines. Knobs: VD_BENCH (the binary), VD_VIADUCTCTL,
# VD_BENCH_ITERS, VD_BENCH_BATCHES, VD_BENCH_MR_SCALE.
#
# A benchmark, not a test: it fails only when a step fails (a device that
# cannot be created, a registration or completion that goes wrong, a
# kernel complaint), never on the numbers.
set -euo pipefail

# shellcheck source=tools/vm/hosts.sh
. "$VD_SRC/tools/vm/hosts.sh"

bench=${VD_BENCH:-$VD_BUILD/cmake/tools/bench/viaduct-bench}
ctl=${VD_VIADUCTCTL:-$VD_BUILD/cmake/tools/viaductctl/viaductctl}
out=$VD_RESULTS/bench.txt
ready=/tmp/bench-server-ready
server=

say() { echo "[guest] $*"; }
stop_server() {
	if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	server=
}
die() {
	say "ERROR: $*"
	stop_server
	dmesg >"$VD_RESULTS/dmesg.txt" 2>&1 || true
	exit 1
}

[[ -x $bench ]] || die "viaduct-bench missing: $bench"
[[ -x $ctl ]] || die "viaductctl missing: $ctl"

# The 256 MiB registrations pin 256 MiB, past the default limit of 8 MiB.
# Root has CAP_IPC_LOCK, which viaduct and siw (through ib_umem_get())
# honour; the job does not rely on it.
ulimit -l unlimited || die "cannot raise RLIMIT_MEMLOCK"
avail_kib=$(awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo)
if ((avail_kib < 640 * 1024)); then
	die "only $((avail_kib / 1024)) MiB available; the 256 MiB registrations need 640 (raise VD_MEM)"
fi

[[ -f $VD_KMOD/viaduct.ko ]] || die "no $VD_KMOD/viaduct.ko"
# insmod resolves no dependencies (libcrc32c where crc32c is a module).
for dep in $(modinfo -F depends "$VD_KMOD/viaduct.ko" | tr , ' '); do
	modprobe "$dep" || die "modprobe $dep (needed by viaduct.ko) failed"
done
insmod "$VD_KMOD/viaduct.ko" || die "insmod viaduct.ko failed"
modprobe siw || die "modprobe siw failed"
vd_hosts_up 2 || die "test hosts"
peer=$(vd_host_ip4 2)
vd_on 1 "$ctl" link add vd0 netdev eth0 || die "viaductctl link add"
vd_on 1 rdma link add siwb1 type siw netdev eth0 || die "rdma link add siwb1"
vd_on 2 rdma link add siwb2 type siw netdev eth0 || die "rdma link add siwb2"
vd_on 1 ping -q -c 1 -W 2 "$peer" >/dev/null || die "h1 cannot reach $peer"

{
	echo "# viaduct-bench, $(date -u +%Y-%m-%dT%H:%MZ), QEMU TCG guest, $(nproc) vCPUs," \
		"$((avail_kib / 1024)) MiB available"
	echo "# viaduct device vd0 and siw device siwb1 on h1 eth0 ($(vd_host_ip4 1));" \
		"siw peer siwb2 on h2 ($peer)"
} >"$out"

say "memory registration (viaduct and siw in h1)"
vd_on 1 "$bench" mr --viaduct vd0 --siw siwb1 ${VD_BENCH_MR_SCALE:+--mr-scale "$VD_BENCH_MR_SCALE"} \
	>>"$out" || die "viaduct-bench mr failed"

say "post + poll (siw peer in h2)"
rm -f "$ready"
# ip netns exec runs the program itself, so $! is the server's pid.
ip netns exec h2 "$bench" serve --bind "$peer" --ready "$ready" &
server=$!
for ((i = 0; i < 100; i++)); do
	[[ ! -s $ready ]] || break
	kill -0 "$server" 2>/dev/null || die "the siw server exited before listening"
	sleep 0.2
done
[[ -s $ready ]] || die "the siw server did not start listening"
rc=0
vd_on 1 "$bench" post --viaduct vd0 --siw-server "$peer" \
	${VD_BENCH_ITERS:+--iters "$VD_BENCH_ITERS"} \
	${VD_BENCH_BATCHES:+--batches "$VD_BENCH_BATCHES"} >>"$out" || rc=$?
# The server returns when the client disconnects; do not wait forever.
for ((i = 0; i < 50 && rc == 0; i++)); do
	kill -0 "$server" 2>/dev/null || break
	sleep 0.2
done
if kill -0 "$server" 2>/dev/null; then
	((rc != 0)) || say "the siw server did not finish; stopping it"
	stop_server
else
	srv_rc=0
	wait "$server" || srv_rc=$?
	server=
	((srv_rc == 0)) || say "the siw server exited with status $srv_rc"
fi
((rc == 0)) || die "viaduct-bench post failed (status $rc)"

[[ ${VD_BENCH_ECHO:-1} == 0 ]] || sed 's/^/[guest] /' "$out"
vd_hosts_down
rmmod viaduct || die "rmmod viaduct failed (a leaked reference?)"
dmesg >"$VD_RESULTS/dmesg.txt" 2>&1 || true
if grep -E 'BUG:|WARNING:|Oops|KASAN|UBSAN|general protection|Call Trace:' \
	"$VD_RESULTS/dmesg.txt" | grep -v 'traps:'; then
	die "the kernel complained (see $VD_RESULTS/dmesg.txt)"
fi
say "bench done"
