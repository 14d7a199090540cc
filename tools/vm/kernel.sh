#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds (once) the test kernel that the VM suites boot.
#
#   tools/vm/kernel.sh normal|debug   build if needed; last stdout line = build dir
#   tools/vm/kernel.sh --srcdir       extract if needed; prints the source dir
#   tools/vm/kernel.sh --builddir F   prints where flavour F lives (no build)
#
# The source is Debian's linux-source-6.12 tarball, extracted once into
# ${VIADUCT_CACHE:-$HOME/.cache/viaduct}, with the patches of
# tools/vm/patches applied in order (Documentation/testing.rst says why each
# is there). Each flavour is built with O= into its own directory named
# after the package version and a hash of the config fragments, of the
# patches (which the source dir's name carries too) and a recipe number, so
# editing a fragment starts a fresh build and an unchanged one costs
# nothing. A finished build carries a stamp file; a build that was
# interrupted is redone from its kept objects.
#
# Progress goes to stderr (one line a minute), so that
# "kdir=$(tools/vm/kernel.sh normal | tail -n1)" is all a caller needs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${VIADUCT_CACHE:-$HOME/.cache/viaduct}
tarball=${VIADUCT_KSRC_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
pkg=linux-source-6.12
jobs=${VIADUCT_KJOBS:-3}
# Part of the cache key: bump it when the configure/build steps below change
# in a way that needs a rebuild.
recipe=2

log() { echo "[kernel] $*" >&2; }
die() { echo "[kernel] ERROR: $*" >&2; exit 1; }

usage() {
	sed -n '4,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# The patches, in the order they are applied.
patches() {
	local p
	for p in "$here"/patches/*.patch; do
		[[ -e $p ]] && echo "$p"
	done
	return 0
}

# A hash of the patches' diffs (not of their descriptions, so that editing
# a description rebuilds nothing): part of the source and build dirs' names.
patch_key() {
	local list p
	list=$(patches)
	[[ -n $list ]] || { echo none; return; }
	# shellcheck disable=SC2086 # plain paths without spaces
	for p in $list; do sed -n '/^--- /,$p' "$p"; done | sha256sum | cut -c1-8
}

pkg_version() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || true
	[[ -n $v ]] || v=$(stat -c %s-%Y "$tarball")
	echo "${v//[^A-Za-z0-9.+-]/_}"
}

# Prints the extracted source dir, extracting it under a lock if needed.
srcdir() {
	[[ -r $tarball ]] || die "$tarball missing (run tools/vm/deps.sh)"
	local ver top dir p
	ver=$(pkg_version)
	top=$cache/src-$ver-p$(patch_key)
	dir=$top/$pkg
	mkdir -p "$cache"
	if [[ ! -e $top/.extracted ]]; then
		exec 8>"$cache/.lock-src"
		flock 8
		if [[ ! -e $top/.extracted ]]; then
			log "extracting $tarball into $top (~15 s)"
			rm -rf "$top.tmp"
			mkdir -p "$top.tmp"
			tar -C "$top.tmp" -xf "$tarball"
			[[ -f $top.tmp/$pkg/Makefile ]] || die "unexpected tarball layout"
			for p in $(patches); do
				log "applying $(basename "$p")"
				patch -d "$top.tmp/$pkg" -p1 -N -s <"$p" ||
					die "$(basename "$p") does not apply to $pkg $ver"
			done
			rm -rf "$top"
			mv "$top.tmp" "$top"
			touch "$top/.extracted"
		fi
		exec 8>&-
	fi
	echo "$dir"
}

fragments() {
	case $1 in
	normal) echo "$here/config-base.frag $here/config-normal.frag" ;;
	debug) echo "$here/config-base.frag $here/config-normal.frag $here/config-debug.frag" ;;
	*) die "unknown flavour '$1' (normal|debug)" ;;
	esac
}

builddir() {
	local flavour=$1 key
	# shellcheck disable=SC2046 # fragments are plain paths without spaces
	key=$( (echo "recipe=$recipe patches=$(patch_key)"; cat $(fragments "$flavour")) |
		sha256sum | cut -c1-12)
	echo "$cache/build-$(pkg_version)-$flavour-$key"
}

# Fails loudly when an option of the fragments did not survive olddefconfig
# (a missing dependency makes kconfig drop it without a word).
verify_config() {
	local cfg=$1 frag line opt val bad=0
	shift
	for frag in "$@"; do
		while IFS= read -r line; do
			[[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]] || continue
			opt=${BASH_REMATCH[1]}
			val=${BASH_REMATCH[2]}
			if [[ $val == n ]]; then
				if grep -q "^$opt=" "$cfg"; then
					log "config: $opt should be off but is $(grep "^$opt=" "$cfg")"
					bad=1
				fi
			elif ! grep -qxF "$opt=$val" "$cfg"; then
				log "config: wanted $opt=$val, got: $(grep -E "^(# )?${opt}[= ]" "$cfg" || echo absent)"
				bad=1
			fi
		done <"$frag"
	done
	# Options that must stay off whatever a fragment pulls in: each makes
	# the kernel rewrite its own text with int3 breakpoints while other
	# CPUs run it (jump labels, dynamic preemption's static calls, ftrace,
	# kprobes). Under multi-threaded TCG another vCPU can execute a stale
	# translation of that code: seen as "Oops: int3" in
	# sched_clock_idle_wakeup_event during early boot with the old
	# defconfig-based kernel. allnoconfig leaves them off; keep it so.
	for opt in JUMP_LABEL PREEMPT_DYNAMIC FUNCTION_TRACER KPROBES; do
		if grep -q "^CONFIG_$opt=y" "$cfg"; then
			log "config: CONFIG_$opt must stay off (runtime text patching races under TCG)"
			bad=1
		fi
	done
	[[ $bad == 0 ]] || die "$cfg is not what the fragments ask for (see above)"
}

# Debian's tree is patched but its x86_64_defconfig does not point at
# Debian's signing certificates; clear them anyway in case a future update
# does, since the build would stop on a missing debian/certs/*.pem.
clear_signing() {
	local src=$1 out=$2 opt
	for opt in SYSTEM_TRUSTED_KEYS SYSTEM_REVOCATION_KEYS MODULE_SIG_KEY; do
		if grep -q "^CONFIG_$opt=\"debian/" "$out/.config"; then
			log "clearing CONFIG_$opt (Debian certificate path)"
			"$src/scripts/config" --file "$out/.config" --set-str "$opt" ""
		fi
	done
}

# Runs make in the background and prints one progress line a minute.
make_with_progress() {
	local logf=$1 pid start rc
	shift
	start=$SECONDS
	"$@" >"$logf" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		for _ in $(seq 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "$((SECONDS - start))s: $(tail -n1 "$logf" | cut -c1-120)"
		fi
	done
	rc=0
	wait "$pid" || rc=$?
	if [[ $rc != 0 ]]; then
		log "make failed (exit $rc); last lines of $logf:"
		grep -E 'error|Error' "$logf" | head -n 20 >&2 || true
		tail -n 30 "$logf" >&2
		return "$rc"
	fi
}

build() {
	local flavour=$1 src out frags t0
	src=$(srcdir)
	out=$(builddir "$flavour")
	read -r -a frags <<<"$(fragments "$flavour")"
	mkdir -p "$out"
	exec 9>"$out/.lock"
	if ! flock -n 9; then
		log "another build of $out is running; waiting for it"
		flock 9
	fi
	if [[ -e $out/.viaduct-built ]]; then
		log "$flavour kernel cached: $out"
		echo "$out"
		return
	fi
	t0=$SECONDS
	log "configuring $flavour kernel in $out"
	local mk=(make -C "$src" O="$out" ARCH=x86_64)
	# As WireGuard's test harness does: nothing but what the fragments ask
	# for (and what that selects), so a fresh machine builds in minutes.
	"${mk[@]}" allnoconfig >"$out/config.log" 2>&1
	(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" \
		"$out/.config" "${frags[@]}") >>"$out/config.log" 2>&1
	"${mk[@]}" olddefconfig >>"$out/config.log" 2>&1 ||
		die "olddefconfig failed; see $out/config.log"
	clear_signing "$src" "$out"
	verify_config "$out/.config" "${frags[@]}"
	log "config verified ($(grep -c '^CONFIG_' "$out/.config") options set)"
	log "building $flavour kernel with -j$jobs (7-12 min on 2 cores; log: $out/build.log)"
	make_with_progress "$out/build.log" "${mk[@]}" -j"$jobs" bzImage modules
	log "installing modules into $out/modroot"
	rm -rf "$out/modroot"
	make_with_progress "$out/modules_install.log" "${mk[@]}" \
		INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod \
		modules_install
	[[ -f $out/arch/x86/boot/bzImage ]] || die "no bzImage in $out"
	"${mk[@]}" -s kernelrelease >"$out/kernelrelease"
	date -u +%FT%TZ >"$out/.viaduct-built"
	# CPU time tells more than wall time on a shared machine. times runs
	# in this shell (a command substitution would report its own children).
	times >"$out/.times"
	log "$flavour kernel $(cat "$out/kernelrelease") built in $((SECONDS - t0))s" \
		"(cpu user/sys of this script's children: $(tail -n1 "$out/.times"))"
	echo "$out"
}

[[ $# == 1 || ($# == 2 && $1 == --builddir) ]] || usage
case $1 in
--srcdir) srcdir ;;
--builddir) builddir "$2" ;;
normal | debug) build "$1" ;;
-h | --help) usage ;;
*) usage ;;
esac
