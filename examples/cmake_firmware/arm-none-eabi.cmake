# A CMake toolchain file for bare-metal Arm (the GNU Arm Embedded toolchain, Debian's
# gcc-arm-none-eabi): CMake checks the compiler by building a static library, not a program,
# since a program would need this firmware's startup code and linker script.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
