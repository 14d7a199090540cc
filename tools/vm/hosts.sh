# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Test hosts for jobs running in the test VM. Source this file, then:
#
#   vd_hosts_up N      create hosts h1..hN (N <= 200)
#   vd_hosts_down      remove them and the bridge
#   vd_host_ip4 I      prints 192.0.2.I     vd_host_ip6 I   prints 2001:db8::I
#   vd_on I CMD...     runs CMD inside host hI (ip netns exec hI CMD...)
#
# Each host is a network namespace with its own lo and one interface eth0;
# the other end of every eth0 is a port of the bridge vdbr0 in the VM's root
# namespace, so any host reaches any other over a real L2 segment:
#
#   +--------------------------------------------------------------------+
#   | root namespace (the VM)                                            |
#   |                                                                    |
#   |             +------------------ vdbr0 ------------------+          |
#   |             |  (bridge, no address, STP off)            |          |
#   |          vd-h1               vd-h2          ...       vd-hN        |
#   |             |                  |                        |          |
#   |  +----------|------+ +---------|-------+      +---------|-------+  |
#   |  | h1       |      | | h2      |       |      | hN      |       |  |
#   |  |        eth0     | |       eth0      |      |       eth0      |  |
#   |  | 192.0.2.1/24    | | 192.0.2.2/24    | .... | 192.0.2.N/24    |  |
#   |  | 2001:db8::1/64  | | 2001:db8::2/64  |      | 2001:db8::N/64  |  |
#   |  | lo up           | | lo up           |      | lo up           |  |
#   |  +-----------------+ +-----------------+      +-----------------+  |
#   +--------------------------------------------------------------------+
#
# Only documentation addresses (RFC 5737, RFC 3849) are used, and only
# inside the VM: the functions refuse to run outside a guest booted by
# tools/vm/run.sh. This file sets no shell options of its own; every
# function returns non-zero on failure.

VD_BRIDGE=vdbr0
VD_HOSTS_N=${VD_HOSTS_N:-0}

_vd_in_guest() {
	if ! grep -q 'vd\.job=' /proc/cmdline 2>/dev/null; then
		echo "[hosts] refusing to create test hosts outside the test VM" >&2
		return 1
	fi
}

vd_host_ip4() { echo "192.0.2.$1"; }
vd_host_ip6() { echo "2001:db8::$1"; }

vd_on() {
	local i=$1
	shift
	ip netns exec "h$i" "$@"
}

vd_hosts_up() {
	local n=${1:?usage: vd_hosts_up N} i
	_vd_in_guest || return 1
	if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 200)); then
		echo "[hosts] bad host count '$n'" >&2
		return 1
	fi
	vd_hosts_down
	ip link add "$VD_BRIDGE" type bridge stp_state 0 forward_delay 0 \
		mcast_snooping 0 || return 1
	# The bridge only switches; it takes no part in IPv6 itself.
	sysctl -qw "net.ipv6.conf.$VD_BRIDGE.disable_ipv6=1" 2>/dev/null || true
	ip link set "$VD_BRIDGE" up || return 1
	for ((i = 1; i <= n; i++)); do
		ip netns add "h$i" || return 1
		ip link add "vd-h$i" type veth peer name eth0 netns "h$i" || return 1
		ip link set "vd-h$i" master "$VD_BRIDGE" up || return 1
		ip -n "h$i" link set lo up || return 1
		ip -n "h$i" addr add "$(vd_host_ip4 "$i")/24" dev eth0 || return 1
		# nodad: usable at once, no 1-2 s of duplicate detection.
		ip -n "h$i" addr add "$(vd_host_ip6 "$i")/64" dev eth0 nodad || return 1
		ip -n "h$i" link set eth0 up || return 1
	done
	VD_HOSTS_N=$n
	export VD_HOSTS_N
}

vd_hosts_down() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^h[0-9]+$/ { print $1 }'); do
		ip netns del "$ns" 2>/dev/null || true
	done
	ip link del "$VD_BRIDGE" 2>/dev/null || true
	VD_HOSTS_N=0
	return 0
}
