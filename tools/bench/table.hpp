// SPDX-License-Identifier: GPL-2.0
// Result tables in the manner of perftest: right-aligned columns with the
// units in the headers, framed by dashed lines.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace vdbench {

class Table {
public:
    explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

    // A row has one cell per header; missing cells print as "-".
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    void print(std::ostream &os) const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
};

// Fixed-point formatting of a measured value.
std::string fmt(double v, int decimals);
std::string fmt_int(uint64_t v);
// "4 KiB", "256 MiB": a size in the largest binary unit that divides it.
std::string fmt_size(uint64_t bytes);

} // namespace vdbench
