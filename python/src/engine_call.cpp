#include "engine_call.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"

namespace almagest::py {

namespace {

// Exception types, created once at import (module lifetime: never freed).
PyObject* g_error = nullptr;
PyObject* g_config = nullptr;
PyObject* g_io = nullptr;
PyObject* g_backend = nullptr;
PyObject* g_cuda = nullptr;
PyObject* g_not_converged = nullptr;

PyObject* new_type(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string full = std::string("almagest.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases, nullptr);
  if (!t) throw nb::python_error();
  m.attr(name) = nb::handle(t);
  return t;
}

/// Sets the Python error `type(message)` with extra attributes (string or number objects).
void raise(PyObject* type, const char* message,
           std::initializer_list<std::pair<const char*, nb::object>> attrs = {}) {
  PyObject* inst = PyObject_CallFunction(type, "s", message);
  if (!inst) return;  // the constructor's error stays set
  for (const auto& [name, value] : attrs) PyObject_SetAttrString(inst, name, value.ptr());
  PyErr_SetObject(type, inst);
  Py_DECREF(inst);
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const IoError& e) {
    raise(g_io, e.what(), {{"file", nb::str(e.file().c_str())}, {"field", nb::str(e.field().c_str())}});
  } catch (const ConfigError& e) {
    raise(g_config, e.what(), {{"field", nb::str(e.field().c_str())}});
  } catch (const NotConverged& e) {
    raise(g_not_converged, e.what(),
          {{"iterations", nb::int_(e.iterations())}, {"residual", nb::float_(e.residual())}});
  } catch (const BackendUnavailable& e) {
    raise(g_backend, e.what());
  } catch (const CudaError& e) {
    raise(g_cuda, e.what());
  } catch (const kernels::DeviceError& e) {
    raise(g_cuda, e.what());
  } catch (const Error& e) {
    raise(g_error, e.what());
  } catch (const Cancelled&) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  }
  // Anything else: nanobind's default translators (std::exception -> RuntimeError, ...).
}

}  // namespace

void register_errors(nb::module_& m) {
  g_error = new_type(m, "Error", PyExc_Exception,
                     "Base of every error the Almagest engine reports (almagest::Error).");
  nb::object value_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_ValueError));
  g_config = new_type(m, "ConfigError", value_bases.ptr(),
                      "A configuration value is out of range or inconsistent. .field names the "
                      "option (schema key, e.g. 'nbins').");
  g_io = new_type(m, "IoError", g_error,
                  "Reading or writing a file failed or its content is invalid. .file and .field "
                  "(column, HDU, dataset, line) name where.");
  g_backend = new_type(m, "BackendUnavailable", g_error,
                       "The requested backend cannot run here; the message says why.");
  g_cuda = new_type(m, "CudaError", g_error, "A CUDA call failed inside the CUDA module.");
  g_not_converged = new_type(m, "NotConverged", g_error,
                             "An iterative solver stopped before its tolerance. .iterations, "
                             ".residual.");
  nb::register_exception_translator(translate);
}

void config_error(const std::string& field, const std::string& message) {
  throw ConfigError(field, message);
}

void run_engine(const std::function<void(const JobContext&)>& fn, int threads,
                nb::handle progress) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
    bool fresh = false;  // progress not yet reported
    double pdone = 0, ptotal = 0;
    std::string stage;
  };
  Shared sh;
  const bool want_progress = progress.is_valid() && !progress.is_none();
  ProgressFn pf;
  if (want_progress)
    pf = [&sh](double d, double t, std::string_view s) {
      std::lock_guard<std::mutex> lk(sh.mu);
      sh.pdone = d;
      sh.ptotal = t;
      sh.stage.assign(s);
      sh.fresh = true;
    };
  CancelToken token;
  JobContext ctx(token, std::move(pf), {});
  ctx.threads = threads;

  std::thread worker;
  {
    nb::gil_scoped_release release;
    worker = std::thread([&] {
      std::exception_ptr err;
      try {
        fn(ctx);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(sh.mu);
      sh.error = err;
      sh.done = true;
      sh.cv.notify_all();
    });
  }
  std::optional<nb::python_error> pending;
  for (;;) {
    bool finished = false, report = false;
    double d = 0, t = 0;
    std::string stage;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> lk(sh.mu);
      sh.cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return sh.done; });
      finished = sh.done;
      report = sh.fresh;
      sh.fresh = false;
      d = sh.pdone;
      t = sh.ptotal;
      stage = sh.stage;
    }
    if (finished) break;
    if (pending) continue;  // cancelled: wait for the engine to stop
    if (PyErr_CheckSignals() != 0) {
      pending.emplace();  // takes the raised exception (KeyboardInterrupt for SIGINT)
      token.cancel();
    } else if (report && want_progress) {
      try {
        progress(d, t, stage.c_str());
      } catch (nb::python_error& e) {
        pending.emplace(std::move(e));
        token.cancel();
      }
    }
  }
  {
    nb::gil_scoped_release release;
    worker.join();
  }
  if (pending) throw std::move(*pending);  // the Python exception wins over the engine's outcome
  if (sh.error) {
    try {
      std::rethrow_exception(sh.error);
    } catch (const Cancelled&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw nb::python_error();
    }
  }
}

nb::list schema_fields(const schema::Schema& s) {
  auto kind_name = [](schema::Kind k) {
    switch (k) {
      case schema::Kind::Text: return "text";
      case schema::Kind::TextList: return "text-list";
      case schema::Kind::Number: return "number";
      case schema::Kind::Integer: return "integer";
      case schema::Kind::Flag: return "flag";
      case schema::Kind::Choice: return "choice";
      case schema::Kind::ChoiceList: return "choice-list";
    }
    return "text";
  };
  nb::list out;
  for (const auto& o : s.fields) {
    nb::dict d;
    d["key"] = o.key;
    d["kind"] = kind_name(o.kind);
    d["group"] = o.group;
    d["help"] = o.help;
    d["value_name"] = o.value_name;
    d["choices"] = o.choices;
    d["required"] = o.required;
    d["unit"] = o.unit;
    d["operations"] = o.operations;
    d["full_help"] = schema::full_help(o);
    out.append(d);
  }
  return out;
}

}  // namespace almagest::py
