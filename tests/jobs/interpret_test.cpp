// interpret_job.h's pure parts: fastai's most_confused and the top losses.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>

#include "ltfit/jobs/interpret_job.h"

TEST_CASE("most_confused lists off-diagonal cells at min_count most first", "[interpret]") {
  // rows actual, columns predicted
  const torch::Tensor confusion =
      torch::tensor({9, 2, 5, 1, 7, 2, 0, 3, 8}, torch::kLong).view({3, 3});
  const auto all = ltfit::most_confused(confusion, 1);
  REQUIRE(all.size() == 5);
  const std::vector<std::array<std::int64_t, 3>> expected{
      {0, 2, 5}, {2, 1, 3}, {0, 1, 2}, {1, 2, 2}, {1, 0, 1}};  // ties in (actual, predicted) order
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(all[i].actual == expected[i][0]);
    CHECK(all[i].predicted == expected[i][1]);
    CHECK(all[i].count == expected[i][2]);
  }
  const auto two = ltfit::most_confused(confusion, 3);
  REQUIRE(two.size() == 2);
  CHECK(two[1].count == 3);
  CHECK(ltfit::most_confused(confusion, 6).empty());
}

TEST_CASE("top_losses ranks by -ln p of the actual class", "[interpret]") {
  ltfit::EvalResult r;
  r.probabilities = torch::tensor({0.9F, 0.1F, 0.2F, 0.8F, 0.6F, 0.4F, 0.3F, 0.7F}).view({4, 2});
  r.targets = torch::tensor({0, 0, 1, 1}, torch::kLong);
  r.indices = torch::tensor({10, 11, 12, 13}, torch::kLong);
  r.count = 4;
  const auto top = ltfit::top_losses(r, 2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].sample == 11);  // p(actual) 0.2
  CHECK(top[0].predicted == 1);
  CHECK(top[0].loss == Approx(-std::log(0.2)));
  CHECK(top[1].sample == 12);  // p(actual) 0.4
  CHECK(ltfit::top_losses(r, 10).size() == 4);
}

TEST_CASE("multi-label top losses: each class's highest binary losses", "[interpret]") {
  ltfit::EvalResult r;
  r.multi_label = true;
  r.thresholds = {0.5, 0.5};
  r.probabilities = torch::tensor({0.9F, 0.2F, 0.1F, 0.7F, 0.6F, 0.4F}).view({3, 2});
  r.targets = torch::tensor({1.F, 0.F, 1.F, 0.F, 0.F, 1.F}).view({3, 2});
  r.indices = torch::tensor({0, 1, 2}, torch::kLong);
  r.count = 3;
  const auto top = ltfit::top_losses(r, 1);
  REQUIRE(top.size() == 2);
  CHECK(top[0].class_index == 0);
  CHECK(top[0].sample == 1);  // has class 0 at p 0.1
  CHECK(top[0].actual == 1);
  CHECK(top[0].predicted == 0);
  CHECK(top[1].class_index == 1);
  CHECK(top[1].sample == 1);  // lacks class 1 at p 0.7
  CHECK(top[1].loss == Approx(-std::log(0.3)));
}
