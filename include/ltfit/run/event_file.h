// TensorBoard's events file: a sequence of Event protocol buffers (proto/ltfit_tensorboard.proto,
// TensorBoard's own field numbers), each framed as a TFRecord:
//
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   payload (the serialized Event) | uint32 masked CRC-32C of the payload
//
// (tensorflow/core/lib/io/record_writer.cc). The first event carries file_version
// "brain.Event:2". Records are buffered and handed to the OS by flush(), so a reader that opens
// the file meanwhile (`tensorboard --logdir runs`) sees every record up to the last flush. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ltfit/pictures/image_grid.h"

namespace ltfit {

// CRC-32C (Castagnoli, reflected, as iSCSI and TFRecord use it) of `bytes`.
std::uint32_t crc32c(std::string_view bytes);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t mask_crc32c(std::uint32_t crc);

// `payload` with TFRecord's framing around it.
std::string frame_record(std::string_view payload);

class EventFileWriter {
 public:
  // Creates `path` (an existing file is an error: every session writes its own) and writes the
  // file_version event. Throws WriteError (exit 5) naming the file.
  explicit EventFileWriter(std::string path);
  // Hands over what is still buffered; a failure here is dropped (flush() reports it).
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One event at `step` with one simple_value per tag (stored as float32, as TensorBoard keeps
  // scalars). tags.size() == values.size().
  void add_scalars(std::int64_t step, std::span<const std::string> tags,
                   std::span<const double> values);
  // One event at `step` holding `image` (PNG, RGB) under `tag`.
  void add_image(std::int64_t step, const std::string& tag, const EncodedPng& image);
  // SessionLog START at `step`: TensorBoard then drops what earlier files of the folder logged
  // at steps >= `step` (a crashed session's steps after the checkpoint a run resumed from).
  void add_session_start(std::int64_t step);
  // Writes the buffered records to the file. Throws WriteError naming the file and the reason.
  void flush();

  const std::string& path() const { return path_; }
  std::int64_t bytes() const { return bytes_; }  // framed bytes added so far

 private:
  void append(const std::string& event);  // a serialized Event
  std::string path_;
  int fd_ = -1;
  std::string buffer_;  // framed records not yet written
  std::int64_t bytes_ = 0;
};

}  // namespace ltfit
