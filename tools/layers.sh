#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lists the calls in kernel/ that go against the layer table of
# Documentation/architecture.rst: a file may use the functions of its own
# layer and of the layers below it, never those of a layer above (those
# reach up only through ops or callbacks that the upper layer installed).
#
#   tools/layers.sh [-v] [KERNEL_DIR]
#
# A "use" is any mention of a function outside comments: a call, or taking
# its address. Functions are attributed to the .c file that defines them
# (static inline functions of foo.h to foo.c). Prints one line per use
# against the table and exits 1 if there is any, or if a file of kernel/
# is missing from the table; -v also prints every file's layer and the
# files it uses. Needs only bash, grep, sed and gcc's preprocessor (to drop
# comments).
set -euo pipefail

verbose=0
if [[ ${1:-} == -v ]]; then
	verbose=1
	shift
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kdir=${1:-$here/../kernel}
cd "$kdir"

# The layer table, bottom to top: "layer-number name: files".
table='
1 resources: pd.c mem.c tpt.c tpt_check.c frmr.c mw.c ring.c event.c
2 wire formats: iwarp.c mpa.c terminate.c
3 queues: doorbell.c cq.c qp.c qp_create.c qp_rules.c srq.c
4 devices: device.c
5 streams: conn.c
6 transport: stream.c tx.c tx_wr.c fpdu.c zcopy.c rx.c rx_read.c
7 connection manager: addr.c cm_channel.c cm.c cm_sock.c cm_connect.c cm_listen.c cm_end.c
8 faces: uctx.c uobj.c uobj_report.c ucq.c uqp.c umr.c umw.c usrq.c limits.c ucm.c netlink.c main.c
'

declare -A level name
while read -r n rest; do
	[[ -n $n ]] || continue
	lname=${rest%%:*}
	for f in ${rest#*:}; do
		level[$f]=$n
		name[$f]=$lname
	done
done <<<"$table"

bad=0
for f in *.c; do
	if [[ -z ${level[$f]:-} ]]; then
		echo "kernel/$f: not in the layer table (tools/layers.sh)"
		bad=1
	fi
done

# function -> defining file
declare -A def
while read -r file fn; do
	def[$fn]=$file
done < <(
	for f in *.c; do
		grep -E '^[a-z_][^;]*[ *]vd_[a-z0-9_]+\(' "$f" | grep -v '^static ' |
			grep -v ';$' | grep -oE 'vd_[a-z0-9_]+\(' |
			tr -d '(' | sed "s/^/$f /" || true
	done
	for h in *.h; do
		grep -E '^static inline [^;]*[ *]vd_[a-z0-9_]+\(' "$h" |
			grep -oE 'vd_[a-z0-9_]+\(' | tr -d '(' |
			sed "s/^/${h%.h}.c /" || true
	done
)

# the identifiers each file mentions outside comments and strings
uses() {
	gcc -fpreprocessed -dD -E -P -x c "$1" 2>/dev/null |
		sed -e 's/"\([^"\\]\|\\.\)*"/""/g' |
		grep -oE '\bvd_[a-z0-9_]+\b' | sort -u || true
}

for f in *.c; do
	mine=${level[$f]:-}
	[[ -n $mine ]] || continue
	used=()
	while read -r fn; do
		owner=${def[$fn]:-}
		[[ -n $owner && $owner != "$f" ]] || continue
		theirs=${level[$owner]:-}
		[[ -n $theirs ]] || continue
		used+=("$owner")
		if ((theirs > mine)); then
			echo "kernel/$f (${name[$f]}) uses $fn of kernel/$owner (${name[$owner]})"
			bad=1
		fi
	done < <(uses "$f")
	if ((verbose)); then
		printf '%-14s %d %-20s -> %s\n' "$f" "$mine" "${name[$f]}" \
			"$(printf '%s\n' "${used[@]}" | sort -u | tr '\n' ' ')"
	fi
done

if ((bad == 0 && verbose)); then
	echo "no use against the layer table"
fi
exit $bad
