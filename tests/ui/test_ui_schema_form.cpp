// SchemaForm: one editor per schema field with the schema's range, choices and default; values()
// returns only what the user set (so the schema's defaults apply as on the command line);
// operations filter the fields; setValues round-trips.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QtTest>

#include "almagest/core/schema.hpp"
#include "panels/SchemaForm.hpp"

using namespace almagest;
using almagest::ui::SchemaForm;

namespace {

const schema::Schema& test_schema() {
  static const schema::Schema s = [] {
    schema::Schema s;
    s.engine = "test";
    s.operation_key = "op";
    using K = schema::Kind;
    auto add = [&](schema::Field f) { s.fields.push_back(std::move(f)); };
    schema::Field f;
    f = {};
    f.key = "input"; f.kind = K::Text; f.group = "Input"; f.role = schema::Role::InputFile; f.required = true;
    add(f);
    f = {};
    f.key = "nbins"; f.kind = K::Integer; f.group = "Binning"; f.min = 1; f.max = 3071; f.default_value = std::int64_t{20};
    add(f);
    f = {};
    f.key = "rmax"; f.kind = K::Number; f.group = "Binning"; f.unit = "Mpc/h"; f.min = 0; f.max = 1e4; f.default_value = 50.0;
    add(f);
    f = {};
    f.key = "seed"; f.kind = K::Integer; f.group = "Binning"; f.min = 0; f.max = 1.8e19;
    add(f);
    f = {};
    f.key = "log-bins"; f.kind = K::Flag; f.group = "Binning";
    add(f);
    f = {};
    f.key = "backend"; f.kind = K::Choice; f.group = "Execution"; f.choices = {"cpu", "cuda", "auto"}; f.default_value = std::string("cpu");
    add(f);
    f = {};
    f.key = "stat"; f.kind = K::ChoiceList; f.group = "Execution"; f.choices = {"2pcf", "3pcf", "4pcf"};
    add(f);
    f = {};
    f.key = "fwhm"; f.kind = K::Number; f.group = "Smoothing"; f.min = 0; f.max = 1e4; f.default_value = 0.0; f.operations = {"smooth"};
    add(f);
    return s;
  }();
  return s;
}

}  // namespace

class TestUiSchemaForm : public QObject {
  Q_OBJECT
private slots:
  void one_editor_per_field_with_the_schema_range() {
    SchemaForm form(test_schema());
    QCOMPARE(form.keys().size(), int(test_schema().fields.size()));
    auto* nbins = qobject_cast<QSpinBox*>(form.editor("nbins"));
    QVERIFY(nbins);
    QCOMPARE(nbins->minimum(), 1);
    QCOMPARE(nbins->maximum(), 3071);
    QCOMPARE(nbins->value(), 20);
    // The whole maximum fits (the old lmax box showed "307" for 3071).
    QVERIFY(nbins->minimumWidth() >= nbins->fontMetrics().horizontalAdvance("3071"));
    QVERIFY(qobject_cast<QDoubleSpinBox*>(form.editor("rmax")));
    QVERIFY(qobject_cast<QLineEdit*>(form.editor("seed")));  // beyond an int: a line edit
    QVERIFY(qobject_cast<QLineEdit*>(form.editor("input")));
    QVERIFY(form.findChild<QWidget*>("input:browse"));
    QVERIFY(qobject_cast<QCheckBox*>(form.editor("log-bins")));
    auto* backend = qobject_cast<QComboBox*>(form.editor("backend"));
    QVERIFY(backend);
    QCOMPARE(backend->currentText(), QString("cpu"));
    QVERIFY(form.editor("nbins")->toolTip().contains("Default: 20"));
    QVERIFY(form.editor("rmax")->toolTip().contains("Mpc/h"));
  }

  void values_hold_only_what_the_user_set() {
    SchemaForm form(test_schema());
    QSignalSpy changed(&form, &SchemaForm::changed);
    QVERIFY(form.values().empty());
    qobject_cast<QSpinBox*>(form.editor("nbins"))->setValue(12);
    qobject_cast<QLineEdit*>(form.editor("input"))->setText("gal.fits");  // programmatic: not "edited"
    QTest::keyClicks(qobject_cast<QLineEdit*>(form.editor("seed")), "42");
    form.findChild<QCheckBox*>("stat:3pcf")->setChecked(true);
    const schema::Values v = form.values();
    QCOMPARE(std::get<std::int64_t>(v.at("nbins")), std::int64_t{12});
    QCOMPARE(std::get<std::string>(v.at("input")), std::string("gal.fits"));
    QCOMPARE(std::get<std::string>(v.at("seed")), std::string("42"));
    QCOMPARE(std::get<std::vector<std::string>>(v.at("stat")), std::vector<std::string>{"3pcf"});
    QVERIFY(!v.count("rmax") && !v.count("backend") && !v.count("log-bins"));
    QVERIFY(changed.count() >= 3);
    form.reset();
    QVERIFY(form.values().count("nbins") == 0);
  }

  void set_values_round_trips_and_operations_filter() {
    SchemaForm form(test_schema());
    schema::Values in{{"nbins", std::int64_t{7}}, {"backend", std::string("auto")}, {"log-bins", true},
                      {"stat", std::vector<std::string>{"2pcf", "4pcf"}}, {"input", std::string("a.txt")}, {"fwhm", 30.0}};
    form.setValues(in);
    schema::Values out = form.values();
    QCOMPARE(std::get<std::int64_t>(out.at("nbins")), std::int64_t{7});
    QCOMPARE(std::get<std::string>(out.at("backend")), std::string("auto"));
    QCOMPARE(std::get<bool>(out.at("log-bins")), true);
    QCOMPARE(std::get<std::vector<std::string>>(out.at("stat")), (std::vector<std::string>{"2pcf", "4pcf"}));
    QCOMPARE(std::get<double>(out.at("fwhm")), 30.0);
    form.setOperation("synth");
    QVERIFY(form.values().count("fwhm") == 0);  // not a synth field
    form.setOperation("smooth");
    QVERIFY(form.values().count("fwhm") == 1);
    form.showProblems("--nbins: must be in [1, 3071], got 0");
    QCOMPARE(form.problems(), QString("--nbins: must be in [1, 3071], got 0"));
  }
};

QTEST_MAIN(TestUiSchemaForm)
#include "test_ui_schema_form.moc"
