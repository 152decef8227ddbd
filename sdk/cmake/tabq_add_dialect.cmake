# tabq_add_dialect(<name> SOURCES <files...> SCHEMES <schemes...> [LIBRARIES <libs...>]
#                  [OUTPUT_DIRECTORY <dir>] [INSTALL_DIR <dir> | NO_INSTALL] [ABI <major.minor>]
#                  [ABI_HEADERS <dir>])
#
# Builds a dialect plugin <name>.so as a MODULE with hidden visibility, so the entry function
# (marked TABQ_PLUGIN_EXPORT) is the only symbol it exports. The target is tabq_dialect_<name>.
# Every dialect links the shared statement builders (tabq/sql_build.h, tabq_sqlbuild).
#
# Beside the plugin it writes the plugin's manifest, <name>.tabq-plugin: the file, the URL
# schemes it serves (SCHEMES, exactly the schemes its descriptor lists) and the plugin ABI of this
# SDK. The loader chooses a plugin by its manifest without loading it.
#
# `cmake --install` puts the plugin and its manifest into INSTALL_DIR: by default, with an
# installed tabq (find_package), tabq's own plugin folder (tabq_PLUGIN_DIR), where libtabq finds
# them with no environment; in tabq's own tree, <libdir>/tabq-<ABI major> of the prefix.
# NO_INSTALL installs nothing (test fixtures). ABI is for a plugin whose descriptor declares an
# older ABI than this SDK's (TABQ_ABI_VERSION): its manifest must say the same.
#
# ABI_HEADERS builds against the plugin ABI headers in <dir> (<dir>/tabq/dialect.h and what it
# includes: a copy of an older minor's, as tabq's own tests keep) instead of the SDK's: the
# manifest's ABI is that dialect.h's, and the statement builders, compiled against the SDK's
# headers, are not linked.
function(tabq_add_dialect name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY;INSTALL_DIR;ABI;ABI_HEADERS"
    "SOURCES;LIBRARIES;SCHEMES" ${ARGN})
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
  # The ABI the plugin is compiled against: the one in this SDK's tabq/sys/dialect.h (the package
  # and tabq's tree each say where the SDK's headers are).
  if(NOT DEFINED TABQ_SDK_INCLUDE_DIR)
    message(FATAL_ERROR "tabq_add_dialect(${name}): TABQ_SDK_INCLUDE_DIR is not set; use it "
      "through find_package(tabq)")
  endif()
  set(header ${TABQ_SDK_INCLUDE_DIR}/tabq/sys/dialect.h)
  if(ARG_ABI_HEADERS)
    set(header ${ARG_ABI_HEADERS}/tabq/dialect.h)
  endif()
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
  if(ARG_ABI)
    if(NOT ARG_ABI MATCHES "^([0-9]+)\\.([0-9]+)$")
      message(FATAL_ERROR "tabq_add_dialect(${name}): ABI '${ARG_ABI}' is not <major>.<minor>")
    endif()
    set(abi_MAJOR ${CMAKE_MATCH_1})
    set(abi_MINOR ${CMAKE_MATCH_2})
  endif()

  set(target tabq_dialect_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(ARG_ABI_HEADERS)
    target_include_directories(${target} PRIVATE ${ARG_ABI_HEADERS})
    target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES})
  else()
    target_link_libraries(${target} PRIVATE tabq::sdk tabq::sqlbuild ${ARG_LIBRARIES})
  endif()
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
  if(ARG_NO_INSTALL)
    return()
  endif()
  if(NOT ARG_INSTALL_DIR)
    if(DEFINED tabq_PLUGIN_DIR)
      set(ARG_INSTALL_DIR ${tabq_PLUGIN_DIR})
    else()
      include(GNUInstallDirs)
      set(ARG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/tabq-${abi_MAJOR})
    endif()
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${ARG_INSTALL_DIR})
  install(FILES ${manifest} DESTINATION ${ARG_INSTALL_DIR})
endfunction()
