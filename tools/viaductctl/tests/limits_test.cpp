// SPDX-License-Identifier: GPL-2.0
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "limits.hpp"

using namespace viaductctl;

namespace {

// A directory of parameter files, as /sys/module/viaduct/parameters.
struct ParamDir {
    std::string path;
    ParamDir() {
        char tmpl[] = "/tmp/viaductctl-limits-XXXXXX";
        const char *p = mkdtemp(tmpl);
        if (!p)
            throw std::runtime_error("mkdtemp");
        path = p;
    }
    ~ParamDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    void put(const std::string &name, const std::string &v) const {
        std::ofstream(path + "/" + name) << v << '\n';
    }
};

} // namespace

TEST(Limits, ReadsEveryLimitInOrder) {
    ParamDir d;
    d.put("ctx_max_pd", "3");
    d.put("ctx_max_mr", "4");
    d.put("ctx_max_cq", "5");
    d.put("ctx_max_qp", "6");
    d.put("ctx_max_srq", "7");
    d.put("ctx_max_mw", "8");
    d.put("rx_stall_ms", "60000");
    d.put("cm_channel_events", "4096");
    const auto l = read_limits(d.path);
    ASSERT_EQ(8u, l.size());
    EXPECT_EQ("ctx_max_pd", l[0].first);
    EXPECT_EQ(3u, l[0].second);
    EXPECT_EQ("ctx_max_qp", l[3].first);
    EXPECT_EQ(6u, l[3].second);
    EXPECT_EQ("ctx_max_srq", l[4].first);
    EXPECT_EQ(7u, l[4].second);
    EXPECT_EQ("ctx_max_mw", l[5].first);
    EXPECT_EQ(8u, l[5].second);
    EXPECT_EQ("cm_channel_events", l[7].first);
    EXPECT_EQ(4096u, l[7].second);

    std::ostringstream text, json;
    print_limits(text, l, {});
    EXPECT_EQ("limits ctx_max_pd 3 ctx_max_mr 4 ctx_max_cq 5 ctx_max_qp 6 ctx_max_srq 7 "
              "ctx_max_mw 8 rx_stall_ms 60000 cm_channel_events 4096\n",
              text.str());
    print_limits(json, l, {true, false});
    EXPECT_NE(std::string::npos, json.str().find("\"limits\":{\"ctx_max_pd\":3,"));
}

TEST(Limits, MissingModuleIsAClearError) {
    ParamDir d;
    d.put("ctx_max_pd", "3");
    try {
        read_limits(d.path);
        FAIL() << "no error";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string::npos, std::string(e.what()).find("ctx_max_mr"));
        EXPECT_NE(std::string::npos, std::string(e.what()).find("module loaded"));
    }
}

TEST(Limits, GarbageIsAnError) {
    ParamDir d;
    for (const char *n : {"ctx_max_pd", "ctx_max_mr", "ctx_max_cq", "ctx_max_qp", "ctx_max_srq",
                          "ctx_max_mw", "rx_stall_ms", "cm_channel_events"})
        d.put(n, "12");
    d.put("ctx_max_cq", "many");
    EXPECT_THROW(read_limits(d.path), std::runtime_error);
}
