// SPDX-License-Identifier: GPL-2.0
#include "json.hpp"

#include <cstdio>

namespace viaductctl {

namespace {

// Length of the well-formed UTF-8 sequence at @s[i] (overlong forms,
// surrogates and code points past U+10FFFF are not), or 0 if there is none;
// then @bad is the length of the ill-formed part to replace with a single
// U+FFFD: the lead byte and the continuation bytes that fit it, as Unicode
// recommends.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::size_t &bad) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xbf; // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        bad = 1;
        return 0;
    }
    for (std::size_t k = 1; k < len; ++k) {
        bool fits = i + k < s.size() && byte(i + k) >= (k == 1 ? lo : 0x80) &&
                    byte(i + k) <= (k == 1 ? hi : 0xbf);
        if (!fits) {
            bad = k;
            return 0;
        }
    }
    return len;
}

} // namespace

std::string JsonWriter::escape(std::string_view s) {
    std::string r = "\"";
    for (std::size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            std::size_t bad = 0;
            if (std::size_t len = utf8_sequence(s, i, bad)) {
                r.append(s, i, len);
                i += len;
            } else {
                r += "\\ufffd";
                i += bad;
            }
            continue;
        }
        ++i;
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
            if (c < 0x20 || c == 0x7f) {
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
    out_.append(open_.size() * 2, ' ');
}

void JsonWriter::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!open_.empty()) {
        if (!open_.back())
            out_ += ',';
        open_.back() = false;
        newline();
    }
}

JsonWriter &JsonWriter::open(char c) {
    before_value();
    out_ += c;
    open_.push_back(true);
    return *this;
}

JsonWriter &JsonWriter::close(char c) {
    bool empty = open_.back();
    open_.pop_back();
    if (!empty)
        newline();
    out_ += c;
    return *this;
}

JsonWriter &JsonWriter::begin_object() {
    return open('{');
}

JsonWriter &JsonWriter::end_object() {
    return close('}');
}

JsonWriter &JsonWriter::begin_array() {
    return open('[');
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

JsonWriter &JsonWriter::number(std::uint64_t n) {
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
