# Per-target warnings; no global flags.
#
# ALMAGEST_SANITIZE (the `sanitize` preset): AddressSanitizer and UndefinedBehaviorSanitizer on
# every target of the project, added here because every target calls almagest_warnings; system
# libraries (HDF5, cfitsio, Qt) stay uninstrumented. UB is fatal (-fno-sanitize-recover), so a
# test that meets it fails. See docs/design.md, "Tests under sanitizers and fuzzing".
option(ALMAGEST_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(almagest_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  if(ALMAGEST_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer
                                -fno-sanitize-recover=undefined>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
