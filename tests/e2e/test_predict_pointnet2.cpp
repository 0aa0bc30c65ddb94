// predict_pointnet2 and dtrain::models::PointNet2Classifier on clouds from
// files: the test clouds written as PLY (ascii, binary of both byte
// orders) and text (spaces, or commas with normals) get the classes the
// evaluation predicted for them; each bad input ends in one line naming
// the file and what is wrong.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/train/checkpoint.h"
#include "pointnet2_trained_run.h"
#include "test_support.h"

namespace {

using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;
using dtrain::testing::pointnet2::evaluate;
using dtrain::testing::pointnet2::test_clouds;
using dtrain::testing::pointnet2::trained_run;

// How a test writes a cloud: each of the formats predict_pointnet2 reads.
enum class Format { kPlyAscii, kPlyLittle, kPlyBig, kTextSpaces, kTextCommas };

std::string ply_header(const char* format, int64_t points, const std::string& properties) {
  return "ply\nformat " + std::string(format) + " 1.0\ncomment written by a test\nelement vertex " +
         std::to_string(points) + "\n" + properties + "element face 0\n" +
         "property list uchar int vertex_indices\nend_header\n";
}

template <typename T>
void put(std::ostream& out, T value, bool big_endian) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  if (big_endian != (std::endian::native == std::endian::big)) {
    std::reverse(bytes, bytes + sizeof(T));
  }
  out.write(bytes, sizeof(T));
}

// xyz (P, 3) and normals (P, 3) into `path` as `format`.
void write_cloud(const std::string& path, const at::Tensor& xyz, const at::Tensor& normals,
                 Format format) {
  std::ofstream out(path, std::ios::binary);
  const auto p = xyz.accessor<float, 2>();
  const auto n = normals.accessor<float, 2>();
  const int64_t points = xyz.size(0);
  out.precision(9);
  if (format == Format::kPlyAscii) {
    out << ply_header("ascii", points, "property float x\nproperty float y\nproperty float z\n");
  } else if (format == Format::kPlyLittle) {
    // doubles, and a colour between the coordinates and the normals
    out << ply_header("binary_little_endian", points,
                      "property double x\nproperty double y\nproperty double z\n"
                      "property uchar red\nproperty float nx\nproperty float ny\n"
                      "property float nz\n");
  } else if (format == Format::kPlyBig) {
    out << ply_header("binary_big_endian", points,
                      "property float x\nproperty float y\nproperty float z\n");
  }
  for (int64_t i = 0; i < points; ++i) {
    switch (format) {
      case Format::kPlyAscii:
      case Format::kTextSpaces:
        out << p[i][0] << " " << p[i][1] << "\t" << p[i][2] << "\n";
        break;
      case Format::kTextCommas:
        out << p[i][0] << "," << p[i][1] << "," << p[i][2] << "," << n[i][0] << "," << n[i][1]
            << "," << n[i][2] << "\n";
        break;
      case Format::kPlyLittle:
        for (int d = 0; d < 3; ++d)
          put<double>(out, p[i][d], false);
        put<uint8_t>(out, 200, false);
        for (int d = 0; d < 3; ++d)
          put<float>(out, n[i][d], false);
        break;
      case Format::kPlyBig:
        for (int d = 0; d < 3; ++d)
          put<float>(out, p[i][d], true);
        break;
    }
  }
}

// "chair 0.93, stool 0.04" after "FILE: " in predict_pointnet2's output: the first name.
std::map<std::string, std::string> top_class_per_file(const std::string& output) {
  std::map<std::string, std::string> top;
  for (const std::string& line : dtrain::testing::non_empty_lines(output)) {
    const auto colon = line.rfind(": ");
    if (colon == std::string::npos) {
      continue;
    }
    std::istringstream guesses(line.substr(colon + 2));
    std::string name;
    guesses >> name;
    top[line.substr(0, colon)] = name;
  }
  return top;
}

// The evaluation's predicted class names, sample by sample.
std::vector<std::string> evaluated_classes(const TempDir& dir) {
  const auto result = evaluate(dir.file("eval.csv"));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const auto names = read_csv(dir.file("eval_confusion.csv"));
  const auto predictions = read_csv(dir.file("eval_predictions.csv"));
  std::vector<std::string> classes;
  for (std::size_t i = 1; i < predictions.size() && !names.empty(); ++i) {
    classes.push_back(names[0].at(1 + std::stoul(predictions[i][2])));
  }
  return classes;
}

TEST(PredictPointNet2, AgreesWithTheEvaluationOnEveryFormat) {
  const auto& run = trained_run();
  TempDir dir;
  const std::vector<std::string> expected = evaluated_classes(dir);
  const auto clouds = test_clouds();
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(clouds.labels.size(0)));
  const std::vector<std::pair<Format, std::string>> formats{{Format::kPlyAscii, ".ply"},
                                                            {Format::kPlyLittle, ".ply"},
                                                            {Format::kPlyBig, ".ply"},
                                                            {Format::kTextSpaces, ".txt"},
                                                            {Format::kTextCommas, ".txt"}};
  std::vector<std::string> command{DTRAIN_PREDICT_POINTNET2_PATH, "--checkpoint", run.checkpoint,
                                   "--top-k", "2"};
  std::map<std::string, std::string> wanted;
  for (int64_t i = 0; i < clouds.labels.size(0); ++i) {
    const auto& [format, extension] = formats[static_cast<std::size_t>(i) % formats.size()];
    const std::string path = dir.file("cloud" + std::to_string(i) + extension);
    write_cloud(path, clouds.points[i], clouds.normals[i], format);
    command.push_back(path);
    wanted[path] = expected[static_cast<std::size_t>(i)];
  }
  const ProcessResult result = run_process(command);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(top_class_per_file(result.output), wanted) << result.output;
}

// The SDK's function in research code: the same classes, probabilities
// that add up to 1, most probable first.
TEST(PredictPointNet2, TheSdkFunctionAgreesWithTheEvaluation) {
  const auto& run = trained_run();
  TempDir dir;
  const std::vector<std::string> expected = evaluated_classes(dir);
  auto classifier = dtrain::models::PointNet2Classifier::load(run.checkpoint, torch::kCPU);
  EXPECT_EQ(classifier.description().class_names,
            (std::vector<std::string>{"sphere", "cube", "cylinder"}));
  const auto clouds = test_clouds();
  for (int64_t i = 0; i < clouds.labels.size(0); ++i) {
    const auto guesses = classifier.classify(clouds.points[i], 3);
    ASSERT_EQ(guesses.size(), 3u);
    EXPECT_EQ(guesses[0].name, expected[static_cast<std::size_t>(i)]) << "cloud " << i;
    EXPECT_GE(guesses[0].probability, guesses[1].probability);
    EXPECT_NEAR(guesses[0].probability + guesses[1].probability + guesses[2].probability, 1.0,
                1e-6);
  }
  // The guide's example program (apps/examples/classify_clouds.cpp) says the same.
  std::vector<std::string> command{DTRAIN_CLASSIFY_CLOUDS_PATH, run.checkpoint};
  std::map<std::string, std::string> wanted;
  for (int64_t i = 0; i < clouds.labels.size(0); i += 5) {
    const std::string path = dir.file("cloud" + std::to_string(i) + ".txt");
    write_cloud(path, clouds.points[i], clouds.normals[i], Format::kTextSpaces);
    command.push_back(path);
    wanted[path] = expected[static_cast<std::size_t>(i)];
  }
  const ProcessResult example = run_process(command);
  ASSERT_EQ(example.exit_code, 0) << example.output;
  EXPECT_EQ(top_class_per_file(example.output), wanted) << example.output;
  // A cloud of other sizes is sampled down or padded to the model's 1,024 points.
  EXPECT_EQ(classifier.prepare(at::rand({3000, 3})).sizes(), (std::vector<int64_t>{1024, 3}));
  EXPECT_EQ(classifier.prepare(at::rand({5, 6})).sizes(), (std::vector<int64_t>{1024, 3}));
}

TEST(PredictPointNet2, RunsOnCuda) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device is visible";
  }
  const auto& run = trained_run();
  auto on_cpu = dtrain::models::PointNet2Classifier::load(run.checkpoint, torch::kCPU);
  auto on_gpu = dtrain::models::PointNet2Classifier::load(run.checkpoint, torch::kCUDA);
  const auto clouds = test_clouds();
  for (int64_t i = 0; i < clouds.labels.size(0); ++i) {
    EXPECT_EQ(on_gpu.classify(clouds.points[i], 1)[0].name,
              on_cpu.classify(clouds.points[i], 1)[0].name);
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

ProcessResult predict(const std::string& checkpoint, const std::string& cloud) {
  return run_process({DTRAIN_PREDICT_POINTNET2_PATH, "--checkpoint", checkpoint, cloud});
}

void expect_error(const ProcessResult& result, const std::string& fragment) {
  dtrain::testing::expect_one_line_error(result, 1, "predict_pointnet2", fragment);
}

TEST(PredictPointNet2Errors, BadCloudsAreNamedInOneLine) {
  const auto& run = trained_run();
  TempDir dir;
  const std::string ply = "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "holds no points"},
      {"# only a comment\n", "holds no points"},
      {"0 0 0\nnan 1 1\n", "point 2 has a value that is not a finite number (nan)"},
      {"0 0 0\n1 1\n", "line 2 has 2 column(s); a point needs x y z"},
      {"0 0 zero\n", "line 1: 'zero' is not a number"},
      {ply + "property float y\nproperty float z\n", "broken PLY header: no end_header line"},
      {ply + "property float y\nproperty float z\n0 0 0\n",
       "broken PLY header: unknown line '0 0 0'"},
      {ply + "end_header\n0\n1\n", "broken PLY header: the vertex element has no property 'y'"},
      {"ply\nformat binary_middle_endian 1.0\nend_header\n",
       "broken PLY header: unknown format 'binary_middle_endian'"},
      {"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty "
       "float z\nend_header\n0 0 0\n",
       "ends after 1 of the 3 vertices its header announces"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.file("bad" + std::to_string(i) + ".txt");
    write_text(path, cases[i].first);
    SCOPED_TRACE(cases[i].second);
    expect_error(predict(run.checkpoint, path), "'" + path + "'");
    expect_error(predict(run.checkpoint, path), cases[i].second);
  }
  expect_error(predict(run.checkpoint, dir.file("none.ply")),
               "cannot open point cloud '" + dir.file("none.ply") + "'");
}

TEST(PredictPointNet2Errors, ACheckpointOfAnotherModelIsNamed) {
  TempDir dir;
  torch::nn::Linear other(3, 2);
  torch::optim::SGD sgd(other->parameters(), torch::optim::SGDOptions(0.1));
  const std::string partseg = dir.file("partseg.pt");
  dtrain::train::save_checkpoint(
      partseg, *other, sgd,
      dtrain::train::TrainingProgress{.epochs_done = 1, .notes = {{"model", "PointNet2PartSeg"}}});
  const std::string cloud = dir.file("cloud.txt");
  write_text(cloud, "0 0 0\n1 0 0\n0 1 0\n");
  expect_error(predict(partseg, cloud), "checkpoint '" + partseg +
                                            "' holds a PointNet2PartSeg model, not a PointNet++ "
                                            "classifier");
  const std::string plain = dir.file("plain.pt");
  dtrain::train::save_checkpoint(plain, *other, sgd, 1);
  expect_error(predict(plain, cloud), "checkpoint '" + plain + "' does not say which model");
  write_text(dir.file("text.pt"), "not a checkpoint");
  expect_error(predict(dir.file("text.pt"), cloud),
               "cannot load checkpoint '" + dir.file("text.pt") + "'");
}

}  // namespace
