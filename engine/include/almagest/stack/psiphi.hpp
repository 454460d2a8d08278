#pragma once
// psi/phi planes (KBMOD, Whidden et al. 2019) and their compact storage encodings.
//
//   psi_e = correlate(sci_e / var_e, K_e),  phi_e = correlate(1 / var_e, K_e^2)
//
// K_e is the exposure's PSF normalised to sum 1; correlation does not flip the kernel:
// psi(x, y) = sum_{u,v} K[v + r][u + r] * w(x + u, y + v). Invalid input pixels (mask != 0,
// non-finite sci or var, var <= 0) contribute nothing. Near edges and masked neighbours psi is
// renormalised by the fraction f = sum_valid K of PSF weight that fell on valid pixels (as KBMOD
// does) and phi by f^2, so that phi stays the true variance of psi (KBMOD divides phi by the K^2
// fraction instead, which under-states the variance of A there; see docs/stack.md):
//   psi = sum_valid K w / f,   phi = sum_valid K^2 / var / f^2.
// An output pixel with no valid weight (f = 0) is invalid. Per-exposure weights a_e are folded in
// (psi *= a_e, phi *= a_e^2).
//
// Invalid samples are stored as psi = 0, phi = 0 (FP32/FP16) or psi code -128 (INT8), so they
// add nothing to A or B and are not counted in obs_count.
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/stack/exposure_stack.hpp"

namespace almagest::stack {

enum class Encoding { Fp32, Fp16, Int8 };
std::string to_string(Encoding e);
/// "fp32", "fp16", "int8"; throws ConfigError(field) otherwise.
Encoding parse_encoding(const std::string& s, const std::string& field = "encoding");

/// Decoded psi/phi planes: [n][height][width] float, invalid = (0, 0).
struct PsiPhi {
  int width = 0, height = 0, n = 0;
  std::vector<float> psi, phi;
  std::vector<double> mjd;  ///< copied from the stack
  std::size_t pixels() const noexcept { return std::size_t(width) * std::size_t(height); }
};

/// Computes psi/phi on the CPU (multithreaded over exposures; cancellable).
PsiPhi compute_psiphi(const ExposureStack& stack, const JobContext& ctx);
/// The same on CUDA device `device` (double accumulation; agrees with the CPU to float rounding).
/// Throws BackendUnavailable without a usable device, CudaError on device failures.
PsiPhi compute_psiphi_gpu(const ExposureStack& stack, int device, const JobContext& ctx);

/// Stored planes. FP32: psi32/phi32. FP16: IEEE half bits psi16/phi16 holding psi / s_e and
/// phi / s_e^2 with s_e = sqrt(median valid phi_e) (per-image noise scaling keeps values near 1).
/// INT8: psi8 = round(psi / psi_scale_e) clamped to [-127, 127], -128 reserved for invalid;
/// phi8 = round(phi / phi_scale_e) clamped to [1, 255] (0 only where invalid), with
/// psi_scale_e = 12 s_e / 127 (clip at 12 sigma of the noise) and phi_scale_e = max phi_e / 255.
/// Decoding: FP16 psi = half(psi16) * psi_scale_e, phi = half(phi16) * phi_scale_e (float products);
/// INT8 psi = float(code) * psi_scale_e, phi = float(code) * phi_scale_e. Every backend decodes
/// with exactly these float operations, so decoded values agree bit for bit.
struct EncodedPsiPhi {
  Encoding encoding = Encoding::Fp32;
  int width = 0, height = 0, n = 0;
  std::vector<double> mjd;
  std::vector<float> psi32, phi32;
  std::vector<std::uint16_t> psi16, phi16;
  std::vector<std::int8_t> psi8;
  std::vector<std::uint8_t> phi8;
  std::vector<float> psi_scale, phi_scale;  ///< [n], FP16 and INT8 only
  std::size_t pixels() const noexcept { return std::size_t(width) * std::size_t(height); }
  std::size_t bytes_per_sample() const noexcept;  ///< 8, 4 or 2
};

EncodedPsiPhi encode(const PsiPhi& p, Encoding enc);
/// Decodes back to float planes (what every backend sums).
PsiPhi decode(const EncodedPsiPhi& e);

/// IEEE binary16 conversions (round to nearest even), used by the FP16 encoding and tests.
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);

}  // namespace almagest::stack
