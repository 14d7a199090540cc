#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the test VM (started by run.sh with init=<this file>).
#
# The root file system is the host's, shared read-only over 9p: nothing may
# be written outside /tmp, /run, /dev/shm and the results dir. The kernel
# command line names the job (vd.job=), the results share's mount point
# (vd.results=) and the flavour (vd.flavour=); the rest of the job's
# environment is in <results>/job.env, written by run.sh.
#
# Whatever happens, this script ends in a power-off: PID 1 exiting would
# panic the kernel, which run.sh would report as a crashed guest.
set -euo pipefail

# The whole script is one compound command, read completely before it
# runs, so editing this file while it runs cannot derail the run.
{

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8

say() { echo "[guest] $*"; }

# shellcheck disable=SC2317 # only called from the traps
halt() {
	sync || true
	poweroff -f || echo o >/proc/sysrq-trigger
	sleep 10
}
trap 'say "init failed at line $LINENO"; halt' ERR
trap halt EXIT

# No mountpoint check: over 9p the host's own /proc, /sys and /dev look
# like mount points, and they must be hidden by the guest's.
mnt() { # type source target [options]
	mount -t "$1" ${4:+-o "$4"} "$2" "$3"
}

mnt proc proc /proc
mnt sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true # the kernel may have mounted it
mnt tmpfs tmpfs /tmp mode=1777
mnt tmpfs tmpfs /run mode=0755
mkdir -p /dev/pts /dev/shm
mnt devpts devpts /dev/pts gid=5,mode=620,ptmxmode=666
mnt tmpfs tmpfs /dev/shm mode=1777
mnt debugfs debugfs /sys/kernel/debug
mnt tracefs tracefs /sys/kernel/tracing || true
mnt cgroup2 cgroup2 /sys/fs/cgroup || true
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd

arg() { # value of vd.<name>= on the kernel command line
	local w cmdline
	read -r cmdline </proc/cmdline
	for w in $cmdline; do
		[[ $w == "vd.$1="* ]] && { echo "${w#*=}"; return; }
	done
	return 0
}
job=$(arg job)
results=$(arg results)
flavour=$(arg flavour)

# The results dir is mounted at the same path as on the host, so paths in
# logs mean the same on both sides. If it lives under /tmp, it is created
# in the guest's tmpfs first.
mkdir -p "$results"
mnt 9p vdresults "$results" trans=virtio,version=9p2000.L,msize=512000,cache=none
# shellcheck source=/dev/null
. "$results/job.env"

# The test kernel's own modules (siw, rdma_rxe, ...) replace the host's.
if [[ -d $VD_KDIR/modroot/lib/modules ]]; then
	mount --bind "$VD_KDIR/modroot/lib/modules" /lib/modules
fi

hostname "vd-$flavour"
ip link set lo up
ulimit -c 0
# Keeps a crashed test program from filling the console with core dump
# attempts on a read-only root.
echo '|/bin/false' >/proc/sys/kernel/core_pattern || true
sysctl -qw kernel.panic_on_oops=1 || true

say "up in $(cut -d' ' -f1 /proc/uptime)s: kernel $(uname -r), flavour $flavour, $(nproc) cpus"
job_timeout=$((VD_DEADLINE - $(date +%s)))
((job_timeout >= 10)) || job_timeout=10
say "running $job (timeout ${job_timeout}s)"
rc=0
# timeout runs the job in its own process group and kills the whole group.
timeout -k 10 "$job_timeout" bash "$job" </dev/null 2>&1 |
	tee "$results/job.log" || rc=${PIPESTATUS[0]}
if [[ $rc == 124 || $rc == 137 ]]; then
	say "job timed out after ${job_timeout}s"
fi
# A job killed before it saved the kernel log still gets one.
[[ -s $results/dmesg.txt ]] || dmesg >"$results/dmesg.txt" 2>&1 || true
say "job exit status $rc"
echo "$rc" >"$results/.done"
exit
}
