// Seeds of the zip and pickle targets: archives ltfit and torch.save write, hand-made pickles
// covering every opcode and tensor rebuild the reader knows, and hostile edge cases.
#include <torch/torch.h>

#include "archive_input.h"
#include "formats/zip_archive.h"
#include "ltfit/formats/torch_archive.h"
#include "raw_pickle.h"
#include "seeds.h"

namespace ltfit::fuzz {

namespace {

// A fuzz input of the pickle target (archive_input.h): `pickle` and records of (size, content).
std::string container(const std::string& pickle,
                      std::initializer_list<std::pair<std::uint32_t, std::string>> records) {
  std::string out;
  const auto put = [&out](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  };
  put(pickle.size(), 4);
  out += pickle;
  for (const auto& [size, content] : records) {
    put(size, 4);
    put(content.size(), 2);
    out += content;
  }
  return out;
}

// A state dict of tensors of every storage dtype, with ltfit's writer.
std::string ltfit_state_dict(bool force_zip64) {
  TorchArchiveWriter out;
  pickle::PickleWriter& w = out.pickle();
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.mark();
  const std::pair<const char*, torch::Tensor> tensors[] = {
      {"conv.weight", torch::arange(24, torch::kFloat32).reshape({2, 3, 2, 2})},
      {"double", torch::linspace(0, 1, 5, torch::kFloat64)},
      {"half", torch::ones({3}, torch::kFloat16)},
      {"bf16", torch::ones({2, 2}, torch::kBFloat16)},
      {"bn.num_batches_tracked", torch::tensor(7, torch::kInt64)},
      {"int", torch::arange(4, torch::kInt32)},
      {"short", torch::arange(3, torch::kInt16)},
      {"char", torch::arange(3, torch::kInt8)},
      {"byte", torch::arange(6, torch::kUInt8)},
      {"bool", torch::tensor({true, false})},
      {"complex", torch::ones({2}, torch::kComplexFloat)},
      {"empty", torch::empty({0, 4})},
  };
  for (const auto& [name, t] : tensors) {
    w.string(name);
    out.tensor(t);
  }
  w.set_items();
  return out.to_bytes(force_zip64);
}

// Plain values of every kind, nested, with ltfit's writer.
std::string ltfit_values() {
  TorchArchiveWriter out;
  pickle::PickleWriter& w = out.pickle();
  w.empty_dict();
  w.mark();
  w.string("int");
  w.integer(-(std::int64_t(1) << 40));
  w.string("float");
  w.real(0.1);
  w.string("bool");
  w.boolean(true);
  w.string("none");
  w.none();
  w.string("list");
  w.empty_list();
  w.mark();
  w.string("a");
  w.mark();
  w.integer(1);
  w.integer(2);
  w.tuple();
  w.appends();
  w.string("tensor");
  out.tensor(torch::ones({2, 2}));
  w.set_items();
  return out.to_bytes();
}

// ltfit's archive with data.pkl and a storage record DEFLATE-compressed (Python's zipfile and
// some tools write them).
std::string deflated_archive() {
  zip::StringSink sink;
  zip::ZipWriter zip(sink);
  RawPickle p;
  p.op('}').mark().str("w").tensor("FloatStorage", "0", 64, 0, {8, 8}, {8, 1}).op('u');
  zip.add_deflated("archive/data.pkl", p.stop());
  zip.add("archive/byteorder", "little");
  zip.add_deflated("archive/data/0", std::string(256, '\0'));
  zip.finish();
  return std::move(sink.str());
}

std::string torchscript_names() {
  zip::StringSink sink;
  zip::ZipWriter zip(sink);
  zip.add("archive/data.pkl", RawPickle().op('}').stop());
  zip.add("archive/constants.pkl", RawPickle().op(')').stop());
  zip.add("archive/code/__torch__.py", "def __setstate__(self, state):\n  pass\n");
  zip.finish();
  return std::move(sink.str());
}

// Overwrites the 4 bytes at every `offset_in_header` of each header with signature `sig`.
std::string patch_headers(std::string zip, std::string_view sig, std::size_t offset_in_header,
                          std::uint32_t value) {
  for (std::size_t at = zip.find(sig); at != std::string::npos; at = zip.find(sig, at + 1)) {
    for (int i = 0; i < 4 && at + offset_in_header + i < zip.size(); ++i) {
      zip[at + offset_in_header + i] = char((value >> (8 * i)) & 0xff);
    }
  }
  return zip;
}

// Flips the last data byte of the last record before the central directory (its CRC fails).
std::string flip_last_record_byte(std::string zip) {
  const std::size_t central = zip.find(std::string("PK\1\2", 4));
  if (central != std::string::npos && central > 0) zip[central - 1] ^= 0x5a;
  return zip;
}

const std::string kFloat = "FloatStorage";

std::vector<Seed> hand_made_pickles() {
  const std::string f64(64 * 4, '\x01');  // 64 floats
  std::vector<Seed> seeds;
  const auto add = [&](const char* name, const std::string& pickle, Expect expect,
                       std::initializer_list<std::pair<std::uint32_t, std::string>> records = {
                           {256, std::string(256, '\x01')}}) {
    seeds.push_back({name, container(pickle, records), expect});
  };
  // Protocol 2 as Python writes it: memo puts and gets, every int width, nested containers.
  RawPickle memo;
  memo.op('}').put(0).mark();
  memo.str("a").integer(1).str("b").integer(300).str("c").integer(-70000);
  memo.str("d").integer(std::int64_t(1) << 40).str("e").real(1.5).str("f").op(0x88);
  memo.str("g").op(0x89).str("h").op('N').str("i").op(']').put(1).mark().integer(1).integer(2);
  memo.op('e').str("j").get(1).str("k").integer(1).op(0x85).str("l").integer(1).integer(2);
  memo.op(0x86).str("m").integer(1).integer(2).integer(3).op(0x87).str("n").op(')');
  memo.str("o").ints({1, 2, 3}).str("self").get(0).op('u');
  add("opcodes-protocol2", memo.stop(), Expect::kAccepted);
  // Protocol 4: FRAME, STACK_GLOBAL, MEMOIZE, NEWOBJ, long memo indices.
  RawPickle p4(4);
  p4.op(0x95).le(0, 8).str("collections").op(0x94).str("OrderedDict").op(0x94).op(0x93);
  p4.op(0x94).op(')').op(0x81).op(0x94).mark().str("t");
  p4.tensor(kFloat, "0", 64, 0, {4, 4}, {4, 1}).op(0x94).str("again").op('j').le(4, 4);
  p4.str("x").op('r').le(7, 4).op('j').le(7, 4).op('u');
  add("opcodes-protocol4", p4.stop(), Expect::kAccepted, {{f64.size(), f64}});
  // Legacy strings and list/dict builders, POP, POP_MARK, DUP, BUILD.
  RawPickle legacy;
  legacy.mark().mark().op('T').le(1, 4).raw("a").op('U').byte(1).raw("b").op('B').le(1, 4);
  legacy.raw("c").op('C').byte(1).raw("d").op(0x8d).le(1, 8).raw("e").str("f").op('d');
  legacy.op('2').op('0').mark().integer(1).op('1');  // DUP, POP, POP_MARK
  legacy.op('}').str("k").mark().op('l').op('s');    // {"k": []}
  legacy.op(']').integer(9).op('a');                 // [9]
  legacy.global("collections", "OrderedDict").op(')').reduce().op('}').op('b').tuple();
  add("opcodes-legacy", legacy.stop(), Expect::kAny);
  // Parameters, as torch.save writes nn.Parameter, and _rebuild_from_type_v2 (tensor subclasses).
  RawPickle param;
  param.op('}').mark().str("p").global("torch._utils", "_rebuild_parameter").mark();
  param.tensor(kFloat, "0", 64, 0, {8, 8}, {8, 1}).op(0x88);
  param.global("collections", "OrderedDict").op(')').reduce().tuple().reduce();
  param.str("q").global("torch._tensor", "_rebuild_from_type_v2").mark();
  param.global("torch._utils", "_rebuild_tensor_v2").global("torch.nn.parameter", "Parameter");
  param.mark().storage(kFloat, "0", 64).integer(0).ints({2}).ints({1}).op(0x89);
  param.global("collections", "OrderedDict").op(')').reduce().tuple().op('}').tuple().reduce();
  param.op('u');
  add("parameters", param.stop(), Expect::kAccepted, {{f64.size(), f64}});
  // Views: transposed, offset, two tensors on one storage, stride 0, empty, every dtype name.
  RawPickle views;
  views.op('}').mark();
  views.str("t").tensor(kFloat, "0", 64, 0, {8, 8}, {1, 8});
  views.str("o").tensor(kFloat, "0", 64, 60, {4}, {1});
  views.str("z").tensor(kFloat, "0", 64, 63, {1000000, 1000}, {0, 0});
  views.str("e").tensor(kFloat, "0", 64, 64, {0, 5}, {5, 1});
  views.str("l").tensor("LongStorage", "1", 2, 0, {2}, {1});
  views.str("u").tensor("UntypedStorage", "2", 16, 0, {16}, {1}).op('u');
  add("views", views.stop(), Expect::kAccepted, {{f64.size(), f64}, {16, ""}, {16, ""}});
  // Hostile: nesting, floods, huge claims, views past the end, refused globals.
  RawPickle self_ref;  // args whose third item holds the args themselves (through a list)
  self_ref.op(']').put(0).global("torch._tensor", "_rebuild_from_type_v2").mark();
  self_ref.global("torch._tensor", "_rebuild_from_type_v2").global("torch", "Tensor").get(0);
  self_ref.op('N').tuple().put(1).get(0).get(1).op('a').op('0').reduce();
  add("hostile-self-containing-args", self_ref.stop(), Expect::kRefused);
  RawPickle deep_call;
  deep_call.global("torch._tensor", "_rebuild_from_type_v2").mark();
  for (int i = 0; i < 100; ++i) {
    deep_call.global("torch._tensor", "_rebuild_from_type_v2");
    deep_call.global("torch.nn.parameter", "Parameter").mark();
  }
  deep_call.op(')');
  for (int i = 0; i < 100; ++i) deep_call.op('N').tuple();
  deep_call.reduce();
  add("hostile-rebuild-from-type-100-deep", deep_call.stop(), Expect::kRefused);
  RawPickle lists;
  for (int i = 0; i < 3000; ++i) lists.op(']');
  for (int i = 0; i < 2999; ++i) lists.op('a');
  add("hostile-deep-lists", lists.stop(), Expect::kAccepted);
  RawPickle cycle;
  cycle.op(']').put(0).get(0).op('a').op('}').put(1).str("me").get(1).op('s').op('a');
  add("cycles", cycle.stop(), Expect::kAccepted);
  RawPickle marks;
  for (int i = 0; i < 10001; ++i) marks.mark();
  add("hostile-marks", marks.stop(), Expect::kRefused);
  RawPickle flood;
  flood.mark();
  for (int i = 0; i < 4000; ++i) flood.op('N');
  flood.tuple();
  add("hostile-flood", flood.stop(), Expect::kAccepted);
  RawPickle many_keys;
  many_keys.op('}').mark();
  for (int i = 0; i < 2000; ++i) many_keys.str("k" + std::to_string(i)).integer(i);
  many_keys.op('u');
  add("setitems-2000-keys", many_keys.stop(), Expect::kAccepted);
  RawPickle past_end;
  past_end.tensor(kFloat, "0", 64, 1, {8, 8}, {8, 1});
  add("hostile-view-past-end", past_end.stop(), Expect::kRefused, {{f64.size(), f64}});
  RawPickle big_claim;
  big_claim.tensor(kFloat, "0", std::int64_t(1) << 40, 0, {1}, {1});
  add("hostile-storage-claims-4tb", big_claim.stop(), Expect::kRefused);
  RawPickle two_dtypes;
  two_dtypes.mark().tensor(kFloat, "0", 2, 0, {2}, {1}).tensor("LongStorage", "0", 2, 0, {2}, {1});
  add("hostile-storage-two-dtypes", two_dtypes.tuple().stop(), Expect::kRefused);
  add("hostile-global-os-system",
      RawPickle()
          .global("os", "system")
          .str("touch /tmp/ltfit-fuzz-pwned")
          .op(0x85)
          .reduce()
          .stop(),
      Expect::kRefused);
  add("hostile-no-storage-record", RawPickle().tensor(kFloat, "7", 1, 0, {1}, {1}).stop(),
      Expect::kRefused);
  return seeds;
}

}  // namespace

std::vector<Seed> zip_seeds(const TorchFiles& torch_files) {
  std::vector<Seed> seeds = {
      {"ltfit-state-dict", ltfit_state_dict(false)},
      {"ltfit-state-dict-zip64", ltfit_state_dict(true)},
      {"ltfit-values", ltfit_values()},
      {"deflated", deflated_archive()},
      {"torchscript-names", torchscript_names()},
      {"empty-zip", std::string("PK\5\6", 4) + std::string(18, '\0'), Expect::kAny},
  };
  seeds.push_back(
      {"hostile-deflate-claims-2gb",
       patch_headers(patch_headers(deflated_archive(), std::string("PK\1\2", 4), 24, 0x7fffffff),
                     std::string("PK\3\4", 4), 22, 0x7fffffff),
       Expect::kRefused});
  seeds.push_back(
      {"hostile-crc-mismatch", flip_last_record_byte(ltfit_values()), Expect::kRefused});
  for (const auto& [name, bytes] : torch_files) {
    if (bytes.size() <= (256u << 10)) seeds.push_back({"torch-" + name, bytes});
  }
  return seeds;
}

std::vector<Seed> pickle_seeds(const TorchFiles& torch_files) {
  std::vector<Seed> seeds = hand_made_pickles();
  seeds.push_back({"ltfit-state-dict", encode_archive_input(ltfit_state_dict(false))});
  seeds.push_back({"ltfit-values", encode_archive_input(ltfit_values())});
  seeds.push_back({"deflated", encode_archive_input(deflated_archive())});
  for (const auto& [name, bytes] : torch_files) {
    seeds.push_back({"torch-" + name, encode_archive_input(bytes)});
  }
  return seeds;
}

std::string pickle_dictionary() {
  const char* const tokens[] = {"\x80\x02",
                                "\x80\x04",
                                "\x95",
                                "\x93",
                                "\x94",
                                "\x81",
                                "\x8a\x08",
                                "\x8c",
                                "collections\nOrderedDict\n",
                                "torch._utils\n_rebuild_tensor_v2\n",
                                "torch._utils\n_rebuild_parameter\n",
                                "torch._utils\n_rebuild_parameter_with_state\n",
                                "torch._tensor\n_rebuild_from_type_v2\n",
                                "torch.nn.parameter\nParameter\n",
                                "torch\nTensor\n",
                                "torch\nFloatStorage\n",
                                "torch\nLongStorage\n",
                                "torch\nHalfStorage\n",
                                "torch\nBFloat16Storage\n",
                                "torch\nByteStorage\n",
                                "torch\nBoolStorage\n",
                                "torch\nUntypedStorage\n",
                                "storage",
                                "cpu",
                                "data.pkl",
                                "byteorder",
                                "little"};
  std::string out;
  for (const char* token : tokens) {
    out += '"';
    for (const char* c = token; *c != '\0'; ++c) {
      const auto u = static_cast<unsigned char>(*c);
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += (u >= 0x20 && u < 0x7f && u != '"' && u != '\\') ? std::string(1, *c) : hex;
    }
    out += "\"\n";
  }
  return out;
}

}  // namespace ltfit::fuzz
