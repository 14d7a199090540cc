// SPDX-License-Identifier: GPL-2.0
//
// The connection side of libviaduct-itapi (Documentation/itapi.rst,
// "Connection management"): listen points, connection establishment
// requests (cn_est_id), the native connection of each EP, and the
// translation of the core's CM events into IT-API CM_REQ and CM_MSG events.
//
// Each IA has one viaduct::CmChannel, read by the IA's progress thread
// (Ia::add_source()). An EP's connection is one viaduct::ConnectionId;
// a listen point is one listening ConnectionId, kept alive while requests
// it delivered are unanswered (it_listen_free leaves them valid).
//
// Locks, outermost first: Ia::lock, IaCm::lock, Ep::lock, Evd::lock. The
// progress thread handles one CM event at a time under IaCm::lock, so an
// EP or listen point that is being freed (which takes IaCm::lock to
// unregister) is never used half freed. The process-wide table of
// connection requests (cn_est_id) has a lock of its own, taken alone.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "internal.hpp"

namespace itapi {

struct NativeListener;

// A listen point (it_listen_create).
struct Listen : Object {
    static constexpr Kind kind = Kind::Listen;
    Listen(Ia *owner) : Object(kind, owner) {}
    ~Listen() override;

    std::shared_ptr<NativeListener> native;
};

// What a listening ConnectionId delivers to: its listen point while that
// exists. Requests it delivered hold it, so the native listener (and its
// port) lives until the last of them is answered.
struct NativeListener {
    viaduct::ConnectionId id;
    Listen *listen = nullptr; // null once the listen point was freed
    Evd *evd = nullptr;
    std::size_t spigot_id = 0;
    it_listen_flags_t flags = IT_LISTEN_NO_FLAG;
    it_conn_qual_t qual{};

    explicit NativeListener(const viaduct::CmChannel &ch) : id(ch) {}
};

// An EP's connection.
struct EpCm {
    std::optional<viaduct::ConnectionId> id; // the native connection
    bool passive = false;                    // accepted (or converted as initiator)
    bool tdi = false;                        // it_socket_convert
    bool suppress_ird_ord = false;
    bool closing = false; // it_ep_disconnect closed it gracefully; the FIN exchange runs
    std::uint32_t peer_ird = 0, peer_ord = 0; // passive: the initiator's
    std::vector<unsigned char> request_pdata; // passive: the request's
};

// One IA's connection side.
struct IaCm {
    explicit IaCm(Ia &owner);
    ~IaCm();

    Ia &ia;
    viaduct::CmChannel channel;
    std::mutex lock;
    // Native id handle -> what it is about.
    std::unordered_map<std::uint32_t, Ep *> conns;
    std::unordered_map<std::uint32_t, std::weak_ptr<NativeListener>> listeners;
    std::vector<Listen *> listens; // live listen points, for it_handoff
    // Requests a full CM_REQ SEVD discarded, by native handle: unanswered
    // until their initiator gives up.
    std::unordered_map<std::uint32_t, viaduct::ConnectionId> discarded;
    // Connections of freed EPs still closing gracefully, kept until the
    // close is done so the peer sees a disconnect rather than a reset.
    std::unordered_map<std::uint32_t, viaduct::ConnectionId> closing;
    bool registered = false; // with the progress thread

    // The progress thread's handler: every event queued on the channel.
    void drain() noexcept;
};

// The IA's connection side, made on first use; nullptr with @err set if it
// cannot be made (no memory, no descriptor).
IaCm *ia_cm(Ia &ia, it_status_t &err) noexcept;

// The EP's connection state, made on first use.
EpCm &ep_cm(Ep &ep);

// For it_ep_free: the connection (established or being set up) is
// aborted and the EP forgotten by the connection side.
void cm_ep_free(Ep &ep) noexcept;

// For it_ia_free, before the IA's objects are freed: listen points,
// unanswered requests and connections of the IA go.
void cm_ia_free(Ia &ia) noexcept;

// The reject reason code of a failed establishment (the core's negative
// errno), as the document's iWARP table (it_cm_msg_events) maps connect(2)
// errors.
it_conn_reject_code_t reject_code_of(int status) noexcept;

} // namespace itapi
