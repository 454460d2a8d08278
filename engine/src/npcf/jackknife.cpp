// Delete-one jackknife: regions, subsets and the jackknife statistics (see jackknife.hpp).
#include "almagest/npcf/jackknife.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

namespace {

/// sin(dec) and phi of a point seen from the origin (0, 0 at the origin).
void angles(const PointSet& p, std::size_t i, double& sdec, double& phi) {
  const double r = std::sqrt(p.x[i] * p.x[i] + p.y[i] * p.y[i] + p.z[i] * p.z[i]);
  sdec = r > 0 ? p.z[i] / r : 0.0;
  phi = (p.x[i] == 0 && p.y[i] == 0) ? 0.0 : std::atan2(p.y[i], p.x[i]);
}

/// k - 1 interior boundaries at the quantiles j/k of the sorted values.
std::vector<double> quantile_edges(std::vector<double> v, int k) {
  std::sort(v.begin(), v.end());
  std::vector<double> e;
  for (int j = 1; j < k; ++j) e.push_back(v[v.size() * static_cast<std::size_t>(j) / static_cast<std::size_t>(k)]);
  return e;
}

/// 0-based slot of v among the boundaries (values equal to a boundary go above it).
int slot(const std::vector<double>& edges, double v) {
  return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin());
}

}  // namespace

std::vector<int> angular_regions(const PointSet& p, int n) {
  if (n < 2) throw ConfigError("jackknife", "needs at least 2 regions (got " + std::to_string(n) + ")");
  const std::size_t nr = p.size() - p.ndata;
  if (nr == 0) throw ConfigError("jackknife", "internal regions are made from the random catalogue: give randoms");
  if (nr < static_cast<std::size_t>(n))
    throw ConfigError("jackknife", std::to_string(n) + " regions but only " + std::to_string(nr) + " randoms");
  int bands = 1;
  for (int b = 1; static_cast<long long>(b) * b <= n; ++b)
    if (n % b == 0) bands = b;
  const int slices = n / bands;
  std::vector<double> sdec(p.size()), phi(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) angles(p, i, sdec[i], phi[i]);
  const std::vector<double> band_edges =
      quantile_edges(std::vector<double>(sdec.begin() + static_cast<std::ptrdiff_t>(p.ndata), sdec.end()), bands);
  std::vector<std::vector<double>> band_phi(static_cast<std::size_t>(bands));
  for (std::size_t i = p.ndata; i < p.size(); ++i) band_phi[static_cast<std::size_t>(slot(band_edges, sdec[i]))].push_back(phi[i]);
  std::vector<std::vector<double>> phi_edges(static_cast<std::size_t>(bands));
  for (int b = 0; b < bands; ++b) {
    auto& v = band_phi[static_cast<std::size_t>(b)];
    if (v.size() < static_cast<std::size_t>(slices))
      throw ConfigError("jackknife", "a sin(dec) band holds fewer randoms than its " + std::to_string(slices) + " phi slices");
    phi_edges[static_cast<std::size_t>(b)] = quantile_edges(std::move(v), slices);
  }
  std::vector<int> labels(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const int b = slot(band_edges, sdec[i]);
    labels[i] = 1 + b * slices + slot(phi_edges[static_cast<std::size_t>(b)], phi[i]);
  }
  return labels;
}

std::vector<int> read_region_labels(const std::string& path, std::size_t rows, int n) {
  std::ifstream in(path);
  if (!in) throw IoError(path, "", "cannot open the region label file");
  std::vector<int> labels;
  labels.reserve(rows);
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(line.c_str() + first, &end, 10);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
    if (!end || *end != '\0' || errno == ERANGE)
      throw IoError(path, "line " + std::to_string(line_no), "not an integer region label: '" + line + "'");
    if (v < 1 || v > n)
      throw IoError(path, "line " + std::to_string(line_no),
                    "region label " + std::to_string(v) + " outside 1.." + std::to_string(n));
    if (labels.size() == rows)
      throw IoError(path, "rows", "more labels than the catalogue's " + std::to_string(rows) + " rows");
    labels.push_back(static_cast<int>(v));
  }
  if (labels.size() != rows)
    throw IoError(path, "rows", std::to_string(labels.size()) + " labels for a catalogue of " +
                                    std::to_string(rows) + " rows");
  return labels;
}

PointSet without_region(const PointSet& p, const std::vector<int>& labels, int m) {
  PointSet s;
  s.data_weight_sum = p.data_weight_sum;
  s.random_weight_sum = p.random_weight_sum;
  s.data_w2_sum = p.data_w2_sum;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (labels[i] == m) continue;
    s.x.push_back(p.x[i]);
    s.y.push_back(p.y[i]);
    s.z.push_back(p.z[i]);
    s.w.push_back(p.w[i]);
    if (i < p.ndata) ++s.ndata;
  }
  return s;
}

void attach_jackknife(NpcfResult& result, const std::vector<NpcfResult>& reals) {
  auto& jk = result.jackknife;
  const std::size_t rows = result.rows();
  const std::size_t n = reals.size();
  jk = {};
  jk.realisations = static_cast<int>(n);
  for (const auto& r : reals) {
    if (r.rows() != rows || r.statistic != result.statistic)
      throw ConfigError("jackknife", "a realisation has other rows than the full result");
    jk.n.insert(jk.n.end(), r.n.begin(), r.n.end());
    jk.r.insert(jk.r.end(), r.r.begin(), r.r.end());
    jk.estimator.insert(jk.estimator.end(), r.estimator.begin(), r.estimator.end());
  }
  jk.mean.assign(rows, 0.0);
  jk.sigma.assign(rows, 0.0);
  if (n == 0) return;
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t k = 0; k < rows; ++k) jk.mean[k] += jk.estimator[m * rows + k];
  for (double& v : jk.mean) v /= static_cast<double>(n);
  const double f = static_cast<double>(n - 1) / static_cast<double>(n);
  std::vector<double> dev(n * rows);
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t k = 0; k < rows; ++k) dev[m * rows + k] = jk.estimator[m * rows + k] - jk.mean[k];
  for (std::size_t k = 0; k < rows; ++k) {
    double s = 0;
    for (std::size_t m = 0; m < n; ++m) s += dev[m * rows + k] * dev[m * rows + k];
    jk.sigma[k] = std::sqrt(f * s);
  }
  if (rows <= kMaxCovarianceRows) {
    jk.covariance.assign(rows * rows, 0.0);
    for (std::size_t m = 0; m < n; ++m) {
      const double* d = dev.data() + m * rows;
      for (std::size_t a = 0; a < rows; ++a)
        for (std::size_t b = a; b < rows; ++b) jk.covariance[a * rows + b] += d[a] * d[b];
    }
    for (std::size_t a = 0; a < rows; ++a)
      for (std::size_t b = a; b < rows; ++b) {
        jk.covariance[a * rows + b] *= f;
        jk.covariance[b * rows + a] = jk.covariance[a * rows + b];
      }
  }
}

}  // namespace almagest::npcf
