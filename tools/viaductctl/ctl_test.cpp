// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "args.hpp"
#include "json.hpp"

using namespace viaductctl;
using Kind = Command::Kind;

namespace {
Command parse(std::initializer_list<const char *> words) {
    std::vector<std::string> v(words.begin(), words.end());
    return parse_args(v);
}
} // namespace

TEST(Json, EscapesStrings) {
    EXPECT_EQ("\"a\\\"b\\\\c\\n\\u0001\"", JsonWriter::escape("a\"b\\c\n\x01"));
    EXPECT_EQ("\"\"", JsonWriter::escape(""));
}

TEST(Json, NestsAndSeparates) {
    JsonWriter j;
    j.begin_array();
    j.begin_object().field("name", "vd0").field("n", std::uint64_t{3});
    j.key("addrs").begin_array().value("a").value("b").end_array();
    j.key("empty").begin_object().end_object();
    j.end_object();
    j.begin_object().field("ok", true).end_object();
    j.end_array();
    EXPECT_EQ(R"([{"name":"vd0","n":3,"addrs":["a","b"],"empty":{}},{"ok":true}])", j.str());
}

TEST(Json, PrettyPrints) {
    JsonWriter j(true);
    j.begin_object().field("a", std::uint64_t{1}).end_object();
    EXPECT_EQ("{\n  \"a\": 1\n}", j.str());
}

TEST(Args, LinkCommands) {
    auto c = parse({"link", "add", "vd0", "netdev", "eth0"});
    EXPECT_EQ(Kind::LinkAdd, c.kind);
    EXPECT_EQ("vd0", c.name);
    EXPECT_EQ("eth0", c.netdev);
    c = parse({"link", "del", "vd0"});
    EXPECT_EQ(Kind::LinkDel, c.kind);
    c = parse({"link"});
    EXPECT_EQ(Kind::LinkShow, c.kind);
    EXPECT_TRUE(c.name.empty());
    c = parse({"-j", "link", "show", "vd1"});
    EXPECT_EQ(Kind::LinkShow, c.kind);
    EXPECT_TRUE(c.json);
    EXPECT_EQ("vd1", c.name);
}

TEST(Args, DevCommands) {
    EXPECT_EQ(Kind::DevShow, parse({"dev"}).kind);
    EXPECT_EQ("vd0", parse({"dev", "vd0"}).name);
    auto c = parse({"dev", "show", "vd0", "--json", "-p"});
    EXPECT_EQ("vd0", c.name);
    EXPECT_TRUE(c.json);
    EXPECT_TRUE(c.pretty);
    EXPECT_EQ(Kind::Help, parse({"-h"}).kind);
    EXPECT_EQ(Kind::Version, parse({"-V"}).kind);
}

TEST(Args, Rejects) {
    EXPECT_THROW(parse({}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "dev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "bad/name", "netdev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "waytoolongdevicename", "netdev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "frob"}), UsageError);
    EXPECT_THROW(parse({"qp"}), UsageError);
    EXPECT_THROW(parse({"--bogus", "link"}), UsageError);
    EXPECT_THROW(parse({"dev", "a", "b"}), UsageError);
}

TEST(Args, DeviceNames) {
    EXPECT_TRUE(valid_device_name("vd0"));
    EXPECT_TRUE(valid_device_name("a.b-c_d"));
    EXPECT_TRUE(valid_device_name(std::string(15, 'x')));
    EXPECT_FALSE(valid_device_name(std::string(16, 'x')));
    EXPECT_FALSE(valid_device_name(""));
    EXPECT_FALSE(valid_device_name("a b"));
}
