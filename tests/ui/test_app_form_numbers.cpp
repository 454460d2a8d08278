// SchemaForm shows numbers as the schema (or the user) wrote them: the shortest text that reads
// back as the same double, never a fixed number of decimals ("0.000000", "1.500000"); values are
// not rounded on the way in or out (a sigma of 1e-7 or 0.1 + 0.2 survives a form round trip).
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QtTest>

#include "almagest/core/schema.hpp"
#include "almagest/stack/job.hpp"
#include "panels/SchemaForm.hpp"

using namespace almagest;
using almagest::ui::SchemaForm;

namespace {

const schema::Schema& number_schema() {
  static const schema::Schema s = [] {
    schema::Schema s;
    s.engine = "test";
    schema::Field f;
    f.key = "psf-sigma"; f.kind = schema::Kind::Number; f.group = "Input"; f.unit = "pixels";
    f.min = 0; f.max = 20; f.default_value = 0.0;
    s.fields.push_back(f);
    f = {};
    f.key = "omega-m"; f.kind = schema::Kind::Number; f.group = "Input"; f.min = 0; f.max = 1; f.default_value = 0.3089;
    s.fields.push_back(f);
    f = {};
    f.key = "tiny"; f.kind = schema::Kind::Number; f.group = "Input"; f.min = 0; f.max = 1; f.default_value = 2.5e-7;
    s.fields.push_back(f);
    return s;
  }();
  return s;
}

QDoubleSpinBox* spin(const SchemaForm& form, const char* key) {
  return qobject_cast<QDoubleSpinBox*>(form.editor(QString::fromLatin1(key)));
}

}  // namespace

class TestAppFormNumbers : public QObject {
  Q_OBJECT
private slots:
  void defaults_show_as_written() {
    SchemaForm form(number_schema());
    form.show();
    QVERIFY(QTest::qWaitForWindowExposed(&form));
    QCOMPARE(spin(form, "psf-sigma")->text(), QStringLiteral("0"));
    QCOMPARE(spin(form, "omega-m")->text(), QStringLiteral("0.3089"));
    QCOMPARE(spin(form, "tiny")->text(), QStringLiteral("2.5e-07"));
    QCOMPARE(spin(form, "tiny")->value(), 2.5e-7);  // not rounded to the box's decimals
    // The widest text fits the box (no clipped digits).
    auto* s = spin(form, "omega-m");
    QVERIFY(s->width() >= s->fontMetrics().horizontalAdvance(s->text()));
  }

  void typed_values_round_trip_exactly() {
    SchemaForm form(number_schema());
    auto* s = spin(form, "psf-sigma");
    QVERIFY(s);
    QLineEdit* line = s->findChild<QLineEdit*>();
    QVERIFY(line);
    s->setFocus();
    line->selectAll();
    QTest::keyClicks(s, "1.25");
    s->interpretText();
    QCOMPARE(s->value(), 1.25);
    QCOMPARE(s->text(), QStringLiteral("1.25"));
    auto v = form.values();
    QVERIFY(v.count("psf-sigma"));
    QCOMPARE(std::get<double>(v.at("psf-sigma")), 1.25);
    // Scientific notation is accepted where the range allows it.
    line->selectAll();
    QTest::keyClicks(s, "3e-3");
    s->interpretText();
    QCOMPARE(s->value(), 0.003);
    // Out of range: the box keeps a value in range (Qt's fixup), never an out-of-range one.
    line->selectAll();
    QTest::keyClicks(s, "25");
    s->interpretText();
    QVERIFY(s->value() <= 20.0);
    // A value that needs all 17 digits survives setValues -> values().
    const double odd = 0.1 + 0.2;  // 0.30000000000000004
    form.setValues({{"omega-m", odd}});
    QCOMPARE(std::get<double>(form.values().at("omega-m")), odd);
    QCOMPARE(spin(form, "omega-m")->text(), QStringLiteral("0.30000000000000004"));
  }

  void stack_psf_fields_do_not_read_six_zeros() {
    SchemaForm form(stack::stack_schema());
    int checked = 0;
    for (const char* key : {"psf-sigma", "fallback-psf-sigma"}) {
      auto* s = spin(form, key);
      if (!s) continue;  // a free-text number field shows its placeholder instead
      QVERIFY2(!s->text().contains(QStringLiteral("000000")), qPrintable(s->text()));
      QCOMPARE(s->text(), QStringLiteral("0"));
      ++checked;
    }
    QVERIFY(checked > 0);
  }
};

QTEST_MAIN(TestAppFormNumbers)
#include "test_app_form_numbers.moc"
