#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# viaductctl res and stats against a process that holds resources.
#
#   +--------------------------------------+      +-------------------+
#   | netns vdr$$                          |      | initial netns     |
#   |  veth0 <- vdres0                     |      |  (sees none of    |
#   |  res_holder: PD, MR, CQ, QP, SRQ+QP  |      |   the left side)  |
#   +--------------------------------------+      +-------------------+
#
# The holder's objects must be listed with its pid in its namespace and not
# in the initial one; its MR pins 64 KiB, which the per-context and the
# module-wide counters show until the holder is killed with SIGKILL. A
# second holder with thousands of PDs checks that the dumps resume across
# messages without losing or repeating objects. Prints TAP.

set -u
here=$(cd "$(dirname "$0")" && pwd)
ctl=${VIADUCTCTL:-${VD_VIADUCTCTL:-${VD_SRC:-$(cd "$here/.." && pwd)}/build/cmake/tools/viaductctl/viaductctl}}
holder=${VD_RES_HOLDER:-$here/helpers/res_holder}
NS=vdr$$
DEV=vdres0
MANY=3000
plan=27
hpid=
hpid2=

# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/helpers/tap.sh"
tmp=$tap_tmp

# check DESCRIPTION PYTHON JSON [ARGS...]: runs a python check on JSON (as
# d; ARGS are sys.argv[2:]). The JSON goes through stdin: a dump of
# thousands of objects is larger than one argument may be.
check() {
	local desc=$1 prog=$2 json=$3
	shift 3
	local msg
	msg=$(printf '%s' "$json" | python3 -c "import json, sys
d = json.load(sys.stdin)
$prog" - "$@" 2>&1)
	local rc=$?
	[ $rc -ne 0 ] && printf '%s\n' "$msg" | tail -n 3 | sed 's/^/# /'
	ok $rc "$desc"
}

in_ns() { "$nsrun" "$NS" "$@"; }

# start_holder VAR OUTFILE EXTRA: starts a holder in the namespace, waits
# for its "ready" line and stores its pid in VAR.
start_holder() {
	local var=$1 out=$2 extra=$3 i
	# not through in_ns: $! must be the holder (nsrun without -t execs it)
	"$nsrun" "$NS" "$holder" "$DEV" "$extra" >"$out" 2>&1 &
	printf -v "$var" '%s' $!
	for ((i = 0; i < 300; i++)); do
		has_line "$out" 'ready*' && return 0
		kill -0 "${!var}" 2>/dev/null || break
		nap 0.1
	done
	sed 's/^/# holder: /' "$out"
	return 1
}

kill_holder() { # PID
	[ -n "$1" ] || return 0
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	kill_holder "$hpid"
	kill_holder "$hpid2"
	ip netns del "$NS" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..$plan"

if [ ! -x "$ctl" ] || [ ! -x "$holder" ]; then
	echo "Bail out! viaductctl ($ctl) or res_holder ($holder) not found"
	exit 1
fi
page=$(getconf PAGESIZE)
pages=$((65536 / page))

ip netns add "$NS" && in_ns ip link add veth0 type veth peer name veth1 &&
	in_ns ip link set veth0 up && in_ns "$ctl" link add "$DEV" netdev veth0
ok $? "namespace with $DEV on a veth interface"

global0=$("$ctl" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["global"]["pinned_pages"])')
ok $? "stats --json reports the module-wide pinned pages ($global0)"

start_holder hpid "$tmp/holder" 0
ok $? "holder is ready (pid $hpid)"
read -r _ _ pid _ pd _ mr _ cq _ qp _ qpn _ srq _ srqqp _ srqwr <"$tmp/holder"
[ "$pid" = "$hpid" ]
ok $? "holder reports the pid we started"

json=$(in_ns "$ctl" --json res)
check "res --json lists exactly the holder's PD, MR, CQ, QPs and SRQ" '
pid = int(sys.argv[2])
mine = [r for r in d if r["pid"] == pid]
assert sorted(r["type"] for r in mine) == ["cq", "mr", "pd", "qp", "qp", "srq"], mine
assert all(r["ifname"] == "vdres0" and r["comm"] == "res_holder" for r in mine), mine
h = sorted((r["type"], r["handle"]) for r in mine)
assert h == sorted([("pd", int(sys.argv[3])), ("mr", int(sys.argv[4])), ("cq", int(sys.argv[5])),
                    ("qp", int(sys.argv[6])), ("srq", int(sys.argv[7])),
                    ("qp", int(sys.argv[8]))]), h
' "$json" "$hpid" "$pd" "$mr" "$cq" "$qp" "$srq" "$srqqp"

check "SRQ: its slots, the armed limit 4, one QP on it, its PD" '
s = [r for r in d if r["pid"] == int(sys.argv[2]) and r["type"] == "srq"][0]
assert s["max_wr"] == int(sys.argv[3]) and s["limit"] == 4 and s["qps"] == 1, s
assert s["pd"] == int(sys.argv[4]), s
' "$json" "$hpid" "$srqwr" "$pd"

check "the QP on the SRQ names it and has no RQ of its own" '
q = [r for r in d if r["pid"] == int(sys.argv[2]) and r["handle"] == int(sys.argv[3])][0]
assert q["type"] == "qp" and q["srq"] == int(sys.argv[4]) and q["rq_depth"] == 0, q
other = [r for r in d if r["pid"] == int(sys.argv[2]) and r["type"] == "qp" and r is not q][0]
assert "srq" not in other, other
' "$json" "$hpid" "$srqqp" "$srq"

check "MR: 64 KiB, $pages pinned pages, on the PD, STag shown to root" '
mr = [r for r in d if r["pid"] == int(sys.argv[2]) and r["type"] == "mr"][0]
assert mr["length"] == 65536 and mr["pinned_pages"] == int(sys.argv[3]), mr
assert mr["pd"] == int(sys.argv[4]), mr
assert mr["access"] == "LOCAL_WRITE,REMOTE_READ", mr
assert mr["stag"].startswith("0x"), mr
' "$json" "$hpid" "$pages" "$pd"

check "QP: qpn, IDLE, depths 16, polled doorbell, its PD and CQ" '
qp = [r for r in d if r["pid"] == int(sys.argv[2]) and r.get("lqpn") == int(sys.argv[3])][0]
assert qp["lqpn"] == int(sys.argv[3]) and qp["state"] == "IDLE", qp
assert qp["sq_depth"] == 16 and qp["rq_depth"] == 16, qp
assert qp["doorbell"] == "polled", qp
assert qp["pd"] == int(sys.argv[4]), qp
assert qp["send_cq"] == qp["recv_cq"] == int(sys.argv[5]), qp
' "$json" "$hpid" "$qpn" "$pd" "$cq"

check "CQ reports its entries" '
cq = [r for r in d if r["pid"] == int(sys.argv[2]) and r["type"] == "cq"][0]
assert cq["cqe"] >= 64, cq
' "$json" "$hpid"

out=$(in_ns "$ctl" res qp)
printf '%s\n' "$out" | grep -Eq "^qp $DEV pid $hpid comm res_holder ctx [0-9]+ handle $qp lqpn $qpn state IDLE sq 16 rq 16 doorbell polled pd $pd scq $cq rcq $cq\$"
ok $? "res qp prints the rdma-style line"
[ "$(printf '%s\n' "$out" | grep -c "pid $hpid ")" -eq 2 ] && ! printf '%s\n' "$out" | grep -q '^pd\|^mr\|^cq\|^srq'
ok $? "res qp lists QPs only"
out=$(in_ns "$ctl" res srq)
printf '%s\n' "$out" | grep -Eq "^srq $DEV pid $hpid comm res_holder ctx [0-9]+ handle $srq wr $srqwr limit 4 qps 1 pd $pd\$"
ok $? "res srq prints the SRQ's line"

json=$(in_ns setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$ctl" --json res mr)
check "an unprivileged reader sees the MR without its STag" '
mr = [r for r in d if r["pid"] == int(sys.argv[2])]
assert len(mr) == 1 and "stag" not in mr[0] and mr[0]["pinned_pages"] > 0, mr
' "$json" "$hpid"

json=$("$ctl" --json res)
check "the initial namespace does not see the holder's objects" '
assert not [r for r in d if r["pid"] == int(sys.argv[2])], d
' "$json" "$hpid"

json=$(in_ns "$ctl" --json stats)
check "stats: the holder's context has 1 PD, MR, CQ, 2 QPs, 1 SRQ and $pages pinned pages" '
c = [c for c in d["contexts"] if c["pid"] == int(sys.argv[2])]
assert len(c) == 1, d["contexts"]
c = c[0]
assert c["ifname"] == "vdres0" and c["comm"] == "res_holder", c
assert (c["pds"], c["mrs"], c["cqs"], c["qps"], c["srqs"]) == (1, 1, 1, 2, 1), c
assert c["pinned_pages"] == int(sys.argv[3]) and c["doorbells"] == 0, c
' "$json" "$hpid" "$pages"

# Other programs may pin and unpin beside this one: the module-wide count
# holds at least the holder's pages, the device's exactly them.
check "stats: module-wide counters, pinned pages at least the holder's $pages" '
assert d["global"]["pinned_pages"] >= int(sys.argv[2]), d["global"]
for k in ("contexts", "pds", "mrs", "cqs", "qps", "doorbells", "worker_polls",
          "worker_wakeups", "wqes_consumed", "cqes_written", "cq_overflows",
          "tx_zcopy_msgs", "tx_zcopy_copied", "tx_zcopy_fallbacks"):
    assert k in d["global"], k
' "$json" "$pages"

json=$(in_ns "$ctl" --json dev show "$DEV")
check "dev show: $DEV holds 1 PD, MR, CQ, 2 QPs, 1 SRQ and $pages pinned pages" '
r = d[0]["resources"]
assert (r["pds"], r["mrs"], r["cqs"], r["qps"], r["srqs"]) == (1, 1, 1, 2, 1), r
assert r["pinned_pages"] == int(sys.argv[2]) and d[0]["contexts"] == 1, d[0]
' "$json" "$pages"
in_ns "$ctl" dev show "$DEV" | grep -qx "    resources pds 1 mrs 1 cqs 1 qps 2 pinned_pages $pages srqs 1"
ok $? "dev show prints the device's resources line"

"$ctl" stats | grep -q "^global contexts [0-9]" &&
	"$ctl" --json stats | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(any(c["pid"] == int(sys.argv[1]) for c in d["contexts"]))' "$hpid" >/dev/null
ok $? "the initial namespace's stats do not list the holder's context"

kill_holder "$hpid"
gone=1
for _ in $(seq 100); do
	json=$(in_ns "$ctl" --json stats)
	dev=$(in_ns "$ctl" --json dev show "$DEV")
	if python3 -c '
import json, sys
d, v = json.loads(sys.argv[1]), json.loads(sys.argv[2])[0]
sys.exit(not (not d["contexts"] and not any(v["resources"].values()) and not v["contexts"]))
' "$json" "$dev"; then
		gone=0
		break
	fi
	sleep 0.1
done
ok $gone "after SIGKILL: no context left, $DEV holds nothing"
hpid=
[ -z "$(in_ns "$ctl" res)" ]
ok $? "after SIGKILL: res lists nothing"

start_holder hpid2 "$tmp/holder2" $MANY
ok $? "second holder with $MANY extra PDs is ready"
json=$(in_ns "$ctl" --json res pd)
check "res pd lists all $((MANY + 1)) PDs once each, in handle order" '
pd = [r["handle"] for r in d if r["pid"] == int(sys.argv[2])]
assert len(pd) == int(sys.argv[3]) + 1, len(pd)
assert len(set(pd)) == len(pd) and pd == sorted(pd), "repeated or out of order"
assert all(r["type"] == "pd" for r in d), "type filter"
' "$json" "$hpid2" "$MANY"
[ "$(in_ns "$ctl" res | grep -c "pid $hpid2 ")" -eq $((MANY + 6)) ]
ok $? "res text: one line per object ($((MANY + 6)))"
json=$(in_ns "$ctl" --json stats)
check "stats counts $((MANY + 1)) PDs for the second holder" '
c = [c for c in d["contexts"] if c["pid"] == int(sys.argv[2])][0]
assert c["pds"] == int(sys.argv[3]) + 1, c
' "$json" "$hpid2" "$MANY"
kill_holder "$hpid2"
hpid2=

in_ns "$ctl" link del "$DEV"
ok $? "remove $DEV"

[ "$n" -eq "$plan" ] || echo "# planned $plan tests, ran $n"
exit $((failed != 0))
