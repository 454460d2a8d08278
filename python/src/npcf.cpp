// almagest N-point bindings: the job schema (npcf_schema()) as Python data, the job run
// from keyword values (catalogues from files or arrays), results with NumPy views.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"
#include "engine_call.hpp"

namespace almagest::py {

namespace {

using Vec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/// A catalogue from (x, y, z, w) arrays (w may be None: unit weights).
io::Catalogue catalogue_of(nb::handle arrays, const std::string& source) {
  nb::tuple t = nb::cast<nb::tuple>(arrays);
  if (t.size() != 4) throw ConfigError(source, "expected (x, y, z, w) arrays");
  io::Catalogue c;
  c.source = source;
  std::vector<double>* cols[3] = {&c.x, &c.y, &c.z};
  std::size_t n = 0;
  for (int i = 0; i < 3; ++i) {
    Vec a = nb::cast<Vec>(t[i]);
    if (i == 0) n = a.shape(0);
    if (a.shape(0) != n)
      throw ConfigError(source, "coordinate arrays differ in length (" + std::to_string(n) + " and " +
                                    std::to_string(a.shape(0)) + ")");
    cols[i]->assign(a.data(), a.data() + n);
  }
  if (t[3].is_none()) {
    c.w.assign(n, 1.0);
  } else {
    Vec w = nb::cast<Vec>(t[3]);
    if (w.shape(0) != n)
      throw ConfigError(source, "weights hold " + std::to_string(w.shape(0)) + " values for " +
                                    std::to_string(n) + " points");
    c.w.assign(w.data(), w.data() + n);
  }
  return c;
}

/// make_npcf_job's ConfigError lists every problem under an empty field; a single problem
/// "key: message" gets its key as the field (what the schema Reader does), so that
/// almagest.ConfigError.field names the keyword.
npcf::NpcfJob make_job(const schema::Values& values) {
  try {
    return npcf::make_npcf_job(values, "", "");
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    auto colon = msg.find(": ");
    if (e.field().empty() && colon != std::string::npos && msg.find("; ") == std::string::npos &&
        npcf::npcf_schema().find(msg.substr(0, colon)))
      throw ConfigError(msg.substr(0, colon), msg.substr(colon + 2));
    throw;
  }
}

template <class T>
nb::object view(const std::vector<T>& v, nb::handle owner, std::size_t cols = 0) {
  if (v.empty()) return nb::none();
  // cols = 0: one axis; else [rows, cols] (the configuration indices, also for cols = 1).
  std::size_t shape[2] = {cols ? v.size() / cols : v.size(), cols};
  auto a = nb::ndarray<nb::numpy, const T>(v.data(), cols ? 2 : 1, shape, owner);
  return nb::cast(a, nb::rv_policy::reference);
}

#define RESULT_ARRAY(name, member)                                                          \
  def_prop_ro(name, [](nb::handle self) {                                                   \
    return view(nb::cast<const npcf::NpcfResult&>(self).member, self);                      \
  })

}  // namespace

void bind_npcf(nb::module_& m) {
  m.def("npcf_options", [] { return schema_fields(npcf::npcf_schema()); },
        "The N-point job schema: one dict per option, in help order.");

  nb::class_<npcf::NpcfResult>(m, "NpcfResult",
                               "One statistic's result (npcf/result.hpp). Arrays are read-only "
                               "views that keep the result alive; rows in the configuration "
                               "order of docs/npcf.md.")
      .def_prop_ro("statistic", [](const npcf::NpcfResult& r) { return npcf::to_string(r.statistic); })
      .def_ro("order", &npcf::NpcfResult::order)
      .def_ro("edges_per_row", &npcf::NpcfResult::edges_per_row)
      .def_prop_ro("bins", [](nb::handle self) {
        const auto& r = nb::cast<const npcf::NpcfResult&>(self);
        return view(r.bins, self, static_cast<std::size_t>(r.edges_per_row));
      }, "Configuration indices: [rows, edges_per_row] 0-based radial bins.")
      .RESULT_ARRAY("tuples", tuples)
      .RESULT_ARRAY("random_tuples", random_tuples)
      .RESULT_ARRAY("n", n)
      .RESULT_ARRAY("r", r)
      .RESULT_ARRAY("estimator", estimator)
      .RESULT_ARRAY("zeta_disc", zeta_disc)
      .RESULT_ARRAY("zeta_conn", zeta_conn)
      .RESULT_ARRAY("realisable", realisable)
      .RESULT_ARRAY("xi_internal", xi_internal)
      .RESULT_ARRAY("n_odd", n_odd)
      .RESULT_ARRAY("r_odd", r_odd)
      .RESULT_ARRAY("zeta_odd", zeta_odd)
      .RESULT_ARRAY("degenerate", degenerate)
      .def_prop_ro("bin_edges", [](const npcf::NpcfResult& r) {
        std::vector<double> e(static_cast<std::size_t>(r.config.bins.nbins) + 1);
        for (std::size_t i = 0; i < e.size(); ++i) e[i] = r.config.bins.edge(static_cast<int>(i));
        return e;
      }, "nbins + 1 radial edges [Mpc/h] (a list).")
      .def_prop_ro("bin_centres", [](const npcf::NpcfResult& r) {
        std::vector<double> c(static_cast<std::size_t>(r.config.bins.nbins));
        for (std::size_t i = 0; i < c.size(); ++i) c[i] = r.config.bins.centre(static_cast<int>(i));
        return c;
      })
      .def_ro("analytic_randoms", &npcf::NpcfResult::analytic_randoms)
      .def_ro("ndata", &npcf::NpcfResult::ndata)
      .def_ro("nrandom", &npcf::NpcfResult::nrandom)
      .def_ro("graph_edges", &npcf::NpcfResult::graph_edges)
      .def("rows", &npcf::NpcfResult::rows)
      .def_prop_ro("config_json", [](const npcf::NpcfResult& r) { return r.config.to_json(); })
      .def_prop_ro("provenance_json", [](const npcf::NpcfResult& r) { return r.provenance.to_json(); })
      .def("write_hdf5", [](const npcf::NpcfResult& r, const std::string& path) {
        nb::gil_scoped_release g;
        npcf::write_hdf5(r, path);
      })
      .def("write_gramsci", [](const npcf::NpcfResult& r, const std::string& path) {
        nb::gil_scoped_release g;
        npcf::write_gramsci(r, path);
      });

  m.def("read_npcf_hdf5", [](const std::string& path) {
    nb::gil_scoped_release g;
    return npcf::read_hdf5(path);
  }, nb::arg("path"), "Reads a result file written by write_hdf5 / almagest-cli npcf.");

  // values: schema key -> value; data/randoms: (x, y, z, w) arrays or None (files named in
  // values). Returns one result per statistic, in the order of `stat`.
  m.def("_npcf", [](nb::dict py_values, nb::handle data, nb::handle randoms, bool write,
                    nb::handle progress) {
    schema::Values values;
    for (auto [k, v] : py_values) {
      std::string key = nb::cast<std::string>(k);
      values[key] = schema_value(key, v);
    }
    npcf::NpcfJob job = make_job(values);
    std::optional<io::Catalogue> data_cat, ran_cat;
    if (!data.is_none()) data_cat = catalogue_of(data, job.data.path);
    if (!randoms.is_none()) ran_cat = catalogue_of(randoms, job.randoms ? job.randoms->path : "randoms");
    std::vector<npcf::NpcfResult> results;
    run_engine([&](const JobContext& ctx) {
      std::optional<npcf::PointSet> points;
      {
        ctx.progress(0, job.randoms ? 2 : 1, "reading catalogues");
        if (!data_cat) data_cat = io::load_catalogue(job.data);
        ctx.check_cancel();
        if (job.randoms && !ran_cat) ran_cat = io::load_catalogue(*job.randoms);
        ctx.check_cancel();
        points = npcf::make_point_set(*data_cat, ran_cat ? &*ran_cat : nullptr);
        if (job.config.periodic) npcf::wrap_periodic(*points, job.config.box);
      }
      npcf::NpcfPlan plan(job.config, std::move(*points), ctx);
      for (npcf::Statistic s : job.statistics) {
        npcf::NpcfResult r = plan.execute(s, ctx);
        if (r.provenance.inputs.empty()) {
          r.provenance.inputs.push_back(job.data.path);
          if (job.randoms) r.provenance.inputs.push_back(job.randoms->path);
        }
        results.push_back(std::move(r));
      }
      ctx.check_cancel();
      if (write) {
        // Each file is written atomically (npcf/result.hpp). The job layer (issue 20) will
        // commit a multi-statistic set together, as the CLI's OutputSet does.
        ctx.progress(0, 1, "writing results");
        const auto paths = job.output_paths();
        for (std::size_t i = 0; i < results.size(); ++i) {
          npcf::write_result(results[i], paths[i], job.format);
        }
      }
    }, job.config.threads, progress);
    return results;
  }, nb::arg("values"), nb::arg("data").none(), nb::arg("randoms").none(), nb::arg("write"),
     nb::arg("progress").none());
}

}  // namespace almagest::py
