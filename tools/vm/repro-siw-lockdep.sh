#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shows that the lockdep report the test kernel's siw patch is for
# (tools/vm/patches/0001-siw-callback-lock-bh.patch) comes from siw and TCP
# alone: no viaduct module is loaded, only siw, rdma-core's perftest (and
# rping) on two test hosts (tools/vm/hosts.sh), each with its own siw device:
#
#   - perftest -R -b moves large messages both ways on one siw connection,
#     so data arrives while siw's transmit path owns the socket and TCP
#     hands it to siw_qp_llp_data_ready() from release_sock()'s backlog, in
#     process context with bottom halves enabled: lockdep marks the callback
#     lock clock-AF_INET SOFTIRQ-ON-R;
#   - a plain TCP listener closed with a connection in its accept queue
#     write-locks clock-AF_INET under the child's slock-AF_INET
#     (inet_csk_listen_stop -> inet_child_forget), the SOFTIRQ-safe side.
#     siw's listener callbacks only read-lock it in softirq, which lockdep
#     counts as a recursive read: that alone did not make a report.
#
# Stops after the first round that leaves a lockdep report (or after the
# last round); prints the report and saves dmesg as RESULTS/dmesg.txt.
# A job for tools/vm/run.sh, e.g. on the unpatched debug kernel:
#
#   VD_SMP=4 VD_FLAVOUR=debug VD_KDIR=/path/to/unpatched/debug/build \
#     bash tools/vm/run.sh -f debug -r build/vm-repro tools/vm/repro-siw-lockdep.sh
#
# and on the test kernel (patched) without VD_KDIR. VD_SMP=4 gives the guest
# more vCPUs than the host has cores, which widens the windows in which
# siw's transmit path owns a socket. Knobs: VD_REPRO_ROUNDS (3),
# VD_REPRO_SECS (30, per perftest run), VD_REPRO_RPING (0; 1 adds rping
# both ways, slow on a debug kernel). Exit status 0 once the traffic ran;
# the verdict is the "[repro]" lines.
set -u
# shellcheck source=tools/vm/hosts.sh
source "$VD_SRC/tools/vm/hosts.sh"

say() { echo "[repro] $*"; }
rounds=${VD_REPRO_ROUNDS:-3}
secs=${VD_REPRO_SECS:-30}
rping=${VD_REPRO_RPING:-0}

reported() {
	dmesg | grep -qE 'possible irq lock inversion|inconsistent lock state|circular locking dependency|lock order detected'
}

# Up to 20 s until a TCP socket of PID's network namespace listens on PORT;
# /proc/PID/net/tcp lists the kernel sockets of an RDMA CM listener too.
wait_listen() {
	local pid=$1 hex i loc st
	printf -v hex '%04X' "$2"
	for ((i = 0; i < 200; i++)); do
		while read -r _ loc _ st _; do
			[ "$st" = 0A ] && [ "${loc##*:}" = "$hex" ] && return 0
		done <"/proc/$pid/net/tcp"
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	say "nothing listens on port $2"
	return 1
}

# SERVER-HOST CLIENT-HOST PORT NAME CMD...: CMD -d <that host's siw device>
# serves on the first host, and with the server's address added connects
# from the second.
pair() {
	local s=$1 c=$2 port=$3 name=$4 spid rc
	shift 4
	ip netns exec "h$s" timeout 300 "$@" -d "siw$s" >"/tmp/$name.srv" 2>&1 &
	spid=$!
	wait_listen "$spid" "$port"
	ip netns exec "h$c" timeout 300 "$@" -d "siw$c" "$(vd_host_ip4 "$s")" >"/tmp/$name.cli" 2>&1
	rc=$?
	wait "$spid"
	say "$name: client rc $rc, server rc $?;" \
		"$(grep -E '^ *[0-9]+ +[0-9]+ ' "/tmp/$name.cli" | tail -n 1)"
	[ $rc = 0 ] || tail -n 3 "/tmp/$name.cli" "/tmp/$name.srv"
}

# Large messages both ways on one connection, RDMA Writes on one and Sends
# on another at the same time; a perftest -R server's siw listener accepts
# each.
round_perftest() {
	pair 1 2 18515 ib_write_bw ib_write_bw -R -b -F -D "$secs" \
		-s 1048576 -p 18515 &
	pair 2 1 18516 ib_send_bw ib_send_bw -R -b -F -D "$secs" \
		-s 1048576 -p 18516
	wait
	reported && finish "LOCKDEP REPORT after round $round (perftest -b)"
}

# rping both ways at once: two siw listeners accept.
rping_both_ways() {
	local p1 p2
	ip netns exec h1 timeout 300 rping -s -a "$(vd_host_ip4 1)" -p 7001 \
		-C 200 -S 65000 >/tmp/r1.srv 2>&1 &
	p1=$!
	ip netns exec h2 timeout 300 rping -s -a "$(vd_host_ip4 2)" -p 7002 \
		-C 200 -S 65000 >/tmp/r2.srv 2>&1 &
	p2=$!
	wait_listen $p1 7001
	wait_listen $p2 7002
	ip netns exec h2 timeout 300 rping -c -a "$(vd_host_ip4 1)" -p 7001 \
		-C 200 -S 65000 >/tmp/r1.cli 2>&1 &
	ip netns exec h1 timeout 300 rping -c -a "$(vd_host_ip4 2)" -p 7002 \
		-C 200 -S 65000 >/tmp/r2.cli 2>&1
	wait
	say "rping both ways done"
	tail -n 2 /tmp/r1.* /tmp/r2.* 2>/dev/null | grep -v '^$'
	reported && finish "LOCKDEP REPORT after round $round (rping)"
}

# lockdep's usage of the two socket lock classes ('+' used in that context,
# '-' taken with it enabled, '?' both; hardirq then softirq, each write
# then read).
usage() {
	grep -E '^[0-9a-f]+ FD:.* [sc]lock-AF_INET$' /proc/lockdep 2>/dev/null |
		sed 's/^[0-9a-f]* //'
}

# A TCP listener (plain sockets) closed with a connection still in its
# accept queue: inet_csk_listen_stop() orphans the child under the child's
# slock, so lockdep records slock-AF_INET -> clock-AF_INET with the
# callback lock taken for write.
listener_close() {
	ip netns exec h1 /usr/bin/python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
c = socket.create_connection(s.getsockname())
s.close()
c.close()
' || say "listener_close failed"
}

finish() {
	dmesg >"$VD_RESULTS/dmesg.txt"
	dmesg | grep -A60 -E 'WARNING: (possible|inconsistent)|lock order detected'
	usage
	grep -E 'debug_locks' /proc/lockdep_stats
	say "$1"
	exit 0
}

if lsmod | grep -q '^viaduct'; then
	say "viaduct is loaded; this job needs siw alone"
	exit 1
fi
[ -r /proc/lockdep_stats ] ||
	say "no /proc/lockdep_stats: this kernel has no lockdep"
say "kernel $(uname -r), tainted $(cat /proc/sys/kernel/tainted)"
reported && say "a lockdep report before any siw traffic"
vd_hosts_up 2 || exit 1
# A wildcard rdma_cm listen (perftest -R) listens on every siw device in
# the caller's namespace, each socket bound to its device's ifindex: give
# h2's eth0 an ifindex other than h1's so the two listens do not collide.
ip link del vd-h2 &&
	ip link add vd-eth2 index 12 type veth peer name vd-h2 &&
	ip link set vd-eth2 netns h2 &&
	ip -n h2 link set vd-eth2 name eth0 &&
	ip link set vd-h2 master "$VD_BRIDGE" up &&
	ip -n h2 addr add "$(vd_host_ip4 2)/24" dev eth0 &&
	ip -n h2 link set eth0 up || exit 1
modprobe siw || exit 1
ip netns exec h1 rdma link add siw1 type siw netdev eth0 || exit 1
ip netns exec h2 rdma link add siw2 type siw netdev eth0 || exit 1
ip netns exec h1 ping -c 1 -W 5 "$(vd_host_ip4 2)" >/dev/null || say "no ping"
lsmod | grep -E '^(siw|viaduct)'
ip -n h1 -o link show eth0 | cut -d' ' -f1-2
ip -n h2 -o link show eth0 | cut -d' ' -f1-2

for ((round = 1; round <= rounds; round++)); do
	say "round $round"
	[ "$rping" = 1 ] && rping_both_ways
	round_perftest
	usage
	listener_close
	usage
	reported && finish "LOCKDEP REPORT after round $round (listener close)"
done
finish "no lockdep report after $rounds rounds"
