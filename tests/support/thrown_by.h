// ThrownBy<E>(f): the exception of type E that `f` throws, for tests that check its parts
// (where(), field(), problem()). Records a test failure and returns an empty E when `f` throws
// nothing; any other exception escapes to gtest, which reports it.
#pragma once

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel::test_support {

template <typename E = InputError, typename F>
E ThrownBy(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  ADD_FAILURE() << "expected an exception, none was thrown";
  return E("", "", "");
}

}  // namespace accel::test_support
