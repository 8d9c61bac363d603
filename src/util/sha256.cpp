// SHA-256 through OpenSSL's EVP interface (the one not deprecated in OpenSSL 3).
#include "ltfit/util/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>

#include "ltfit/util/error.h"

namespace ltfit {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

MdCtx new_sha256_context() {
  MdCtx ctx(EVP_MD_CTX_new());
  LTFIT_CHECK(ctx != nullptr, "EVP_MD_CTX_new failed");
  LTFIT_CHECK(EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, "SHA-256 init failed");
  return ctx;
}

std::string finish_hex(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  LTFIT_CHECK(EVP_DigestFinal_ex(ctx, digest.data(), &length) == 1, "SHA-256 final failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xF];
  }
  return hex;
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  MdCtx ctx = new_sha256_context();
  LTFIT_CHECK(EVP_DigestUpdate(ctx.get(), data.data(), data.size()) == 1, "SHA-256 update failed");
  return finish_hex(ctx.get());
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError("cannot open '" + path + "' to compute its SHA-256");
  MdCtx ctx = new_sha256_context();
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    const std::streamsize n = in.gcount();
    if (n > 0) {
      LTFIT_CHECK(EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n)) == 1,
                  "SHA-256 update failed");
    }
  }
  if (in.bad()) throw RuntimeError("error reading '" + path + "' to compute its SHA-256");
  return finish_hex(ctx.get());
}

}  // namespace ltfit
