# The layers of cmake/layers.txt: their links come from that table, so
# CMake, scripts/layers.py and docs/ARCHITECTURE.md read one list.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/layers.txt _abx_layer_lines REGEX "^[^# ]")
foreach(_line IN LISTS _abx_layer_lines)
  string(REGEX REPLACE "[ \t]+" ";" _parts "${_line}")
  list(GET _parts 0 _layer)
  list(GET _parts 1 _target)
  set(ABX_LAYER_TARGET_${_layer} ${_target})
endforeach()
foreach(_line IN LISTS _abx_layer_lines)
  string(REGEX REPLACE "[ \t]+" ";" _parts "${_line}")
  list(GET _parts 1 _target)
  list(SUBLIST _parts 3 -1 _links)
  set(_targets)
  foreach(_l IN LISTS _links)
    if(NOT _l STREQUAL "-")
      list(APPEND _targets ${ABX_LAYER_TARGET_${_l}})
    endif()
  endforeach()
  set(ABX_LAYER_LINKS_${_target} ${_targets})
endforeach()

# Links target (a library: PUBLIC; a program: PRIVATE) to the layers the
# table names for it, and to the packages in ARGN.
function(abx_layer_link target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE ${ABX_LAYER_LINKS_${target}} ${ARGN})
  else()
    target_link_libraries(${target} PUBLIC ${ABX_LAYER_LINKS_${target}} ${ARGN})
  endif()
endfunction()

# One layer library: every .c file of `folder` (relative to the calling
# CMakeLists.txt); its PUBLIC include path is that folder only, so a file
# that includes a header of a layer its library does not link fails to
# compile. ARGN: the packages it uses.
function(abx_layer_library target folder)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.c)
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE)
  abx_layer_link(${target} ${ARGN})
endfunction()
