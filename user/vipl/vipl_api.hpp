// SPDX-License-Identifier: GPL-2.0
//
// What the parts of the library share: the handle registry, time, and
// moving a VI to Error.
#pragma once

#include <chrono>

#include "objects.hpp"

namespace vipl {

using Clock = std::chrono::steady_clock;

class Registry {
public:
    void add(const std::shared_ptr<Object> &o);
    void remove(const void *h);
    std::shared_ptr<Object> find(const void *h, Kind k);

private:
    std::shared_mutex mu;
    std::unordered_map<const void *, std::shared_ptr<Object>> map;
};

Registry &registry();

// VIP_INFINITE (and anything beyond a year): never.
Clock::time_point deadline_of(VIP_ULONG timeout);
std::chrono::milliseconds until(Clock::time_point deadline);

void fail_vi(Vi &vi, bool lost = false);
void async_error(Vi &vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *desc, bool recv);
VIP_VI_STATE vi_state(Vi &vi);
bool vi_idle(Vi &vi);
void unhook_vi(Vi &vi);
void close_nic(Nic &nic);
void drain(WorkQueue &wq);

} // namespace vipl
