#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the libFuzzer targets from the module's own pure sources (with the
# userspace shim of tools/fuzz/kshim) and runs each for a bounded time,
# starting from the seed corpora of tools/fuzz/corpus and from what earlier
# runs found (kept under the output directory).
#
#   tools/fuzz/run.sh [--seconds N] [--out DIR] [--seeds] [target...]
#
#   --seconds N  per target (default 20: "make check"; "make fuzz" uses 600)
#   --out DIR    build and working corpora (default build/fuzz)
#   --seeds      rewrite tools/fuzz/corpus with the seed generator and stop
#   target       frame, mpa, wqe (default: all)
#
# One line per target: "fuzz: <target>: <s> s, <n> executions (<n>/s),
# coverage <covered> of <instrumented> edges, <features> features, corpus <n>". A crash, a
# sanitizer report or a broken oracle stops that target; its input is
# saved as <out>/crash-<target>-*, and the exit status is 1.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
seconds=20
out=$repo/build/fuzz
seeds_only=0
targets=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--seconds) seconds=$2; shift ;;
	--seconds=*) seconds=${1#*=} ;;
	--out) out=$2; shift ;;
	--out=*) out=${1#*=} ;;
	--seeds) seeds_only=1 ;;
	-h|--help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) targets+=("$1") ;;
	esac
	shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=(frame mpa wqe)

cc=${CLANG:-clang}
if ! command -v "$cc" >/dev/null; then
	echo "run.sh: $cc not found (tools/vm/deps.sh installs clang)" >&2
	exit 1
fi

declare -A sources=(
	[frame]="kernel/iwarp.c kernel/terminate.c tools/fuzz/outside.c"
	[mpa]="kernel/iwarp.c kernel/mpa.c"
	[wqe]="kernel/qp_rules.c"
)
cflags=(-g -O1 -Wall -Werror -Wno-unused-function -Wno-unused-parameter
	-Wno-missing-field-initializers -I"$repo/tools/fuzz/kshim" -I"$repo/include/uapi")
mkdir -p "$out"

if [[ $seeds_only == 1 ]]; then
	"$cc" "${cflags[@]}" -o "$out/seeds" "$repo/tools/fuzz/seeds.c" \
		"$repo"/kernel/{iwarp,terminate,mpa,qp_rules}.c "$repo/tools/fuzz/outside.c"
	rm -rf "$repo/tools/fuzz/corpus"
	"$out/seeds" "$repo/tools/fuzz/corpus"
	echo "seeds written to tools/fuzz/corpus"
	exit 0
fi

rc=0
for t in "${targets[@]}"; do
	if [[ -z ${sources[$t]:-} ]]; then
		echo "run.sh: no target $t" >&2
		exit 2
	fi
	srcs=()
	for s in ${sources[$t]}; do
		srcs+=("$repo/$s")
	done
	"$cc" "${cflags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o "$out/fuzz_$t" "$repo/tools/fuzz/fuzz_$t.c" "${srcs[@]}"
	mkdir -p "$out/corpus-$t"
	logf=$out/fuzz_$t.log
	t0=$SECONDS
	trc=0
	"$out/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=1024 -artifact_prefix="$out/crash-$t-" \
		"$out/corpus-$t" "$repo/tools/fuzz/corpus/$t" >"$logf" 2>&1 || trc=$?
	el=$((SECONDS - t0))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logf" | tail -n1)
	last=$(grep -E '^#[0-9]+' "$logf" | tail -n1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
	# the instrumented edges of the target and the sources it is built from
	total=$(sed -n 's/^INFO: Loaded 1 modules *(\([0-9]*\) inline 8-bit counters.*/\1/p' "$logf" | head -n1)
	if [[ $trc != 0 ]]; then
		echo "fuzz: $t: FAILED after $el s (exit $trc); input: $(ls "$out"/crash-"$t"-* 2>/dev/null | head -n1)"
		grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$logf" | head -n 20
		rc=1
		continue
	fi
	echo "fuzz: $t: $el s, ${execs:-0} executions ($(( ${execs:-0} / (el > 0 ? el : 1) ))/s)," \
		"coverage ${cov:-0} of ${total:-?} edges, ${ft:-0} features, corpus ${corp:-0}"
done
exit "$rc"
