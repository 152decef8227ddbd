# tabq_add_dialect(<name> SOURCES <files...> SCHEMES <schemes...> [LIBRARIES <libs...>]
#                  [OUTPUT_DIRECTORY <dir>])
#
# Builds a dialect plugin <name>.so as a MODULE with hidden visibility, so the entry function
# (marked TABQ_PLUGIN_EXPORT) is the only symbol it exports. The target is tabq_dialect_<name>.
# Every dialect links the shared statement builders (tabq/sql_build.h, tabq_sqlbuild).
#
# Beside the plugin it writes the plugin's manifest, <name>.tabq-plugin: the file, the URL
# schemes it serves (SCHEMES, exactly the schemes its descriptor lists) and the plugin ABI of this
# SDK. The loader chooses a plugin by its manifest without loading it, so install the manifest
# with the plugin:
#   install(FILES $<TARGET_FILE_DIR:tabq_dialect_<name>>/<name>.tabq-plugin DESTINATION ...)
function(tabq_add_dialect name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES;SCHEMES" ${ARGN})
  if(NOT ARG_SCHEMES)
    message(FATAL_ERROR "tabq_add_dialect(${name}): SCHEMES is required: the URL schemes the "
      "plugin serves, as its descriptor lists them, for its manifest")
  endif()
  foreach(scheme IN LISTS ARG_SCHEMES)
    if(NOT scheme MATCHES "^[a-z][a-z0-9+.-]*$")
      message(FATAL_ERROR "tabq_add_dialect(${name}): '${scheme}' is no URL scheme (a lowercase "
        "letter, then lowercase letters, digits, '+', '-' or '.')")
    endif()
  endforeach()
  # The ABI the plugin is compiled against: the one in this SDK's tabq/dialect.h.
  set(header ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../include/tabq/dialect.h)
  file(STRINGS ${header} abi_lines REGEX "^#define TABQ_ABI_(MAJOR|MINOR) [0-9]+$")
  foreach(line IN LISTS abi_lines)
    if(line MATCHES "^#define TABQ_ABI_(MAJOR|MINOR) ([0-9]+)$")
      set(abi_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    endif()
  endforeach()
  if(NOT DEFINED abi_MAJOR OR NOT DEFINED abi_MINOR)
    message(FATAL_ERROR "tabq_add_dialect(${name}): no TABQ_ABI_MAJOR/MINOR in ${header}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})

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
  set(manifest $<TARGET_FILE_DIR:${target}>/${name}.tabq-plugin)
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  list(JOIN ARG_SCHEMES " " schemes)
  file(GENERATE OUTPUT ${manifest} CONTENT "# tabq plugin manifest, written by tabq_add_dialect()
file = $<TARGET_FILE_NAME:${target}>
schemes = ${schemes}
abi = ${abi_MAJOR}.${abi_MINOR}
")
endfunction()
