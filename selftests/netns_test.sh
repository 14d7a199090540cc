#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# viaductctl link add/del/show across two network namespaces.
#
#   +------------------+            +------------------+
#   | netns vda$$      |            | netns vdb$$      |
#   |  vd0 -> eth0     |<--veth---->|  eth0 <- vd0     |
#   |  192.0.2.1/24    |            |  192.0.2.2/24    |
#   +------------------+            +------------------+
#
# Each namespace must see only its own device; a device goes away with its
# interface, including when the peer's namespace is deleted (which destroys
# the veth pair). Prints TAP.

set -u
ctl=${VIADUCTCTL:-${VD_SRC:-$(cd "$(dirname "$0")/.." && pwd)}/build/cmake/tools/viaductctl/viaductctl}
A=vda$$
B=vdb$$

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"

# expect STATUS DESCRIPTION -- command...: runs the command, checks its exit status
expect() {
	local want=$1 desc=$2 got
	shift 3
	out=$("$@" 2>&1)
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "# $desc: exit $got, wanted $want; output:"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
	ok $((got != want)) "$desc"
}

cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tap_tmp"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..17"

if [ ! -x "$ctl" ]; then
	echo "Bail out! viaductctl not found at $ctl"
	exit 1
fi

ns_pair "$A" "$B"
ok $? "create two namespaces joined by veth"

expect 0 "add vd0 in $A" -- "$nsrun" "$A" "$ctl" link add vd0 netdev eth0
expect 0 "add vd0 in $B (names are per namespace)" -- "$nsrun" "$B" "$ctl" link add vd0 netdev eth0

out=$("$nsrun" "$A" "$ctl" link show)
[ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] && printf '%s\n' "$out" | grep -q 'vd0.*eth0'
ok $? "$A lists exactly its own device"

json=$("$nsrun" "$B" "$ctl" --json link show)
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert isinstance(d, list) and len(d) == 1, d
assert d[0]["ifname"] == "vd0" and d[0]["netdev"] == "eth0", d
' "$json"
ok $? "$B lists exactly its own device as JSON"

out=$("$nsrun" "$A" "$ctl" dev show vd0)
printf '%s\n' "$out" | grep -q '192\.0\.2\.1/24'
ok $? "dev show reports the interface address"

json=$("$nsrun" "$A" "$ctl" -j dev)
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert len(d) == 1, d
dev = d[0]
assert any(a.startswith("192.0.2.1/24") for a in dev["addresses"]), dev
assert dev["limits"]["max_qp"] > 0, dev
' "$json"
ok $? "dev --json reports addresses and limits"

expect 2 "duplicate name is refused" -- "$nsrun" "$A" "$ctl" link add vd0 netdev lo
printf '%s\n' "$out" | grep -qi 'exist'
ok $? "duplicate name error says so"

expect 2 "second device on one interface is refused" -- "$nsrun" "$A" "$ctl" link add vd1 netdev eth0
expect 2 "unknown interface is refused" -- "$nsrun" "$A" "$ctl" link add vd1 netdev nosuch0
printf '%s\n' "$out" | grep -qi 'not found\|no such'
ok $? "unknown interface error names the problem"

expect 2 "unprivileged add is refused" -- "$nsrun" "$A" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$ctl" link add vd2 netdev lo

expect 0 "del vd0 in $A" -- "$nsrun" "$A" "$ctl" link del vd0
[ -z "$("$nsrun" "$A" "$ctl" link show)" ] &&
	"$nsrun" "$B" "$ctl" link show | grep -q vd0
ok $? "deleting in $A leaves $B's device alone"

expect 0 "re-add vd0 in $A" -- "$nsrun" "$A" "$ctl" link add vd0 netdev eth0

# Deleting namespace B destroys the veth pair, so A's eth0 and device go too.
ip netns del "$B"
gone=1
for _ in $(seq 50); do
	if [ -z "$("$nsrun" "$A" "$ctl" link show 2>/dev/null)" ]; then
		gone=0
		break
	fi
	sleep 0.1
done
ok $gone "device goes with its interface when the peer namespace is deleted"

[ "$n" -eq 17 ] || echo "# planned 17 tests, ran $n"
exit $((failed != 0))
