// Unit tests of host/dist without other processes: environment parsing, bucket planning, and the
// DDP reducer driven by a fake Comm that behaves like N ranks holding identical gradients.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "host/dist/bucket_plan.hpp"
#include "host/dist/comm.hpp"
#include "host/dist/ddp_reducer.hpp"
#include "host/dist/dp_layout.hpp"
#include "host/dist/rank_env.hpp"
#include "host/util/error.hpp"

using namespace lrhost::dist;

namespace {

// all_reduce(SUM) of `ranks` identical contributions = ranks x value; counts launches.
class FakeComm final : public Comm {
 public:
  explicit FakeComm(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  std::string backend_name() const override { return "fake"; }
  std::shared_ptr<CommWork> all_reduce_async(torch::Tensor& t, ReduceOp) override {
    check_collective("all_reduce");
    t.mul_(ranks_);
    ++launches;
    struct Done final : CommWork {
      void wait() override {}
    };
    return std::make_shared<Done>();
  }
  void broadcast(torch::Tensor&, int) override {}
  std::shared_ptr<CommWork> all_gather_into_async(torch::Tensor&, const torch::Tensor&) override {
    throw std::logic_error("FakeComm has no all_gather");
  }
  void reduce_scatter_into(torch::Tensor&, const torch::Tensor&) override {}
  std::shared_ptr<Comm> new_group(const std::string&, const std::vector<int>&) override {
    throw std::logic_error("FakeComm has no groups");
  }
  void barrier() override {}
  int launches = 0;

 private:
  int ranks_;
};

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("rank environment: defaults, torchrun variables, and errors naming the variable") {
  auto single = rank_env_from_environment();
  CHECK(single.single_process());
  CHECK(single.rank == 0);
  {
    EnvVar a("WORLD_SIZE", "4"), b("RANK", "3"), c("LOCAL_WORLD_SIZE", "2"), d("MASTER_PORT", "29500");
    auto env = rank_env_from_environment();
    CHECK(env.world_size == 4);
    CHECK(env.local_rank == 1);
    CHECK(env.node_rank == 1);
    CHECK_FALSE(env.single_node());
    CHECK_FALSE(env.store_hosted);
  }
  {
    EnvVar a("WORLD_SIZE", "2"), b("RANK", "2"), c("MASTER_PORT", "1");
    CHECK_THROWS_WITH_AS(rank_env_from_environment(), "RANK=2 is not below WORLD_SIZE=2", lrhost::util::ConfigError);
  }
  {
    EnvVar a("WORLD_SIZE", "2");
    CHECK_THROWS_AS(rank_env_from_environment(), lrhost::util::ConfigError);  // no MASTER_PORT
  }
  {
    EnvVar a("WORLD_SIZE", "two");
    CHECK_THROWS_WITH_AS(rank_env_from_environment(),
                         "environment variable WORLD_SIZE='two' is not a valid integer >= 1",
                         lrhost::util::ConfigError);
  }
}

TEST_CASE("buckets follow reverse parameter order with a small first bucket") {
  // 4 float params of 100, 100, 100, 1000 elements (400/400/400/4000 bytes).
  std::vector<torch::Tensor> params{torch::zeros({100}), torch::zeros({100}), torch::zeros({100}),
                                    torch::zeros({1000})};
  auto buckets = plan_buckets(params, BucketCaps{500, 1000});
  // reverse: p3 (4000 B) alone exceeds the first cap -> bucket 0 = {3}; then {2, 1} (800 B <= 1000); {0}
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0] == std::vector<std::size_t>{3});
  CHECK(buckets[1] == std::vector<std::size_t>{2, 1});
  CHECK(buckets[2] == std::vector<std::size_t>{0});
  // dtypes never mix
  std::vector<torch::Tensor> mixed{torch::zeros({2}), torch::zeros({2}, torch::kFloat64)};
  CHECK(plan_buckets(mixed, BucketCaps{}).size() == 2);
}

TEST_CASE("the reducer averages gradients, overlaps with backward, and leaves unused parameters alone") {
  torch::manual_seed(0);
  auto w1 = torch::randn({64, 64}, torch::requires_grad());
  auto w2 = torch::randn({64, 64}, torch::requires_grad());
  auto unused = torch::randn({8}, torch::requires_grad());
  auto comm = std::make_shared<FakeComm>(4);
  // Buckets follow reverse order: {w2}, {w1}, {unused}. (An unused parameter in an early bucket
  // would hold back every later launch until the end of backward: buckets launch strictly in order.)
  DdpReducer reducer({unused, w1, w2}, comm, BucketCaps{64 * 64 * 4, 64 * 64 * 4});
  CHECK(reducer.buckets().size() == 3);

  auto x = torch::randn({3, 64});
  auto loss = x.matmul(w1).relu().matmul(w2).sum();
  loss.backward();
  // Reference gradients without the reducer.
  auto w1_ref = w1.detach().clone().requires_grad_(true), w2_ref = w2.detach().clone().requires_grad_(true);
  x.matmul(w1_ref).relu().matmul(w2_ref).sum().backward();
  // Four identical "ranks": the average equals the local gradient.
  CHECK(torch::allclose(w1.grad(), w1_ref.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(w2.grad(), w2_ref.grad(), 1e-5, 1e-6));
  CHECK_FALSE(unused.grad().defined());  // no rank produced one: stays None
  CHECK(comm->launches == 3);            // every bucket, including the unused one, took part once
  auto stats = reducer.stats();
  CHECK(stats.synced_steps == 1);
  CHECK(stats.last_launched_during_backward == 2);  // w2 and w1 launched before backward ended

  // No sync during accumulation micro-steps: no traffic, gradients accumulate locally.
  reducer.set_sync(false);
  x.matmul(w1).relu().matmul(w2).sum().backward();
  CHECK(comm->launches == 3);
  CHECK(torch::allclose(w2.grad(), 2 * w2_ref.grad(), 1e-5, 1e-6));
}

TEST_CASE("dp layout: dp_shard x dp_replicate must be every rank, named as the recipe gave them") {
  CHECK_NOTHROW(check_dp_layout(4, 2, 8));
  CHECK_NOTHROW(check_dp_layout(1, 3, 3));
  CHECK_THROWS_WITH_AS(check_dp_layout(2, 1, 3),
                       doctest::Contains("dp_shard (2) x dp_replicate (1) must equal the number of ranks (3)"),
                       lrhost::util::ConfigError);
  CHECK_THROWS_AS(check_dp_layout(0, 3, 0), lrhost::util::ConfigError);
  CHECK_THROWS_AS(check_dp_layout(3, 0, 0), lrhost::util::ConfigError);
  // The resolved values fail, the given ones are named: -1 stays -1 in the message.
  CHECK_THROWS_WITH_AS(check_dp_layout(1, 3, 4, 1, -1), doctest::Contains("dp_shard (1) x dp_replicate (-1)"),
                       lrhost::util::ConfigError);
}

TEST_CASE("all_reduce mean: each rank divides by the rank count before the sum; floating point only") {
  auto values = torch::tensor({2.0, 6.0});
  prepare_all_reduce(values, ReduceOp::mean, 4);
  CHECK(torch::equal(values, torch::tensor({0.5, 1.5})));
  auto summed = torch::tensor({2.0, 6.0});
  prepare_all_reduce(summed, ReduceOp::sum, 4);  // sum, max and min leave the input alone
  CHECK(torch::equal(summed, torch::tensor({2.0, 6.0})));
  auto counts = torch::tensor({3}, torch::kLong);
  CHECK_THROWS_WITH_AS(prepare_all_reduce(counts, ReduceOp::mean, 2),
                       doctest::Contains("all_reduce 'mean' needs a floating-point tensor"), lrhost::util::ConfigError);
  // One process: the mean of one rank is the value.
  auto local = make_local_comm();
  auto one = torch::tensor({5.0});
  local->all_reduce(one, ReduceOp::mean);
  CHECK(one.item<double>() == 5.0);
  CHECK(std::string(kReduceOpNames.name(ReduceOp::mean)) == "mean");
  CHECK(kReduceOpNames.find("avg") == std::nullopt);
}
