#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The VM job of "make bench" (see tools/bench.sh): viaduct against siw in
# one VM run. Loads viaduct and siw, creates two test hosts, gives h1 a
# viaduct device and an siw device on its eth0 and h2 an siw device, then
# runs viaduct-bench:
#
#   h1: viaduct-bench mr    --viaduct vd0 --siw siwb1
#   h2: viaduct-bench serve --bind 192.0.2.2            (siw peer)
#   h1: viaduct-bench post  --viaduct vd0 --siw-server 192.0.2.2
#
# then the data path from h1 to h2 (h2 gets a viaduct device vd0 too):
# viaduct-perf on vd0 <-> vd0 against perftest -R on siwb1 <-> siwb2
# (write and read bandwidth at 64 KiB and 1 MiB, 8-byte send and write
# latency, 64-byte write message rate on 1 and 8 QPs, viaduct with and
# without --polled), perftest on vd0 through libviaduct-verbs beside
# viaduct-perf posting as perftest does, VIPL's ping-pong and stream examples beside
# the native and siw Send latency and write bandwidth, iperf3 between the same hosts as the
# ceiling (run VD_BENCH_TCP_RUNS times, 3 by default, interleaved with the
# RDMA steps; the median counts) and viaduct-tcplat's 8-byte TCP
# ping-pong (blocking and busy-polling) as the latency floor.
# Each of those steps has a time limit (VD_BENCH_STEP_TIMEOUT, 90 s); one
# that fails gives an ERR cell and an ERROR line, the others still run,
# and the job fails at its end. Their outputs are kept in
# $VD_RESULTS/datapath/.
#
# The tables go to $VD_RESULTS/bench.txt and, unless VD_BENCH_ECHO=0 (as
# tools/bench.sh sets, printing the file itself), to the console as
# [guest] lines. Knobs: VD_BENCH (the binary), VD_PERF, VD_VIADUCTCTL,
# VD_BENCH_ITERS, VD_BENCH_BATCHES, VD_BENCH_MR_SCALE; for the data path
# VD_BENCH_BW_ITERS (200), VD_BENCH_LAT_ITERS (1000), VD_BENCH_RATE_ITERS
# (2000 per QP), VD_BENCH_TCP_SECS (3), VD_BENCH_STEP_TIMEOUT (90).
#
# A benchmark, not a test: it fails only when a step fails (a device that
# cannot be created, a registration or completion that goes wrong, a
# data path run that fails or times out, a kernel complaint), never on
# the numbers.
set -euo pipefail

# shellcheck source=tools/vm/hosts.sh
. "$VD_SRC/tools/vm/hosts.sh"

bench=${VD_BENCH:-$VD_BUILD/cmake/tools/bench/viaduct-bench}
ctl=${VD_VIADUCTCTL:-$VD_BUILD/cmake/tools/viaductctl/viaductctl}
out=$VD_RESULTS/bench.txt
ready=/tmp/bench-server-ready
server=

say() { echo "[guest] $*"; }
stop_server() {
	if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	server=
}
die() {
	say "ERROR: $*"
	stop_server
	dmesg >"$VD_RESULTS/dmesg.txt" 2>&1 || true
	exit 1
}

[[ -x $bench ]] || die "viaduct-bench missing: $bench"
[[ -x $ctl ]] || die "viaductctl missing: $ctl"

# The 256 MiB registrations pin 256 MiB, past the default limit of 8 MiB.
# Root has CAP_IPC_LOCK, which viaduct and siw (through ib_umem_get())
# honour; the job does not rely on it.
ulimit -l unlimited || die "cannot raise RLIMIT_MEMLOCK"
avail_kib=$(awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo)
if ((avail_kib < 640 * 1024)); then
	die "only $((avail_kib / 1024)) MiB available; the 256 MiB registrations need 640 (raise VD_MEM)"
fi

[[ -f $VD_KMOD/viaduct.ko ]] || die "no $VD_KMOD/viaduct.ko"
# insmod resolves no dependencies (libcrc32c where crc32c is a module).
for dep in $(modinfo -F depends "$VD_KMOD/viaduct.ko" | tr , ' '); do
	modprobe "$dep" || die "modprobe $dep (needed by viaduct.ko) failed"
done
insmod "$VD_KMOD/viaduct.ko" || die "insmod viaduct.ko failed"
modprobe siw || die "modprobe siw failed"
vd_hosts_up 2 || die "test hosts"
peer=$(vd_host_ip4 2)
# h1's and h2's eth0 have the same ifindex (3). siw's wildcard listen
# (perftest -R listens on every address) binds one socket per siw device,
# in the listener's namespace, to the ifindex of that device's netdev: in
# h2, siwb1's socket and siwb2's collide (EADDRINUSE) and rdma_listen fails.
# Give h2's eth0 another ifindex: move it out, take 3 with a pad veth pair
# (down, no address), move it back. Before any device sits on eth0.
renumber_h2_eth0() {
	ip netns add vdtmp &&
		ip -n h2 link set eth0 netns vdtmp &&
		ip -n h2 link add vdpad index 3 type veth peer name vdpad1 &&
		ip -n vdtmp link set eth0 netns h2 &&
		ip netns del vdtmp &&
		ip -n h2 addr add "$peer/24" dev eth0 &&
		ip -n h2 addr add "$(vd_host_ip6 2)/64" dev eth0 nodad &&
		ip -n h2 link set eth0 up
}
renumber_h2_eth0 || die "cannot give h2's eth0 a new ifindex"
vd_on 1 "$ctl" link add vd0 netdev eth0 || die "viaductctl link add"
vd_on 1 rdma link add siwb1 type siw netdev eth0 || die "rdma link add siwb1"
vd_on 2 rdma link add siwb2 type siw netdev eth0 || die "rdma link add siwb2"
vd_on 1 ping -q -c 1 -W 2 "$peer" >/dev/null || die "h1 cannot reach $peer"

{
	echo "# viaduct-bench, $(date -u +%Y-%m-%dT%H:%MZ), QEMU TCG guest, $(nproc) vCPUs," \
		"$((avail_kib / 1024)) MiB available"
	echo "# viaduct device vd0 and siw device siwb1 on h1 eth0 ($(vd_host_ip4 1));" \
		"siw peer siwb2 on h2 ($peer)"
} >"$out"

say "memory registration (viaduct and siw in h1)"
vd_on 1 "$bench" mr --viaduct vd0 --siw siwb1 ${VD_BENCH_MR_SCALE:+--mr-scale "$VD_BENCH_MR_SCALE"} \
	>>"$out" || die "viaduct-bench mr failed"

say "post + poll (siw peer in h2)"
rm -f "$ready"
# ip netns exec runs the program itself, so $! is the server's pid.
ip netns exec h2 "$bench" serve --bind "$peer" --ready "$ready" &
server=$!
for ((i = 0; i < 100; i++)); do
	[[ ! -s $ready ]] || break
	kill -0 "$server" 2>/dev/null || die "the siw server exited before listening"
	sleep 0.2
done
[[ -s $ready ]] || die "the siw server did not start listening"
rc=0
vd_on 1 "$bench" post --viaduct vd0 --siw-server "$peer" \
	${VD_BENCH_ITERS:+--iters "$VD_BENCH_ITERS"} \
	${VD_BENCH_BATCHES:+--batches "$VD_BENCH_BATCHES"} >>"$out" || rc=$?
# The server returns when the client disconnects; do not wait forever.
for ((i = 0; i < 50 && rc == 0; i++)); do
	kill -0 "$server" 2>/dev/null || break
	sleep 0.2
done
if kill -0 "$server" 2>/dev/null; then
	((rc != 0)) || say "the siw server did not finish; stopping it"
	stop_server
else
	srv_rc=0
	wait "$server" || srv_rc=$?
	server=
	((srv_rc == 0)) || say "the siw server exited with status $srv_rc"
fi
((rc == 0)) || die "viaduct-bench post failed (status $rc)"

# --- Data path: h1 -> h2, viaduct-perf on vd0 against perftest on siw ------
#
# Every step runs with a time limit; a step that fails or times out gives
# an error row in the table (and its output in $VD_RESULTS/datapath/), and
# the job goes on. The job fails at the end if any step failed.
dp=$VD_RESULTS/datapath
mkdir -p "$dp"
dp_failed=0
dp_step_timeout=${VD_BENCH_STEP_TIMEOUT:-90}
declare -A res=()

# dp_pair NAME READY-PATTERN SERVER... -- CLIENT...: the server in h2, the
# client in h1 once the server is listening. Leaves the client's output in
# $dp/NAME.out, the server's in $dp/NAME.srv; returns non-zero on failure.
dp_pair() {
	local name=$1 pat=$2 srv=() cli=() spid i rc=0 src=0
	shift 2
	while (($#)) && [[ $1 != -- ]]; do
		srv+=("$1")
		shift
	done
	shift
	cli=("$@")
	: >"$dp/$name.srv"
	ip netns exec h2 timeout -k 5 $((dp_step_timeout + 30)) stdbuf -oL -eL \
		"${srv[@]}" >"$dp/$name.srv" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		grep -qi -- "$pat" "$dp/$name.srv" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.2
	done
	# perftest prints its banner before it listens: wait (up to 10 s) for a
	# listening socket on the step's port (${DP_PORT:-18515}; every tool
	# here listens on its default port), so that a loaded host does not
	# make the client's connect fail with ECONNREFUSED.
	for ((i = 0; i < 50; i++)); do
		[[ ${DP_PORT:-} != none ]] || break # VIPL: no port of its own
		ip netns exec h2 ss -Htln "sport = :${DP_PORT:-18515}" 2>/dev/null | grep -q . && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.2
	done
	if ! kill -0 "$spid" 2>/dev/null; then
		wait "$spid" 2>/dev/null || true
		echo "the server exited before the client started" >"$dp/$name.out"
		return 1
	fi
	vd_on 1 timeout -k 5 "$dp_step_timeout" "${cli[@]}" >"$dp/$name.out" 2>&1 || rc=$?
	# The server returns when the client is done; do not wait forever.
	for ((i = 0; i < 50; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$spid" 2>/dev/null; then
		kill "$spid" 2>/dev/null || true
		((rc != 0)) || rc=124
	fi
	wait "$spid" 2>/dev/null || src=$?
	((rc != 0 || src == 0)) || rc=$src
	((rc == 0)) || echo "exit status $rc" >>"$dp/$name.out"
	return "$rc"
}

# dp_col NAME SIZE COLUMN: that column of the result row for SIZE.
dp_col() {
	awk -v s="$2" -v c="$3" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= c { v = $c } END { if (v != "") print v; else exit 1 }' \
		"$dp/$1.out"
}

# dp_get KEY NAME SIZE COLUMN: res[KEY] from a finished step, or ERR.
dp_get() {
	local v
	if v=$(dp_col "$2" "$3" "$4"); then
		res[$1]=$v
	else
		res[$1]=ERR
	fi
}

dp_fail() {
	say "ERROR: data path step $1 failed: $(tail -n 2 "$dp/$1.out" | tr '\n' ' ')"
	dp_failed=1
}

perf=${VD_PERF:-$VD_BUILD/cmake/tools/perf/viaduct-perf}
vd_srv=("$perf" -d vd0 -s --addr "$peer")
vd_cli=("$perf" -d vd0 --addr "$peer")
bw_iters=${VD_BENCH_BW_ITERS:-200}
lat_iters=${VD_BENCH_LAT_ITERS:-1000}
rate_iters=${VD_BENCH_RATE_ITERS:-2000}

# vd_run NAME [--polled] VIADUCT-PERF-CLIENT-ARGS...
vd_run() {
	local name=$1 pol=()
	shift
	if [[ ${1:-} == --polled ]]; then
		pol=(--polled)
		shift
	fi
	say "data path: viaduct $name"
	dp_pair "vd-$name" 'waiting for a client' "${vd_srv[@]}" "${pol[@]}" -- \
		"${vd_cli[@]}" "${pol[@]}" "$@" || dp_fail "vd-$name"
}

# siw_run NAME PERFTEST-PROGRAM ARGS...: the same arguments on both sides.
siw_run() {
	local name=$1 prog=$2
	shift 2
	say "data path: siw $name"
	dp_pair "siw-$name" 'waiting' "$prog" -d siwb2 -R -F "$@" -- \
		"$prog" -d siwb1 -R -F "$@" "$peer" || dp_fail "siw-$name"
}

if [[ ! -x $perf ]]; then
	say "ERROR: viaduct-perf missing: $perf"
	dp_failed=1
elif ! vd_on 2 "$ctl" link add vd0 netdev eth0; then
	say "ERROR: viaductctl link add vd0 in h2 failed"
	dp_failed=1
fi

# tcp_run K: iperf3 run K (of VD_BENCH_TCP_RUNS, interleaved with the
# RDMA steps so that one noisy stretch does not decide the ceiling).
tcp_runs=${VD_BENCH_TCP_RUNS:-3}
tcp_vals=()
tcp_run() {
	local v
	(($1 <= tcp_runs)) || return 0
	say "data path: TCP (iperf3, run $1 of $tcp_runs)"
	if DP_PORT=5201 dp_pair "tcp$1" 'listening' iperf3 -s -1 -B "$peer" -- \
		iperf3 -c "$peer" -t "${VD_BENCH_TCP_SECS:-3}" -l 1M -f m &&
		# Mbit/s (10^6 bits) into MB/s of 2^20 bytes, as the RDMA tools print.
		v=$(awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { if (v != "") printf "%.2f", v * 1e6 / 8 / 1048576; else exit 1 }' \
			"$dp/tcp$1.out"); then
		tcp_vals+=("$v")
	else
		dp_fail "tcp$1"
	fi
}

tcp_run 1
vd_run bw -t write -n "$bw_iters" --sizes 65536,1048576
vd_run read -t read -n "$bw_iters" --sizes 65536,1048576
vd_run lat-send -t lat-send -n "$lat_iters" -S 8
vd_run lat-write -t lat-write -n "$lat_iters" -S 8
vd_run rate1 -t write -n "$rate_iters" -S 64 -q 1
vd_run rate1p --polled -t write -n "$rate_iters" -S 64 -q 1
vd_run rate8 -t write -n "$rate_iters" -S 64 -q 8
vd_run rate8p --polled -t write -n "$rate_iters" -S 64 -q 8
# As perftest posts (its defaults): one WR per post call (-l 1), a
# completion every 100 (-Q 100); and 16 per call (-l 16), as "-l 16".
vd_run rate1-l1 -t write -n "$rate_iters" -S 64 -q 1 -l 1 -Q 100
vd_run rate8-l1 -t write -n "$rate_iters" -S 64 -q 8 -l 1 -Q 100
vd_run rate1-l16 -t write -n "$rate_iters" -S 64 -q 1 -l 16 -Q 100
tcp_run 2
siw_run bw64k ib_write_bw -s 65536 -n "$bw_iters"
siw_run bw1m ib_write_bw -s 1048576 -n "$bw_iters"
siw_run read64k ib_read_bw -s 65536 -n "$bw_iters"
siw_run read1m ib_read_bw -s 1048576 -n "$bw_iters"
siw_run lat-send ib_send_lat -s 8 -n "$lat_iters"
siw_run lat-write ib_write_lat -s 8 -n "$lat_iters"
siw_run rate1 ib_write_bw -s 64 -n "$rate_iters" -q 1
siw_run rate8 ib_write_bw -s 64 -n "$rate_iters" -q 8

# The same perftest binaries on viaduct, through libviaduct-verbs' drop-in
# directory (Documentation/verbs.rst): one program on both stacks.
dropin=$VD_BUILD/cmake/user/verbs/viaduct
# verbs_run NAME PERFTEST-PROGRAM ARGS...: the same arguments on both sides.
verbs_run() {
	local name=$1 prog=$2
	shift 2
	say "data path: viaduct verbs $name"
	dp_pair "verbs-$name" 'waiting' env LD_LIBRARY_PATH="$dropin" "$prog" -d vd0 -R -F "$@" -- \
		env LD_LIBRARY_PATH="$dropin" "$prog" -d vd0 -R -F "$@" "$peer" || dp_fail "verbs-$name"
}
if [[ -e $dropin/libibverbs.so.1 ]]; then
	verbs_run bw64k ib_write_bw -s 65536 -n "$bw_iters"
	verbs_run bw1m ib_write_bw -s 1048576 -n "$bw_iters"
	verbs_run read64k ib_read_bw -s 65536 -n "$bw_iters"
	verbs_run read1m ib_read_bw -s 1048576 -n "$bw_iters"
	verbs_run lat-send ib_send_lat -s 8 -n "$lat_iters"
	verbs_run lat-write ib_write_lat -s 8 -n "$lat_iters"
	verbs_run rate1 ib_write_bw -s 64 -n "$rate_iters" -q 1
	verbs_run rate8 ib_write_bw -s 64 -n "$rate_iters" -q 8
	verbs_run rate1-l16 ib_write_bw -s 64 -n "$rate_iters" -q 1 -l 16
else
	say "ERROR: libviaduct-verbs' drop-in directory missing: $dropin"
	dp_failed=1
fi

# VIPL's ping-pong (examples/vipl, completion by polling) beside the
# native and siw Send latency rows: the same 8-byte half round trip.
vipl_pp=$VD_BUILD/cmake/examples/vipl/vipl-pingpong
if [[ -x $vipl_pp ]]; then
	say "data path: VIPL lat-send"
	DP_PORT=none dp_pair vipl-lat-send 'waiting' "$vipl_pp" -s -S 8 -n "$lat_iters" -- \
		"$vipl_pp" -c "$peer" -S 8 -n "$lat_iters" || dp_fail vipl-lat-send
else
	say "ERROR: vipl-pingpong missing: $vipl_pp"
	dp_failed=1
fi
# VIPL streaming RDMA Write (examples/vipl/vipl-stream, 128 in flight as
# viaduct-perf's default depth) beside the native and siw write bandwidth.
vipl_st=$VD_BUILD/cmake/examples/vipl/vipl-stream
if [[ -x $vipl_st ]]; then
	for sz in 65536 1048576; do
		say "data path: VIPL write bw $sz"
		DP_PORT=none dp_pair "vipl-bw$sz" 'waiting' "$vipl_st" -s -S "$sz" -- \
			"$vipl_st" -c "$peer" -S "$sz" -n "$bw_iters" -t 128 || dp_fail "vipl-bw$sz"
	done
else
	say "ERROR: vipl-stream missing: $vipl_st"
	dp_failed=1
fi

for ((k = 3; k <= tcp_runs; k++)); do
	tcp_run "$k"
done
# the median of the runs that worked
if ((${#tcp_vals[@]})); then
	res[tcp]=$(printf '%s\n' "${tcp_vals[@]}" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
else
	res[tcp]=ERR
fi

# The TCP latency floor: 8-byte request/response over one socket.
tcplat=${VD_TCPLAT:-$VD_BUILD/cmake/tools/tcplat/viaduct-tcplat}
say "data path: TCP latency floor (viaduct-tcplat)"
if [[ -x $tcplat ]] && dp_pair tcplat 'listening' "$tcplat" -s -B "$peer" -- \
	"$tcplat" -c "$peer" -n "$lat_iters" -S 8; then
	res[tcplat_blk]=$(awk '$6 == "blocking" { print $4 }' "$dp/tcplat.out")
	res[tcplat_busy]=$(awk '$6 == "busy" { print $4 }' "$dp/tcplat.out")
else
	dp_fail tcplat
fi
: "${res[tcplat_blk]:=ERR}" "${res[tcplat_busy]:=ERR}"

# viaduct-perf and perftest bw: #bytes #iters peak average MsgRate;
# latency (both): ... t_typical is column 5.
dp_get vd_bw64k vd-bw 65536 4
dp_get vd_bw1m vd-bw 1048576 4
dp_get vd_rd64k vd-read 65536 4
dp_get vd_rd1m vd-read 1048576 4
dp_get vd_lsend vd-lat-send 8 5
dp_get vd_lwrite vd-lat-write 8 5
dp_get vd_r1 vd-rate1 64 5
dp_get vd_r1p vd-rate1p 64 5
dp_get vd_r8 vd-rate8 64 5
dp_get vd_r8p vd-rate8p 64 5
dp_get vd_r1l1 vd-rate1-l1 64 5
# vipl-pingpong: "... (half round trip: median X us)"
res[vipl_lsend]=$(awk '/half round trip: median/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
	"$dp/vipl-lat-send.out" 2>/dev/null) || res[vipl_lsend]=ERR
# vipl-stream: "... average X MB/sec"
for sz in 65536 1048576; do
	res[vipl_bw$sz]=$(awk '/average [0-9.]+ MB\/sec/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
		"$dp/vipl-bw$sz.out" 2>/dev/null) || res[vipl_bw$sz]=ERR
done
dp_get vd_r8l1 vd-rate8-l1 64 5
dp_get vd_r1l16 vd-rate1-l16 64 5
dp_get siw_bw64k siw-bw64k 65536 4
dp_get siw_bw1m siw-bw1m 1048576 4
dp_get siw_rd64k siw-read64k 65536 4
dp_get siw_rd1m siw-read1m 1048576 4
dp_get siw_lsend siw-lat-send 8 5
dp_get siw_lwrite siw-lat-write 8 5
dp_get siw_r1 siw-rate1 64 5
dp_get siw_r8 siw-rate8 64 5
for k in bw64k:65536:4 bw1m:1048576:4 read64k:65536:4 read1m:1048576:4 \
	lat-send:8:5 lat-write:8:5 rate1:64:5 rate8:64:5 rate1-l16:64:5; do
	IFS=: read -r n sz col <<<"$k"
	dp_get "verbs_$n" "verbs-$n" "$sz" "$col"
done

# ratio A B: A/B with two decimals, or "-" when either is missing.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'
}
# row METRIC UNIT VIADUCT SIW TCP TARGET-TEXT GOAL: GOAL is "ge R" (viaduct
# at least R x siw), "le R" (at most R x siw, latency) or "tcp R" (viaduct
# at least R x TCP and at least siw).
row() {
	local m=$1 u=$2 v=$3 s=$4 t=$5 tgt=$6 goal=$7 r rt met
	r=$(ratio "$v" "$s")
	rt=$(ratio "$v" "$t")
	met=$(awk -v v="$v" -v s="$s" -v t="$t" -v g="${goal% *}" -v k="${goal#* }" 'BEGIN {
		if (v !~ /^[0-9.]+$/ || s !~ /^[0-9.]+$/) { print "n/a"; exit }
		if (g == "ge") ok = v >= k * s
		else if (g == "le") ok = v <= k * s
		else if (g == "tcp") ok = t ~ /^[0-9.]+$/ && v >= k * t && v >= s
		else ok = -1
		print ok < 0 ? "-" : (ok ? "yes" : "NO") }')
	printf '   %-36s %-5s %10s %10s %7s %9s %7s   %-21s %s\n' "$m" "$u" "$v" "$s" "$r" "$t" "$rt" "$tgt" "$met"
}

{
	echo
	echo "Data path: h1 -> h2 over the bridge (veth), viaduct-perf on vd0 <-> vd0 against perftest"
	echo "(-R, rdma_cm) on siwb1 <-> siwb2; iperf3 (TCP, 1 MiB writes) between the same hosts."
	echo "Bandwidth in MB/s of 2^20 bytes, latency t_typical (median of half round trips) in us,"
	echo "message rate in Mpps over all QPs; RDMA Write unless said. iterations: bandwidth $bw_iters per size,"
	echo "latency $lat_iters, message rate $rate_iters per QP. ERR: the step failed (see datapath/)."
	printf -- '-%.0s' {1..120}
	echo
	printf '   %-36s %-5s %10s %10s %7s %9s %7s   %-21s %s\n' metric unit viaduct siw vd/siw TCP vd/TCP target met
	row "write bw 64 KiB" MB/s "${res[vd_bw64k]}" "${res[siw_bw64k]}" - ">= siw" "ge 1"
	row "write bw 1 MiB" MB/s "${res[vd_bw1m]}" "${res[siw_bw1m]}" "${res[tcp]}" ">= siw, >= 0.8 TCP" "tcp 0.8"
	row "read bw 64 KiB" MB/s "${res[vd_rd64k]}" "${res[siw_rd64k]}" - ">= siw" "ge 1"
	row "read bw 1 MiB" MB/s "${res[vd_rd1m]}" "${res[siw_rd1m]}" "${res[tcp]}" ">= siw, >= 0.8 TCP" "tcp 0.8"
	row "send lat 8 B" us "${res[vd_lsend]}" "${res[siw_lsend]}" "${res[tcplat_busy]}" "<= 0.8 siw" "le 0.8"
	row "write lat 8 B" us "${res[vd_lwrite]}" "${res[siw_lwrite]}" "${res[tcplat_busy]}" "<= 0.8 siw" "le 0.8"
	row "msg rate 64 B, 1 QP, ioctl doorbell" Mpps "${res[vd_r1]}" "${res[siw_r1]}" - "-" "- -"
	row "msg rate 64 B, 1 QP, polled" Mpps "${res[vd_r1p]}" "${res[siw_r1]}" - ">= 1.5 x siw" "ge 1.5"
	row "msg rate 64 B, 8 QPs, ioctl doorbell" Mpps "${res[vd_r8]}" "${res[siw_r8]}" - "-" "- -"
	row "msg rate 64 B, 8 QPs, polled" Mpps "${res[vd_r8p]}" "${res[siw_r8]}" - ">= 1.5 x siw" "ge 1.5"
	printf -- '-%.0s' {1..120}
	echo
	echo "TCP for the same hosts: iperf3 median of ${#tcp_vals[@]} runs (${tcp_vals[*]:-none}) MB/s;"
	echo "8-byte ping-pong (viaduct-tcplat, half round trip, median) ${res[tcplat_busy]} us busy-polling,"
	echo "${res[tcplat_blk]} us blocking. viaduct-perf and perftest latency rows poll the CQ (busy);"
	echo "the latency rows' TCP column is the busy-polling floor."
} >>"$out"

res[none]=- # a row without a siw run
# vrow METRIC UNIT NAME SIW-KEY NATIVE-KEY HIGHER-IS-BETTER: perftest on
# viaduct (verbs) beside perftest on siw and viaduct-perf (native) on viaduct.
vrow() {
	local m=$1 u=$2 v=${res[verbs_$3]} s=${res[$4]} nat=${res[$5]} hi=$6 cost
	cost=$(awk -v v="$v" -v n="$nat" -v hi="$hi" 'BEGIN {
		if (v !~ /^[0-9.]+$/ || n !~ /^[0-9.]+$/ || v <= 0 || n <= 0) { print "-"; exit }
		printf "%+.1f%%", (hi ? n / v - 1 : v / n - 1) * 100 }')
	printf '   %-36s %-5s %10s %10s %7s %12s %12s\n' "$m" "$u" "$v" "$s" "$(ratio "$v" "$s")" "$nat" "$cost"
}

{
	echo
	echo "perftest on both stacks: the same Debian binaries (-R) on vd0 through libviaduct-verbs'"
	echo "drop-in directory and on siw; viaduct-perf (native API) on vd0 beside them, and the cost"
	echo "of the verbs face over native (positive: perftest on verbs is slower). Units as above."
	echo "The message rate rows compare like with like: native posts as perftest does (one WR per"
	echo "post call, a completion every 100: viaduct-perf -l 1 -Q 100; or -l 16 for perftest -l 16)."
	printf -- '-%.0s' {1..110}
	echo
	printf '   %-36s %-5s %10s %10s %7s %12s %12s\n' metric unit "vd verbs" siw vd/siw "vd native" "verbs cost"
	vrow "write bw 64 KiB" MB/s bw64k siw_bw64k vd_bw64k 1
	vrow "write bw 1 MiB" MB/s bw1m siw_bw1m vd_bw1m 1
	vrow "read bw 64 KiB" MB/s read64k siw_rd64k vd_rd64k 1
	vrow "read bw 1 MiB" MB/s read1m siw_rd1m vd_rd1m 1
	vrow "send lat 8 B" us lat-send siw_lsend vd_lsend 0
	vrow "write lat 8 B" us lat-write siw_lwrite vd_lwrite 0
	vrow "msg rate 64 B, 1 QP" Mpps rate1 siw_r1 vd_r1l1 1
	vrow "msg rate 64 B, 8 QPs" Mpps rate8 siw_r8 vd_r8l1 1
	vrow "msg rate 64 B, 1 QP, 16 WRs a post" Mpps rate1-l16 none vd_r1l16 1
	printf -- '-%.0s' {1..110}
	echo
} >>"$out"

{
	echo
	echo "VIPL (libvipl, examples/vipl, completion by polling) beside viaduct-perf (native) and"
	echo "perftest on siw: vipl-pingpong's 8-byte Send ping-pong (median half round trip, us) and"
	echo "vipl-stream's RDMA Write stream (128 in flight, MB/s of 2^20 bytes)."
	printf -- '-%.0s' {1..88}
	echo
	printf '   %-28s %-5s %10s %10s %12s %10s\n' metric unit VIPL native VIPL/native siw
	printf '   %-28s %-5s %10s %10s %12s %10s\n' "send lat 8 B" us "${res[vipl_lsend]}" \
		"${res[vd_lsend]}" "$(ratio "${res[vipl_lsend]}" "${res[vd_lsend]}")" "${res[siw_lsend]}"
	printf '   %-28s %-5s %10s %10s %12s %10s\n' "write bw 64 KiB" MB/s "${res[vipl_bw65536]}" \
		"${res[vd_bw64k]}" "$(ratio "${res[vipl_bw65536]}" "${res[vd_bw64k]}")" "${res[siw_bw64k]}"
	printf '   %-28s %-5s %10s %10s %12s %10s\n' "write bw 1 MiB" MB/s "${res[vipl_bw1048576]}" \
		"${res[vd_bw1m]}" "$(ratio "${res[vipl_bw1048576]}" "${res[vd_bw1m]}")" "${res[siw_bw1m]}"
	printf -- '-%.0s' {1..88}
	echo
} >>"$out"

[[ ${VD_BENCH_ECHO:-1} == 0 ]] || sed 's/^/[guest] /' "$out"
vd_hosts_down
rmmod viaduct || die "rmmod viaduct failed (a leaked reference?)"
dmesg >"$VD_RESULTS/dmesg.txt" 2>&1 || true
if grep -E 'BUG:|WARNING:|Oops|KASAN|UBSAN|general protection|Call Trace:' \
	"$VD_RESULTS/dmesg.txt" | grep -v 'traps:'; then
	die "the kernel complained (see $VD_RESULTS/dmesg.txt)"
fi
((dp_failed == 0)) || die "a data path step failed (see the table and $dp)"
say "bench done"
