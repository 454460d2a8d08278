#pragma once
// The adjoint's polar ring pairs as one DFT per pair in a block's shared memory (host and
// device): pair q holds N = 4 n points (n = q + 1), y_j = map_N(j) + i map_S(j), and its row
// Y(k) = sum_j y_j e^{-2 pi i j k / N}, k < N. Split by four in frequency (j = t + n r,
// k = 4 s + rho):
//   Y(4 s + rho) = DFT_n(z_rho)(s),  z_rho(t) = e^{-2 pi i t rho / N} sum_r (-i)^{r rho} y_{t + n r},
// and each DFT_n by Bluestein, b_t = e^{i pi t^2 / n}:
//   DFT_n(z)(s) = conj(b_s) [(z conj(b)) (*) h](s),  h_j = b_j, h_{L - j} = b_j (0 < j < n),
// a cyclic convolution of length L >= 2 n - 1 (2^a or 3 * 2^a) through an FFT of length L, the
// FFT of h / L taken from a table built once per plan. The FFT is a self-sorting (Stockham)
// mixed-radix one (radix 8, then a 4 or a 2, then a 3 where L has that factor), each pass a set
// of independent butterflies that read R strided inputs and write R outputs; the kernel runs the
// passes from one shared buffer to another, with the twiddles from a table of L / 4 entries in
// shared memory. The functions here are the pieces of that kernel (sht_polar_dft.cu) and of its
// CPU twin (tests/identities/test_sht_polar_dft.cpp), which runs them over the same butterflies.
#include "sht_math.cuh"

#ifdef __CUDACC__
#define PDFT_UNROLL _Pragma("unroll")
#else
#define PDFT_UNROLL
#endif

namespace almagest::kernels::sht::pdft {

/// Largest Bluestein length of the device path (two padded buffers of it per block: 147 KB).
inline constexpr int kMaxLength = 4096;
/// Twiddle table size: every length 2^a or 3 * 2^a <= kMaxLength divides it.
inline constexpr int kTwiddles = 3 * kMaxLength;
/// Largest ring pair size n (= q + 1) the device path takes: 2 n - 1 <= kMaxLength.
inline constexpr int kMaxQuarter = kMaxLength / 2;

/// The Bluestein length of quarter size n: the smallest 2^a or 3 * 2^a >= max(2 n - 1, 8).
SHT_HD constexpr int quarter_length(int n) {
  const int need = 2 * n - 1 < 8 ? 8 : 2 * n - 1;
  int L = 8;
  while (L < need) L *= 2;
  if (L / 4 * 3 >= need && L >= 16) L = L / 4 * 3;
  return L;
}

/// Offset of quarter size n's chirp b_t (t < n) in the chirp table: n (n - 1) / 2.
SHT_HD long long chirp_offset(int n) { return static_cast<long long>(n) * (n - 1) / 2; }

SHT_HD cplx mulc(cplx a, cplx b) {  // a conj(b) (cmul, conjc: sht_math.cuh)
  return {a.re * b.re + a.im * b.im, a.im * b.re - a.re * b.im};
}
SHT_HD cplx add(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
SHT_HD cplx sub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }
/// sign i x (sign = +-1).
SHT_HD cplx rot(cplx x, int sign) { return sign > 0 ? cplx{-x.im, x.re} : cplx{x.im, -x.re}; }

/// Radix of FFT pass p of length L (8s first, then a 4 or a 2, then a 3 where 3 divides L: every
/// pass's Ns, the product of the radices before it, is then a power of two) and the number of
/// passes.
SHT_HD constexpr int pass_count(int L) {
  int p = L % 3 == 0 ? 1 : 0;
  int m = L % 3 == 0 ? L / 3 : L;
  while (m >= 8) {
    m /= 8;
    ++p;
  }
  return m > 1 ? p + 1 : p;
}
SHT_HD constexpr int pass_radix(int L, int p) {
  int m = L % 3 == 0 ? L / 3 : L;  // the power of two
  int eights = 0;
  while (m >= 8) {
    m /= 8;
    ++eights;
  }
  if (p < eights) return 8;
  if (p == eights && m > 1) return m;
  return 3;
}

/// In-place DFT of R points, y_k = sum_r v_r e^{sign 2 pi i r k / R}.
template <int R>
SHT_HD void small_dft(cplx (&v)[R], int sign) {
  if constexpr (R == 2) {
    const cplx a = v[0];
    v[0] = add(a, v[1]);
    v[1] = sub(a, v[1]);
  } else if constexpr (R == 3) {
    constexpr double h = 0.86602540378443864676372317075293618;  // sqrt(3) / 2
    const cplx s = add(v[1], v[2]), d = sub(v[1], v[2]);
    const cplx m = {v[0].re - 0.5 * s.re, v[0].im - 0.5 * s.im};
    const cplx r = rot({h * d.re, h * d.im}, sign);
    v[0] = add(v[0], s);
    v[1] = add(m, r);
    v[2] = sub(m, r);
  } else if constexpr (R == 4) {
    const cplx a = add(v[0], v[2]), b = sub(v[0], v[2]);
    const cplx c = add(v[1], v[3]), d = rot(sub(v[1], v[3]), sign);
    v[0] = add(a, c);
    v[2] = sub(a, c);
    v[1] = add(b, d);
    v[3] = sub(b, d);
  } else {
    static_assert(R == 8, "radix");
    constexpr double h = 0.70710678118654752440084436210484903;  // 1 / sqrt(2)
    cplx e[4] = {v[0], v[2], v[4], v[6]}, o[4] = {v[1], v[3], v[5], v[7]};
    small_dft<4>(e, sign);
    small_dft<4>(o, sign);
    // o_k e^{sign 2 pi i k / 8}
    o[1] = {h * (o[1].re - sign * o[1].im), h * (o[1].im + sign * o[1].re)};
    o[2] = rot(o[2], sign);
    o[3] = {h * (-o[3].re - sign * o[3].im), h * (-o[3].im + sign * o[3].re)};
    PDFT_UNROLL
    for (int k = 0; k < 4; ++k) {
      v[k] = add(e[k], o[k]);
      v[k + 4] = sub(e[k], o[k]);
    }
  }
}

/// e^{-2 pi i x / L} for 0 <= x < L from the block's table tws[m] = e^{-2 pi i m / L}, m < L / 4
/// (filled from tw: tws[m] = tw[m kTwiddles / L]), times (-i)^q for the quarter q of x.
SHT_HD cplx twiddle(const cplx* tws, int L, int x) {
  const int Q = L / 4;
  const int q = (x >= Q) + (x >= 2 * Q) + (x >= 3 * Q);
  const cplx w = tws[x - q * Q];
  switch (q) {
    case 0: return w;
    case 1: return {w.im, -w.re};   // -i w
    case 2: return {-w.re, -w.im};  // -w
    default: return {-w.im, w.re};  // i w
  }
}

/// Butterfly j (< L / R) of a Stockham pass with Ns = 2^lg (the product of the earlier passes'
/// radices): its inputs x_{j + r L / R} (given in v) times the twiddles w^r, w = e^{sign 2 pi i
/// (j mod Ns) / (Ns R)}, then their DFT. w from the block's table (twiddle), its powers as
/// products of at most three factors (one table read instead of R - 1).
template <int R>
SHT_HD void butterfly(cplx (&v)[R], int j, int lg, int sign, const cplx* tws, int L) {
  const int k = j & ((1 << lg) - 1);
  if (k != 0) {
    const int x = k * ((L / R) >> lg);  // w = e^{sign 2 pi i x / L}
    cplx w[R];
    w[1] = twiddle(tws, L, x);
    if constexpr (R >= 3) w[2] = cmul(w[1], w[1]);
    if constexpr (R >= 4) w[3] = cmul(w[2], w[1]);
    if constexpr (R == 8) {
      w[4] = cmul(w[2], w[2]);
      w[5] = cmul(w[4], w[1]);
      w[6] = cmul(w[3], w[3]);
      w[7] = cmul(w[4], w[3]);
    }
    PDFT_UNROLL
    for (int r = 1; r < R; ++r) v[r] = sign < 0 ? cmul(v[r], w[r]) : mulc(v[r], w[r]);
  }
  small_dft<R>(v, sign);
}
/// Where butterfly j's output r goes: (j div Ns) Ns R + j mod Ns + r Ns, Ns = 2^lg.
SHT_HD int out_index(int j, int lg, int R, int r) {
  return (((j >> lg) * R) << lg) + (j & ((1 << lg) - 1)) + (r << lg);
}

/// e^{-2 pi i t rho / N} (N = 4 n, t < n, rho < 4), the argument reduced exactly in integers.
SHT_HD cplx quarter_twiddle(int n, int rho, int t) {
  const int N = 4 * n;
  const int j = (2 * t * rho) % (2 * N);  // e^{-i pi j / N}
  double s, c;
#ifdef __CUDA_ARCH__
  sincospi(static_cast<double>(j) / N, &s, &c);
#else
  s = std::sin(kPi * j / N);
  c = std::cos(kPi * j / N);
#endif
  return {c, -s};
}

/// z_rho(t) conj(b_t) of quarter rho of the pair whose north ring is mn and south ring ms
/// (N = 4 n entries each), t < n, with w = quarter_twiddle(.., rho, t): the input of the
/// quarter's Bluestein FFT.
SHT_HD cplx quarter_input(const double* mn, const double* ms, int n, int rho, int t, cplx w,
                          cplx bt) {
  const cplx y0 = {mn[t], ms[t]}, y1 = {mn[t + n], ms[t + n]};
  const cplx y2 = {mn[t + 2 * n], ms[t + 2 * n]}, y3 = {mn[t + 3 * n], ms[t + 3 * n]};
  cplx z;
  if (rho == 0) {
    z = add(add(y0, y2), add(y1, y3));
  } else if (rho == 2) {
    z = sub(add(y0, y2), add(y1, y3));
  } else {  // rho = 1: y0 - i y1 - y2 + i y3; rho = 3: y0 + i y1 - y2 - i y3
    z = add(sub(y0, y2), rot(sub(y1, y3), rho == 1 ? -1 : 1));
  }
  if (rho != 0) z = cmul(z, w);
  return mulc(z, bt);
}

}  // namespace almagest::kernels::sht::pdft
