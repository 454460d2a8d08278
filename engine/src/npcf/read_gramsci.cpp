// Reader of GRAMSCI-layout text results (see read_gramsci.hpp).
#include "almagest/npcf/read_gramsci.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "almagest/core/error.hpp"
#include "almagest/npcf/configurations.hpp"

namespace almagest::npcf {

namespace {

constexpr std::uintmax_t kMaxTextBytes = std::uintmax_t(4) << 30;  // 4 GiB: larger is not a result file

bool parse_number(const std::string& tok, double& v) {
  std::string t = tok;
  for (char& c : t)
    if (c == 'D' || c == 'd') c = 'E';  // Fortran double exponents
  errno = 0;
  char* end = nullptr;
  v = std::strtod(t.c_str(), &end);
  return end && *end == '\0' && end != t.c_str() && errno != ERANGE;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream is(line);
  std::string tok;
  while (is >> tok) out.push_back(tok);
  return out;
}

/// Index of `v` among sorted unique `edges` (relative tolerance of e14.7's 8 digits), or -1.
int edge_index(const std::vector<double>& edges, double v) {
  auto it = std::lower_bound(edges.begin(), edges.end(), v);
  int best = -1;
  double bestd = HUGE_VAL;
  for (auto c : {it, it == edges.begin() ? it : it - 1}) {
    if (c == edges.end()) continue;
    const double d = std::abs(*c - v);
    if (d < bestd) { bestd = d; best = static_cast<int>(c - edges.begin()); }
  }
  if (best < 0 || bestd > 2e-7 * std::max(1.0, std::abs(v))) return -1;
  return best;
}

}  // namespace

bool looks_like_gramsci(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char sig[8] = {};
  in.read(sig, 8);
  if (in.gcount() >= 4 && sig[0] == '\x89' && sig[1] == 'H' && sig[2] == 'D' && sig[3] == 'F') return false;
  for (std::streamsize i = 0; i < in.gcount(); ++i) {
    const char c = sig[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '#' || c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9');
  }
  return false;
}

NpcfResult read_gramsci(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path, "", "cannot read: " + ec.message());
  if (size > kMaxTextBytes) throw IoError(path, "", "file of " + std::to_string(size) + " bytes is too large for a result");
  std::ifstream in(path);
  if (!in) throw IoError(path, "", "cannot open");

  std::string statName;
  std::vector<std::string> names;
  std::vector<std::vector<double>> rows;
  std::string line;
  std::size_t lineNo = 0, ncols = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      const std::string body = line.substr(first + 1);
      const auto key = body.find("statistic:");
      if (key != std::string::npos && body.find_first_not_of(' ') == key) statName = split(body.substr(key + 10)).at(0);
      else if (rows.empty()) {
        auto toks = split(body);
        bool numeric = false;
        double v;
        for (const auto& t : toks) numeric = numeric || parse_number(t, v);
        if (!toks.empty() && !numeric && toks.size() >= 5) names = toks;  // the last column-name line
      }
      continue;
    }
    const auto toks = split(line);
    std::vector<double> row(toks.size());
    for (std::size_t i = 0; i < toks.size(); ++i)
      if (!parse_number(toks[i], row[i]) || !std::isfinite(row[i]))
        throw IoError(path, "line " + std::to_string(lineNo), "column " + std::to_string(i + 1) + " is not a finite number: '" + toks[i] + "'");
    if (ncols == 0) ncols = row.size();
    if (row.size() != ncols)
      throw IoError(path, "line " + std::to_string(lineNo),
                    std::to_string(row.size()) + " columns where the first row has " + std::to_string(ncols));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw IoError(path, "", "no data rows");

  // Statistic and layout.
  Statistic stat;
  if (!statName.empty()) {
    try {
      stat = statistic_from_string(statName);
    } catch (const ConfigError&) {
      throw IoError(path, "statistic", "unknown statistic '" + statName + "'");
    }
  } else {
    const bool triple = std::find(names.begin(), names.end(), "NNN") != names.end();
    switch (ncols) {
      case 5:
      case 7: stat = triple ? Statistic::ThreePointEquilateral : Statistic::TwoPoint; break;
      case 9: case 11: stat = Statistic::ThreePoint; break;
      case 17: stat = Statistic::FourPoint; break;
      case 21: stat = Statistic::FourPointParity; break;
      default: throw IoError(path, "columns", std::to_string(ncols) + " columns match no GRAMSCI layout (5, 7, 9, 11, 17, 21)");
    }
  }
  int edges = 1;      // radial edges per row
  int mu = -1;        // column of mu min (-1: none)
  std::size_t value = 0;  // first value column
  std::size_t expect = 0;
  switch (stat) {
    case Statistic::TwoPoint:
      edges = 1;
      if (ncols == 7) mu = 2;
      expect = ncols == 7 ? 7 : 5;
      break;
    case Statistic::ThreePointEquilateral:
      // One side (r min, r max), with or without mu columns; older Almagest files printed the
      // three sides.
      edges = ncols == 9 ? 3 : 1;
      if (ncols == 7) mu = 2;
      expect = ncols == 9 ? 9 : ncols == 7 ? 7 : 5;
      break;
    case Statistic::ThreePoint:
      edges = 3;
      if (ncols == 11) mu = 6;
      expect = ncols == 11 ? 11 : 9;
      break;
    case Statistic::FourPoint: edges = 6; expect = 17; break;
    case Statistic::FourPointParity: edges = 6; expect = 21; break;
  }
  if (ncols != expect)
    throw IoError(path, "columns", std::to_string(ncols) + " columns for a " + to_string(stat) + " file (expected " + std::to_string(expect) + ")");
  value = static_cast<std::size_t>(2 * edges) + (mu >= 0 ? 2 : 0);
  if (mu >= 0)
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double lo = rows[i][static_cast<std::size_t>(mu)], hi = rows[i][static_cast<std::size_t>(mu) + 1];
      const bool full = std::abs(lo - (stat == Statistic::ThreePoint ? 0.0 : -1.0)) < 1e-6 && std::abs(hi - 1.0) < 1e-6;
      if (!full) throw IoError(path, "mu", "row " + std::to_string(i + 1) + " is one of several mu bins: mu-binned files are not read");
    }

  // Binning from the printed edges.
  std::vector<double> all;
  for (const auto& r : rows)
    for (int e = 0; e < 2 * edges; ++e) all.push_back(r[static_cast<std::size_t>(e)]);
  std::sort(all.begin(), all.end());
  std::vector<double> uniq;
  for (double v : all)
    if (uniq.empty() || std::abs(v - uniq.back()) > 2e-7 * std::max(1.0, std::abs(v))) uniq.push_back(v);
  if (uniq.size() < 2) throw IoError(path, "bins", "fewer than two distinct bin edges");
  const int nbins = static_cast<int>(uniq.size()) - 1;
  if (nbins > 255) throw IoError(path, "bins", std::to_string(nbins) + " bins (at most 255)");
  NpcfResult res;
  res.config.statistic = stat;
  res.config.bins.rmin = uniq.front();
  res.config.bins.rmax = uniq.back();
  res.config.bins.nbins = nbins;
  bool linear = true, logs = uniq.front() > 0;
  const double w0 = uniq[1] - uniq[0];
  for (int b = 1; b < nbins; ++b) {
    linear = linear && std::abs((uniq[b + 1] - uniq[b]) - w0) <= 1e-5 * std::max(w0, 1e-300) + 1e-6 * uniq.back();
    if (logs) logs = std::abs(std::log(uniq[b + 1] / uniq[b]) - std::log(uniq[1] / uniq[0])) <= 1e-5;
  }
  if (!linear && !logs) throw IoError(path, "bins", "bin edges are neither linear nor logarithmic");
  res.config.bins.scale = linear ? BinScale::Linear : BinScale::Log;

  res.statistic = stat;
  res.order = stat == Statistic::TwoPoint ? 2 : (stat == Statistic::ThreePoint || stat == Statistic::ThreePointEquilateral) ? 3 : 4;
  res.edges_per_row = stat == Statistic::TwoPoint ? 1 : res.order == 3 ? 3 : 6;
  const std::size_t n = rows.size();
  res.bins.resize(n * static_cast<std::size_t>(res.edges_per_row));
  res.tuples.assign(n, 0);
  res.random_tuples.assign(n, 0);
  res.n.resize(n);
  res.r.resize(n);
  res.estimator.resize(n);
  const bool four = res.order == 4, parity = stat == Statistic::FourPointParity;
  if (four) {
    res.zeta_disc.resize(n);
    res.zeta_conn.resize(n);
    res.realisable.resize(n);
  }
  if (parity) {
    res.n_odd.resize(n);
    res.r_odd.resize(n);
    res.zeta_odd.resize(n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    for (int e = 0; e < edges; ++e) {
      const int lo = edge_index(uniq, r[static_cast<std::size_t>(2 * e)]);
      const int hi = edge_index(uniq, r[static_cast<std::size_t>(2 * e + 1)]);
      if (lo < 0 || hi != lo + 1)
        throw IoError(path, "row " + std::to_string(i + 1), "edge " + std::to_string(e + 1) + " is not one bin of the file's binning");
      res.bins[i * static_cast<std::size_t>(res.edges_per_row) + static_cast<std::size_t>(e)] = static_cast<std::uint8_t>(lo);
    }
    if (edges == 1 && res.edges_per_row == 3)  // equilateral, published layout: (b, b, b)
      for (int e = 1; e < 3; ++e) res.bins[i * 3 + static_cast<std::size_t>(e)] = res.bins[i * 3];
    res.n[i] = r[value];
    res.r[i] = r[value + 1];
    res.estimator[i] = r[value + 2];
    if (parity) {
      res.n_odd[i] = r[value + 3];
      res.r_odd[i] = r[value + 4];
      res.zeta_odd[i] = r[value + 5];
      res.zeta_disc[i] = r[value + 6];
      res.zeta_conn[i] = r[value + 7];
    } else if (four) {
      res.zeta_disc[i] = r[value + 3];
      res.zeta_conn[i] = r[value + 4];
    }
    if (four) {
      std::array<double, 6> d;
      for (int e = 0; e < 6; ++e) d[static_cast<std::size_t>(e)] = res.config.bins.centre(res.bins[i * 6 + static_cast<std::size_t>(e)]);
      res.realisable[i] = cayley_menger_positive(d) ? 1 : 0;
    }
  }
  res.provenance.inputs = {path};
  return res;
}

}  // namespace almagest::npcf
