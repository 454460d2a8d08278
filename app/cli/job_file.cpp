#include "job_file.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <toml++/toml.h>

#include "almagest/core/error.hpp"

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
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (skip_job && key == "job") continue;
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
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (skip_job && it.key() == "job") continue;
    out[normalise_key(it.key())] = json_value(it.value(), prefix + it.key());
  }
}

JobFile parse_json(const std::string& text, JobFile jf, const std::string& name) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("] ");
    throw ConfigError(name, "JSON syntax error: " +
                                (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
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
  if (!fs::exists(path, ec)) throw IoError(path, "", "job file does not exist");
  if (fs::is_directory(path, ec)) throw IoError(path, "", "job file is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "", "cannot open the job file");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw IoError(path, "", "cannot read the job file");
  jf.base_dir = fs::absolute(fs::path(path), ec).parent_path().string();

  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  JobFile out;
  if (ext == ".toml") out = parse_toml(buf.str(), std::move(jf), path);
  else if (ext == ".json") out = parse_json(buf.str(), std::move(jf), path);
  else throw ConfigError(path, "unknown job file type '" + ext + "' (use .toml or .json)");
  if (out.jobs.empty()) throw ConfigError(path, "the job file contains no job");
  return out;
}

}  // namespace almagest::cli
