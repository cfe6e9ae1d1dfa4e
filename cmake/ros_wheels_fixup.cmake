# Injected with -DCMAKE_PROJECT_INCLUDE=<this file> when building against the ROS 2 PyPI wheels.
# The wheels' exported *rosidl_generator_py* targets hard-code the wheel build prefix
# (/opt/python/cp311-cp311/...) in INTERFACE_INCLUDE_DIRECTORIES. At the end of configuration this
# rewrites those paths to this interpreter's Python and NumPy include directories. Nothing installed
# is modified, and on a full ROS install (no such paths) it does nothing.
if(NOT DEFINED ROS_WHEELS_PYTHON_INCLUDE)
  find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c "import numpy; print(numpy.get_include())"
    OUTPUT_VARIABLE ROS_WHEELS_NUMPY_INCLUDE OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(ROS_WHEELS_PYTHON_INCLUDE "${Python3_INCLUDE_DIRS}")
endif()

function(_ros_wheels_fix_imported_targets)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_inc "${_t}" INTERFACE_INCLUDE_DIRECTORIES)
    if(_inc AND "${_inc}" MATCHES "/opt/python/cp3[0-9]+-cp3[0-9]+/")
      set(_fixed "")
      foreach(_d IN LISTS _inc)
        if(_d MATCHES "^/opt/python/cp3[0-9]+-cp3[0-9]+/include/python")
          list(APPEND _fixed "${ROS_WHEELS_PYTHON_INCLUDE}")
        elseif(_d MATCHES "^/opt/python/cp3[0-9]+-cp3[0-9]+/.*numpy.*include")
          list(APPEND _fixed "${ROS_WHEELS_NUMPY_INCLUDE}")
        else()
          list(APPEND _fixed "${_d}")
        endif()
      endforeach()
      set_target_properties("${_t}" PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
    endif()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ros_wheels_fix_imported_targets)
