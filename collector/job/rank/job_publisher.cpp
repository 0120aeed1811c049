#include "collector/job/rank/job_publisher.h"

#include <atomic>

namespace corenoise {
namespace {

constinit std::atomic<JobPublisher> publisher{nullptr};

}  // namespace

void set_job_publisher(JobPublisher next) { publisher.store(next, std::memory_order_release); }

JobPublisher job_publisher() { return publisher.load(std::memory_order_acquire); }

}  // namespace corenoise
