#pragma once
// StackWindow: the "Moving objects" window for shift-and-stack searches (docs/stack.md).
//
// Open a stack (KBMOD WorkUnit FITS, HDF5 cube or a folder of per-exposure FITS files) or generate
// a seeded synthetic one with injected movers; browse its exposures (grey, asinh stretch between
// robust limits; MJD in the status bar); set every option of `almagest-cli stack search`
// in the side panel (a form from the stack job schema; the job layer runs the search); run psi/phi + plan + scan in one job with progress and
// Cancel; see the candidates in a sortable table and the best Z of every origin pixel as an image
// with the candidates circled; select a candidate to see its coadded stamp, the strip of
// per-exposure cutouts along its track and the track on the exposure viewer; save the candidates
// (ECSV) or the whole result (HDF5, with curves, tracks and stamps) through the engine's atomic
// writers.
//
// Jobs (loading, synthesis, search, saving) go through JobWindow (one at a time, progress,
// Cancel, errors naming the file and field, teardown). No VTK here: images are QImages painted by
// QPainter. Opened from the main window's Tools menu as a top-level window.
#include <QImage>

#include <array>

#include <cstdint>
#include <memory>
#include <vector>

#include "jobs/JobWindow.hpp"
#include "stackview/StackImages.hpp"
#include "stackview/StackJobs.hpp"
#include "stackview/Vetting.hpp"
#include "almagest/stack/score_cube.hpp"
#include "almagest/stack/wcs.hpp"

class QAction;
class QMenu;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QTimer;
class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSlider;
class QSpinBox;
class QSortFilterProxyModel;
class QTableView;
class QTabWidget;
class QDockWidget;

namespace almagest::ui {

class LogPanel;

namespace stackview {
class CandidateCurves;
class CandidateModel;
class ScoreCubeView;
class SearchPanel;
class StackImageView;
}  // namespace stackview

class StackWindow : public JobWindow {
  Q_OBJECT
public:
  explicit StackWindow(QWidget* parent = nullptr);
  ~StackWindow() override;

  static constexpr std::uint64_t kDemoSeed = 20261129;

  // ---- actions (each returns false, with a message, when it cannot start) ---------------------
  /// Starts reading a stack file or folder. Errors of the file arrive as a Failed job.
  bool openStack(const QString& path);
  /// Starts generating a synthetic stack from a full engine configuration (movers included).
  bool newSyntheticStack(const almagest::stack::SyntheticConfig& config);
  /// Synthetic stack with `movers` movers of stack SNR `snr` whose velocities lie on the current
  /// search grid (stackview::makeMovers), over a 4-day baseline.
  bool newSyntheticStack(int nExp, int width, int height, std::uint64_t seed = kDemoSeed, int movers = 3,
                         double snr = 10.0);
  /// Starts a search with the panel's settings; with savePath the job also writes the candidates
  /// (.ecsv) or the result (.h5) atomically.
  bool runSearch(const QString& savePath = {});
  /// Starts writing the candidates as ECSV (RA/Dec columns when the stack has a WCS).
  bool saveCandidates(const QString& path);
  /// Starts writing the result as HDF5 (candidates, curves, tracks, stamps).
  bool saveResult(const QString& path);
  /// Saves the best-Z image with the candidate circles (PNG by extension, y up as drawn).
  bool saveBestZImage(const QString& path);
  /// Saves the shown exposure with its overlays (track, marker, mask) as drawn.
  bool saveExposureImage(const QString& path);

  // ---- display (StackWindowDisplay.cpp) -----------------------------------------------------
  /// How exposures are stretched (zscale by default, as DS9); manual uses setManualLimits.
  void setStretchMode(stackview::StretchMode mode);
  stackview::StretchMode stretchMode() const noexcept { return stretchMode_; }
  void setManualLimits(double lo, double hi);
  /// Limits of the shown exposure's stretch.
  stackview::Stretch shownStretch() const noexcept { return shownStretch_; }
  void setMaskOverlay(bool on);
  /// Blinks through the exposures at `fps` frames per second (0 stops).
  void setBlinking(bool on);
  bool isBlinking() const;
  void setBlinkRate(double fps);
  /// One blink step (the timer's slot; public for tests).
  void blinkStep();

  // ---- vetting (StackVetting.cpp) -------------------------------------------------------------
  /// Marks candidate `index` (engine order) real, bogus or unvetted. False if out of range.
  bool markCandidate(int index, stackview::Verdict verdict);
  bool setCandidateNote(int index, const QString& note);
  const std::vector<stackview::Vet>& vetting() const noexcept { return vetting_; }
  /// Writes the candidates with their marks and notes (ECSV, atomically).
  bool saveVetting(const QString& path);
  /// Reads a vetting file of saveVetting and applies its marks to the candidates it matches
  /// (same origin and velocity). False with a message naming the file and field on error.
  bool loadVetting(const QString& path);
  /// Shows exposure e (0-based). False if out of range.
  bool setExposure(int e);
  /// Selects candidate `index` of candidates() (the engine's order): stamps, cutouts, track.
  /// -1 clears the selection. False if out of range.
  bool selectCandidate(int index);

  /// Closing the window while a job runs asks first (default); false closes and cancels (tests).
  void setConfirmCloseDuringJob(bool on) noexcept { confirmCloseDuringJob_ = on; }

  void setSearchSettings(const stackview::SearchSettings& s);
  stackview::SearchSettings searchSettings() const;
  /// The engine configuration a search would run now (throws ConfigError; needs a stack).
  almagest::stack::SearchConfig searchConfig() const;
  /// Validates the form's values through make_stack_job() and shows its message in the form's
  /// problem label (also done on every change). Returns the message ("" when fine).
  QString checkSearchForm();

  // ---- score cube (StackCube.cpp) ------------------------------------------------------------
  /// Which velocities the cube keeps: the whole bank, or the Cartesian bank's row (the selected
  /// candidate's vy) or column (its vx).
  enum class CubeVelocities { All, SelectedRow, SelectedColumn };
  /// The cube request for `which` and an origin region of +-regionRadius pixels around the
  /// selected candidate (0: the whole image). Throws ConfigError naming what is missing.
  almagest::stack::ScoreCubeRequest cubeRequest(CubeVelocities which, int regionRadius) const;
  /// Starts computing the score cube of the last search (a job); shown in the Score cube dock.
  bool computeScoreCube(const almagest::stack::ScoreCubeRequest& request);
  /// The same with the dock's choices (velocities, region radius).
  bool computeScoreCube();
  /// Creates (first time) and raises the Score cube dock; its VTK view needs an OpenGL context.
  stackview::ScoreCubeView* showScoreCube();
  stackview::ScoreCubeView* scoreCubeView() const noexcept { return cubeView_; }
  const almagest::stack::ScoreCube* scoreCube() const noexcept { return cube_.get(); }
  /// Cube positions (ix, iy, iv) of the candidates inside `cube`, and their candidate indices.
  std::vector<std::array<int, 3>> candidatesInCube(const almagest::stack::ScoreCube& cube,
                                                   std::vector<int>* indices = nullptr) const;
  stackview::CandidateCurves* candidateCurves() const noexcept { return curves_; }
  QTabWidget* detailTabs() const noexcept { return detailTabs_; }
  /// Raises the Curves tab of the candidate details.
  void showCandidateCurves();

  /// Writes the candidates marked real as observation rows (ADES PSV for .psv, MPC 80-column
  /// otherwise) at the stack's WCS; false with a message without a WCS or without real marks.
  bool exportRealObservations(const QString& path);

  // ---- state --------------------------------------------------------------------------------
  stackview::StackPtr stack() const noexcept { return stack_; }
  int exposureCount() const noexcept { return stack_ ? stack_->n() : 0; }
  int stackWidth() const noexcept { return stack_ ? stack_->stack.width : 0; }
  int stackHeight() const noexcept { return stack_ ? stack_->stack.height : 0; }
  int exposure() const noexcept { return exposure_; }
  stackview::SearchOutputPtr searchOutput() const noexcept { return output_; }
  /// The last search result, or null.
  const almagest::stack::SearchResult* result() const noexcept { return output_ ? &output_->result : nullptr; }
  /// Candidates of the last search (empty without one).
  const std::vector<almagest::stack::Candidate>& candidates() const;
  /// Best Z per origin pixel of the last search ([height][width]; empty when not computed).
  const std::vector<float>& bestZ() const;
  const QImage& exposureImage() const noexcept { return exposureImage_; }
  const QImage& bestZImage() const noexcept { return bestZImage_; }
  int selectedCandidate() const noexcept { return selected_; }
  /// Details (curves, track, stamps) of the selected candidate, or null.
  const almagest::stack::CandidateDetail* selectedDetail() const noexcept { return detail_.get(); }
  const QImage& stampImage() const noexcept { return stampImage_; }
  const QImage& cutoutImage() const noexcept { return cutoutImage_; }

  LogPanel* logPanel() const noexcept { return log_; }
  stackview::SearchPanel* searchPanel() const noexcept { return panel_; }
  stackview::StackImageView* exposureView() const noexcept { return exposureView_; }
  stackview::StackImageView* bestZView() const noexcept { return bestZView_; }
  QTableView* candidateTable() const noexcept { return table_; }
  QLineEdit* noteEdit() const noexcept { return noteEdit_; }
  QTimer* blinkTimer() const noexcept { return blinkTimer_; }
  QSlider* exposureSlider() const noexcept { return slider_; }

signals:
  void stackLoaded();
  void searchFinished();
  void saved(const QString& path);
  void candidateSelected(int index);
  void scoreCubeReady();

protected:
  void closeEvent(QCloseEvent* event) override;

private:
  enum class JobKind { Load, Search, Save, Cube };
  void buildUi();
  void buildActions();
  bool startJob(JobKind kind, const QString& name, JobRunner::Job job);
  void onJobFinished(JobRunner* runner, JobKind kind);
  void showStack(stackview::StackPtr s);
  void showSearch(stackview::SearchOutputPtr out);
  void showExposure();
  void showSelection();
  void updateActions() override;
  void updateMjdLabel();
  bool busyGuard(const QString& what);
  void onHoverExposure(int x, int y);
  void onHoverBestZ(int x, int y);
  void onBestZClicked(QPointF p);
  void onTableSelection();
  void openStackDialog(bool folder);
  void syntheticDialog();
  void saveCandidatesDialog();
  void saveResultDialog();
  void saveBestZDialog();
  void buildDisplayBar();
  void buildVettingActions(QMenu* menu);
  void widenGridForMovers();
  void showVetting(int index);
  void refreshVettingRow(int index);
  void showCube(std::shared_ptr<const almagest::stack::ScoreCube> cube);
  QString searchProvenance() const;             ///< the last result's provenance JSON, or ""
  QString curvesTitle(const QString& which) const;

  stackview::StackPtr stack_;
  stackview::PsiPhiCache psiphiCache_;
  stackview::SearchOutputPtr output_;
  std::unique_ptr<almagest::stack::CandidateDetail> detail_;
  int exposure_ = 0;
  int selected_ = -1;
  bool syncingSelection_ = false;
  bool confirmCloseDuringJob_ = true;
  QString lastDir_;
  QImage exposureImage_, bestZImage_, stampImage_, cutoutImage_;

  stackview::SearchPanel* panel_ = nullptr;
  stackview::StackImageView* exposureView_ = nullptr;
  stackview::StackImageView* bestZView_ = nullptr;
  stackview::CandidateModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QSlider* slider_ = nullptr;
  QLabel* exposureLabel_ = nullptr;
  QLabel* stampLabel_ = nullptr;
  QLabel* cutoutLabel_ = nullptr;
  QLabel* detailLabel_ = nullptr;
  QComboBox* stampKind_ = nullptr;
  QScrollArea* cutoutScroll_ = nullptr;
  LogPanel* log_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* mjdLabel_ = nullptr;
  QLabel* stackInfo_ = nullptr;

  QAction* openAction_ = nullptr;
  QAction* openFolderAction_ = nullptr;
  QAction* syntheticAction_ = nullptr;
  QAction* runAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* saveCandidatesAction_ = nullptr;
  QAction* saveResultAction_ = nullptr;
  QAction* saveImageAction_ = nullptr;
  QAction* prevAction_ = nullptr;
  QAction* nextAction_ = nullptr;

  stackview::StretchMode stretchMode_ = stackview::StretchMode::ZScale;
  stackview::Stretch manual_{0.0f, 1.0f}, shownStretch_;
  bool maskOverlay_ = false;
  QComboBox* stretchBox_ = nullptr;
  QDoubleSpinBox *loSpin_ = nullptr, *hiSpin_ = nullptr, *rateSpin_ = nullptr;
  QCheckBox* maskCheck_ = nullptr;
  QAction* blinkAction_ = nullptr;
  QTimer* blinkTimer_ = nullptr;
  std::vector<stackview::Vet> vetting_;
  QLineEdit* noteEdit_ = nullptr;

  std::shared_ptr<const almagest::stack::ScoreCube> cube_;
  std::shared_ptr<almagest::stack::Wcs> wcs_;  ///< of the shown stack, when its header has one
  QDockWidget* cubeDock_ = nullptr;
  stackview::ScoreCubeView* cubeView_ = nullptr;
  QComboBox* cubeVelocities_ = nullptr;
  QSpinBox* cubeRadius_ = nullptr;
  stackview::CandidateCurves* curves_ = nullptr;
  QTabWidget* detailTabs_ = nullptr;
};

}  // namespace almagest::ui
