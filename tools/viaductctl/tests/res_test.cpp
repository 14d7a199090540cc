// SPDX-License-Identifier: GPL-2.0
// What "stats" and "res" print, and how their arguments parse.
#include <gtest/gtest.h>
#include <sstream>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

#include "args.hpp"
#include "res.hpp"

using namespace viaductctl;

namespace {

Owner owner() {
    return {4, 123, "foo", "vd0"};
}

Stats sample_stats() {
    Stats st;
    st.global = {{"contexts", 2}, {"pds", 1}, {"pinned_pages", 16}, {"worker_polls", 7}};
    st.contexts.push_back({owner(), {{"pds", 1}, {"pinned_pages", 16}, {"doorbells", 3}}});
    st.contexts.push_back({{5, 0, "", ""}, {{"pds", 0}, {"pinned_pages", 0}, {"doorbells", 0}}});
    return st;
}

std::vector<ResInfo> sample_res() {
    ResInfo pd;
    pd.type = VIADUCT_RES_PD;
    pd.owner = owner();
    pd.handle = 1;
    pd.pdn = 9;

    ResInfo mr;
    mr.type = VIADUCT_RES_MR;
    mr.owner = owner();
    mr.handle = 2;
    mr.pd = 1;
    mr.pdn = 9;
    mr.length = 65536;
    mr.pinned_pages = 16;
    mr.access = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_READ;

    ResInfo cq;
    cq.type = VIADUCT_RES_CQ;
    cq.owner = owner();
    cq.handle = 3;
    cq.cqe = 64;

    ResInfo qp;
    qp.type = VIADUCT_RES_QP;
    qp.owner = owner();
    qp.handle = 4;
    qp.pd = 1;
    qp.pdn = 9;
    qp.qpn = 5;
    qp.state = VIADUCT_QPS_IDLE;
    qp.qp_flags = VIADUCT_QP_F_POLLED;
    qp.sq_depth = 16;
    qp.rq_depth = 16;
    qp.send_cq = 3;
    qp.recv_cq = 3;
    return {pd, mr, cq, qp};
}

std::string stats(const Stats &st, OutputStyle s) {
    std::ostringstream out;
    print_stats(out, st, s);
    return out.str();
}

std::string res(const std::vector<ResInfo> &r, OutputStyle s) {
    std::ostringstream out;
    print_res(out, r, s);
    return out.str();
}

Command parse(std::initializer_list<const char *> words) {
    return parse_args(std::vector<std::string>(words.begin(), words.end()));
}

} // namespace

TEST(Res, Names) {
    EXPECT_EQ("qp", res_type_name(VIADUCT_RES_QP));
    EXPECT_EQ("res", res_type_name(99));
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_RES_MR), res_type_from_name("mr"));
    EXPECT_EQ("srq", res_type_name(VIADUCT_RES_SRQ));
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_RES_SRQ), res_type_from_name("srq"));
    EXPECT_EQ(0u, res_type_from_name("srqs"));
    EXPECT_EQ("IDLE", qp_state_name(VIADUCT_QPS_IDLE));
    EXPECT_EQ("ERROR", qp_state_name(VIADUCT_QPS_ERROR));
    EXPECT_EQ("17", qp_state_name(17));
    EXPECT_EQ("-", access_names(0));
    EXPECT_EQ("LOCAL_WRITE,REMOTE_WRITE,REMOTE_READ,MW_BIND", access_names(VIADUCT_ACCESS_ALL));
    EXPECT_EQ("REMOTE_READ,0x100", access_names(VIADUCT_ACCESS_REMOTE_READ | 0x100));
}

TEST(Res, Text) {
    EXPECT_EQ("pd vd0 pid 123 comm foo ctx 4 handle 1 pdn 9\n"
              "mr vd0 pid 123 comm foo ctx 4 handle 2 pd 1 length 65536 pinned 16 "
              "access LOCAL_WRITE,REMOTE_READ\n"
              "cq vd0 pid 123 comm foo ctx 4 handle 3 cqe 64\n"
              "qp vd0 pid 123 comm foo ctx 4 handle 4 lqpn 5 state IDLE sq 16 rq 16 "
              "doorbell polled pd 1 scq 3 rcq 3\n",
              res(sample_res(), {}));
    EXPECT_EQ("", res({}, {}));
}

TEST(Res, TextStagAndSyscallDoorbell) {
    auto r = sample_res();
    r[1].stag = 0x1234;
    r[3].qp_flags = 0;
    r[3].send_cq.reset();
    std::string out = res(r, {});
    EXPECT_NE(std::string::npos, out.find("access LOCAL_WRITE,REMOTE_READ stag 0x1234\n"));
    EXPECT_NE(std::string::npos, out.find("doorbell syscall pd 1 rcq 3\n"));
}

TEST(Res, SrqAndQpOnIt) {
    ResInfo srq;
    srq.type = VIADUCT_RES_SRQ;
    srq.owner = owner();
    srq.handle = 6;
    srq.pd = 1;
    srq.pdn = 9;
    srq.rq_depth = 128;
    srq.srq_limit = 10;
    srq.srq_qps = 2;
    auto r = sample_res();
    r[3].srq = 6;
    r[3].rq_depth = 0;
    r.push_back(srq);
    std::string out = res(r, {});
    EXPECT_NE(std::string::npos, out.find("sq 16 rq 0 doorbell polled pd 1 scq 3 rcq 3 srq 6\n"));
    EXPECT_NE(std::string::npos,
              out.find("srq vd0 pid 123 comm foo ctx 4 handle 6 wr 128 limit 10 qps 2 pd 1\n"));
    std::string json = res({srq}, {true, false});
    EXPECT_NE(std::string::npos, json.find(R"("type":"srq")"));
    EXPECT_NE(std::string::npos, json.find(R"("max_wr":128,"limit":10,"qps":2,"pd":1})"));
}

TEST(Res, Json) {
    auto r = sample_res();
    EXPECT_EQ(R"([{"type":"pd","ifname":"vd0","pid":123,"comm":"foo","ctxn":4,"handle":1,"pdn":9},)"
              R"({"type":"mr","ifname":"vd0","pid":123,"comm":"foo","ctxn":4,"handle":2,"pd":1,)"
              R"("length":65536,"pinned_pages":16,"access":"LOCAL_WRITE,REMOTE_READ"},)"
              R"({"type":"cq","ifname":"vd0","pid":123,"comm":"foo","ctxn":4,"handle":3,"cqe":64},)"
              R"({"type":"qp","ifname":"vd0","pid":123,"comm":"foo","ctxn":4,"handle":4,"lqpn":5,)"
              R"("state":"IDLE","sq_depth":16,"rq_depth":16,"doorbell":"polled","pd":1,)"
              R"("send_cq":3,"recv_cq":3}])"
              "\n",
              res(r, {true, false}));
    EXPECT_EQ("[]\n", res({}, {true, false}));
}

TEST(Stats, Text) {
    EXPECT_EQ("global contexts 2 pds 1 pinned_pages 16 worker_polls 7\n"
              "ctx 4 dev vd0 pid 123 comm foo pds 1 pinned_pages 16 doorbells 3\n"
              "ctx 5 dev - pid 0 comm - pds 0 pinned_pages 0 doorbells 0\n",
              stats(sample_stats(), {}));
}

TEST(Stats, JsonGlobalFirst) {
    std::string out = stats(sample_stats(), {true, false});
    EXPECT_EQ(R"({"global":{"contexts":2,"pds":1,"pinned_pages":16,"worker_polls":7},)"
              R"("contexts":[{"ctxn":4,"ifname":"vd0","pid":123,"comm":"foo","pds":1,)"
              R"("pinned_pages":16,"doorbells":3},)"
              R"({"ctxn":5,"ifname":"","pid":0,"comm":"","pds":0,"pinned_pages":0,"doorbells":0}]})"
              "\n",
              out);
    // Scripts take the first "pinned_pages" for the module-wide number.
    EXPECT_LT(out.find("\"pinned_pages\":16"), out.find("\"contexts\":["));
    Stats empty;
    EXPECT_EQ(R"({"global":{},"contexts":[]})"
              "\n",
              stats(empty, {true, false}));
}

TEST(Args, StatsAndRes) {
    EXPECT_EQ(Command::Kind::Stats, parse({"stats"}).kind);
    EXPECT_TRUE(parse({"stats", "--json"}).json);
    EXPECT_EQ(Command::Kind::Stats, parse({"-j", "stats", "show"}).kind);
    EXPECT_THROW(parse({"stats", "vd0"}), UsageError);

    auto c = parse({"res"});
    EXPECT_EQ(Command::Kind::Res, c.kind);
    EXPECT_EQ(0u, c.res_type);
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_RES_QP), parse({"res", "show", "qp"}).res_type);
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_RES_MR), parse({"res", "mr", "-j"}).res_type);
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_RES_SRQ), parse({"res", "srq"}).res_type);
    EXPECT_THROW(parse({"res", "srqs"}), UsageError);
    EXPECT_THROW(parse({"res", "qp", "cq"}), UsageError);
}

TEST(Res, Filters) {
    auto r = sample_res();
    auto count = [&r](std::vector<viaductctl::ResFilter> f) {
        std::size_t n = 0;
        for (const auto &x : r)
            n += viaductctl::res_matches(x, f);
        return n;
    };
    EXPECT_EQ(4u, count({}));
    EXPECT_EQ(4u, count({{"pid", "123"}}));
    EXPECT_EQ(0u, count({{"pid", "124"}}));
    EXPECT_EQ(4u, count({{"ifname", "vd0"}, {"comm", "foo"}, {"ctxn", "4"}}));
    EXPECT_EQ(0u, count({{"ifname", "vd0"}, {"comm", "bar"}}));
    EXPECT_EQ(1u, count({{"lqpn", "5"}})) << "only the QP has a QPN";
    EXPECT_EQ(0u, count({{"lqpn", "6"}}));
    EXPECT_EQ(1u, count({{"handle", "2"}}));
    EXPECT_EQ(0u, count({{"pid", "0123"}})) << "decimal as printed, not a pattern";
}
