// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "args.hpp"

using viaductctl::Command;
using viaductctl::parse_args;
using viaductctl::UsageError;
using viaductctl::valid_device_name;
using Kind = Command::Kind;

namespace {

Command parse(std::initializer_list<const char *> words) {
    return parse_args(std::vector<std::string>(words.begin(), words.end()));
}

// The message of the UsageError that parsing @words throws.
std::string usage_error(std::initializer_list<const char *> words) {
    try {
        parse(words);
    } catch (const UsageError &e) {
        return e.what();
    }
    ADD_FAILURE() << "parsed without error";
    return {};
}

} // namespace

TEST(Args, LinkAdd) {
    auto c = parse({"link", "add", "vd0", "netdev", "eth0"});
    EXPECT_EQ(Kind::LinkAdd, c.kind);
    EXPECT_EQ("vd0", c.name);
    EXPECT_EQ("eth0", c.netdev);
    EXPECT_FALSE(c.json);
}

TEST(Args, LinkDelAndShow) {
    auto c = parse({"link", "del", "vd0"});
    EXPECT_EQ(Kind::LinkDel, c.kind);
    EXPECT_EQ("vd0", c.name);
    EXPECT_EQ(Kind::LinkDel, parse({"link", "delete", "vd0"}).kind);

    c = parse({"link"});
    EXPECT_EQ(Kind::LinkShow, c.kind);
    EXPECT_TRUE(c.name.empty());
    c = parse({"link", "show"});
    EXPECT_EQ(Kind::LinkShow, c.kind);
    EXPECT_TRUE(c.name.empty());
    c = parse({"-j", "link", "show", "vd1"});
    EXPECT_EQ(Kind::LinkShow, c.kind);
    EXPECT_TRUE(c.json);
    EXPECT_EQ("vd1", c.name);
    EXPECT_EQ(Kind::LinkShow, parse({"link", "list"}).kind);
}

TEST(Args, Dev) {
    EXPECT_EQ(Kind::DevShow, parse({"dev"}).kind);
    EXPECT_TRUE(parse({"dev"}).name.empty());
    EXPECT_TRUE(parse({"dev", "show"}).name.empty());
    EXPECT_EQ("vd0", parse({"dev", "vd0"}).name);
    EXPECT_EQ("vd0", parse({"device", "show", "vd0"}).name);
}

TEST(Args, OptionsAnywhereAndCombined) {
    auto c = parse({"dev", "show", "vd0", "--json", "-p"});
    EXPECT_EQ("vd0", c.name);
    EXPECT_TRUE(c.json);
    EXPECT_TRUE(c.pretty);
    c = parse({"-jp", "dev"});
    EXPECT_TRUE(c.json);
    EXPECT_TRUE(c.pretty);
    c = parse({"-p", "dev"}); // -p only shapes JSON; it does not ask for it
    EXPECT_FALSE(c.json);
    EXPECT_TRUE(c.pretty);
}

TEST(Args, HelpAndVersion) {
    EXPECT_EQ(Kind::Help, parse({"-h"}).kind);
    EXPECT_EQ(Kind::Help, parse({"--help"}).kind);
    EXPECT_EQ(Kind::Help, parse({"help"}).kind);
    EXPECT_EQ(Kind::Help, parse({"link", "add", "-h"}).kind); // help wins over a bad command
    EXPECT_EQ(Kind::Version, parse({"-V"}).kind);
    EXPECT_EQ(Kind::Version, parse({"--version"}).kind);
}

TEST(Args, RejectsBadCommandLines) {
    EXPECT_THROW(parse({}), UsageError);
    EXPECT_THROW(parse({"link", "add"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "netdev"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "dev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "netdev", "eth0", "extra"}), UsageError);
    EXPECT_THROW(parse({"link", "del"}), UsageError);
    EXPECT_THROW(parse({"link", "del", "vd0", "vd1"}), UsageError);
    EXPECT_THROW(parse({"link", "show", "vd0", "vd1"}), UsageError);
    EXPECT_THROW(parse({"dev", "show", "a", "b"}), UsageError);
    EXPECT_THROW(parse({"dev", "a", "b"}), UsageError);
}

TEST(Args, ErrorMessagesNameTheProblem) {
    EXPECT_EQ("unknown option '--bogus'", usage_error({"--bogus", "link"}));
    EXPECT_EQ("unknown option '-x'", usage_error({"-jx", "link"}));
    EXPECT_EQ("unknown object 'qp': link, dev, stats or res", usage_error({"qp"}));
    EXPECT_EQ("unknown link command 'frob': add, del or show", usage_error({"link", "frob"}));
    EXPECT_EQ("missing OBJECT: link, dev, stats or res", usage_error({"-j"}));
    EXPECT_EQ("usage: viaductctl link add NAME netdev IFNAME",
              usage_error({"link", "add", "vd0", "eth0"}));
    EXPECT_NE(std::string::npos,
              usage_error({"link", "add", "bad/name", "netdev", "eth0"}).find("'bad/name'"));
}

TEST(Args, ValidatesNames) {
    EXPECT_THROW(parse({"link", "add", "bad/name", "netdev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "waytoolongdevicename", "netdev", "eth0"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "netdev", "a/b"}), UsageError);
    EXPECT_THROW(parse({"link", "add", "vd0", "netdev", "0123456789abcdef"}), UsageError);
    EXPECT_THROW(parse({"link", "del", "a b"}), UsageError);
    EXPECT_THROW(parse({"dev", "show", "x:y"}), UsageError);
    EXPECT_NO_THROW(parse({"link", "add", "vd0", "netdev", "0123456789abcde"}));
}

TEST(Args, DeviceNames) {
    EXPECT_TRUE(valid_device_name("vd0"));
    EXPECT_TRUE(valid_device_name("a.b-c_D9"));
    EXPECT_TRUE(valid_device_name(std::string(15, 'x')));
    EXPECT_FALSE(valid_device_name(std::string(16, 'x')));
    EXPECT_FALSE(valid_device_name(""));
    EXPECT_FALSE(valid_device_name("a b"));
    EXPECT_FALSE(valid_device_name("vd\xc3\xa9"));
    EXPECT_FALSE(valid_device_name(std::string("vd\0", 3)));
}
