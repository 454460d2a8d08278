#pragma once
// SkyMapWindow: a window for HEALPix maps. Open a map FITS file (any column, RING or NESTED, full
// or partial sky) or a seeded demo map, see it in a Mollweide projection with a viridis-like
// colour map, colour bar and a status-bar readout of direction / pixel / value under the mouse,
// compute its angular power spectrum (healpy anafast: map2alm with 3 iterations, or healpy's ring
// or pixel weights, then alm2cl) on
// the CPU or CUDA backend with progress and Cancel, plot D_l, and save the spectrum as text.
//
// Jobs (loading, synthesis, spectra) go through JobWindow (one at a time, progress, Cancel,
// errors, teardown); results are immutable and handed to the GUI thread. Opened from the main
// window's Tools menu as a top-level window.
#include <QImage>

#include <cstdint>
#include <memory>
#include <vector>

#include "jobs/JobWindow.hpp"
#include "sky/SkyJobs.hpp"
#include "sky/SkyRender.hpp"

class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace almagest::ui {

class LogPanel;
class SchemaForm;
class SkyMapView;
class SkySphereView;
class SpectrumChart;

class SkyMapWindow : public JobWindow {
  Q_OBJECT
public:
  explicit SkyMapWindow(QWidget* parent = nullptr);
  ~SkyMapWindow() override;

  /// Default demo map: nside 128, this seed.
  static constexpr int kDemoNside = 128;
  static constexpr std::uint64_t kDemoSeed = 20261129;

  /// Starts loading a HEALPix map FITS file and shows column `column` (0-based) once loaded.
  /// False (with a message) when a job is running; errors of the file arrive as a Failed job.
  bool openMap(const QString& path, int column = 0);
  /// Starts synthesising the demo map (C_l = 2 pi / (l (l + 1)), l >= 2, lmax = 3 nside - 1).
  bool openDemoMap(int nside = kDemoNside, std::uint64_t seed = kDemoSeed);
  /// Starts synthesising a Gaussian random map with power spectrum `cl` (lmax = cl.size() - 1).
  /// With savePath, the job also writes the map (FITS, RING, atomically).
  bool openSynthesisedMap(int nside, const std::vector<double>& cl, std::uint64_t seed,
                          const QString& savePath = {});
  /// The same from a C_l file (sky::readClFile: text "l C_l ..." or a healpy write_cl FITS
  /// table), read inside the job; lmax: the file's largest l, at most 4 nside (-1), or this.
  /// Problems of the arguments are shown inline (synthesisProblem()), not in a dialog.
  bool openSynthesisFromClFile(const QString& clPath, int nside, std::uint64_t seed,
                               const QString& savePath = {}, int lmax = -1);
  /// Starts the spectrum of the shown column up to lmax (-1: the lmax spin box, which defaults to
  /// 3 nside - 1) on the backend chosen in the toolbar. With savePath, the job also writes the
  /// spectrum file (atomically: nothing is left if it is cancelled or fails).
  bool computeSpectrum(int lmax = -1, const QString& savePath = {});
  /// Starts an sht job of the job layer (any `almagest-cli sht` operation; values as the SHT job
  /// form gives them, "op" included): validated first (the schema's message in the form's
  /// problem label, false), then run and written atomically on the window's JobRunner. A map
  /// result is opened in the view, spectra (TT, EE, BB, TE, EB, TB) are plotted and logged.
  bool runShtJob(const almagest::schema::Values& values);
  std::shared_ptr<const sht::ShtOutcome> shtResult() const noexcept { return shtResult_; }
  SchemaForm* shtForm() const noexcept { return shtForm_; }
  QComboBox* shtOperationCombo() const noexcept { return shtOpBox_; }
  /// Writes the last spectrum (columns l, C_l, D_l) through AtomicFile. False (with a message)
  /// without a spectrum or on error.
  bool saveSpectrum(const QString& path);
  /// Saves the figure as shown: the map in its projection with the graticule (when on) and the
  /// labelled colour bar (PNG by extension, written atomically).
  bool saveImage(const QString& path);

  /// The inline problem of the last spectrum / synthesis request ("" when none): the window
  /// never opens a dialog for a value the user can correct.
  QString spectrumProblem() const;
  QString synthesisProblem() const { return synthesisProblem_; }

  // ---- display (SkyMapDisplay.cpp) ----------------------------------------------------------
  /// The 2D view and the sphere, as tabs. The sphere (VTK) is created when first shown.
  QTabWidget* viewTabs() const noexcept { return tabs_; }
  /// Shows the sphere tab (creating the view) and returns the view.
  SkySphereView* showSphere();
  /// The sphere view, or null before it was first shown.
  SkySphereView* sphereView() const noexcept { return sphere_; }
  /// Starts reading a mask map (column 0; masked where 0 or UNSEEN; same nside as the map).
  bool openMask(const QString& path);
  /// Uses `maskValues` (RING, 12 nside^2 of the shown map) as the mask; false (with the reason
  /// in the log and the status bar) when the sizes differ.
  bool setMask(const std::vector<double>& maskValues, const QString& source);
  /// Masks the band |latitude| < halfWidthDeg of the map's own frame (the Galactic plane cut of
  /// a Galactic map), as a mask map would. False without a map or for a width outside (0, 90].
  bool setPlaneMask(double halfWidthDeg);
  void clearMask();
  void setMaskOpacity(double opacity);
  double maskOpacity() const noexcept { return maskOpacity_; }
  /// One flag per RING pixel of the shown map (empty: no mask).
  const std::vector<std::uint8_t>& maskFlags() const noexcept { return mask_; }
  std::int64_t maskedCount() const;
  /// Projection and centre (Mollweide, orthographic, gnomonic); re-draws the shown column.
  void setViewSpec(const sky::ViewSpec& view);
  const sky::ViewSpec& viewSpec() const noexcept { return viewSpec_; }
  void setColourMap(sky::ColourMap map);
  void setScaling(sky::Scaling scaling);
  /// Colour range [lo, hi] (values outside are clamped); autoRange() returns to min..max.
  void setRange(double lo, double hi);
  void autoRange();
  /// Graticule lines and labels every stepDeg in `frame` (RA/Dec or Galactic over any map whose
  /// COORDSYS is known).
  void setGraticule(bool on, sky::Frame frame = sky::Frame::Native, double stepDeg = 30.0);
  /// The colour-table position map of the shown image.
  const sky::ScaleMap& scaleMap() const noexcept { return scale_; }
  /// Shows another column of the current map (re-colours the image). False if out of range.
  bool setColumn(int column);
  void setBackendChoice(sky::BackendChoice choice);
  sky::BackendChoice backendChoice() const;
  /// Quadrature weights of the spectrum's map2alm (healpy's ring or pixel weight files; the
  /// toolbar's Weights box asks for the file). The file is read by the spectrum job.
  void setWeights(const sky::SkyWeights& weights);
  const sky::SkyWeights& weights() const noexcept { return weights_; }
  void setLogAxes(bool on);
  sky::SkyMapPtr map() const noexcept { return map_; }
  int nside() const noexcept { return map_ ? map_->nside : 0; }
  std::int64_t npix() const noexcept { return map_ ? map_->npix() : 0; }
  int column() const noexcept { return column_; }
  int columnCount() const noexcept { return map_ ? static_cast<int>(map_->columns.size()) : 0; }
  /// Values of the shown column (RING, 12 nside^2; UNSEEN = -1.6375e30); empty without a map.
  const std::vector<double>& values() const;
  /// The rendered Mollweide image (sky::kImageWidth x sky::kImageHeight); null without a map.
  const QImage& image() const noexcept { return image_; }
  /// C_l (l = 0..lmax) of the last spectrum; empty when none.
  const std::vector<double>& spectrum() const;
  std::shared_ptr<const sky::SkySpectrum> spectrumResult() const noexcept { return spectrum_; }

  SkyMapView* mapView() const noexcept { return view_; }
  SpectrumChart* spectrumChart() const noexcept { return chart_; }
  LogPanel* logPanel() const noexcept { return log_; }
  QComboBox* columnCombo() const noexcept { return columnBox_; }
  QComboBox* backendCombo() const noexcept { return backendBox_; }
  QComboBox* weightsCombo() const noexcept { return weightsBox_; }
  QSpinBox* lmaxSpin() const noexcept { return lmaxSpin_; }

signals:
  void mapLoaded();
  void maskLoaded();
  void spectrumReady();
  void shtJobDone();

private:
  enum class JobKind { Map, Spectrum, Sht, Mask };
  void buildShtDock();
  void buildUi();
  void buildActions();
  bool startJob(JobKind kind, const QString& name, JobRunner::Job job, int column);
  void onJobFinished(JobRunner* runner, JobKind kind, int column);
  void showColumn(int column);
  void buildDisplayBar();
  void render();
  void syncDisplayWidgets();
  void updateActions() override;
  void openMapDialog();
  void saveSpectrumDialog();
  void saveImageDialog();
  void chooseWeights(int index);
  void showSpectrumProblem(const QString& text);
  void onMaskLoaded(const sky::SkyMapPtr& mask);
  void openMaskDialog();
  void synthesiseFromClDialog();
  QString columnLabel(int column) const;

  sky::SkyMapPtr map_;
  int column_ = 0;
  QImage image_;
  std::shared_ptr<const sky::SkySpectrum> spectrum_;
  QString lastDir_;
  sky::SkyWeights weights_;
  std::shared_ptr<const sht::ShtOutcome> shtResult_;
  SchemaForm* shtForm_ = nullptr;
  QComboBox* shtOpBox_ = nullptr;
  QPushButton* shtRun_ = nullptr;

  SkyMapView* view_ = nullptr;
  SpectrumChart* chart_ = nullptr;
  LogPanel* log_ = nullptr;
  QComboBox* columnBox_ = nullptr;
  QComboBox* backendBox_ = nullptr;
  QComboBox* weightsBox_ = nullptr;
  QSpinBox* lmaxSpin_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* spectrumProblem_ = nullptr;
  QString synthesisProblem_;
  QTabWidget* tabs_ = nullptr;
  QWidget* spherePage_ = nullptr;
  SkySphereView* sphere_ = nullptr;
  std::vector<std::uint8_t> mask_;
  QString maskSource_;
  double maskOpacity_ = sky::kDefaultMaskOpacity;
  QAction* openMaskAction_ = nullptr;
  QAction* clearMaskAction_ = nullptr;
  QAction* planeMaskAction_ = nullptr;
  QAction* clSynthAction_ = nullptr;
  QLabel* mapInfo_ = nullptr;

  QAction* openAction_ = nullptr;
  QAction* demoAction_ = nullptr;
  QAction* spectrumAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* saveSpectrumAction_ = nullptr;
  QAction* saveImageAction_ = nullptr;
  QAction* logAxesAction_ = nullptr;
  std::vector<QAction*> demoSizeActions_;

  sky::ViewSpec viewSpec_;
  sky::ColourMap cmap_ = sky::ColourMap::Viridis;
  sky::Scaling scaling_ = sky::Scaling::Linear;
  bool manualRange_ = false;
  double lo_ = 0.0, hi_ = 0.0;
  bool graticuleOn_ = false;
  sky::Frame frame_ = sky::Frame::Native;
  double stepDeg_ = 30.0;
  sky::ScaleMap scale_;
  struct LookupCache {
    sky::ViewSpec view;
    int nside = 0, width = 0, height = 0;
    std::vector<std::int64_t> lookup;
  } lookupCache_;
  QComboBox *projBox_ = nullptr, *cmapBox_ = nullptr, *scaleBox_ = nullptr, *gratBox_ = nullptr;
  QDoubleSpinBox *lonSpin_ = nullptr, *latSpin_ = nullptr, *fovSpin_ = nullptr, *loSpin_ = nullptr, *hiSpin_ = nullptr;
};

}  // namespace almagest::ui
