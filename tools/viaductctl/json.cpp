// SPDX-License-Identifier: GPL-2.0
#include "json.hpp"

#include <cstdio>

namespace viaductctl {

std::string JsonWriter::escape(std::string_view s) {
    std::string r = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"':
            r += "\\\"";
            break;
        case '\\':
            r += "\\\\";
            break;
        case '\n':
            r += "\\n";
            break;
        case '\t':
            r += "\\t";
            break;
        case '\r':
            r += "\\r";
            break;
        case '\b':
            r += "\\b";
            break;
        case '\f':
            r += "\\f";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                r += buf;
            } else {
                r += static_cast<char>(c);
            }
        }
    }
    return r + "\"";
}

void JsonWriter::newline() {
    if (!pretty_)
        return;
    out_ += '\n';
    out_.append(first_.size() * 2, ' ');
}

void JsonWriter::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back())
            out_ += ',';
        first_.back() = false;
        newline();
    }
}

JsonWriter &JsonWriter::begin_object() {
    before_value();
    out_ += '{';
    first_.push_back(true);
    return *this;
}

JsonWriter &JsonWriter::close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty)
        newline();
    out_ += c;
    return *this;
}

JsonWriter &JsonWriter::end_object() {
    return close('}');
}

JsonWriter &JsonWriter::begin_array() {
    before_value();
    out_ += '[';
    first_.push_back(true);
    return *this;
}

JsonWriter &JsonWriter::end_array() {
    return close(']');
}

JsonWriter &JsonWriter::key(std::string_view k) {
    before_value();
    out_ += escape(k);
    out_ += pretty_ ? ": " : ":";
    after_key_ = true;
    return *this;
}

JsonWriter &JsonWriter::value(std::string_view s) {
    before_value();
    out_ += escape(s);
    return *this;
}

JsonWriter &JsonWriter::value(std::uint64_t n) {
    before_value();
    out_ += std::to_string(n);
    return *this;
}

JsonWriter &JsonWriter::value(bool b) {
    before_value();
    out_ += b ? "true" : "false";
    return *this;
}

} // namespace viaductctl
