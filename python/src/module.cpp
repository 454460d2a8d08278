// The extension module almagest._almagest; the package python/almagest/ re-exports it.
#include <nanobind/stl/string.h>

#include <chrono>
#include <thread>

#include "almagest/core/gpu.hpp"
#include "almagest/core/provenance.hpp"
#include "engine_call.hpp"

NB_MODULE(_almagest, m) {
  namespace nb = nanobind;
  m.doc() = "Almagest engine bindings (docs/python.md).";
  almagest::py::register_errors(m);
  m.def("version", &almagest::version);
  m.def("gpu_summary", [] { return almagest::gpu_status().summary(); },
        "One line: the GPU the CUDA backends would use, or why there is none.");
  m.def("_sleep_cancellable", [](double seconds, int steps, nb::handle progress) {
    // A job that only waits, for tests of the GIL release and cancellation (checks its token
    // every seconds/steps, as the engines check between chunks).
    almagest::py::run_engine([&](const almagest::JobContext& ctx) {
      for (int i = 0; i < steps; ++i) {
        ctx.check_cancel();
        ctx.progress(i, steps, "sleeping");
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds / steps));
      }
    }, 1, progress);
  }, nb::arg("seconds"), nb::arg("steps") = 100, nb::arg("progress").none() = nb::none());
  almagest::py::bind_npcf(m);
  almagest::py::bind_sht(m);
  almagest::py::bind_stack(m);
  almagest::py::bind_jobs(m);
}
