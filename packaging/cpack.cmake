# Debian packages through CPack (docs/packaging.md): `cpack -G DEB` in a configured build dir
# writes one package per component:
#   almagest      the desktop application (component app): bin/almagest, the .desktop entry and
#                 the icon (SVG and PNG sizes in the hicolor theme);
#   almagest-cli  the command line (component cli): bin/almagest-cli and the demo data;
#   almagest-cuda the CUDA module (component cuda, only when ALMAGEST_WITH_CUDA): the run-time
#                 module lib/almagest/libalmagest_cuda.so the programs dlopen when present.
# The application and the CLI work without almagest-cuda (they report why no GPU is used).
# Dependencies: dpkg-shlibdeps computes them for the app and the CLI (all their libraries come
# from Debian packages); the CUDA module links NVIDIA's cuFFT / cuBLAS from the CUDA toolkit,
# which no Debian package of this system provides, so its dependencies are declared instead.
include(GNUInstallDirs)

# Desktop integration (component app).
if(ALMAGEST_WITH_GUI)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/almagest.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT app)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/almagest.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT app)
  foreach(size 16 32 48 64 128 256)
    install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/almagest-${size}.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps
            RENAME almagest.png COMPONENT app)
  endforeach()
endif()

set(CPACK_PACKAGE_NAME almagest)
set(CPACK_PACKAGE_VENDOR "Almagest")
set(CPACK_PACKAGE_CONTACT "Almagest maintainers <almagest@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Astronomy workbench: N-point correlations, HEALPix transforms, shift-and-stack")
set(CPACK_PACKAGE_INSTALL_DIRECTORY almagest)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_COMPONENTS_ALL cli)
if(ALMAGEST_WITH_GUI)
  list(APPEND CPACK_COMPONENTS_ALL app)
endif()
if(ALMAGEST_WITH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()

set(CPACK_COMPONENT_CLI_DISPLAY_NAME "Almagest command line")
set(CPACK_COMPONENT_CLI_DESCRIPTION "almagest-cli: npcf, sht and stack jobs, batches and the demo data")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME almagest-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS almagest-cuda)

set(CPACK_COMPONENT_APP_DISPLAY_NAME "Almagest desktop application")
set(CPACK_COMPONENT_APP_DESCRIPTION "The Qt 6 / VTK application: correlations, sky maps, moving objects")
set(CPACK_COMPONENT_APP_DEPENDS cli)  # the demo data is the CLI's
set(CPACK_DEBIAN_APP_PACKAGE_NAME almagest)
set(CPACK_DEBIAN_APP_PACKAGE_SUGGESTS almagest-cuda)

set(CPACK_COMPONENT_CUDA_DISPLAY_NAME "Almagest CUDA module")
set(CPACK_COMPONENT_CUDA_DESCRIPTION "GPU backends (CUDA) for the application and the CLI")
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME almagest-cuda)
# cuFFT / cuBLAS come from NVIDIA's toolkit (not a Debian package here): no shlibdeps.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "almagest-cli (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_CUDA_DESCRIPTION
    "GPU backends of Almagest. Needs an NVIDIA driver and the CUDA 13 cuFFT and cuBLAS libraries on the loader's path.")

include(CPack)
