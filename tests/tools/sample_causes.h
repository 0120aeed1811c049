// The causes of made-up verdicts (probe/cause.h), as judge() would leave
// them: a power-limited clock (throttled), detours mostly in one NIC's IRQ
// with the tracer on (noisy), low bandwidth (contended), and a CPU outside
// the process's affinity (skipped); Cause{} for any other state. For the
// sample reports, and for tests whose cause only has to be a real one.
#pragma once

#include <array>

#include "probe/cause.h"

namespace corenoise {

inline Cause sample_cause(CoreState state) {
  Cause c;
  c.state = state;
  c.cpu_kind = "default";
  switch (state) {
    case CoreState::throttled:
      c.figure = 2.46e9;
      c.reference = 3.0e9;
      c.ratio = 1.22;
      c.interval = std::array<double, 2>{1.19, 1.25};
      return c;
    case CoreState::noisy: {
      LostTime lost;
      lost.noise_ratio = 0.315;
      lost.detours = 2410;
      lost.max_seconds = 412e-6;
      lost.total_seconds = 0.63;
      lost.interrupts = 2395;
      trace::Culprit irq;
      irq.kind = trace::CulpritKind::irq;
      irq.name = "mlx5_comp3";
      irq.id = 45;
      irq.detours = 2390;
      irq.seconds = 0.61;
      lost.traced = LostTime::Traced{{irq}, 0.62, false};
      c.lost = lost;
      c.ratio = 0.302;
      c.interval = std::array<double, 2>{0.288, 0.316};
      return c;
    }
    case CoreState::contended:
      c.figure = 9.2e9;
      c.ratio = 1.31;
      c.interval = std::array<double, 2>{1.24, 1.38};
      return c;
    case CoreState::skipped:
      return skipped_cause(SkipReason::other, "outside the process's affinity");
    default:
      return {};
  }
}

}  // namespace corenoise
