// The data pickle reader (numpy_pickle.h) and the pickle machine's text opcodes (protocols 0/1,
// as Python 2's cPickle wrote by default): NumPy arrays rebuilt from NumPy 1's and NumPy 2's
// names, C and Fortran order and protocol 5's buffers; Python 3's bytes under protocol 2; every
// other global refused, never run; arrays whose bytes are not their shape's refused.
#include <cstdint>
#include <string>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "data/numpy_pickle.h"
#include "ltfit/formats/pickle.h"

namespace {

using Catch::Matchers::Contains;
using ltfit::ReadBudget;
using ltfit::pickle::PickleError;
using ltfit::pickle::PickleValue;
using ltfit::pickle::PickleWriter;
using Kind = PickleValue::Kind;

// dtype(code, False, True) with its BUILD state, as NumPy writes it.
void write_dtype(PickleWriter& w, const std::string& code, const std::string& order = "|") {
  w.global("numpy", "dtype");
  w.mark();
  w.string(code);
  w.boolean(false);
  w.boolean(true);
  w.tuple();
  w.reduce();
  w.mark();
  w.integer(3);
  w.string(order);
  w.none();
  w.none();
  w.none();
  w.integer(-1);
  w.integer(-1);
  w.integer(0);
  w.tuple();
  w.build();
}

// {'a': array} with `module`._reconstruct and the state (1, (rows, cols), dtype, fortran, raw).
std::string array_pickle(const std::string& module, int rows, int cols, const std::string& code,
                         bool fortran, const std::string& raw) {
  PickleWriter w;
  w.empty_dict();
  w.string("a");
  w.global(module, "_reconstruct");
  w.mark();
  w.global("numpy", "ndarray");
  w.mark();
  w.integer(0);
  w.tuple();
  w.byte_string("b");
  w.tuple();
  w.reduce();
  w.mark();
  w.integer(1);
  w.mark();
  w.integer(rows);
  w.integer(cols);
  w.tuple();
  write_dtype(w, code);
  w.boolean(fortran);
  w.byte_string(raw);
  w.tuple();
  w.build();
  std::string p = w.finish();
  p.back() = 's';  // SETITEM before the STOP
  return p + ".";
}

torch::Tensor read_array(const std::string& pickle) {
  ReadBudget budget(64 << 20);
  const auto tree = ltfit::read_numpy_pickle(pickle, budget);
  const PickleValue* a = ltfit::pickle::find_entry(tree->root(), "a");
  REQUIRE(a != nullptr);
  REQUIRE(a->kind == Kind::kTensor);
  return a->tensor.clone();
}

std::string error_of(const std::string& pickle) {
  ReadBudget budget(64 << 20);
  try {
    ltfit::read_numpy_pickle(pickle, budget);
  } catch (const PickleError& e) {
    return e.what();
  }
  return "(read)";
}

}  // namespace

TEST_CASE("NumPy arrays are rebuilt from NumPy 1's and 2's names, in C and Fortran order",
          "[pickle][cifar]") {
  const std::string raw("\x00\x01\x02\x03\x04\x05", 6);
  for (const char* module : {"numpy.core.multiarray", "numpy._core.multiarray"}) {
    const torch::Tensor c = read_array(array_pickle(module, 2, 3, "u1", false, raw));
    CHECK(c.scalar_type() == torch::kUInt8);
    CHECK(c.sizes() == torch::IntArrayRef({2, 3}));
    CHECK(c[1][0].item<int>() == 3);
    // Fortran order: the bytes are column by column.
    const torch::Tensor f = read_array(array_pickle(module, 2, 3, "u1", true, raw));
    CHECK(f.sizes() == torch::IntArrayRef({2, 3}));
    CHECK(f[0][1].item<int>() == 2);
    CHECK(f[1][0].item<int>() == 1);
  }
  const std::string longs("\x07\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 16);
  const torch::Tensor l =
      read_array(array_pickle("numpy.core.multiarray", 1, 2, "<i8", false, longs));
  CHECK(l.scalar_type() == torch::kInt64);
  CHECK(l[0][0].item<std::int64_t>() == 7);
  CHECK(l[0][1].item<std::int64_t>() == -1);
}

TEST_CASE("protocol 5's _frombuffer and Python 3's bytes under protocol 2", "[pickle][cifar]") {
  // {'a': _frombuffer(bytearray8, dtype('u1'), (2, 2), 'C'), 'b': _codecs.encode('\xff', 'latin1')}
  PickleWriter w;
  w.empty_dict();
  w.mark();
  w.string("a");
  w.global("numpy._core.numeric", "_frombuffer");
  w.mark();
  std::string p = w.finish();
  p.pop_back();  // STOP
  p += std::string("\x96\x04\0\0\0\0\0\0\0", 9) + "\x09\x08\x07\x06";
  PickleWriter rest;
  write_dtype(rest, "u1");
  rest.mark();
  rest.integer(2);
  rest.integer(2);
  rest.tuple();
  rest.string("C");
  rest.tuple();
  rest.reduce();
  rest.string("b");
  rest.global("_codecs", "encode");
  rest.mark();
  rest.string("\xc3\xbf\x41");  // U+00FF 'A' in UTF-8
  rest.string("latin1");
  rest.tuple();
  rest.reduce();
  rest.set_items();
  const std::string tail = rest.finish();
  p += tail.substr(2);  // without PROTO
  ReadBudget budget(64 << 20);
  const auto tree = ltfit::read_numpy_pickle(p, budget);
  const PickleValue* a = ltfit::pickle::find_entry(tree->root(), "a");
  REQUIRE(a != nullptr);
  REQUIRE(a->kind == Kind::kTensor);
  CHECK(a->tensor[1][1].item<int>() == 6);
  const PickleValue* b = ltfit::pickle::find_entry(tree->root(), "b");
  REQUIRE(b != nullptr);
  CHECK(b->text == "\xff\x41");
}

TEST_CASE("a data pickle names nothing but NumPy's rebuilders and never runs", "[pickle][cifar]") {
  PickleWriter w;
  w.global("posix", "system");
  w.mark();
  w.string("touch pwned");
  w.tuple();
  w.reduce();
  CHECK_THAT(error_of(w.finish()), Contains("refused global 'posix.system'"));
  SECTION("an array whose bytes are not its shape's") {
    CHECK_THAT(error_of(array_pickle("numpy.core.multiarray", 2, 3, "u1", false, "\x01\x02")),
               Contains("an array of 6 items of 1 bytes holds 2 bytes"));
  }
  SECTION("a shape too large to count") {
    CHECK_THAT(error_of(array_pickle("numpy.core.multiarray", 1 << 30, 1 << 30, "f8", false, "")),
               Contains("holds 0 bytes"));
  }
  SECTION("an object dtype, a big-endian one") {
    CHECK_THAT(error_of(array_pickle("numpy.core.multiarray", 1, 1, "O", false, "x")),
               Contains("dtype 'O' is not read"));
    PickleWriter big;
    write_dtype(big, "i4", ">");
    CHECK_THAT(error_of(big.finish()), Contains("big-endian"));
  }
  SECTION("_codecs.encode with another codec") {
    PickleWriter c;
    c.global("_codecs", "encode");
    c.mark();
    c.string("x");
    c.string("rot13");
    c.tuple();
    c.reduce();
    CHECK_THAT(error_of(c.finish()), Contains("codec 'rot13'"));
  }
}

TEST_CASE("the text opcodes of protocols 0 and 1 read as Python 2 wrote them", "[pickle][cifar]") {
  // {'k': [7, -3, True, 2.5, 'a\nb\x00\'', u'\u00e9x', 123456789012L]} in protocol 0, with PUT/GET.
  const std::string p =
      "(dp0\nS'k'\np1\n(lp2\nI7\naI-3\naI01\naF2.5\naS'a\\nb\\x00\\''\naVx\\u00e9\nag1\n"
      "aL123456789012L\nas.";
  ReadBudget budget(1 << 20);
  ltfit::pickle::PickleHooks none;
  const auto tree = ltfit::pickle::unpickle(p, none, budget);
  const PickleValue* k = ltfit::pickle::find_entry(tree->root(), "k");
  REQUIRE(k != nullptr);
  REQUIRE(k->kind == Kind::kList);
  REQUIRE(k->items.size() == 8);
  CHECK(k->items[0]->integer == 7);
  CHECK(k->items[1]->integer == -3);
  CHECK(k->items[2]->kind == Kind::kBool);
  CHECK(k->items[3]->real == 2.5);
  CHECK(k->items[4]->text == std::string("a\nb\0'", 5));
  CHECK(k->items[5]->text == "x\xc3\xa9");
  CHECK(k->items[6]->text == "k");  // GET 1: the key
  CHECK(k->items[7]->integer == 123456789012);
  for (const std::string bad :
       {"I12x\n.", "S'open\n.", "L99999999999999999999999\n.", "Vbad\\u12\n.", "g9\n."}) {
    ReadBudget b(1 << 20);
    CHECK_THROWS_AS(ltfit::pickle::unpickle(bad, none, b), PickleError);
  }
}
