#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# VIPL between two network namespaces, each with a viaduct device on its
# eth0 (as ping_test.sh makes them): the examples of examples/vipl (every
# message verified), two processes on one host waiting on different
# discriminators, and the conformance suite (vipl-conformance) with its
# server in one namespace and its client in the other. Prints TAP.
#
#   +---------------------+            +---------------------+
#   | netns via$$ (A)     |            | netns vib$$ (B)     |
#   |  vd0 -> eth0        |<--veth---->|  eth0 <- vd0        |
#   |  192.0.2.1/24       |            |  192.0.2.2/24       |
#   +---------------------+            +---------------------+

set -u
src=${VD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${VD_CMAKE_BUILD:-$src/build/cmake}
ctl=$bin/tools/viaductctl/viaductctl
ex=$bin/examples/vipl
conf=$bin/user/vipl/tests/vipl-conformance
A=via$$
B=vib$$
IPA=192.0.2.1

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"

cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tap_tmp"
}
trap cleanup EXIT

# pair DESCRIPTION SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...
# The server in the background, then the client (which retries while the
# server is not waiting yet); both must exit 0 within $tmo seconds: a bound
# for a hang, generous for a loaded host, never a measure of speed.
tmo=120
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
	sed 's/^/# /' "$out_c"
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ]; then
		echo "# $desc: client exit $rc_c, server exit $rc_s"
		echo "# server (${scmd[*]}):"
		tail -n 120 "$out_s" | sed 's/^/#   /'
	fi
	ok $((rc_c != 0 || rc_s != 0)) "$desc"
}

echo "TAP version 13"
echo "1..14"

for p in "$ctl" "$ex/vipl-echo-server" "$ex/vipl-echo-client" "$ex/vipl-pingpong" \
	"$ex/vipl-rdma-write" "$ex/vipl-peer" "$conf"; do
	if [ ! -x "$p" ]; then
		echo "Bail out! $p not built under $bin"
		exit 1
	fi
done

ns_pair "$A" "$B" &&
	"$nsrun" "$A" "$ctl" link add vd0 netdev eth0 >/dev/null &&
	"$nsrun" "$B" "$ctl" link add vd0 netdev eth0 >/dev/null
ok $? "two namespaces joined by veth, a viaduct device in each"

pair "echo: the guide's server and client, every size class to 64 KiB, verified" \
	"$A" "$ex/vipl-echo-server" -n 1 -- \
	"$B" "$ex/vipl-echo-client" -a $IPA -n 2 -S 65536

# two clients at once on the server's one receive CQ, NICs named three ways
out1=$tap_tmp/out1
"$nsrun" -t "$tmo" "$A" "$ex/vipl-echo-server" -d /dev/via_eth0 -n 2 -S 4096 \
	>"$out1" 2>&1 &
srv=$!
"$nsrun" -t "$tmo" "$B" "$ex/vipl-echo-client" -d vd0 -a $IPA -n 3 -S 4096 \
	>/dev/null 2>&1 &
c1=$!
"$nsrun" -t "$tmo" "$B" "$ex/vipl-echo-client" -d VINIC0 -a $IPA -n 3 -S 4096 2>&1 |
	sed 's/^/# /'
rc=${PIPESTATUS[0]}
wait $c1 || rc=1
wait $srv || rc=1
[ "$rc" -eq 0 ] || sed 's/^/#   server: /' "$out1"
ok "$rc" "echo: two clients at once, one receive CQ; NICs /dev/via_eth0, vd0, VINIC0"

pair "ping-pong: 300 round trips of 64 bytes, completion by polling" \
	"$A" "$ex/vipl-pingpong" -s -n 300 -S 64 -- \
	"$B" "$ex/vipl-pingpong" -c $IPA -n 300 -S 64
# the native API's ping-pong in the same conditions, for comparison
perf=$bin/tools/perf/viaduct-perf
if [ -x "$perf" ]; then
	out1=$tap_tmp/native
	"$nsrun" -t "$tmo" "$A" "$perf" -d vd0 -s --addr $IPA >"$out1" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		has_line "$out1" '*waiting for a client*' && break
		nap 0.05
	done
	"$nsrun" -t "$tmo" "$B" "$perf" -d vd0 --addr $IPA -t lat-send -n 300 \
		--sizes 64 2>&1 | sed 's/^/# native viaduct-perf: /'
	wait $srv
fi
pair "ping-pong: 100 round trips of 32 KiB, completion by waiting" \
	"$A" "$ex/vipl-pingpong" -s -n 100 -S 32768 -w -- \
	"$B" "$ex/vipl-pingpong" -c $IPA -n 100 -S 32768 -w
pair "ping-pong by RDMA Write (-W): 300 round trips of 8 bytes, tags checked" \
	"$A" "$ex/vipl-pingpong" -s -n 300 -S 8 -W -- \
	"$B" "$ex/vipl-pingpong" -c $IPA -n 300 -S 8 -W
pair "RDMA Write with and without immediate data, every size class to 64 KiB" \
	"$A" "$ex/vipl-rdma-write" -s -S 65536 -- \
	"$B" "$ex/vipl-rdma-write" -c $IPA -S 65536
# beyond 64 KiB: every size class up to MaxTransferSize (4 MiB) once
pair "echo: every size class to MaxTransferSize (4 MiB), verified" \
	"$A" "$ex/vipl-echo-server" -n 1 -S 4194304 -- \
	"$B" "$ex/vipl-echo-client" -a $IPA -n 1 -S 4194304
pair "RDMA Write, with and without immediate data, every size class to MaxTransferSize (4 MiB)" \
	"$A" "$ex/vipl-rdma-write" -s -S 4194304 -- \
	"$B" "$ex/vipl-rdma-write" -c $IPA -S 4194304
pair "stream: 100 RDMA Writes of 64 KiB, 16 in flight, every byte of the target verified" \
	"$A" "$ex/vipl-stream" -s -S 65536 -- \
	"$B" "$ex/vipl-stream" -c $IPA -S 65536 -n 100 -t 16
pair "peer-to-peer from both sides at once, PeerDone and PeerWait" \
	"$A" "$ex/vipl-peer" -a 192.0.2.2 -l alpha -r beta -w -- \
	"$B" "$ex/vipl-peer" -a $IPA -l beta -r alpha

# two processes on one host, each waiting on its own discriminator
out1=$tap_tmp/out1
out2=$tap_tmp/out2
"$nsrun" -t "$tmo" "$A" "$ex/vipl-echo-server" -D one -n 1 -S 1024 >"$out1" 2>&1 &
s1=$!
"$nsrun" -t "$tmo" "$A" "$ex/vipl-echo-server" -D two -n 1 -S 2048 >"$out2" 2>&1 &
s2=$!
rc=0
"$nsrun" -t "$tmo" "$B" "$ex/vipl-echo-client" -a $IPA -D two -S 2048 2>&1 |
	sed 's/^/# /'
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
"$nsrun" -t "$tmo" "$B" "$ex/vipl-echo-client" -a $IPA -D one -S 1024 2>&1 |
	sed 's/^/# /'
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
wait $s1 || rc=1
wait $s2 || rc=1
[ $rc -eq 0 ] || { sed 's/^/#   one: /' "$out1"; sed 's/^/#   two: /' "$out2"; }
ok "$rc" "two servers on one host, discriminators \"one\" and \"two\", each reached"

"$nsrun" -t 300 "$A" "$conf" local 2>&1 | sed 's/^/# /'
ok "${PIPESTATUS[0]}" "conformance suite: one process, no connection"
tmo=400
pair "conformance suite: server side in A, client side in B" \
	"$A" "$conf" server 192.0.2.2 -- \
	"$B" "$conf" client $IPA


[ $failed -eq 0 ]
