# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# TAP helpers of the shell selftests, sourced (installed as helpers/tap.sh
# next to them): counts tests in $n and failures in $failed.
#
#   ok STATUS DESCRIPTION   "ok N - ..." when STATUS is 0, else "not ok"
#   skip DESCRIPTION REASON "ok N - ... # SKIP REASON"
#
# and gives the scripts two things that spare a process each time:
#
#   "$nsrun" [-t SECONDS] NETNS [NAME=VALUE]... PROGRAM [ARG]...
#           what "ip netns exec NETNS timeout SECONDS env NAME=VALUE...
#           PROGRAM" does, in one process start (helpers/nsrun, nsrun.c)
#   $tap_tmp  a directory of this script's own for scratch files, made
#           here; the script's cleanup removes it

n=0
failed=0
nsrun=${BASH_SOURCE[0]%/*}/nsrun
if [ ! -x "$nsrun" ]; then
	echo "Bail out! $nsrun not built (make -C selftests)"
	exit 1
fi
# shellcheck disable=SC2034 # for the scripts that source this file
tap_tmp=$(mktemp -d)

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# Waiting for a server without starting a process per look: under TCG,
# and several times more under the debug kernel, every ip(8), ss(8) or
# sleep(1) started costs tens of milliseconds of a loaded machine that
# the server being waited for needs to come up.
#
#   nap SECONDS            sleeps (fractions allowed) without a process
#   wait_listen PID PORT   up to 10 s until a TCP socket in PID's network
#                          namespace listens on PORT (the kernel's
#                          sockets of an RDMA CM included); 1 if it did
#                          not, or if PID exited first
#   has_line FILE GLOB     whether a line of FILE matches GLOB (a bash
#                          pattern: '*text*', 'prefix*'); 1 while FILE
#                          does not exist yet
exec {tap_nap_fd}<> <(:)
nap() {
	read -r -t "$1" -u "$tap_nap_fd" || true
}

has_line() {
	local l
	[ -r "$1" ] || return 1
	while IFS= read -r l; do
		# shellcheck disable=SC2053 # $2 is a pattern on purpose
		[[ $l == $2 ]] && return 0
	done <"$1"
	return 1
}

wait_listen() {
	local pid=$1 hex i f loc st rest
	printf -v hex '%04X' "$2"
	for ((i = 0; i < 200; i++)); do
		for f in /proc/"$pid"/net/tcp /proc/"$pid"/net/tcp6; do
			[ -r "$f" ] || continue
			while read -r _ loc _ st rest; do
				[ "$st" = 0A ] && [ "${loc##*:}" = "$hex" ] && return 0
			done <"$f"
		done
		kill -0 "$pid" 2>/dev/null || return 1
		nap 0.05
	done
	echo "# nothing listens on port $2 after 10 s"
	return 1
}

# Two network namespaces joined by a veth pair, in three ip(8) processes
# (batch mode, as xf_net_up() in xfer_util.h; each veth end is made in its
# namespace rather than made in this one, moved and renamed):
#
#   ns_pair A B   eth0 in each, up, with 192.0.2.1/24 and 2001:db8::1/64
#                 in A, 192.0.2.2/24 and 2001:db8::2/64 in B (no DAD);
#                 lo up in both
ns_pair() {
	printf 'netns add %s\nnetns add %s\nlink add eth0 netns %s type veth peer name eth0 netns %s\n' \
		"$1" "$2" "$1" "$2" | ip -b - &&
		printf 'addr add %s dev eth0\naddr add %s dev eth0 nodad\nlink set eth0 up\nlink set lo up\n' \
			192.0.2.1/24 2001:db8::1/64 | ip -n "$1" -b - &&
		printf 'addr add %s dev eth0\naddr add %s dev eth0 nodad\nlink set eth0 up\nlink set lo up\n' \
			192.0.2.2/24 2001:db8::2/64 | ip -n "$2" -b -
}
