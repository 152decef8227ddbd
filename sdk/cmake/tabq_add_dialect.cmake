# tabq_add_dialect(<name> SOURCES <files...> [LIBRARIES <libs...>] [OUTPUT_DIRECTORY <dir>])
#
# Builds a dialect plugin <name>.so as a MODULE with hidden visibility, so the entry function
# (marked TABQ_PLUGIN_EXPORT) is the only symbol it exports. The target is tabq_dialect_<name>.
# Every dialect links the shared statement builders (tabq/sql_build.h, tabq_sqlbuild).
function(tabq_add_dialect name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  set(target tabq_dialect_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE tabq::sdk tabq::sqlbuild ${ARG_LIBRARIES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED TABQ_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY ${TABQ_PLUGIN_OUTPUT_DIR})
    else()
      set(ARG_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
endfunction()
