// predict --cam's pictures: see cam_pictures.h.
#include "jobs/cam_pictures.h"

#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <filesystem>

#include "ltfit/eval/grad_cam.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/pictures/image_grid.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/output_dir.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

constexpr double kCamAlpha = 0.5;  // the overlay: half image, half heat map
constexpr const char* kCamSuffix = "_cam.png";

}  // namespace

void check_cam_folder(const std::string& dir) {
  // The picture names depend on the images, unknown yet: a stand-in name checks the folder.
  check_output_file(fs::path(dir) / (std::string("<image>") + kCamSuffix),
                    "Grad-CAM picture (--cam)");
}

void check_cam_names(const std::string& dir, const std::vector<std::string>& images) {
  std::vector<CommandInput> inputs;
  for (const std::string& image : images) {
    const fs::path picture = fs::path(dir) / (fs::path(image).stem().string() + kCamSuffix);
    std::error_code ec;
    if (!fs::exists(picture, ec)) continue;  // nearly always: no image is in the way
    if (inputs.empty()) {
      for (const std::string& input : images) inputs.push_back({"an image to predict", input});
    }
    check_output_not_input(picture, "the Grad-CAM picture (--cam)", inputs);
  }
}

CamPictures::CamPictures(std::string dir) : dir_(std::move(dir)) {
  create_output_dir(dir_, "Grad-CAM folder (--cam)");
}

std::string CamPictures::unused_name(const std::string& image) {
  const std::string stem = fs::path(image).stem().string();
  std::string name = stem + kCamSuffix;
  for (int n = 2; !used_.insert(name).second; ++n)
    name = fmt::format("{}_{}{}", stem, n, kCamSuffix);
  return name;
}

std::string CamPictures::write(const std::string& image, const torch::Tensor& rgb,
                               const torch::Tensor& cam, const std::string& class_name,
                               double probability) {
  const torch::Tensor pixels = rgb.to(torch::kCPU).contiguous();
  const torch::Tensor pair = torch::stack({pixels, cam_overlay(pixels, cam, kCamAlpha)});
  const EncodedPng png = encode_image_grid(
      pair, {fmt::format("{:.3f} {}", probability, class_name), "Grad-CAM"}, /*columns=*/2);
  const std::string path = (fs::path(dir_) / unused_name(image)).string();
  write_file_atomic(path, png.bytes);
  ++written_;
  return path;
}

std::vector<std::string> CamPictures::write_batch(Classifier& model, const EvalOptions& eval,
                                                  const torch::Tensor& pixels,
                                                  const torch::Tensor& rgb,
                                                  const torch::Tensor& probabilities,
                                                  const std::vector<std::string>& images,
                                                  const std::vector<std::string>& classes) {
  const torch::Tensor best = probabilities.argmax(1);
  const torch::Tensor cams = grad_cam(model, pixels, best, eval);
  std::vector<std::string> paths;
  for (std::int64_t r = 0; r < best.size(0); ++r) {
    const auto k = best[r].item<std::int64_t>();
    paths.push_back(write(images[static_cast<std::size_t>(r)], rgb[r], cams[r],
                          classes[static_cast<std::size_t>(k)],
                          probabilities[r][k].item<double>()));
  }
  return paths;
}

}  // namespace ltfit
