# SPDX-License-Identifier: GPL-2.0
#
# TAP helpers of the shell selftests, sourced (installed as helpers/tap.sh
# next to them): counts tests in $n and failures in $failed.
#
#   ok STATUS DESCRIPTION   "ok N - ..." when STATUS is 0, else "not ok"
#   skip DESCRIPTION REASON "ok N - ... # SKIP REASON"

n=0
failed=0

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
