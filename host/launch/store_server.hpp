// The rendezvous store of a launched job: a c10d TCPStore server that node 0's launcher hosts for
// the job's lifetime, so every rank (rank 0 included) connects to it as a client. Binding port 0
// lets the kernel pick a free port, which is how two jobs on one host never collide.
#pragma once
#include <chrono>
#include <memory>
#include <string>

namespace lrhost::launch {

class StoreServer {
 public:
  // Starts the server on `port` (0: any free port). `host` is the address its own client uses.
  // Throws util::IoError naming the port when it cannot bind.
  StoreServer(const std::string& host, int port, std::chrono::seconds timeout);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrhost::launch
