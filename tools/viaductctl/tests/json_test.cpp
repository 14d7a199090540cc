// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "json.hpp"

using viaductctl::JsonWriter;

TEST(Json, EscapesQuotesBackslashesAndControls) {
    EXPECT_EQ(R"("")", JsonWriter::escape(""));
    EXPECT_EQ(R"("plain vd0.eth-1_x")", JsonWriter::escape("plain vd0.eth-1_x"));
    EXPECT_EQ(R"("a\"b\\c")", JsonWriter::escape("a\"b\\c"));
    EXPECT_EQ(R"("\n\t\r\b\f")", JsonWriter::escape("\n\t\r\b\f"));
    EXPECT_EQ(R"("\u0001\u001f\u007f")", JsonWriter::escape("\x01\x1f\x7f"));
    EXPECT_EQ(R"("/")", JsonWriter::escape("/")); // may stay unescaped
    EXPECT_EQ(R"("a\u0000b")", JsonWriter::escape(std::string_view("a\0b", 3)));
}

TEST(Json, KeepsValidUtf8) {
    EXPECT_EQ("\"caf\xc3\xa9\"", JsonWriter::escape("caf\xc3\xa9"));           // 2 bytes
    EXPECT_EQ("\"\xe2\x82\xac\"", JsonWriter::escape("\xe2\x82\xac"));         // 3 bytes
    EXPECT_EQ("\"\xf0\x9f\x9a\x86\"", JsonWriter::escape("\xf0\x9f\x9a\x86")); // 4 bytes
    EXPECT_EQ("\"\xf4\x8f\xbf\xbf\"", JsonWriter::escape("\xf4\x8f\xbf\xbf")); // U+10FFFF
}

TEST(Json, ReplacesInvalidUtf8) {
    EXPECT_EQ(R"("\ufffd")", JsonWriter::escape("\xff"));
    EXPECT_EQ(R"("a\ufffdb")", JsonWriter::escape("a\x80"
                                                  "b"));                      // stray continuation
    EXPECT_EQ(R"("\ufffd\ufffd")", JsonWriter::escape("\xc0\xaf"));           // overlong '/'
    EXPECT_EQ(R"("\ufffd\ufffd\ufffd")", JsonWriter::escape("\xed\xa0\x80")); // surrogate
    EXPECT_EQ(R"("\ufffd")", JsonWriter::escape("\xe2\x82"));                 // truncated
    EXPECT_EQ(R"("\ufffd\ufffd\ufffd\ufffd")",
              JsonWriter::escape("\xf4\x90\x80\x80")); // past U+10FFFF
}

TEST(Json, NestsAndSeparates) {
    JsonWriter j;
    j.begin_array();
    j.begin_object().field("name", "vd0").field("n", std::uint64_t{3});
    j.key("addrs").begin_array().value("a").value("b").end_array();
    j.key("empty").begin_object().end_object();
    j.key("none").begin_array().end_array();
    j.end_object();
    j.begin_object().field("ok", true).field("bad", false).end_object();
    j.end_array();
    EXPECT_TRUE(j.complete());
    EXPECT_EQ(R"([{"name":"vd0","n":3,"addrs":["a","b"],"empty":{},"none":[]},)"
              R"({"ok":true,"bad":false}])",
              j.str());
}

TEST(Json, Numbers) {
    JsonWriter j;
    j.begin_array()
        .value(std::uint8_t{255})
        .value(std::uint32_t{4294967295u})
        .value(std::uint64_t{18446744073709551615ull})
        .value(0u)
        .end_array();
    EXPECT_EQ("[255,4294967295,18446744073709551615,0]", j.str());
}

TEST(Json, EscapesKeys) {
    JsonWriter j;
    j.begin_object().field("a\"b", "x\ny").end_object();
    EXPECT_EQ(R"({"a\"b":"x\ny"})", j.str());
}

TEST(Json, CompleteOnlyWhenClosed) {
    JsonWriter j;
    EXPECT_FALSE(j.complete());
    j.begin_object();
    EXPECT_FALSE(j.complete());
    j.end_object();
    EXPECT_TRUE(j.complete());
}

TEST(Json, PrettyPrints) {
    JsonWriter j(true);
    j.begin_array();
    j.begin_object().field("a", std::uint64_t{1});
    j.key("b").begin_array().value("x").end_array();
    j.key("c").begin_object().end_object();
    j.end_object();
    j.end_array();
    EXPECT_EQ("[\n"
              "  {\n"
              "    \"a\": 1,\n"
              "    \"b\": [\n"
              "      \"x\"\n"
              "    ],\n"
              "    \"c\": {}\n"
              "  }\n"
              "]",
              j.str());
}
