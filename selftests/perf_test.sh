#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# viaduct-perf between two network namespaces joined by veth:
#
#   netns vpa$$: vd0 on eth0 192.0.2.1 (client) <-- veth --> 192.0.2.2 eth0, vd0 (server) :vpb$$
#
# Every test of the tool runs once, short (TCG is slow): the client and the
# server must both exit 0, and every row of the client's table must report
# a nonzero message rate with a matching bandwidth (or nonzero latency).
# The data checks of the tool itself (first and last bytes of each size)
# must pass, since a failed check exits 1. Prints TAP.

set -u
top=${VD_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
ctl=${VIADUCTCTL:-$top/build/cmake/tools/viaductctl/viaductctl}
perf=${VIADUCT_PERF:-$top/build/cmake/tools/perf/viaduct-perf}
A=vpa$$
B=vpb$$
port=18515

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"
tmp=$tap_tmp

cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# run_pair DESC AWK_CHECK -- client args...: a server in B, the client in A.
run_pair() {
	local desc=$1 check=$2 rc src i
	shift 3
	port=$((port + 1))
	# emptied here, not only by the server's redirection: the wait below
	# must not find the line the previous server wrote
	: >"$tmp/server"
	"$nsrun" "$B" "$perf" -d vd0 --server --addr 192.0.2.2 -p "$port" >"$tmp/server" 2>&1 &
	spid=$!
	for ((i = 0; i < 200; i++)); do
		has_line "$tmp/server" '*waiting for a client*' && break
		nap 0.05
	done
	# perftest's form: the server's address is the argument.
	"$nsrun" -t 120 "$A" "$perf" -d vd0 -p "$port" "$@" 192.0.2.2 \
		>"$tmp/client" 2>&1
	rc=$?
	# the server ends by itself after its client: up to 30 s, then stopped
	for ((i = 0; i < 600; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		nap 0.05
	done
	kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	spid=
	sed 's/^/#   /' "$tmp/client"
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		echo "# client exit $rc, server exit $src; server said:"
		sed 's/^/#   /' "$tmp/server"
	fi
	[ $rc -eq 0 ] && [ $src -eq 0 ]
	ok $? "$desc: client and server exit 0"
	awk "$check" "$tmp/client"
	ok $? "$desc: every size reports a nonzero result"
}

# Rows of a bandwidth table, as perftest's: bytes iters peak average
# MsgRate, $want rows, each with a nonzero message rate, an average that
# agrees with it (BW is printed with two decimals, so a slow run of tiny
# messages shows 0.00; MsgRate with six) and a peak no lower than it.
bw() {
	echo "BEGIN { r = 0 } \$1 ~ /^[0-9]+\$/ && NF == 5 {
		c = \$1 * \$5 * 1000000 / 1048576; d = \$4 - c; if (d < 0) d = -d
		if (\$5 > 0 && d <= 0.006 + 0.05 * c && \$3 >= \$4) r++; else exit 1
	} END { exit r != $1 }"
}
# The same in Gb/s (--report_gbits): 10^9 bits, not 2^20 bytes.
bwg() {
	echo "BEGIN { r = 0 } \$1 ~ /^[0-9]+\$/ && NF == 5 {
		c = \$1 * \$5 * 8 / 1000; d = \$4 - c; if (d < 0) d = -d
		if (\$5 > 0 && d <= 0.006 + 0.05 * c && \$3 >= \$4) r++; else exit 1
	} END { exit r != $1 }"
}
# Rows of a latency table: bytes iters and 7 times, t_min > 0.
lat() {
	echo "BEGIN { r = 0 } \$1 ~ /^[0-9]+\$/ && NF == 9 { if (\$3 > 0 && \$6 > 0) r++; else exit 1 } END { exit r != $1 }"
}

echo "TAP version 13"
echo "1..26"

# Iterations per size: under KASAN and lockdep (the debug flavour) the same
# paths with fewer messages; the rows that must outrun a burst of receives
# keep their counts (Documentation/testing.rst, "Flavours").
n300=300 n200=200
if [ "${VD_FLAVOUR:-}" = debug ]; then
	n300=96 n200=64
	echo "# debug flavour: iterations 96 instead of 300, 64 instead of 200"
fi

for f in "$ctl" "$perf"; do
	if [ ! -x "$f" ]; then
		echo "Bail out! not built: $f"
		exit 1
	fi
done

ns_pair "$A" "$B" &&
	"$nsrun" "$A" "$ctl" link add vd0 netdev eth0 &&
	"$nsrun" "$B" "$ctl" link add vd0 netdev eth0
ok $? "two namespaces with vd0 on veth"

run_pair "RDMA Write, 2 QPs" "$(bw 3)" -- -t write -n $n300 --sizes 1,4096,65536 -q 2
run_pair "RDMA Read" "$(bw 2)" -- -t read -n $n300 --sizes 64,65536
run_pair "Send, more than a burst of receives" "$(bw 2)" -- -t send -n 600 --sizes 2,8192
run_pair "Send latency" "$(lat 2)" -- -t lat-send -n $n200 --sizes 2,4096
run_pair "RDMA Write latency, polled doorbell" "$(lat 3)" -- -t lat-write -n $n200 --sizes 1,2,4096 --polled
# perftest's options: -s size, -t TX depth, --report_gbits; every byte checked.
run_pair "RDMA Read on 2 QPs, -s, -t 8, events (-e), every byte checked" "$(bw 1)" -- --test read -s 65536 -n $n300 -t 8 -q 2 -e --check=all
run_pair "RDMA Write in Gb/s, a completion every 8 (-Q), every byte checked" "$(bwg 2)" -- --test write --sizes 4096,65536 -n $n300 -Q 8 --check=all --report_gbits
run_pair "Send inline (-I 64), every byte checked" "$(bw 2)" -- --test send --sizes 16,64 -I 64 -n $n300 --check=all
run_pair "Send for a second (-D 1), in bursts" "$(bw 1)" -- --test send -s 4096 -n 100 -D 1
# perftest's -b: the server streams to the client at the same time; every
# byte checked on both sides. -l: one WR per post call, as perftest's default.
run_pair "RDMA Write both ways (-b) on 2 QPs, every byte checked" "$(bw 2)" -- --test write -b --sizes 4096,65536 -n $n200 -q 2 --check=all
run_pair "RDMA Read both ways (-b), every byte checked" "$(bw 1)" -- --test read -b -s 65536 -n $n200 --check=all
run_pair "Send both ways (-b), more than a burst, one WR per post (-l 1), every byte checked" "$(bw 1)" -- --test send -b -s 2048 -n 600 -l 1 --check=all

# A client without a server fails, and says why.
"$nsrun" -t 60 "$A" "$perf" -d vd0 --addr 192.0.2.2 -p 9 -t write -n 1 \
	>"$tmp/client" 2>&1
rc=$?
sed 's/^/#   /' "$tmp/client"
[ $rc -eq 1 ] && grep -q 'cannot connect\|no answer\|rejected' "$tmp/client"
ok $? "a client without a server exits 1 with a reason"

[ "$n" -eq 26 ] || echo "# planned 26 tests, ran $n"
exit $((failed != 0))
