#pragma once
// The demo report (`almagest --demo-report DIR`, what packaging/demo.sh runs without a display):
// the three engines on the bundled and seeded demo data, drawn by the application's own windows
// and views (rendered offscreen) and written as DIR/index.html with PNG figures beside it:
//   N-point   the demo catalogues in the 3D view, xi(r) and r^2 xi(r), and zeta against
//             configuration index with its configuration key (3pCF from the same catalogues);
//   HEALPix   a seeded Gaussian map (C_l = 2 pi / (l (l+1))) in the Mollweide view and its
//             angular power spectrum from the SHT job;
//   stack     a seeded synthetic exposure stack with movers: the best-Z map of the search, and
//             the stamps of the best candidates.
// Each figure carries its result's provenance (app::exportImage). Numbers come from the runs;
// a view that cannot be drawn here (no OpenGL for the 3D view) is said so in the report.
#include <QString>

namespace almagest::ui {
class MainWindow;
}

namespace almagest::ui::app {

/// Opens one view of the demo on screen as the report draws it (`almagest --show-demo VIEW`, for
/// the scripted screenshots): "npcf" (catalogue and xi), "zeta" (3pCF by configuration), "sky"
/// (map and spectrum), "sphere" (the same map on the sphere with a plane-cut mask), "stack"
/// (best-Z map, the first candidate's stamp). Returns once it shows.
bool showDemoView(MainWindow& window, const QString& view, QString* error);

/// Writes the report into `dir` (created). Returns the path of index.html, or "" with `error`.
/// Runs the jobs through the windows (the GUI event loop must be able to run: QApplication).
QString writeDemoReport(const QString& dir, QString* error);

}  // namespace almagest::ui::app
