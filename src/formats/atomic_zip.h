// The torch.save writer's byte sink over util's AtomicFile (private to src/model).
#pragma once

#include <string>
#include <string_view>

#include "formats/zip_archive.h"
#include "ltfit/util/atomic_file.h"

namespace ltfit {

class AtomicFileSink : public zip::ByteSink {
 public:
  explicit AtomicFileSink(std::string path) : file_(std::move(path)) {}
  void write(std::string_view bytes) override { file_.write(bytes); }
  void commit() { file_.commit(); }
  const std::string& temp_path() const { return file_.temp_path(); }

 private:
  AtomicFile file_;
};

}  // namespace ltfit
