// SPDX-License-Identifier: GPL-2.0
// "viaductctl limits": the module parameters that bound what a local user
// or a remote peer can make the kernel hold (Documentation/security.rst).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "output.hpp"

namespace viaductctl {

// Where the module shows its parameters.
inline constexpr const char *module_params_dir = "/sys/module/viaduct/parameters";

// The limits, in a fixed order, read from @dir: name and value. Throws
// std::runtime_error naming the file when the module is not loaded or a
// value cannot be read.
std::vector<std::pair<std::string, std::uint64_t>> read_limits(const std::string &dir);

// One "limits" line (text) or object (JSON) of name value pairs.
void print_limits(std::ostream &out, const std::vector<std::pair<std::string, std::uint64_t>> &l,
                  OutputStyle style);

} // namespace viaductctl
