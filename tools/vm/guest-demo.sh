#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The VM job of "make demo" (see tools/demo.sh): loads viaduct, creates two
# test hosts, adds a viaduct link on the eth0 of each, printing what
# viaductctl says at each step, and runs RDMA traffic from h1 to h2:
# viaduct-ping, then viaduct-perf, every test with a few
# sizes and a few thousand iterations (the VM is emulated: the numbers are
# those of TCG, not of hardware).
set -euo pipefail

# shellcheck source=tools/vm/hosts.sh
. "$VD_SRC/tools/vm/hosts.sh"

ctl=${VD_VIADUCTCTL:-$VD_BUILD/cmake/tools/viaductctl/viaductctl}
perf=${VD_PERF:-$VD_BUILD/cmake/tools/perf/viaduct-perf}
ping=${VD_PING:-$VD_BUILD/cmake/tools/ping/viaduct-ping}
show() { # runs and echoes a command, its output indented
	echo "[guest] \$ $*"
	"$@" 2>&1 | sed 's/^/[guest]     /'
	return "${PIPESTATUS[0]}"
}

[[ -x $ctl ]] || { echo "[guest] viaductctl missing: $ctl"; exit 1; }
[[ -x $perf ]] || { echo "[guest] viaduct-perf missing: $perf"; exit 1; }
[[ -x $ping ]] || { echo "[guest] viaduct-ping missing: $ping"; exit 1; }

# pair READY SERVER... -- CLIENT...: the server in h2, in the background,
# until it prints READY (or 3 s without READY), then the client in h1; the
# server's output follows the client's. Fails if either fails.
pair() {
	local ready=$1 out spid rc src i
	shift
	local -a server=()
	while [[ $1 != -- ]]; do
		server+=("$1")
		shift
	done
	shift
	out=$(mktemp)
	vd_on 2 "${server[@]}" >"$out" 2>&1 &
	spid=$!
	for ((i = 0; i < 30; i++)); do
		[[ -n $ready ]] && grep -q "$ready" "$out" && break
		sleep 0.1
	done
	show timeout 120 ip netns exec h1 "$@" && rc=0 || rc=$?
	timeout 30 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
	wait "$spid" && src=0 || src=$?
	echo "[guest]   (server in h2: ${server[*]})"
	sed 's/^/[guest]     /' "$out"
	rm -f "$out"
	((rc == 0 && src == 0))
}
# insmod resolves no dependencies (libcrc32c where crc32c is a module).
for dep in $(modinfo -F depends "$VD_KMOD/viaduct.ko" | tr , ' '); do
	show modprobe "$dep"
done
show insmod "$VD_KMOD/viaduct.ko"
vd_hosts_up 2
echo "[guest] test hosts: h1 $(vd_host_ip4 1), h2 $(vd_host_ip4 2) on bridge vdbr0"
show ip -n h1 -br addr show dev eth0
show vd_on 1 ping -c 1 -W 2 "$(vd_host_ip4 2)"
show vd_on 1 "$ctl" link add vd0 netdev eth0
show vd_on 2 "$ctl" link add vd0 netdev eth0
show vd_on 1 "$ctl" dev
show vd_on 1 "$ctl" link show
show vd_on 2 "$ctl" link show
show vd_on 1 rdma link show

h2=$(vd_host_ip4 2)
echo "[guest] viaduct-ping from h1 to h2"
pair "" "$ping" -s -a "$h2" -C 5 -V -- "$ping" -c -a "$h2" -C 5 -V -v
echo "[guest] viaduct-perf from h1 (client) to h2 (server)"
srv=("$perf" -d vd0 -s --addr "$h2")
cli=("$perf" -d vd0 --addr "$h2")
pair 'waiting for a client' "${srv[@]}" -- "${cli[@]}" -t write -n 2000 --sizes 64,4096,65536 -q 2
pair 'waiting for a client' "${srv[@]}" -- "${cli[@]}" -t read -n 1000 --sizes 4096,65536
pair 'waiting for a client' "${srv[@]}" -- "${cli[@]}" -t send -n 2000 --sizes 64,65536
pair 'waiting for a client' "${srv[@]}" -- "${cli[@]}" -t lat-send -n 1000 --sizes 2,4096
pair 'waiting for a client' "${srv[@]}" -- "${cli[@]}" -t lat-write -n 1000 --sizes 2,4096
vipl=${VD_VIPL:-$VD_BUILD/cmake/examples/vipl}
if [[ -x $vipl/vipl-echo-server ]]; then
	echo "[guest] VIPL examples (examples/vipl) from h1 to h2"
	pair 'waiting' "$vipl/vipl-echo-server" -n 1 -- "$vipl/vipl-echo-client" -a "$h2" -S 65536
	pair 'waiting' "$vipl/vipl-pingpong" -s -n 2000 -S 64 -- \
		"$vipl/vipl-pingpong" -c "$h2" -n 2000 -S 64
	pair 'waiting' "$vipl/vipl-rdma-write" -s -- "$vipl/vipl-rdma-write" -c "$h2"
	pair 'waiting' "$vipl/vipl-stream" -s -S 65536 -- \
		"$vipl/vipl-stream" -c "$h2" -S 65536 -n 500
	pair '' "$vipl/vipl-peer" -a "$(vd_host_ip4 1)" -l b -r a -w -- \
		"$vipl/vipl-peer" -a "$h2" -l a -r b
fi
vd_hosts_down
show rmmod viaduct
echo "[guest] demo done"
