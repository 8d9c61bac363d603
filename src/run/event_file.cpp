// TensorBoard events file: see event_file.h.
#include "ltfit/run/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <boost/crc.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit_tensorboard.pb.h"

namespace ltfit {

namespace {

constexpr std::size_t kFlushAtBytes = std::size_t{1} << 20;  // a large image goes out at once

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int error_number) {
  throw WriteError(what + " TensorBoard events file '" + path + "': " + std::strerror(error_number),
                   error_number,
                   error_number == ENOSPC || error_number == EDQUOT || error_number == EFBIG
                       ? "free disk space, or set run.tensorboard: false"
                       : "check that the run directory is writable, or set run.tensorboard: false");
}

tb::Event new_event(std::int64_t step) {
  tb::Event event;
  event.set_wall_time(unix_seconds());
  event.set_step(step);
  return event;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string frame_record(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, mask_crc32c(crc32c(out)), 4);
  out.append(payload);
  put_le(out, mask_crc32c(crc32c(payload)), 4);
  return out;
}

EventFileWriter::EventFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create", path_, errno);
  tb::Event event = new_event(0);
  event.set_file_version("brain.Event:2");
  append(event.SerializeAsString());
  flush();
}

EventFileWriter::~EventFileWriter() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (const std::exception&) {  // flush() is where callers see errors
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::add_scalars(std::int64_t step, std::span<const std::string> tags,
                                  std::span<const double> values) {
  LTFIT_CHECK(tags.size() == values.size(), "one value per TensorBoard tag");
  tb::Event event = new_event(step);
  tb::Summary* summary = event.mutable_summary();
  for (std::size_t i = 0; i < tags.size(); ++i) {
    tb::Summary::Value* value = summary->add_value();
    value->set_tag(tags[i]);
    value->set_simple_value(static_cast<float>(values[i]));
  }
  append(event.SerializeAsString());
}

void EventFileWriter::add_image(std::int64_t step, const std::string& tag,
                                const EncodedPng& image) {
  tb::Event event = new_event(step);
  tb::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  tb::Summary::Image* picture = value->mutable_image();
  picture->set_height(image.height);
  picture->set_width(image.width);
  picture->set_colorspace(3);  // RGB
  picture->set_encoded_image_string(image.bytes);
  append(event.SerializeAsString());
}

void EventFileWriter::add_session_start(std::int64_t step) {
  tb::Event event = new_event(step);
  event.mutable_session_log()->set_status(tb::SessionLog::START);
  append(event.SerializeAsString());
}

void EventFileWriter::append(const std::string& event) {
  const std::string record = frame_record(event);
  buffer_ += record;
  bytes_ += static_cast<std::int64_t>(record.size());
  if (buffer_.size() >= kFlushAtBytes) flush();
}

void EventFileWriter::flush() {
  if (fd_ < 0)
    throw WriteError("write to TensorBoard events file '" + path_ + "' after a failure", EBADF);
  std::string_view rest = buffer_;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error_number = n < 0 ? errno : ENOSPC;
      ::close(fd_);
      fd_ = -1;
      fail("cannot write", path_, error_number);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  buffer_.clear();
}

}  // namespace ltfit
