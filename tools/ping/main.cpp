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
// serves one client and ends when it disconnects, or with -P serves one
// client after another until it is killed.
//
// With -I (source address) or -t (type of service) the connection is made
// on a TCP socket of the program's own, bound and marked as asked, and
// handed to the connection manager (ConnectionId::convert_socket()); the
// connection manager's own listen and connect have neither option.
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <iostream>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
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
    std::string source; // -I
    std::string device;
    bool persistent = false; // -P
    std::optional<int> tos;  // -t
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
    os << "usage: viaduct-ping -s [-vVdP] [-S size] [-C count] [-a addr] [-p port] [-t tos]\n"
          "                   [-D dev]\n"
          "       viaduct-ping -c [-vVd] [-S size] [-C count] -a addr [-I addr] [-p port]\n"
          "                   [-t tos] [-D dev]\n"
          "\n"
          "A ping over viaduct that speaks rdma-core's rping protocol: either side may be\n"
          "rping on another iWARP device. Each ping is a Send of the client's buffer\n"
          "address, an RDMA Read of it by the server, and an RDMA Write of it back.\n"
          "\n"
          "  -s, --server          server side (serves one client, or more with -P)\n"
          "  -c, --client          client side\n"
          "  -a, --addr=ADDR       server: address to listen on (default: every address of\n"
          "                        the device); client: the server's; a name or a number\n"
          "  -I, --source=ADDR     client: the local address to connect from\n"
          "  -p, --port=PORT       TCP port (default 7174, as rping)\n"
          "  -P, --persistent      server: serve clients one after another until killed\n"
          "  -t, --tos=TOS         IP type of service (0 to 255) of the connection\n"
          "  -S, --size=SIZE       ping data size, "
       << min_size << " to " << max_size
       << " (default 64)\n"
          "  -C, --count=COUNT     number of pings (default 0: until interrupted)\n"
          "  -v, --verbose         print the ping data\n"
          "  -V, --validate        check that the data came back unchanged\n"
          "  -d, --debug           print each step\n"
          "  -D, --device=DEV      the viaduct device (default: the one the address belongs\n"
          "                        to or the route leaves through)\n"
          "      --mpa-v1          MPA revision 1 (no IRD/ORD exchange)\n"
          "      --crc             ask for the MPA CRC\n"
          "  -h, --help            this text\n"
          "\n"
          "Exit status: 0 on success, 1 on a failed connection or ping, 2 on bad usage.\n";
}

[[noreturn]] void bad_usage(const std::string &why) {
    std::cerr << "viaduct-ping: " << why << "\n";
    std::cerr << "Try 'viaduct-ping --help' for more information.\n";
    std::exit(2);
}

// A number in [lo, hi]: decimal ("010" is ten, never octal), or hex with
// 0x.
template <class T> T number(const char *text, const char *what, T lo, T hi) {
    T v{};
    const char *end = text + std::strlen(text);
    const bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X') && text[2];
    auto r = std::from_chars(text + (hex ? 2 : 0), end, v, hex ? 16 : 10);
    if (r.ec != std::errc() || r.ptr != end || v < lo || v > hi)
        bad_usage(std::string("invalid ") + what + " '" + text + "' (" + std::to_string(lo) +
                  " to " + std::to_string(hi) + ")");
    return v;
}

// The option getopt_long() refused: the short one in optopt, else the
// long one as written.
std::string option_name(const char *arg) {
    if (optopt > 0 && optopt < 256)
        return std::string("-") + static_cast<char>(optopt);
    std::string a = arg;
    return a.substr(0, a.find('='));
}

Options parse(int argc, char **argv) {
    enum { opt_mpa_v1 = 256, opt_crc };
    static const option longs[] = {
        {"server", no_argument, nullptr, 's'},
        {"client", no_argument, nullptr, 'c'},
        {"addr", required_argument, nullptr, 'a'},
        {"source", required_argument, nullptr, 'I'},
        {"port", required_argument, nullptr, 'p'},
        {"persistent", no_argument, nullptr, 'P'},
        {"tos", required_argument, nullptr, 't'},
        {"size", required_argument, nullptr, 'S'},
        {"count", required_argument, nullptr, 'C'},
        {"verbose", no_argument, nullptr, 'v'},
        {"validate", no_argument, nullptr, 'V'},
        {"debug", no_argument, nullptr, 'd'},
        {"device", required_argument, nullptr, 'D'},
        {"mpa-v1", no_argument, nullptr, opt_mpa_v1},
        {"crc", no_argument, nullptr, opt_crc},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    Options o;
    opterr = 0;
    int c;
    while ((c = ::getopt_long(argc, argv, ":sca:I:p:Pt:S:C:vVdD:h", longs, nullptr)) != -1) {
        switch (c) {
        case 's':
            o.server = true;
            break;
        case 'c':
            o.client = true;
            break;
        case 'a':
            o.address = optarg;
            break;
        case 'I':
            o.source = optarg;
            break;
        case 'p':
            o.port = number<std::uint16_t>(optarg, "port", 1, 65535);
            break;
        case 'P':
            o.persistent = true;
            break;
        case 't':
            o.tos = number<int>(optarg, "type of service", 0, 255);
            break;
        case 'S':
            o.size = number<std::size_t>(optarg, "size", min_size, max_size);
            break;
        case 'C':
            o.count = number<long>(optarg, "count", 0, INT32_MAX);
            break;
        case 'v':
            o.verbose = true;
            break;
        case 'V':
            o.validate = true;
            break;
        case 'd':
            o.debug = true;
            break;
        case 'D':
            o.device = optarg;
            break;
        case opt_mpa_v1:
            o.mpa_v1 = true;
            break;
        case opt_crc:
            o.crc = true;
            break;
        case 'h':
            usage(std::cout);
            std::exit(0);
        case ':':
            bad_usage("option '" + option_name(argv[optind - 1]) + "' needs an argument");
        default:
            bad_usage("unknown option '" + option_name(argv[optind - 1]) + "'");
        }
    }
    if (optind < argc)
        bad_usage(std::string("unexpected argument '") + argv[optind] + "'");
    if (o.server == o.client)
        bad_usage("give exactly one of -s and -c");
    if (o.client && o.address.empty())
        bad_usage("the client needs the server's address (-a)");
    if (o.server && !o.source.empty())
        bad_usage("-I is the client's source address; the server listens on -a");
    if (o.client && o.persistent)
        bad_usage("-P is for the server");
    return o;
}

// @name (a host name or an address) as a numeric address, by getaddrinfo();
// of @family if it is not AF_UNSPEC.
std::string resolve(const std::string &name, int family = AF_UNSPEC) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (int err = ::getaddrinfo(name.c_str(), nullptr, &hints, &res))
        throw std::runtime_error("cannot resolve '" + name + "': " + ::gai_strerror(err));
    char host[NI_MAXHOST] = {};
    int err = ::getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof(host), nullptr, 0,
                            NI_NUMERICHOST);
    ::freeaddrinfo(res);
    if (err)
        throw std::runtime_error("cannot resolve '" + name + "': " + ::gai_strerror(err));
    return host;
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

// A context on a device and its CM channel: the server's listener and each
// connection it accepts share one.
struct Context {
    explicit Context(const std::string &dev_name) : dev(Device::open(dev_name)), cm(dev) {}
    Device dev;
    CmChannel cm;
};

// One end of a connection and its buffers.
class Endpoint {
public:
    Endpoint(std::shared_ptr<Context> ctx, const Options &o)
        : opt_(o), ctx_(std::move(ctx)), dev_(ctx_->dev), pd_(dev_), comp_(dev_),
          cq_(dev_, 64, &comp_), cm_(ctx_->cm), qp_(pd_, qp_config()), ctl_(2 * advert_size),
          rdma_(o.size), start_(o.size), ctl_mr_(pd_, std::span(ctl_), access::local_write),
          rdma_mr_(pd_, std::span(rdma_), access::local_write | access::remote_write),
          start_mr_(pd_, std::span(start_), access::remote_read) {}

    std::shared_ptr<Context> context() { return ctx_; }
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
            // A persistent server may still hear of the last client.
            if (want == CmEventType::ConnectRequest)
                continue;
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
    std::shared_ptr<Context> ctx_;
    const Device &dev_;
    ProtectionDomain pd_;
    CompletionChannel comp_;
    CompletionQueue cq_;
    CmChannel &cm_;
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
std::vector<std::string> candidates(const Options &o, const std::string &address) {
    if (!o.device.empty())
        return {o.device};
    std::vector<std::string> first, rest;
    for (const DeviceEntry &e : Device::list()) {
        bool has = false;
        Device dev = Device::open(e.name);
        for (const Address &a : dev.attributes().addresses)
            has = has || a.address == address;
        (has ? first : rest).push_back(e.name);
    }
    if (first.empty() && rest.empty())
        throw Error(ENODEV, "no viaduct device in this network namespace "
                            "(see 'viaductctl link show')");
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
}

// A socket descriptor, closed with the object.
class Socket {
public:
    explicit Socket(int fd) : fd_(fd) {}
    Socket(Socket &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Socket &operator=(Socket &&) = delete;
    ~Socket() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    int fd() const { return fd_; }
    // After a conversion the kernel closed the descriptor: forget it.
    void release() noexcept { fd_ = -1; }

private:
    int fd_;
};

[[noreturn]] void sys_error(const std::string &step) {
    throw std::runtime_error("cannot " + step + ": " + std::strerror(errno));
}

// @address (numeric) and @port as a socket address.
sockaddr_storage socket_address(const std::string &address, std::uint16_t port, socklen_t *len) {
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    const std::string service = std::to_string(port);
    if (int err = ::getaddrinfo(address.empty() ? nullptr : address.c_str(), service.c_str(),
                                &hints, &res))
        throw std::runtime_error("bad address '" + address + "': " + ::gai_strerror(err));
    sockaddr_storage ss{};
    std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    ::freeaddrinfo(res);
    return ss;
}

Socket tcp_socket(int family, const Options &o) {
    Socket s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.fd() < 0)
        sys_error("create a TCP socket");
    if (o.tos) {
        int tos = *o.tos;
        int r = family == AF_INET6
                    ? ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
                    : ::setsockopt(s.fd(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
        if (r < 0)
            sys_error("set the type of service " + std::to_string(tos));
    }
    return s;
}

// The client's own connection, for -I and -t: bound to the source
// address, marked with the TOS, connected to the server.
Socket connect_socket(const Options &o) {
    socklen_t dlen = 0;
    sockaddr_storage dst = socket_address(o.address, o.port, &dlen);
    Socket s = tcp_socket(dst.ss_family, o);
    if (!o.source.empty()) {
        socklen_t slen = 0;
        sockaddr_storage src = socket_address(o.source, 0, &slen);
        if (::bind(s.fd(), reinterpret_cast<sockaddr *>(&src), slen) < 0)
            sys_error("bind to the source address " + o.source);
    }
    if (::connect(s.fd(), reinterpret_cast<sockaddr *>(&dst), dlen) < 0)
        sys_error("connect to " + o.address + " port " + std::to_string(o.port));
    return s;
}

// The server's own listening socket, for -t: accepted connections inherit
// its type of service.
Socket listen_socket(const Options &o) {
    socklen_t len = 0;
    sockaddr_storage ss = socket_address(o.address.empty() ? "::" : o.address, o.port, &len);
    Socket s = tcp_socket(ss.ss_family, o);
    int one = 1;
    if (::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
        sys_error("set SO_REUSEADDR");
    if (::bind(s.fd(), reinterpret_cast<sockaddr *>(&ss), len) < 0 || ::listen(s.fd(), 8) < 0)
        sys_error("listen on port " + std::to_string(o.port));
    return s;
}

// Serves one connected client until it disconnects.
void serve(Endpoint &ep, const Options &o) {
    try {
        for (;;) {
            Advert src = ep.receive();
            if (src.length > o.size)
                throw std::runtime_error("the client's buffer of " + std::to_string(src.length) +
                                         " bytes is larger than -S " + std::to_string(o.size) +
                                         ": give both sides the same -S");
            ep.rdma(SendOp::RdmaRead, src, src.length);
            if (o.verbose)
                std::cout << "server ping data: " << as_text(ep.rdma_buf()) << std::endl;
            ep.send(nullptr);

            Advert sink = ep.receive();
            auto len = static_cast<std::uint32_t>(as_text(ep.rdma_buf()).size() + 1);
            if (len > sink.length)
                throw std::runtime_error("the client's sink of " + std::to_string(sink.length) +
                                         " bytes is too small");
            ep.rdma(SendOp::RdmaWrite, sink, len);
            ep.send(nullptr);
        }
    } catch (const Disconnected &) {
        ep.debug("the client disconnected");
    }
}

int run_server(const Options &o) {
    std::shared_ptr<Context> ctx;
    std::optional<ConnectionId> listener;
    std::optional<Socket> lsock;
    if (o.tos) {
        lsock.emplace(listen_socket(o));
        ctx = std::make_shared<Context>(candidates(o, o.address).front());
    } else {
        Error last(ENODEV, "no device");
        for (const std::string &name : candidates(o, o.address)) {
            try {
                ctx = std::make_shared<Context>(name);
                listener.emplace(ctx->cm);
                std::uint16_t port = listener->listen(o.address, o.port);
                if (o.debug)
                    std::cerr << "viaduct-ping: listening on " << name << " port " << port << "\n";
                break;
            } catch (const Error &e) {
                listener.reset();
                ctx.reset();
                last = e;
                if (e.errnum() != EADDRNOTAVAIL)
                    throw;
            }
        }
        if (!ctx)
            throw last;
    }

    do {
        Endpoint ep(ctx, o);
        std::optional<ConnectionId> conn;
        std::optional<Socket> sock;
        if (lsock) {
            sock.emplace(::accept4(lsock->fd(), nullptr, nullptr, SOCK_CLOEXEC));
            if (sock->fd() < 0)
                sys_error("accept a connection");
            conn.emplace(ctx->cm);
            ep.post_recv();
            conn->convert_socket(sock->fd(), ep.qp(), false, ep.connection_options());
            sock->release();
        } else {
            CmEvent req = ep.expect(CmEventType::ConnectRequest);
            ep.debug("connection from " + req.peer().to_string());
            conn.emplace(req.connection());
            req.ack();
            ep.post_recv();
            conn->accept(ep.qp(), ep.connection_options());
        }
        ep.expect(CmEventType::Established);
        serve(ep, o);
    } while (o.persistent);
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
    std::optional<Socket> sock;
    if (!o.source.empty() || o.tos)
        sock.emplace(connect_socket(o));
    for (const std::string &name : candidates(o, o.source.empty() ? o.address : o.source)) {
        try {
            ep.emplace(std::make_shared<Context>(name), o);
            conn.emplace(ep->channel());
            ep->post_recv();
            if (sock) {
                conn->convert_socket(sock->fd(), ep->qp(), true, ep->connection_options());
                sock->release();
            } else
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
        if (!o.address.empty())
            o.address = resolve(o.address);
        if (!o.source.empty())
            o.source = resolve(o.source);
        return o.server ? run_server(o) : run_client(o);
    } catch (const std::exception &e) {
        std::cerr << "viaduct-ping: " << e.what() << "\n";
        return 1;
    }
}
