// TCPStore hosting. The c10d header stays in this file only (pimpl), so the rest of the launcher
// compiles without the distributed headers.
#include "host/launch/store_server.hpp"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "host/util/error.hpp"

namespace lrhost::launch {

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

int StoreServer::port() const { return impl_->store->getPort(); }

}  // namespace lrhost::launch
