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
# then the data path from h1 to h2 (h2 gets a viaduct device vd0 too), in
# parts (VD_BENCH_PARTS, comma-separated; default all of them):
#
#   mr, post   the two viaduct-bench steps above
#   datapath   single runs: read bandwidth (64 KiB, 1 MiB) and 64-byte
#              write message rate (1 and 8 QPs, with and without --polled)
#              of viaduct-perf against perftest -R on siwb1 <-> siwb2, and
#              the same perftest binaries on vd0 through libviaduct-verbs
#   facecost   viaduct-facecost: post + reap of one WR through the native
#              API, VIPL, verbs and IT-API on QPs in Error (no transport),
#              rotating
#   faces      the face and transport comparison, interleaved: 8-byte Send
#              and RDMA Write ping-pong latency and 64 KiB and 1 MiB RDMA
#              Write bandwidth, each through native (viaduct-perf), VIPL
#              (examples/vipl), verbs (perftest on libviaduct-verbs), IT-API
#              (examples/itapi), siw
#              (perftest) and TCP (viaduct-tcplat, iperf3), VD_BENCH_ROUNDS
#              rounds (3) with every step once per round, the first one
#              rotating; medians, ranges and per-round ratios
#
# Each data path step has a time limit (VD_BENCH_STEP_TIMEOUT, 90 s); one
# that fails gives an ERR cell and an ERROR line, the others still run,
# and the job fails at its end. Their outputs are kept in
# $VD_RESULTS/datapath/ (rounds.txt: every value of the rotation).
#
# The tables go to $VD_RESULTS/bench.txt and, unless VD_BENCH_ECHO=0 (as
# tools/bench.sh sets, printing the file itself), to the console as
# [guest] lines. Knobs: VD_BENCH (the binary), VD_PERF, VD_VIADUCTCTL,
# VD_BENCH_ITERS, VD_BENCH_BATCHES, VD_BENCH_MR_SCALE; for the data path
# VD_BENCH_BW_ITERS (200), VD_BENCH_LAT_ITERS (1000), VD_BENCH_RATE_ITERS
# (2000 per QP), VD_BENCH_TCP_SECS (iperf3, 2), VD_BENCH_ROUNDS (3),
# VD_BENCH_FACECOST_ITERS (5000), VD_BENCH_FACECOST_RUNS (processes, 5),
# VD_BENCH_STEP_TIMEOUT (90),
# VD_BENCH_FACES and VD_BENCH_FACE_METRICS (a part of the rotation);
# VD_BENCH_COMMIT and VD_BENCH_HOSTLOAD (from tools/bench.sh) head the
# tables.
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
# the parts of the job to run (VD_BENCH_PARTS, comma-separated)
parts=${VD_BENCH_PARTS:-mr,post,datapath,facecost,faces}
part() { [[ ,$parts, == *,$1,* ]]; }
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
	echo "# viaduct commit ${VD_BENCH_COMMIT:-unknown}; host load average (1, 5, 15 min) at the" \
		"start: ${VD_BENCH_HOSTLOAD:-unknown}"
} >"$out"

if part mr; then
	say "memory registration (viaduct and siw in h1)"
	vd_on 1 "$bench" mr --viaduct vd0 --siw siwb1 ${VD_BENCH_MR_SCALE:+--mr-scale "$VD_BENCH_MR_SCALE"} \
		>>"$out" || die "viaduct-bench mr failed"
fi

if part post; then
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
fi

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
	# make the client's connect fail with ECONNREFUSED. With -R, perftest's
	# server listens a second time for the test's connection, which no
	# wait here can see (perftest_step retries that race once).
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
	if ((rc != 0)); then
		echo "exit status $rc" >>"$dp/$name.out"
		# what both hosts' TCP had, for whoever reads a failed step
		{
			echo "--- TCP sockets after the failure (h2, the server's host; then h1)"
			ip netns exec h2 ss -tan 2>&1 | head -n 40
			echo "---"
			ip netns exec h1 ss -tan 2>&1 | head -n 40
		} >>"$dp/$name.out"
	fi
	return "$rc"
}

# dp_col NAME SIZE COLUMN: that column of the result row for SIZE.
dp_col() {
	awk -v s="$2" -v c="$3" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= c { v = $c } END { if (v != "") print v; else exit 1 }' \
		"$dp/$1.out"
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

# --- Faces and transports, interleaved --------------------------------------
#
# The rows that compare faces (native, VIPL, verbs, IT-API) and transports (siw,
# TCP) run VD_BENCH_ROUNDS times (3 by default) in rotation: per round and
# metric every face once, one after the other, the face that goes first
# moving on by one each round (round 1: native vipl verbs itapi siw tcp, round 2:
# vipl verbs itapi siw tcp native, ...). Every value goes to $dp/rounds.txt
# ("metric face round value"); the table gives per face the median and the
# range over the rounds and, against native, the ratio of the medians and
# the range of the ratios within each round (the two runs of a pair are
# seconds apart, so a slow stretch of the host hits both).
#
# The same work for every face: 8-byte messages from registered memory (not
# inline: -I 0 for perftest; VIPL has no inline), one QP, completions by
# busy-polling the CQ (viaduct-perf, perftest and the VIPL examples spin on
# their completion calls without system calls; RDMA Write latency spins on
# the buffer's last byte); streaming: RDMA Writes of 64 KiB or 1 MiB, 128
# in flight, one work request per post call and a completion for each (VIPL
# cannot ask for fewer: viaduct-perf -l 1 -Q 1, perftest -l 1 -Q 1 -t 128).
rounds=${VD_BENCH_ROUNDS:-3}
rounds_file=$dp/rounds.txt
# VD_BENCH_FACES and VD_BENCH_FACE_METRICS (comma-separated) run a part
# of the rotation, e.g. more rounds of one row: the faces' cost columns
# need native among the faces.
all_faces=(native vipl verbs itapi siw tcp)
all_face_metrics=(lat-send lat-write bw64k bw1m)
IFS=, read -r -a faces <<<"${VD_BENCH_FACES:-$(IFS=,; echo "${all_faces[*]}")}"
IFS=, read -r -a face_metrics <<<"${VD_BENCH_FACE_METRICS:-$(IFS=,; echo "${all_face_metrics[*]}")}"
for f in "${faces[@]}"; do
	[[ " ${all_faces[*]} " == *" $f "* ]] || die "VD_BENCH_FACES: no face '$f' (${all_faces[*]})"
done
for m in "${face_metrics[@]}"; do
	[[ " ${all_face_metrics[*]} " == *" $m "* ]] ||
		die "VD_BENCH_FACE_METRICS: no metric '$m' (${all_face_metrics[*]})"
done
dropin=$VD_BUILD/cmake/user/verbs/viaduct
vipl_pp=$VD_BUILD/cmake/examples/vipl/vipl-pingpong
vipl_st=$VD_BUILD/cmake/examples/vipl/vipl-stream
itapi_pp=$VD_BUILD/cmake/examples/itapi/itapi-pingpong
itapi_st=$VD_BUILD/cmake/examples/itapi/itapi-stream
tcplat=${VD_TCPLAT:-$VD_BUILD/cmake/tools/tcplat/viaduct-tcplat}
tcp_secs=${VD_BENCH_TCP_SECS:-2}

# size_of METRIC: the message size of a face metric.
size_of() {
	case $1 in
	lat-*) echo 8 ;;
	bw64k) echo 65536 ;;
	bw1m) echo 1048576 ;;
	esac
}

# The streaming rows of the rotation move about 190 MiB (64 KiB) and
# 600 MiB (1 MiB) per run, one or two seconds on native under TCG (siw:
# about ten): a run of 200 WRs (12.5 MiB at 64 KiB) lasted a few tens of
# milliseconds, and the rows spread by a factor of two between rounds.
face_bw64k_iters=${VD_BENCH_FACE_BW64K_ITERS:-3000}
face_bw1m_iters=${VD_BENCH_FACE_BW1M_ITERS:-600}

# iters_of METRIC: how many WRs a streaming face metric posts.
iters_of() {
	case $1 in
	bw64k) echo "$face_bw64k_iters" ;;
	*) echo "$face_bw1m_iters" ;;
	esac
}

# perftest_step NAME DEV-SERVER DEV-CLIENT ENV METRIC: perftest on a stack.
perftest_step() {
	local name=$1 ds=$2 dc=$3 env=$4 m=$5 sz prog args
	sz=$(size_of "$m")
	case $m in
	lat-send) prog=ib_send_lat args=(-s 8 -n "$lat_iters" -I 0) ;;
	lat-write) prog=ib_write_lat args=(-s 8 -n "$lat_iters" -I 0) ;;
	*) prog=ib_write_bw args=(-s "$sz" -n "$(iters_of "$m")" -t 128 -l 1 -Q 1) ;;
	esac
	local try
	for try in 1 2; do
		if dp_pair "$name" 'waiting' env "$env" "$prog" -d "$ds" -R -F "${args[@]}" -- \
			env "$env" "$prog" -d "$dc" -R -F "${args[@]}" "$peer"; then
			dp_col "$name" "$sz" "$([[ $m == lat-* ]] && echo 5 || echo 4)"
			return
		fi
		# perftest -R's own race (Documentation/verbs.rst): its server
		# listens for the test's connection only after the key exchange,
		# and a client that connects first is refused. Once more, saying so.
		((try == 1)) && grep -q 'REJECTED; error: -111\|Connection refused\|ECONNREFUSED' "$dp/$name.out" ||
			return 1
		# (to stderr: the caller reads the step's value from stdout)
		say "$name: perftest -R listen race (refused before its server listened again); once more" >&2
		mv "$dp/$name.out" "$dp/$name.refused.out"
		mv "$dp/$name.srv" "$dp/$name.refused.srv"
	done
}

# face_step METRIC FACE ROUND: one run; prints the value (us or MB/s).
face_step() {
	local m=$1 f=$2 name=r$3-$1-$2 sz its
	sz=$(size_of "$m")
	its=$(iters_of "$m")
	case $f in
	native)
		case $m in
		lat-*) dp_pair "$name" 'waiting for a client' "${vd_srv[@]}" -- \
			"${vd_cli[@]}" --test="$m" -S 8 -n "$lat_iters" ;;
		*) dp_pair "$name" 'waiting for a client' "${vd_srv[@]}" -- \
			"${vd_cli[@]}" --test=write -S "$sz" -n "$its" -l 1 -Q 1 ;;
		esac && dp_col "$name" "$sz" "$([[ $m == lat-* ]] && echo 5 || echo 4)"
		;;
	vipl)
		case $m in
		lat-*)
			local w=()
			[[ $m != lat-write ]] || w=(-W)
			DP_PORT=none dp_pair "$name" 'waiting' "$vipl_pp" -s -S 8 "${w[@]}" -- \
				"$vipl_pp" -c "$peer" -S 8 -n "$lat_iters" "${w[@]}" &&
				awk '/half round trip: median/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
					"$dp/$name.out"
			;;
		*)
			DP_PORT=none dp_pair "$name" 'waiting' "$vipl_st" -s -S "$sz" -- \
				"$vipl_st" -c "$peer" -S "$sz" -n "$its" -t 128 &&
				awk '/average [0-9.]+ MB\/sec/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
					"$dp/$name.out"
			;;
		esac
		;;
	itapi)
		case $m in
		lat-*)
			local w=()
			[[ $m != lat-write ]] || w=(-W)
			DP_PORT=7471 dp_pair "$name" 'waiting' "$itapi_pp" -s -d vd0 -S 8 "${w[@]}" -- \
				"$itapi_pp" -c "$peer" -d vd0 -S 8 -n "$lat_iters" "${w[@]}" &&
				awk '/half round trip: median/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
					"$dp/$name.out"
			;;
		*)
			DP_PORT=7472 dp_pair "$name" 'waiting' "$itapi_st" -s -d vd0 -S "$sz" -- \
				"$itapi_st" -c "$peer" -d vd0 -S "$sz" -n "$its" -t 128 &&
				awk '/average [0-9.]+ MB\/sec/ { v = $(NF - 1) } END { if (v != "") print v; else exit 1 }' \
					"$dp/$name.out"
			;;
		esac
		;;
	verbs) perftest_step "$name" vd0 vd0 "LD_LIBRARY_PATH=$dropin" "$m" ;;
	siw) perftest_step "$name" siwb2 siwb1 "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "$m" ;;
	tcp)
		case $m in
		lat-*)
			# the busy-polling floor (both RDMA sides poll too)
			dp_pair "$name" 'listening' "$tcplat" -s -B "$peer" -- \
				"$tcplat" -c "$peer" -n "$lat_iters" -S 8 &&
				awk '$6 == "blocking" { print $4 }' "$dp/$name.out" >"$dp/$name.blocking" &&
				awk '$6 == "busy" { v = $4 } END { if (v == "") exit 1; print v }' "$dp/$name.out"
			;;
		*)
			# Mbit/s (10^6 bits) into MB/s of 2^20 bytes, as the RDMA tools print
			DP_PORT=5201 dp_pair "$name" 'listening' iperf3 -s -1 -B "$peer" -- \
				iperf3 -c "$peer" -t "$tcp_secs" -l "$([[ $m == bw64k ]] && echo 64K || echo 1M)" -f m &&
				awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i }
					END { if (v != "") printf "%.2f\n", v * 1e6 / 8 / 1048576; else exit 1 }' "$dp/$name.out"
			;;
		esac
		;;
	esac
}

face_ok() {
	case $1 in
	vipl) [[ -x $vipl_pp && -x $vipl_st ]] ;;
	itapi) [[ -x $itapi_pp && -x $itapi_st ]] ;;
	verbs) [[ -e $dropin/libibverbs.so.1 ]] ;;
	tcp) [[ -x $tcplat ]] && command -v iperf3 >/dev/null ;;
	*) true ;;
	esac
}

# rot_stats METRIC FACE: "median min max n" over the rounds that worked.
rot_stats() {
	awk -v m="$1" -v f="$2" '$1 == m && $2 == f && $4 ~ /^[0-9.]+$/ { print $4 }' "$rounds_file" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (!NR) { print "- - - 0"; exit }
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f %d\n", med, v[1], v[NR], NR }'
}

# rot_ratios METRIC FACE BASE: "median min max n" of FACE/BASE within each round.
rot_ratios() {
	awk -v m="$1" -v f="$2" -v b="$3" '$1 == m && $4 ~ /^[0-9.]+$/ {
			if ($2 == f) x[$3] = $4; else if ($2 == b) y[$3] = $4 }
		END { for (r in x) if ((r in y) && y[r] > 0) print x[r] / y[r] }' "$rounds_file" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (!NR) { print "- - - 0"; exit }
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.3f %.3f %.3f %d\n", med, v[1], v[NR], NR }'
}

run_faces() {
	local r k i m f v n=${#faces[@]}
	: >"$rounds_file"
	for ((r = 1; r <= rounds; r++)); do
		for m in "${face_metrics[@]}"; do
			for ((k = 0; k < n; k++)); do
				i=$(((k + r - 1) % n))
				f=${faces[$i]}
				face_ok "$f" || continue
				say "faces: round $r of $rounds, $m, $f"
				if v=$(face_step "$m" "$f" "$r") && [[ $v =~ ^[0-9.]+$ ]]; then
					echo "$m $f $r $v" >>"$rounds_file"
				else
					echo "$m $f $r ERR" >>"$rounds_file"
					dp_fail "r$r-$m-$f"
				fi
			done
		done
	done
}

# The table: per metric and face, median [min, max] over the rounds; for
# the faces the cost over native (latency: face/native - 1; bandwidth:
# native/face - 1) from the median of the per-round ratios, with their
# range; for siw and TCP native's ratio to them, against issue 16's targets.
faces_table() {
	local m f s med lo hi n rm rlo rhi rn unit lat tgt met cost
	echo
	echo "Faces and transports, interleaved: $rounds rounds; per round and metric each face once,"
	echo "the first face rotating. Latency: half round trip, median of $lat_iters ping-pongs (us);"
	echo "bandwidth: MB/s (2^20 bytes) of $face_bw64k_iters (64 KiB) or $face_bw1m_iters (1 MiB) RDMA Writes, 128 in flight, one WR per post,"
	echo "every WR completed. All RDMA rows busy-poll their completions; TCP latency busy-polls"
	echo "a non-blocking socket (viaduct-tcplat), TCP bandwidth is iperf3 (${tcp_secs} s, same write size)."
	echo "cost = how much slower than native (per-round ratio: median [min, max] over the rounds)."
	printf -- '-%.0s' {1..118}
	echo
	printf '   %-10s %-7s %-5s %9s %9s %9s %3s   %-31s %-10s %s\n' metric face unit median min max n \
		"vs native: median [min, max]" target met
	for m in "${face_metrics[@]}"; do
		[[ $m == lat-* ]] && lat=1 unit=us || lat=0 unit=MB/s
		for f in "${faces[@]}"; do
			read -r med lo hi n <<<"$(rot_stats "$m" "$f")"
			((n > 0)) || { med=ERR lo=- hi=-; }
			read -r rm rlo rhi rn <<<"$(rot_ratios "$m" "$f" native)"
			tgt=- met=- s=-
			case $f in
			native) ;;
			vipl | verbs | itapi)
				if ((rn > 0)); then
					s=$(awk -v l="$lat" -v a="$rm" -v b="$rlo" -v c="$rhi" 'function k(x) {
						return sprintf("%+.1f%%", (l ? x - 1 : 1 / x - 1) * 100) }
						BEGIN { if (l) printf "cost %s [%s, %s]", k(a), k(b), k(c);
							else printf "cost %s [%s, %s]", k(a), k(c), k(b) }')
					tgt="< 5 %"
					met=$(awk -v l="$lat" -v a="$rm" -v w="$([[ $lat == 1 ]] && echo "$rhi" || echo "$rlo")" \
						'function k(x) { return l ? x - 1 : 1 / x - 1 }
						BEGIN { if (k(a) >= 0.05) print "NO"; else if (k(w) < 0.05) print "yes, every round";
							else print "yes (median)" }')
				fi
				;;
			siw | tcp)
				# native against this one: native/x
				read -r rm rlo rhi rn <<<"$(rot_ratios "$m" native "$f")"
				if ((rn > 0)); then
					s=$(printf 'vd/%s %.2f [%.2f, %.2f]' "$f" "$rm" "$rlo" "$rhi")
					case $f:$m in
					siw:lat-*) tgt="<= 0.8" met=$(awk -v a="$rm" 'BEGIN { print (a <= 0.8 ? "yes" : "NO") }') ;;
					tcp:lat-*) tgt="<= 1.3" met=$(awk -v a="$rm" 'BEGIN { print (a <= 1.3 ? "yes" : "NO") }') ;;
					tcp:bw1m) tgt=">= 0.9" met=$(awk -v a="$rm" 'BEGIN { print (a >= 0.9 ? "yes" : "NO") }') ;;
					tcp:bw64k) tgt=">= 0.8" met=$(awk -v a="$rm" 'BEGIN { print (a >= 0.8 ? "yes" : "NO") }') ;;
					esac
				fi
				;;
			esac
			printf '   %-10s %-7s %-5s %9s %9s %9s %3s   %-31s %-10s %s\n' "$m" "$f" "$unit" \
				"$med" "$lo" "$hi" "$n" "$s" "$tgt" "$met"
		done
	done
	printf -- '-%.0s' {1..118}
	echo
	if [[ -s $rounds_file ]]; then
		echo "TCP blocking ping-pong (viaduct-tcplat, a wakeup per message), per round:" \
			"$(cat "$dp"/r*-lat-*-tcp.blocking 2>/dev/null | tr '\n' ' ')us"
	fi
}

# res[KEY] from the rotation's median of METRIC FACE (for the table below);
# "-" when the rotation did not run that row.
res_from_rounds() {
	local med rest
	if ! part faces || [[ " ${face_metrics[*]} " != *" $2 "* || " ${faces[*]} " != *" $3 "* ]]; then
		res[$1]=-
		return
	fi
	read -r med rest <<<"$(rot_stats "$2" "$3")"
	res[$1]=$med
	[[ $med != - ]] || res[$1]=ERR
}

# What the faces add to post + reap of one WR, without a transport: one QP
# per face in Error on h1's vd0 (tools/facecost), the order rotating.
# VD_BENCH_FACECOST_RUNS processes (5) of VD_BENCH_ROUNDS rounds each: a
# process places the libraries and rings anew, and the processes spread
# more than the rounds of one (Documentation/performance.rst). The first
# process's table is printed whole; then each face's cost per process
# and their median, which is the figure to read.
facecost=$VD_BUILD/cmake/tools/facecost/viaduct-facecost
facecost_runs() {
	local k n=${VD_BENCH_FACECOST_RUNS:-5}
	[[ $n =~ ^[1-9][0-9]*$ ]] || n=5
	for ((k = 1; k <= n; k++)); do
		say "faces: viaduct-facecost, process $k of $n"
		vd_on 1 timeout -k 5 "$dp_step_timeout" "$facecost" -d vd0 -r "$rounds" \
			-n "${VD_BENCH_FACECOST_ITERS:-5000}" >"$dp/facecost.$k.txt" 2>"$dp/facecost.$k.err" ||
			{ dp_fail "facecost (process $k)"; return; }
	done
	cat "$dp/facecost.1.txt" >>"$out"
	{
		echo
		echo "Cost over native per process (ns, % of native's post + reap), $n processes:"
		printf '%-10s %-64s %s\n' face "per process" median
		# the rows of a face: "... +90 (+3.3%) [..." -> 90 3.3
		awk 'function med(a, n, i, j, t) {
				for (i = 2; i <= n; i++)
					for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
			FNR == 1 { p++ }
			$1 ~ /^(native252|vipl|verbs|itapi)$/ && $(NF - 3) ~ /^[+-][0-9]+$/ {
				pct = $(NF - 2); gsub(/[()%+]/, "", pct)
				ns[$1, p] = $(NF - 3) + 0; pc[$1, p] = pct + 0; faces[$1] = 1 }
			END {
				split("native252 vipl verbs itapi", order)
				for (i = 1; i <= 4; i++) {
					f = order[i]; if (!(f in faces)) continue
					line = ""; n = 0
					for (k = 1; k <= p; k++) if ((f, k) in ns) {
						line = line sprintf("%+d (%+.1f%%) ", ns[f, k], pc[f, k])
						n++; v[n] = pc[f, k]; w[n] = ns[f, k] }
					printf "%-10s %-64s %+d (%+.1f%%)\n", f, line, med(w, n), med(v, n)
				}
			}' "$dp"/facecost.[0-9]*.txt
	} >>"$out"
}
if part facecost; then
	say "faces: post + reap cost on the flush path (viaduct-facecost)"
	if [[ -x $facecost ]]; then
		echo >>"$out"
		facecost_runs
	else
		say "ERROR: viaduct-facecost missing: $facecost"
		dp_failed=1
	fi
fi
if part faces; then
	run_faces
fi

# --- Single runs: read bandwidth and message rate ---------------------------
# (not face comparisons; one run each, as before)
verbs_run() {
	local name=$1 prog=$2
	shift 2
	say "data path: viaduct verbs $name"
	dp_pair "verbs-$name" 'waiting' env LD_LIBRARY_PATH="$dropin" "$prog" -d vd0 -R -F "$@" -- \
		env LD_LIBRARY_PATH="$dropin" "$prog" -d vd0 -R -F "$@" "$peer" || dp_fail "verbs-$name"
}
if part datapath; then
	vd_run read -t read -n "$bw_iters" --sizes 65536,1048576
	vd_run send64k -t send -n "$bw_iters" -S 65536
	vd_run rate1 -t write -n "$rate_iters" -S 64 -q 1
	vd_run rate1p --polled -t write -n "$rate_iters" -S 64 -q 1
	vd_run rate8 -t write -n "$rate_iters" -S 64 -q 8
	vd_run rate8p --polled -t write -n "$rate_iters" -S 64 -q 8
	# As perftest posts (its defaults): one WR per post call (-l 1), a
	# completion every 100 (-Q 100); and 16 per call (-l 16), as "-l 16".
	vd_run rate1-l1 -t write -n "$rate_iters" -S 64 -q 1 -l 1 -Q 100
	vd_run rate8-l1 -t write -n "$rate_iters" -S 64 -q 8 -l 1 -Q 100
	vd_run rate1-l16 -t write -n "$rate_iters" -S 64 -q 1 -l 16 -Q 100
	siw_run read64k ib_read_bw -s 65536 -n "$bw_iters"
	siw_run read1m ib_read_bw -s 1048576 -n "$bw_iters"
	siw_run send64k ib_send_bw -s 65536 -n "$bw_iters"
	siw_run rate1 ib_write_bw -s 64 -n "$rate_iters" -q 1
	siw_run rate8 ib_write_bw -s 64 -n "$rate_iters" -q 8
	# The same perftest binaries on viaduct, through libviaduct-verbs'
	# drop-in directory (Documentation/verbs.rst): one program on both stacks.
	if [[ -e $dropin/libibverbs.so.1 ]]; then
		verbs_run read64k ib_read_bw -s 65536 -n "$bw_iters"
		verbs_run read1m ib_read_bw -s 1048576 -n "$bw_iters"
		verbs_run send64k ib_send_bw -s 65536 -n "$bw_iters"
		verbs_run rate1 ib_write_bw -s 64 -n "$rate_iters" -q 1
		verbs_run rate8 ib_write_bw -s 64 -n "$rate_iters" -q 8
		verbs_run rate1-l16 ib_write_bw -s 64 -n "$rate_iters" -q 1 -l 16
	else
		say "ERROR: libviaduct-verbs' drop-in directory missing: $dropin"
		dp_failed=1
	fi
fi

# dp_get KEY NAME SIZE COLUMN: res[KEY] from a finished step, ERR, or "-"
# for a step that did not run. viaduct-perf and perftest bw: #bytes #iters
# peak average MsgRate; latency (both): ... t_typical is column 5.
dp_get() {
	local v
	if [[ ! -e $dp/$2.out ]]; then
		res[$1]=-
	elif v=$(dp_col "$2" "$3" "$4"); then
		res[$1]=$v
	else
		res[$1]=ERR
	fi
}
dp_get vd_rd64k vd-read 65536 4
dp_get vd_rd1m vd-read 1048576 4
dp_get vd_send64k vd-send64k 65536 4
dp_get siw_send64k siw-send64k 65536 4
dp_get vd_r1 vd-rate1 64 5
dp_get vd_r1p vd-rate1p 64 5
dp_get vd_r8 vd-rate8 64 5
dp_get vd_r8p vd-rate8p 64 5
dp_get vd_r1l1 vd-rate1-l1 64 5
dp_get vd_r8l1 vd-rate8-l1 64 5
dp_get vd_r1l16 vd-rate1-l16 64 5
dp_get siw_rd64k siw-read64k 65536 4
dp_get siw_rd1m siw-read1m 1048576 4
dp_get siw_r1 siw-rate1 64 5
dp_get siw_r8 siw-rate8 64 5
for k in read64k:65536:4 read1m:1048576:4 send64k:65536:4 rate1:64:5 rate8:64:5 rate1-l16:64:5; do
	IFS=: read -r n sz col <<<"$k"
	dp_get "verbs_$n" "verbs-$n" "$sz" "$col"
done
# the rows that the rotation measured: its medians
res_from_rounds vd_bw64k bw64k native
res_from_rounds vd_bw1m bw1m native
res_from_rounds vd_lsend lat-send native
res_from_rounds vd_lwrite lat-write native
res_from_rounds siw_bw64k bw64k siw
res_from_rounds siw_bw1m bw1m siw
res_from_rounds siw_lsend lat-send siw
res_from_rounds siw_lwrite lat-write siw
res_from_rounds tcp bw1m tcp
res_from_rounds tcp64k bw64k tcp
res_from_rounds tcplat_busy lat-send tcp

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
	! part faces || faces_table
	echo
	echo "Data path: h1 -> h2 over the bridge (veth), viaduct-perf on vd0 <-> vd0 against perftest"
	echo "(-R, rdma_cm) on siwb1 <-> siwb2; iperf3 (TCP) between the same hosts. The write bw and"
	echo "latency rows are the medians of the interleaved rounds above; read bw and message rate"
	echo "are single runs. Bandwidth in MB/s of 2^20 bytes, latency t_typical (median of half round"
	echo "trips) in us, message rate in Mpps over all QPs; RDMA Write unless said. iterations:"
	echo "bandwidth $bw_iters per size, latency $lat_iters, message rate $rate_iters per QP."
	echo "ERR: the step failed (see datapath/); -: not run."
	printf -- '-%.0s' {1..120}
	echo
	printf '   %-36s %-5s %10s %10s %7s %9s %7s   %-21s %s\n' metric unit viaduct siw vd/siw TCP vd/TCP target met
	row "write bw 64 KiB" MB/s "${res[vd_bw64k]}" "${res[siw_bw64k]}" "${res[tcp64k]}" ">= 0.8 TCP" "tcp 0.8"
	row "write bw 1 MiB" MB/s "${res[vd_bw1m]}" "${res[siw_bw1m]}" "${res[tcp]}" ">= 0.9 TCP" "tcp 0.9"
	row "read bw 64 KiB" MB/s "${res[vd_rd64k]}" "${res[siw_rd64k]}" "${res[tcp64k]}" ">= 0.8 TCP" "tcp 0.8"
	row "read bw 1 MiB" MB/s "${res[vd_rd1m]}" "${res[siw_rd1m]}" "${res[tcp]}" ">= 0.9 TCP" "tcp 0.9"
	row "send lat 8 B" us "${res[vd_lsend]}" "${res[siw_lsend]}" "${res[tcplat_busy]}" "<= 0.8 siw" "le 0.8"
	row "write lat 8 B" us "${res[vd_lwrite]}" "${res[siw_lwrite]}" "${res[tcplat_busy]}" "<= 0.8 siw" "le 0.8"
	row "msg rate 64 B, 1 QP, ioctl doorbell" Mpps "${res[vd_r1]}" "${res[siw_r1]}" - "-" "- -"
	row "msg rate 64 B, 1 QP, polled" Mpps "${res[vd_r1p]}" "${res[siw_r1]}" - ">= 2 x siw" "ge 2"
	row "msg rate 64 B, 8 QPs, ioctl doorbell" Mpps "${res[vd_r8]}" "${res[siw_r8]}" - "-" "- -"
	row "msg rate 64 B, 8 QPs, polled" Mpps "${res[vd_r8p]}" "${res[siw_r8]}" - ">= 2 x siw" "ge 2"
	printf -- '-%.0s' {1..120}
	echo
	echo "TCP: iperf3 medians over the rounds, ${res[tcp64k]} MB/s in 64 KiB writes, ${res[tcp]} MB/s in"
	echo "1 MiB writes; the latency rows' TCP column is viaduct-tcplat's busy-polling ping-pong."
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

if part datapath; then
	{
		echo
		echo "perftest on both stacks, single runs: the same Debian binaries (-R) on vd0 through"
		echo "libviaduct-verbs' drop-in directory and on siw; viaduct-perf (native API) on vd0 beside"
		echo "them, and the cost of the verbs face over native (positive: perftest on verbs is slower)."
		echo "The message rate rows compare like with like: native posts as perftest does (one WR per"
		echo "post call, a completion every 100: viaduct-perf -l 1 -Q 100; or -l 16 for perftest -l 16)."
		echo "The interleaved table above is the one that measures the face's cost."
		printf -- '-%.0s' {1..110}
		echo
		printf '   %-36s %-5s %10s %10s %7s %12s %12s\n' metric unit "vd verbs" siw vd/siw "vd native" "verbs cost"
		vrow "read bw 64 KiB" MB/s read64k siw_rd64k vd_rd64k 1
		vrow "read bw 1 MiB" MB/s read1m siw_rd1m vd_rd1m 1
		vrow "send bw 64 KiB" MB/s send64k siw_send64k vd_send64k 1
		vrow "msg rate 64 B, 1 QP" Mpps rate1 siw_r1 vd_r1l1 1
		vrow "msg rate 64 B, 8 QPs" Mpps rate8 siw_r8 vd_r8l1 1
		vrow "msg rate 64 B, 1 QP, 16 WRs a post" Mpps rate1-l16 none vd_r1l16 1
		printf -- '-%.0s' {1..110}
		echo
	} >>"$out"
fi

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
