#include "job_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <toml++/toml.h>

#include "almagest/core/error.hpp"
#include "almagest/io/text_file.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;
using npcf::JobValue;
using npcf::JobValues;

namespace {

std::string normalise_key(std::string k) {
  for (char& c : k)
    if (c == '_') c = '-';
  return k;
}

/// Remembers the spelling each normalised key came from in one table, so that two spellings of
/// one key (log-bins and log_bins) are an error naming both, even with equal values: which one
/// would win is not something a user should have to know.
class KeySpellings {
public:
  void add(const std::string& written, const std::string& where_prefix) {
    const std::string key = normalise_key(written);
    auto [it, fresh] = seen_.emplace(key, written);
    if (!fresh)
      throw ConfigError(where_prefix + key,
                        it->second == written
                            ? "key '" + written + "' is given twice in one table"
                            : "given twice in one table, as '" + it->second + "' and as '" +
                                  written + "' (write it once)");
  }

private:
  std::map<std::string, std::string> seen_;
};

std::string number_text(double d) {
  std::ostringstream s;
  s.precision(17);
  s << d;
  return s.str();
}

// ---- TOML ------------------------------------------------------------------------------------

JobValue toml_value(const toml::node& n, const std::string& where) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return static_cast<std::int64_t>(i->get());
  if (auto d = n.as_floating_point()) return d->get();
  if (auto b = n.as_boolean()) return b->get();
  if (auto a = n.as_array()) {
    std::vector<std::string> items;
    for (const auto& e : *a) {
      if (auto s = e.as_string()) items.push_back(s->get());
      else if (auto i = e.as_integer()) items.push_back(std::to_string(i->get()));
      else if (auto d = e.as_floating_point()) items.push_back(number_text(d->get()));
      else throw ConfigError(where, "array items must be strings or numbers");
    }
    return items;
  }
  throw ConfigError(where, "unsupported value type (tables, dates and times are not options)");
}

void toml_table_into(const toml::table& t, JobValues& out, const std::string& prefix,
                     bool skip_job) {
  KeySpellings spellings;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (skip_job && key == "job") continue;
    spellings.add(key, prefix);
    out[normalise_key(key)] = toml_value(v, prefix + key);
  }
}

JobFile parse_toml(const std::string& text, JobFile jf, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, jf.path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(name + ":" + std::to_string(b.line) + ":" + std::to_string(b.column),
                      std::string("TOML syntax error: ") + std::string(e.description()));
  }
  const toml::node* jobs = root.get("job");
  if (!jobs) {
    JobFileEntry e{{}, name + ": "};
    toml_table_into(root, e.values, e.label, false);
    jf.jobs.push_back(std::move(e));
    return jf;
  }
  JobValues defaults;
  toml_table_into(root, defaults, name + ": ", true);
  std::vector<const toml::table*> tables;
  if (auto t = jobs->as_table()) tables.push_back(t);
  else if (auto a = jobs->as_array()) {
    for (const auto& e : *a) {
      if (!e.as_table()) throw ConfigError(name + ": job", "every [[job]] entry must be a table");
      tables.push_back(e.as_table());
    }
  } else {
    throw ConfigError(name + ": job", "must be a table or an array of tables ([[job]])");
  }
  for (std::size_t i = 0; i < tables.size(); ++i) {
    JobFileEntry e{defaults, name + ": job " + std::to_string(i + 1) + ": "};
    toml_table_into(*tables[i], e.values, e.label, false);
    jf.jobs.push_back(std::move(e));
  }
  return jf;
}

// ---- JSON ------------------------------------------------------------------------------------

JobValue json_value(const nlohmann::json& j, const std::string& where) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>();
  // Unsigned above INT64_MAX would wrap to a negative value: refuse it as written.
  if (j.is_number_unsigned() &&
      j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw ConfigError(where, "integer " + j.dump() + " is out of range (a 64-bit integer)");
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_array()) {
    std::vector<std::string> items;
    for (const auto& e : j) {
      if (e.is_string()) items.push_back(e.get<std::string>());
      else if (e.is_number_integer()) items.push_back(std::to_string(e.get<std::int64_t>()));
      else if (e.is_number_float()) items.push_back(number_text(e.get<double>()));
      else throw ConfigError(where, "array items must be strings or numbers");
    }
    return items;
  }
  throw ConfigError(where, "unsupported value type (objects and null are not options)");
}

void json_object_into(const nlohmann::json& o, JobValues& out, const std::string& prefix,
                      bool skip_job) {
  KeySpellings spellings;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (skip_job && it.key() == "job") continue;
    spellings.add(it.key(), prefix);
    out[normalise_key(it.key())] = json_value(it.value(), prefix + it.key());
  }
}

JobFile parse_json(const std::string& text, JobFile jf, const std::string& name) {
  nlohmann::json root;
  // The parsed object keeps only the last of two identical keys: catch those while parsing.
  std::vector<std::map<std::string, std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) open_objects.emplace_back();
    else if (ev == E::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (ev == E::key && !open_objects.empty() && duplicate.empty()) {
      const std::string k = parsed.get<std::string>();
      auto [it, fresh] = open_objects.back().emplace(normalise_key(k), k);
      if (!fresh)
        duplicate = it->second == k ? "key '" + k + "' is given twice in one object"
                                    : "key '" + normalise_key(k) + "' is given twice in one object, as '" +
                                          it->second + "' and as '" + k + "' (write it once)";
    }
    return true;
  };
  try {
    root = nlohmann::json::parse(text, on_event);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("] ");
    throw ConfigError(name, "JSON syntax error: " +
                                (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  if (!duplicate.empty()) throw ConfigError(name, duplicate);
  JobValues defaults;
  std::vector<const nlohmann::json*> objects;
  if (root.is_array()) {
    for (const auto& e : root) objects.push_back(&e);
  } else if (root.is_object() && root.contains("job")) {
    json_object_into(root, defaults, name + ": ", true);
    const auto& jobs = root["job"];
    if (jobs.is_object()) objects.push_back(&jobs);
    else if (jobs.is_array()) for (const auto& e : jobs) objects.push_back(&e);
    else throw ConfigError(name + ": job", "must be an object or an array of objects");
  } else if (root.is_object()) {
    JobFileEntry e{{}, name + ": "};
    json_object_into(root, e.values, e.label, false);
    jf.jobs.push_back(std::move(e));
    return jf;
  } else {
    throw ConfigError(name, "the top level must be an object (one job) or an array of jobs");
  }
  for (std::size_t i = 0; i < objects.size(); ++i) {
    std::string label = name + ": job " + std::to_string(i + 1) + ": ";
    if (!objects[i]->is_object()) throw ConfigError(label, "every job must be an object");
    JobFileEntry e{defaults, label};
    json_object_into(*objects[i], e.values, label, false);
    jf.jobs.push_back(std::move(e));
  }
  return jf;
}

}  // namespace

JobFile read_job_file(const std::string& path) {
  JobFile jf;
  jf.path = path;
  std::error_code ec;
  // A regular file of at most 16 MiB (a job file is a few lines; /dev/zero would never end).
  const std::string text = io::read_text_file(path, "job", std::uint64_t{16} << 20);
  jf.base_dir = fs::absolute(fs::path(path), ec).parent_path().string();

  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  JobFile out;
  if (ext == ".toml") out = parse_toml(text, std::move(jf), path);
  else if (ext == ".json") out = parse_json(text, std::move(jf), path);
  else throw ConfigError(path, "unknown job file type '" + ext + "' (use .toml or .json)");
  if (out.jobs.empty()) throw ConfigError(path, "the job file contains no job");
  return out;
}

namespace {

/// Problem with an input catalogue of a job, or "" when it can be read.
std::string input_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "file does not exist" : std::string("cannot access: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory, not a file";
  if (!S_ISREG(st.st_mode)) return "is not a regular file (a device, FIFO or socket)";
  if (::access(path.c_str(), R_OK) != 0) return std::string("is not readable: ") + std::strerror(errno);
  return {};
}

/// An output path in a form two spellings of one file share: absolute, normalised, with the
/// symbolic links of its existing part resolved.
std::string output_key(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p : c).string();
}

}  // namespace

std::vector<npcf::NpcfJob> validate_jobs(const JobFile& jf) {
  std::vector<npcf::NpcfJob> jobs;
  std::vector<std::string> problems;
  bool config_problem = false;
  struct Written {
    std::string key, path, label;
    bool has_id = false;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::vector<Written> written;
  for (const auto& e : jf.jobs) {
    npcf::NpcfJob job;
    try {
      job = npcf::make_npcf_job(e.values, jf.base_dir, e.label);
    } catch (const ConfigError& err) {
      problems.push_back(err.what());  // make_npcf_job's messages carry the label already
      config_problem = true;
      continue;
    }
    std::vector<const io::CatalogueSpec*> inputs{&job.data};
    if (job.randoms) inputs.push_back(&*job.randoms);
    for (const auto* in : inputs)
      if (auto p = input_problem(in->path); !p.empty())
        problems.push_back(e.label + (in == &job.data ? "data" : "randoms") + ": " + in->path + ": " + p);
    for (const auto& out : job.output_paths()) {
      Written w{output_key(out), out, e.label};
      struct stat st {};
      if (::stat(w.key.c_str(), &st) == 0) {
        w.has_id = true;
        w.dev = st.st_dev;
        w.ino = st.st_ino;
      }
      for (const auto& o : written)
        if (o.key == w.key || (o.has_id && w.has_id && o.dev == w.dev && o.ino == w.ino)) {
          const std::string first = o.label.empty() ? std::string("an earlier job") : o.label.substr(0, o.label.size() - 2);
          problems.push_back(e.label + "output: " + out + " is also written by " + first +
                             " (" + o.path + "); each job needs its own output file");
          config_problem = true;
          break;
        }
      written.push_back(std::move(w));
    }
    jobs.push_back(std::move(job));
  }
  if (problems.empty()) return jobs;
  std::string all;
  for (std::size_t i = 0; i < problems.size(); ++i) all += (i ? "; " : "") + problems[i];
  if (config_problem) throw ConfigError("", all);
  throw IoError("", "", all);
}

}  // namespace almagest::cli
