// SPDX-License-Identifier: GPL-2.0
// The module's counters as the kernel reports them: a VIADUCT_CMD_STATS_GET
// dump over the "viaduct" generic-netlink family (libnl-genl-3). The live
// tests read them to see what the kernel did, not what the library says it
// did.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace viaduct::test {

// VIADUCT_A_STAT_* -> value.
using Counters = std::map<int, std::uint64_t>;

struct ContextCounters {
    std::uint32_t ctx_id = 0;
    std::uint32_t pid = 0;
    std::string dev_name;
    Counters counters;
};

struct StatsDump {
    Counters module; // module-wide
    std::vector<ContextCounters> contexts;

    // The sum of one counter over the contexts opened by @pid.
    std::uint64_t sum_for_pid(pid_t pid, int stat) const;
};

// Throws std::runtime_error if the family is missing or the dump fails.
StatsDump read_stats();

} // namespace viaduct::test
