// The shards layout (layouts.h): tar files as WebDataset writes them. Each sample is the members
// of one shard sharing a key (the member's name up to the first dot of its file name: "a/x.jpg"
// and "a/x.cls" are sample "a/x"): its image (the first member with an image extension) and its
// label (".cls": a class number or name as text; else ".json": an object whose "label", "cls" or
// "class" is one; a "labels" list makes a multi-label set). Class numbers are named by
// `classes.txt` in data.root (one name per line, in number order) when it exists, else by the
// numbers themselves. Samples are named "<shard>#<image member>", read from the shard by offset
// (Sample::member), never extracted.
//
// The shards are data.shards.train and .valid (relative to data.root): brace ranges and lists
// expanded as WebDataset's braceexpand does (every named shard must exist), then * and ? matched
// against the folder's files. With no validation shard matching the default pattern, the training
// samples are split by data.valid_pct (split "valid_pct"); else the split is "shards". Indexing
// reads each shard's headers and its label members, nothing else; the order of samples is the
// shards' order, then the archive's, so an epoch's order, every rank's part and a resume are as
// deterministic as with folders. Pure functions, thread-safe.
#include <fnmatch.h>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/layouts.h"
#include "data/regular_file.h"
#include "data/tar_reader.h"
#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/utf8.h"

namespace ltfit::layouts {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxShardNames = 100'000;      // names one pattern may expand to
constexpr std::uint64_t kMaxLabelBytes = 64 * 1024;  // a .cls or .json member
constexpr std::uint64_t kMaxClassesFileBytes = 1 << 20;

// ---- the shard patterns ----------------------------------------------------------------------

[[noreturn]] void bad_pattern(const std::string& key, const std::string& pattern,
                              const std::string& what) {
  throw ConfigError("data.shards." + key + ": " + what + " in '" + pattern + "'",
                    "e.g. train-{000000..000099}.tar, {a,b}-*.tar or train-*.tar");
}

// One brace group's alternatives: "000..012" (zero-padded as its start), "a,b,c".
std::vector<std::string> brace_alternatives(const std::string& body, const std::string& key,
                                            const std::string& pattern) {
  const std::size_t dots = body.find("..");
  if (dots == std::string::npos) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t comma; (comma = body.find(',', start)) != std::string::npos;
         start = comma + 1) {
      out.push_back(body.substr(start, comma - start));
    }
    out.push_back(body.substr(start));
    return out;
  }
  const std::string first = body.substr(0, dots), last = body.substr(dots + 2);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(first) || !digits(last)) bad_pattern(key, pattern, "a range that is not of numbers");
  const long long a = std::stoll(first), b = std::stoll(last);
  if (b < a) bad_pattern(key, pattern, "a range that ends before it starts");
  if (static_cast<unsigned long long>(b - a) >= kMaxShardNames) {
    bad_pattern(key, pattern, "a range of more than 100,000 names");
  }
  const std::size_t width = first.size() > 1 && first[0] == '0' ? first.size() : 0;
  std::vector<std::string> out;
  for (long long n = a; n <= b; ++n) {
    std::string text = std::to_string(n);
    if (text.size() < width) text.insert(0, width - text.size(), '0');
    out.push_back(std::move(text));
  }
  return out;
}

std::vector<std::string> expand_braces(const std::string& pattern, const std::string& key) {
  std::vector<std::string> names = {""};
  std::size_t pos = 0;
  while (pos < pattern.size()) {
    const std::size_t open = pattern.find('{', pos);
    const std::size_t close_before = pattern.find('}', pos);
    if (close_before < open) bad_pattern(key, pattern, "a '}' without its '{'");
    const std::string literal =
        pattern.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    for (std::string& name : names) name += literal;
    if (open == std::string::npos) break;
    const std::size_t close = pattern.find('}', open);
    if (close == std::string::npos) bad_pattern(key, pattern, "a '{' without its '}'");
    const std::string body = pattern.substr(open + 1, close - open - 1);
    if (body.find('{') != std::string::npos) bad_pattern(key, pattern, "nested braces");
    const std::vector<std::string> alternatives = brace_alternatives(body, key, pattern);
    if (names.size() * alternatives.size() > kMaxShardNames) {
      bad_pattern(key, pattern, "more than 100,000 names");
    }
    std::vector<std::string> next;
    for (const std::string& name : names) {
      for (const std::string& alt : alternatives) next.push_back(name + alt);
    }
    names = std::move(next);
    pos = close + 1;
  }
  return names;
}

bool has_wildcard(const std::string& name) {
  return name.find_first_of("*?[") != std::string::npos;
}

// The shard files `pattern` names under `root`, in order; `required`: an explicit name that is
// missing is a DataError (a wildcard matching nothing is not).
std::vector<std::string> shard_files(const fs::path& root, const std::string& pattern,
                                     const std::string& key, bool required) {
  std::vector<std::string> files;
  for (const std::string& name : expand_braces(pattern, key)) {
    const fs::path full = fs::path(name).is_absolute() ? fs::path(name) : root / name;
    const std::string leaf = full.filename().string();
    if (has_wildcard(full.parent_path().string())) {
      bad_pattern(key, pattern, "a wildcard outside the file name");
    }
    if (!has_wildcard(leaf)) {
      std::error_code ec;
      if (fs::is_regular_file(full, ec)) {
        files.push_back(full.string());
      } else if (required) {
        throw DataError("shard '" + full.string() + "' (data.shards." + key + " '" + pattern +
                            "') does not exist or is not a file",
                        "check data.root and data.shards." + key);
      }
      continue;
    }
    std::vector<std::string> matched;
    std::error_code ec;
    for (fs::directory_iterator it(full.parent_path(), ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string entry = it->path().filename().string();
      if (fnmatch(leaf.c_str(), entry.c_str(), FNM_PERIOD) == 0 && it->is_regular_file(ec)) {
        matched.push_back(it->path().string());
      }
    }
    std::sort(matched.begin(), matched.end());
    files.insert(files.end(), matched.begin(), matched.end());
  }
  return files;
}

// ---- a shard's samples -------------------------------------------------------------------------

struct ShardSample {
  std::string key;
  std::string image;  // the image member's name ("" until found)
  std::uint64_t offset = 0, size = 0;
  std::vector<std::string> names;  // its class name(s)
  bool labelled = false;
};

// "a/x.seg.png" -> key "a/x", extension "seg.png" (lower case).
std::pair<std::string, std::string> split_key(const std::string& member) {
  const std::size_t slash = member.rfind('/');
  const std::size_t dot = member.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {member, ""};
  std::string ext = member.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return {member.substr(0, dot), ext};
}

class ShardReader {
 public:
  ShardReader(const fs::path& root, bool multi_label) : multi_label_(multi_label) {
    const fs::path file = root / "classes.txt";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return;
    std::uint64_t size = 0;
    std::string error;
    const FileHandle fd(open_regular_file(file.string(), &size, &error));
    if (fd.get() < 0 || size > kMaxClassesFileBytes) {
      throw DataError("cannot read '" + file.string() +
                      "' (layout shards): " + (error.empty() ? "over 1 MiB" : error));
    }
    std::string text(static_cast<std::size_t>(size), '\0');
    text.resize(read_at(fd.get(), file.string(), 0, text.size(),
                        reinterpret_cast<std::uint8_t*>(text.data())));
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string name = text.substr(start, end - start);
      while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.pop_back();
      numbered_.push_back(std::move(name));
      start = end + 1;
    }
    while (!numbered_.empty() && numbered_.back().empty()) numbered_.pop_back();
  }

  // The shard's labelled samples, as files labelled by class name; those without an image or a
  // label are counted in `unlabelled`.
  void read(const std::string& shard, std::vector<LabelledFile>& out,
            std::unordered_map<std::string, FileRange>& ranges, NoteTally& unlabelled) {
    const auto file = std::make_shared<const std::string>(shard);
    std::vector<ShardSample> samples;
    std::unordered_map<std::string, std::size_t> slot;
    std::uint64_t shard_size = 0;
    const FileHandle fd = open_tar(shard, &shard_size);
    for (const TarMember& m : list_tar_members(shard, fd, shard_size)) {
      const auto [key, ext] = split_key(m.name);
      const auto [it, added] = slot.emplace(key, samples.size());
      if (added) samples.push_back({key});
      ShardSample& s = samples[it->second];
      if (s.image.empty() && has_image_extension("x." + ext)) {
        s.image = m.name;
        s.offset = m.offset;
        s.size = m.size;
      } else if (ext == "cls" || (ext == "json" && !s.labelled)) {
        s.names = label_of(shard, fd, m, ext);
        s.labelled = !s.names.empty() || multi_label_;
      }
    }
    for (ShardSample& s : samples) {
      const std::string name = shard + "#" + s.image;
      if (s.image.empty() || !s.labelled) {
        unlabelled.add(shard + "#" + (s.image.empty() ? s.key : s.image));
        continue;
      }
      ranges[name] = {file, s.offset, s.size};
      out.push_back({name, std::move(s.names)});
    }
  }

 private:
  std::vector<std::string> label_of(const std::string& shard, const FileHandle& fd,
                                    const TarMember& m, const std::string& ext) const {
    const auto bad = [&](const std::string& what) -> std::vector<std::string> {
      throw DataError("'" + shard + "#" + m.name + "' (layout shards): " + what,
                      "a .cls member holds a class number or name; a .json member an object "
                      "with \"label\" (or \"cls\", \"class\"), or \"labels\" for several");
    };
    if (m.size > kMaxLabelBytes) bad("a label member over 64 KiB");
    std::string text(static_cast<std::size_t>(m.size), '\0');
    if (read_at(fd.get(), shard, m.offset, text.size(),
                reinterpret_cast<std::uint8_t*>(text.data())) != text.size()) {
      bad("a short read");
    }
    if (ext == "cls") {
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
      return {class_name(text, bad)};
    }
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) bad("not a JSON object");
    if (doc.contains("labels") && doc["labels"].is_array()) {
      std::vector<std::string> names;
      for (const auto& v : doc["labels"]) names.push_back(class_name(json_text(v, bad), bad));
      return names;
    }
    for (const char* key : {"label", "cls", "class"}) {
      if (doc.contains(key)) return {class_name(json_text(doc[key], bad), bad)};
    }
    return bad("no \"label\", \"cls\", \"class\" or \"labels\"");
  }

  template <typename Bad>
  static std::string json_text(const nlohmann::json& v, const Bad& bad) {
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_string()) return v.get<std::string>();
    bad("a label that is neither a number nor a string");
    return "";
  }

  // A class number named by classes.txt (or kept as its digits), or a class name.
  template <typename Bad>
  std::string class_name(const std::string& text, const Bad& bad) const {
    const bool number =
        !text.empty() && text.size() <= 9 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number && !numbered_.empty()) {
      const auto n = static_cast<std::size_t>(std::stoul(text));
      if (n >= numbered_.size()) {
        bad("class number " + text + ", but classes.txt names " + std::to_string(numbered_.size()));
      }
      return numbered_[n];
    }
    if (text.empty() || !is_valid_utf8(text) || std::any_of(text.begin(), text.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20;
        })) {
      bad("a label that is not a class name");
    }
    return text;
  }

  bool multi_label_;
  std::vector<std::string> numbered_;  // classes.txt, in number order
};

std::vector<LabelledFile> read_shards(const std::vector<std::string>& shards, ShardReader& reader,
                                      std::unordered_map<std::string, FileRange>& ranges,
                                      NoteTally& unlabelled) {
  std::vector<LabelledFile> files;
  for (const std::string& shard : shards) {
    throw_if_stop_requested("indexing the shards");
    reader.read(shard, files, ranges, unlabelled);
  }
  return files;
}

void attach_ranges(std::vector<Sample>& samples,
                   const std::unordered_map<std::string, FileRange>& ranges) {
  for (Sample& s : samples) s.member = ranges.at(s.path);
}

}  // namespace

bool has_shards(const DataConfig& data) {
  try {
    return !shard_files(fs::path(data.root), data.shards.train, "train", false).empty();
  } catch (const std::exception&) {
    return false;  // a malformed pattern: not detected (naming the layout reports it)
  }
}

DatasetIndex index_shards_layout(const DataConfig& data, std::uint64_t seed, bool multi_label) {
  const fs::path root(data.root);
  const bool valid_default = data.shards.valid == ShardsConfig{}.valid;
  const auto train_shards = shard_files(root, data.shards.train, "train", true);
  const auto valid_shards = shard_files(root, data.shards.valid, "valid", !valid_default);
  if (train_shards.empty()) {
    throw DataError("no training shards match data.shards.train '" + data.shards.train +
                        "' under '" + data.root + "' (layout shards)",
                    "point data.root at the shards' folder and data.shards.train at their names, "
                    "e.g. train-{000000..000099}.tar");
  }
  ShardReader reader(root, multi_label);
  std::unordered_map<std::string, FileRange> ranges;
  NoteTally unlabelled("sample(s) without an image or a label member (.cls, .json), left out");
  const std::vector<LabelledFile> train = read_shards(train_shards, reader, ranges, unlabelled);
  if (train.empty()) {
    throw DataError("no labelled image in the training shards (" + train_shards.front() +
                        ", ...) (layout shards)",
                    "each sample needs an image member (x.jpg) and a label member (x.cls or "
                    "x.json) sharing its name");
  }
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kShards);
  if (valid_shards.empty()) {
    split_labelled_files(index, train, data.valid_pct, seed, multi_label);
  } else {
    std::vector<LabelledFile> valid = read_shards(valid_shards, reader, ranges, unlabelled);
    std::vector<LabelledFile> all = train;
    all.insert(all.end(), valid.begin(), valid.end());
    index.classes = class_names_of(all);
    for (const LabelledFile& f : train) {
      index.train.push_back(labelled_sample(f, index.classes, multi_label));
    }
    for (const LabelledFile& f : valid) {
      index.valid.push_back(labelled_sample(f, index.classes, multi_label));
    }
    index.split = "shards";
  }
  unlabelled.append_to(index.notes);
  attach_ranges(index.train, ranges);
  attach_ranges(index.valid, ranges);
  return index;
}

}  // namespace ltfit::layouts
