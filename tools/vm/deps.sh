#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs, from Debian's archive, whatever the build and the test VM need
# and is not installed yet. Safe to run again: with everything present it
# only asks dpkg and prints one line.
set -euo pipefail

pkgs=(
	# the VM and the test kernel
	qemu-system-x86 linux-source-6.12 linux-headers-amd64
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod dwarves patch
	rsync python3 perl xz-utils util-linux coreutils
	# RDMA userspace and network tools (used inside the guest over 9p)
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	iperf3 iproute2 iputils-ping strace
	# the userspace library
	libnl-3-dev libnl-genl-3-dev libibverbs-dev librdmacm-dev
	cmake pkg-config googletest libgtest-dev libgmock-dev ccache
	# style and packaging checks; clang (with libFuzzer) for tools/fuzz
	clang-format shellcheck dkms clang libclang-rt-dev
)

log() { echo "[deps] $*" >&2; }

if [[ $(id -u) != 0 ]]; then
	sudo=(sudo)
else
	sudo=()
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [[ ${#missing[@]} == 0 ]]; then
	log "all ${#pkgs[@]} packages present"
	exit 0
fi

logf=${VIADUCT_CACHE:-$HOME/.cache/viaduct}/deps.log
mkdir -p "$(dirname "$logf")"
log "installing ${#missing[@]} missing packages: ${missing[*]} (log: $logf)"
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS
if ! "${sudo[@]}" apt-get update >"$logf" 2>&1 ||
	! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" >>"$logf" 2>&1; then
	tail -n 30 "$logf" >&2
	log "ERROR: apt-get failed; see $logf"
	exit 1
fi
log "installed ${#missing[@]} packages in $((SECONDS - t0))s"
