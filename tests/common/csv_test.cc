// CsvTable: cells keep their line and column; every malformed file is an InputError naming
// the place.
#include "common/csv.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel {
namespace csv_test {

std::string ErrorOf(const std::string& text) {
  try {
    ParseCsv(text, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Csv, CellsKnowTheirLineAndColumnAndSpacesAreTrimmed) {
  const CsvTable t = ParseCsv("a,b, c\r\n1, 22 ,3\n\n4,,6\n", "t.csv");
  ASSERT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][1].text, "22");
  EXPECT_EQ(t.rows[0][1].line, 2);
  EXPECT_EQ(t.rows[0][1].column, 4);
  EXPECT_EQ(t.rows[1][1].text, "");
  EXPECT_EQ(t.rows[1][2].line, 4);
  EXPECT_EQ(t.Column("c"), 2);
  EXPECT_EQ(t.Column("z"), -1);
  EXPECT_EQ(t.Integer(t.rows[1][2], "c", 0, 10), 6);
}

TEST(Csv, BadFilesNameFileLineAndColumn) {
  EXPECT_NE(ErrorOf("").find("t.csv"), std::string::npos);
  EXPECT_NE(ErrorOf("a,b\n1,2,3\n").find("t.csv:2"), std::string::npos);
  EXPECT_NE(ErrorOf("a,\"b\"\n").find("t.csv:1:3"), std::string::npos);
  EXPECT_NE(ErrorOf("a,a\n").find("twice"), std::string::npos);
  EXPECT_NE(ErrorOf("a,,b\n").find("empty column name"), std::string::npos);
  const CsvTable t = ParseCsv("n,x\n1,abc\n2,99\n", "t.csv");
  try {
    t.Integer(t.rows[0][1], "x", 0, 10);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:2:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a whole number"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.Integer(t.rows[1][1], "x", 0, 10), InputError);
  EXPECT_THROW(t.RequireColumn("y"), InputError);
  EXPECT_THROW(ReadCsvFile("/nonexistent/t.csv"), InputError);
}

}  // namespace csv_test
}  // namespace accel
