// Catch2's main, in its own translation unit (it is slow to compile).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
