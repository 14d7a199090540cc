// SPDX-License-Identifier: GPL-2.0
// A minimal JSON writer: objects, arrays, strings, unsigned numbers and
// booleans, compact or indented. Strings are escaped as RFC 8259 requires,
// and bytes that are not valid UTF-8 become U+FFFD, so the output is valid
// JSON whatever an interface name contains.
#pragma once

#include <concepts>
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
    JsonWriter &value(bool b);
    // bool is an unsigned_integral too, but takes the non-template above.
    template <std::unsigned_integral T> JsonWriter &value(T n) { return number(std::uint64_t{n}); }
    // Signed numbers would silently pick value(bool); nothing here has a sign.
    template <std::signed_integral T> JsonWriter &value(T n) = delete;

    template <typename T> JsonWriter &field(std::string_view k, const T &v) {
        key(k);
        return value(v);
    }

    // The document so far; complete once every container is closed.
    const std::string &str() const { return out_; }
    bool complete() const { return !out_.empty() && open_.empty(); }

    // @s as a quoted, escaped JSON string.
    static std::string escape(std::string_view s);

private:
    JsonWriter &number(std::uint64_t n);
    JsonWriter &open(char c);
    JsonWriter &close(char c);
    void before_value();
    void newline();

    std::string out_;
    std::vector<bool> open_; // per open container: true while it is empty
    bool after_key_ = false;
    bool pretty_;
};

} // namespace viaductctl
