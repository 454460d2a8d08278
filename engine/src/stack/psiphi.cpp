#include "almagest/stack/psiphi.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/kernels/stack_cuda.hpp"
#include "core/parallel.hpp"

namespace almagest::stack {

std::string to_string(Encoding e) {
  switch (e) {
    case Encoding::Fp32: return "fp32";
    case Encoding::Fp16: return "fp16";
    case Encoding::Int8: return "int8";
  }
  return "?";
}

Encoding parse_encoding(const std::string& s, const std::string& field) {
  if (s == "fp32") return Encoding::Fp32;
  if (s == "fp16") return Encoding::Fp16;
  if (s == "int8") return Encoding::Int8;
  throw ConfigError(field, "unknown encoding '" + s + "' (expected fp32, fp16 or int8)");
}

std::size_t EncodedPsiPhi::bytes_per_sample() const noexcept {
  return encoding == Encoding::Fp32 ? 8 : encoding == Encoding::Fp16 ? 4 : 2;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (mag >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (mag < 0x38800000u) {  // subnormal half or zero
    if (mag < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const int e = static_cast<int>(mag >> 23);
    std::uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;  // 14..24
    // value = m * 2^(e-150); half subnormal unit 2^-24 -> h_exact = m * 2^(e-126)
    const std::uint32_t full_shift = static_cast<std::uint32_t>(shift);
    std::uint32_t h = m >> full_shift;
    const std::uint32_t rem = m & ((1u << full_shift) - 1u);
    const std::uint32_t half = 1u << (full_shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // normal
  std::uint32_t h = ((mag - 0x38000000u) >> 13);
  const std::uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (std::uint32_t(h) & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

PsiPhi compute_psiphi(const ExposureStack& stack, const JobContext& ctx) {
  stack.validate();
  PsiPhi out;
  out.width = stack.width;
  out.height = stack.height;
  out.n = static_cast<int>(stack.size());
  out.mjd = stack.mjd;
  const std::size_t np = stack.pixels();
  out.psi.assign(np * out.n, 0.0f);
  out.phi.assign(np * out.n, 0.0f);
  const int W = stack.width, H = stack.height;
  parallel::parallel_for(out.n, ctx.threads, ctx, "psi/phi", [&](std::size_t e) {
    const Psf& psf = stack.psf[e];
    const int K = psf.size, r = K / 2;
    double ksum = 0;
    for (float k : psf.kernel) ksum += k;
    std::vector<double> k1(psf.kernel.size()), k2(psf.kernel.size());
    for (std::size_t i = 0; i < k1.size(); ++i) {
      k1[i] = psf.kernel[i] / ksum;
      k2[i] = k1[i] * k1[i];
    }
    const std::size_t base = e * np;
    std::vector<double> w1(np), w2(np);
    std::vector<std::uint8_t> ok(np);
    for (std::size_t i = 0; i < np; ++i) {
      const float s = stack.sci[base + i], v = stack.var[base + i];
      const bool good = stack.mask[base + i] == 0 && std::isfinite(s) && std::isfinite(v) && v > 0;
      ok[i] = good;
      w1[i] = good ? double(s) / double(v) : 0.0;
      w2[i] = good ? 1.0 / double(v) : 0.0;
    }
    const double a = stack.weight.empty() ? 1.0 : stack.weight[e];
    for (int y = 0; y < H; ++y) {
      for (int x = 0; x < W; ++x) {
        double s1 = 0, p1 = 0, s2 = 0;
        for (int v = -r; v <= r; ++v) {
          const int yy = y + v;
          if (yy < 0 || yy >= H) continue;
          for (int u = -r; u <= r; ++u) {
            const int xx = x + u;
            if (xx < 0 || xx >= W) continue;
            const std::size_t i = std::size_t(yy) * W + xx;
            if (!ok[i]) continue;
            const std::size_t k = std::size_t(v + r) * K + (u + r);
            s1 += k1[k] * w1[i];
            p1 += k1[k];
            s2 += k2[k] * w2[i];
          }
        }
        const std::size_t o = base + std::size_t(y) * W + x;
        if (p1 > 0) {
          out.psi[o] = static_cast<float>(a * s1 / p1);
          out.phi[o] = static_cast<float>(a * a * s2 / (p1 * p1));
        }
      }
    }
  });
  return out;
}

PsiPhi compute_psiphi_gpu(const ExposureStack& stack, int device, const JobContext& ctx) {
  stack.validate();
  kernels::StackKernels* k = cuda_module().stack();
  if (!k) throw BackendUnavailable("the CUDA module was built without the shift-and-stack kernels");
  PsiPhi out;
  out.width = stack.width;
  out.height = stack.height;
  out.n = static_cast<int>(stack.size());
  out.mjd = stack.mjd;
  out.psi.resize(stack.pixels() * out.n);
  out.phi.resize(stack.pixels() * out.n);
  std::vector<float> psf;
  std::vector<std::size_t> off(out.n);
  std::vector<int> size(out.n);
  for (int e = 0; e < out.n; ++e) {
    off[e] = psf.size();
    size[e] = stack.psf[e].size;
    psf.insert(psf.end(), stack.psf[e].kernel.begin(), stack.psf[e].kernel.end());
  }
  kernels::PsiPhiInputs in;
  in.n = out.n;
  in.width = out.width;
  in.height = out.height;
  in.sci = stack.sci.data();
  in.var = stack.var.data();
  in.mask = stack.mask.data();
  in.psf = psf.data();
  in.psf_offset = off.data();
  in.psf_size = size.data();
  in.weight = stack.weight.empty() ? nullptr : stack.weight.data();
  ctx.check_cancel();
  with_cuda_errors([&] {
    k->psiphi(in, out.psi.data(), out.phi.data(), device);
    return 0;
  });
  ctx.progress(1, 1, "psi/phi (gpu)");
  return out;
}

namespace {
double median_valid_phi(const float* phi, std::size_t n) {
  std::vector<float> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (phi[i] > 0) v.push_back(phi[i]);
  if (v.empty()) return 1.0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

EncodedPsiPhi encode(const PsiPhi& p, Encoding enc) {
  EncodedPsiPhi e;
  e.encoding = enc;
  e.width = p.width;
  e.height = p.height;
  e.n = p.n;
  e.mjd = p.mjd;
  const std::size_t np = p.pixels(), total = np * p.n;
  if (enc == Encoding::Fp32) {
    e.psi32 = p.psi;
    e.phi32 = p.phi;
    return e;
  }
  e.psi_scale.resize(p.n);
  e.phi_scale.resize(p.n);
  if (enc == Encoding::Fp16) {
    e.psi16.resize(total);
    e.phi16.resize(total);
  } else {
    e.psi8.resize(total);
    e.phi8.resize(total);
  }
  for (int im = 0; im < p.n; ++im) {
    const std::size_t base = std::size_t(im) * np;
    const double med = median_valid_phi(p.phi.data() + base, np);
    const double s = std::sqrt(med);
    if (enc == Encoding::Fp16) {
      const float ps = static_cast<float>(s), fs = static_cast<float>(med);
      e.psi_scale[im] = ps;
      e.phi_scale[im] = fs;
      for (std::size_t i = 0; i < np; ++i) {
        const float ph = p.phi[base + i];
        if (ph > 0) {
          e.psi16[base + i] = float_to_half(static_cast<float>(p.psi[base + i] / s));
          std::uint16_t h = float_to_half(static_cast<float>(ph / med));
          if ((h & 0x7fffu) == 0) h = 0x0001u;  // keep valid samples valid
          e.phi16[base + i] = h;
        } else {
          e.psi16[base + i] = 0;
          e.phi16[base + i] = 0;
        }
      }
    } else {
      double maxphi = 0;
      for (std::size_t i = 0; i < np; ++i) maxphi = std::max<double>(maxphi, p.phi[base + i]);
      const float ps = static_cast<float>(12.0 * s / 127.0);
      const float fs = static_cast<float>(maxphi > 0 ? maxphi / 255.0 : 1.0);
      e.psi_scale[im] = ps;
      e.phi_scale[im] = fs;
      for (std::size_t i = 0; i < np; ++i) {
        const float ph = p.phi[base + i];
        if (ph > 0) {
          const double q = std::nearbyint(p.psi[base + i] / double(ps));
          e.psi8[base + i] = static_cast<std::int8_t>(std::clamp(q, -127.0, 127.0));
          const double f = std::nearbyint(ph / double(fs));
          e.phi8[base + i] = static_cast<std::uint8_t>(std::clamp(f, 1.0, 255.0));
        } else {
          e.psi8[base + i] = -128;
          e.phi8[base + i] = 0;
        }
      }
    }
  }
  return e;
}

PsiPhi decode(const EncodedPsiPhi& e) {
  PsiPhi p;
  p.width = e.width;
  p.height = e.height;
  p.n = e.n;
  p.mjd = e.mjd;
  const std::size_t np = e.pixels(), total = np * e.n;
  if (e.encoding == Encoding::Fp32) {
    p.psi = e.psi32;
    p.phi = e.phi32;
    return p;
  }
  p.psi.resize(total);
  p.phi.resize(total);
  for (int im = 0; im < e.n; ++im) {
    const float ps = e.psi_scale[im], fs = e.phi_scale[im];
    const std::size_t base = std::size_t(im) * np;
    for (std::size_t i = base; i < base + np; ++i) {
      if (e.encoding == Encoding::Fp16) {
        p.psi[i] = half_to_float(e.psi16[i]) * ps;
        p.phi[i] = half_to_float(e.phi16[i]) * fs;
      } else {
        const std::int8_t c = e.psi8[i];
        p.psi[i] = c == -128 ? 0.0f : static_cast<float>(c) * ps;
        p.phi[i] = static_cast<float>(e.phi8[i]) * fs;
      }
    }
  }
  return p;
}

}  // namespace almagest::stack
