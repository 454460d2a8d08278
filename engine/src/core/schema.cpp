#include "almagest/core/schema.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "almagest/core/error.hpp"

namespace almagest::schema {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(',', start);
    out.push_back(trim(std::string_view(s).substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string number_text(double d) {
  // Integral values as integers ("100000", not the shortest form "1e+05").
  if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

const char* to_string(Kind k) {
  switch (k) {
    case Kind::Text: return "text";
    case Kind::TextList: return "text list";
    case Kind::Number: return "number";
    case Kind::Integer: return "integer";
    case Kind::Flag: return "flag";
    case Kind::Choice: return "choice";
    case Kind::ChoiceList: return "choice list";
  }
  return "text";
}

const Field* Schema::find(std::string_view key) const noexcept {
  for (const auto& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<const Field*> Schema::fields_for(std::string_view operation) const {
  std::vector<const Field*> out;
  for (const auto& f : fields)
    if (f.operations.empty() || operation.empty() ||
        std::find(f.operations.begin(), f.operations.end(), operation) != f.operations.end())
      out.push_back(&f);
  return out;
}

std::string describe(const Value& v) {
  struct V {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return number_text(d); }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", '" : "'") + l[i] + "'";
      return s + "]";
    }
  };
  return std::visit(V{}, v);
}

std::string full_help(const Field& f) {
  std::string h = f.help;
  auto sentence = [&](const std::string& s) {
    if (!h.empty() && h.back() != '.') h += '.';
    h += (h.empty() ? "" : " ") + s;
  };
  if (!f.unit.empty()) sentence("Unit: " + f.unit + ".");
  if (f.min || f.max) {
    std::string r = "Range: ";
    if (f.min && f.max)
      r += (f.min_exclusive ? "(" : "[") + number_text(*f.min) + ", " + number_text(*f.max) + (f.max_exclusive ? ")" : "]");
    else if (f.min)
      r += (f.min_exclusive ? "> " : ">= ") + number_text(*f.min);
    else
      r += (f.max_exclusive ? "< " : "<= ") + number_text(*f.max);
    sentence(r + ".");
  }
  if (!f.choices.empty() && f.help.find(f.choices.front()) == std::string::npos)
    sentence("Choices: " + joined(f.choices, ", ") + ".");
  if (f.default_value) {
    const Value& d = *f.default_value;
    std::string text = std::holds_alternative<std::string>(d) ? std::get<std::string>(d) : describe(d);
    sentence("Default: " + text + ".");
  } else if (f.required) {
    sentence("Required.");
  }
  return h;
}

std::string python_name(std::string_view key) {
  std::string s(key);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

std::string canonical_key(const Schema& s, std::string_view spelling) {
  std::string k(spelling);
  std::replace(k.begin(), k.end(), '_', '-');
  if (s.find(k)) return k;
  if (s.find(spelling)) return std::string(spelling);
  return {};
}

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  fs::path path(p);
  if (base_dir.empty() || p.empty() || path.is_absolute()) return p;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

// ---- Reader ------------------------------------------------------------------------------------

Reader::Reader(const Schema& schema, const Values& values, std::string prefix)
    : schema_(schema), values_(values), prefix_(std::move(prefix)) {}

bool Reader::has(const std::string& key) const { return values_.count(key) != 0; }

void Reader::problem(const std::string& key, const std::string& what) {
  problems_.push_back(prefix_ + key + ": " + what);
}

const Field& Reader::field(const std::string& key) const {
  const Field* f = schema_.find(key);
  ALMAGEST_ASSERT(f, "schema " + schema_.engine + " has no field '" + key + "'");
  return *f;
}

void Reader::check_keys(std::string_view operation) {
  for (const auto& [key, value] : values_) {
    const Field* f = schema_.find(key);
    if (!f) {
      problem(key, "unknown option");
      continue;
    }
    if (!operation.empty() && !f->operations.empty() &&
        std::find(f->operations.begin(), f->operations.end(), operation) == f->operations.end())
      problem(key, "does not apply to " + schema_.engine + " " + std::string(operation) + " (it applies to " +
                       joined(f->operations, ", ") + ")");
  }
  for (const Field* f : schema_.fields_for(operation))
    if (f->required && !has(f->key)) problem(f->key, "is required");
}

std::string Reader::original(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return {};
  if (auto s = std::get_if<std::string>(&it->second)) return trim(*s);
  return describe(it->second);
}

void Reader::check_range(const Field& f, double v, const std::string& written) {
  const bool low = f.min && (f.min_exclusive ? !(v > *f.min) : !(v >= *f.min));
  const bool high = f.max && (f.max_exclusive ? !(v < *f.max) : !(v <= *f.max));
  if (!low && !high) return;
  std::string range;
  if (f.min && f.max)
    range = (f.min_exclusive ? "(" : "[") + number_text(*f.min) + ", " + number_text(*f.max) + (f.max_exclusive ? ")" : "]");
  else if (f.min)
    range = (f.min_exclusive ? "> " : ">= ") + number_text(*f.min);
  else
    range = (f.max_exclusive ? "< " : "<= ") + number_text(*f.max);
  // "must be in [1, 255]" for a closed range, "must be >= 0" / "must be > 0" for a bound.
  problem(f.key, std::string("must be ") + (f.min && f.max ? "in " : "") + range +
                     (f.unit.empty() ? "" : " " + f.unit) + ", got " + written);
}

std::optional<std::string> Reader::text(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  if (auto s = std::get_if<std::string>(&it->second)) {
    auto t = trim(*s);
    if (t.empty()) {
      problem(key, "empty value");
      return std::nullopt;
    }
    return t;
  }
  problem(key, "expected a string, got " + describe(it->second));
  return std::nullopt;
}

std::optional<std::vector<std::string>> Reader::list(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  std::vector<std::string> items;
  if (auto s = std::get_if<std::string>(&it->second)) {
    items = split_commas(*s);
  } else if (auto l = std::get_if<std::vector<std::string>>(&it->second)) {
    for (const auto& e : *l)
      for (auto& part : split_commas(e)) items.push_back(std::move(part));
  } else if (auto i = std::get_if<std::int64_t>(&it->second)) {
    items.push_back(std::to_string(*i));
  } else {
    problem(key, "expected a list of strings, got " + describe(it->second));
    return std::nullopt;
  }
  for (const auto& e : items)
    if (e.empty()) {
      problem(key, "empty item in " + describe(it->second));
      return std::nullopt;
    }
  if (items.empty()) {
    problem(key, "empty list");
    return std::nullopt;
  }
  return items;
}

std::optional<double> Reader::number(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  double d = 0;
  std::string written = original(key);
  if (auto p = std::get_if<double>(&it->second)) {
    d = *p;
  } else if (auto i = std::get_if<std::int64_t>(&it->second)) {
    d = static_cast<double>(*i);
  } else if (auto s = std::get_if<std::string>(&it->second)) {
    auto t = trim(*s);
    const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
    auto r = std::from_chars(b, t.data() + t.size(), d);
    if (t.empty() || r.ptr != t.data() + t.size() ||
        (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
      problem(key, "'" + *s + "' is not a number");
      return std::nullopt;
    }
    if (r.ec == std::errc::result_out_of_range) {
      problem(key, "'" + t + "' is out of range of a double");
      return std::nullopt;
    }
  } else {
    problem(key, "expected a number, got " + describe(it->second));
    return std::nullopt;
  }
  if (!std::isfinite(d)) {
    problem(key, "must be finite, got " + written);
    return std::nullopt;
  }
  const std::size_t before = problems_.size();
  check_range(field(key), d, written);
  if (problems_.size() != before) return std::nullopt;
  return d;
}

std::optional<std::int64_t> Reader::integer(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  std::optional<std::int64_t> v;
  if (auto i = std::get_if<std::int64_t>(&it->second)) {
    v = *i;
  } else if (auto p = std::get_if<double>(&it->second)) {
    if (std::isfinite(*p) && std::floor(*p) == *p && std::fabs(*p) < 9.0e15) v = static_cast<std::int64_t>(*p);
  } else if (auto s = std::get_if<std::string>(&it->second)) {
    auto t = trim(*s);
    std::int64_t i = 0;
    const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
    auto r = std::from_chars(b, t.data() + t.size(), i);
    if (!t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size()) v = i;
    else if (!t.empty() && r.ec == std::errc::result_out_of_range && r.ptr == t.data() + t.size()) {
      const Field& f = field(key);
      if (f.min || f.max) check_range(f, t[0] == '-' ? -1e300 : 1e300, t);
      else problem(key, "'" + t + "' is out of range (a 64-bit integer)");
      return std::nullopt;
    }
  }
  if (!v) {
    problem(key, "must be an integer, got " + describe(it->second));
    return std::nullopt;
  }
  const std::size_t before = problems_.size();
  check_range(field(key), static_cast<double>(*v), original(key));
  if (problems_.size() != before) return std::nullopt;
  return v;
}

bool Reader::flag(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) {
    const Field* f = schema_.find(key);
    if (f && f->default_value)
      if (auto b = std::get_if<bool>(&*f->default_value)) return *b;
    return false;
  }
  if (auto b = std::get_if<bool>(&it->second)) return *b;
  if (auto s = std::get_if<std::string>(&it->second)) {
    auto t = trim(*s);
    if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  }
  if (auto i = std::get_if<std::int64_t>(&it->second)) {
    if (*i == 0 || *i == 1) return *i == 1;
  }
  problem(key, "expected true or false, got " + describe(it->second));
  return false;
}

std::optional<std::string> Reader::choice(const std::string& key) {
  auto t = text(key);
  if (!t) return std::nullopt;
  const Field& f = field(key);
  if (std::find(f.choices.begin(), f.choices.end(), *t) == f.choices.end()) {
    problem(key, "unknown value '" + *t + "' (allowed: " + joined(f.choices, ", ") + ")");
    return std::nullopt;
  }
  return t;
}

std::optional<std::vector<std::string>> Reader::choices(const std::string& key) {
  auto l = list(key);
  if (!l) return std::nullopt;
  const Field& f = field(key);
  bool ok = true;
  for (const auto& e : *l)
    if (std::find(f.choices.begin(), f.choices.end(), e) == f.choices.end()) {
      problem(key, "unknown value '" + e + "' (allowed: " + joined(f.choices, ", ") + ")");
      ok = false;
    }
  if (!ok) return std::nullopt;
  return l;
}

double Reader::number_or_default(const std::string& key) {
  if (has(key)) return number(key).value_or(0.0);
  const Field& f = field(key);
  if (f.default_value) {
    if (auto d = std::get_if<double>(&*f.default_value)) return *d;
    if (auto i = std::get_if<std::int64_t>(&*f.default_value)) return static_cast<double>(*i);
  }
  return 0.0;
}

std::int64_t Reader::integer_or_default(const std::string& key) {
  if (has(key)) return integer(key).value_or(0);
  const Field& f = field(key);
  if (f.default_value)
    if (auto i = std::get_if<std::int64_t>(&*f.default_value)) return *i;
  return 0;
}

std::string Reader::text_or_default(const std::string& key) {
  if (has(key)) return text(key).value_or(std::string());
  const Field& f = field(key);
  if (f.default_value)
    if (auto s = std::get_if<std::string>(&*f.default_value)) return *s;
  return {};
}

void Reader::throw_if_problems() const {
  if (problems_.empty()) return;
  std::string all;
  for (const auto& p : problems_) all += (all.empty() ? "" : "; ") + p;
  throw ConfigError("", all);
}

}  // namespace almagest::schema
