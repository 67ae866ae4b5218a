// Tensor parallelism's CUDA path on one GPU: the NCCL communicator with one rank (its collectives
// on the backend's stream, also captured in a CUDA graph), and a test model whose forward runs
// every collective through it giving exactly the logits of the model without one. Two ranks need
// two GPUs: asking for more than are visible is refused naming the device (with two, engine_gpu_test's
// goldens run at TP 2).
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/make_backend.h"
#include "brisk/engine.h"
#include "core/error.h"
#include "model/llama_model.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

Backend& cuda() {
  static std::unique_ptr<Backend> backend = make_backend("cuda");
  return *backend;
}

std::vector<float> to_host(const Tensor& device) {
  Tensor host(cpu_allocator(), DType::kF32, device.shape());
  cuda().copy(host, device);
  return std::vector<float>(host.data_as<float>(), host.data_as<float>() + host.shape().num_elements());
}

Tensor upload(const std::vector<float>& values, Shape shape) {
  Tensor t(cuda().allocator(), DType::kF32, shape);
  cuda().copy(t, TensorView(const_cast<float*>(values.data()), DType::kF32, shape));
  return t;
}

TEST(NcclCommunicator, OneRankCollectivesKeepTheirValues) {
  auto comms = make_communicators({&cuda()});
  ASSERT_EQ(comms.size(), 1u);
  std::vector<float> values(6 * 5);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 3.0f;
  Tensor x = upload(values, {6, 5});
  comms[0]->all_reduce_sum(x);
  EXPECT_EQ(to_host(x), values);
  for (int64_t rows : {1, 6}) {
    Tensor part = upload(std::vector<float>(values.begin(), values.begin() + rows * 5), {rows, 5});
    Tensor out(cuda().allocator(), DType::kF32, {rows, 5});
    comms[0]->all_gather_columns(part, out);
    EXPECT_EQ(to_host(out), std::vector<float>(values.begin(), values.begin() + rows * 5)) << rows << " rows";
  }
  // Captured in a graph, as the decode graphs capture the model's collectives.
  auto graph = cuda().record_graph([&] { comms[0]->all_reduce_sum(x); });
  ASSERT_NE(graph, nullptr);
  graph->replay();
  EXPECT_EQ(to_host(x), values);
}

TEST(NcclCommunicator, ModelThroughItGivesTheSameLogits) {
  const fs::path dir = testing::test_data_dir() / "models" / "llama-gqa2-hd32-bf16";
  auto comms = make_communicators({&cuda()});
  ModelLoadOptions options;
  options.tensor_parallel = {0, 1, comms[0].get()};
  auto plain = LlamaModel::load(dir, cuda());
  auto through_nccl = LlamaModel::load(dir, cuda(), options);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 37; ++i) prompt.push_back((i * 53 + 7) % 500 + 3);
  auto logits = [&](LlamaModel& m) {
    KvCache cache(m.shard_config(), cuda(), m.activation_dtype(), 8, 16);
    BatchInputs inputs({SequenceChunk{prompt, 0, {0, 1, 2, 3, 4, 5, 6, 7}, true}}, 16);
    Tensor out(cuda().allocator(), DType::kF32, {inputs.num_logits(), m.config().vocab_size});
    m.forward(inputs.upload(cuda()), cache, out);
    return to_host(out);
  };
  EXPECT_EQ(logits(*through_nccl), logits(*plain));
}

TEST(NcclCommunicator, MoreRanksThanGpusAreRefused) {
  EngineOptions options;
  options.model_dir = (testing::test_data_dir() / "models" / "llama-gqa2-hd32-bf16").string();
  options.backend = "cuda";
  options.tensor_parallel_size = 2;
  try {
    Engine::create(options);
    GTEST_SKIP() << "two GPUs are visible: two ranks fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel rank 1 needs CUDA device 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
