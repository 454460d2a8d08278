#pragma once
// What every binding shares: the almagest.Error hierarchy (a Python mirror of
// engine/include/almagest/core/error.hpp) and run_engine(), which runs one engine call with the
// GIL released on a worker thread while the calling thread watches for Ctrl-C.
#include <nanobind/nanobind.h>

#include <functional>
#include <string>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"

namespace almagest::py {

namespace nb = nanobind;

/// Creates almagest.Error, ConfigError, IoError, BackendUnavailable, CudaError, NotConverged on
/// `m` and registers the translator of engine exceptions into them.
void register_errors(nb::module_& m);

/// Raises almagest.ConfigError(field, message) from binding code (argument checks).
[[noreturn]] void config_error(const std::string& field, const std::string& message);

/// Runs fn(ctx) on a worker thread with the GIL released. The calling thread waits, waking every
/// 50 ms to take the GIL and run Python's signal handlers (PyErr_CheckSignals: only the main
/// thread's do anything) and to call `progress(done, total, stage)` (if not None) with the latest
/// progress. A raised Python exception (KeyboardInterrupt from Ctrl-C, or one raised by the
/// progress callback) cancels the job's token; once the engine has stopped it is re-raised. An
/// engine Cancelled not caused by Python becomes KeyboardInterrupt; any other engine exception is
/// rethrown into the translator. `fn` must not touch Python objects.
void run_engine(const std::function<void(const JobContext&)>& fn, int threads,
                nb::handle progress = nb::handle());

/// A Python value (bool, int, float, str, list or tuple of str) as a schema value; the schema
/// checks its kind when the job is made. ConfigError naming `key` otherwise (python/src/jobs.cpp).
schema::Value schema_value(const std::string& key, nb::handle v);

/// A schema as a list of dicts in help order (key, kind, group, help, value_name, choices,
/// required, unit, operations, full_help): what the Python keywords are generated from.
nb::list schema_fields(const schema::Schema& s);

void bind_npcf(nb::module_& m);
void bind_sht(nb::module_& m);
void bind_stack(nb::module_& m);
void bind_jobs(nb::module_& m);

}  // namespace almagest::py
