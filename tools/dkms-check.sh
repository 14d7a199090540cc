#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms add, build and install of viaduct from a clean copy of the tree,
# against each kernel tree given (default: Debian's newest 6.1 headers under
# /usr/src and the 6.12 test kernel's build directory, if built). Nothing
# is loaded; nothing outside a scratch directory is written except what
# dkms itself keeps (its signing key) and depmod's run for an installed
# kernel. "install" needs the kernel installed here (/lib/modules/KVER, for
# depmod): for one that is not, such as the test kernel, the check stops
# after "build" and looks at the module dkms built. The module must carry
# the generic-netlink alias that lets viaductctl load it.
#
#   tools/dkms-check.sh [KERNEL_TREE...]
#
# Exit status: 0 if every tree passed, 1 if one failed, 77 if there is no
# dkms or no tree to build against.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

command -v dkms >/dev/null || { echo "dkms-check: no dkms (tools/vm/deps.sh installs it)"; exit 77; }
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$here/dkms.conf")
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$here/dkms.conf")
[[ -n $name && -n $version ]] || { echo "dkms-check: no name or version in dkms.conf"; exit 1; }

trees=("$@")
if [[ ${#trees[@]} == 0 ]]; then
	k61=$(find /usr/src -maxdepth 1 -name 'linux-headers-6.1.*-amd64' | sort -V | tail -n1)
	[[ -n $k61 ]] && trees+=("$k61")
	k612=$(bash "$here/tools/vm/kernel.sh" --builddir normal 2>/dev/null | tail -n1)
	[[ -n $k612 && -e $k612/.viaduct-built ]] && trees+=("$k612")
fi
[[ ${#trees[@]} != 0 ]] || { echo "dkms-check: no kernel tree to build against"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for kdir in "${trees[@]}"; do
	# The kernel's name: Debian's header packages are named after it.
	case $(basename "$kdir") in
	linux-headers-*) kver=${kdir##*/linux-headers-} ;;
	*) kver=$(cat "$kdir/include/config/kernel.release" 2>/dev/null) ;;
	esac
	if [[ -z $kver ]]; then
		echo "FAIL $kdir: no include/config/kernel.release (not a prepared tree)"
		fail=1
		continue
	fi
	w=$tmp/$kver
	mkdir -p "$w/src/$name-$version" "$w/dkms" "$w/install/$kver"
	# A clean copy: the files git knows, as they are in the work tree.
	git -C "$here" ls-files -z | (cd "$here" && xargs -0 cp --parents -t "$w/src/$name-$version")
	opts=(-m "$name" -v "$version" --sourcetree "$w/src" --dkmstree "$w/dkms")
	kopts=(-k "$kver" --kernelsourcedir "$kdir" --installtree "$w/install")
	log=$w/dkms.log
	steps=(add build install)
	[[ -d /lib/modules/$kver ]] || steps=(add build)
	ok=1
	for step in "${steps[@]}"; do
		if [[ $step == add ]]; then
			dkms add "${opts[@]}" >>"$log" 2>&1 || ok=0
		else
			dkms "$step" "${opts[@]}" "${kopts[@]}" >>"$log" 2>&1 || ok=0
		fi
		[[ $ok == 1 ]] || break
	done
	if [[ $ok == 0 ]]; then
		echo "FAIL $kver ($kdir): dkms $step failed"
		tail -n 25 "$log" | sed 's/^/  /'
		find "$w/dkms" -name make.log -exec tail -n 25 {} \; | sed 's/^/  /'
		fail=1
		continue
	fi
	if [[ ${steps[-1]} == install ]]; then
		ko=$(find "$w/install/$kver" -name "$name.ko*" | head -n1)
	else
		ko=$(find "$w/dkms/$name/$version/$kver" -name "$name.ko*" | head -n1)
	fi
	if [[ -z $ko ]]; then
		echo "FAIL $kver: dkms ${steps[-1]} left no $name.ko"
		fail=1
	elif ! modinfo -F alias "$ko" | grep -qx "net-pf-16-proto-16-family-$name"; then
		echo "FAIL $kver: $ko has no generic-netlink family alias"
		fail=1
	elif ! modinfo -F vermagic "$ko" | grep -q "^$kver "; then
		echo "FAIL $kver: $ko was built for $(modinfo -F vermagic "$ko")"
		fail=1
	else
		echo "ok $kver: dkms ${steps[*]} of $name $version (${ko#"$w"/})"
	fi
done
exit $fail
