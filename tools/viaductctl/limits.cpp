// SPDX-License-Identifier: GPL-2.0
#include "limits.hpp"

#include <fstream>
#include <stdexcept>

namespace viaductctl {

namespace {

// Per context (uobj.c), per stream (rx.c), per CM channel (cm_channel.c).
const char *const limit_names[] = {"ctx_max_pd",  "ctx_max_mr", "ctx_max_cq",  "ctx_max_qp",
                                   "ctx_max_srq", "ctx_max_mw", "rx_stall_ms", "cm_channel_events"};

} // namespace

std::vector<std::pair<std::string, std::uint64_t>> read_limits(const std::string &dir) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    for (const char *name : limit_names) {
        const std::string path = dir + "/" + name;
        std::ifstream f(path);
        std::uint64_t v = 0;
        if (!f)
            throw std::runtime_error("cannot read " + path + " (is the viaduct module loaded?)");
        if (!(f >> v))
            throw std::runtime_error("no number in " + path);
        out.emplace_back(name, v);
    }
    return out;
}

void print_limits(std::ostream &out, const std::vector<std::pair<std::string, std::uint64_t>> &l,
                  OutputStyle style) {
    Printer p(out, style);
    p.begin_top_object();
    p.begin_record("limits");
    p.text("limits");
    for (const auto &[name, v] : l)
        p.any(name.c_str(), name.c_str(), v);
    p.end_record();
    p.end_top_object();
}

} // namespace viaductctl
