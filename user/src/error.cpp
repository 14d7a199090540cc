// SPDX-License-Identifier: GPL-2.0
#include <viaduct/viaduct.hpp>

namespace viaduct {

Error::Error(int err, const std::string &what)
    : std::system_error(err, std::generic_category(), what) {}

} // namespace viaduct
