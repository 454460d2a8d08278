// HEALPix maps and alm in HDF5 (through io::Hdf5Writer / io::Hdf5Reader, atomic writes).
// Header values (nside, lmax) are range-checked before any arithmetic; the reader bounds every
// dataset by the file's size before allocating.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"

namespace almagest::sht {
namespace {

/// An integer attribute stored as any numeric type, checked to be a whole number in [lo, hi]
/// before it is converted (a corrupt 1e18 or NaN must not reach an int).
std::int64_t integer_attr(const io::Hdf5Reader& r, const std::string& object, const std::string& name,
                          std::int64_t lo, std::int64_t hi, const char* what) {
  const double v = r.read_attr_double(object, name);
  if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(hi))
    throw IoError(r.path(), object + "/" + name, fmt::format("{} must be a whole number in {}..{}, found {:.17g}",
                                                             what, lo, hi, v));
  return static_cast<std::int64_t>(v);
}

}  // namespace

void write_map_hdf5(const std::string& path, const HealpixMap& map) {
  if (map.columns.empty()) throw ConfigError("columns", "map has no columns");
  const std::size_t n = map.columns[0].size();
  std::vector<double> flat;
  flat.reserve(n * map.columns.size());
  for (const auto& c : map.columns) {
    if (c.size() != n) throw ConfigError("columns", "columns differ in length");
    flat.insert(flat.end(), c.begin(), c.end());
  }
  io::Hdf5Writer w(path);
  w.write("/map", flat, {map.columns.size(), n});
  w.attr("/map", "nside", static_cast<std::int64_t>(map.nside));
  w.attr("/map", "ordering", std::string(map.ordering == Ordering::Ring ? "RING" : "NESTED"));
  std::string names;
  for (std::size_t i = 0; i < map.names.size(); ++i) names += (i ? "," : "") + map.names[i];
  w.attr("/map", "names", names);
  w.attr("/map", "coordsys", map.coordsys);
  if (map.partial()) w.write("/pixels", map.pixels);
  w.commit();
}

HealpixMap read_map_hdf5(const std::string& path) {
  io::Hdf5Reader r(path);
  if (!r.exists("/map")) throw IoError(path, "/map", "dataset missing");
  HealpixMap m;
  const auto shape = r.shape("/map");
  if (shape.size() != 2)
    throw IoError(path, "/map", fmt::format("expected a 2-D dataset [ncomp][npix], found {} dimensions", shape.size()));
  if (shape[0] < 1) throw IoError(path, "/map", "holds no map column");
  const std::string ord = r.read_attr_string("/map", "ordering");
  if (ord == "RING")
    m.ordering = Ordering::Ring;
  else if (ord == "NESTED")
    m.ordering = Ordering::Nested;
  else
    throw IoError(path, "/map/ordering", "unknown ordering '" + ord + "'");
  // nside: 1..2^29 (a power of two for NESTED), checked before npix_of or any cast.
  m.nside = static_cast<int>(integer_attr(r, "/map", "nside", 1, kMaxHealpixNside, "NSIDE"));
  if (!valid_nside(m.nside, m.ordering == Ordering::Nested))
    throw IoError(path, "/map/nside", fmt::format("NSIDE {} of a NESTED map must be a power of two", m.nside));
  const std::string names = r.read_attr_string("/map", "names");
  std::size_t p = 0;
  while (p <= names.size() && !names.empty()) {
    const auto q = names.find(',', p);
    m.names.push_back(names.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  m.coordsys = r.read_attr_string("/map", "coordsys");
  if (r.exists("/pixels")) {
    m.pixels = r.read_int64("/pixels");
    const std::int64_t npix = npix_of(m.nside);
    for (std::size_t i = 0; i < m.pixels.size(); ++i)
      if (m.pixels[i] < 0 || m.pixels[i] >= npix)
        throw IoError(path, "/pixels", fmt::format("entry {}: pixel {} is outside 0..{} (NSIDE {})", i,
                                                   m.pixels[i], npix - 1, m.nside));
  }
  const std::uint64_t want = m.partial() ? m.pixels.size() : static_cast<std::uint64_t>(npix_of(m.nside));
  if (shape[1] != want)
    throw IoError(path, "/map",
                  fmt::format("holds {} pixels per column, expected {} ({}, NSIDE {})", shape[1], want,
                              m.partial() ? "the length of /pixels" : "12 NSIDE^2", m.nside));
  const auto flat = r.read_double("/map");  // bounded by the file size
  if (flat.size() != shape[0] * shape[1]) throw IoError(path, "/map", "changed size while reading");
  for (std::uint64_t c = 0; c < shape[0]; ++c)
    m.columns.emplace_back(flat.begin() + c * shape[1], flat.begin() + (c + 1) * shape[1]);
  return m;
}

void write_alm_hdf5(const std::string& path,
                    const std::vector<std::vector<std::complex<double>>>& sets, int lmax) {
  const std::size_t n = alm_size(lmax);
  std::vector<double> flat;
  flat.reserve(2 * n * sets.size());
  for (const auto& s : sets) {
    if (s.size() != n) throw ConfigError("alm", "each alm set needs alm_size(lmax) entries");
    for (const auto& a : s) {
      flat.push_back(a.real());
      flat.push_back(a.imag());
    }
  }
  io::Hdf5Writer w(path);
  w.write("/alm", flat, {sets.size(), n, 2});
  w.attr("/alm", "lmax", static_cast<std::int64_t>(lmax));
  w.attr("/alm", "mmax", static_cast<std::int64_t>(lmax));
  w.attr("/alm", "layout", std::string("healpy triangular: index(l,m) = m(2lmax+1-m)/2 + l; last axis (re, im)"));
  w.commit();
}

std::vector<std::vector<std::complex<double>>> read_alm_hdf5(const std::string& path, int* lmax_out) {
  io::Hdf5Reader r(path);
  if (!r.exists("/alm")) throw IoError(path, "/alm", "dataset missing");
  const auto shape = r.shape("/alm");
  if (shape.size() != 3 || shape[2] != 2) throw IoError(path, "/alm", "expected shape [nsets][nalm][2]");
  // A sanity bound that keeps alm_size() exact; the dataset length check below is the real one.
  const int lmax = static_cast<int>(integer_attr(r, "/alm", "lmax", 0, std::int64_t{1} << 24, "lmax"));
  if (alm_size(lmax) != shape[1])
    throw IoError(path, "/alm/lmax",
                  fmt::format("lmax {} needs {} coefficients per set, the dataset holds {}", lmax, alm_size(lmax),
                              shape[1]));
  const auto flat = r.read_double("/alm");  // bounded by the file size
  if (flat.size() != shape[0] * shape[1] * 2) throw IoError(path, "/alm", "changed size while reading");
  std::vector<std::vector<std::complex<double>>> out(shape[0]);
  for (std::uint64_t s = 0; s < shape[0]; ++s) {
    out[s].resize(shape[1]);
    for (std::uint64_t i = 0; i < shape[1]; ++i)
      out[s][i] = {flat[2 * (s * shape[1] + i)], flat[2 * (s * shape[1] + i) + 1]};
  }
  if (lmax_out) *lmax_out = lmax;
  return out;
}

}  // namespace almagest::sht
