// SPDX-License-Identifier: GPL-2.0
// A minimal JSON writer: objects, arrays, strings and unsigned numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace viaductctl {

class JsonWriter {
public:
    explicit JsonWriter(bool pretty = false) : pretty_(pretty) {}

    JsonWriter &begin_object();
    JsonWriter &end_object();
    JsonWriter &begin_array();
    JsonWriter &end_array();
    JsonWriter &key(std::string_view k);
    JsonWriter &value(std::string_view s);
    JsonWriter &value(const char *s) { return value(std::string_view(s)); }
    JsonWriter &value(std::uint64_t n);
    JsonWriter &value(bool b);
    template <typename T> JsonWriter &field(std::string_view k, const T &v) {
        key(k);
        return value(v);
    }

    const std::string &str() const { return out_; }
    static std::string escape(std::string_view s);

private:
    void before_value();
    void newline();
    JsonWriter &close(char c);

    std::string out_;
    std::vector<bool> first_; // per open container: no element yet
    bool after_key_ = false;
    bool pretty_;
};

} // namespace viaductctl
