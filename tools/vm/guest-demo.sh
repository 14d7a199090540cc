#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The VM job of "make demo" (see tools/demo.sh): loads viaduct, creates two
# test hosts and adds a viaduct link on h1's eth0, printing what viaductctl
# says at each step.
set -euo pipefail

# shellcheck source=tools/vm/hosts.sh
. "$VD_SRC/tools/vm/hosts.sh"

ctl=${VD_VIADUCTCTL:-$VD_BUILD/cmake/tools/viaductctl/viaductctl}
show() { # runs and echoes a command, its output indented
	echo "[guest] \$ $*"
	"$@" 2>&1 | sed 's/^/[guest]     /'
	return "${PIPESTATUS[0]}"
}

[[ -x $ctl ]] || { echo "[guest] viaductctl missing: $ctl"; exit 1; }
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
show vd_on 1 "$ctl" dev
show vd_on 1 "$ctl" link show
show vd_on 1 rdma link show
vd_hosts_down
show rmmod viaduct
echo "[guest] demo done"
