// SPDX-License-Identifier: GPL-2.0
//
// viaduct-ping: a ping over a viaduct connection, speaking the protocol of
// rdma-core's rping, so that either side may be rping on siw (or any iWARP
// RNIC) and the other viaduct-ping.
//
// The protocol. The control message is 16 bytes, big-endian: the address of
// a buffer (8), its STag (4) and its length (4). For each ping the client
//  1. fills its source buffer with "rdma-ping-N: " and letters, NUL-ended,
//     and Sends the buffer's address, STag and length;
//  2. the server RDMA Reads that many bytes into its own buffer and Sends
//     16 bytes back (the go-ahead);
//  3. the client Sends the address, STag and length of its sink buffer;
//  4. the server RDMA Writes the string it read (up to its NUL) into it,
//     and Sends the go-ahead again;
//  5. the client compares source and sink (-V) and starts over.
// Each side keeps one receive posted and posts it again as soon as a
// message has arrived. The client disconnects after -C pings; the server
// serves one client and ends when it disconnects.
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <vector>

#include <viaduct/viaduct.hpp>

using namespace std::chrono_literals;
using namespace viaduct;

namespace {

constexpr std::uint16_t default_port = 7174;
constexpr const char *msg_fmt = "rdma-ping-%d: ";
// Room for the prefix with the largest count and a NUL, as rping's minimum.
constexpr std::size_t min_size = sizeof("2147483647") + sizeof("rdma-ping-%d: ");
constexpr std::size_t max_size = 64 * 1024 - 1;

struct Options {
    bool server = false;
    bool client = false;
    std::string address;
    std::string device;
    std::uint16_t port = default_port;
    std::size_t size = 64;
    long count = 0; // 0: for ever
    bool verbose = false;
    bool validate = false;
    bool debug = false;
    bool mpa_v1 = false;
    bool crc = false;
};

void usage(std::ostream &os) {
    os << "usage: viaduct-ping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-D dev]\n"
          "       viaduct-ping -c [-vVd] [-S size] [-C count] -a addr [-p port] [-D dev]\n"
          "\n"
          "A ping over viaduct that speaks rdma-core's rping protocol: either side may be\n"
          "rping on another iWARP device. Each ping is a Send of the client's buffer\n"
          "address, an RDMA Read of it by the server, and an RDMA Write of it back.\n"
          "\n"
          "  -s         server side (serves one client)\n"
          "  -c         client side\n"
          "  -a addr    server: address to listen on (default: every address of the\n"
          "             device); client: the server's address\n"
          "  -p port    TCP port (default 7174, as rping)\n"
          "  -S size    ping data size, "
       << min_size << " to " << max_size
       << " (default 64)\n"
          "  -C count   number of pings (default 0: until interrupted)\n"
          "  -v         print the ping data\n"
          "  -V         check that the data came back unchanged\n"
          "  -d         print each step\n"
          "  -D dev     the viaduct device (default: the one the address belongs to or\n"
          "             the route leaves through)\n"
          "  --mpa-v1   MPA revision 1 (no IRD/ORD exchange)\n"
          "  --crc      ask for the MPA CRC\n"
          "  -h, --help this text\n";
}

[[noreturn]] void bad_usage(const std::string &why) {
    std::cerr << "viaduct-ping: " << why << "\n";
    usage(std::cerr);
    std::exit(2);
}

template <class T> T number(const char *text, const char *what, T lo, T hi) {
    T v{};
    const char *end = text + std::strlen(text);
    auto r = std::from_chars(text, end, v);
    if (r.ec != std::errc() || r.ptr != end || v < lo || v > hi)
        bad_usage(std::string("invalid ") + what + " '" + text + "' (" + std::to_string(lo) +
                  " to " + std::to_string(hi) + ")");
    return v;
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto arg = [&]() -> const char * {
            if (i + 1 >= argc)
                bad_usage("option " + a + " needs an argument");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(std::cout);
            std::exit(0);
        } else if (a == "-s") {
            o.server = true;
        } else if (a == "-c") {
            o.client = true;
        } else if (a == "-a") {
            o.address = arg();
        } else if (a == "-p") {
            o.port = number<std::uint16_t>(arg(), "port", 1, 65535);
        } else if (a == "-S") {
            o.size = number<std::size_t>(arg(), "size", min_size, max_size);
        } else if (a == "-C") {
            o.count = number<long>(arg(), "count", 0, INT32_MAX);
        } else if (a == "-D") {
            o.device = arg();
        } else if (a == "-v") {
            o.verbose = true;
        } else if (a == "-V") {
            o.validate = true;
        } else if (a == "-d") {
            o.debug = true;
        } else if (a == "--mpa-v1") {
            o.mpa_v1 = true;
        } else if (a == "--crc") {
            o.crc = true;
        } else {
            bad_usage("unknown option " + a);
        }
    }
    if (o.server == o.client)
        bad_usage("give exactly one of -s and -c");
    if (o.client && o.address.empty())
        bad_usage("the client needs the server's address (-a)");
    return o;
}

// The 16-byte control message, big-endian as rping sends it.
struct Advert {
    std::uint64_t addr = 0;
    std::uint32_t stag = 0;
    std::uint32_t length = 0;
};
constexpr std::size_t advert_size = 16;

void put_be(std::byte *p, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = static_cast<std::byte>(v & 0xff);
}

std::uint64_t get_be(const std::byte *p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | std::to_integer<std::uint64_t>(p[i]);
    return v;
}

void encode(const Advert &a, std::byte *p) {
    put_be(p, a.addr, 8);
    put_be(p + 8, a.stag, 4);
    put_be(p + 12, a.length, 4);
}

Advert decode(const std::byte *p) {
    return Advert{get_be(p, 8), static_cast<std::uint32_t>(get_be(p + 8, 4)),
                  static_cast<std::uint32_t>(get_be(p + 12, 4))};
}

// The peer went away: not an error for the server.
struct Disconnected {};

// One end of a connection and its buffers.
class Endpoint {
public:
    Endpoint(const std::string &dev_name, const Options &o)
        : opt_(o), dev_(Device::open(dev_name)), pd_(dev_), comp_(dev_), cq_(dev_, 64, &comp_),
          cm_(dev_), qp_(pd_, qp_config()), ctl_(2 * advert_size), rdma_(o.size), start_(o.size),
          ctl_mr_(pd_, std::span(ctl_), access::local_write),
          rdma_mr_(pd_, std::span(rdma_), access::local_write | access::remote_write),
          start_mr_(pd_, std::span(start_), access::remote_read) {}

    Device &device() { return dev_; }
    CmChannel &channel() { return cm_; }
    QueuePair &qp() { return qp_; }

    void post_recv() {
        Sge sge = ctl_mr_.sge(0, advert_size);
        qp_.post_recv(RecvWr{.wr_id = 1, .sge = std::span(&sge, 1)});
    }

    // The next CM event of type @want; Error on any other but Disconnected.
    CmEvent expect(CmEventType want) {
        for (;;) {
            auto ev = cm_.read(-1ms);
            if (!ev)
                continue;
            debug(std::string("CM event: ") + to_string(ev->type()));
            if (ev->type() == want)
                return std::move(*ev);
            if (ev->type() == CmEventType::Disconnected)
                throw Disconnected{};
            throw std::runtime_error(std::string("connection failed: ") + to_string(ev->type()) +
                                     " (" + std::strerror(-ev->status()) + ")");
        }
    }

    // Waits for a completion of @want (successful Send completions on the
    // way are skipped); throws Disconnected once the peer has gone.
    Completion wait(WcOpcode want) {
        std::array<Completion, 1> wc;
        for (;;) {
            std::size_t n = cq_.wait(wc, 200ms);
            if (n == 0) {
                if (auto ev = cm_.read(0ms)) {
                    debug(std::string("CM event: ") + to_string(ev->type()));
                    if (ev->type() == CmEventType::Disconnected)
                        throw Disconnected{};
                }
                continue;
            }
            const Completion &c = wc[0];
            if (c.status == WcStatus::Flushed)
                throw Disconnected{};
            if (!c.ok())
                throw std::runtime_error(std::string("completion of WR ") +
                                         std::to_string(c.wr_id) +
                                         " failed: " + to_string(c.status));
            if (c.opcode == want)
                return c;
            if (c.opcode != WcOpcode::Send)
                throw std::runtime_error("unexpected completion (opcode " +
                                         std::to_string(static_cast<int>(c.opcode)) + ")");
        }
    }

    // Waits for a control message and posts the receive again.
    Advert receive() {
        Completion c = wait(WcOpcode::Recv);
        if (c.byte_len != advert_size)
            throw std::runtime_error("received a bogus message of " + std::to_string(c.byte_len) +
                                     " bytes");
        Advert a = decode(ctl_.data());
        post_recv();
        debug("received addr " + hex(a.addr) + " stag " + hex(a.stag) + " len " +
              std::to_string(a.length));
        return a;
    }

    // Sends a control message naming @mr's buffer, or 16 zero bytes.
    void send(const MemoryRegion *mr) {
        Advert a;
        if (mr)
            a = Advert{mr->addr(), mr->rkey(), static_cast<std::uint32_t>(opt_.size)};
        encode(a, ctl_.data() + advert_size);
        Sge sge = ctl_mr_.sge(advert_size, advert_size);
        qp_.post_send(SendWr{.wr_id = 2, .sge = std::span(&sge, 1)});
    }

    void rdma(SendOp op, const Advert &remote, std::uint32_t length) {
        Sge sge = rdma_mr_.sge(0, length);
        qp_.post_send(SendWr{.wr_id = 3,
                             .opcode = op,
                             .sge = std::span(&sge, 1),
                             .remote_addr = remote.addr,
                             .remote_stag = remote.stag});
        wait(op == SendOp::RdmaRead ? WcOpcode::RdmaRead : WcOpcode::RdmaWrite);
    }

    const MemoryRegion &rdma_mr() const { return rdma_mr_; }
    const MemoryRegion &start_mr() const { return start_mr_; }
    std::vector<std::byte> &rdma_buf() { return rdma_; }
    std::vector<std::byte> &start_buf() { return start_; }

    void debug(const std::string &what) const {
        if (opt_.debug)
            std::cerr << "viaduct-ping: " << what << "\n";
    }

    ConnectionOptions connection_options() const {
        ConnectionOptions c;
        c.mpa_v1 = opt_.mpa_v1;
        c.crc = opt_.crc;
        return c;
    }

private:
    QpConfig qp_config() const {
        QpConfig c;
        c.send_cq = &cq_;
        c.recv_cq = &cq_;
        c.sq_depth = 16;
        c.rq_depth = 4;
        c.access = VIADUCT_QP_ACCESS_REMOTE_READ | VIADUCT_QP_ACCESS_REMOTE_WRITE;
        c.ord = 1;
        c.ird = 1;
        return c;
    }

    static std::string hex(std::uint64_t v) {
        char buf[24];
        std::snprintf(buf, sizeof(buf), "%#llx", static_cast<unsigned long long>(v));
        return buf;
    }

    const Options &opt_;
    Device dev_;
    ProtectionDomain pd_;
    CompletionChannel comp_;
    CompletionQueue cq_;
    CmChannel cm_;
    QueuePair qp_;
    std::vector<std::byte> ctl_; // [0, 16): receive; [16, 32): send
    std::vector<std::byte> rdma_;
    std::vector<std::byte> start_;
    MemoryRegion ctl_mr_, rdma_mr_, start_mr_;
};

std::string as_text(const std::vector<std::byte> &b) {
    const char *p = reinterpret_cast<const char *>(b.data());
    return std::string(p, strnlen(p, b.size()));
}

// The devices to try: -D, or every device in the namespace, those with
// @address first.
std::vector<std::string> candidates(const Options &o) {
    if (!o.device.empty())
        return {o.device};
    std::vector<std::string> first, rest;
    for (const DeviceEntry &e : Device::list()) {
        bool has = false;
        Device dev = Device::open(e.name);
        for (const Address &a : dev.attributes().addresses)
            has = has || a.address == o.address;
        (has ? first : rest).push_back(e.name);
    }
    if (first.empty() && rest.empty())
        throw Error(ENODEV, "no viaduct device in this network namespace "
                            "(see 'viaductctl link show')");
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
}

int run_server(const Options &o) {
    std::optional<Endpoint> ep;
    std::optional<ConnectionId> listener;
    Error last(ENODEV, "no device");
    for (const std::string &name : candidates(o)) {
        try {
            ep.emplace(name, o);
            listener.emplace(ep->channel());
            std::uint16_t port = listener->listen(o.address, o.port);
            ep->debug("listening on " + name + " port " + std::to_string(port));
            break;
        } catch (const Error &e) {
            listener.reset();
            ep.reset();
            last = e;
            if (e.errnum() != EADDRNOTAVAIL)
                throw;
        }
    }
    if (!ep)
        throw last;

    CmEvent req = ep->expect(CmEventType::ConnectRequest);
    ep->debug("connection from " + req.peer().to_string());
    ConnectionId conn = req.connection();
    req.ack();
    ep->post_recv();
    conn.accept(ep->qp(), ep->connection_options());
    ep->expect(CmEventType::Established);

    try {
        for (;;) {
            Advert src = ep->receive();
            if (src.length > o.size)
                throw std::runtime_error("the client's buffer of " + std::to_string(src.length) +
                                         " bytes is larger than -S " + std::to_string(o.size) +
                                         ": give both sides the same -S");
            ep->rdma(SendOp::RdmaRead, src, src.length);
            if (o.verbose)
                std::cout << "server ping data: " << as_text(ep->rdma_buf()) << std::endl;
            ep->send(nullptr);

            Advert sink = ep->receive();
            auto len = static_cast<std::uint32_t>(as_text(ep->rdma_buf()).size() + 1);
            if (len > sink.length)
                throw std::runtime_error("the client's sink of " + std::to_string(sink.length) +
                                         " bytes is too small");
            ep->rdma(SendOp::RdmaWrite, sink, len);
            ep->send(nullptr);
        }
    } catch (const Disconnected &) {
        ep->debug("the client disconnected");
    }
    return 0;
}

void fill(std::vector<std::byte> &buf, int ping, unsigned char &start) {
    char *p = reinterpret_cast<char *>(buf.data());
    int cc = std::snprintf(p, buf.size(), msg_fmt, ping);
    unsigned char c = start;
    for (std::size_t i = static_cast<std::size_t>(cc); i < buf.size(); i++) {
        p[i] = static_cast<char>(c);
        if (++c > 'z')
            c = 'A';
    }
    if (++start > 'z')
        start = 'A';
    p[buf.size() - 1] = 0;
}

int run_client(const Options &o) {
    std::optional<Endpoint> ep;
    std::optional<ConnectionId> conn;
    std::optional<Error> last;
    for (const std::string &name : candidates(o)) {
        try {
            ep.emplace(name, o);
            conn.emplace(ep->channel());
            ep->post_recv();
            conn->connect(ep->qp(), o.address, o.port, ep->connection_options());
            break;
        } catch (const Error &e) {
            conn.reset();
            ep.reset();
            last = e;
            if (e.errnum() != EADDRNOTAVAIL)
                throw;
        }
    }
    if (!ep)
        throw *last;
    ep->expect(CmEventType::Established);
    ep->debug("connected to " + o.address + " port " + std::to_string(o.port));

    int status = 0;
    unsigned char start = 'A';
    try {
        for (long ping = 0; o.count == 0 || ping < o.count; ping++) {
            fill(ep->start_buf(), static_cast<int>(ping), start);
            ep->send(&ep->start_mr());
            ep->receive(); // the server has read it
            std::fill(ep->rdma_buf().begin(), ep->rdma_buf().end(), std::byte{0});
            ep->send(&ep->rdma_mr());
            ep->receive(); // the server has written it back
            if (o.validate && ep->rdma_buf() != ep->start_buf()) {
                std::cerr << "viaduct-ping: data mismatch in ping " << ping << "\n";
                status = 1;
                break;
            }
            if (o.verbose)
                std::cout << "ping data: " << as_text(ep->rdma_buf()) << std::endl;
        }
    } catch (const Disconnected &) {
        std::cerr << "viaduct-ping: the server disconnected\n";
        return 1;
    }
    conn->disconnect();
    ep->expect(CmEventType::Disconnected);
    return status;
}

} // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    try {
        return o.server ? run_server(o) : run_client(o);
    } catch (const std::exception &e) {
        std::cerr << "viaduct-ping: " << e.what() << "\n";
        return 1;
    }
}
