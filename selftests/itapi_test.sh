#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# IT-API (libviaduct-itapi) between two network namespaces, each with a
# viaduct device on its eth0: the conformance scenarios (itapi-conformance:
# the one-process ones in A, then the two-host ones with the passive side
# in A and the active side in B), and itapi-rping, an IT-API client of
# rping's protocol, against viaduct-ping -s on viaduct and against
# rdma-core's rping -s on Linux's siw (skipped without siw or rping).
# Prints TAP.
#
#   +---------------------+            +---------------------+
#   | netns ita$$ (A)     |            | netns itb$$ (B)     |
#   |  vd0 / siw$$ -> eth0|<--veth---->|  eth0 <- vd0        |
#   |  192.0.2.1/24       |            |  192.0.2.2/24       |
#   +---------------------+            +---------------------+

set -u
src=${VD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${VD_CMAKE_BUILD:-$src/build/cmake}
ctl=$bin/tools/viaductctl/viaductctl
vping=$bin/tools/ping/viaduct-ping
conf=$bin/user/itapi/tests/itapi-conformance
irping=$bin/user/itapi/tests/itapi-rping
A=ita$$
B=itb$$
# rdma devices are named machine-wide: a name of this run's own
SIW=siw$$
IPA=192.0.2.1
IPB=192.0.2.2

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"

cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tap_tmp"
}
trap cleanup EXIT

# A bound for a hang, generous for a loaded host, never a measure of speed.
tmo=120

# pair DESCRIPTION SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...
# The server in the background, then the client (which retries while the
# server is not there yet); both must exit 0. The client's TAP lines (and
# the server's) are kept as diagnostics.
pair() {
	local desc=$1 sns=$2 srv rc_c rc_s out_s out_c
	shift 2
	local scmd=()
	while [ "$1" != -- ]; do
		scmd+=("$1")
		shift
	done
	shift
	local cns=$1
	shift
	out_s=$tap_tmp/out_s
	out_c=$tap_tmp/out_c
	"$nsrun" -t "$tmo" "$sns" "${scmd[@]}" >"$out_s" 2>&1 &
	srv=$!
	"$nsrun" -t "$tmo" "$cns" "$@" >"$out_c" 2>&1
	rc_c=$?
	wait "$srv"
	rc_s=$?
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ]; then
		echo "# $desc: client exit $rc_c, server exit $rc_s"
		echo "# client ($*):"
		grep -v '^ok ' "$out_c" | tail -n 60 | sed 's/^/#   /'
		echo "# server (${scmd[*]}):"
		grep -v '^ok ' "$out_s" | tail -n 60 | sed 's/^/#   /'
	else
		echo "# client: $(grep -c '^ok ' "$out_c") checks passed, server: $(grep -c '^ok ' "$out_s")"
	fi
	ok $((rc_c != 0 || rc_s != 0)) "$desc"
}

echo "TAP version 13"
echo "1..7"

for p in "$ctl" "$vping" "$conf" "$irping"; do
	if [ ! -x "$p" ]; then
		echo "Bail out! $p not built under $bin"
		exit 1
	fi
done

ns_pair "$A" "$B" &&
	"$nsrun" "$A" "$ctl" link add vd0 netdev eth0 >/dev/null &&
	"$nsrun" "$B" "$ctl" link add vd0 netdev eth0 >/dev/null
ok $? "two namespaces joined by veth, a viaduct device in each"

out=$tap_tmp/out
"$nsrun" -t "$tmo" "$A" "$conf" local >"$out" 2>&1
rc=$?
grep -v '^ok ' "$out" | sed 's/^/# /'
echo "# $(grep -c '^ok ' "$out") checks passed"
ok $rc "conformance: one process (S1, the TII's errors, connections to itself, posts on a flushed EP)"

pair "conformance: S2-S11, reject, handoff, listen_free, passive side in A" \
	"$A" "$conf" server $IPB -- \
	"$B" "$conf" client $IPA

# rping's protocol, viaduct to viaduct: the native viaduct-ping as server
port=7300
"$nsrun" -t "$tmo" "$A" "$vping" -s -a $IPA -p $port -S 100 -C 10 -V >/dev/null 2>&1 &
srv=$!
wait_listen "$srv" $port
"$nsrun" -t "$tmo" "$B" "$irping" -a $IPA -p $port -S 100 -C 10 -V 2>&1 | sed 's/^/# /'
rc=${PIPESTATUS[0]}
wait $srv || rc=1
ok "$rc" "itapi-rping -C 10 -V against viaduct-ping -s (native API)"

have_siw=1
modprobe siw 2>/dev/null || have_siw=0
command -v rping >/dev/null || have_siw=0
if [ $have_siw = 1 ]; then
	"$nsrun" "$A" rdma link add "$SIW" type siw netdev eth0
	ok $? "siw device in the first namespace"
	port=7301
	"$nsrun" -t "$tmo" "$A" rping -s -a $IPA -p $port -S 100 -C 20 -V >/dev/null 2>&1 &
	srv=$!
	wait_listen "$srv" $port
	"$nsrun" -t "$tmo" "$B" "$irping" -a $IPA -p $port -S 100 -C 20 -V 2>&1 |
		sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	wait $srv || rc=1
	ok "$rc" "itapi-rping -C 20 -V against rdma-core's rping -s on siw"
	"$nsrun" "$A" rdma link del "$SIW"
	ok $? "siw device removed"
else
	skip "siw device in the first namespace" "no siw module or no rping"
	skip "itapi-rping against rping -s on siw" "no siw module or no rping"
	skip "siw device removed" "no siw module or no rping"
fi

[ $failed -eq 0 ]
