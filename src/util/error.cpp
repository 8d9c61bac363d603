#include "ltfit/util/error.h"

#include <sstream>

namespace ltfit::detail {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::ostringstream out;
  out << "internal error: check `" << expr << "` failed at " << file << ":" << line;
  if (!msg.empty()) out << ": " << msg;
  throw std::logic_error(out.str());
}

}  // namespace ltfit::detail
