// zscale (DS9 / IRAF, as astropy's ZScaleInterval) of synthetic frames equals an independent
// implementation written here from the published algorithm (numpy's polyfit with 0/1 weights,
// std of the kept residuals, np.convolve(mode="same") dilation of the rejected mask) to 1e-6;
// masked and NaN pixels are never sampled; a frame whose fit rejects too much falls back to
// min / max. The exposure image in zscale mode maps lo to black and hi to white.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "stackview/StackImages.hpp"

namespace sv = almagest::ui::stackview;

namespace {

struct Ref {
  double lo, hi;
};

/// Straight from astropy.visualization.ZScaleInterval.get_limits (defaults).
Ref referenceZscale(const std::vector<float>& img, const std::vector<std::uint8_t>& mask) {
  const int nSamples = 1000;
  const double contrast = 0.25, maxReject = 0.5, krej = 2.5;
  const int minNpixels = 5, maxIterations = 5;
  std::vector<double> values;
  for (std::size_t i = 0; i < img.size(); ++i)
    if (std::isfinite(img[i]) && mask[i] == 0) values.push_back(img[i]);
  const int stride = int(std::max(1.0, double(values.size()) / nSamples));
  std::vector<double> samples;
  for (std::size_t i = 0; i < values.size(); i += std::size_t(stride))
    if (samples.size() < std::size_t(nSamples)) samples.push_back(values[i]);
  std::sort(samples.begin(), samples.end());
  const int npix = int(samples.size());
  double vmin = samples.front(), vmax = samples.back();
  const int minpix = std::max(minNpixels, int(npix * maxReject));
  int ngoodpix = npix, lastNgoodpix = npix + 1;
  std::vector<bool> badpix(std::size_t(npix), false);
  const int ngrow = std::max(1, int(npix * 0.01));
  long double slope = 0, intercept = 0;
  for (int it = 0; it < maxIterations; ++it) {
    if (ngoodpix >= lastNgoodpix || ngoodpix < minpix) break;
    // polyfit(x, samples, 1, w = ~badpix): normal equations with weights 0/1.
    long double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
    for (int i = 0; i < npix; ++i) {
      if (badpix[std::size_t(i)]) continue;
      S += 1;
      Sx += i;
      Sy += samples[std::size_t(i)];
      Sxx += (long double)i * i;
      Sxy += i * (long double)samples[std::size_t(i)];
    }
    const long double det = S * Sxx - Sx * Sx;
    slope = (S * Sxy - Sx * Sy) / det;
    intercept = (Sy - slope * Sx) / S;
    std::vector<double> flat(static_cast<std::size_t>(npix));
    for (int i = 0; i < npix; ++i) flat[std::size_t(i)] = samples[std::size_t(i)] - double(intercept + slope * i);
    long double mean = 0, n = 0;
    for (int i = 0; i < npix; ++i)
      if (!badpix[std::size_t(i)]) mean += flat[std::size_t(i)], n += 1;
    mean /= n;
    long double var = 0;
    for (int i = 0; i < npix; ++i)
      if (!badpix[std::size_t(i)]) var += (flat[std::size_t(i)] - mean) * (flat[std::size_t(i)] - mean);
    const double threshold = krej * double(std::sqrt(var / n));
    for (int i = 0; i < npix; ++i)
      if (flat[std::size_t(i)] < -threshold || flat[std::size_t(i)] > threshold) badpix[std::size_t(i)] = true;
    // np.convolve(badpix, ones(ngrow), mode="same"): full convolution shifted by (ngrow - 1) / 2.
    std::vector<bool> conv(std::size_t(npix), false);
    for (int i = 0; i < npix; ++i) {
      const int k = i + (ngrow - 1) / 2;  // index into the full convolution
      for (int m = std::max(0, k - ngrow + 1); m <= std::min(npix - 1, k); ++m)
        if (badpix[std::size_t(m)]) conv[std::size_t(i)] = true;
    }
    badpix = conv;
    lastNgoodpix = ngoodpix;
    ngoodpix = int(std::count(badpix.begin(), badpix.end(), false));
  }
  if (ngoodpix >= minpix) {
    const double sl = double(slope) / contrast;
    const int centerPixel = (npix - 1) / 2;
    std::vector<double> sorted = samples;
    const double median = npix % 2 ? sorted[std::size_t(npix / 2)] : 0.5 * (sorted[std::size_t(npix / 2 - 1)] + sorted[std::size_t(npix / 2)]);
    vmin = std::max(vmin, median - (centerPixel - 1) * sl);
    vmax = std::min(vmax, median + (npix - centerPixel) * sl);
  }
  return {vmin, vmax};
}

/// Sky + gradient + Gaussian noise + stars + hot pixels, some NaN and masked pixels.
void frame(int w, int h, std::uint64_t seed, std::vector<float>& img, std::vector<std::uint8_t>& mask) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 7.5);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  img.assign(std::size_t(w) * h, 0.0f);
  mask.assign(img.size(), 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) img[std::size_t(y) * w + x] = float(120.0 + 0.05 * x - 0.03 * y + noise(rng));
  for (int s = 0; s < 25; ++s) {
    const double sx = U(rng) * w, sy = U(rng) * h, amp = 50 + 2000 * U(rng);
    for (int y = std::max(0, int(sy) - 6); y < std::min(h, int(sy) + 7); ++y)
      for (int x = std::max(0, int(sx) - 6); x < std::min(w, int(sx) + 7); ++x)
        img[std::size_t(y) * w + x] += float(amp * std::exp(-((x - sx) * (x - sx) + (y - sy) * (y - sy)) / (2 * 1.6 * 1.6)));
  }
  for (int k = 0; k < 200; ++k) {
    const std::size_t i = std::size_t(U(rng) * double(img.size())) % img.size();
    if (k % 3 == 0) img[i] = std::nanf("");
    else if (k % 3 == 1) mask[i] = 1, img[i] = 1e6f;  // masked garbage must not be sampled
    else img[i] = 5e4f;                                // a hot pixel
  }
}

}  // namespace

class TestStackViewZscale : public QObject {
  Q_OBJECT

private slots:
  void matchesIndependentImplementation();
  void masksNeverSampled();
  void fallsBackToMinMax();
  void zscaleExposureMapsLimitsToBlackAndWhite();
};

void TestStackViewZscale::matchesIndependentImplementation() {
  for (const auto& [w, h, seed] : {std::tuple{128, 96, 7ull}, std::tuple{200, 200, 11ull}, std::tuple{37, 23, 3ull},
                                   std::tuple{512, 64, 19ull}}) {
    std::vector<float> img;
    std::vector<std::uint8_t> mask;
    frame(w, h, seed, img, mask);
    const sv::ZScaleLimits z = sv::zscale(img.data(), mask.data(), img.size());
    const Ref r = referenceZscale(img, mask);
    QVERIFY2(std::abs(z.lo - r.lo) < 1e-6 && std::abs(z.hi - r.hi) < 1e-6,
             qPrintable(QStringLiteral("%1x%2: (%3, %4) vs reference (%5, %6)")
                            .arg(w).arg(h).arg(z.lo, 0, 'g', 12).arg(z.hi, 0, 'g', 12).arg(r.lo, 0, 'g', 12).arg(r.hi, 0, 'g', 12)));
    QVERIFY(z.fitted);
    // Limits bracket the sky (~120) and exclude the stars' peaks.
    QVERIFY2(z.lo < 120 && z.hi > 120, qPrintable(QStringLiteral("limits %1 %2").arg(z.lo).arg(z.hi)));
  }
}

void TestStackViewZscale::masksNeverSampled() {
  std::vector<float> img(4000);
  std::vector<std::uint8_t> mask(img.size(), 0);
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = float(i % 97);
  std::vector<float> img2 = img;
  for (std::size_t i = 0; i < img.size(); i += 5) mask[i] = 1, img2[i] = -1e9f;
  const sv::ZScaleLimits a = sv::zscale(img.data(), mask.data(), img.size());
  const sv::ZScaleLimits b = sv::zscale(img2.data(), mask.data(), img.size());
  QCOMPARE(a.lo, b.lo);
  QCOMPARE(a.hi, b.hi);
}

void TestStackViewZscale::fallsBackToMinMax() {
  // Eight values: fewer than min pixels after one rejection round -> the sample's min and max.
  std::vector<float> img = {1, 2, 3, 4, 5, 6, 7, 1000};
  const sv::ZScaleLimits z = sv::zscale(img.data(), nullptr, img.size());
  const Ref r = referenceZscale(img, std::vector<std::uint8_t>(img.size(), 0));
  QCOMPARE(z.lo, r.lo);
  QCOMPARE(z.hi, r.hi);
}

void TestStackViewZscale::zscaleExposureMapsLimitsToBlackAndWhite() {
  almagest::stack::ExposureStack st;
  st.width = 64;
  st.height = 48;
  std::vector<std::uint8_t> mask;
  frame(st.width, st.height, 5, st.sci, mask);
  st.var.assign(st.sci.size(), 1.0f);
  st.mask = mask;
  st.mjd = {60000.0};
  sv::Stretch used;
  const QImage img = sv::renderExposureWith(st, 0, sv::StretchMode::ZScale, {}, &used);
  const sv::ZScaleLimits z = sv::zscale(st.sci.data(), st.mask.data(), st.sci.size());
  QCOMPARE(double(used.lo), double(float(z.lo)));
  QCOMPARE(double(used.hi), double(float(z.hi)));
  int black = 0, white = 0;
  for (int y = 0; y < st.height; ++y)
    for (int x = 0; x < st.width; ++x) {
      const std::size_t i = std::size_t(y) * st.width + x;
      if (st.mask[i] || !std::isfinite(st.sci[i])) continue;
      const int g = qGray(img.pixel(x, y));
      if (st.sci[i] <= used.lo) {
        QCOMPARE(g, 0);
        ++black;
      }
      if (st.sci[i] >= used.hi) {
        QCOMPARE(g, 255);
        ++white;
      }
    }
  QVERIFY(black > 0 && white > 0);
  // Manual limits are used as given.
  sv::renderExposureWith(st, 0, sv::StretchMode::Manual, {100.0f, 140.0f}, &used);
  QCOMPARE(used.lo, 100.0f);
  QCOMPARE(used.hi, 140.0f);
}

QTEST_MAIN(TestStackViewZscale)
#include "test_stack_view_zscale.moc"
