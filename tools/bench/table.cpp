// SPDX-License-Identifier: GPL-2.0
#include "table.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iomanip>

namespace vdbench {

void Table::print(std::ostream &os) const {
    std::vector<size_t> width(headers_.size());
    for (size_t c = 0; c < headers_.size(); c++) {
        width[c] = headers_[c].size();
        for (const auto &r : rows_)
            if (c < r.size())
                width[c] = std::max(width[c], r[c].size());
    }
    size_t total = 0;
    for (size_t w : width)
        total += w + 3;
    const std::string rule(total, '-');
    auto line = [&](const std::vector<std::string> &cells, bool left_first) {
        for (size_t c = 0; c < width.size(); c++) {
            const std::string cell = c < cells.size() ? cells[c] : "-";
            os << "   ";
            if (c == 0 && left_first)
                os << std::left;
            else
                os << std::right;
            os << std::setw(static_cast<int>(width[c])) << cell;
        }
        os << std::right << '\n';
    };
    os << rule << '\n';
    line(headers_, true);
    for (const auto &r : rows_)
        line(r, true);
    os << rule << '\n';
}

std::string fmt(double v, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, v);
    return buf.data();
}

std::string fmt_int(uint64_t v) {
    return std::to_string(v);
}

std::string fmt_size(uint64_t bytes) {
    static constexpr std::array<const char *, 4> units{"B", "KiB", "MiB", "GiB"};
    size_t u = 0;
    while (u + 1 < units.size() && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    return std::to_string(bytes) + " " + units[u];
}

} // namespace vdbench
