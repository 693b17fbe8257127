# One layer of the C code: the static library `target` of every .c file
# in `folder` (relative to the calling CMakeLists.txt), whose PUBLIC
# include path is that folder only, linked to the layers and packages it
# may use (ARGN). A file that includes a header of a layer its library does
# not link then fails to compile (docs/ARCHITECTURE.md "Layers").
function(abx_layer_library target folder)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.c)
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE)
  target_link_libraries(${target} PUBLIC ${ARGN})
endfunction()
