// Duplicate keys through every common entry point: ParseStructuredText (YAML and JSON),
// LoadYamlText, CheckYamlText and ParseJsonText / ParseOrderedJsonText.
#include "common/duplicate_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"
#include "common/json_text.h"
#include "common/structured_file.h"
#include "common/yaml_config.h"
#include "support/thrown_by.h"

namespace accel {
namespace duplicate_keys_test {

using ::testing::HasSubstr;

/// The InputError `f` throws; fails the test when it throws nothing.
template <typename F>
InputError ErrorOf(F&& f) {
  return test_support::ThrownBy<InputError>(std::forward<F>(f));
}

/// Checks one duplicate-key error: where (file:line:col of the second key), key path, problem.
void ExpectDuplicate(const InputError& e, const std::string& where, const std::string& field,
                     const std::string& problem) {
  EXPECT_EQ(e.where(), where) << e.what();
  EXPECT_EQ(e.field(), field) << e.what();
  EXPECT_EQ(e.problem(), problem) << e.what();
  EXPECT_THAT(e.hint(), HasSubstr("keep one")) << e.what();
}

/// YAML text through the three YAML entry points: each must give the same error.
void ExpectYamlDuplicate(const std::string& yaml, const std::string& where, const std::string& field,
                         const std::string& problem) {
  SCOPED_TRACE(yaml);
  ExpectDuplicate(ErrorOf([&] { ParseStructuredText(yaml, "f.yaml"); }), where, field, problem);
  ExpectDuplicate(ErrorOf([&] { LoadYamlText(yaml, "f.yaml"); }), where, field, problem);
  ExpectDuplicate(ErrorOf([&] { CheckYamlText(yaml, "f.yaml"); }), where, field, problem);
}

/// JSON text through ParseJsonText, ParseOrderedJsonText and ParseStructuredText.
void ExpectJsonDuplicate(const std::string& json, const std::string& where, const std::string& field,
                         const std::string& problem) {
  SCOPED_TRACE(json);
  ExpectDuplicate(ErrorOf([&] { ParseJsonText(json, "f.json"); }), where, field, problem);
  ExpectDuplicate(ErrorOf([&] { ParseOrderedJsonText(json, "f.json"); }), where, field, problem);
  ExpectDuplicate(ErrorOf([&] { ParseStructuredText(json, "f.json"); }), where, field, problem);
}

// ---- the message ----

TEST(DuplicateKeyError, NamesTheFileTheKeyPathAndBothLines) {
  InputError e = DuplicateKeyError("agent.yaml", "labels", {3, 1}, {9, 1}, DocumentSyntax::kYaml);
  EXPECT_EQ(std::string(e.what()),
            "agent.yaml:9:1: labels: key given twice (lines 3 and 9) (keep one: YAML keeps only the last, so "
            "the first would be ignored)");
  e = DuplicateKeyError("f.json", "a", {1, 2}, {1, 10}, DocumentSyntax::kJson);
  EXPECT_EQ(std::string(e.what()),
            "f.json:1:10: a: key given twice (both on line 1, columns 2 and 10) (keep one: JSON keeps only the "
            "last, so the first would be ignored)");
  e = DuplicateKeyError("f.json", "a", {}, {}, DocumentSyntax::kJson);
  EXPECT_EQ(e.where(), "f.json");
  EXPECT_EQ(e.problem(), "key given twice");
}

TEST(KeyPath, QuotesKeysThatWouldReadAsPaths) {
  EXPECT_EQ(KeyPathJoin("", "labels"), "labels");
  EXPECT_EQ(KeyPathJoin("a", "b"), "a.b");
  EXPECT_EQ(KeyPathJoin("mig-devices", "1g.10gb"), "mig-devices.\"1g.10gb\"");
  EXPECT_EQ(KeyPathJoin("", ""), "\"\"");
  EXPECT_EQ(KeyPathJoin("a", "x[0]"), "a.\"x[0]\"");
  EXPECT_EQ(KeyPathJoin("a", "say \"hi\""), "a.\"say \\\"hi\\\"\"");
  EXPECT_EQ(KeyPathJoin("extra_specs", "hw:cpu_policy"), "extra_specs.hw:cpu_policy");
  EXPECT_EQ(KeyPathIndex("items", 2), "items[2]");
  EXPECT_EQ(KeyPathIndex("", 0), "[0]");
}

// ---- YAML ----

TEST(YamlDuplicateKeys, TopLevel) {
  ExpectYamlDuplicate("labels: {a: b}\nvendors: [nvidia]\nlabels: {c: d}\n", "f.yaml:3:1", "labels",
                      "key given twice (lines 1 and 3)");
}

TEST(YamlDuplicateKeys, Nested) {
  ExpectYamlDuplicate(
      "devicePlugin:\n"
      "  config:\n"
      "    sharing:\n"
      "      timeSlicing: {}\n"
      "      mps: {}\n"
      "      timeSlicing: {}\n",
      "f.yaml:6:7", "devicePlugin.config.sharing.timeSlicing", "key given twice (lines 4 and 6)");
}

TEST(YamlDuplicateKeys, InListsOfMappings) {
  ExpectYamlDuplicate("items:\n- name: a\n  name: b\n", "f.yaml:3:3", "items[0].name",
                      "key given twice (lines 2 and 3)");
  ExpectYamlDuplicate("items:\n- name: a\n- name: b\n  size: 1\n  name: c\n", "f.yaml:5:3", "items[1].name",
                      "key given twice (lines 3 and 5)");
}

TEST(YamlDuplicateKeys, FlowStyle) {
  ExpectYamlDuplicate("m: {a: 1, a: 2}\n", "f.yaml:1:11", "m.a", "key given twice (both on line 1, columns 5 and 11)");
  // A flow mapping as the whole document (LoadYamlText; ParseStructuredText would read '{' as JSON).
  ExpectDuplicate(ErrorOf([] { LoadYamlText("{a: 1, a: 2}", "f.yaml"); }), "f.yaml:1:8", "a",
                  "key given twice (both on line 1, columns 2 and 8)");
  ExpectYamlDuplicate("l: [{x: 1}, {x: 1, x: 2}]\n", "f.yaml:1:20", "l[1].x",
                      "key given twice (both on line 1, columns 14 and 20)");
}

TEST(YamlDuplicateKeys, QuotingDoesNotMakeAnotherKey) {
  ExpectYamlDuplicate("a: 1\n\"a\": 2\n", "f.yaml:2:1", "a", "key given twice (lines 1 and 2)");
  ExpectYamlDuplicate("'a': 1\na: 2\n", "f.yaml:2:1", "a", "key given twice (lines 1 and 2)");
  ExpectYamlDuplicate("\"\\x61\": 1\na: 2\n", "f.yaml:2:1", "a", "key given twice (lines 1 and 2)");
  // accel reads every key as text: 1 and "1" are one key.
  ExpectYamlDuplicate("1: x\n\"1\": y\n", "f.yaml:2:1", "1", "key given twice (lines 1 and 2)");
  // A key holding a dot is quoted in the path.
  ExpectYamlDuplicate("mig-devices:\n  \"1g.10gb\": 1\n  1g.10gb: 2\n", "f.yaml:3:3", "mig-devices.\"1g.10gb\"",
                      "key given twice (lines 2 and 3)");
}

TEST(YamlDuplicateKeys, TheFirstDuplicateOfTheFileIsReported) {
  ExpectYamlDuplicate("a:\n  x: 1\n  x: 2\nb: 1\nb: 2\n", "f.yaml:3:3", "a.x", "key given twice (lines 2 and 3)");
}

TEST(YamlDuplicateKeys, AnchoredMappingsAreCheckedOnce) {
  ExpectYamlDuplicate("a: &m {k: 1, k: 2}\nb: *m\n", "f.yaml:1:14", "a.k",
                      "key given twice (both on line 1, columns 8 and 14)");
}

TEST(YamlDuplicateKeys, MergeKeysAreKeysLikeAnyOther) {
  // yaml-cpp 0.7 does not expand `<<`: a key next to a merge is not a duplicate of a merged one...
  const std::string base = "base: &b {x: 1}\nother: &o {y: 1}\n";
  EXPECT_NO_THROW(LoadYamlText(base + "m:\n  <<: *b\n  x: 2\n", "f.yaml"));
  EXPECT_NO_THROW(ParseStructuredText(base + "m:\n  <<: *b\n  x: 2\n", "f.yaml"));
  // ...but two merge keys in one mapping are (YAML wants one `<<: [*b, *o]`).
  ExpectYamlDuplicate(base + "m:\n  <<: *b\n  <<: *o\n", "f.yaml:5:3", "m.<<", "key given twice (lines 4 and 5)");
}

TEST(YamlDuplicateKeys, EqualKeysInDifferentMappingsAreFine) {
  const std::string yaml =
      "a: {x: 1}\n"
      "b: {x: 2}\n"
      "list:\n"
      "- x: 1\n"
      "- x: 2\n"
      "A: 1\n"  // keys differ by letter case
      "same: {v: 1, w: 1}\n";
  EXPECT_NO_THROW(CheckYamlText(yaml, "f.yaml"));
  YAML::Node root = LoadYamlText(yaml, "f.yaml");
  EXPECT_EQ(root["b"]["x"].as<int>(), 2);
  nlohmann::json doc = ParseStructuredText(yaml, "f.yaml");
  EXPECT_EQ(doc["list"][1]["x"], 2);
  EXPECT_EQ(doc["A"], 1);
}

TEST(YamlDuplicateKeys, EmbeddedDocumentsNameLinesOfTheirFile) {
  InputError e = ErrorOf([] { CheckYamlText("a: 1\nb: 2\na: 3\n", "cm.yaml", 10); });
  ExpectDuplicate(e, "cm.yaml:12:1", "a", "key given twice (lines 10 and 12)");
}

TEST(LoadYamlText, RefusesWhatYamlCppWouldDropOrLetThrough) {
  EXPECT_THAT(ErrorOf([] { LoadYamlText("a: 1\n---\nb: 2\n", "f.yaml"); }).problem(),
              HasSubstr("more than one YAML document"));
  EXPECT_THAT(ErrorOf([] { LoadYamlText("a: \"\xff\"\n", "f.yaml"); }).problem(), HasSubstr("UTF-8"));
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'g'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  EXPECT_THAT(ErrorOf([&] { LoadYamlText(bomb, "f.yaml"); }).problem(), HasSubstr("expands to more than"));
  InputError syntax = ErrorOf([] { LoadYamlText("a: [", "f.yaml"); });
  EXPECT_THAT(syntax.problem(), HasSubstr("is not valid YAML"));
  EXPECT_THAT(syntax.hint(), HasSubstr("indentation"));
}

// ---- JSON ----

TEST(JsonDuplicateKeys, TopLevel) {
  ExpectJsonDuplicate("{\"a\": 1,\n \"b\": 2,\n \"a\": 3}\n", "f.json:3:2", "a", "key given twice (lines 1 and 3)");
  ExpectJsonDuplicate("{\"a\": 1, \"a\": 2}", "f.json:1:10", "a", "key given twice (both on line 1, columns 2 and 10)");
}

TEST(JsonDuplicateKeys, Nested) {
  ExpectJsonDuplicate(
      "{\"x\": {\"y\": [1, {\"z\": 1,\n"
      "                  \"w\": 2,\n"
      "                  \"z\": 3}]}}",
      "f.json:3:19", "x.y[1].z", "key given twice (lines 1 and 3)");
}

TEST(JsonDuplicateKeys, TheFirstOccurrenceIsInTheSameObject) {
  // "a" of an earlier sibling object, of an earlier list item and of a parent are other keys.
  ExpectJsonDuplicate(
      "{\"a\": 0,\n"
      " \"p\": {\"a\": 1},\n"
      " \"q\": [{\"a\": 2},\n"
      "       {\"b\": 0,\n"
      "        \"a\": 3,\n"
      "        \"a\": 4}]}",
      "f.json:6:9", "q[1].a", "key given twice (lines 5 and 6)");
  ExpectJsonDuplicate("[{\"a\": 1},\n {\"a\": 1,\n  \"a\": 2}]", "f.json:3:3", "[1].a",
                      "key given twice (lines 2 and 3)");
}

TEST(JsonDuplicateKeys, EscapesAreUndoneBeforeKeysAreCompared) {
  // "\u0061" is "a"; the string value holds quotes, braces and the key's text, which the scan
  // for the lines must step over.
  ExpectJsonDuplicate("{\"s\": \"{\\\"a\\\": [}\",\n \"a\": 1,\n \"\\u0061\": 2}", "f.json:3:2", "a",
                      "key given twice (lines 2 and 3)");
  ExpectJsonDuplicate("{\"\\u00e9\": 1,\n \"\xc3\xa9\": 2}", "f.json:2:2", "\xc3\xa9",
                      "key given twice (lines 1 and 2)");
  ExpectJsonDuplicate("{\"a\\\"b\": 1,\n \"a\\u0022b\": 2}", "f.json:2:2", "\"a\\\"b\"",
                      "key given twice (lines 1 and 2)");
  ExpectJsonDuplicate("{\"a\\\\\": 1,\n \"a\\\\\": 2}", "f.json:2:2", "a\\", "key given twice (lines 1 and 2)");
  // A backslash and the letter after it are not the letter.
  EXPECT_NO_THROW(ParseJsonText("{\"a\\\\b\": 1, \"ab\": 2, \"a\\/b\": 3}", "f.json"));
}

TEST(JsonDuplicateKeys, EqualKeysInDifferentObjectsAreFine) {
  const std::string json = "{\"p\": {\"a\": 1}, \"q\": {\"a\": 2}, \"l\": [{\"a\": 1}, {\"a\": 1}], \"A\": 1, \"a\": 2}";
  nlohmann::json doc = ParseJsonText(json, "f.json");
  EXPECT_EQ(doc["q"]["a"], 2);
  EXPECT_EQ(doc["l"].size(), 2u);
  EXPECT_EQ(ParseOrderedJsonText(json, "f.json").dump(), nlohmann::ordered_json::parse(json).dump());
}

}  // namespace duplicate_keys_test
}  // namespace accel
