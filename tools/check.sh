#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "make check": every test of viaduct, host side and in the test VM.
#
#   tools/check.sh [--quick|--debug] [--vm-only] [--only=GLOB] [--kunit=GLOB]
#                  [--gtest-filter=FILTER]
#
#   --quick          normal flavour only (same as VIADUCT_FLAVOURS=normal)
#   --debug          both flavours (the default; VIADUCT_FLAVOURS="normal debug")
#   --vm-only        skip the host-only checks (ctest, 6.1 build, style)
#   --only=GLOB      run only the selftest programs whose name matches GLOB
#   --kunit=GLOB     run only the KUnit suites (or suite.case) matching GLOB
#   --gtest-filter=F pass --gtest_filter=F to the live gtest binary
#
# Environment: VIADUCT_FLAVOURS ("normal debug"), VIADUCT_CACHE (kernel
# cache, ~/.cache/viaduct), VIADUCT_GTEST (live gtest binary to run in the
# VM), VD_TIMEOUT (seconds per VM run, 1800), VD_TEST_TIMEOUT (seconds per
# selftest program, 600), VD_CONSOLE=full (show the whole VM console),
# VD_FUZZ_SECONDS (per libFuzzer target on the host, 20).
#
# Every step becomes one or more verdict lines "PASS|FAIL|SKIP name"; a
# failed step does not stop the steps that do not depend on it. The last
# line is "N passed, N failed" (", N skipped" when there are skips) and the
# exit status is 0 only when nothing failed. Everything is kept under
# build/check/ (logs, verdicts.txt) and build/vm/<flavour>/ (VM results).
set -euo pipefail

# The whole script is one compound command, read completely before it
# runs, so editing this file while it runs cannot derail the run.
{

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
vm=$repo/tools/vm
build=$repo/build
out=$build/check
# The debug flavour (KASAN, lockdep, kmemleak, panic_on_warn) runs the same
# suites after the normal one; its kernel builds while the normal VM runs.
flavours=${VIADUCT_FLAVOURS:-normal debug}
vm_only=0

for a in "$@"; do
	case $a in
	--quick) flavours=normal ;;
	--debug) flavours="normal debug" ;;
	--vm-only) vm_only=1 ;;
	--only=*) export VD_ONLY=${a#*=} ;;
	--kunit=*) export VD_KUNIT=${a#*=} ;;
	--gtest-filter=*) export VD_GTEST_FILTER=${a#*=} ;;
	-h | --help) sed -n '4,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "[check] unknown argument $a (see --help)" >&2; exit 2 ;;
	esac
done
[[ ${VIADUCT_QUICK:-0} == 1 ]] && flavours=normal
for f in $flavours; do
	[[ $f == normal || $f == debug ]] || { echo "[check] unknown flavour $f" >&2; exit 2; }
done

mkdir -p "$out"
rm -f "$out"/kernel-*.log "$out"/vmcost-*.txt
verdicts=$out/verdicts.txt
: >"$verdicts"
timings=()
t_start=$SECONDS

log() { echo "[check] $*"; }

# record PASS|FAIL|SKIP name [logfile]: one verdict, with the log's tail
# shown under a failure.
record() {
	echo "$1 $2" | tee -a "$verdicts"
	if [[ $1 == FAIL && -n ${3:-} && -f ${3:-} ]]; then
		tail -n 40 "$3" | sed 's/^/    | /' | tee -a "$verdicts"
	fi
	return 0
}

# Adds the verdict lines of report.py (or any PASS/FAIL/SKIP lines).
record_lines() {
	grep -E '^(PASS|FAIL|SKIP) |^    \| ' | tee -a "$verdicts" || true
}

phase_t0=0
phase_name=
phase() { # starts a timed phase (ends the previous one)
	phase_end
	phase_name=$1
	phase_t0=$SECONDS
	log "=== $1"
}
phase_end() {
	if [[ -n $phase_name ]]; then
		timings+=("$(printf '%5ds  %s' $((SECONDS - phase_t0)) "$phase_name")")
		phase_name=
	fi
}

# step NAME LOG cmd...: runs cmd with its output in LOG, records one verdict.
step() {
	local name=$1 logf=$2 rc=0
	shift 2
	"$@" >"$logf" 2>&1 || rc=$?
	if [[ $rc == 0 ]]; then
		record PASS "$name"
	else
		record FAIL "$name" "$logf"
	fi
	return "$rc"
}

# checkpatch.pl, with the per-file "total:" lines of clean files left out.
# shellcheck disable=SC2317 # called through step()
checkpatch() {
	local rc=0
	"$ksrc/scripts/checkpatch.pl" --strict --no-tree --terse --show-types -f "$@" \
		>"$out/checkpatch.raw" 2>&1 || rc=$?
	grep -v '^total: 0 errors, 0 warnings, 0 checks' "$out/checkpatch.raw" || true
	return "$rc"
}

# scripts/kernel-doc over the kernel sources: any warning about a /**
# comment (a missing @arg, Return:, a stale name) fails, as in checkpatch.
# shellcheck disable=SC2317 # called through step()
kerneldoc() {
	local rc=0
	"$ksrc/scripts/kernel-doc" -none -Wall "$@" >"$out/kernel-doc.raw" 2>&1 || rc=$?
	cat "$out/kernel-doc.raw"
	[[ $rc == 0 && ! -s $out/kernel-doc.raw ]]
}

# Kernel builds run in the background from the start: they are the long
# pole (7-12 min each on a fresh machine, nothing once cached).
kpid=
start_kernels() {
	local f
	for f in $flavours; do
		if [[ ! -e $("$vm/kernel.sh" --builddir "$f")/.viaduct-built ]]; then
			log "starting kernel builds in the background ($flavours; log: $out/kernel-*.log)"
			(
				for g in $flavours; do
					"$vm/kernel.sh" "$g" >"$out/kernel-$g.log" 2>&1 ||
						echo "kernel.sh $g failed" >>"$out/kernel-$g.log"
				done
			) &
			kpid=$!
			return
		fi
	done
	log "kernels cached: $flavours"
}

# Waits for flavour F's kernel, one progress line a minute.
wait_kernel() {
	local f=$1 kdir n=0
	kdir=$("$vm/kernel.sh" --builddir "$f")
	while [[ ! -e $kdir/.viaduct-built ]]; do
		if grep -qx "kernel.sh $f failed" "$out/kernel-$f.log" 2>/dev/null; then
			break
		fi
		if [[ -z $kpid ]] || ! kill -0 "$kpid" 2>/dev/null; then
			# Not (or no longer) building in the background: build here.
			"$vm/kernel.sh" "$f" >>"$out/kernel-$f.log" 2>&1 || true
			break
		fi
		if ((n % 60 == 0)); then
			log "waiting for the $f kernel: $(tail -n1 "$out/kernel-$f.log" 2>/dev/null | cut -c1-100)"
		fi
		n=$((n + 1))
		sleep 1
	done
	[[ -e $kdir/.viaduct-built ]]
}

# ---------------------------------------------------------------------------
phase deps
if ! bash "$vm/deps.sh"; then
	record FAIL host/deps
	echo "0 passed, 1 failed"
	exit 1
fi

ksrc=
phase "kernel source"
if ksrc=$("$vm/kernel.sh" --srcdir 2>"$out/srcdir.log"); then
	log "kernel source: $ksrc"
else
	record FAIL host/kernel-source "$out/srcdir.log"
	ksrc=
fi
start_kernels

# Userspace objects go through ccache, kept beside the kernels: a later run,
# in this checkout or a fresh clone elsewhere, recompiles only what changed
# (a fresh machine compiles everything). Paths are hashed relative to the
# checkout, so a clone in another directory hits too; the debug info of an
# object taken from the cache names the directory it was first built in.
launcher=()
cc_user=()
if command -v ccache >/dev/null; then
	export CCACHE_DIR=${CCACHE_DIR:-${VIADUCT_CACHE:-$HOME/.cache/viaduct}/ccache}
	export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=true
	launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
	cc_user=("CC=ccache gcc")
fi

phase "host build (cmake)"
cmake_ok=0
if step host/cmake-build "$out/cmake.log" bash -c \
	"cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIADUCT_WERROR=ON ${launcher[*]} && cmake --build build/cmake -j2"; then
	cmake_ok=1
fi

# Host-only checks need no kernel of ours: they run in the background
# beside the VM runs, with their own verdicts and phase times (merged at
# the end), so that a 2-core machine is never idle waiting for a guest.
# shellcheck disable=SC2317 # run in the background below
host_checks() {
	# Niced: the VM beside them goes first.
	renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
	verdicts=$out/host-verdicts.txt
	: >"$verdicts"
	timings=()
	phase_name= # the main shell's phase goes on there, not here
	phase "host tests (ctest) [beside the VM]"
	if [[ $cmake_ok == 1 ]]; then
		# (the JUnit file keeps what a skipped test said: its reason)
		ctest --test-dir build/cmake --output-on-failure -E '^libviaduct\.install$|^Live|^Live/' \
			--output-junit "$out/ctest.xml" >"$out/ctest.log" 2>&1 || true
		python3 "$vm/report.py" ctest "$out/ctest.log" host/ctest "$out/ctest.xml" |
			record_lines || true
	else
		record SKIP host/ctest
	fi

	phase "module vs Debian 6.1 headers [beside the VM]"
	k61=$(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' | sort -V | tail -n1)
	if [[ -n $k61 ]]; then
		step "host/module/builds-against-$(basename "$k61" | sed 's/^linux-headers-//')" \
			"$out/module-6.1.log" "$vm/build-module.sh" "$k61" "$build/module-6.1" || true
	else
		record FAIL host/module/builds-against-6.1 # deps.sh installs them
	fi

	phase "dkms [beside the VM]"
	rc=0
	"$repo/tools/dkms-check.sh" >"$out/dkms.log" 2>&1 || rc=$?
	case $rc in
	0) record PASS host/dkms ;;
	77) record SKIP host/dkms "$out/dkms.log" ;;
	*) record FAIL host/dkms "$out/dkms.log" ;;
	esac

	phase "fuzzing [beside the VM]"
	step host/fuzz "$out/fuzz.log" tools/fuzz/run.sh --seconds "${VD_FUZZ_SECONDS:-20}" || true
	sed -n 's/^fuzz: /    | fuzz: /p' "$out/fuzz.log" >>"$verdicts"

	phase "style [beside the VM]"
	if [[ -n $ksrc ]]; then
		shopt -s nullglob
		kfiles=(kernel/*.[ch] kernel/tests/*.[ch] include/uapi/viaduct/*.h)
		shopt -u nullglob
		step host/style/checkpatch "$out/checkpatch.log" checkpatch "${kfiles[@]}" || true
		step host/style/kernel-doc "$out/kernel-doc.log" kerneldoc kernel/*.[ch] || true
	else
		record FAIL host/style/checkpatch
		record FAIL host/style/kernel-doc
	fi
	# calls against the layer table of Documentation/architecture.rst
	step host/style/layers "$out/layers.log" tools/layers.sh || true
	if [[ -f .clang-format ]]; then
		mapfile -t cxx < <(find user tools -type f \( -name '*.cpp' -o -name '*.cc' \
			-o -name '*.hpp' -o -name '*.h' \) -not -path '*/build/*' | sort)
		if [[ ${#cxx[@]} -gt 0 ]]; then
			step host/style/clang-format "$out/clang-format.log" \
				clang-format --dry-run -Werror "${cxx[@]}" || true
		fi
	fi
	# warnings and errors; the notes (a function called through a
	# wrapper looks unreachable to it) are left
	mapfile -t shs < <(git ls-files '*.sh' 2>/dev/null || find . -name '*.sh' -not -path './build/*')
	if [[ ${#shs[@]} -gt 0 ]]; then
		step host/style/shellcheck "$out/shellcheck.log" \
			shellcheck -x -S warning "${shs[@]}" || true
	fi
	phase_end
	printf '%s\n' "${timings[@]}" >"$out/host-timings.txt"
}

phase "selftests build"
selftests_ok=0
if [[ -n $ksrc && -f selftests/Makefile ]]; then
	# The guest runs every program in the dir: start from an empty one.
	rm -rf "$build/selftests"
	if step host/selftests/build "$out/selftests-build.log" \
		make -C selftests -j2 "${cc_user[@]}" OUTPUT="$build/selftests" \
		KSFT_DIR="$ksrc/tools/testing/selftests"; then
		selftests_ok=1
	fi
else
	record FAIL host/selftests/build
fi

gtest=${VIADUCT_GTEST:-$build/cmake/user/viaduct_tests}
if [[ -x $gtest ]]; then
	export VD_GTEST=$gtest
else
	[[ -n ${VIADUCT_GTEST:-} ]] && record FAIL host/gtest-binary
	unset VD_GTEST
fi

# The install test runs before the VM: the VM's install_test.sh runs the
# programs it built against the installed library.
if [[ $vm_only == 0 && $cmake_ok == 1 ]]; then
	phase "install test (before the VM)"
	rm -rf build/cmake/install-test
	ctest --test-dir build/cmake --output-on-failure -R '^libviaduct\.install$' \
		>"$out/ctest-install.log" 2>&1 || true
	python3 "$vm/report.py" ctest "$out/ctest-install.log" host/ctest | record_lines || true
fi

# The host checks run in the background, niced, beside the VM runs: from
# the first one on, where they cost the least (started beside the debug VM
# instead, they slowed it; Documentation/testing.rst).
hpid=
rm -f "$out/host-verdicts.txt" "$out/host-timings.txt"
if [[ $vm_only == 0 ]]; then
	log "host checks (ctest, 6.1 build, style) run beside the VM; log: $out/host-checks.log"
	host_checks >"$out/host-checks.log" 2>&1 &
	hpid=$!
fi

# A flavour's module builds while the VM before it runs when its kernel is
# already there (cached, or built by then): prebuilt[f] is that build's pid.
declare -A prebuilt=()
prebuild_next() { # flavour: starts the next flavour's module build
	local f=$1 g next='' seen=0 kd
	for g in $flavours; do
		if [[ $seen == 1 ]]; then
			next=$g
			break
		fi
		[[ $g == "$f" ]] && seen=1
	done
	[[ -n $next ]] || return 0
	kd=$("$vm/kernel.sh" --builddir "$next")
	[[ -e $kd/.viaduct-built ]] || return 0
	log "building the $next module beside the $f VM"
	nice -n 10 "$vm/build-module.sh" "$kd" "$build/module-$next" \
		>"$out/module-$next.log" 2>&1 &
	prebuilt[$next]=$!
}

for f in $flavours; do
	phase "$f kernel (wait/build)"
	if ! wait_kernel "$f"; then
		record FAIL "$f/kernel/build" "$out/kernel-$f.log"
		continue
	fi
	kdir=$("$vm/kernel.sh" --builddir "$f")

	phase "$f module build"
	if [[ -n ${prebuilt[$f]:-} ]]; then
		if wait "${prebuilt[$f]}"; then
			record PASS "$f/module/builds-against-the-6.12-tree"
		else
			record FAIL "$f/module/builds-against-the-6.12-tree" "$out/module-$f.log"
			continue
		fi
	elif ! step "$f/module/builds-against-the-6.12-tree" "$out/module-$f.log" \
		"$vm/build-module.sh" "$kdir" "$build/module-$f"; then
		continue
	fi
	prebuild_next "$f"

	phase "$f VM run"
	[[ $selftests_ok == 1 ]] || log "selftests did not build; the VM runs without them"
	rc=0
	# The debug kernel (KASAN, lockdep) runs the same programs several times
	# slower under TCG: generous per-program and whole-run limits.
	if [[ $f == debug ]]; then
		tt=${VD_TEST_TIMEOUT:-900} vt=${VD_TIMEOUT:-2700}
	else
		tt=${VD_TEST_TIMEOUT:-600} vt=${VD_TIMEOUT:-1800}
	fi
	VD_TEST_TIMEOUT=$tt VD_TIMEOUT=$vt VD_FLAVOUR=$f VD_KDIR=$kdir VD_KMOD=$build/module-$f VD_SELFTESTS=$build/selftests \
		"$vm/run.sh" -r "$build/vm/$f" "$vm/guest-check.sh" || rc=$?
	log "VM run exit status $rc; parsing $build/vm/$f"
	python3 "$vm/report.py" vm "$build/vm/$f" "$f" | record_lines || true
	# What each program of the run cost, dearest first.
	if [[ -f $build/vm/$f/job.log ]]; then
		{
			echo "$f VM run, by program:"
			sed -nE 's/^\[guest\] (selftest|gtest) ([^:]+): .*[( ]([0-9]+)s\)?$/\3 \2/p' \
				"$build/vm/$f/job.log" | sort -rn | head -n 12 |
				awk '{ printf "%7ds  %s\n", $1, $2 }'
			echo "$f VM run, the dearest tests:"
			python3 "$vm/report.py" costs "$build/vm/$f" 12 || true
		} >"$out/vmcost-$f.txt"
	fi
done
phase_end

if [[ -n $hpid ]]; then
	phase "host checks (the rest after the VM)"
	wait "$hpid" || true
	phase_end
	if [[ -f $out/host-verdicts.txt ]]; then
		grep -E '^(PASS|FAIL|SKIP) |^    \| ' "$out/host-verdicts.txt" | tee -a "$verdicts" || true
	else
		record FAIL host/checks "$out/host-checks.log"
	fi
	[[ -f $out/host-timings.txt ]] && mapfile -t -O "${#timings[@]}" timings <"$out/host-timings.txt"
fi

if [[ -n $kpid ]] && kill -0 "$kpid" 2>/dev/null; then
	log "waiting for the background kernel build to finish"
	wait "$kpid" || true
fi

timings+=("$(printf '%5ds  total' $((SECONDS - t_start)))")
# The phase table against tools/check-budget: over-budget phases warn.
log "phase table (budget: tools/check-budget):"
log "$(printf '%7s %7s  %s' seconds budget phase)"
over=()
for t in "${timings[@]}"; do
	secs=${t%%s  *}
	name=${t#*s  }
	secs=${secs// /}
	b=$(awk -F'\t' -v n="$name" '!/^#/ && $2 == n { print $1 }' tools/check-budget)
	mark=
	if [[ -n $b ]] && ((secs > b)); then
		mark="  <-- over budget"
		over+=("$name (${secs}s, budget ${b}s)")
	fi
	log "$(printf '%7s %7s  %s%s' "$secs" "${b:--}" "$name" "$mark")"
done
for o in "${over[@]}"; do
	log "WARNING: phase over its budget: $o"
done
for f in $flavours; do
	[[ -f $out/vmcost-$f.txt ]] && sed 's/^/[check] /' "$out/vmcost-$f.txt"
done

pass=$(grep -c '^PASS ' "$verdicts" || true)
fail=$(grep -c '^FAIL ' "$verdicts" || true)
skip=$(grep -c '^SKIP ' "$verdicts" || true)
if [[ $fail -gt 0 ]]; then
	log "failures:"
	grep '^FAIL ' "$verdicts" | sed 's/^/[check]   /'
fi
if [[ $skip -gt 0 ]]; then
	# Every skip with its reason (the first detail line report.py gave).
	log "skipped, and why:"
	awk '/^SKIP / { if (n) print n " -- " (r ? r : "no reason given"); n = $2; r = ""; next }
	     n && /^    \| / && !r { r = substr($0, 7); next }
	     /^(PASS|FAIL) / { if (n) print n " -- " (r ? r : "no reason given"); n = "" }
	     END { if (n) print n " -- " (r ? r : "no reason given") }' "$verdicts" |
		sed 's/^/[check]   /'
fi
summary="$pass passed, $fail failed"
[[ $skip -gt 0 ]] && summary+=", $skip skipped"
echo "$summary"
[[ $fail == 0 ]]
exit
}
