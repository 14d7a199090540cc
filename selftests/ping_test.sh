#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# viaduct-ping between two network namespaces, against itself and against
# rdma-core's rping on Linux's siw, in both roles, with data verification.
#
#   +---------------------+            +---------------------+
#   | netns vpa$$         |            | netns vpb$$         |
#   |  vd0 / siw$$ -> eth0|<--veth---->|  eth0 <- vd0        |
#   |  192.0.2.1/24       |            |  192.0.2.2/24       |
#   +---------------------+            +---------------------+
#
# Every ping is rping's exchange: a Send of the client's buffer address, an
# RDMA Read of it by the server, an RDMA Write back, and a Send each way
# to end the round; -V makes both sides compare the data. The siw cases
# are skipped when siw or rping is not there. Prints TAP.

set -u
src=${VD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${VD_CMAKE_BUILD:-$src/build/cmake}
ctl=$bin/tools/viaductctl/viaductctl
ping=$bin/tools/ping/viaduct-ping
A=vpa$$
B=vpb$$
# rdma devices are named machine-wide: a name of this run's own
SIW=siw$$
port=7174

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"

cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tap_tmp"
}
trap cleanup EXIT

# run DESCRIPTION SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...
# Starts the server, then the client; both must exit 0 within a minute.
run() {
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
	port=$((port + 1))
	out_s=$tap_tmp/out_s
	out_c=$tap_tmp/out_c
	"$nsrun" -t 60 "$sns" "${scmd[@]}" -p "$port" >"$out_s" 2>&1 &
	srv=$!
	# the server listens once its port shows up in its namespace
	wait_listen "$srv" "$port"
	"$nsrun" -t 60 "$cns" "$@" -p "$port" >"$out_c" 2>&1
	rc_c=$?
	wait "$srv"
	rc_s=$?
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ]; then
		echo "# $desc: client exit $rc_c, server exit $rc_s"
		echo "# server (${scmd[*]}):"
		tail -n 15 "$out_s" | sed 's/^/#   /'
		echo "# client ($*):"
		tail -n 15 "$out_c" | sed 's/^/#   /'
	fi
	ok $((rc_c != 0 || rc_s != 0)) "$desc"
}

echo "TAP version 13"
echo "1..13"

if [ ! -x "$ctl" ] || [ ! -x "$ping" ]; then
	echo "Bail out! viaductctl or viaduct-ping not built under $bin"
	exit 1
fi

ns_pair "$A" "$B" &&
	"$nsrun" "$A" "$ctl" link add vd0 netdev eth0 >/dev/null &&
	"$nsrun" "$B" "$ctl" link add vd0 netdev eth0 >/dev/null
ok $? "two namespaces joined by veth, a viaduct device in each"

run "viaduct-ping -c to viaduct-ping -s, 100 bytes, verified" \
	"$A" "$ping" -s -a 192.0.2.1 -S 100 -C 10 -V -- \
	"$B" "$ping" -c -a 192.0.2.1 -S 100 -C 10 -V
# A server on every address of its device takes IPv4 and IPv6 clients.
run "viaduct-ping -s on every address, an IPv4 client" \
	"$A" "$ping" -s -S 100 -C 3 -V -- \
	"$B" "$ping" -c -a 192.0.2.1 -S 100 -C 3 -V
run "viaduct-ping -s on every address, an IPv6 client" \
	"$A" "$ping" -s -S 100 -C 3 -V -- \
	"$B" "$ping" -c -a 2001:db8::1 -S 100 -C 3 -V
run "viaduct-ping -c from a source address with a TOS, -s with a TOS" \
	"$A" "$ping" -s -a 192.0.2.1 -t 0x10 -S 100 -C 3 -V -- \
	"$B" "$ping" -c -a 192.0.2.1 -I 192.0.2.2 -t 16 -S 100 -C 3 -V
run "viaduct to viaduct with MPA v1 and CRC, 4000 bytes" \
	"$A" "$ping" -s -a 192.0.2.1 -S 4000 -C 5 -V --crc -- \
	"$B" "$ping" -c -a 192.0.2.1 -S 4000 -C 5 -V --mpa-v1 --crc

# -P: one server serves two clients one after the other, until killed.
port=$((port + 1))
out_s=$tap_tmp/out_s
"$nsrun" -t 60 "$A" "$ping" -s -P -a 192.0.2.1 -S 100 -C 3 -V -p "$port" >"$out_s" 2>&1 &
srv=$!
wait_listen "$srv" "$port"
rc=0
for n in 1 2; do
	"$nsrun" -t 60 "$B" "$ping" -c -a 192.0.2.1 -S 100 -C 3 -V -p "$port" >/dev/null 2>&1 ||
		rc=$n
done
# still serving after both: a persistent server ends only when killed
kill -0 "$srv" 2>/dev/null || rc=3
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
if [ $rc -ne 0 ]; then
	echo "# client or server failed ($rc); server:"
	tail -n 15 "$out_s" | sed 's/^/#   /'
fi
ok $rc "viaduct-ping -s -P serves two clients one after the other"

have_siw=1
modprobe siw 2>/dev/null || have_siw=0
command -v rping >/dev/null || have_siw=0
if [ $have_siw = 1 ]; then
	"$nsrun" "$A" "$ctl" link del vd0 >/dev/null &&
		"$nsrun" "$A" rdma link add "$SIW" type siw netdev eth0
	ok $? "siw device in the first namespace instead of viaduct"
	run "rping -s on siw, viaduct-ping -c, verified" \
		"$A" rping -s -a 192.0.2.1 -S 100 -C 10 -V -- \
		"$B" "$ping" -c -a 192.0.2.1 -S 100 -C 10 -V
	run "rping -s on siw, viaduct-ping -c asking for the MPA CRC" \
		"$A" rping -s -a 192.0.2.1 -S 1000 -C 5 -V -- \
		"$B" "$ping" -c -a 192.0.2.1 -S 1000 -C 5 -V --crc
	run "viaduct-ping -s, rping -c on siw, verified" \
		"$B" "$ping" -s -a 192.0.2.2 -S 100 -C 10 -V -- \
		"$A" rping -c -a 192.0.2.2 -S 100 -C 10 -V
	run "viaduct-ping -s offering the MPA CRC, rping -c on siw" \
		"$B" "$ping" -s -a 192.0.2.2 -S 1000 -C 5 -V --crc -- \
		"$A" rping -c -a 192.0.2.2 -S 1000 -C 5 -V
	"$nsrun" "$A" rdma link del "$SIW"
	ok $? "siw device removed"
else
	for t in "siw device" "rping -s, viaduct-ping -c" "rping -s, viaduct-ping -c, CRC" \
		"viaduct-ping -s, rping -c" "viaduct-ping -s with CRC, rping -c" "siw device removed"; do
		skip "$t" "no siw module or no rping"
	done
fi

[ $failed -eq 0 ]
