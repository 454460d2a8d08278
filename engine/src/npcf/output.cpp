// Result files: HDF5 (default) and the GRAMSCI v2 text layout. Layouts: docs/npcf.md.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/npcf/jackknife.hpp"
#include "almagest/npcf/regions.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

namespace {

/// What analytic randoms mean for this result's order (finalize.cpp, analytic4.cpp): the random
/// sum and the estimator, as the text header and the HDF5 descriptions state them.
std::string analytic_random_text(const NpcfResult& r) {
  const std::string per_mu = r.config.nmu > 1 ? " / nmu" : "";
  if (r.order == 2)
    return "RR = W2 (4 pi/3)(r_hi^3 - r_lo^3) / V" + per_mu + ", xi = NN/RR - 1";
  if (r.order == 3)
    return "RRR = W3 Nperm 8 pi^2 T(b1, b2, b3) / V^2" + per_mu +
           " (exact triangle kernel), zeta = NNN/RRR - 1 - xi(r1) - xi(r2) - xi(r3)";
  return "RRRR = W4 x orbit size x 8 pi^2 Q / V^3 (quadrature, two levels agreeing to 1e-4), "
         "RRRR_odd = 0, zeta = NNNN/RRRR - 1 - the six xi's - the four faces' connected 3pCF";
}

const char* description(Statistic s) {
  switch (s) {
    case Statistic::TwoPoint: return "two-point correlation function xi(r) = NN/RR";
    case Statistic::ThreePoint: return "three-point correlation function zeta = NNN/RRR, all triangles b1<=b2<=b3";
    case Statistic::ThreePointEquilateral: return "three-point correlation function zeta = NNN/RRR, equilateral triangles b1=b2=b3";
    case Statistic::FourPoint: return "four-point correlation function zeta = NNNN/RRRR with connected part";
    case Statistic::FourPointParity: return "parity-even and parity-odd four-point correlation functions with connected part";
  }
  return "";
}

std::vector<double> bin_edges(const Binning& b) {
  std::vector<double> e(static_cast<std::size_t>(b.nbins) + 1);
  for (int i = 0; i <= b.nbins; ++i) e[static_cast<std::size_t>(i)] = b.edge(i);
  return e;
}

NpcfConfig config_from_json(const std::string& text, const std::string& file) {
  NpcfConfig c;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw IoError(file, "attribute 'config' of '/'", "not a JSON object");
  try {
    c.statistic = statistic_from_string(j.at("statistic").get<std::string>());
    c.bins.rmin = j.at("rmin").get<double>();
    c.bins.rmax = j.at("rmax").get<double>();
    c.bins.nbins = j.at("nbins").get<int>();
    c.bins.scale = j.value("bin_scale", std::string("linear")) == "log" ? BinScale::Log : BinScale::Linear;
    c.periodic = j.value("periodic", false);
    c.box = j.value("box", 0.0);
    c.store_pixels = j.value("store_pixels", false);
    c.directions = j.value("directions", std::string("pixel")) == "exact" ? DirectionMode::Exact
                                                                          : DirectionMode::Pixel;
    c.pixel_ntheta = j.value("pixel_ntheta", 8);
    c.pixel_nphi = j.value("pixel_nphi", 32);
    c.threads = j.value("threads", 0);
    // Results written before the hub order existed were counted in the input order.
    const std::string order = j.value("hub_order", std::string("input"));
    c.hub_order = order == "spatial" ? HubOrder::Spatial : order == "auto" ? HubOrder::Auto : HubOrder::Input;
    c.nmu = j.value("nmu", 1);
    c.multipoles = j.value("multipoles", false);
    try {
      c.backend = parse_backend(j.value("backend", std::string("cpu")));
    } catch (const ConfigError& e) {
      throw IoError(file, "attribute 'config' of '/'", std::string("invalid configuration: ") + e.what());
    }
  } catch (const nlohmann::json::exception& e) {
    throw IoError(file, "attribute 'config' of '/'", std::string("invalid configuration: ") + e.what());
  }
  return c;
}

Provenance provenance_from_json(const std::string& text) { return Provenance::from_json(text); }

void appendf(std::string& s, const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  s += buf;
}

}  // namespace

namespace {

void write_root_attrs(io::Hdf5Writer& w, const NpcfResult& r) {
  w.attr("/", "software", std::string("Almagest"));
  w.attr("/", "version", r.provenance.version.empty() ? almagest::version() : r.provenance.version);
  w.attr("/", "backend", r.provenance.backend);
  w.attr("/", "provenance", r.provenance.to_json());
  w.attr("/", "config", r.config.to_json());
  w.attr("/", "statistic", std::string(to_string(r.statistic)));
}

/// One result's datasets in group g (/npcf/<statistic>, or a region's group below it).
void write_group(io::Hdf5Writer& w, const NpcfResult& r, const std::string& g) {
  const std::size_t rows = r.rows();
  const auto k = static_cast<std::uint64_t>(r.edges_per_row);
  w.create_group(g);
  w.attr(g, "description", std::string(description(r.statistic)));
  w.attr(g, "order", static_cast<std::int64_t>(r.order));
  w.attr(g, "rows", static_cast<std::int64_t>(rows));
  w.attr(g, "ndata", static_cast<std::int64_t>(r.ndata));
  w.attr(g, "nrandom", static_cast<std::int64_t>(r.nrandom));
  w.attr(g, "graph_edges", static_cast<std::int64_t>(r.graph_edges));
  w.attr(g, "analytic_randoms", static_cast<std::int64_t>(r.analytic_randoms ? 1 : 0));
  w.attr(g, "bin_scale", std::string(r.config.bins.scale == BinScale::Log ? "log" : "linear"));
  w.attr(g, "bin_edges", bin_edges(r.config.bins));

  auto ds = [&](const std::string& name, const auto& data, io::Shape shape, const std::string& units,
                const std::string& desc) {
    const std::string d = g + "/" + name;
    w.write(d, data, std::move(shape));
    w.attr(d, "units", units);
    w.attr(d, "description", desc);
  };
  const io::Shape one{static_cast<std::uint64_t>(rows)};
  ds("bin_edges", bin_edges(r.config.bins), {}, "Mpc/h",
     "radial bin edges: bin b covers [bin_edges[b], bin_edges[b+1])");
  ds("bins", r.bins, {static_cast<std::uint64_t>(rows), k}, "bin index (0-based)",
     k == 1 ? "radial bin of the pair"
     : k == 3 ? "sorted triangle side bins b1 <= b2 <= b3"
              : "canonical tetrahedron edge bins in edge order 12 13 14 23 24 34");
  ds("tuples", r.tuples, one, "count", "number of tuples (data and random) per configuration");
  ds("random_tuples", r.random_tuples, one, "count", "number of all-random tuples per configuration");
  const char* nn = r.order == 2 ? "NN" : r.order == 3 ? "NNN" : "NNNN";
  const char* rr = r.order == 2 ? "RR" : r.order == 3 ? "RRR" : "RRRR";
  ds("n", r.n, one, "dimensionless (normalised weights)",
     std::string(nn) + ": sum over tuples of the product of signed normalised weights");
  ds("r", r.r, one, "dimensionless (normalised weights)",
     std::string(rr) + (r.analytic_randoms ? ": analytic randoms, " + analytic_random_text(r)
                                           : std::string(": all-random sum, made positive")));
  ds("estimator", r.estimator, one, "dimensionless",
     r.analytic_randoms ? "analytic randoms: " + analytic_random_text(r)
                        : std::string(r.order == 2 ? "xi" : "zeta") + " = " + nn + "/" + rr +
                              " (0 where " + rr + " = 0)");
  if (is_four_point(r.statistic)) {
    ds("zeta_disc", r.zeta_disc, one, "dimensionless",
       "disconnected part: sum over the pairings (12,34) (13,24) (14,23) of xi xi");
    ds("zeta_conn", r.zeta_conn, one, "dimensionless", "connected part zeta - zeta_disc (even)");
    ds("realisable", r.realisable, one, "flag",
       "1 if the Cayley-Menger determinant of the bin centres is positive");
    ds("xi_internal", r.xi_internal, {static_cast<std::uint64_t>(r.xi_internal.size())},
       "dimensionless", "internal 2pCF per radial bin used for zeta_disc");
  }
  // Anisotropic binning and multipoles (docs/npcf.md "Anisotropic binning").
  if (!r.mu.empty()) {
    ds("mu", r.mu, one, "bin index (0-based)",
       r.order == 2 ? "mu bin of the pair: nmu bins over [-1, 1], mu against the line of sight to "
                      "the pair midpoint (z axis in a periodic box)"
                    : "mu bin of the triangle normal: nmu bins of |mu| over [0, 1], against the "
                      "line of sight to the centroid (z axis in a periodic box)");
    w.attr(g, "nmu", static_cast<std::int64_t>(r.config.nmu));
  }
  if (!r.xi2.empty()) {
    const io::Shape nb{static_cast<std::uint64_t>(r.xi2.size())};
    ds("legendre2", r.legendre2, nb, "dimensionless (normalised weights)",
       "S_2: sum over all pairs of L_2(mu) x the product of signed weights, per radial bin");
    ds("legendre4", r.legendre4, nb, "dimensionless (normalised weights)",
       "S_4: sum over all pairs of L_4(mu) x the product of signed weights, per radial bin");
    ds("xi0", r.xi0, nb, "dimensionless", "monopole NN(r)/RR(r) (minus 1 with analytic randoms)");
    ds("xi2", r.xi2, nb, "dimensionless", "quadrupole 5 S_2 / RR(r)");
    ds("xi4", r.xi4, nb, "dimensionless", "hexadecapole 9 S_4 / RR(r)");
  }
  if (!r.xi2_internal.empty()) {
    const io::Shape nb{static_cast<std::uint64_t>(r.xi2_internal.size())};
    ds("xi2_internal", r.xi2_internal, nb, "dimensionless",
       "internal quadrupole per radial bin (anisotropic terms of zeta_disc)");
    ds("xi4_internal", r.xi4_internal, nb, "dimensionless",
       "internal hexadecapole per radial bin (anisotropic terms of zeta_disc)");
  }
  if (r.jackknife.realisations > 0) {
    const auto& jk = r.jackknife;
    const std::string jg = g + "/jackknife";
    w.create_group(jg);
    w.attr(jg, "realisations", static_cast<std::int64_t>(jk.realisations));
    w.attr(jg, "description", std::string("delete-one jackknife: realisation m omits every tuple "
                                          "touching region m (no weight renormalisation)"));
    const io::Shape per{static_cast<std::uint64_t>(jk.realisations), static_cast<std::uint64_t>(rows)};
    auto jds = [&](const std::string& name, const std::vector<double>& data, io::Shape shape,
                   const std::string& desc) {
      w.write(jg + "/" + name, data, std::move(shape));
      w.attr(jg + "/" + name, "units", std::string("dimensionless"));
      w.attr(jg + "/" + name, "description", desc);
    };
    jds("n", jk.n, per, std::string(nn) + " per realisation (realisation outer)");
    jds("r", jk.r, per, std::string(rr) + " per realisation");
    jds("estimator", jk.estimator, per, "estimator per realisation");
    jds("mean", jk.mean, one, "jackknife mean of the estimator");
    jds("sigma", jk.sigma, one, "jackknife sigma: sqrt((N-1)/N sum (x_m - mean)^2)");
    if (!jk.covariance.empty())
      jds("covariance", jk.covariance, {static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(rows)},
          "jackknife covariance (N-1)/N sum (x_m - mean)(x_m - mean)^T");
  }
  if (r.statistic == Statistic::FourPointParity) {
    ds("n_odd", r.n_odd, one, "dimensionless", "NNNN_odd: relabelling sign x sign(V) x weights");
    ds("r_odd", r.r_odd, one, "dimensionless", "RRRR_odd: the same over all-random tetrahedra");
    ds("zeta_odd", r.zeta_odd, one, "dimensionless",
       "parity-odd zeta = NNNN_odd / RRRR (also its connected part)");
    ds("degenerate", r.degenerate, one, "count", "tetrahedra with |V| < 1e-9 (zero odd weight)");
  }
}

}  // namespace

void write_hdf5(const NpcfResult& r, const std::string& path) {
  io::Hdf5Writer w(path);
  write_root_attrs(w, r);
  write_group(w, r, std::string("/npcf/") + to_string(r.statistic));
  w.commit();
}

void write_hdf5_regions(const NpcfResult& combined, const std::vector<RegionResult>& regions,
                        const std::string& path) {
  io::Hdf5Writer w(path);
  write_root_attrs(w, combined);
  const std::string g = std::string("/npcf/") + to_string(combined.statistic);
  write_group(w, combined, g);
  w.attr(g, "combined_regions", static_cast<std::int64_t>(regions.size()));
  w.create_group(g + "/region");
  const auto weights = region_weights(regions, combined.order);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const std::string rg = g + "/region/" + regions[i].name;
    write_group(w, regions[i].result, rg);
    w.attr(rg, "data_weight_sum", regions[i].data_weight_sum);
    w.attr(rg, "combination_weight", weights[i]);
    w.attr(rg, "provenance", regions[i].result.provenance.to_json());
  }
  w.commit();
}

NpcfResult read_hdf5(const std::string& path) {
  io::Hdf5Reader in(path);
  if (!in.exists("/npcf")) throw IoError(path, "/npcf", "not an Almagest N-point result file");
  const auto stats = in.list("/npcf");
  if (stats.empty()) throw IoError(path, "/npcf", "the file holds no statistic");
  NpcfResult r;
  r.statistic = statistic_from_string(stats.front());
  const std::string g = "/npcf/" + stats.front();
  r.config = config_from_json(in.read_attr_string("/", "config"), path);
  r.config.statistic = r.statistic;
  r.provenance = provenance_from_json(in.read_attr_string("/", "provenance"));
  r.order = static_cast<int>(in.read_attr_int64(g, "order"));
  r.edges_per_row = r.order == 2 ? 1 : r.order == 3 ? 3 : 6;
  r.ndata = static_cast<std::uint64_t>(in.read_attr_int64(g, "ndata"));
  r.nrandom = static_cast<std::uint64_t>(in.read_attr_int64(g, "nrandom"));
  r.graph_edges = static_cast<std::uint64_t>(in.read_attr_int64(g, "graph_edges"));
  r.analytic_randoms = in.read_attr_int64(g, "analytic_randoms") != 0;
  r.bins = in.read_uint8(g + "/bins");
  r.tuples = in.read_uint64(g + "/tuples");
  r.random_tuples = in.read_uint64(g + "/random_tuples");
  r.n = in.read_double(g + "/n");
  r.r = in.read_double(g + "/r");
  r.estimator = in.read_double(g + "/estimator");
  if (is_four_point(r.statistic)) {
    r.zeta_disc = in.read_double(g + "/zeta_disc");
    r.zeta_conn = in.read_double(g + "/zeta_conn");
    r.realisable = in.read_uint8(g + "/realisable");
    r.xi_internal = in.read_double(g + "/xi_internal");
  }
  if (in.exists(g + "/mu")) r.mu = in.read_uint8(g + "/mu");
  if (in.exists(g + "/xi2")) {
    r.legendre2 = in.read_double(g + "/legendre2");
    r.legendre4 = in.read_double(g + "/legendre4");
    r.xi0 = in.read_double(g + "/xi0");
    r.xi2 = in.read_double(g + "/xi2");
    r.xi4 = in.read_double(g + "/xi4");
    const std::size_t nb = static_cast<std::size_t>(std::max(0, r.config.bins.nbins));
    for (const auto* v : {&r.legendre2, &r.legendre4, &r.xi0, &r.xi2, &r.xi4})
      if (v->size() != nb) throw IoError(path, g + "/xi2", "multipoles need one value per radial bin");
  }
  if (in.exists(g + "/xi2_internal")) {
    r.xi2_internal = in.read_double(g + "/xi2_internal");
    r.xi4_internal = in.read_double(g + "/xi4_internal");
  }
  if (r.statistic == Statistic::FourPointParity) {
    r.n_odd = in.read_double(g + "/n_odd");
    r.r_odd = in.read_double(g + "/r_odd");
    r.zeta_odd = in.read_double(g + "/zeta_odd");
    r.degenerate = in.read_uint64(g + "/degenerate");
  }
  const std::size_t rows = r.tuples.size();
  if (r.bins.size() != rows * static_cast<std::size_t>(r.edges_per_row) || r.n.size() != rows ||
      r.r.size() != rows || r.estimator.size() != rows)
    throw IoError(path, g, "datasets have inconsistent numbers of rows");
  if (!r.mu.empty()) {
    if (r.mu.size() != rows) throw IoError(path, g + "/mu", "mu has another number of rows");
    for (std::uint8_t m : r.mu)
      if (m >= r.config.nmu) throw IoError(path, g + "/mu", "mu bin beyond nmu");
  }
  return r;
}

std::string fortran_e14_7(double v) {
  // Fortran Ew.d with w = 14, d = 7: [-]0.dddddddE+xx, right-justified; exponents beyond +-99
  // drop the E ([-]0.ddddddd+xxx) as Fortran does. Zero of either sign prints as +0.
  char buf[40];
  if (!std::isfinite(v)) {
    std::snprintf(buf, sizeof buf, "%14s", std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"));
    return buf;
  }
  if (v == 0.0) return " 0.0000000E+00";
  // %.6E rounds to 7 significant digits exactly as Fortran's 0.ddddddd does: d.ddddddE+x
  // becomes 0.dddddddE+(x+1).
  std::snprintf(buf, sizeof buf, "%.6E", std::fabs(v));
  const std::string m(buf);
  const std::size_t epos = m.find('E');
  const int exp10 = std::atoi(m.c_str() + epos + 1) + 1;
  std::string out = v < 0 ? "-0." : "0.";
  out += m[0];
  out += m.substr(2, epos - 2);
  const int ae = exp10 < 0 ? -exp10 : exp10;
  char eb[16];
  if (ae <= 99)
    std::snprintf(eb, sizeof eb, "E%c%02d", exp10 < 0 ? '-' : '+', ae);
  else
    std::snprintf(eb, sizeof eb, "%c%03d", exp10 < 0 ? '-' : '+', ae);
  out += eb;
  if (out.size() < 14) out.insert(0, 14 - out.size(), ' ');
  return out;
}

namespace {

/// The published layouts: the 2pCF and the equilateral 3pCF always carry mu min/max columns
/// (-1, 1 without mu bins), the 3pCF only with mu bins; the equilateral rows print one side.
bool has_mu_columns(const NpcfResult& r) {
  return r.order == 2 || r.statistic == Statistic::ThreePointEquilateral || !r.mu.empty();
}

std::string prefix_columns(const NpcfResult& r) {
  std::string cols;
  if (r.order == 2 || r.statistic == Statistic::ThreePointEquilateral) cols = "rmin rmax";
  else if (r.order == 3) cols = "r1min r1max r2min r2max r3min r3max";
  else cols = "r12min r12max r13min r13max r14min r14max r23min r23max r24min r24max r34min r34max";
  if (has_mu_columns(r)) cols += " mumin mumax";
  return cols;
}

void append_number(std::string& line, double v, const char* fmt, bool fortran) {
  if (!line.empty()) line += ' ';
  if (fortran) {
    line += fortran_e14_7(v);
  } else {
    if (v == 0.0) v = 0.0;  // never print -0
    appendf(line, fmt, v);
  }
}

/// Edge (and mu) columns of one row.
void append_prefix(std::string& line, const NpcfResult& r, std::size_t row, bool fortran) {
  const int k = r.statistic == Statistic::ThreePointEquilateral ? 1 : r.edges_per_row;
  const auto stride = static_cast<std::size_t>(r.edges_per_row);
  for (int e = 0; e < k; ++e) {
    const int b = r.bins[row * stride + static_cast<std::size_t>(e)];
    append_number(line, r.bin_lo(b), "%.15g", fortran);
    append_number(line, r.bin_hi(b), "%.15g", fortran);
  }
  if (has_mu_columns(r)) {
    append_number(line, r.mu_lo(row), "%.15g", fortran);
    append_number(line, r.mu_hi(row), "%.15g", fortran);
  }
}

std::string header_lines(const NpcfResult& r, const std::string& what) {
  return "# Almagest " + (r.provenance.version.empty() ? almagest::version() : r.provenance.version) +
         ": " + what + "\n# statistic: " + to_string(r.statistic) + "\n# config: " +
         r.config.to_json() + "\n";
}

/// Text in the published column layouts; `fortran`: numbers as e14.7 (the published files),
/// otherwise edges %.15g and values %.17g (round-trip exact).
std::string format_columns(const NpcfResult& r, bool fortran) {
  const std::size_t rows = r.rows();
  const Statistic s = r.statistic;
  std::string out;
  out += "# Almagest " + (r.provenance.version.empty() ? almagest::version() : r.provenance.version) +
         ": " + description(s) + " (GRAMSCI v2 column layout" +
         (fortran ? ", numbers as Fortran e14.7)\n" : ", full precision)\n");
  out += std::string("# statistic: ") + to_string(s) + "\n";
  out += "# created_utc: " + r.provenance.created_utc + "  host: " + r.provenance.host +
         "  backend: " + r.provenance.backend + "  device: " + r.provenance.device +
         "  threads: " + std::to_string(r.provenance.threads) + "\n";
  out += "# ndata: " + std::to_string(r.ndata) + "  nrandom: " + std::to_string(r.nrandom) +
         "  graph_edges: " + std::to_string(r.graph_edges) + "\n";
  if (r.analytic_randoms)
    out += "# analytic randoms (periodic box): " + analytic_random_text(r) + "\n";
  out += "# config: " + r.config.to_json() + "\n";
  out += "# provenance: " + r.provenance.to_json() + "\n";

  std::string cols = prefix_columns(r);
  if (r.order == 2) {
    cols += " NN RR xi";
  } else if (r.order == 3) {
    cols += " NNN RRR zeta";
  } else {
    if (s == Statistic::FourPointParity)
      cols += " NNNN RRRR zeta_even NNNN_odd RRRR_odd zeta_odd zeta_disc zeta_conn_even zeta_conn_odd";
    else
      cols += " NNNN RRRR zeta zeta_disc zeta_conn";
  }
  out += "# " + cols + "\n";

  std::string line;
  auto num = [&](double v, const char* fmt) { append_number(line, v, fmt, fortran); };
  for (std::size_t row = 0; row < rows; ++row) {
    line.clear();
    append_prefix(line, r, row, fortran);
    num(r.n[row], "%.17g");
    num(r.r[row], "%.17g");
    num(r.estimator[row], "%.17g");
    if (s == Statistic::FourPointParity) {
      num(r.n_odd[row], "%.17g");
      num(r.r_odd[row], "%.17g");
      num(r.zeta_odd[row], "%.17g");
      num(r.zeta_disc[row], "%.17g");
      num(r.zeta_conn[row], "%.17g");
      num(r.zeta_odd[row], "%.17g");  // the odd channel is intrinsically connected
    } else if (s == Statistic::FourPoint) {
      num(r.zeta_disc[row], "%.17g");
      num(r.zeta_conn[row], "%.17g");
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

std::string format_gramsci(const NpcfResult& r) { return format_columns(r, true); }

std::string format_jackknife_rows(const NpcfResult& r, bool fortran) {
  const auto& jk = r.jackknife;
  const std::size_t rows = r.rows();
  const char* nn = r.order == 2 ? "NN" : r.order == 3 ? "NNN" : "NNNN";
  const char* rr = r.order == 2 ? "RR" : r.order == 3 ? "RRR" : "RRRR";
  const char* est = r.order == 2 ? "xi" : "zeta";
  std::string out = header_lines(r, "delete-one jackknife realisations (" +
                                        std::to_string(jk.realisations) + " regions)");
  out += "# " + prefix_columns(r) + " ireal " + nn + " " + rr + " " + est + "\n";
  std::string line;
  for (int m = 0; m < jk.realisations; ++m)
    for (std::size_t row = 0; row < rows; ++row) {
      line.clear();
      append_prefix(line, r, row, fortran);
      line += ' ';
      line += std::to_string(m + 1);
      const std::size_t at = static_cast<std::size_t>(m) * rows + row;
      append_number(line, jk.n[at], "%.17g", fortran);
      append_number(line, jk.r[at], "%.17g", fortran);
      append_number(line, jk.estimator[at], "%.17g", fortran);
      out += line;
      out += '\n';
    }
  return out;
}

std::string format_jackknife_errors(const NpcfResult& r, bool fortran) {
  const auto& jk = r.jackknife;
  const std::string est = r.order == 2 ? "xi" : "zeta";
  std::string out = header_lines(r, "delete-one jackknife mean and sigma (" +
                                        std::to_string(jk.realisations) + " regions)");
  out += "# " + prefix_columns(r) + " " + est + "_mean_jk " + est + "_sigma_jk\n";
  std::string line;
  for (std::size_t row = 0; row < r.rows(); ++row) {
    line.clear();
    append_prefix(line, r, row, fortran);
    append_number(line, jk.mean[row], "%.17g", fortran);
    append_number(line, jk.sigma[row], "%.17g", fortran);
    out += line;
    out += '\n';
  }
  return out;
}

std::string format_text_exact(const NpcfResult& r) { return format_columns(r, false); }

void write_text_exact(const NpcfResult& r, const std::string& path) {
  write_text_atomic(path, format_text_exact(r));
}

void write_gramsci(const NpcfResult& r, const std::string& path) {
  write_text_atomic(path, format_gramsci(r));
}

}  // namespace almagest::npcf
