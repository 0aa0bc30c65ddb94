// dtrain::train state dicts: a file save_state_dict writes reads back
// exactly (every dtype, views, scalars) in PyTorch's order; a load is
// strict unless asked, naming the file and the name that does not fit,
// and changes nothing then; files of other formats are named as such.
// (PyTorch's side of the format: tests/python/test_state_dicts.py.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/train/checkpoint.h"
#include "dtrain/train/state_dict.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace state_dict_test {

namespace fs = std::filesystem;
namespace train = dtrain::train;
using dtrain::testing::expect_error;
using dtrain::testing::TempDir;

torch::nn::Sequential make_model(int64_t hidden = 8) {
  return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::BatchNorm1d(hidden),
                               torch::nn::Linear(hidden, 2));
}

std::vector<std::string> names(const train::StateDict& tensors) {
  std::vector<std::string> result;
  for (const auto& item : tensors) {
    result.push_back(item.first);
  }
  return result;
}

TEST(StateDict, ListsEachModulesParametersThenBuffersThenChildren) {
  auto model = make_model();
  EXPECT_EQ(
      names(train::state_dict(*model)),
      (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                "1.running_var", "1.num_batches_tracked", "2.weight", "2.bias"}));
}

TEST(StateDict, EveryDtypeViewAndScalarReadsBackExactly) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "out" / "w.pt").string();
  const at::Tensor matrix = at::randn({5, 6});
  const train::StateDict saved{
      {"float", at::randn({3, 4})},
      {"double", at::randn({2}, at::kDouble)},
      {"half", at::randn({7}).to(at::kHalf)},
      {"bfloat16", at::randn({2, 2}).to(at::kBFloat16)},
      {"long", at::arange(10)},
      {"int", at::arange(4, at::kInt)},
      {"bool", at::rand({9}) > 0.5},
      {"byte", at::arange(200, at::kByte)},
      {"scalar", at::tensor(int64_t{7})},
      {"empty", at::empty({0, 3})},
      {"transposed view", matrix.t()},
      {"narrowed view", matrix.narrow(1, 2, 3)},
      {"large", at::full({2}, int64_t{1} << 40)},
  };
  train::save_state_dict(saved, path);
  const train::StateDict read = train::read_state_dict(path);
  ASSERT_EQ(names(read), names(saved));
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(read[i].second.scalar_type(), saved[i].second.scalar_type()) << saved[i].first;
    EXPECT_TRUE(at::equal(read[i].second, saved[i].second)) << saved[i].first;
  }
  EXPECT_EQ(
      std::distance(fs::directory_iterator(fs::path(path).parent_path()), fs::directory_iterator()),
      1)
      << "a temporary file was left beside the state dict";
}

TEST(StateDict, LoadCopiesIntoTheModulesTensors) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "w.pt").string();
  torch::manual_seed(0);
  auto model = make_model();
  model[1]->as<torch::nn::BatchNorm1d>()->running_mean.uniform_();
  train::save_state_dict(*model, path);
  auto other = make_model();
  const at::Tensor weight_before = other->parameters()[0];
  const train::LoadStateDictReport report = train::load_state_dict(*other, path);
  EXPECT_TRUE(report.complete());
  EXPECT_TRUE(weight_before.is_same(other->parameters()[0])) << "the tensor was replaced";
  const auto expected = train::state_dict(*model);
  const auto loaded = train::state_dict(*other);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(at::equal(loaded[i].second, expected[i].second)) << expected[i].first;
  }
}

TEST(StateDict, StrictLoadNamesTheFileAndTheKeyAndChangesNothing) {
  TempDir dir;
  const std::string wider = (fs::path(dir.path()) / "wider.pt").string();
  train::save_state_dict(*make_model(16), wider);
  auto model = make_model();
  const at::Tensor before = model->parameters()[0].clone();
  expect_error<dtrain::IOError>([&] { train::load_state_dict(*model, wider); },
                                "state dict '" + wider +
                                    "' does not fit the model: '0.weight' has shape [16, 4] in the "
                                    "file, [8, 4] in the model");
  EXPECT_TRUE(at::equal(before, model->parameters()[0]));

  const std::string fewer = (fs::path(dir.path()) / "fewer.pt").string();
  auto state = train::state_dict(*make_model());
  state.pop_back();
  train::save_state_dict(state, fewer);
  expect_error<dtrain::IOError>([&] { train::load_state_dict(*model, fewer); },
                                "the model's '2.bias' is not in the file");
  state = train::state_dict(*make_model());
  state.emplace_back("extra.weight", at::ones({1}));
  const std::string more = (fs::path(dir.path()) / "more.pt").string();
  train::save_state_dict(state, more);
  expect_error<dtrain::IOError>([&] { train::load_state_dict(*model, more); },
                                "the file's 'extra.weight' is not in the model");
}

TEST(StateDict, NonStrictLoadTakesWhatFitsAndReportsTheRest) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "w.pt").string();
  auto source = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::BatchNorm1d(8),
                                      torch::nn::Linear(8, 5));  // another head
  train::save_state_dict(*source, path);
  auto model = make_model();
  const auto report =
      train::load_state_dict(*model, path, train::LoadStateDictOptions().strict(false));
  EXPECT_EQ(report.mismatched, (std::vector<std::string>{"2.weight", "2.bias"}));
  EXPECT_TRUE(report.missing.empty());
  EXPECT_TRUE(report.unexpected.empty());
  EXPECT_TRUE(at::equal(model->parameters()[0], source->parameters()[0]));
  EXPECT_FALSE(at::equal(model->parameters()[4], source->parameters()[4].narrow(0, 0, 2)));
}

TEST(StateDict, OtherFilesAreNamedForWhatTheyAre) {
  TempDir dir;
  auto model = make_model();
  const std::string missing = (fs::path(dir.path()) / "none.pt").string();
  expect_error<dtrain::IOError>([&] { train::read_state_dict(missing); },
                                "cannot read state dict '" + missing + "': no such file");

  const std::string text = (fs::path(dir.path()) / "text.pt").string();
  std::ofstream(text) << "not weights\n";
  expect_error<dtrain::IOError>([&] { train::read_state_dict(text); },
                                "it is not a file torch.save writes");

  const std::string checkpoint = (fs::path(dir.path()) / "run.pt").string();
  torch::optim::SGD sgd(model->parameters(), 0.1);
  train::save_checkpoint(checkpoint, *model, sgd, 1);
  expect_error<dtrain::IOError>([&] { train::read_state_dict(checkpoint); },
                                "a TorchScript archive");

  const std::string good = (fs::path(dir.path()) / "good.pt").string();
  train::save_state_dict(*model, good);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = (fs::path(dir.path()) / "cut.pt").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  expect_error<dtrain::IOError>([&] { train::read_state_dict(cut); },
                                "cannot read state dict '" + cut + "'");
  expect_error<dtrain::IOError>(
      [&] { train::read_state_dict(good, train::ReadStateDictOptions().entry("model")); },
      "it has no entry 'model'");
}

TEST(StateDict, AnUnwritablePathIsNamed) {
  TempDir dir;
  const std::string blocked = (fs::path(dir.path()) / "file").string();
  std::ofstream(blocked) << "x";
  const std::string path = blocked + "/w.pt";
  expect_error<dtrain::IOError>([&] { train::save_state_dict(*make_model(), path); },
                                "state dict '" + path + "'");
}

}  // namespace state_dict_test
