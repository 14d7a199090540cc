// SPDX-License-Identifier: GPL-2.0
// How viaductctl prints devices: text in the manner of rdma(8), or JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "json.hpp"
#include "link.hpp"

namespace viaductctl {

struct OutputStyle {
    bool json = false;
    bool pretty = false;
};

// One print path for text and JSON, after iproute2's print_*(PRINT_ANY,
// ...): every field is given once, with its JSON key and its text label,
// and the style decides which form comes out. Text is one line per record,
// fields separated by blanks; JSON an array (or object) of objects.
class Printer {
public:
    Printer(std::ostream &out, OutputStyle style);
    ~Printer();
    Printer(const Printer &) = delete;
    Printer &operator=(const Printer &) = delete;

    // The document's outer container: a JSON array or object; nothing in
    // text.
    void begin_list();
    void end_list();
    void begin_top_object();
    void end_top_object();

    // A record: a JSON object (under @key inside an object), a text line.
    void begin_record(const char *key = nullptr);
    void end_record();

    // A field in both forms: JSON "key": value; text "label value", or the
    // value alone for an empty label, followed by @suffix.
    void any(const char *key, const char *label, std::uint64_t v, const char *suffix = "");
    void any(const char *key, const char *label, const std::string &v, const char *suffix = "");
    // A field whose text form differs from its JSON value ("-" for "").
    void any(const char *key, const char *label, const std::string &json_value,
             const std::string &text_value);
    // One form only.
    void json(const char *key, std::uint64_t v);
    void json(const char *key, const std::string &v);
    void text(const std::string &s);
    // Text: end the line and start an indented one ("    ").
    void text_newline();

    // A JSON array or object under @key, of values (text: nothing).
    void begin_json_array(const char *key);
    void end_json_array();
    void json_value(const std::string &v);
    void begin_json_object(const char *key);
    void end_json_object();

    bool json_mode() const { return style_.json; }

private:
    void text_word(const std::string &w);

    std::ostream &out_;
    OutputStyle style_;
    JsonWriter j_;
    std::string line_;
};

// ACTIVE (up, with carrier), NO_CARRIER (up, without) or DOWN.
std::string link_state(const LinkInfo &l);

// "link show": one line or JSON object per device, name, index, state, netdev.
void print_links(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style);

// "dev show": everything LINK_GET reports, addresses and limits included.
void print_devices(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style);

} // namespace viaductctl
