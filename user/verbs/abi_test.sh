#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The drop-in directory serves rdma-core's binaries: for every libibverbs
# and librdmacm symbol (and version) that Debian's rping, ibv_devices and
# ibv_devinfo import, libviaduct-verbs has a definition at that version,
# and the dynamic loader resolves all of them through the directory.
# Every exported symbol carries one of rdma-core's versions.
set -u
dropin=$1
lib=$dropin/libibverbs.so.1
fail=0
defs=$(objdump -T "$lib" | grep -v '\*UND\*' | awk '/DF|DO/ {print $(NF-1) " " $NF}')
for b in /usr/bin/rping /usr/bin/ibv_devices /usr/bin/ibv_devinfo; do
	[ -x "$b" ] || { echo "$b not installed: skipped"; continue; }
	for need in $(objdump -T "$b" | awk '/\((IBVERBS|RDMACM)_/ {gsub(/[()]/, "", $(NF-1)); print $(NF-1) "@" $NF}'); do
		ver=${need%@*}
		sym=${need#*@}
		echo "$defs" | grep -Eq "^\(?$ver\)? $sym\$" ||
			{ echo "$b needs $sym@$ver: not defined"; fail=1; }
	done
	out=$(LD_LIBRARY_PATH=$dropin ldd -r "$b" 2>&1)
	if echo "$out" | grep -E 'undefined symbol|not found'; then
		fail=1
	fi
	echo "$out" | grep -q "=> $dropin/" || { echo "$b does not load from $dropin"; fail=1; }
done
# perftest's vendor libraries resolve to the drop-in's, with every import
if [ -x /usr/bin/ib_write_bw ]; then
	out=$(LD_LIBRARY_PATH=$dropin ldd -r /usr/bin/ib_write_bw 2>&1)
	if echo "$out" | grep -E 'undefined symbol|not found'; then
		fail=1
	fi
	for v in libmlx5.so.1 libefa.so.1 librdmacm.so.1; do
		echo "$out" | grep -q "$v => $dropin/" || { echo "ib_write_bw: $v not from $dropin"; fail=1; }
	done
fi
bad=$(echo "$defs" | grep -Ev '^(IBVERBS_|RDMACM_)')
if [ -n "$bad" ]; then
	echo "exported outside rdma-core's versions:"
	echo "$bad"
	fail=1
fi
exit $fail
