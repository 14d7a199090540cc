// SPDX-License-Identifier: GPL-2.0
//
// The IT-API face without a device: handles, consumer contexts, byte
// order, names.
#include <cstring>

#include <gtest/gtest.h>

#include "internal.hpp"

namespace {

using itapi::HandleTable;

// A PZ-typed object that needs no device, for the handle table.
struct FakeZone : itapi::Object {
    static constexpr itapi::Kind kind = itapi::Kind::Pz;
    FakeZone() : Object(kind, nullptr) {}
};

TEST(Handles, StaleAndForgedHandlesAreRefused) {
    auto &table = HandleTable::instance();
    FakeZone a;
    it_handle_t h = table.insert(&a);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(table.find(h), &a);
    EXPECT_EQ(itapi::lookup<FakeZone>(h), &a);
    it_handle_type_enum_t type{};
    ASSERT_EQ(it_get_handle_type(h, &type), IT_SUCCESS);
    EXPECT_EQ(type, IT_HANDLE_TYPE_PZ);

    table.erase(h);
    EXPECT_EQ(table.find(h), nullptr);
    EXPECT_EQ(it_get_handle_type(h, &type), IT_ERR_INVALID_HANDLE);

    // the slot is reused under another generation: the old handle stays dead
    FakeZone b;
    it_handle_t h2 = table.insert(&b);
    ASSERT_NE(h2, nullptr);
    EXPECT_NE(h2, h);
    EXPECT_EQ(table.find(h), nullptr);
    EXPECT_EQ(table.find(h2), &b);
    table.erase(h2);

    // pointers that were never handles
    int x = 0;
    EXPECT_EQ(table.find(&x), nullptr);
    EXPECT_EQ(table.find(nullptr), nullptr);
    EXPECT_EQ(table.find(reinterpret_cast<it_handle_t>(~std::uintptr_t{0})), nullptr);
}

TEST(Handles, ConsumerContext) {
    FakeZone a;
    it_handle_t h = HandleTable::instance().insert(&a);
    it_context_t ctx{};
    EXPECT_EQ(it_get_consumer_context(h, &ctx), IT_ERR_NO_CONTEXT);
    it_context_t set{};
    set.index = 0x1234567890abcdefULL;
    ASSERT_EQ(it_set_consumer_context(h, set), IT_SUCCESS);
    ASSERT_EQ(it_get_consumer_context(h, &ctx), IT_SUCCESS);
    EXPECT_EQ(ctx.index, set.index);
    HandleTable::instance().erase(h);
    EXPECT_EQ(it_set_consumer_context(h, set), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_get_consumer_context(h, &ctx), IT_ERR_INVALID_HANDLE);
}

TEST(ByteOrder, Hton64) {
    std::uint64_t v = it_hton64(0x0102030405060708ULL);
    unsigned char bytes[8];
    std::memcpy(bytes, &v, 8);
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(bytes[i], i + 1);
    EXPECT_EQ(it_ntoh64(v), 0x0102030405060708ULL);
}

TEST(Names, Statuses) {
    EXPECT_STREQ(viaduct_it_status_str(IT_SUCCESS), "IT_SUCCESS");
    EXPECT_STREQ(viaduct_it_status_str(IT_ERR_TOO_MANY_POSTS), "IT_ERR_TOO_MANY_POSTS");
    EXPECT_STREQ(viaduct_it_status_str(IT_ERR_EP_TIMEWAIT), "IT_ERR_EP_TIMEWAIT");
    EXPECT_STREQ(viaduct_it_status_str(static_cast<it_status_t>(IT_ERR_RESOURCE_IOBL_LENGTH + 1)),
                 "unknown");
    EXPECT_STREQ(viaduct_it_event_str(IT_CM_MSG_CONN_BROKEN_EVENT), "IT_CM_MSG_CONN_BROKEN_EVENT");
    EXPECT_STREQ(viaduct_it_event_str(IT_RMR_LINK_CMPL_EVENT), "IT_RMR_LINK_CMPL_EVENT");
    EXPECT_STREQ(viaduct_it_dto_status_str(IT_DTO_ERR_FLUSHED), "IT_DTO_ERR_FLUSHED");
}

} // namespace
