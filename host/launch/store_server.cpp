// TCPStore hosting. The c10d header stays in this file only (pimpl), so the rest of the launcher
// compiles without the distributed headers. On a single node the listening socket is bound here, to
// the loopback address, and handed to the store: TCPStore itself listens on every interface, which
// would expose a single-node job's rendezvous to the network.
#include "host/launch/store_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <cstring>

#include "host/util/error.hpp"

namespace lrhost::launch {

namespace {

// A listening TCP socket on 127.0.0.1:port (0: any free port). Throws util::IoError.
int listen_on_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw util::IoError(std::string("could not create the store's socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, SOMAXCONN) != 0) {
    int error = errno;
    close(fd);
    throw util::IoError(
        "could not listen on 127.0.0.1:" + std::to_string(port) + " for the rendezvous store: " + std::strerror(error),
        port == 0 ? "check that the loopback interface is up"
                  : "is another job using --master-port " + std::to_string(port) +
                        "? choose another port, or leave it at 0 for a free one");
  }
  return fd;
}

}  // namespace

struct StoreServer::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

StoreServer::StoreServer(const std::string& host, int port, std::chrono::seconds timeout)
    : impl_(std::make_unique<Impl>()) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;  // ranks connect later, after the launcher has started them
  options.numWorkers = std::nullopt;
  options.timeout = timeout;
  if (host == "127.0.0.1") options.masterListenFd = listen_on_loopback(port);  // the store owns it from here
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& error) {
    std::string what = error.what();
    throw util::IoError("could not start the rendezvous store on " + host + ":" + std::to_string(port) + ": " +
                            what.substr(0, what.find('\n')),
                        port == 0 ? std::string("check that the loopback interface is up")
                                  : "is another job using --master-port " + std::to_string(port) +
                                        "? choose another port, or 0 for a free one (single node)");
  }
}

StoreServer::~StoreServer() = default;

int StoreServer::port() const {
  return impl_->store->getPort();
}

}  // namespace lrhost::launch
