// plan_sht_job (sht/job.hpp): the dry-run report of an sht job from the file headers: map and
// alm sizes, host and device memory, batching and an estimated time from the SHT rows of
// docs/benchmarks.md. Nothing is transformed or written.
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/job.hpp"
#include "job_files.hpp"

namespace almagest::sht {

namespace {

/// ms per transform at nside 1024, lmax 3071 (docs/benchmarks.md): the H200 run of record
/// (device-resident, one column) and the CPU backend with 2 threads.
struct Cost {
  double synth0, adjoint0, synth2, adjoint2;
};
constexpr Cost kGpu1024{2.583, 3.107, 8.996, 11.508};
constexpr Cost kCpu1024Two{937, 797, 2830, 2616};

std::uint64_t file_size(const std::string& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

}  // namespace

jobs::PlanReport plan_sht_job(const ShtJob& s) {
  jobs::PlanReport r;
  const ShtLayout layout = s.layout();
  const bool alm_in = s.op == ShtOp::Synth || (s.op == ShtOp::Cl && files::holds_alm(s.input));
  r.inputs.push_back({s.input, file_size(s.input), alm_in ? "alm" : "map"});
  if (!s.mask.empty()) r.inputs.push_back({s.mask, file_size(s.mask), "mask"});
  if (!s.ring_weights.empty()) r.inputs.push_back({s.ring_weights, file_size(s.ring_weights), "ring weights"});
  if (!s.pixel_weights.empty()) r.inputs.push_back({s.pixel_weights, file_size(s.pixel_weights), "pixel weights"});
  if (!s.cross.empty()) r.inputs.push_back({s.cross, file_size(s.cross), "second map or alm (cross)"});
  r.outputs = {s.output};

  int nside = s.nside, lmax = s.lmax;
  if (alm_in) {
    if (lmax < 0) {
      // The band limit is the file's: read the chosen sets (alm files are small beside maps).
      const int nsets = files::count_alm_sets(s.input);
      std::vector<int> which = s.field;
      if (which.empty()) which = {0};
      if (*std::max_element(which.begin(), which.end()) < nsets) files::read_alm_sets(s.input, which, -1, lmax);
    }
  } else {
    const int n = files::probe_map_nside(s.input);
    if (nside <= 0) nside = n;
    if (n < 0) r.notes.push_back("the input's NSIDE is not in its header; the run reads the whole file");
    if (lmax < 0 && nside > 0) lmax = 3 * nside - 1;
  }
  const int nc = ncomp(layout);
  if (s.op == ShtOp::Cl && alm_in) {
    r.tiling = "no transform (spectra of the alm)";
    r.host_bytes = 2.0 * nc * 16.0 * static_cast<double>(alm_size(std::max(lmax, 0)));
    r.notes.push_back(fmt::format("alm: {} set(s), lmax {}", nc, lmax));
    return r;
  }
  if (nside <= 0 || lmax < 0) {
    r.notes.push_back("sizes unknown until the input is read");
    return r;
  }
  const double npix = static_cast<double>(npix_of(nside));
  const double nalm = static_cast<double>(alm_size(lmax));
  const double maps = nc * 8.0 * npix, alms = nc * 16.0 * nalm;
  r.notes.push_back(fmt::format("map: NSIDE {}, {} pixel(s) per component, {} component(s) ({:.1f} MB)", nside,
                                npix_of(nside), nc, maps / 1e6));
  r.notes.push_back(fmt::format("alm: lmax {} (mmax {}), {} coefficient(s) per component ({:.1f} MB)", lmax, lmax,
                                alm_size(lmax), alms / 1e6));
  // Host: the map as read and as transformed, the output, alm and the iteration's residual.
  const int maps_in = s.cross.empty() ? 1 : 2;
  r.host_bytes = maps_in * 2.0 * maps + maps + 3.0 * alms;

  ResolvedBackend b = resolve_backend(s.backend);
  if (!b.note.empty()) r.notes.push_back(b.note);
  const bool gpu = b.cuda();
  if (gpu) {
    // Device: map and alm buffers, the ring FFT work areas (complex, one per pixel), and the
    // spin-0 adjoint's skip table (18 bytes per start-table entry, kept from NSIDE 2048).
    r.device_bytes = maps + alms + 2.0 * maps + (nside >= 2048 && layout != ShtLayout::Spin2 ? 18.0 * nalm : 0.0);
    r.notes.push_back("device memory: buffers, FFT work areas and the skip table; the plan's Legendre start "
                      "tables are not counted");
  }
  r.tiling = fmt::format("{} plan(s) ({}), one column per call", layout == ShtLayout::Pol ? 2 : 1,
                         layout == ShtLayout::Pol ? "spin 0 and spin 2" : layout == ShtLayout::Spin2 ? "spin 2" : "spin 0");

  // Transforms: synthesis and adjoint counts of the operation.
  double nsyn = 0, nadj = 0;
  const int iter = s.pixel_weights.empty() ? s.iter : 0;
  switch (s.op) {
    case ShtOp::Synth: nsyn = 1; break;
    case ShtOp::Adjoint: nadj = 1; break;
    case ShtOp::Map2alm: nadj = 1 + iter; nsyn = iter; break;
    case ShtOp::Cl: nadj = maps_in * (1 + iter); nsyn = maps_in * iter; break;
    case ShtOp::Smooth: nadj = 1 + iter; nsyn = iter + 1; break;
    case ShtOp::Inverse: nadj = 1; nsyn = 1; break;  // per CGLS iteration
  }
  const Cost c = gpu ? kGpu1024 : kCpu1024Two;
  const double scale = (lmax + 1.0) * (lmax + 1.0) / (3072.0 * 3072.0) * (nside / 1024.0) *
                       (gpu ? 1.0 : 2.0 / std::max(1, resolve_threads(s.threads)));
  double ms = 0;
  if (layout != ShtLayout::Spin2) ms += nsyn * c.synth0 + nadj * c.adjoint0;
  if (layout != ShtLayout::Scalar) ms += nsyn * c.synth2 + nadj * c.adjoint2;
  ms *= scale;
  if (s.op == ShtOp::Inverse) {
    r.notes.push_back(fmt::format("CGLS: about {:.3g} s per iteration, at most {} iterations", ms / 1e3, s.max_iter));
    r.estimated_seconds = ms / 1e3 * std::min(s.max_iter, 100);
    r.notes.push_back("estimated time assumes min(max-iter, 100) iterations");
  } else {
    r.estimated_seconds = ms / 1e3;
  }
  r.notes.push_back(std::string("time model: docs/benchmarks.md's SHT rows at NSIDE 1024 (") +
                    (gpu ? "H200, device-resident" : "CPU, 2 threads") + "), scaled by lmax^2 NSIDE; reads and writes not included");
  return r;
}

}  // namespace almagest::sht
