#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A job for tools/vm/run.sh: viaduct-ping between two namespaces of the
# test VM, viaduct to viaduct, then against rping on siw both ways when
# siw and rping are there. Needs viaduct.ko's transport. From the top of
# the checkout, after the cmake build and tools/vm/build-module.sh:
#
#   VD_KMOD=$PWD/build/module-normal flock /tmp/vd-vm.lock \
#       tools/vm/run.sh -f normal tools/ping/vm-ping.sh
#
# Exit status: 0 if every ping run that could run passed.
set -uo pipefail
. "$VD_SRC/tools/vm/hosts.sh"
bin=${VD_PING_BUILD:-$VD_BUILD/cmake}
ping=$bin/tools/ping/viaduct-ping
ctl=$bin/tools/viaductctl/viaductctl
fail=0

modprobe libcrc32c 2>/dev/null
insmod "$VD_KMOD/viaduct.ko" || exit 1

# run NAME SERVER-HOST SERVER-CMD... -- CLIENT-HOST CLIENT-CMD...
run() {
	local name=$1 sh=$2 srv ch rc_c rc_s
	shift 2
	local scmd=()
	while [[ $1 != -- ]]; do scmd+=("$1"); shift; done
	shift
	ch=$1
	shift
	vd_on "$sh" timeout 60 "${scmd[@]}" >"$VD_RESULTS/ping-$name-server.log" 2>&1 &
	srv=$!
	sleep 1
	vd_on "$ch" timeout 60 "$@" >"$VD_RESULTS/ping-$name-client.log" 2>&1
	rc_c=$?
	wait "$srv"
	rc_s=$?
	if ((rc_c == 0 && rc_s == 0)); then
		echo "PASS ping/$name"
	else
		echo "FAIL ping/$name (client $rc_c, server $rc_s)"
		fail=1
	fi
}

vd_hosts_up 2 || exit 1
vd_on 1 "$ctl" link add vd1 netdev eth0 >/dev/null || exit 1
vd_on 2 "$ctl" link add vd2 netdev eth0 >/dev/null || exit 1
run viaduct 1 "$ping" -s -a 192.0.2.1 -S 100 -- 2 "$ping" -c -a 192.0.2.1 -S 100 -C 5 -V
run viaduct-crc 1 "$ping" -s -a 192.0.2.1 -S 4000 --crc -- \
	2 "$ping" -c -a 192.0.2.1 -S 4000 -C 5 -V --mpa-v1
vd_hosts_down

if modprobe siw 2>/dev/null && command -v rping >/dev/null; then
	vd_hosts_up 2 || exit 1
	vd_on 1 rdma link add siw1 type siw netdev eth0 || exit 1
	vd_on 2 "$ctl" link add vd2 netdev eth0 >/dev/null || exit 1
	run rping-server 1 rping -s -a 192.0.2.1 -S 100 -- 2 "$ping" -c -a 192.0.2.1 -S 100 -C 5 -V
	run rping-client 2 "$ping" -s -a 192.0.2.2 -S 100 -- 1 rping -c -a 192.0.2.2 -S 100 -C 5 -V
	vd_on 1 rdma link del siw1
	vd_hosts_down
else
	echo "SKIP ping/rping (no siw or no rping)"
fi
exit $fail
