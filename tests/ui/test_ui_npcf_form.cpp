// The N-point window's form is generated from the job schema (issue 20): one editor per schema
// field (stat is the panel's statistic box; output and format are File > Save), survey
// catalogues (FITS with RA/DEC/Z and weight columns, sky, omega-m) reachable, values equal to
// what the CLI would pass, and the job layer's messages shown under the form.
#include <QLineEdit>
#include <QPushButton>
#include <QtTest>

#include "almagest/npcf/job.hpp"
#include "panels/JobPanel.hpp"
#include "panels/SchemaForm.hpp"

using namespace almagest;
using almagest::ui::JobPanel;

class TestUiNpcfForm : public QObject {
  Q_OBJECT

private slots:
  void oneEditorPerField() {
    JobPanel panel;
    const auto& s = npcf::npcf_schema();
    QStringList keys = panel.form()->keys();
    for (const auto& f : s.fields) {
      const QString key = QString::fromStdString(f.key);
      if (key == "stat" || key == "output" || key == "format") {
        QVERIFY2(!panel.form()->editor(key), qPrintable(key));  // edited by the panel / Save
        continue;
      }
      QVERIFY2(panel.form()->editor(key), qPrintable("no editor for " + key));
      QVERIFY2(keys.removeOne(key), qPrintable(key));
    }
    QVERIFY2(keys.isEmpty(), qPrintable(keys.join(',')));  // no editor without a field
    QVERIFY(panel.statisticBox() != nullptr);
  }

  void surveyCatalogueOptionsReachTheJob() {
    JobPanel panel;
    schema::Values v = panel.values();
    v["data"] = std::string("/survey/galaxies.fits");
    v["randoms"] = std::string("/survey/randoms.fits");
    v["sky"] = true;
    v["omega-m"] = 0.3;
    v["data-columns"] = std::string("RA,DEC,Z");
    v["weights"] = std::string("WEIGHT_FKP,WEIGHT_SYSTOT");
    v["fits-hdu"] = std::int64_t{2};
    panel.setValues(v);
    // The paths are editable fields.
    auto* data = panel.form()->editor(QStringLiteral("data"));
    QLineEdit* edit = qobject_cast<QLineEdit*>(data) ? qobject_cast<QLineEdit*>(data) : data->findChild<QLineEdit*>();
    QVERIFY(edit && !edit->isReadOnly());
    QCOMPARE(edit->text(), QStringLiteral("/survey/galaxies.fits"));

    schema::Values out = panel.values();
    out["output"] = std::string("o.h5");
    const npcf::NpcfJob job = npcf::make_npcf_job(out, "", "");
    QVERIFY(job.data.sky && job.randoms && job.randoms->sky);
    QCOMPARE(job.data.cosmology.omega_m, 0.3);
    QCOMPARE(job.data.columns, (std::vector<std::string>{"RA", "DEC", "Z"}));
    QCOMPARE(job.data.weight_columns, (std::vector<std::string>{"WEIGHT_FKP", "WEIGHT_SYSTOT"}));
    QCOMPARE(job.data.fits_hdu, 2);
    QCOMPARE(job.data.path, std::string("/survey/galaxies.fits"));
    // The view reads the catalogue as the job will.
    const io::CatalogueSpec spec = panel.catalogueSpec(QStringLiteral("/survey/randoms.fits"), true);
    QVERIFY(spec.sky);
    QCOMPARE(spec.weight_columns, job.data.weight_columns);
  }

  void problemsAreTheJobLayers() {
    JobPanel panel;
    schema::Values v = panel.values();
    v["data"] = std::string("d.txt");
    v["randoms"] = std::string("r.txt");
    v["rmin"] = 30.0;
    v["rmax"] = 20.0;
    panel.setValues(v);
    panel.setReady(true);
    QVERIFY(panel.form()->problems().contains(QStringLiteral("rmax: must be greater than rmin")));
    QVERIFY(!panel.runButton()->isEnabled());
    v["rmax"] = 40.0;
    panel.setValues(v);
    QVERIFY(panel.form()->problems().isEmpty());
    QVERIFY(panel.runButton()->isEnabled());
  }
};

QTEST_MAIN(TestUiNpcfForm)
#include "test_ui_npcf_form.moc"
