#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# viaduct-perf's command line, perftest's options and the older spellings:
# each bad invocation exits 2 and says what is wrong; --help exits 0. No
# module needed: every case is refused before a device is opened.
set -u
perf=$1
fail=0

# expect STATUS 'TEXT' ARGS...
expect() {
	want=$1 text=$2
	shift 2
	out=$("$perf" "$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: viaduct-perf $*: exit status $rc, expected $want"
		echo "$out"
		fail=1
	elif ! printf '%s\n' "$out" | grep -qF -- "$text"; then
		echo "FAIL: viaduct-perf $*: no '$text' in:"
		echo "$out"
		fail=1
	fi
}

expect 0 '--report_gbits' --help
expect 2 "the client needs --test" 192.0.2.1
expect 2 "the client needs --test" -s 4096 192.0.2.1
expect 2 "unknown test 'frob'" --test frob 192.0.2.1
expect 2 "-s: 'x' is not a number" -s x 192.0.2.1 --test write
expect 2 "-t: 129 is out of range [1, 128]" -t 129 --test write 192.0.2.1
expect 2 "-D is for the bandwidth tests" -D 5 --test lat-send 192.0.2.1
expect 2 "-D: 0 is out of range [1, 3600]" -D 0 --test write 192.0.2.1
expect 2 "-b is for the bandwidth tests" -b --test lat-write 192.0.2.1
expect 2 "-b runs -n work requests each way: drop -D" -b -D 2 --test write 192.0.2.1
expect 2 "-l: 33 is out of range [1, 32]" -l 33 --test write 192.0.2.1
expect 2 "-l: 0 is out of range [1, 32]" --post_list=0 --test send 192.0.2.1
expect 2 "-e is for the bandwidth tests" -e --test lat-write 192.0.2.1
expect 2 "-I: 5000 is out of range [0, 4096]" -I 5000 --test write 192.0.2.1
expect 2 "-Q 64 is more than the TX depth (-t) of 16" -Q 64 -t 16 --test write 192.0.2.1
expect 2 "--check: 'some' is not ends or all" --check=some --test write 192.0.2.1
expect 2 "latency tests run on one queue pair" --test lat-send -q 2 192.0.2.1
expect 2 "the server's address twice" --addr 192.0.2.1 --test write 192.0.2.2
expect 2 "unexpected argument 'b'" --test write a b
expect 2 "option '-p' needs a value" --test write 192.0.2.1 -p
expect 2 "unknown option '--bogus'" --bogus
# "010" is ten, not eight: decimal, and hex only with 0x.
expect 2 "-q: 0x41 is out of range [1, 64]" -q 0x41 --test write 192.0.2.1
expect 2 "-q: 0100 is out of range [1, 64]" -q 0100 --test write 192.0.2.1
expect 2 "-p: 0 is out of range" -p 0 --test write 192.0.2.1
exit $fail
