# Debug flavour: applied on top of config-normal.frag. Boot with
# panic_on_warn=1 (run.sh does) so the first splat ends the run.
CONFIG_DEBUG_KERNEL=y
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_UBSAN=y
CONFIG_UBSAN_BOUNDS=y
CONFIG_UBSAN_SHIFT=y
CONFIG_PROVE_LOCKING=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF=n
CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE=32000
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_LIST=y
# Off: checks of what viaduct does not use, paid on every free under
# kmemleak (Documentation/testing.rst, "What the debug flavour checks").
# SLUB_RCU_DEBUG: KASAN's use-after-free checks of SLAB_TYPESAFE_BY_RCU
# caches (viaduct has none), which delays every free from them (files,
# sighand, anon_vma) by a grace period. DEBUG_OBJECTS_RCU_HEAD: an
# rcu_head queued twice; kmemleak frees each of its objects with
# call_rcu(), so it costs on every kfree(), and viaduct's only RCU frees
# are kfree_rcu(), whose double free KASAN reports.
CONFIG_SLUB_RCU_DEBUG=n
CONFIG_DEBUG_OBJECTS_RCU_HEAD=n
