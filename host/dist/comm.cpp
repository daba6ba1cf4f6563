// The single-process Comm and the process-wide Comm instance.
#include "host/dist/comm.hpp"

#include <spdlog/spdlog.h>

#include <mutex>

#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

struct Done final : CommWork {
  void wait() override {}
};

}  // namespace

void prepare_all_reduce(torch::Tensor& tensor, ReduceOp op, int ranks) {
  if (op != ReduceOp::mean) return;
  if (!tensor.is_floating_point())
    throw util::ConfigError(std::string("all_reduce 'mean' needs a floating-point tensor, got ") +
                            c10::toString(tensor.scalar_type()));
  if (ranks > 1) tensor.div_(ranks);
}

namespace {

// World size 1: every collective is an identity, no rendezvous needed.
class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend_name() const override { return "local"; }

  std::shared_ptr<CommWork> all_reduce_async(torch::Tensor& tensor, ReduceOp op) override {
    check_collective("all_reduce");
    prepare_all_reduce(tensor, op, 1);
    return std::make_shared<Done>();
  }
  void broadcast(torch::Tensor&, int root) override {
    check_collective("broadcast");
    if (root != 0)
      throw util::ConfigError("broadcast root " + std::to_string(root) + " does not exist in a 1-rank job");
  }
  std::shared_ptr<CommWork> all_gather_into_async(torch::Tensor& out, const torch::Tensor& in) override {
    check_collective("all_gather");
    out.view(-1).copy_(in.reshape(-1));
    return std::make_shared<Done>();
  }
  void reduce_scatter_into(torch::Tensor& out, const torch::Tensor& in) override {
    check_collective("reduce_scatter");
    out.view(-1).copy_(in.reshape(-1));
  }
  void barrier() override { check_collective("barrier"); }
  std::shared_ptr<Comm> new_group(const std::string&, const std::vector<int>& ranks) override {
    if (ranks != std::vector<int>{0}) throw util::ConfigError("a 1-rank job has only rank 0 to group");
    return std::make_shared<LocalComm>();
  }
};

}  // namespace

std::shared_ptr<Comm> make_local_comm() {
  return std::make_shared<LocalComm>();
}

namespace {
std::mutex process_comm_mutex;
std::shared_ptr<Comm> process_comm_instance;
c10::DeviceType process_comm_device = c10::DeviceType::CPU;
}  // namespace

std::shared_ptr<Comm> process_comm(const RankEnv& env, const torch::Device& device) {
  const c10::DeviceType device_type = device.type();
  auto& mutex = process_comm_mutex;
  auto& instance = process_comm_instance;
  auto& instance_device = process_comm_device;
  std::lock_guard<std::mutex> lock(mutex);
  if (instance) {
    if (instance_device != device_type)
      throw util::ConfigError("this process already communicates on " + c10::DeviceTypeName(instance_device) +
                              "; a second accelerator on " + c10::DeviceTypeName(device_type) + " is not supported");
    return instance;
  }
  instance = env.single_process() ? std::make_shared<LocalComm>() : make_c10d_comm(env, device);
  instance_device = device_type;
  return instance;
}

void shutdown_process_comm() {
  std::shared_ptr<Comm> instance;
  {
    std::lock_guard<std::mutex> lock(process_comm_mutex);
    instance.swap(process_comm_instance);
  }
  if (!instance) return;
  instance->shutdown();
  if (instance.use_count() > 1)
    spdlog::warn("process group: still referenced at shutdown ({} holders); it is torn down at exit",
                 instance.use_count() - 1);
}

}  // namespace lrhost::dist
