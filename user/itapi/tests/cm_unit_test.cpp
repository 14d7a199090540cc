// SPDX-License-Identifier: GPL-2.0
//
// The connection side without a device: the NONPEER_REJECT reason codes
// of the document's iWARP table, and the answers to handles and
// identifiers that name nothing.
#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cm.hpp"

namespace {

TEST(CmReasons, IwarpTable) {
    // it_cm_msg_events, "iWARP reject_reason_code Mapping"
    EXPECT_EQ(itapi::reject_code_of(-ETIMEDOUT), IT_CN_REJ_TIMEOUT);
    EXPECT_EQ(itapi::reject_code_of(-ENETUNREACH), IT_CN_REJ_BAD_PATH);
    EXPECT_EQ(itapi::reject_code_of(-EADDRNOTAVAIL), IT_CN_REJ_BAD_PATH);
    EXPECT_EQ(itapi::reject_code_of(-ECONNREFUSED), IT_CN_REJ_BAD_PATH);
    EXPECT_EQ(itapi::reject_code_of(-EHOSTUNREACH), IT_CN_REJ_BAD_PATH);
    EXPECT_EQ(itapi::reject_code_of(-EADDRINUSE), IT_CN_REJ_STALE_CONN);
    EXPECT_EQ(itapi::reject_code_of(-ENOMEM), IT_CN_REJ_RESOURCES);
    EXPECT_EQ(itapi::reject_code_of(-ENOBUFS), IT_CN_REJ_RESOURCES);
    EXPECT_EQ(itapi::reject_code_of(-EPROTO), IT_CN_REJ_BAD_CONN_PARMS);
    EXPECT_EQ(itapi::reject_code_of(-ECONNRESET), IT_CN_REJ_OTHER);
    EXPECT_EQ(itapi::reject_code_of(0), IT_CN_REJ_OTHER);
}

TEST(CmCalls, NothingNamed) {
    const unsigned char pd[300] = {};
    it_conn_qual_t q{};
    q.type = IT_IANA_PORT;
    q.conn_qual.port = htons(4000);
    it_path_t path{};
    it_listen_handle_t l = nullptr;
    it_listen_param_t lp{};

    EXPECT_EQ(it_reject(12345678, nullptr, 0), IT_ERR_INVALID_CN_EST_ID);
    EXPECT_EQ(it_reject(12345678, pd, sizeof(pd)), IT_ERR_INVALID_PDATA_LENGTH);
    EXPECT_EQ(it_reject(12345678, nullptr, 4), IT_ERR_INVALID_PDATA_LENGTH);
    EXPECT_EQ(it_handoff(&q, 0, 12345678), IT_ERR_INVALID_CN_EST_ID);
    EXPECT_EQ(it_ep_accept(nullptr, 1, nullptr, 0), IT_ERR_INVALID_EP);
    EXPECT_EQ(it_ep_connect(nullptr, &path, nullptr, &q, IT_CONNECT_FLAG_TWO_WAY, nullptr, 0),
              IT_ERR_INVALID_EP);
    EXPECT_EQ(it_ep_disconnect(nullptr, nullptr, 0), IT_ERR_INVALID_EP);
    EXPECT_EQ(it_ep_reset(nullptr), IT_ERR_INVALID_EP);
    EXPECT_EQ(it_listen_create(nullptr, 0, nullptr, IT_LISTEN_NO_FLAG, &q, &l), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_listen_free(nullptr), IT_ERR_INVALID_LISTEN);
    EXPECT_EQ(it_listen_query(nullptr, IT_LISTEN_PARAM_ALL, &lp), IT_ERR_INVALID_LISTEN);
    // a forged handle is refused like a null one
    auto forged = reinterpret_cast<it_listen_handle_t>(std::uintptr_t{0x1234567});
    EXPECT_EQ(it_listen_free(forged), IT_ERR_INVALID_LISTEN);
}

TEST(CmCalls, SocketConvertWithoutEndpoint) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    EXPECT_EQ(it_socket_convert(sv[0], nullptr, IT_SC_DEFAULT, nullptr, 0), IT_ERR_INVALID_EP);
    close(sv[0]);
    close(sv[1]);
}

} // namespace
