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

TEST(Args, Limits) {
    EXPECT_EQ(Command::Kind::Limits, parse({"limits"}).kind);
    EXPECT_EQ(Command::Kind::Limits, parse({"lim", "sh"}).kind);
    EXPECT_TRUE(parse({"-j", "limits", "show"}).json);
    // "l" and "li" stay "link", listed first
    EXPECT_EQ(Command::Kind::LinkShow, parse({"li"}).kind);
    Command h = parse({"limits", "help"});
    EXPECT_EQ(Command::Kind::Help, h.kind);
    EXPECT_EQ("limits", h.help_object);
    EXPECT_THROW(parse({"limits", "show", "vd0"}), UsageError);
}

TEST(Args, ErrorMessagesNameTheProblem) {
    EXPECT_EQ("unknown option '--bogus'", usage_error({"--bogus", "link"}));
    EXPECT_EQ("unknown option '-x'", usage_error({"-jx", "link"}));
    EXPECT_EQ("unknown object 'qp': link, dev, stats, res or limits", usage_error({"qp"}));
    EXPECT_EQ("unknown link command 'frob': add, del, show or help", usage_error({"link", "frob"}));
    EXPECT_EQ("missing OBJECT: link, dev, stats, res or limits", usage_error({"-j"}));
    EXPECT_EQ("'eth0' needs a value", usage_error({"link", "add", "vd0", "eth0"}));
    EXPECT_EQ("link add needs 'netdev IFNAME'",
              usage_error({"link", "add", "vd0", "type", "viaduct"}));
    EXPECT_EQ("unknown link type 'siw': viaductctl adds viaduct links (rdma(8) adds siw and rxe)",
              usage_error({"link", "add", "vd0", "type", "siw", "netdev", "eth0"}));
    EXPECT_EQ("unknown filter 'qpx': ifname, pid, comm, ctxn, handle or lqpn",
              usage_error({"res", "qp", "qpx", "1"}));
    EXPECT_EQ("invalid pid '12x': a number", usage_error({"res", "pid", "12x"}));
    EXPECT_EQ("filter pid needs a value", usage_error({"res", "qp", "pid"}));
    EXPECT_EQ("filter lqpn is for qp", usage_error({"res", "mr", "lqpn", "3"}));
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

// rdma(8)'s grammar: "type viaduct", abbreviations, per-object help, -d.
TEST(Args, Rdma8Conventions) {
    auto c = parse({"link", "add", "vd0", "type", "viaduct", "netdev", "eth0"});
    EXPECT_EQ(Kind::LinkAdd, c.kind);
    EXPECT_EQ("vd0", c.name);
    EXPECT_EQ("eth0", c.netdev);
    c = parse({"l", "a", "vd1", "t", "viaduct", "n", "eth1"});
    EXPECT_EQ(Kind::LinkAdd, c.kind);
    EXPECT_EQ("eth1", c.netdev);
    EXPECT_EQ("eth0", parse({"link", "add", "vd0", "netdev", "eth0", "type", "viaduct"}).netdev);

    EXPECT_EQ(Kind::DevShow, parse({"dev", "sh"}).kind);
    EXPECT_EQ("vd0", parse({"d", "sh", "vd0"}).name);
    EXPECT_EQ(Kind::LinkShow, parse({"li", "s"}).kind);
    EXPECT_EQ(Kind::LinkDel, parse({"link", "d", "vd0"}).kind);
    EXPECT_EQ(Kind::Stats, parse({"stat", "sh"}).kind);
    EXPECT_EQ(Kind::Res, parse({"r"}).kind);

    for (const char *object : {"link", "dev", "stats", "res"}) {
        c = parse({object, "help"});
        EXPECT_EQ(Kind::Help, c.kind) << object;
        EXPECT_EQ(object, c.help_object);
        EXPECT_NE(std::string::npos, viaductctl::usage_of(object).find(object));
    }
    EXPECT_EQ(std::string::npos, viaductctl::usage_of("dev").find("link add"));
    EXPECT_NE(std::string::npos, viaductctl::usage_of("").find("link add NAME type viaduct"));

    c = parse({"-d", "link", "show"});
    EXPECT_TRUE(c.details);
    EXPECT_TRUE(parse({"link", "--details"}).details);
    c = parse({"-jpd", "dev"});
    EXPECT_TRUE(c.json && c.pretty && c.details);
}

TEST(Args, ResTypeAndFilters) {
    auto c = parse({"res", "show", "qp", "pid", "123", "lqpn", "5", "link", "vd0"});
    EXPECT_EQ(Kind::Res, c.kind);
    EXPECT_EQ(4u, c.res_type); // VIADUCT_RES_QP
    ASSERT_EQ(3u, c.filters.size());
    EXPECT_EQ("pid", c.filters[0].key);
    EXPECT_EQ("123", c.filters[0].value);
    EXPECT_EQ("lqpn", c.filters[1].key);
    EXPECT_EQ("ifname", c.filters[2].key);
    EXPECT_EQ("vd0", c.filters[2].value);
    c = parse({"res", "comm", "res_holder"});
    EXPECT_EQ(0u, c.res_type);
    ASSERT_EQ(1u, c.filters.size());
    EXPECT_EQ("comm", c.filters[0].key);
}
