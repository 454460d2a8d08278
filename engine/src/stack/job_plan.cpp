// Dry runs of stack jobs (RunOptions::dry_run): the stack's dimensions from its headers only
// (HDF5 dataset shape, WorkUnit NUMIMG and SCI_0 image size, a folder's file count and first
// image), the bytes of the stack and of psi/phi in the chosen storage, the bank size, host and
// device memory, the tiling (row bands when the device-memory limit is below the planes) and the
// estimated time from docs/benchmarks.md's stack rows (H200 scan rates; no CPU row there).
#include <filesystem>
#include <fmt/format.h>

#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "job_internal.hpp"

namespace almagest::stack::detail {

namespace fs = std::filesystem;

namespace {

struct Dims {
  std::uint64_t n = 0, w = 0, h = 0;
  bool known = false;
};

Dims stack_dims(const std::string& path) {
  Dims d;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return d;
  if (fs::is_directory(path, ec)) {
    std::string first;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string p = e.path().string();
      if (e.is_regular_file() && (p.ends_with(".fits") || p.ends_with(".fit") || p.ends_with(".fits.fz"))) {
        ++d.n;
        if (first.empty() || p < first) first = p;
      }
    }
    if (first.empty()) return d;
    io::FitsFile f = io::FitsFile::open(first);
    if (!f.try_move_named("SCI", "SCI")) f.move(2, "HDU 2");
    const auto s = f.image_shape("SCI");
    if (s.dims.size() == 2) d = {d.n, std::uint64_t(s.dims[0]), std::uint64_t(s.dims[1]), true};
    return d;
  }
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".h5" || ext == ".hdf5") {
    io::Hdf5Reader h(path);
    const auto s = h.shape("sci", 3);
    return {s[0], s[2], s[1], true};
  }
  io::FitsFile f = io::FitsFile::open(path);
  long long n = 0;
  if (!f.read_key("NUMIMG", n) || n < 1) return d;
  if (!f.try_move_named("SCI_0", "SCI_0") && !f.try_move_named("SCI_1", "SCI_1")) return d;
  const auto s = f.image_shape("SCI_0");
  if (s.dims.size() == 2) d = {std::uint64_t(n), std::uint64_t(s.dims[0]), std::uint64_t(s.dims[1]), true};
  return d;
}

std::uint64_t file_bytes(const std::string& p) {
  std::error_code ec;
  if (p.empty()) return 0;
  if (fs::is_directory(p, ec)) {
    std::uint64_t b = 0;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.is_regular_file(ec)) b += e.file_size(ec);
    return b;
  }
  const auto s = fs::file_size(p, ec);
  return ec ? 0 : std::uint64_t(s);
}

/// Scan rates of docs/benchmarks.md ("Shift-and-stack search", one H200): paired samples / s.
double gpu_rate(Method m, Encoding e) {
  if (m == Method::Fourier) return 4.77e12;
  if (m == Method::Gather) return 3.12e11;
  return e == Encoding::Fp16 ? 8.75e11 : e == Encoding::Int8 ? 7.19e11 : 1.28e12;
}

}  // namespace

StackOutcome plan_stack_job(const StackJob& job) {
  StackOutcome o;
  o.engine = "stack";
  o.operation = to_string(job.op);
  o.inputs = job.input_paths();
  jobs::PlanReport plan;
  for (const auto& out : job.output_paths()) plan.outputs.push_back(out);
  auto what = [&](const std::string& p) {
    return p == job.stack ? "stack" : p == job.candidates ? "candidate table" : p == job.common_curve ? "common curve" : "velocity list";
  };
  for (const auto& in : job.input_paths()) plan.inputs.push_back({in, file_bytes(in), what(in)});
  if (job.op == StackOp::Simulate) {
    const auto& c = job.simulate.config;
    const double px = double(c.n_exp) * c.width * c.height;
    plan.host_bytes = px * 4 * 4;  // sci, var, mask and the copy written
    plan.tiling = "one pass";
    plan.notes.push_back(fmt::format("{} exposures of {} x {}, format {}", c.n_exp, c.width, c.height, job.simulate.format));
    o.plan = plan;
    return o;
  }
  Dims d;
  try {
    d = stack_dims(job.stack);
  } catch (const Error& e) {
    plan.notes.push_back(std::string("stack dimensions unknown: ") + e.what());
  }
  const StackBackend b = resolve_stack_backend(job);
  o.backend = b.resolved.cuda() ? "cuda" : "cpu";
  if (!b.resolved.note.empty()) plan.notes.push_back(b.resolved.note);
  if (!d.known) {
    plan.notes.push_back("stack dimensions not known before reading (recorded stack of a table, or no readable header)");
    o.plan = plan;
    return o;
  }
  const double px = double(d.n) * double(d.w) * double(d.h);
  const std::size_t bps = job.encoding == Encoding::Fp32 ? 8 : job.encoding == Encoding::Fp16 ? 4 : 2;
  const double planes = px * double(bps);
  plan.notes.push_back(fmt::format("stack: {} exposures of {} x {} ({:.3g} MB as float sci/var/mask; psi/phi {:.3g} MB in {})", d.n,
                                   d.w, d.h, px * 12 / 1e6, planes / 1e6, to_string(job.encoding)));
  plan.host_bytes = px * 12 + px * 8 + planes;  // the stack, fp32 psi/phi and their encoding
  if (job.op == StackOp::Search) {
    const std::size_t nvel = job.bank_from_file ? 0 : job.search.bank.size();
    plan.notes.push_back(job.bank_from_file ? std::string("bank: read from ") + job.velocities : fmt::format("bank: {} velocities", nvel));
    const double pairs = px * double(nvel);
    if (b.resolved.cuda()) {
      plan.device_bytes = planes + double(nvel) * double(d.n) * 8;
      const double limit = double(job.search.device_memory_limit);
      if (limit > 0 && planes > limit) {
        const double bands = std::ceil(planes / limit);
        plan.tiling = fmt::format("{} row bands of the stack planes (device-memory {:.0f} MiB)", bands, limit / 1048576.0);
        if (job.method == Method::Fourier) plan.notes.push_back("the Fourier method needs the whole stack on the device: it will not fit");
      } else {
        plan.tiling = "whole stack on the device, one scan";
      }
      plan.estimated_seconds = pairs / gpu_rate(job.method, job.encoding);
      plan.notes.push_back(fmt::format("estimate: {:.3g} paired samples at the H200 rate of docs/benchmarks.md ({} {})", pairs,
                                       to_string(job.method), to_string(job.encoding)));
    } else {
      plan.tiling = fmt::format("rows over {} CPU threads", resolve_threads(job.threads));
      plan.notes.push_back(fmt::format("{:.3g} paired samples; docs/benchmarks.md has no CPU rate: no time estimate", pairs));
    }
  } else if (job.op == StackOp::Stamps) {
    plan.tiling = "one pass over the table's candidates";
    plan.notes.push_back(fmt::format("stamps {} x {}", 2 * job.stamp_radius + 1, 2 * job.stamp_radius + 1));
  } else {
    plan.tiling = b.resolved.cuda() ? "exposures on the device" : fmt::format("exposures over {} CPU threads", resolve_threads(job.threads));
    if (b.resolved.cuda()) plan.device_bytes = px * 12 + px * 8;
  }
  o.plan = plan;
  return o;
}

}  // namespace almagest::stack::detail
