#pragma once
// Readers of member outputs for the aggregation steps (aggregate.cpp). Every reader names the
// member file and the dataset or column in its IoError; values are checked finite.
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::jobs {

std::string strip_suffix(const std::string& label);
std::vector<double> flatten(const std::vector<std::vector<double>>& rows);
/// FNV-1a 64 over the values' bytes, as 16 hex digits.
std::string values_hash(const std::vector<double>& v);

struct NpcfSamples {
  std::string statistic;
  std::size_t rows = 0;
  std::vector<std::uint8_t> bins;           ///< the first member's (all must be equal)
  std::vector<std::vector<double>> values;  ///< one per member
  std::vector<std::string> hashes;
};
NpcfSamples read_npcf_samples(const std::vector<std::string>& files, const std::string& dataset, const JobContext& ctx);

struct ClSamples {
  std::vector<std::string> spectra;
  std::vector<std::int64_t> ell;
  std::vector<std::vector<double>> values;  ///< per member: spectra concatenated over ell
  std::vector<std::string> hashes;
};
ClSamples read_cl_samples(const std::vector<std::string>& files, const std::vector<std::string>& spectra, const JobContext& ctx);

struct MergedCandidates {
  std::vector<std::string> columns;         ///< the members' columns (equal in every member)
  std::vector<std::string> datatype_lines;  ///< "# - {name: ..." lines of the first member
  struct Row {
    std::size_t member = 0;
    std::vector<std::string> cells;          ///< as written in the member file
    std::size_t fields = 1;                  ///< fields it was seen in
  };
  std::vector<Row> rows;                     ///< kept, in member then row order
  std::vector<std::string> field_names;
  std::size_t total = 0;
  std::vector<std::string> hashes;
};
MergedCandidates merge_candidates(const std::vector<std::string>& files, const std::vector<std::string>& names,
                                  double radius_arcsec, const std::string& score, const JobContext& ctx);
std::string format_merged(const MergedCandidates& m, double radius_arcsec, const std::string& provenance);

}  // namespace almagest::jobs
