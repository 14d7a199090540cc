#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds viaduct.ko (and, when KDIR has CONFIG_KUNIT, viaduct_test.ko) out of
# tree against one kernel, in a copy of the sources so that builds against
# different kernels never share objects.
#
#   tools/vm/build-module.sh [-W] KDIR OUTDIR
#
# KDIR is a kernel build dir (tools/vm/kernel.sh output, or a Debian
# /usr/src/linux-headers-* dir); -W adds W=1. The modules end up in OUTDIR.
# VIADUCT_SRC overrides the repo to copy from (default: this checkout).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=${VIADUCT_SRC:-$(cd "$here/../.." && pwd)}

log() { echo "[module] $*" >&2; }
die() { echo "[module] ERROR: $*" >&2; exit 1; }

w=()
if [[ ${1:-} == -W ]]; then
	w=(W=1)
	shift
fi
[[ $# == 2 ]] || die "usage: $0 [-W] KDIR OUTDIR"
kdir=$1
out=$2
[[ -f $kdir/Makefile ]] || die "$kdir is not a kernel build dir"
[[ -f $repo/Kbuild ]] || die "no Kbuild in $repo"

mkdir -p "$out"
out=$(cd "$out" && pwd)
items=(Kbuild)
for d in kernel include; do
	[[ -d $repo/$d ]] && items+=("$d")
done
# --delete keeps files removed from the repo from lingering in the copy;
# checksums (not mtimes) decide, so an unchanged tree rebuilds nothing.
(cd "$repo" && rsync -a --delete --checksum \
	--exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod*' \
	"${items[@]}" "$out/")

log "building in $out against $kdir"
logf=$out/build.log
if ! make -C "$kdir" M="$out" "${w[@]}" -j"${VIADUCT_JOBS:-2}" modules >"$logf" 2>&1; then
	cat "$logf" >&2
	die "module build failed against $kdir"
fi
# Show warnings even from a successful build; they are worth reading.
grep -E 'warning:|error:' "$logf" >&2 || true
[[ -f $out/viaduct.ko ]] || die "no viaduct.ko produced in $out"
if grep -q '^CONFIG_KUNIT=y' "$kdir/.config" 2>/dev/null && [[ ! -f $out/viaduct_test.ko ]]; then
	log "note: $kdir has CONFIG_KUNIT but no viaduct_test.ko was built"
fi
log "built: $(cd "$out" && echo ./*.ko)"
