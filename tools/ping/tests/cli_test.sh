#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# viaduct-ping's command line: each bad invocation exits with status 2 and
# says what is wrong; --help exits 0. Needs no module: every case is refused
# before a device is opened.
set -u
ping=$1
fail=0

# expect STATUS 'TEXT' ARGS...: exit status STATUS and TEXT in the output.
expect() {
	want=$1 text=$2
	shift 2
	out=$("$ping" "$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: viaduct-ping $*: exit status $rc, expected $want"
		echo "$out"
		fail=1
	elif ! printf '%s\n' "$out" | grep -qF -- "$text"; then
		echo "FAIL: viaduct-ping $*: no '$text' in:"
		echo "$out"
		fail=1
	fi
}

expect 0 'usage: viaduct-ping' --help
expect 0 '--persistent' -h
expect 2 "invalid size '1' (26 to 65535)" -c -a 192.0.2.1 -S 1
expect 2 "invalid size '70000'" -c -a 192.0.2.1 --size=70000
expect 2 "invalid port '0'" -c -a 192.0.2.1 -p 0
expect 2 "invalid type of service '256'" -c -a 192.0.2.1 -t 256
expect 2 "invalid count '-1'" -c -a 192.0.2.1 -C -1
expect 2 "option '-a' needs an argument" -c -a
expect 2 "unknown option '-x'" -s -x
expect 2 "unknown option '--bogus'" -s --bogus=1
expect 2 "give exactly one of -s and -c" -s -c
expect 2 "the client needs the server's address (-a)" -c
expect 2 "-I is the client's source address" -s -I 192.0.2.1
expect 2 "-P is for the server" -c -P -a 192.0.2.1
expect 2 "unexpected argument 'extra'" -c -a 192.0.2.1 extra
# Decimal, as rping: 010 is ten, not eight; so it is too small a size.
expect 2 "invalid size '010'" -c -a 192.0.2.1 -S 010
expect 2 "invalid type of service '0x100'" -c -a 192.0.2.1 -t 0x100
expect 2 "invalid port '0x'" -c -a 192.0.2.1 -p 0x
expect 1 "cannot resolve 'nonexistent.invalid'" -c -a nonexistent.invalid
exit $fail
