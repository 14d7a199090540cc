#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test job of "make check", run in the VM by guest-init.sh (see run.sh
# for the VD_* variables). It never stops at a failing or crashing test: it
# records what happened in $VD_RESULTS and carries on. tools/vm/report.py
# turns that dir into verdicts on the host.
#
# $VD_RESULTS after a run:
#   harness.tap          TAP of the job's own steps (insmod, rmmod, ...)
#   kunit/<suite>.ktap   KTAP of each KUnit suite, from debugfs
#   selftests/<p>.tap    output of selftest program <p>; <p>.rc its exit status
#   gtest.log, gtest.rc  the live gtest run, if VD_GTEST was set
#   kmemleak.txt         debug flavour: kmemleak's report after the run
#   dmesg.txt            the whole kernel log
set -euo pipefail

# The whole script is one compound command, read completely before it
# runs, so editing this file while it runs cannot derail the run.
{

res=$VD_RESULTS
say() { echo "[guest] $*"; }

# Our own steps, as TAP, written as they happen so a crash leaves a prefix.
step_n=0
step() { # ok|fail name [detail]
	step_n=$((step_n + 1))
	if [[ $1 == ok ]]; then
		echo "ok $step_n $2" >>"$res/harness.tap"
	else
		# Diagnostics go first: TAP readers attach them to the next result.
		[[ -n ${3:-} ]] && printf '# %s\n' "${3//$'\n'/$'\n'# }" >>"$res/harness.tap"
		echo "not ok $step_n $2" >>"$res/harness.tap"
		say "FAILED: $2${3:+: $3}"
	fi
	return 0
}
echo "TAP version 13" >"$res/harness.tap"

try() { # name cmd... : runs cmd, records a step, returns its status
	local name=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [[ $rc == 0 ]]; then
		step ok "$name"
	else
		step fail "$name" "exit $rc: $out"
	fi
	return "$rc"
}

kmemleak=/sys/kernel/debug/kmemleak
if [[ $VD_FLAVOUR == debug && -w $kmemleak ]]; then
	# Whatever boot left behind is not ours: report only what is new.
	say "kmemleak: baseline scan"
	echo scan >"$kmemleak" || true
	echo clear >"$kmemleak" || true
fi

loaded=0
ko=$VD_KMOD/viaduct.ko
# insmod resolves no dependencies: load what viaduct.ko needs first (the
# kernel's crc32c, libcrc32c.ko where it is a module).
if [[ -f $ko ]]; then
	for dep in $(modinfo -F depends "$ko" | tr , ' '); do
		try "modprobe-$dep" modprobe "$dep" || true
	done
fi
if [[ ! -f $ko ]]; then
	step fail insmod-viaduct "$ko does not exist"
elif try insmod-viaduct insmod "$ko"; then
	loaded=1
fi

test_loaded=0
tko=$VD_KMOD/viaduct_test.ko
if [[ $loaded == 1 && -f $tko ]]; then
	if [[ -n ${VD_KUNIT:-} ]]; then
		say "KUnit filter: $VD_KUNIT"
		printf %s "$VD_KUNIT" >/sys/module/kunit/parameters/filter_glob
	fi
	say "loading viaduct_test.ko (KUnit suites run now)"
	try insmod-viaduct_test insmod "$tko" && test_loaded=1
fi
mkdir -p "$res/kunit"
# Builtins only: a process start costs a debug guest a fraction of a
# second, and this loop ran three per suite.
for d in /sys/kernel/debug/kunit/*/; do
	[[ -r $d/results ]] || continue
	suite=${d%/}
	suite=${suite##*/}
	n_ok=0 n_bad=0
	while IFS= read -r line || [[ -n $line ]]; do
		printf '%s\n' "$line"
		case $line in
		'    ok '*) n_ok=$((n_ok + 1)) ;;
		'    not ok '*) n_bad=$((n_bad + 1)) ;;
		esac
	done <"$d/results" >"$res/kunit/$suite.ktap" 2>&1 || true
	say "KUnit $suite: $n_ok ok, $n_bad not ok"
done
# The suites ran at load and their results are read: the test module goes
# now (a refcount leak of its cases shows here), so that nothing but the
# programs holds viaduct and fault_test can unload and reload it.
if [[ $test_loaded == 1 ]]; then
	try rmmod-viaduct_test rmmod viaduct_test || true
	test_loaded=0
fi

# Copies a program's output to @out and, for each test that starts or
# ends (kselftest's "#  RUN" and "ok"/"not ok" lines, gtest's "[ RUN" and
# "[       OK ]"/"[  FAILED  ]"), the second it did so to @times: what
# each test costs, for check.sh's table of the dearest.
stamp_tests() { # out times
	local line
	while IFS= read -r line || [[ -n $line ]]; do
		printf '%s\n' "$line" >&3
		case $line in
		'#  RUN '* | 'ok '* | 'not ok '* | '[ RUN '* | '[       OK ]'* | '[  FAILED  ]'*)
			printf '%s %s\n' "$SECONDS" "$line" >&4 ;;
		esac
	done 3>"$1" 4>"$2"
}

# Each program gets a fresh /tmp working dir and its own timeout; its exit
# status is kept next to its output for the report. Builtins where a
# process would do the same: a process start costs a debug guest a
# fraction of a second.
prog_n=0
run_prog() { # name outfile timeout cmd...
	local name=$1 out=$2 tmo=$3 rc=0 t0=$SECONDS wd
	shift 3
	if ((tmo < 20)); then
		say "$name: NOT RUN, the VM run is out of time (VD_TIMEOUT)"
		echo "# not run: the VM run was out of time (VD_TIMEOUT)" >"$out"
		echo 124 >"${out%.*}.rc"
		return 0
	fi
	prog_n=$((prog_n + 1))
	wd=/tmp/vd-prog.$BASHPID.$prog_n
	mkdir -m 700 "$wd"
	{
		rc=0
		(cd "$wd" && timeout -k 10 "$tmo" "$@") 2>&1 </dev/null || rc=$?
		echo "$rc" >"${out%.*}.rc"
	} | stamp_tests "$out" "${out%.*}.times"
	read -r rc <"${out%.*}.rc"
	rm -rf "$wd"
	case $rc in
	0) say "$name: ok ($((SECONDS - t0))s)" ;;
	124 | 137) say "$name: TIMED OUT after ${tmo}s" ;;
	*) say "$name: exit status $rc ($((SECONDS - t0))s)" ;;
	esac
}

# Seconds a program may run: its own timeout, cut to what is left before
# the job's deadline minus a reserve for unloading and collecting logs.
budget() { # wanted: sets $tmo
	local left=$((VD_DEADLINE - EPOCHSECONDS - ${VD_RESERVE:-90}))
	tmo=$((left < $1 ? left : $1))
}

# The programs that may run beside one another (VD_LANES at a time, 2 by
# default; 1 runs every program alone). Each works in network namespaces,
# devices and files of its own (named after its pid) and reads no
# module-wide state: their leak checks read their own devices' counts
# (res_util.h). The others run alone after them: they compare the
# module's reference count or counters (doorbell calls, zero-copy and
# direct transmits) before and after, set its parameters, unload it, or
# need the polled doorbell's thread to themselves (isolation_test), and
# any other program's work would change what they read. In the order they
# start: the longest first (fuzz_test runs for a set time, 60 s in the
# normal flavour, 20 s in the debug one), as the debug flavour times them.
shared_progs=(fuzz_test verbs_test.sh vipl_test.sh perf_test.sh cq_test res_show_test.sh pd_mr_test
	siw_mem_test ping_test.sh netns_test.sh itapi_test.sh memlock_test rx_test
	install_test.sh)
contains() { # word list...: whether word is one of the list
	local w=$1 s
	shift
	for s; do
		[[ $s == "$w" ]] && return 0
	done
	return 1
}

mkdir -p "$res/selftests"
if [[ -d $VD_SELFTESTS ]]; then
	# The programs skip their siw, rping and perftest cases where those
	# are missing, which is right on a machine that lacks them; here the
	# test kernel builds siw and deps.sh installs the tools, so a missing
	# one is a broken set-up: these steps fail instead of the cases
	# being skipped unnoticed.
	try prerequisite-siw modprobe siw || true
	try prerequisite-rping command -v rping || true
	try prerequisite-perftest command -v ib_write_bw || true
	progs=()
	for p in "$VD_SELFTESTS"/*; do
		[[ -f $p && -x $p ]] || continue
		name=${p##*/}
		# shellcheck disable=SC2053 # VD_ONLY is a glob on purpose
		[[ -z ${VD_ONLY:-} || $name == $VD_ONLY ]] || continue
		progs+=("$name")
	done
	# First the programs that may share the VM, $lanes at a time, the
	# longest first; then the rest, one at a time.
	lanes=${VD_LANES:-2}
	if [[ ! $lanes =~ ^[1-9][0-9]*$ ]]; then
		say "VD_LANES=$lanes is not a positive count: running every program alone"
		lanes=1
	fi
	# (the running jobs counted with builtins: jobs into a file, no pipe)
	jobsf=/tmp/vd-running.$$
	for name in "${shared_progs[@]}"; do
		contains "$name" "${progs[@]}" || continue
		while :; do
			jobs -rp >"$jobsf"
			mapfile -t running <"$jobsf"
			((${#running[@]} >= lanes)) || break
			wait -n || true
		done
		budget "$VD_TEST_TIMEOUT"
		run_prog "selftest $name" "$res/selftests/$name.tap" \
			"$tmo" "$VD_SELFTESTS/$name" &
	done
	rm -f "$jobsf"
	wait
	for name in "${progs[@]}"; do
		contains "$name" "${shared_progs[@]}" && continue
		budget "$VD_TEST_TIMEOUT"
		run_prog "selftest $name" "$res/selftests/$name.tap" \
			"$tmo" "$VD_SELFTESTS/$name"
	done
else
	say "no selftests dir $VD_SELFTESTS"
fi

if [[ -n ${VD_GTEST:-} ]]; then
	if [[ -x $VD_GTEST ]]; then
		gargs=()
		[[ -n ${VD_GTEST_FILTER:-} ]] && gargs+=("--gtest_filter=$VD_GTEST_FILTER")
		# The live tests want a device to open: one on a veth pair.
		# Without it they fail rather than skip.
		export VIADUCT_TEST_REQUIRE_DEVICE=1
		ctl=$VD_BUILD/cmake/tools/viaductctl/viaductctl
		if ip link add vdgt0 type veth peer name vdgt1 &&
			ip addr add 198.51.100.7/24 dev vdgt0 &&
			ip link set vdgt0 up && ip link set vdgt1 up &&
			"$ctl" link add vdgtest netdev vdgt0; then
			export VIADUCT_TEST_DEVICE=vdgtest
		else
			say "cannot create the live tests' device; they will fail"
		fi
		budget "${VD_GTEST_TIMEOUT:-600}"
		run_prog "gtest ${VD_GTEST##*/}" "$res/gtest.log" \
			"$tmo" "$VD_GTEST" "${gargs[@]}"
		unset VIADUCT_TEST_DEVICE VIADUCT_TEST_REQUIRE_DEVICE
		ip link del vdgt0 2>/dev/null || true
	else
		echo "$VD_GTEST is not executable" >"$res/gtest.log"
		echo 127 >"$res/gtest.rc"
	fi
fi

# Every program has ended: the module holds no object of any of them. The
# programs' own leak checks look at their devices (res_util.h), and a
# device removed under its users takes its counts out of their sight; the
# module's counters see every device's objects until they are freed.
# Releases may finish in a worker: a few seconds to settle.
# shellcheck disable=SC2317 # called through try
module_idle() {
	local ctl=$VD_BUILD/cmake/tools/viaductctl/viaductctl line w i left=50
	while :; do
		line=$("$ctl" stats show) || return 1
		line=${line%%$'\n'*}
		read -ra w <<<"$line"
		for ((i = 1; i + 1 < ${#w[@]}; i += 2)); do
			case ${w[i]} in
			contexts | pds | mrs | cqs | qps | pinned_pages)
				[[ ${w[i + 1]} == 0 ]] || break
				;;
			esac
		done
		((i + 1 < ${#w[@]})) || return 0
		((--left > 0)) || break
		sleep 0.1
	done
	echo "still held: $line"
	return 1
}
if [[ $loaded == 1 ]]; then
	try module-holds-nothing module_idle || true
fi

# Unloading must work with everything closed; a refcount leak shows here.
if [[ $loaded == 1 ]]; then
	try rmmod-viaduct rmmod viaduct || true
fi

if [[ $VD_FLAVOUR == debug && -w $kmemleak ]]; then
	say "kmemleak: scanning"
	# An object is only reported once it has looked unreferenced for a
	# while and over two scans.
	echo scan >"$kmemleak" || true
	sleep 6
	echo scan >"$kmemleak" || true
	cat "$kmemleak" >"$res/kmemleak.txt" 2>&1 || true
	say "kmemleak: $(grep -c 'unreferenced object' "$res/kmemleak.txt" || true) suspected leaks"
fi

echo "1..$step_n" >>"$res/harness.tap"
dmesg >"$res/dmesg.txt" 2>&1 || true
say "done"
exit
}
