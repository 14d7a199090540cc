#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# viaductctl as a user sees it on a host without viaduct.ko: the module is
# named as the cause (exit 2); usage errors exit 1, as ip(8)'s; help and
# version exit 0.
# Exit 77 (skip) where the module is loaded.
ctl=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$ctl" link show 2>&1)
status=$?
[ "$status" -eq 0 ] && { echo "viaduct.ko is loaded here: skipping"; exit 77; }
[ "$status" -eq 2 ] || fail "link show: exit $status, wanted 2: $out"
[ "$out" = "viaductctl: viaduct generic netlink family not found: is viaduct.ko loaded?" ] ||
	fail "link show: unexpected message: $out"

for cmd in "dev" "-j dev show vd0" "link add vd0 netdev lo" "link del vd0"; do
	# shellcheck disable=SC2086 # split on purpose
	out=$("$ctl" $cmd 2>&1)
	status=$?
	[ "$status" -eq 2 ] || fail "$cmd: exit $status, wanted 2: $out"
	echo "$out" | grep -q "is viaduct.ko loaded?" || fail "$cmd: unexpected message: $out"
done

for cmd in "link frobnicate" "" "--bogus" "link add vd0" "link add bad/name netdev lo" \
	"link add vd0 type siw netdev lo" "res qp pid x"; do
	# shellcheck disable=SC2086
	out=$("$ctl" $cmd 2>&1)
	status=$?
	[ "$status" -eq 1 ] || fail "'$cmd': exit $status, wanted 1: $out"
	echo "$out" | grep -q "^Usage:" || fail "'$cmd': no usage text: $out"
done

out=$("$ctl" --help) || fail "--help failed"
echo "$out" | grep -q "link add NAME type viaduct netdev IFNAME" || fail "--help: $out"
out=$("$ctl" res help) || fail "res help failed"
echo "$out" | grep -q "lqpn" || fail "res help: $out"
echo "$out" | grep -q "link add" && fail "res help shows link: $out"
# Abbreviated keywords reach the module like whole ones.
out=$("$ctl" dev sh 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "is viaduct.ko loaded?" || fail "dev sh: $out"
out=$("$ctl" -V) || fail "-V failed"
echo "$out" | grep -q "^viaductctl [0-9]" || fail "-V: $out"
exit 0
