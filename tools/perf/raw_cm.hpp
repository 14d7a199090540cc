// SPDX-License-Identifier: GPL-2.0
//
// viaduct-perf's own, private wrapper of the connection manager ioctls
// (Documentation/cm.rst): one CM channel and the ids made on it. Only what
// the tool needs: listen, connect, accept, read and acknowledge events. It
// is not part of libviaduct and is not meant to be used elsewhere.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <uapi/viaduct.h>

namespace perf {

class RawCm {
public:
    explicit RawCm(int dev_fd); // a libviaduct Device's descriptor (not owned)
    ~RawCm();
    RawCm(const RawCm &) = delete;
    RawCm &operator=(const RawCm &) = delete;

    std::uint32_t create_id();
    // Binds @id to @addr:@port (empty @addr: every address) and listens.
    void listen(std::uint32_t id, const std::string &addr, std::uint16_t port);
    void connect(std::uint32_t id, const std::string &addr, std::uint16_t port,
                 std::uint32_t qp_handle, std::span<const std::uint8_t> priv);
    void accept(std::uint32_t id, std::uint32_t qp_handle, std::span<const std::uint8_t> priv);
    void reject(std::uint32_t id, const std::string &why);

    // The next event, acknowledged; nothing after @timeout_ms.
    std::optional<viaduct_cm_event> next_event(int timeout_ms);

private:
    int dev_fd_;
    int ch_ = -1;
};

const char *cm_event_name(std::uint32_t type);
// "192.0.2.1" or "2001:db8::1" into a CM address; Error(EINVAL) if neither.
viaduct_sockaddr parse_address(const std::string &addr, std::uint16_t port);

} // namespace perf
