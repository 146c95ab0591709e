#include "common/json_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace accel {
namespace json_reader_test {

using nlohmann::json;
using ::testing::HasSubstr;

/// The message of the InputError `f` throws; fails the test when it throws nothing.
template <typename F>
std::string MessageOf(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

TEST(JsonAt, JoinsOnlyWhenAsked) {
  EXPECT_EQ(JsonAt("a.b").str(), "a.b");
  EXPECT_EQ(JsonAt("cells[0]", "pinning").str(), "cells[0].pinning");
  EXPECT_EQ(JsonAt("", "schema").str(), "schema");
  EXPECT_EQ(JsonReader::Join("", "x"), "x");
  EXPECT_EQ(JsonReader::Index("pci", 3), "pci[3]");
}

TEST(JsonReader, ReadsTypedValues) {
  const JsonReader r("h.json");
  const json doc = json::parse(R"({"s": "x", "b": true, "i": -4, "u": 7, "l": ["p", "q"], "c": "0-3,8",
                                   "h": "10DE", "o": {}, "n": null})");
  r.Object(doc, "", {"s", "b", "i", "u", "l", "c", "h", "o", "n"});
  EXPECT_EQ(r.String(r.Require(doc, "", "s"), "s"), "x");
  EXPECT_TRUE(r.Bool(doc["b"], "b"));
  EXPECT_EQ(r.Integer(doc["i"], "i", -10, 10), -4);
  EXPECT_EQ(r.Unsigned(doc["u"], "u"), 7u);
  EXPECT_EQ(r.Strings(doc["l"], "l"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(r.Cpus(doc["c"], "c").ToString(), "0-3,8");
  EXPECT_EQ(r.Hex4(doc["h"], "h"), 0x10de);
  EXPECT_EQ(&r.Object(doc["o"], "o"), &doc["o"]);
  EXPECT_NE(r.Find(doc, "n"), nullptr);  // null is a value...
  EXPECT_EQ(r.FindNonNull(doc, "n"), nullptr);  // ...unless read as unset
  EXPECT_EQ(r.Find(doc, "absent"), nullptr);
  EXPECT_EQ(r.Find(doc["s"], "x"), nullptr);  // not an object: nothing to find
}

TEST(JsonReader, MessagesNameTheDocumentAndTheField) {
  const JsonReader r("h.json");
  const json doc = json::parse(R"({"n": 1.5, "neg": -1, "big": 99, "s": "0-3,^2", "h": "10d", "l": [1], "x": 1})");
  EXPECT_EQ(MessageOf([&] { r.String(doc["n"], {"cells[0]", "n"}); }),
            "h.json: cells[0].n: expected a string, got a fractional number");
  EXPECT_EQ(MessageOf([&] { r.Integer(doc["n"], "n", 0, 9); }), "h.json: n: expected an integer, got a fractional number");
  EXPECT_EQ(MessageOf([&] { r.Integer(doc["big"], "big", 0, 9); }), "h.json: big: 99 is out of range (use 0..9)");
  EXPECT_EQ(MessageOf([&] { r.Integer(doc["neg"], "neg", 0, 9); }), "h.json: neg: -1 is out of range (use 0..9)");
  // A parser reads 99 as unsigned: the minimum holds for it too.
  EXPECT_EQ(MessageOf([&] { r.Integer(doc["big"], "big", 100, 200); }), "h.json: big: 99 is out of range (use 100..200)");
  EXPECT_THAT(MessageOf([&] { r.Unsigned(doc["neg"], "neg"); }), HasSubstr("neg: -1 is negative"));
  EXPECT_THAT(MessageOf([&] { r.Unsigned(doc["s"], "s"); }), HasSubstr("expected a non-negative integer, got a string"));
  EXPECT_THAT(MessageOf([&] { r.Bool(doc["s"], "s"); }), HasSubstr("s: expected true or false, got a string"));
  EXPECT_THAT(MessageOf([&] { r.Cpus(doc["s"], "s"); }), HasSubstr("uses an exclusion '^'"));
  EXPECT_THAT(MessageOf([&] { r.Hex4(doc["h"], "h"); }), HasSubstr("h: \"10d\" is not 4 hex digits"));
  EXPECT_EQ(MessageOf([&] { r.Strings(doc["l"], "l"); }), "h.json: l[0]: expected a string, got an integer");
  EXPECT_EQ(MessageOf([&] { r.Array(doc["x"], "x"); }), "h.json: x: expected an array, got an integer");
  EXPECT_EQ(MessageOf([&] { r.Object(doc, "", {"n", "neg"}); }),
            "h.json: big: unknown key (known here: n, neg)");
  EXPECT_EQ(MessageOf([&] { r.Require(doc, "top", "missing", "add it"); }), "h.json: top.missing: is missing (add it)");
  EXPECT_EQ(MessageOf([&] { r.Object(doc["l"], "l"); }), "h.json: l: expected an object, got an array");
}

TEST(JsonReader, SpeaksYamlForYamlDocuments) {
  const JsonReader r("web.yml", JsonWords::kYaml);
  const json doc = json::parse(R"({"l": [], "o": {}})");
  EXPECT_EQ(MessageOf([&] { r.Object(doc["l"], "l"); }), "web.yml: l: expected a mapping, got a list");
  EXPECT_EQ(MessageOf([&] { r.Array(doc["o"], "o"); }), "web.yml: o: expected a list, got a mapping");
}

TEST(JsonReader, ReadsOrderedJsonToo) {
  const JsonReader r("p.json");
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(R"({"z": 1, "a": "x"})");
  r.Object(doc, "", {"z", "a"});
  EXPECT_EQ(r.Integer(r.Require(doc, "", "z"), "z", 0, 1), 1);
  EXPECT_EQ(r.String(*r.Find(doc, "a"), "a"), "x");
}

}  // namespace json_reader_test
}  // namespace accel
