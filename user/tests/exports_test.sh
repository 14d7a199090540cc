#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# libviaduct.so exports the public API, every symbol at version VIADUCT_0,
# and nothing of viaduct::detail or of the objects' shared states.
set -u
lib=$1
syms=$(nm -D --defined-only "$lib" | c++filt) || exit 1
fail=0
for want in 'viaduct::Device::open(' 'viaduct::Device::list(' 'viaduct::to_attributes(' \
	'typeinfo for viaduct::Error' 'vtable for viaduct::Error' \
	'viaduct::Device::read_event(' 'viaduct::ProtectionDomain::ProtectionDomain(' \
	'viaduct::MemoryRegion::MemoryRegion(' 'viaduct::CompletionChannel::wait(' \
	'viaduct::CompletionQueue::poll(' 'viaduct::CompletionQueue::wait(' \
	'viaduct::CompletionQueue::arm(' 'viaduct::QueuePair::QueuePair(' \
	'viaduct::QueuePair::post_send(' 'viaduct::QueuePair::post_recv(' \
	'viaduct::QueuePair::modify(' 'viaduct::to_completion(' \
	'viaduct::CmChannel::read(' 'viaduct::ConnectionId::ConnectionId(' \
	'viaduct::ConnectionId::connect(' 'viaduct::ConnectionId::accept(' \
	'viaduct::CmEvent::~CmEvent(' 'viaduct::CmEvent::connection('; do
	echo "$syms" | grep -qF "$want" || { echo "not exported: $want"; fail=1; }
done
if echo "$syms" | grep -q 'viaduct::detail'; then
	echo "internal symbols exported:"; echo "$syms" | grep 'viaduct::detail'; fail=1
fi
if echo "$syms" | grep -q '::State::'; then
	echo "object states exported:"; echo "$syms" | grep '::State::'; fail=1
fi
unversioned=$(echo "$syms" | grep ' [TWVDBR] ' | grep -v '@@VIADUCT_0')
if [ -n "$unversioned" ]; then
	echo "symbols outside VIADUCT_0:"; echo "$unversioned"; fail=1
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libviaduct.so.0 ] || { echo "SONAME is '$soname'"; fail=1; }
exit $fail
