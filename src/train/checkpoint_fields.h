// Typed access to the unpickled values of a checkpoint, for checkpoint*.cpp (private).
//
// Every accessor checks the kind it expects and throws CheckpointError naming the file and the
// key path ("checkpoint 'a.ckpt': 'position.stage': expected an int, got a string").
#pragma once

#include <string>
#include <string_view>

#include "ltfit/formats/pickle.h"
#include "ltfit/util/error.h"

namespace ltfit::detail {

class CheckpointFields {
 public:
  using Value = pickle::PickleValue;
  using Kind = Value::Kind;

  explicit CheckpointFields(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key_path, const std::string& problem) const {
    throw CheckpointError("checkpoint '" + file_ + "': '" + key_path + "' " + problem,
                          "use another checkpoint (checkpoints/last.ckpt or best.ckpt)");
  }

  const Value& of_kind(const Value& v, Kind kind, const std::string& key_path) const {
    if (v.kind != kind) {
      fail(key_path, std::string("is a ") + pickle::kind_name(v.kind) + ", expected a " +
                         pickle::kind_name(kind));
    }
    return v;
  }
  // The entry `key` of the dict `dict` (at `dict_path`), which must exist.
  const Value& at(const Value& dict, std::string_view key, const std::string& dict_path) const {
    const std::string key_path = join(dict_path, key);
    of_kind(dict, Kind::kDict, dict_path.empty() ? "(top level)" : dict_path);
    const Value* v = pickle::find_entry(dict, key);
    if (v == nullptr) fail(key_path, "is missing");
    return *v;
  }
  std::int64_t integer(const Value& dict, std::string_view key, const std::string& path) const {
    return of_kind(at(dict, key, path), Kind::kInt, join(path, key)).integer;
  }
  double real(const Value& dict, std::string_view key, const std::string& path) const {
    return number(at(dict, key, path), join(path, key));
  }
  // A float, or an int read as one.
  double number(const Value& v, const std::string& key_path) const {
    if (v.kind == Kind::kInt) return double(v.integer);
    return of_kind(v, Kind::kFloat, key_path).real;
  }
  bool boolean(const Value& dict, std::string_view key, const std::string& path) const {
    return of_kind(at(dict, key, path), Kind::kBool, join(path, key)).integer != 0;
  }
  const std::string& text(const Value& dict, std::string_view key, const std::string& path) const {
    return of_kind(at(dict, key, path), Kind::kString, join(path, key)).text;
  }
  // An int that must fit `int` (epochs, stages).
  int small_int(const Value& dict, std::string_view key, const std::string& path) const {
    const std::int64_t v = integer(dict, key, path);
    if (v < 0 || v > 1'000'000'000) fail(join(path, key), "is out of range");
    return int(v);
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace ltfit::detail
