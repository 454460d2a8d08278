#pragma once
// The application icon, painted at run time (the Qt SVG plugin is not a dependency): a night-sky
// tile with a ring of galaxies around a bright centre, read as "clustering".
#include <QIcon>

namespace almagest::ui {

QIcon appIcon();

}  // namespace almagest::ui
