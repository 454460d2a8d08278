// Job files: TOML and JSON into JobEntry / AggregateEntry (almagest/jobs/job_file.hpp). The two
// syntaxes are first turned into one small tree (Node) so that every structural rule -- keys
// written twice, shared top-level keys, batch tables, aggregate tables -- is written once.
#include "almagest/jobs/job_file.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "almagest/core/error.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/jobs/job.hpp"

namespace almagest::jobs {

namespace fs = std::filesystem;
using schema::Value;
using schema::Values;

std::string normalise_key(std::string k) {
  for (char& c : k)
    if (c == '_') c = '-';
  return k;
}

namespace {

// ---- one tree for both syntaxes ----------------------------------------------------------------

struct Node {
  enum class Type { Scalar, Array, Table } type = Type::Scalar;
  Value scalar;                                          // Scalar
  std::vector<Node> items;                               // Array
  std::vector<std::pair<std::string, Node>> entries;     // Table, in file order, keys normalised
  std::map<std::string, std::string> written;            // normalised key -> spelling
  bool bad = false;                                      // a date/time/null (refused when used)

  const Node* get(const std::string& key) const {
    for (const auto& [k, v] : entries)
      if (k == key) return &v;
    return nullptr;
  }
};

std::string number_text(double d) {
  std::ostringstream s;
  s.precision(17);
  s << d;
  return s.str();
}

/// Adds a key to a table, refusing a key written twice (even in two spellings with equal values:
/// which one would win is not something a user should have to know).
void add_entry(Node& table, const std::string& written, Node value, const std::string& prefix) {
  const std::string key = normalise_key(written);
  auto [it, fresh] = table.written.emplace(key, written);
  if (!fresh)
    throw ConfigError(prefix + key,
                      it->second == written
                          ? "key '" + written + "' is given twice in one table"
                          : "given twice in one table, as '" + it->second + "' and as '" + written +
                                "' (write it once)");
  table.entries.emplace_back(key, std::move(value));
}

Node from_toml(const toml::node& n, const std::string& where) {
  Node out;
  if (auto t = n.as_table()) {
    out.type = Node::Type::Table;
    for (const auto& [k, v] : *t) add_entry(out, std::string(k.str()), from_toml(v, where + std::string(k.str()) + "."), where);
  } else if (auto a = n.as_array()) {
    out.type = Node::Type::Array;
    for (const auto& e : *a) out.items.push_back(from_toml(e, where));
  } else if (auto s = n.as_string()) out.scalar = s->get();
  else if (auto i = n.as_integer()) out.scalar = static_cast<std::int64_t>(i->get());
  else if (auto d = n.as_floating_point()) out.scalar = d->get();
  else if (auto b = n.as_boolean()) out.scalar = b->get();
  else out.bad = true;
  return out;
}

Node from_json(const nlohmann::json& j, const std::string& where) {
  Node out;
  if (j.is_object()) {
    out.type = Node::Type::Table;
    for (auto it = j.begin(); it != j.end(); ++it)
      add_entry(out, it.key(), from_json(it.value(), where + it.key() + "."), where);
  } else if (j.is_array()) {
    out.type = Node::Type::Array;
    for (const auto& e : j) out.items.push_back(from_json(e, where));
  } else if (j.is_string()) out.scalar = j.get<std::string>();
  else if (j.is_boolean()) out.scalar = j.get<bool>();
  else if (j.is_number_unsigned() &&
           j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw ConfigError(where.substr(0, where.size() - 1), "integer " + j.dump() + " is out of range (a 64-bit integer)");
  else if (j.is_number_integer()) out.scalar = j.get<std::int64_t>();
  else if (j.is_number_float()) out.scalar = j.get<double>();
  else out.bad = true;
  return out;
}

/// A job value: scalars as they are, arrays of scalars as text lists.
Value option_value(const Node& n, const std::string& where) {
  if (n.bad) throw ConfigError(where, "unsupported value type (dates, times and null are not options)");
  if (n.type == Node::Type::Table)
    throw ConfigError(where, "a table is not an option value");
  if (n.type == Node::Type::Scalar) return n.scalar;
  std::vector<std::string> items;
  for (const auto& e : n.items) {
    if (e.type != Node::Type::Scalar || e.bad) throw ConfigError(where, "array items must be strings or numbers");
    if (auto s = std::get_if<std::string>(&e.scalar)) items.push_back(*s);
    else if (auto i = std::get_if<std::int64_t>(&e.scalar)) items.push_back(std::to_string(*i));
    else if (auto d = std::get_if<double>(&e.scalar)) items.push_back(number_text(*d));
    else throw ConfigError(where, "array items must be strings or numbers");
  }
  return items;
}

/// Keys of a job table that are the job file's, not an engine's.
bool is_file_key(const std::string& k) {
  return k == "engine" || k == "name" || k == "batch" || k == "job" || k == "aggregate" || k == "devices";
}

Values table_values(const Node& t, const std::string& prefix) {
  Values v;
  for (const auto& [k, n] : t.entries) {
    if (is_file_key(k)) continue;
    v[k] = option_value(n, prefix + k);
  }
  return v;
}

std::string text_of(const Node* n, const std::string& where, const std::string& fallback) {
  if (!n) return fallback;
  if (n->type != Node::Type::Scalar || !std::holds_alternative<std::string>(n->scalar))
    throw ConfigError(where, "must be a string");
  return std::get<std::string>(n->scalar);
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

/// A glob, resolved against the job file's folder: the regular files it matches, sorted by
/// their bytes (not the locale), so a batch's order is the same on every machine.
std::vector<Value> expand_glob(const std::string& pattern, const std::string& base_dir, const std::string& where) {
  const std::string full = schema::resolve_path(pattern, base_dir);
  glob_t g{};
  const int rc = ::glob(full.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      struct stat st {};
      if (::stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) paths.emplace_back(g.gl_pathv[i]);
    }
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH)
    throw ConfigError(where, "cannot expand the pattern '" + pattern + "' (a folder is not readable)");
  if (paths.empty()) throw ConfigError(where, "the pattern '" + pattern + "' matches no file");
  std::sort(paths.begin(), paths.end());
  return {paths.begin(), paths.end()};
}

/// A batch axis value: a scalar, or an array of scalars as a text list.
Value member_value(const Node& n, const std::string& where) {
  if (n.type == Node::Type::Array) return option_value(n, where);
  if (n.bad || n.type != Node::Type::Scalar) throw ConfigError(where, "a batch value must be a string, a number, a flag or an array");
  return n.scalar;
}

BatchAxis read_batch(const Node& b, const std::string& base_dir, const std::string& prefix) {
  const std::string where = prefix + "batch";
  if (b.type != Node::Type::Table) throw ConfigError(where, "must be a table ([job.batch] or \"batch\": {...})");
  BatchAxis axis;
  std::vector<std::string> keys;
  for (const auto& [k, n] : b.entries) keys.push_back(k);
  if (keys.empty()) throw ConfigError(where, "is empty: give one key to vary (a glob or a list) or [[job.batch.member]] tables");
  if (keys.size() > 1)
    throw ConfigError(where, "varies " + std::to_string(keys.size()) + " keys ('" + keys[0] + "', '" + keys[1] +
                                 "'); a batch varies one key, or lists its members as [[job.batch.member]] tables");
  const auto& [key, n] = b.entries.front();
  const std::string kw = where + "." + key;
  if (key == "member") {
    if (n.type != Node::Type::Array || n.items.empty())
      throw ConfigError(kw, "must be a non-empty array of tables ([[job.batch.member]])");
    for (std::size_t i = 0; i < n.items.size(); ++i) {
      const Node& m = n.items[i];
      const std::string mw = kw + " " + std::to_string(i + 1) + ": ";
      if (m.type != Node::Type::Table) throw ConfigError(kw, "every member must be a table");
      axis.member_names.push_back(text_of(m.get("name"), mw + "name", ""));
      for (const auto& [mk, mn] : m.entries)
        if (is_file_key(mk) && mk != "name") throw ConfigError(mw + mk, "is not allowed in a batch member");
      axis.members.push_back(table_values(m, mw));
    }
    return axis;
  }
  if (is_file_key(key)) throw ConfigError(kw, "cannot be varied by a batch");
  axis.key = key;
  if (n.type == Node::Type::Scalar && std::holds_alternative<std::string>(n.scalar) &&
      has_glob_chars(std::get<std::string>(n.scalar))) {
    axis.pattern = std::get<std::string>(n.scalar);
    axis.values = expand_glob(axis.pattern, base_dir, kw);
  } else if (n.type == Node::Type::Array) {
    if (n.items.empty()) throw ConfigError(kw, "is an empty list: a batch needs at least one member");
    for (const auto& e : n.items) axis.values.push_back(member_value(e, kw));
  } else {
    axis.values.push_back(member_value(n, kw));
  }
  return axis;
}

// ---- the file's structure ----------------------------------------------------------------------

struct RawJob {
  const Node* table;
  std::string label;
};

JobFile build(const Node& root, JobFile jf, const std::string& name, bool root_is_array) {
  std::vector<RawJob> raw;
  const Node* defaults = nullptr;
  const Node* jobs = root_is_array ? &root : root.get("job");
  if (!jobs) {
    raw.push_back({&root, name + ": "});
  } else {
    if (!root_is_array) defaults = &root;
    if (jobs->type == Node::Type::Table) raw.push_back({jobs, name + ": job 1: "});
    else if (jobs->type == Node::Type::Array) {
      for (std::size_t i = 0; i < jobs->items.size(); ++i) {
        const std::string label = name + ": job " + std::to_string(i + 1) + ": ";
        if (jobs->items[i].type != Node::Type::Table) throw ConfigError(label.substr(0, label.size() - 2), "every job must be a table");
        raw.push_back({&jobs->items[i], label});
      }
    } else {
      throw ConfigError(name + ": job", "must be a table or an array of tables ([[job]])");
    }
  }
  Values shared;
  std::string default_engine = "npcf";
  if (defaults) {
    shared = table_values(*defaults, name + ": ");
    default_engine = text_of(defaults->get("engine"), name + ": engine", default_engine);
    if (defaults->get("batch")) throw ConfigError(name + ": batch", "belongs in a [[job]] table");
    if (defaults->get("name")) throw ConfigError(name + ": name", "belongs in a [[job]] table");
  }
  // The ranks' devices: top level only (one map for the whole run).
  const Node* devices = root_is_array ? nullptr : root.get("devices");
  if (devices) {
    const Value v = option_value(*devices, name + ": devices");
    if (auto list = std::get_if<std::vector<std::string>>(&v)) jf.devices = *list;
    else if (auto s = std::get_if<std::string>(&v)) jf.devices = {*s};
    else if (auto i = std::get_if<std::int64_t>(&v)) jf.devices = {std::to_string(*i)};
    else throw ConfigError(name + ": devices", "must be a list of GPU indices or \"cpu\", e.g. [0, 1, \"cpu\"]");
    for (const auto& d : jf.devices) {
      const bool index = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
      if (!index && d != "cpu")
        throw ConfigError(name + ": devices", "'" + d + "' is neither a GPU index (0, 1, ...) nor \"cpu\"");
    }
  }

  for (std::size_t i = 0; i < raw.size(); ++i) {
    JobEntry e;
    e.label = raw[i].label;
    const Node& t = *raw[i].table;
    e.engine = text_of(t.get("engine"), e.label + "engine", default_engine);
    e.name = text_of(t.get("name"), e.label + "name", "job " + std::to_string(i + 1));
    if (&t != &root && t.get("devices"))
      throw ConfigError(e.label + "devices", "belongs at the top level of the job file (one map for the whole run)");
    if (const Node* b = t.get("batch")) e.batch = read_batch(*b, jf.base_dir, e.label);
    e.values = table_values(t, e.label);
    jf.jobs.push_back(std::move(e));
  }
  // Shared keys go to the jobs whose engine knows them; a key no job's engine knows goes to every
  // job, so the engine reports it as unknown (a typo is never silently dropped).
  for (const auto& [k, v] : shared) {
    bool known_somewhere = false;
    for (const auto& e : jf.jobs)
      if (const auto* en = find_engine(e.engine); en && !schema::canonical_key(en->schema(), k).empty()) known_somewhere = true;
    for (auto& e : jf.jobs) {
      const auto* en = find_engine(e.engine);
      const bool knows = en && !schema::canonical_key(en->schema(), k).empty();
      if ((knows || !known_somewhere) && !e.values.count(k)) e.values[k] = v;
    }
  }
  for (auto& e : jf.jobs)  // names are what aggregates refer to: two jobs may not share one
    for (const auto& o : jf.jobs)
      if (&o != &e && o.name == e.name && &o < &e)
        throw ConfigError(e.label + "name", "'" + e.name + "' is also the name of " + o.label.substr(0, o.label.size() - 2));

  if (const Node* ag = root_is_array ? nullptr : root.get("aggregate")) {
    std::vector<const Node*> tables;
    if (ag->type == Node::Type::Table) tables.push_back(ag);
    else if (ag->type == Node::Type::Array)
      for (const auto& x : ag->items) tables.push_back(&x);
    else throw ConfigError(name + ": aggregate", "must be a table or an array of tables ([[aggregate]])");
    for (std::size_t i = 0; i < tables.size(); ++i) {
      AggregateEntry a;
      a.label = name + ": aggregate " + std::to_string(i + 1) + ": ";
      if (tables[i]->type != Node::Type::Table) throw ConfigError(a.label.substr(0, a.label.size() - 2), "must be a table");
      for (const auto& [k, n] : tables[i]->entries) a.values[k] = option_value(n, a.label + k);
      jf.aggregates.push_back(std::move(a));
    }
  }
  return jf;
}

}  // namespace

JobFile read_job_file(const std::string& path) {
  JobFile jf;
  jf.path = path;
  // A regular file of at most 16 MiB (a job file is a few lines; /dev/zero would never end).
  const std::string text = io::read_text_file(path, "job", std::uint64_t{16} << 20);
  std::error_code ec;
  jf.base_dir = fs::absolute(fs::path(path), ec).parent_path().lexically_normal().string();

  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Node root;
  bool root_is_array = false;
  if (ext == ".toml") {
    toml::table t;
    try {
      t = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      throw ConfigError(path + ":" + std::to_string(b.line) + ":" + std::to_string(b.column),
                        std::string("TOML syntax error: ") + std::string(e.description()));
    }
    root = from_toml(t, path + ": ");
  } else if (ext == ".json") {
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
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text, on_event);
    } catch (const nlohmann::json::parse_error& e) {
      std::string what = e.what();
      auto pos = what.find("] ");
      throw ConfigError(path, "JSON syntax error: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
    }
    if (!duplicate.empty()) throw ConfigError(path, duplicate);
    if (!j.is_object() && !j.is_array())
      throw ConfigError(path, "the top level must be an object (one job) or an array of jobs");
    root_is_array = j.is_array();
    root = from_json(j, path + ": ");
  } else {
    throw ConfigError(path, "unknown job file type '" + ext + "' (use .toml or .json)");
  }
  JobFile out = build(root, std::move(jf), path, root_is_array);
  if (out.jobs.empty()) throw ConfigError(path, "the job file contains no job");
  return out;
}

}  // namespace almagest::jobs
