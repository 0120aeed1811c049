#include "collector/job/rebuild/spill_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "probe/units.h"

namespace corenoise {
namespace {

// The text of a fixed-size field, or nullopt when it has no NUL: the
// writer always ends it with one, so a field without is not its.
std::optional<std::string_view> field_text(const char* field, std::size_t size) {
  const void* end = std::memchr(field, '\0', size);
  if (end == nullptr) return std::nullopt;
  return std::string_view(field, static_cast<const char*>(end) - field);
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

bool is_power_of_two(std::uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

// Reads `size` bytes at `offset`, through short reads and EINTR; false at
// an error or the end of the file.
bool read_exactly(int fd, void* out, std::size_t size, off_t offset) {
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, bytes, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

std::string text_problem(const char* field, std::size_t size, const char* name, bool printable) {
  const auto text = field_text(field, size);
  if (!text) {
    return std::string(name) + " is not NUL-terminated within its " + std::to_string(size) +
           " bytes";
  }
  if (printable && has_control_character(*text)) {
    return std::string(name) + " holds control characters";
  }
  return "";
}

// The fields that say how to read the rest: the layout and the capacity.
std::string layout_problem(const SpillHeader& h) {
  if (std::memcmp(h.magic, kSpillMagic, sizeof(kSpillMagic) - 1) != 0) {
    return "not a spill file of this corenoise";
  }
  if (h.magic[7] != kSpillMagic[7]) {
    return "a spill file of another corenoise (layout " +
           std::to_string(static_cast<unsigned char>(h.magic[7])) + "; this one reads layout " +
           std::to_string(static_cast<unsigned char>(kSpillMagic[7])) + ")";
  }
  if (h.header_bytes != sizeof(SpillHeader)) {
    return "a header of " + std::to_string(h.header_bytes) + " bytes, this corenoise's has " +
           std::to_string(sizeof(SpillHeader)) + " (another build)";
  }
  if (h.bin_capacity < 1 || h.bin_capacity > kMaxStepBins) {
    return "a capacity of " + std::to_string(h.bin_capacity) + " bins, expected 1 to " +
           std::to_string(kMaxStepBins);
  }
  return "";
}

std::string step_problem(const SpillHeader& h, std::size_t bins_read) {
  const std::uint64_t steps = h.step_counts[0], per_bin = h.step_counts[1], bins = h.step_counts[2];
  if (steps == 0 && per_bin == 0 && bins == 0) return "";  // not attached yet: no steps
  if (steps > kMaxSpillSteps) return std::to_string(steps) + " steps, more than any job makes";
  if (!is_power_of_two(per_bin) || (per_bin > 1 && per_bin > steps)) {
    return std::to_string(per_bin) + " steps per bin for " + std::to_string(steps) +
           " steps (expected a power of two, at most the steps)";
  }
  if (bins > h.bin_capacity) {
    return std::to_string(bins) + " bins in use, more than its capacity of " +
           std::to_string(h.bin_capacity);
  }
  if (bins != bins_read) {
    return std::to_string(bins) + " bins in use but " + std::to_string(bins_read) + " held";
  }
  // steps <= (bins + 1) * per_bin, without overflow: per_bin <= 2^53, bins <= 2^16.
  if (steps / per_bin > bins + 1 || (steps / per_bin == bins + 1 && steps % per_bin != 0)) {
    return std::to_string(steps) + " steps do not fit in " + std::to_string(bins) + " bins of " +
           std::to_string(per_bin);
  }
  return "";
}

}  // namespace

std::string spilled_rank_problem(const SpilledRank& rank) {
  const SpillHeader& h = rank.header;
  if (std::string problem = layout_problem(h); !problem.empty()) return problem;
  if (h.size < 1) return "a job of " + std::to_string(h.size) + " ranks";
  if (h.rank < 0 || h.rank >= h.size) {
    return "rank " + std::to_string(h.rank) + " of a job of " + std::to_string(h.size) + " ranks";
  }
  if (h.pid <= 0) return "pid " + std::to_string(h.pid);
  for (const std::string& problem :
       {text_problem(h.host, sizeof(h.host), "the host name", true),
        text_problem(h.family, sizeof(h.family), "the MPI family", true),
        text_problem(h.program, sizeof(h.program), "the program", false)}) {
    if (!problem.empty()) return problem;
  }
  if (h.family[0] == '\0') return "no MPI family";
  for (const auto& [value, name] :
       {std::pair{h.started_unix_seconds, "started"}, std::pair{h.updated_unix_seconds, "updated"},
        std::pair{h.finalized_unix_seconds, "reached MPI_Finalize"}}) {
    if (!std::isfinite(value) || value < 0 || value > kMaxSpillFigure) {
      return std::string("the time it ") + name + ", " + general_text(value) + ", is not a time";
    }
  }
  for (std::size_t i = 0; i < kRankMeasureCount; ++i) {
    const double value = h.measures[i];
    if (!std::isfinite(value) || std::fabs(value) > kMaxSpillFigure) {
      return "measure " + std::to_string(i) + " of " + std::to_string(kRankMeasureCount) + " is " +
             general_text(value);
    }
  }
  if (std::string problem = step_problem(h, rank.bins.size()); !problem.empty()) return problem;
  for (std::size_t i = 0; i < rank.bins.size(); ++i) {
    const double wait = rank.bins[i];
    if (!(wait >= 0 && wait <= kMaxSpillFigure)) {
      return "bin " + std::to_string(i) + " holds a wait of " + general_text(wait) + " s";
    }
  }
  return "";
}

std::optional<SpilledRank> read_spill(const std::string& path, std::string* error) {
  const auto fail = [&](const std::string& why) -> std::optional<SpilledRank> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  // O_NONBLOCK: opening a FIFO named like a spill file must not wait for a
  // writer. Closed on every return.
  struct Descriptor {
    int fd;
    ~Descriptor() {
      if (fd >= 0) ::close(fd);
    }
  } file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) return fail(std::string("cannot open it: ") + std::strerror(errno));
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) {
    return fail(std::string("cannot stat it: ") + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode)) return fail("not a regular file");
  const auto bytes = static_cast<std::uint64_t>(status.st_size);

  SpilledRank rank;
  rank.path = path;
  SpillHeader& h = rank.header;
  const std::size_t head = std::min<std::uint64_t>(bytes, sizeof(SpillHeader));
  if (!read_exactly(file.fd, &h, head, 0)) {
    return fail("cannot read its header (cut short as it was read?)");
  }
  if (bytes == 0) return fail("empty, not a spill file");
  if (head < 5 || std::memcmp(h.magic, kSpillMagic, 5) != 0) {
    return fail("not a spill file (no 'cnjob' at its start)");
  }
  if (bytes < sizeof(SpillHeader)) {
    if (head >= sizeof(h.magic) && h.magic[7] != kSpillMagic[7]) return fail(layout_problem(h));
    return fail("truncated: " + std::to_string(bytes) +
                " bytes, less than a spill file's header of " +
                std::to_string(sizeof(SpillHeader)));
  }
  if (std::string problem = layout_problem(h); !problem.empty()) return fail(problem);
  // The writer allocates exactly this (posix_fallocate), so any other size
  // is a file cut short or written to by something else.
  const std::uint64_t expected =
      sizeof(SpillHeader) + std::uint64_t{h.bin_capacity} * sizeof(double);
  if (bytes != expected) {
    return fail((bytes < expected ? "truncated: " : "longer than a spill file: ") +
                std::to_string(bytes) + " bytes, expected " + std::to_string(expected) +
                " for a header and " + std::to_string(h.bin_capacity) + " bins");
  }
  // Only the bins in use are read: at most bin_capacity, checked above.
  const std::uint64_t in_use = std::min<std::uint64_t>(h.step_counts[2], h.bin_capacity);
  rank.bins.resize(in_use);
  if (!read_exactly(file.fd, rank.bins.data(), in_use * sizeof(double), sizeof(SpillHeader))) {
    return fail("cannot read its bins (cut short as it was read?)");
  }
  if (std::string problem = spilled_rank_problem(rank); !problem.empty()) return fail(problem);
  for (unsigned cpu = 0; cpu < 1024; ++cpu) {
    if (h.cpu_mask[cpu / 64] & (std::uint64_t{1} << (cpu % 64))) rank.cpus.push_back(cpu);
  }
  return rank;
}

}  // namespace corenoise
