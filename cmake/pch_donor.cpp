// Empty: the translation unit that compiles a precompiled header for other targets to reuse
// (cmake/AlmagestBuildSpeed.cmake, tests/CMakeLists.txt).
