#include "common/json_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace accel {
namespace json_text_test {

using ::testing::HasSubstr;

/// The InputError ParseJsonText throws for `text`; fails the test when it throws nothing.
InputError ParseError(const std::string& text) {
  try {
    ParseJsonText(text, "f.json");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected InputError for " << text;
  return InputError("", "", "");
}

TEST(ParseJsonText, BuildsTheTreeNlohmannBuilds) {
  const std::string text =
      "\xEF\xBB\xBF{\"s\": \"x\\ty\\u00e9\", \"i\": -3, \"u\": 18446744073709551615, \"f\": 1.5e3, \"t\": true,\n"
      " \"n\": null, \"a\": [1, [2, {}], []], \"o\": {\"z\": 1, \"b\": {\"c\": [null]}}}";
  EXPECT_EQ(ParseJsonText(text, "f.json"), nlohmann::json::parse(text));
  EXPECT_EQ(ParseOrderedJsonText(text, "f.json"), nlohmann::ordered_json::parse(text));
  // Document order is kept by the ordered variant.
  EXPECT_EQ(ParseOrderedJsonText("{\"z\": 1, \"a\": 2}", "f.json").dump(), "{\"z\":1,\"a\":2}");
  EXPECT_EQ(ParseJsonText("7", "f.json"), 7);
  EXPECT_EQ(ParseJsonText(" \"x\" ", "f.json"), "x");
}

TEST(ParseJsonText, SyntaxErrorsNameLineAndColumn) {
  InputError e = ParseError("{\"a\": 1,\n \"b\": }");
  EXPECT_EQ(e.where(), "f.json:2:7") << e.what();
  EXPECT_THAT(e.problem(), HasSubstr("is not valid JSON: syntax error")) << e.what();
  EXPECT_THAT(ParseError("").problem(), HasSubstr("is not valid JSON"));
  EXPECT_THAT(ParseError("{\"a\": 1} x").problem(), HasSubstr("is not valid JSON"));
  EXPECT_THAT(ParseError("{\"a\": \"\xff\"}").problem(), HasSubstr("is not valid JSON"));
  EXPECT_THAT(ParseError("{\"a\": 1 /* no comments */}").problem(), HasSubstr("is not valid JSON"));
}

TEST(ParseJsonText, NestingIsBounded) {
  std::string deep(kMaxJsonDepth, '[');
  deep += std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(ParseJsonText(deep, "f.json"));
  InputError e = ParseError("{\"a\": " + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}");
  EXPECT_THAT(e.problem(), HasSubstr("nesting is deeper than 64 levels"));
  // The object and 63 arrays are open when the 64th array would start: "a[0][0]...".
  std::string path = "a";
  for (int i = 0; i < kMaxJsonDepth - 2; ++i) path += "[0]";
  EXPECT_EQ(e.field(), path);
  // A million brackets stop at the bound, not at the end of the stack.
  EXPECT_THAT(ParseError(std::string(1000000, '[')).problem(), HasSubstr("nesting is deeper"));
}

}  // namespace json_text_test
}  // namespace accel
