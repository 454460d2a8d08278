#include "panels/SchemaForm.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

namespace almagest::ui {

namespace sc = almagest::schema;

namespace {

QString label_of(const sc::Field& f) {
  QString s = QString::fromStdString(f.key);
  s.replace('-', ' ');
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  if (!f.unit.empty()) s += QStringLiteral(" [%1]").arg(QString::fromStdString(f.unit));
  return s;
}

QString text_of(const sc::Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return QString::fromStdString(*s);
  if (auto l = std::get_if<std::vector<std::string>>(&v)) {
    QStringList parts;
    for (const auto& e : *l) parts << QString::fromStdString(e);
    return parts.join(',');
  }
  if (auto i = std::get_if<std::int64_t>(&v)) return QString::number(*i);
  if (auto d = std::get_if<double>(&v)) return QString::number(*d, 'g', 17);
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return {};
}

bool spin_fits(const sc::Field& f) {
  return f.min && f.max && f.default_value && *f.min >= double(INT_MIN) && *f.max <= double(INT_MAX);
}

// A number the way the schema (or the user) wrote it: the shortest text that reads back as the
// same double ("1.5", "0.25", "1e-05"), never QDoubleSpinBox's fixed decimals ("1.500000"). The
// spin box keeps the maximum number of decimals so that no value is rounded on the way in; its
// text, parsing and validation are the shortest round-trip form (C locale, as job files write).
class ShortestDoubleSpinBox : public QDoubleSpinBox {
public:
  explicit ShortestDoubleSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
    setDecimals(DBL_MAX_10_EXP + DBL_DIG);  // Qt's maximum: setValue() does not round
    setLocale(QLocale::c());
  }
  QString textFromValue(double v) const override {
    return QString::number(v, 'g', QLocale::FloatingPointShortest);
  }
  double valueFromText(const QString& text) const override {
    bool ok = false;
    const double v = QLocale::c().toDouble(stripped(text), &ok);
    return ok ? v : value();
  }
  QValidator::State validate(QString& input, int&) const override {
    const QString t = stripped(input);
    if (t.isEmpty()) return QValidator::Intermediate;
    static const QRegularExpression partial(QStringLiteral("^[-+]?[0-9]*\\.?[0-9]*([eE][-+]?[0-9]*)?$"));
    if (!partial.match(t).hasMatch()) return QValidator::Invalid;
    bool ok = false;
    const double v = QLocale::c().toDouble(t, &ok);
    if (!ok) return QValidator::Intermediate;  // "1e", "-", "."
    return v >= minimum() && v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
  }
  void fixup(QString& input) const override { input = textFromValue(value()); }

private:
  QString stripped(const QString& text) const {
    QString t = text;
    if (!prefix().isEmpty() && t.startsWith(prefix())) t.remove(0, prefix().size());
    if (!suffix().isEmpty() && t.endsWith(suffix())) t.chop(suffix().size());
    return t.trimmed();
  }
};

bool file_role(const sc::Field& f) {
  return f.role == sc::Role::InputFile || f.role == sc::Role::OutputFile || f.role == sc::Role::InputFiles;
}

}  // namespace

SchemaForm::SchemaForm(const sc::Schema& schema, QStringList groups, QStringList hidden, QWidget* parent)
    : QWidget(parent), schema_(schema) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  if (groups.isEmpty())
    for (const auto& f : schema.fields)
      if (!groups.contains(QString::fromStdString(f.group))) groups << QString::fromStdString(f.group);
  for (const QString& g : groups) {
    QGroupBox* box = nullptr;
    QFormLayout* form = nullptr;
    for (const auto& f : schema.fields) {
      const QString key = QString::fromStdString(f.key);
      if (QString::fromStdString(f.group) != g || hidden.contains(key)) continue;
      if (!box) {
        box = new QGroupBox(g, this);
        form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        outer->addWidget(box);
      }
      Entry e;
      e.field = &f;
      e.row = makeEditor(e);
      e.label = new QLabel(label_of(f), box);
      const QString tip = QString::fromStdString(sc::full_help(f));
      e.label->setToolTip(tip);
      e.row->setToolTip(tip);
      e.editor->setToolTip(tip);
      e.editor->setObjectName(key);
      form->addRow(e.label, e.row);
      // The inline problem of this field, under its row (one validation style, showProblems).
      e.error = new QLabel(box);
      e.error->setObjectName(key + QStringLiteral(":problem"));
      e.error->setWordWrap(true);
      e.error->setTextInteractionFlags(Qt::TextSelectableByMouse);
      e.error->setStyleSheet(QStringLiteral("QLabel { color: #b00020; font-size: small; }"));
      e.error->setVisible(false);
      form->addRow(e.error);
      entries_.insert(key, e);
      order_ << key;
      applyDefault(entries_[key]);
    }
  }
  problems_ = new QLabel(this);
  problems_->setWordWrap(true);
  problems_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  problems_->setStyleSheet("QLabel { color: #b00020; }");
  problems_->setVisible(false);
  outer->addWidget(problems_);
  outer->addStretch(1);
  connect(this, &SchemaForm::changed, this, [this] {
    if (validator_) validate();
  });
}

QWidget* SchemaForm::makeEditor(Entry& e) {
  const sc::Field& f = *e.field;
  const QString key = QString::fromStdString(f.key);
  auto touched = [this, key] { markSet(key); };
  switch (f.kind) {
    case sc::Kind::Flag: {
      auto* c = new QCheckBox(this);
      connect(c, &QCheckBox::toggled, this, touched);
      e.editor = c;
      return c;
    }
    case sc::Kind::Choice: {
      auto* c = new QComboBox(this);
      if (!f.default_value && !f.required) c->addItem(QString());  // not set
      for (const auto& ch : f.choices) c->addItem(QString::fromStdString(ch));
      connect(c, &QComboBox::currentIndexChanged, this, touched);
      e.editor = c;
      return c;
    }
    case sc::Kind::ChoiceList: {
      auto* row = new QWidget(this);
      auto* h = new QHBoxLayout(row);
      h->setContentsMargins(0, 0, 0, 0);
      for (const auto& ch : f.choices) {
        auto* c = new QCheckBox(QString::fromStdString(ch), row);
        c->setObjectName(key + ":" + QString::fromStdString(ch));
        connect(c, &QCheckBox::toggled, this, touched);
        h->addWidget(c);
      }
      h->addStretch(1);
      e.editor = row;
      return row;
    }
    case sc::Kind::Integer:
      if (spin_fits(f)) {
        auto* s = new QSpinBox(this);
        s->setRange(int(*f.min + (f.min_exclusive ? 1 : 0)), int(*f.max - (f.max_exclusive ? 1 : 0)));
        s->setMinimumWidth(s->fontMetrics().horizontalAdvance(QString::number(*f.max)) + 48);
        connect(s, &QSpinBox::valueChanged, this, touched);
        e.editor = s;
        return s;
      }
      break;
    case sc::Kind::Number:
      if (spin_fits(f)) {
        auto* s = new ShortestDoubleSpinBox(this);
        s->setRange(*f.min, *f.max);
        // Room for the longest of the range's ends and a few significant digits.
        const QString widest = std::max({s->textFromValue(*f.min), s->textFromValue(*f.max), QStringLiteral("-0.0001234")},
                                        [](const QString& a, const QString& b) { return a.size() < b.size(); });
        s->setMinimumWidth(s->fontMetrics().horizontalAdvance(widest) + 48);
        connect(s, &QDoubleSpinBox::valueChanged, this, touched);
        e.editor = s;
        return s;
      }
      break;
    default:
      break;
  }
  auto* edit = new QLineEdit(this);
  if (f.default_value) edit->setPlaceholderText(text_of(*f.default_value));
  else if (!f.value_name.empty()) edit->setPlaceholderText(QString::fromStdString(f.value_name));
  if (f.kind == sc::Kind::Integer) edit->setValidator(new QRegularExpressionValidator(QRegularExpression("[-+]?[0-9]*"), edit));
  if (f.kind == sc::Kind::Number) edit->setValidator(new QRegularExpressionValidator(QRegularExpression("[-+0-9.eE]*"), edit));
  connect(edit, &QLineEdit::textEdited, this, touched);
  e.editor = edit;
  if (!file_role(f)) return edit;
  auto* row = new QWidget(this);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->addWidget(edit, 1);
  auto* browse = new QPushButton(tr("Browse…"), row);
  browse->setObjectName(key + ":browse");
  const bool output = f.role == sc::Role::OutputFile;
  connect(browse, &QPushButton::clicked, this, [this, edit, output, key] {
    const QString start = edit->text();
    const QString path = output ? QFileDialog::getSaveFileName(this, tr("Output file"), start)
                                : QFileDialog::getOpenFileName(this, tr("Input file"), start);
    if (path.isEmpty()) return;
    edit->setText(path);
    markSet(key);
  });
  h->addWidget(browse);
  return row;
}

void SchemaForm::applyDefault(Entry& e) {
  loading_ = true;
  const sc::Field& f = *e.field;
  const std::optional<sc::Value>& d = f.default_value;
  if (auto* c = qobject_cast<QCheckBox*>(e.editor)) {
    bool on = false;
    if (d)
      if (auto b = std::get_if<bool>(&*d)) on = *b;
    c->setChecked(on);
  } else if (auto* c = qobject_cast<QComboBox*>(e.editor)) {
    const int i = d ? c->findText(text_of(*d)) : 0;
    c->setCurrentIndex(i < 0 ? 0 : i);
  } else if (auto* s = qobject_cast<QSpinBox*>(e.editor)) {
    if (auto i = std::get_if<std::int64_t>(&*d)) s->setValue(int(*i));
    else if (auto x = std::get_if<double>(&*d)) s->setValue(int(*x));
  } else if (auto* s = qobject_cast<QDoubleSpinBox*>(e.editor)) {
    if (auto x = std::get_if<double>(&*d)) s->setValue(*x);
    else if (auto i = std::get_if<std::int64_t>(&*d)) s->setValue(double(*i));
  } else if (auto* l = qobject_cast<QLineEdit*>(e.editor)) {
    l->clear();
  } else if (f.kind == sc::Kind::ChoiceList) {
    QStringList on;
    if (d) on = text_of(*d).split(',', Qt::SkipEmptyParts);
    for (auto* c : e.editor->findChildren<QCheckBox*>()) c->setChecked(on.contains(c->text()));
  }
  e.set = false;
  loading_ = false;
}

void SchemaForm::markSet(const QString& key) {
  if (loading_) return;
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->set = true;
  emit changed();
}

void SchemaForm::setOperation(const QString& operation) {
  operation_ = operation;
  updateVisibility();
}

void SchemaForm::updateVisibility() {
  for (auto& e : entries_) {
    const auto& ops = e.field->operations;
    const bool on = ops.empty() || operation_.isEmpty() ||
                    std::find(ops.begin(), ops.end(), operation_.toStdString()) != ops.end();
    e.row->setVisible(on);
    e.label->setVisible(on);
    if (!on) e.error->setVisible(false);
  }
  // Hide group boxes whose every row is hidden.
  for (auto* box : findChildren<QGroupBox*>()) {
    bool any = false;
    for (auto& e : entries_)
      if (e.label->parentWidget() == box && !e.row->isHidden()) any = true;
    box->setVisible(any);
  }
}

sc::Values SchemaForm::values() const {
  sc::Values v;
  for (const QString& key : order_) {
    const Entry& e = entries_[key];
    if (e.row->isHidden()) continue;
    const sc::Field& f = *e.field;
    const std::string k = f.key;
    if (auto* c = qobject_cast<QCheckBox*>(e.editor)) {
      if (e.set) v[k] = c->isChecked();
    } else if (auto* c = qobject_cast<QComboBox*>(e.editor)) {
      if (e.set && !c->currentText().isEmpty()) v[k] = c->currentText().toStdString();
    } else if (auto* s = qobject_cast<QSpinBox*>(e.editor)) {
      if (e.set) v[k] = std::int64_t(s->value());
    } else if (auto* s = qobject_cast<QDoubleSpinBox*>(e.editor)) {
      if (e.set) v[k] = s->value();
    } else if (auto* l = qobject_cast<QLineEdit*>(e.editor)) {
      const QString t = l->text().trimmed();
      if (!t.isEmpty()) v[k] = t.toStdString();
    } else if (f.kind == sc::Kind::ChoiceList) {
      std::vector<std::string> on;
      for (auto* c : e.editor->findChildren<QCheckBox*>())
        if (c->isChecked()) on.push_back(c->text().toStdString());
      if (e.set && !on.empty()) v[k] = on;
    }
  }
  return v;
}

void SchemaForm::setValues(const sc::Values& values) {
  for (auto& e : entries_) applyDefault(e);
  loading_ = true;
  for (const auto& [key, value] : values) {
    auto it = entries_.find(QString::fromStdString(key));
    if (it == entries_.end()) continue;
    Entry& e = *it;
    const QString t = text_of(value);
    if (auto* c = qobject_cast<QCheckBox*>(e.editor)) {
      c->setChecked(t == "true" || t == "1" || t == "yes" || t == "on");
    } else if (auto* c = qobject_cast<QComboBox*>(e.editor)) {
      const int i = c->findText(t);
      if (i >= 0) c->setCurrentIndex(i);
    } else if (auto* s = qobject_cast<QSpinBox*>(e.editor)) {
      s->setValue(t.toInt());
    } else if (auto* s = qobject_cast<QDoubleSpinBox*>(e.editor)) {
      s->setValue(t.toDouble());
    } else if (auto* l = qobject_cast<QLineEdit*>(e.editor)) {
      l->setText(t);
    } else if (e.field->kind == sc::Kind::ChoiceList) {
      const QStringList on = t.split(',', Qt::SkipEmptyParts);
      for (auto* c : e.editor->findChildren<QCheckBox*>()) c->setChecked(on.contains(c->text()));
    }
    e.set = true;
  }
  loading_ = false;
  emit changed();
}

void SchemaForm::reset() {
  for (auto& e : entries_) applyDefault(e);
  emit changed();
}

QWidget* SchemaForm::editor(const QString& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->editor;
}

QStringList SchemaForm::keys() const { return order_; }

void SchemaForm::showProblems(const QString& text) {
  problemsText_ = text;
  for (auto& e : entries_) {
    e.error->clear();
    e.error->setVisible(false);
    e.label->setStyleSheet(QString());
  }
  // "--key: message", "key: message", possibly after a "file: job 2: " prefix.
  static const QRegularExpression fieldRe(QStringLiteral("(?:^|:\\s)(?:--)?([A-Za-z][A-Za-z0-9_-]*):\\s+(.*)$"));
  QStringList general;
  const QStringList parts = QString(text).replace(QStringLiteral("; "), QStringLiteral("\n")).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  for (const QString& part : parts) {
    const QRegularExpressionMatch m = fieldRe.match(part);
    QString key = m.hasMatch() ? m.captured(1) : QString();
    key.replace(QLatin1Char('_'), QLatin1Char('-'));
    auto it = entries_.find(key);
    if (it == entries_.end() || it->row->isHidden()) {
      general << part;
      continue;
    }
    const QString msg = m.captured(2);
    it->error->setText(it->error->text().isEmpty() ? msg : it->error->text() + QLatin1Char('\n') + msg);
    it->error->setVisible(true);
    it->label->setStyleSheet(QStringLiteral("QLabel { color: #b00020; }"));
  }
  problems_->setText(general.join(QLatin1Char('\n')));
  problems_->setVisible(!general.isEmpty());
  if (runControl_) runControl_->setEnabled(text.isEmpty());
}

QString SchemaForm::problems() const { return problemsText_; }

QString SchemaForm::fieldProblem(const QString& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? QString() : it->error->text();
}

void SchemaForm::setValidator(std::function<QString(const sc::Values&)> validator) {
  validator_ = std::move(validator);
  validate();
}

void SchemaForm::validate() {
  if (validator_) showProblems(validator_(values()));
}

void SchemaForm::setRunControl(QWidget* run) {
  runControl_ = run;
  if (run) run->setEnabled(problemsText_.isEmpty());
}

void SchemaForm::setLocked(bool locked) {
  for (auto& e : entries_) e.row->setEnabled(!locked);
}

}  // namespace almagest::ui
