// Bounded, seeded fuzzing of the candidate-table readers `stack stamps` uses (the stack engine's
// stack::files::read_candidates, almagest/stack/job.hpp), ECSV and HDF5 as
// `stack search` writes them (the engine's write_candidates_ecsv / write_result_hdf5). Harness and
// bounds: fuzz_harness.hpp.
#include <QtTest>

#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/job.hpp"

#include "fuzz_harness.hpp"

using namespace almagest;
using almagest::fuzz::Campaign;
using almagest::fuzz::corrupt_fixture;
using almagest::fuzz::run_campaign;

namespace {

stack::SearchResult small_result() {
  stack::SearchResult r;
  r.width = 32;
  r.height = 24;
  r.n_exp = 6;
  r.n_vel = 49;
  r.threshold_z = 5.25;
  r.digest.sum_a = 123.5;
  r.digest.sum_b = 77.25;
  r.digest.max_z = 9.5;
  r.digest.count_above = 5;
  r.backend = "cpu";
  r.provenance.backend = "cpu";
  r.provenance.config_json = R"({"grid": 7, "threshold": 5.25})";
  r.provenance.inputs = {"stack.h5"};
  for (int i = 0; i < 5; ++i) {
    stack::Candidate c;
    c.x = 3 + 5 * i;
    c.y = 2 + 4 * i;
    c.v = 7 * i;
    c.vx = 0.25 * i - 0.5;
    c.vy = -0.125 * i;
    c.a = float(10 + i);
    c.b = float(2 + i);
    c.obs = 6 - (i % 2);
    c.z = 9.5 - i;
    c.flux = 4.0 + i;
    c.members = 1 + i % 3;
    r.candidates.push_back(c);
  }
  return r;
}

}  // namespace

class TestFuzzCandidates : public QObject {
  Q_OBJECT

private slots:
  void candidates_ecsv() {
    run_campaign({"candidates-ecsv", ".ecsv",
                  [](const std::string& p) { stack::write_candidates_ecsv(p, small_result()); },
                  [](const std::string& p) { (void)stack::files::read_candidates(p); },
                  {}});
  }

  void candidates_hdf5() {
    run_campaign({"candidates-hdf5", ".h5",
                  [](const std::string& p) { stack::write_result_hdf5(p, small_result()); },
                  [](const std::string& p) { (void)stack::files::read_candidates(p); },
                  {corrupt_fixture("ubsan_candh5_139.h5")}});
  }
};

ALMAGEST_FUZZ_MAIN(TestFuzzCandidates)
#include "test_fuzz_candidates.moc"
