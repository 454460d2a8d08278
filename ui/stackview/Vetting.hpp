#pragma once
// Vetting of stack candidates: each candidate is marked real, bogus or not yet vetted, with a
// free-text note. A vetting file is ECSV 1.0 (astropy reads it): the candidate columns (x, y,
// vx, vy, z, flux, obs, members), then `verdict` ("real", "bogus" or "" for not vetted) and
// `note`; strings are quoted as ECSV's CSV-style space-delimited rows quote them ("" for a quote
// inside). Reloading matches rows to candidates by origin pixel and velocity (1e-6 px/day), so
// a vetting session continues on a new search of the same stack that finds the same candidates.
#include <QString>

#include <string>
#include <vector>

#include "almagest/stack/search.hpp"

namespace almagest::ui::stackview {

enum class Verdict { None, Real, Bogus };

struct Vet {
  Verdict verdict = Verdict::None;
  QString note;
  bool operator==(const Vet&) const = default;
};

const char* verdictName(Verdict v) noexcept;  ///< "", "real", "bogus"

/// One row of a vetting file.
struct VetRow {
  almagest::stack::Candidate c;
  Vet vet;
};

/// The ECSV text of `candidates` with their marks (vets.size() == candidates.size()). `label`
/// goes into the meta block (the stack's name).
std::string vettingEcsv(const std::vector<almagest::stack::Candidate>& candidates, const std::vector<Vet>& vets,
                        const std::string& label);
/// Parses a vetting file's text; throws IoError(path, field, message) naming the line and column.
std::vector<VetRow> parseVettingEcsv(const std::string& text, const std::string& path);
/// Reads `path` (size checked before it is read) and parses it.
std::vector<VetRow> readVettingFile(const std::string& path);
/// Applies `rows` to `vets` of `candidates` by (x, y, vx, vy); returns how many matched.
int applyVetting(const std::vector<VetRow>& rows, const std::vector<almagest::stack::Candidate>& candidates,
                 std::vector<Vet>& vets);

}  // namespace almagest::ui::stackview
