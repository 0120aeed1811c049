#include "collector/job/rank/spill_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace corenoise {
namespace {

void copy_text(char* out, std::size_t size, const std::string& text) {
  const std::size_t n = std::min(size - 1, text.size());
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

SpillWriter::SpillWriter(const std::string& dir, int rank, int size, const std::string& family,
                         const std::string& program, const std::vector<unsigned>& cpus,
                         double started_unix_seconds, std::size_t bin_capacity) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);  // every rank races to; EEXIST is fine
  path_ = (std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".spill")).string();
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
  bytes_ = sizeof(SpillHeader) + bin_capacity * sizeof(double);
  // Allocated now, not sparse: a store into a page the file system cannot
  // allocate later (a full disk, a quota) would be a SIGBUS in the job.
  if (const int error = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes_)); error != 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot allocate " + path_ + ": " + std::strerror(error));
  }
  map_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map_ == MAP_FAILED) {
    ::close(fd_);
    throw std::runtime_error("cannot map " + path_ + ": " + std::strerror(errno));
  }
  header_ = static_cast<SpillHeader*>(map_);
  bins_ = reinterpret_cast<double*>(static_cast<char*>(map_) + sizeof(SpillHeader));
  std::memcpy(header_->magic, kSpillMagic, sizeof(kSpillMagic));
  header_->header_bytes = sizeof(SpillHeader);
  header_->bin_capacity = static_cast<std::uint32_t>(bin_capacity);
  header_->rank = rank;
  header_->size = size;
  header_->pid = ::getpid();
  char host[64] = {};
  ::gethostname(host, sizeof(host) - 1);
  copy_text(header_->host, sizeof(header_->host), host);
  copy_text(header_->family, sizeof(header_->family), family);
  copy_text(header_->program, sizeof(header_->program), program);
  for (unsigned cpu : cpus) {
    if (cpu < 1024) header_->cpu_mask[cpu / 64] |= std::uint64_t{1} << (cpu % 64);
  }
  header_->started_unix_seconds = started_unix_seconds;
}

SpillWriter::~SpillWriter() {
  if (map_ != nullptr && map_ != MAP_FAILED) ::munmap(map_, bytes_);
  if (fd_ >= 0) ::close(fd_);
}

void SpillWriter::update(const RankMeasures& measures, double now_unix_seconds) {
  std::memcpy(header_->measures, as_array(measures), sizeof(header_->measures));
  header_->updated_unix_seconds = now_unix_seconds;
}

void SpillWriter::keep_epoch(long epoch, const RankSummary& summary) {
  SpillHeader::EpochSlot& slot = header_->epochs[epoch % 2];
  // The stores in this order as a killed process leaves them: a signal
  // fence is all a SIGKILL needs (the pages are the file's either way).
  slot.epoch = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(slot.summary, as_array(summary), sizeof(slot.summary));
  std::atomic_signal_fence(std::memory_order_seq_cst);
  slot.epoch = epoch;
}

bool SpillWriter::write_beside(const std::string& dir, const char* name, const std::string& text) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  const std::string partial = path + ".partial";
  FILE* file = std::fopen(partial.c_str(), "we");
  bool written = file != nullptr && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (file != nullptr) written = std::fclose(file) == 0 && written;
  // Renamed over the last one: a reader sees one epoch's file or the other.
  if (written && std::rename(partial.c_str(), path.c_str()) == 0) return true;
  std::fprintf(stderr, "corenoise job: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  ::unlink(partial.c_str());
  return false;
}

void SpillWriter::remove() { ::unlink(path_.c_str()); }

}  // namespace corenoise
