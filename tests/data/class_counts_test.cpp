// describe_class_counts: images per class in label order, classes without images included.
#include <catch2/catch.hpp>

#include "ltfit/data/class_counts.h"

TEST_CASE("describe_class_counts names each class's images in label order", "[data]") {
  const std::vector<ltfit::Sample> samples = {{"a", 0}, {"b", 2}, {"c", 0}, {"d", 0}, {"e", 2}};
  CHECK(ltfit::describe_class_counts(samples, {"cat", "dog", "fox"}) ==
        "5 images (cat 3, dog 0, fox 2)");
  CHECK(ltfit::describe_class_counts({}, {"cat"}) == "0 images (cat 0)");
}
