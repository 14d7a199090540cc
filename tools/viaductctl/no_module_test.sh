#!/bin/sh
# On a host without viaduct.ko, viaductctl must say so and exit 1.
out=$("$1" link show 2>&1)
status=$?
[ "$status" -eq 1 ] || { echo "exit $status, wanted 1: $out"; exit 1; }
echo "$out" | grep -q "is viaduct.ko loaded?" || { echo "unexpected message: $out"; exit 1; }
out=$("$1" link frobnicate 2>&1)
[ $? -eq 2 ] || { echo "usage error did not exit 2: $out"; exit 1; }
exit 0
